#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# check-w1.sh [--what WHAT] MAKE-COMMAND...: run a checking module build
# (W=1 by default; WHAT names another, e.g. "sparse (C=2)"); TAP ok only if
# it succeeds and the compiler or checker printed no warning at all.
set -u
what="W=1"
if [ "${1:-}" = --what ]; then
	what=$2
	shift 2
fi
echo "1..2"
out=$("$@" 2>&1)
rc=$?
if [ $rc -eq 0 ]; then
	echo "ok 1 - module builds with $what"
else
	echo "not ok 1 - module builds with $what (exit $rc)"
fi
warn=$(printf '%s\n' "$out" | grep -E 'warning:|error:' || true)
if [ -z "$warn" ]; then
	echo "ok 2 - $what build prints no warnings"
else
	echo "not ok 2 - $what build prints no warnings"
	printf '%s\n' "$warn" | sed 's/^/# /'
fi
[ $rc -eq 0 ] && [ -z "$warn" ]
