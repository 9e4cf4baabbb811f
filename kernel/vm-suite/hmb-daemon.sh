#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# hmb-daemon: hmb-trace-daemon --device drains the trace ring of the VM
# bench's HMB-capable NVMe controller (the patched nvme.ko loaded at boot
# with hmb_trace_kb=128, nvme-hmb-trace.ko after it) while fio does real
# I/O, and is held to the controller's own account:
#   - a consumer stall (the daemon stopped for 2 s) makes the controller
#     drop records (OVERFLOWED); after the daemon caught up its dump holds
#     exactly the records the controller says it wrote, and the analyzer's
#     lost equals the controller's dropped count (nvme-account-check);
#   - three controller resets in the middle of the I/O (nvme-cli `nvme
#     reset` twice, sysfs reset_controller once): the controller freezes the
#     ring each time (FROZEN seen by the module), nvme re-initialises it
#     before re-enabling the HMB, the daemon starts a new epoch each time
#     (sidecar epoch= lines) and carries on; every record the controller
#     made is either in the dump or counted lost by the analyzer (dropped +
#     written but unread when the ring was re-initialised), none
#     misattributed;
#   - no WARNING, BUG or Oops in dmesg.
# vm-timeout: 600
# vm-nvme: patched hmb_trace_kb=128
# vm-nvme-hmb: hmpre=2048, hmmin=256, hmmaxd=16, hmb-bg-rate=0
set -u
. "$HMB_REPO/scripts/vm/lib/tap.sh"
. "$HMB_REPO/kernel/tools/guest-lib.sh"
R=$HMB_RESULTS
C=$HMB_NVME_CTRL
T=/sys/kernel/tracing

hmb_need_patched_hmb
hmb_load || { tap_fail "insmod nvme-hmb-trace.ko" "$(dmesg | tail -5)"; tap_done; }
dev=$(hmb_wait_ring nvme-pci)
S=$HMB_CLASS/$dev
[ -n "$dev" ] && [ "$(cat "$S/ring_size")" = 131072 ] &&
	tap_ok "the slice nvme made at boot is adopted: /dev/$dev, ring_size 131072" ||
	{ tap_fail "the nvme-pci ring" "$(ls $HMB_CLASS; hmb_aux_slices; dmesg | tail -5)"; tap_done; }

# fio_bg NAME SECONDS: random 4 KiB reads and writes at QD8 in the
# background, at most 1000 IOPS each way: plenty for a 128 KiB ring, and
# the controller's account (a line per command, read here and on the VM
# host) stays tens of MB
fio_bg() {
	fio --name="$1" --filename="$HMB_NVME_DEV" --direct=1 --rw=randrw --bs=4k \
		--size=64M --time_based --runtime="$2" --ioengine=libaio --iodepth=8 \
		--rate_iops=1000 --output-format=terse > "$R/fio-$1.txt" 2> "$R/fio-$1.err" &
	FIO=$!
}

hmb-trace-daemon --device "/dev/$dev" -o "$R/dump.bin" --stats-json "$R/daemon.json" \
	2> "$R/daemon.err" &
dpid=$!
i=0
while [ "$(cat "$S/consumer")" = none ] && [ $i -lt 50 ]; do usleep 100000; i=$((i + 1)); done

# --- a consumer stall: the controller drops, the dump is still exact ---------------
# the daemon is stopped once records flow, until the controller says the
# ring is full (OVERFLOWED) and a second more, at most 10 s
fio_bg stall 8
h0=$(cat "$S/head")
i=0
while [ "$(cat "$S/head")" = "$h0" ] && [ $i -lt 100 ]; do usleep 100000; i=$((i + 1)); done
kill -STOP $dpid
i=0
while [ $(($(cat "$S/flags") & 1)) = 0 ] && [ $i -lt 100 ]; do usleep 100000; i=$((i + 1)); done
sleep 1
kill -CONT $dpid
wait $FIO && tap_ok "fio randrw QD8 (1000 IOPS each way) 8 s, the daemon stopped until the ring overflowed" ||
	tap_fail "fio during the stall" "$(cat "$R/fio-stall.err")"
hmb_wait_drained "$dev" 30 || tap_fail "the daemon caught up" "head $(cat "$S/head") tail $(cat "$S/tail")"
hmb_acct_flush
cp "$R/dump.bin" "$R/stall.bin"
if hostcmd run nvme-account-check @NVME_ACCOUNT@ @RESULTS@/stall.bin --expect-complete \
	> "$R/stall-check.json" 2> "$R/stall-check.err"; then
	tap_ok "the daemon's dump is exactly what the controller wrote, lost == dropped: $(cut -c1-300 "$R/stall-check.json")"
else
	tap_fail "dump == the controller's account, lost == dropped" "$(cat "$R/stall-check.json" "$R/stall-check.err")"
fi
dropped=$(hmb_jget account_dropped "$R/stall-check.json")
[ "${dropped:-0}" -gt 0 ] && tap_ok "the stall made the controller drop $dropped records (counted as lost)" ||
	tap_fail "the controller dropped records during the stall" "account_dropped '$dropped'"

# --- three controller resets during I/O ---------------------------------------------
f0=$(hmb_acct_count freeze)
a0=$(hmb_acct_count adopt)
echo > $T/trace
echo 1 > $T/events/hmb_trace/hmb_trace_frozen/enable
# each reset takes a second or two under TCG: I/O goes on after the last
fio_bg resets 14
sleep 2
nvme reset "$C" > "$R/reset1.out" 2>&1 && tap_ok "nvme reset $C (nvme-cli)" ||
	tap_fail "nvme reset $C" "$(cat "$R/reset1.out")"
sleep 2.5
nvme reset "$C" > "$R/reset2.out" 2>&1 && tap_ok "nvme reset $C again" ||
	tap_fail "nvme reset $C again" "$(cat "$R/reset2.out")"
sleep 2.5
echo 1 > "/sys/class/nvme/${C#/dev/}/reset_controller" &&
	tap_ok "echo 1 > /sys/class/nvme/${C#/dev/}/reset_controller" ||
	tap_fail "sysfs reset_controller"
wait $FIO && tap_ok "fio randrw QD8 (1000 IOPS each way) 14 s across the resets" ||
	tap_fail "fio across the resets" "$(cat "$R/fio-resets.err")"
hmb_wait_drained "$dev" 30 || tap_fail "the daemon caught up after the resets" "head $(cat "$S/head") tail $(cat "$S/tail")"
echo 0 > $T/events/hmb_trace/hmb_trace_frozen/enable
f1=$(hmb_acct_count freeze)
a1=$(hmb_acct_count adopt)
nfz=$(grep -c 'hmb_trace_frozen:' $T/trace)
[ $((f1 - f0)) = 3 ] && [ $((a1 - a0)) = 3 ] && [ "$nfz" = 3 ] &&
	tap_ok "3 resets: the controller froze the ring 3 times and adopted it again 3 times; the module saw FROZEN 3 times" ||
	tap_fail "3 freezes, 3 adoptions, FROZEN seen 3 times" "freezes $((f1 - f0)) adoptions $((a1 - a0)) hmb_trace_frozen $nfz"
kill -INT $dpid
wait $dpid
drc=$?
[ $drc = 0 ] && tap_ok "the daemon carried on and exits 0" ||
	tap_fail "daemon exit status $drc" "$(tail -5 "$R/daemon.err")"
tap_diag "daemon: $(cat "$R/daemon.json")"
[ "$(hmb_jget reinits "$R/daemon.json")" = 3 ] &&
	[ "$(grep -c '^epoch=' "$R/dump.bin.meta")" = 3 ] &&
	tap_ok "the daemon recognised 3 re-initialisations, 3 epoch= lines in the sidecar (FROZEN transitions seen: $(hmb_jget frozen_events "$R/daemon.json"))" ||
	tap_fail "3 new epochs" "reinits $(hmb_jget reinits "$R/daemon.json"), sidecar: $(cat "$R/dump.bin.meta")"
hmb_acct_flush
if hostcmd run nvme-account-check @NVME_ACCOUNT@ @RESULTS@/dump.bin > "$R/check.json" 2> "$R/check.err"; then
	tap_ok "every record of the dump is one the controller wrote, for its command: $(cut -c1-300 "$R/check.json")"
else
	tap_fail "the dump against the account" "$(cat "$R/check.json" "$R/check.err")"
fi
lost=$(hmb_jget analyzer_lost "$R/check.json")
dr=$(hmb_jget account_dropped "$R/check.json")
und=$(hmb_jget undelivered "$R/check.json")
[ -n "$lost" ] && [ -n "$dr" ] && [ -n "$und" ] && [ "$lost" = $((dr + und)) ] &&
	tap_ok "every record the controller made is delivered or counted lost: lost $lost = dropped $dr + unread at a re-initialisation $und" ||
	tap_fail "every record delivered or counted lost" "analyzer lost '$lost', dropped '$dr', written but not delivered '$und'"
[ "$(cat "$S/corrupt")" = none ] && tap_ok "the ring was never found corrupt" ||
	tap_fail "ring not corrupt" "$(cat "$S/corrupt")"
rmmod nvme_hmb_trace && tap_ok "rmmod nvme_hmb_trace" || tap_fail "rmmod nvme_hmb_trace"
hmb_dmesg_check
tap_done
