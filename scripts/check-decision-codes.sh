#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# check-decision-codes.sh: TAP.  Code and its comments state a rule or link
# the section of docs/format.md (or another doc) that states it; they never
# cite the design's decision codes ("D1".."D10"), which mean nothing to a
# reader of the tree.  Documents (docs/, *.md) may use them in their text,
# but not in a heading: a heading names what its section says, and its
# anchor is what other documents link to.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
echo "1..2"
codes='\bD([1-9]|10)\b'

# check N WHAT HITS RC: one TAP line, the hits as diagnostics.
check() {
	if [ "$4" -gt 1 ]; then
		echo "not ok $1 - $2: git grep failed"
		printf '%s\n' "$3" | sed 's/^/# /'
		fail=1
	elif [ -z "$3" ]; then
		echo "ok $1 - $2"
	else
		echo "not ok $1 - $2"
		printf '%s\n' "$3" | sed 's/^/# /'
		fail=1
	fi
}

fail=0
hits=$(git -C "$top" grep -nIE "$codes" -- ':!docs' ':!*.md' \
	':!scripts/check-decision-codes.sh' 2>&1)
check 1 "no decision codes (D1..D10) in code or code comments outside docs/" "$hits" $?
hits=$(git -C "$top" grep -nIE "^#{1,6}[[:space:]].*$codes" -- 'docs/*.md' '*.md' 2>&1)
check 2 "no decision codes (D1..D10) in the headings of the documents" "$hits" $?
exit $fail
