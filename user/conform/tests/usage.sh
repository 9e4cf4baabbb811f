#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# conform-usage PROG: what hmb-trace-conform does before it touches a
# controller: --help with examples, --version, bad usage (exit 2), a user
# who is not root refused (exit 2, said why), a device that is not there
# (exit 3, named).  The runs against a controller are the VM suite's
# (user/conform/vm-suite/conform-model.sh).
set -u
prog=$1
. "$(dirname "$0")/../../../scripts/lib/tap.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# run WANT_RC NAME PATTERN ARGS...: exit status WANT_RC, PATTERN in the output
run() {
	local want=$1 name=$2 pat=$3 rc
	shift 3
	"$@" > "$tmp/out" 2>&1
	rc=$?
	if [ "$rc" = "$want" ] && grep -q -- "$pat" "$tmp/out"; then
		tap_ok "$name (exit $rc)"
	else
		tap_fail "$name: exit $rc (want $want), '$pat' in the output"
		sed 's/^/# /' "$tmp/out" | head -5
	fi
}

run 0 "--help shows examples" "hmb-trace-conform /dev/nvme1 --yes --json verdict.json" "$prog" --help
run 0 "--version" "^hmb-trace-conform $(cat "$(dirname "$0")/../../../VERSION")$" "$prog" --version
# (the form of the usage-error line is tests/usage's, for every tool)
run 2 "no device" "device (/dev/nvmeX) is required" "$prog"
run 2 "two devices" "'/dev/nvme1' is one too many" "$prog" /dev/nvme0 /dev/nvme1
run 2 "an unknown option" "'--frobnicate'" "$prog" --frobnicate /dev/nvme0
run 2 "--ring-size not a power of two" "must be a power of two, not 1000" "$prog" --ring-size 1000 /dev/nvme0
run 2 "--ring-size above 1 MiB" "--ring-size must be a number from 64 to 1048576" "$prog" --ring-size 4194304 /dev/nvme0
run 2 "--io-secs 0" "--io-secs must be a number" "$prog" --io-secs 0 /dev/nvme0
echo "event 0x0100 broken phase=nonsense" > "$tmp/bad.dict"
run 2 "--dict with a malformed dictionary: named" "bad.dict" "$prog" --dict "$tmp/bad.dict" /dev/nvme0
if [ "$(id -u)" = 0 ] && command -v setpriv > /dev/null; then
	run 2 "refused without root, saying why" "needs root" \
		setpriv --reuid=65534 --regid=65534 --clear-groups "$prog" /dev/nvme0
	run 3 "a device that is not there: named" "/nonexistent/nvme9: No such file" \
		"$prog" /nonexistent/nvme9
else
	run 2 "refused without root, saying why" "needs root" "$prog" /dev/nvme0
	tap_skip "a device that is not there (needs root)"
fi
tap_done
