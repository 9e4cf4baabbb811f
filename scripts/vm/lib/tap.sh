# SPDX-License-Identifier: Apache-2.0
# TAP helpers for guest suites (busybox sh).  Source it:
#   . "$HMB_REPO/scripts/vm/lib/tap.sh"
#   tap_check "the nvme disk exists" test -b "$HMB_NVME_DEV"
#   tap_ok "something"; tap_fail "something" "why"; tap_skip "what" "reason"
#   tap_done                       prints the plan, exits 1 if anything failed
# A failed tap_check prints the command's output as TAP comments.
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

# tap_diag TEXT...: a TAP comment line.
tap_diag() {
	printf '%s\n' "$*" | sed 's/^/# /'
}

tap_done() {
	echo "1..$tap_n"
	[ "$tap_failed" -eq 0 ]
	exit $?
}
