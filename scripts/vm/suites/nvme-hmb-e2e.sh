#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# nvme-hmb-e2e: the real HMB path end to end on the VM bench's HMB-capable
# NVMe controller (scripts/vm/qemu): Identify shows HMPRE/HMMIN; the
# project's patched nvme.ko (make -C kernel nvme-patched) loaded with
# hmb_trace_kb=1024 after nvme-hmb-trace.ko allocates the HMB with a trace
# slice as its last descriptor and enables it (dmesg, Get Features 0Dh);
# the slice is mapped to users by the DMA API (dma_mmap_coherent: every
# page at mmap, none faulted in); the controller adopts the ring and
# writes a record for each phase of every command fio issues;
# hmb-trace-daemon --device drains it; the dump
# is exactly what the controller's own account says it wrote (records,
# seqs, timestamps, sqid/cid/slba/nlb), and the analyzer's lost equals the
# controller's dropped count.  A firmware clock step armed during fio is
# at the record the account names.  A controller reset freezes the ring, nvme-pci
# re-initialises it, the controller adopts it again with its seq counter
# continuing; the module's unload (a shutdown) freezes it.  The firmware clock runs at the configured
# drift against QEMU's virtual clock; the guest's CLOCK_MONOTONIC against
# that clock is measured and reported (the truth the agent's estimate is
# held to, scripts/vm/README.md).
# vm-timeout: 600
# vm-nvme-hmb: hmpre=2048, hmmin=8, hmmaxd=32, hmb-bg-rate=20, hmb-clock-drift-ppm=200, hmb-clock-offset=5000000000
# (the same properties as nvme-hmb-model, so that both can share a boot)
set -u
. "$HMB_REPO/scripts/vm/lib/tap.sh"
. "$HMB_REPO/kernel/tools/guest-lib.sh"
T=vm-nvme-hmb
C=$HMB_NVME_CTRL
R=$HMB_RESULTS
ACCT=$HMB_NVME_ACCOUNT
# The init's choice, built for the running kernel: build/nvme-patched/drivers
# is the default kernel's, which 6.12 and the debug kernel refuse.
NVKO=$HMB_NVME_KO
KB=1024
DRIFT=200
STEP_NS=2000000

jget() {
	sed -n "s/.*\"$1\":\(\"[^\"]*\"\|[-0-9a-z]*\).*/\1/p" "$2" | head -1 | tr -d '"'
}

[ -n "${HMB_NVME_HMB:-}" ] || { tap_fail "the HMB controller (vm-nvme-hmb)"; tap_done; }
$T id "$C" > "$R/id.json"
[ "$(jget hmpre "$R/id.json")" = 2048 ] && [ "$(jget hmmin "$R/id.json")" = 8 ] &&
	tap_ok "Identify Controller: HMPRE 2048, HMMIN 8 ($(cat "$R/id.json"))" ||
	tap_fail "Identify Controller: HMPRE 2048, HMMIN 8" "$(cat "$R/id.json")"
# The account is the run's: an earlier suite of the same boot may have used it.
A0=$(wc -l < "$ACCT")
acct() { tail -n +$((A0 + 1)) "$ACCT"; }
N0=$(grep -c '"ev":"adopt"' "$ACCT")
$T clock "$C" 30 > "$R/clock0.json"

# --- the patched nvme.ko, after nvme-hmb-trace.ko -------------------------------
[ -f "$NVKO" ] || { tap_fail "patched nvme.ko present" "no $NVKO (make -C kernel nvme-patched KERNEL=$HMB_KVER on the host)"; tap_done; }
rmmod nvme 2> "$R/rmmod.err" || { tap_fail "rmmod nvme (Debian's)" "$(cat "$R/rmmod.err")"; tap_done; }
hmb_load || { tap_fail "insmod nvme-hmb-trace.ko" "$(dmesg | tail -5)"; tap_done; }
dmesg -c > "$R/dmesg-before.txt"
if insmod "$NVKO" hmb_trace_kb=$KB 2> "$R/insmod.err"; then
	tap_ok "patched nvme.ko loaded with hmb_trace_kb=$KB after nvme-hmb-trace.ko"
else
	tap_fail "insmod patched nvme.ko hmb_trace_kb=$KB" "$(cat "$R/insmod.err"; dmesg | tail -5)"
	tap_done
fi
i=0
while [ ! -b "$HMB_NVME_DEV" ] && [ $i -lt 150 ]; do usleep 100000; i=$((i + 1)); done
dmesg | grep -q 'host memory buffer' &&
	tap_ok "dmesg: $(dmesg | grep 'host memory buffer' | head -1 | sed 's/^\[[^]]*\] //')" ||
	tap_fail "Linux allocated the HMB" "$(dmesg | grep -i nvme | tail -8)"
if command -v nvme > /dev/null; then
	nvme get-feature "$C" -f 0x0d > "$R/get-feature.txt" 2>&1
	tap_diag "nvme get-feature -f 0x0d: $(head -2 "$R/get-feature.txt" | tr '\n' ' ')"
fi
$T get "$C" > "$R/hmb.json"
[ "$(jget ehm "$R/hmb.json")" = 1 ] &&
	tap_ok "Get Features 0Dh: HMB enabled: $(cat "$R/hmb.json")" ||
	tap_fail "Get Features 0Dh: EHM=1" "$(cat "$R/hmb.json")"
dev=$(hmb_ring nvme-pci)
[ -n "$dev" ] && [ "$(cat "$HMB_CLASS/$dev/ring_size")" = $((KB * 1024)) ] &&
	tap_ok "trace slice registered as /dev/$dev, ring_size $((KB * 1024))" ||
	tap_fail "an nvme-pci ring of $((KB * 1024)) bytes" "$(ls $HMB_CLASS 2>&1; dmesg | tail -5)"
$T clock "$C" 1 > /dev/null	# flushes the account
acct | grep '"ev":"adopt"' > "$R/adopt.txt"
[ "$(wc -l < "$R/adopt.txt")" = 1 ] && [ "$(jget ring_size "$R/adopt.txt")" = $((KB * 1024)) ] &&
	tap_ok "the controller adopted the ring in the last descriptor: $(cut -c1-200 "$R/adopt.txt")" ||
	tap_fail "the controller adopted the ring" "$(acct | grep -E 'adopt|refuse|set_features')"
[ -n "$dev" ] || tap_done

# The slice is coherent DMA memory: only the DMA API knows how to map it to
# users (decrypted on hosts with memory encryption), and
# dma_mmap_coherent() maps all of it in mmap(); a mapping made by hand at
# fault time takes a fault per page read.
mlen=$(( (64 + KB * 1024 + 4095) / 4096 * 4096 ))
vm-mmap "/dev/$dev" touch $mlen > "$R/touch.json" 2>&1
[ "$(jget pages "$R/touch.json")" = $((mlen / 4096)) ] && [ "$(jget faults "$R/touch.json")" = 0 ] &&
	tap_ok "the slice's mapping is the DMA API's (dma_mmap_coherent: $((mlen / 4096)) pages read, no page fault): $(cat "$R/touch.json")" ||
	tap_fail "the slice mapped whole by dma_mmap_coherent (no fault reading it)" "$(cat "$R/touch.json")"

# --- fio, drained by hmb-trace-daemon --device -----------------------------------
hmb-trace-daemon --device "/dev/$dev" -o "$R/dump.bin" --stats-json "$R/daemon.json" \
	2> "$R/daemon.err" &
dpid=$!
sleep 1
fio --name=qd1 --filename="$HMB_NVME_DEV" --direct=1 --rw=randrw --bs=4k --size=64M \
	--time_based --runtime=2 --ioengine=psync --output-format=terse > "$R/fio1.txt" 2> "$R/fio.err"
frc=$?
fio --name=qd16 --filename="$HMB_NVME_DEV" --direct=1 --rw=randrw --bs=4k --size=64M \
	--time_based --runtime=3 --ioengine=libaio --iodepth=16 --output-format=terse \
	> "$R/fio16.txt" 2>> "$R/fio.err" &
fp=$!
# once QD16 is under way (64 KiB more in the ring), a +2 ms step of the
# firmware clock 0.5 s later: records every few us on both sides of it
h0=$(cat "$HMB_CLASS/$dev/head")
i=0
while [ $(( $(cat "$HMB_CLASS/$dev/head") - h0 )) -lt 65536 ] && [ $i -lt 100 ]; do
	usleep 50000; i=$((i + 1))
done
$T step "$C" 500000 $STEP_NS > "$R/step.json"
wait $fp && [ $frc = 0 ] && [ "$(jget status "$R/step.json")" = 0 ] &&
	tap_ok "fio randrw QD1 2 s, QD16 3 s; a clock step armed during QD16" ||
	tap_fail "fio, and a clock step armed" "$(cat "$R/fio.err" "$R/step.json")"
# The controller keeps writing background records: stop it (Set Features
# EHM=0 by passthrough freezes the ring) so that the daemon can read all.
$T set "$C" 0 0 0 0 > "$R/ehm0.json"
[ "$(jget status "$R/ehm0.json")" = 0 ] && [ $(( $(cat "$HMB_CLASS/$dev/flags") & 2 )) = 2 ] &&
	tap_ok "Set Features EHM=0: the controller set FROZEN (flags $(cat "$HMB_CLASS/$dev/flags"))" ||
	tap_fail "EHM=0 freezes the ring" "$(cat "$R/ehm0.json") flags $(cat "$HMB_CLASS/$dev/flags")"
hmb_wait_drained "$dev" 30 || tap_diag "the daemon did not catch up within 30 s"
kill -INT $dpid
wait $dpid
drc=$?
[ $drc = 0 ] && tap_ok "daemon exits 0 on SIGINT: $(cut -c1-200 "$R/daemon.json" 2>/dev/null)" ||
	tap_fail "daemon exit status $drc" "$(tail -5 "$R/daemon.err")"

$T clock "$C" 1 > /dev/null
if hostcmd run nvme-account-check @NVME_ACCOUNT@ @RESULTS@/dump.bin --epoch $((N0 + 1)) --expect-complete \
	> "$R/check.json" 2> "$R/check.err"; then
	tap_ok "the daemon's dump is exactly what the controller wrote, and lost == dropped: $(cut -c1-260 "$R/check.json")"
else
	tap_fail "dump == the controller's account (nvme-account-check)" "$(cat "$R/check.json" "$R/check.err")"
fi
cmds=$(jget commands "$R/check.json")
# terse v3: field 6 read KiB, 47 write KiB; 4 KiB per I/O
ios=$(awk -F';' '{ n += ($6 + $47) / 4 } END { print n + 0 }' "$R/fio1.txt" "$R/fio16.txt")
[ "${cmds:-0}" -gt 1000 ] && [ "${cmds:-0}" -ge "$ios" ] &&
	tap_ok "the account holds a traced command for each of fio's $ios I/Os ($cmds commands)" ||
	tap_fail "every fio I/O traced" "fio $ios I/Os, account $cmds commands"

# --- the firmware clock: drift and the step, against the virtual clock -----------
$T clock "$C" 30 > "$R/clock1.json"
awk -v d=$DRIFT -v st=$STEP_NS -v v0="$(jget virt_ns "$R/clock0.json")" -v f0="$(jget fw_ns "$R/clock0.json")" \
	-v v1="$(jget virt_ns "$R/clock1.json")" -v f1="$(jget fw_ns "$R/clock1.json")" \
	-v m0="$(jget mono_ns "$R/clock0.json")" -v m1="$(jget mono_ns "$R/clock1.json")" \
	'BEGIN { fw = ((f1 - f0 - st) / (v1 - v0) - 1) * 1e6; g = ((m1 - m0) / (v1 - v0) - 1) * 1e6
		printf "%.3f %.3f %.0f\n", fw, g, v1 - v0
		e = fw - d; if (e < 0) e = -e; exit !(e < 0.5) }' > "$R/drift.txt" &&
	tap_ok "firmware clock: $(cut -d' ' -f1 "$R/drift.txt") ppm fast of the virtual clock (configured $DRIFT) plus the $STEP_NS ns step, over $(cut -d' ' -f3 "$R/drift.txt") ns" ||
	tap_fail "firmware clock: drift $DRIFT ppm and a $STEP_NS ns step" "$(cat "$R/drift.txt" "$R/clock0.json" "$R/clock1.json")"
tap_diag "guest CLOCK_MONOTONIC against QEMU's virtual clock: $(cut -d' ' -f2 "$R/drift.txt") ppm; best sample RTT $(jget rtt_ns "$R/clock1.json") ns"
# The step is placed at the exact record: the account names the first
# record on the stepped clock, nvme-account-check above held every
# command's firmware time to the clock function (the step counted from its
# instant on, not before: clock_mismatched 0), and in the dump that record
# lies at least the step after the one before it.
acct | grep '"ev":"clock_step"' > "$R/step-acct.txt"
fs=$(jget first_seq "$R/step-acct.txt")
jump=$(sed -n 's/.*"steps":\[[^]]*"jump_ns":\([0-9-]*\).*/\1/p' "$R/check.json")
[ -n "$fs" ] && [ -n "$jump" ] && [ "$jump" -ge $STEP_NS ] &&
	[ "$(jget clock_mismatched "$R/check.json")" = 0 ] &&
	tap_ok "the clock step is at record seq $fs, as the account says ($jump ns after the record before it); $(jget clock_checked "$R/check.json") commands' firmware times follow the clock function" ||
	tap_fail "the clock step at the record the account names" "$(cat "$R/step-acct.txt" "$R/check.json")"

# --- Linux's HMB back, then unloaded: a shutdown freezes the ring ---------------------
$T set "$C" 3 "$(jget hsize "$R/hmb.json")" "$(jget hmdla "$R/hmb.json")" "$(jget hmdlec "$R/hmb.json")" \
	> "$R/ehm1.json"
$T clock "$C" 1 > /dev/null
[ "$(jget status "$R/ehm1.json")" = 0 ] && [ "$(acct | grep -c '"ev":"adopt"')" = 2 ] &&
	tap_ok "EHM=1 with Linux's list again: the drained ring (head == tail) adopted again" ||
	tap_fail "EHM=1 again, ring adopted" "$(cat "$R/ehm1.json"; acct | grep -E 'adopt|refuse')"
# A controller reset: the controller freezes the ring; nvme-pci writes the
# header afresh before its Set Features (MR=1); the controller adopts it
# again from cursor 0 with its seq counter continuing (format.md §16.8).
echo 1 > "/sys/class/nvme/${C#/dev/}/reset_controller"
i=0
while [ $i -lt 100 ] && [ "$(acct | grep -c '"ev":"adopt"')" -lt 3 ]; do
	usleep 100000; i=$((i + 1))
	[ $((i % 10)) = 0 ] && $T clock "$C" 1 > /dev/null 2>&1
done
acct | grep '"ev":"freeze"' | tail -1 > "$R/freeze-reset.txt"
acct | grep '"ev":"adopt"' | tail -1 > "$R/adopt3.txt"
[ "$(jget why "$R/freeze-reset.txt")" = controller_reset ] &&
	[ "$(jget epoch "$R/adopt3.txt")" = $((N0 + 3)) ] && [ "$(jget head "$R/adopt3.txt")" = 0 ] &&
	[ "$(jget first_seq "$R/adopt3.txt")" = "$(jget next_seq "$R/freeze-reset.txt")" ] &&
	tap_ok "reset: frozen at seq $(jget next_seq "$R/freeze-reset.txt"), re-initialised by nvme-pci, adopted again from cursor 0 with the seq counter continuing" ||
	tap_fail "reset: freeze, host re-initialisation, adoption with continuing seqs" \
		"$(cat "$R/freeze-reset.txt" "$R/adopt3.txt"; acct | grep -E 'refuse|set_features' | tail -3)"
rmmod nvme 2> "$R/rmmod2.err" && tap_ok "rmmod patched nvme" || tap_fail "rmmod patched nvme" "$(cat "$R/rmmod2.err")"
usleep 500000	# the account is flushed at a freeze and every 100 ms
acct | grep -q '"ev":"freeze","why":"shutdown"' &&
	tap_ok "the controller froze the ring at the shutdown" ||
	tap_fail "a freeze at the shutdown in the account" "$(acct | grep -E 'freeze|disabled')"
rmmod nvme_hmb_trace && modprobe nvme &&
	tap_ok "nvme-hmb-trace unloaded, Debian's nvme back" || tap_fail "unload and modprobe nvme"
hmb_dmesg_check
tap_done
