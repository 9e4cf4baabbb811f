#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# bench-selftest.sh: tests vm-run itself, on the host.  Boots one guest with
# the fixture suites (good, exit3, empty, hang, never) and checks that each
# outcome is recorded the way scripts/tap-run would: a non-zero exit without
# "not ok" and a suite with no results are failures, a hung suite is killed
# at its vm-timeout and recorded with the console tail and the guest's own
# report of what it was doing (guest/hang-report), the suites queued
# after it are "not run", and nothing is left behind (QEMU, /dev/shm file).
# The fixtures' own TAP goes to a scratch directory, not build/test-results.
set -u
top=$(cd "$(dirname "$0")/../../.." && pwd)
fx=$top/scripts/vm/tests/fixtures
run=$top/build/vm/runs/bench-selftest
taps=$run/taps
n=0 failed=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
nok() { n=$((n + 1)); failed=$((failed + 1)); echo "not ok $n - $1"; [ -z "${2:-}" ] || printf '%s\n' "$2" | sed 's/^/# /'; }
check() { local d=$1; shift; if "$@"; then ok "$d"; else nok "$d" "$(cat "$taps"/vm-*.tap 2>/dev/null | head -60)"; fi; }

if [ -n "${CI:-}" ]; then export HMB_SELFTEST_CI=$CI; else export HMB_SELFTEST_CI=; fi
rm -rf "$taps"
mkdir -p "$run"
t0=$(date +%s)
"$top/scripts/vm/vm-run" --run-dir "$run" --tap-dir "$taps" \
	--env "HMB_SELFTEST_TOKEN=t0k3n with 'quotes'" --env "HMB_SELFTEST_CI=$HMB_SELFTEST_CI" \
	"$fx/good.sh" "$fx/exit3.sh" "$fx/empty.sh" "$fx/hang.sh" "$fx/never.sh" \
	> "$run/stdout" 2> "$run/stderr"
rc=$?
t1=$(date +%s)
echo "# vm-run exited $rc after $((t1 - t0)) s"
if grep -q '# SKIP' "$taps/vm-good.tap" 2>/dev/null; then
	echo "ok 1 - vm bench self-test # SKIP $(sed -n 's/.*# SKIP //p' "$taps/vm-good.tap")"
	echo "1..1"
	exit 0
fi
check "vm-run exits non-zero when a suite failed" test "$rc" -ne 0
check "good: every check passed" sh -c "! grep -q '^not ok' '$taps/vm-good.tap' && [ \$(grep -c '^ok' '$taps/vm-good.tap') -eq 6 ]"
check "good: its stderr is passed on" grep -q 'to stderr' "$run/stderr"
check "exit3: a non-zero exit without 'not ok' is a failure" \
	grep -q '^not ok - exit3 exited with status 3' "$taps/vm-exit3.tap"
check "empty: a suite with no results is a failure" \
	grep -q '^not ok - empty reported no test results' "$taps/vm-empty.tap"
check "hang: the result before the hang is kept" grep -q '^ok 1 - before the hang' "$taps/vm-hang.tap"
check "hang: killed at its vm-timeout (8 s)" \
	grep -q '^not ok - hang: did not finish: suite hang timed out after 8 s' "$taps/vm-hang.tap"
check "hang: the console tail is attached" grep -q '^# console: selftest: hanging now' "$taps/vm-hang.tap"
check "hang: the guest's report names the hanging process and its kernel stack" \
	sh -c "grep -q '^# hang: pid [0-9]* \[S .*sleep 1000' '$taps/vm-hang.tap' && grep -q '^# hang:     \[<' '$taps/vm-hang.tap'"
check "hang: the report has the kernel log after sysrq w" grep -q '^# hang: dmesg: .*Show Blocked State' "$taps/vm-hang.tap"
check "never: queued after the hang, recorded as not run" grep -q '^not ok - never: not run' "$taps/vm-never.tap"
no_qemu() { ! pgrep -f "[q]emu-system-x86_64 .*-initrd $run/initrd" >/dev/null; }
check "no QEMU left running for this run" no_qemu
check "the /dev/shm file is gone" sh -c "! ls /dev/shm/hmb-vm-* 2>/dev/null | grep -q \"\$(sed -n 's|.*mem-path=\\(/dev/shm/[^,]*\\),.*|\\1|p' '$run/qemu-cmd')\""
# A suite marked '# vm-alone: yes' is refused beside another, before any boot.
out=$("$top/scripts/vm/vm-run" --tap-dir "$run/alone" agent-e2e "$fx/good.sh" 2>&1)
rc=$?
check "vm-alone: a suite that needs its own boot is refused beside another (exit $rc)" \
	sh -c "[ $rc -eq 2 ] && printf '%s' \"\$1\" | grep -q 'agent-e2e: each needs a boot of its own'" sh "$out"
check "vm-alone: nothing was booted for it" test ! -e "$run/alone"
# A guest whose kernel panics before init says it is ready (here: its init
# exits at once) is booted once more, and both failures are reported.
out=$("$top/scripts/vm/vm-run" --run-dir "$run/panic" --tap-dir "$run/panic/taps" \
	--append rdinit=/bin/busybox "$fx/good.sh" 2>&1)
rc=$?
check "early panic: the suite fails (exit $rc), the boot was tried twice" \
	sh -c "[ $rc -ne 0 ] && [ \$(printf '%s' \"\$1\" | grep -c 'booting (') -eq 1 ] && printf '%s' \"\$1\" | grep -q 'retrying once'" sh "$out"
check "early panic: the TAP says the guest stopped before it was ready, with the kernel's panic line" \
	grep -q '^not ok - good: not run: the guest stopped before it was ready.*Kernel panic' "$run/panic/taps/vm-good.tap"
echo "1..$n"
[ $failed -eq 0 ]
