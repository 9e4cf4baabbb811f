#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# check-decision-codes.sh: TAP.  Code and its comments state a rule or link
# the section of docs/format.md (or another doc) that states it; they never
# cite the design's decision codes ("D1".."D10"), which mean nothing to a
# reader of the tree.  Documents (docs/, *.md) may use them in their text,
# but not in a heading: a heading names what its section says, and its
# anchor is what other documents link to.
. "$(dirname "$0")/lib/preamble.sh"
set +e
. "$top/scripts/lib/tap.sh"
codes='\bD([1-9]|10)\b'

# check WHAT HITS RC: one TAP line, the hits as diagnostics.
check() {
	if [ "$3" -gt 1 ]; then
		tap_fail "$1: git grep failed" "$2"
	elif [ -z "$2" ]; then
		tap_ok "$1"
	else
		tap_fail "$1" "$2"
	fi
}

hits=$(git -C "$top" grep -nIE "$codes" -- ':!docs' ':!*.md' \
	':!scripts/check-decision-codes.sh' 2>&1)
check "no decision codes (D1..D10) in code or code comments outside docs/" "$hits" $?
hits=$(git -C "$top" grep -nIE "^#{1,6}[[:space:]].*$codes" -- 'docs/*.md' '*.md' 2>&1)
check "no decision codes (D1..D10) in the headings of the documents" "$hits" $?
tap_done
