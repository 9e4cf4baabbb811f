#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# check-decision-codes.sh: TAP.  Code and its comments state a rule or link
# the section of docs/format.md (or another doc) that states it; they never
# cite the design's decision codes ("D1".."D10"), which mean nothing to a
# reader of the tree.  Documents (docs/, *.md) may use them.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
echo "1..1"
hits=$(git -C "$top" grep -nIE '\bD([1-9]|10)\b' -- ':!docs' ':!*.md' \
	':!scripts/check-decision-codes.sh' 2>&1)
rc=$?
if [ $rc -gt 1 ]; then
	echo "not ok 1 - no decision codes in code: git grep failed"
	printf '%s\n' "$hits" | sed 's/^/# /'
	exit 1
fi
if [ -z "$hits" ]; then
	echo "ok 1 - no decision codes (D1..D10) in code or code comments outside docs/"
else
	echo "not ok 1 - no decision codes (D1..D10) in code or code comments outside docs/"
	printf '%s\n' "$hits" | sed 's/^/# /'
	exit 1
fi
