#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# check-w1.sh MAKE-COMMAND...: run the W=1 module build; TAP ok only if it
# succeeds and the compiler printed no warning at all.
set -u
echo "1..2"
out=$("$@" 2>&1)
rc=$?
if [ $rc -eq 0 ]; then
	echo "ok 1 - module builds with W=1"
else
	echo "not ok 1 - module builds with W=1 (exit $rc)"
fi
warn=$(printf '%s\n' "$out" | grep -E 'warning:|error:' || true)
if [ -z "$warn" ]; then
	echo "ok 2 - W=1 build prints no warnings"
else
	echo "not ok 2 - W=1 build prints no warnings"
	printf '%s\n' "$warn" | sed 's/^/# /'
fi
[ $rc -eq 0 ] && [ -z "$warn" ]
