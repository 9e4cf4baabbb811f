# SPDX-License-Identifier: Apache-2.0
# The project's TAP library for shell tests (POSIX sh: bash, dash and the
# guests' busybox sh).  Source it:
#   . "$top/scripts/lib/tap.sh"        (guest suites: scripts/vm/lib/tap.sh)
#   tap_check "the nvme disk exists" test -b "$HMB_NVME_DEV"
#   tap_ok "something"; tap_fail "something" "why"; tap_skip "what" "reason"
#   tap_eq "what" GOT WANT            ok "what (GOT)", else what got, wanted
#   tap_diag "text"                   TAP comment lines (no text: stdin)
#   tap_done                          prints the plan, exits 1 if anything failed
#   tap_skip_all "why"                a plan of no tests, skipped; exits 0
# A failed tap_check prints the command's output as TAP comments; tap_run
# is tap_check with the command's output left on stdout and stderr.
tap_n=0
tap_failed=0

tap_ok() {
	tap_n=$((tap_n + 1))
	echo "ok $tap_n - $1"
}

tap_fail() {
	tap_n=$((tap_n + 1))
	tap_failed=$((tap_failed + 1))
	echo "not ok $tap_n - $1"
	[ -z "${2:-}" ] || printf '%s\n' "$2" | sed 's/^/# /'
}

tap_skip() {
	tap_n=$((tap_n + 1))
	echo "ok $tap_n - $1 # SKIP $2"
}

# tap_check DESCRIPTION COMMAND...: ok if COMMAND exits 0.
tap_check() {
	_d=$1
	shift
	if _out=$("$@" 2>&1); then
		tap_ok "$_d"
	else
		tap_fail "$_d" "command: $* (status $?)
$_out"
	fi
}

# tap_run DESCRIPTION COMMAND...: ok if COMMAND exits 0; COMMAND runs in
# this shell (it may set variables), its output where the caller's goes.
tap_run() {
	_tap_run_d=$1
	shift
	if "$@"; then tap_ok "$_tap_run_d"; else tap_fail "$_tap_run_d"; fi
}

# tap_eq DESCRIPTION GOT WANT
tap_eq() {
	if [ "$2" = "$3" ]; then
		tap_ok "$1 ($2)"
	else
		tap_fail "$1: got '$2', want '$3'"
	fi
}

# tap_diag TEXT...: TEXT as TAP comment lines; without TEXT, standard input.
tap_diag() {
	if [ $# -eq 0 ]; then
		sed 's/^/# /'
	else
		printf '%s\n' "$*" | sed 's/^/# /'
	fi
}

tap_done() {
	echo "1..$tap_n"
	[ "$tap_failed" -eq 0 ]
	exit $?
}

tap_skip_all() {
	echo "1..0 # SKIP $*"
	exit 0
}
