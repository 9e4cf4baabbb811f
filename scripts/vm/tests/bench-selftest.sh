#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# bench-selftest.sh: tests vm-run itself, on the host.  Boots one guest with
# the fixture suites (good, exit3, empty, hang, never) and checks that each
# outcome is recorded the way scripts/tap-run would: a non-zero exit without
# "not ok" and a suite with no results are failures, a hung suite is killed
# at its vm-timeout and recorded with the console tail and the guest's own
# report of what it was doing (guest/hang-report), the suites queued
# after it are "not run", and nothing is left behind (QEMU, /dev/shm file).
# Then: a guest that panics before it is ready is booted twice; a kernel
# that dies in a suite is reported with its panic line and booted again only
# for the TCG text-patching race (tcg_text_crash, checked on the console
# excerpts in tests/consoles/ and on two suites that fake its signature).
# The fixtures' own TAP goes to a scratch directory, not build/test-results.
. "$(dirname "$0")/../../lib/preamble.sh"
. "$top/scripts/lib/tap.sh"
set +e	# a failed check is reported, the next one runs
fx=$top/scripts/vm/tests/fixtures
run=$top/build/vm/runs/bench-selftest
taps=$run/taps
check() { local d=$1; shift; if "$@"; then tap_ok "$d"; else tap_fail "$d" "$(cat "$taps"/vm-*.tap 2>/dev/null | head -60)"; fi; }

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
	tap_skip "vm bench self-test" "$(sed -n 's/.*# SKIP //p' "$taps/vm-good.tap")"
	tap_done
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
# The TCG text-patching race (an int3 trap in the kernel's own text) is told
# from every other crash on the console: only it is booted once more.
classify() {
	python3 - "$top/scripts/vm/vm-run" "$top/scripts/vm/tests/consoles/$1" <<'PY'
import importlib.machinery, importlib.util, sys
spec = importlib.util.spec_from_loader("vmrun", importlib.machinery.SourceFileLoader("vmrun", sys.argv[1]))
m = importlib.util.module_from_spec(spec)
spec.loader.exec_module(m)
print(m.tcg_text_crash(open(sys.argv[2]).read().splitlines()) or "none")
PY
}
race() { out=$(classify "$1"); [ "${out#"int3 trap at $2 "}" != "$out" ] || { echo "# $1: $out"; return 1; }; }
other() { out=$(classify "$1"); [ "$out" = none ] || { echo "# $1: $out"; return 1; }; }
check "crash kind: 6.12's int3 Oops in sched_clock_cpu from the IPI is the race" race int3-6.12-ipi.txt sched_clock_cpu+0x9/0x190
check "crash kind: 6.1's int3 Oops in __schedule is the race" race int3-6.1-schedule.txt __schedule+0x8c/0x8a0
check "crash kind: an int3 Oops with the module on its stack is not" other int3-module.txt
check "crash kind: an int3 Oops at a RIP in the module is not" other int3-module-rip.txt
check "crash kind: 6.12's int3 Oops in nvme_core whose int3 is already patched away (the agent attaching during I/O) is the race" race int3-6.12-nvme-core.txt "nvme_complete_batch_req+0xe/0xc0 [nvme_core]"
check "crash kind: the same Oops with its int3 still in the text (cc) is not" other int3-module-cc.txt
check "crash kind: a NULL dereference is not" other null-deref.txt
check "crash kind: an int3 Oops after another crash is not" other int3-second.txt
check "crash kind: a panic without an Oops (sysrq c) is not" other sysrq-crash.txt
check "crash kind: a clean console is not" other clean.txt
check "crash kind: 6.1's RCU stall of a vCPU looping on an int3 in __schedule (hmb-bench in a make check) is the race" race int3-stall-6.1.txt __schedule+0x1bc/0xa00
check "crash kind: an RCU stall without an int3 trap is not" other stall-no-int3.txt
check "crash kind: that stall with the module on the looping CPU's stack is not" other stall-int3-module.txt
# A kernel that dies while a suite runs, of anything but that race: reported
# with its panic line, not booted again.
out=$("$top/scripts/vm/vm-run" --run-dir "$run/crash" --tap-dir "$run/crash/taps" "$fx/crash.sh" 2>&1)
rc=$?
check "kernel crash in a suite: it fails (exit $rc), booted once, not retried" \
	sh -c "[ $rc -ne 0 ] && [ \$(printf '%s' \"\$1\" | grep -c 'booting (') -eq 1 ] && ! printf '%s' \"\$1\" | grep -q 'once more'" sh "$out"
check "kernel crash in a suite: the result before it is kept, the TAP has the panic line" \
	sh -c "grep -q '^ok 1 - before the crash' '$run/crash/taps/vm-crash.tap' && grep -q '^not ok - crash: did not finish: the guest stopped' '$run/crash/taps/vm-crash.tap' && grep -q '^# console: .*Kernel panic - not syncing: sysrq triggered crash' '$run/crash/taps/vm-crash.tap'"
# '# vm-tcg-thread: single' (crash.sh): one host thread for the vCPUs, the
# host's TSC rate still given; without it (the first boot) TCG's default.
check "vm-tcg-thread: single: -accel tcg,thread=single, tsc_early_khz= still given" \
	sh -c "grep -q \"'-accel' 'tcg,thread=single'\" '$run/crash/qemu-cmd' && grep -q 'tsc_early_khz=[0-9]' '$run/crash/qemu-cmd'"
check "vm-tcg-thread: a boot without it runs TCG's default (-accel tcg)" \
	grep -q "'-accel' 'tcg' " "$run/qemu-cmd"
# with one TCG thread the project's QEMU (patch 0003 keeps the guest's
# barriers, scripts/vm/README.md), without it Debian's (HMB_VM_QEMU)
pq=$("$top/scripts/vm/qemu/build-qemu" -p -q 2>/dev/null | tail -1)
check "vm-tcg-thread: single boots the project's QEMU ($pq)" \
	sh -c "[ -n '$pq' ] && grep -q \"^'$pq' \" '$run/crash/qemu-cmd'"
check "vm-tcg-thread: a boot without it boots Debian's QEMU (${HMB_VM_QEMU:-qemu-system-x86_64})" \
	grep -q "^'${HMB_VM_QEMU:-qemu-system-x86_64}' " "$run/qemu-cmd"
badsuite=$run/bad-thread.sh
printf '#!/bin/sh\n# vm-tcg-thread: sometimes\necho 1..0\n' > "$badsuite"
out=$("$top/scripts/vm/vm-run" --run-dir "$run/bad" --tap-dir "$run/bad/taps" "$badsuite" 2>&1)
rc=$?
check "vm-tcg-thread: another value is refused with its line, before any boot (exit $rc)" \
	sh -c "[ $rc -ne 0 ] && printf '%s' \"\$1\" | grep -q 'bad-thread.sh line 2: vm-tcg-thread: single or multi' && [ ! -e '$run/bad' ]" sh "$out"
# The race's signature on the console, then a panic: booted once more (the
# suites run again from a fresh results share), once only, and both boots'
# outcomes are in the TAP.
out=$("$top/scripts/vm/vm-run" --run-dir "$run/race" --tap-dir "$run/race/taps" "$fx/fakerace.sh" 2>&1)
rc=$?
check "race signature: fails (exit $rc) after exactly two boots" \
	sh -c "[ $rc -ne 0 ] && [ \$(printf '%s' \"\$1\" | grep -c 'the TCG text-patching race; booting once more') -eq 1 ]" sh "$out"
check "race signature: the TAP notes the first boot's crash and the retry" \
	grep -q "^# note: the first boot failed (its kernel crashed while suite fakerace ran: int3 trap at sched_clock_cpu+0x9/0x190 in the kernel's own text" "$run/race/taps/vm-fakerace.tap"
check "race signature: the first boot's results and console are kept aside" \
	sh -c "grep -q '^ok 1 - before the crash' '$run/race/results.failed/fakerace.tap' && grep -q 'Oops: int3' '$run/race/console.log.failed' && grep -q '^ok 1 - before the crash' '$run/race/results/fakerace.tap'"
# The same signature with the guest alive and the suite failed: booted once
# more too.
out=$("$top/scripts/vm/vm-run" --run-dir "$run/oops" --tap-dir "$run/oops/taps" "$fx/fakeoops.sh" 2>&1)
rc=$?
check "race signature, guest alive, suite failed: fails (exit $rc) after exactly two boots, noted" \
	sh -c "[ $rc -ne 0 ] && [ \$(printf '%s' \"\$1\" | grep -c 'the TCG text-patching race; booting once more') -eq 1 ] && grep -q '^# note: the first boot failed (its kernel crashed while suite fakeoops ran: int3 trap' '$run/oops/taps/vm-fakeoops.tap'" sh "$out"
tap_done
