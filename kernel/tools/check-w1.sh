#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# check-w1.sh [--what WHAT] MAKE-COMMAND...: run a checking module build
# (W=1 by default; WHAT names another, e.g. "sparse (C=2)"); TAP ok only if
# it succeeds and the compiler or checker printed no warning at all.
set -u
. "$(dirname "$0")/../../scripts/lib/tap.sh"
what="W=1"
if [ "${1:-}" = --what ]; then
	what=$2
	shift 2
fi
out=$("$@" 2>&1)
rc=$?
if [ $rc -eq 0 ]; then
	tap_ok "module builds with $what"
else
	tap_fail "module builds with $what (exit $rc)"
fi
warn=$(printf '%s\n' "$out" | grep -E 'warning:|error:' || true)
if [ -z "$warn" ]; then
	tap_ok "$what build prints no warnings"
else
	tap_fail "$what build prints no warnings" "$warn"
fi
tap_done
