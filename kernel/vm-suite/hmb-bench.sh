#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# hmb-bench: the HMB controller model as the producer, bridge versus daemon,
# same guest, same producer, same run.  The controller writes the records
# of fio's commands (QD32 random reads) plus background windows at a high
# rate (a QEMU timer on the VM host, so it can outrun a consumer in the TCG
# guest) into a 4 MiB trace slice; (A) the bridge emits them into the
# ftrace buffer, then (B) hmb-trace-daemon --device copies them through its
# read-only mapping into a tmpfs file.  The slice is 2 MiB, the largest
# power of two whose slice fits one contiguous allocation.  For each consumer, over the same
# window: the records the controller made (its seq counter), those the
# consumer got, and those the controller dropped because the ring was full
# (counted by the consumer from the seq gaps).  No drop: the consumer kept
# up with the producer, and the rate is what it sustained; drops: the rate
# is the consumer's ceiling.  Only the ratio means anything under TCG.  In
# `make check` this runs short (HMB_BENCH_SECS, default 3) and checks that
# every record made was consumed or counted lost; scripts/bench-hmb.sh runs
# it for 10 s and writes docs/benchmarks.md.
# vm-timeout: 400
# vm-nvme: patched hmb_trace_kb=2048
# vm-nvme-hmb: hmpre=4096, hmmin=256, hmmaxd=16, hmb-bg-rate=20000
set -u
. "$HMB_REPO/scripts/vm/lib/tap.sh"
. "$HMB_REPO/kernel/tools/guest-lib.sh"
T=/sys/kernel/tracing
R=$HMB_RESULTS
SECS=${HMB_BENCH_SECS:-3}

hmb_need_patched_hmb
hmb_load || { tap_fail "insmod nvme-hmb-trace.ko" "$(dmesg | tail -5)"; tap_done; }
dev=$(hmb_wait_ring nvme-pci)
S=$HMB_CLASS/$dev
[ -n "$dev" ] || { tap_fail "the nvme-pci ring" "$(dmesg | tail -5)"; tap_done; }

# io NAME: fio QD32 random reads for SECS s (the background windows go on
# all the time)
io() {
	fio --name=bench --filename="$HMB_NVME_DEV" --direct=1 --rw=randread --bs=4k \
		--size=64M --time_based --runtime="$SECS" --ioengine=libaio --iodepth=32 \
		--output-format=terse > "$R/fio-$1.txt" 2> "$R/fio-$1.err"
}
# The window of each consumer: the controller's seq counter (records made,
# dropped ones included) and the consumer's own progress, read at its start
# and at its end while the consumer runs on; no drain in between (the
# background records never stop).

# --- A: bridge -> tracefs ------------------------------------------------------------
echo 0 > $T/tracing_on
echo > $T/trace
echo 8192 > $T/buffer_size_kb
echo 1 > $T/events/hmb_trace/hmb_trace_record/enable
echo 1 > $T/tracing_on
echo 1 > "$S/bridge"
sleep 1
n0=$(hmb_next_seq); r0=$(cat "$S/bridge_records"); l0=$(cat "$S/bridge_lost")
io bridge
n1=$(hmb_next_seq); r1=$(cat "$S/bridge_records"); l1=$(cat "$S/bridge_lost")
echo 0 > "$S/bridge"
echo 0 > $T/tracing_on
echo 0 > $T/events/hmb_trace/hmb_trace_record/enable
a_made=$((n1 - n0)) a_got=$((r1 - r0)) a_lost=$((l1 - l0))
[ "$a_made" -gt 0 ] && [ "$a_got" -gt 0 ] && [ "$(cat "$S/bridge_corrupt")" = 0 ] &&
	tap_ok "bridge into tracefs: the controller made $a_made records in ${SECS}s, the bridge emitted $a_got, $a_lost dropped (ring full)" ||
	tap_fail "bridge into tracefs drained the controller's records" "made $a_made, emitted $a_got, lost $a_lost, corrupt $(cat "$S/bridge_corrupt")"

# --- B: daemon via mmap ----------------------------------------------------------------
hmb-trace-daemon --device "/dev/$dev" -o /tmp/bench.bin -q --stats-json "$R/daemon.json" \
	2> "$R/daemon.err" &
dpid=$!
sleep 1
n0=$(hmb_next_seq); t0=$(cat "$S/tail")
io daemon
n1=$(hmb_next_seq); t1=$(cat "$S/tail")
kill -TERM $dpid
wait $dpid
drc=$?
hmb-trace-analyze stats /tmp/bench.bin --format json > "$R/daemon-stats.json" 2>> "$R/daemon.err"
rm -f /tmp/bench.bin
b_made=$((n1 - n0))
b_all=$(hmb_jget records "$R/daemon-stats.json")
b_lost=$(hmb_jget lost "$R/daemon-stats.json")
b_dump=$(hmb_jget bytes "$R/daemon-stats.json")
# the window's records: the tail it moved over the dump's mean record size
b_got=$(awk -v a="$b_all" -v b="$((t1 - t0))" -v d="$b_dump" 'BEGIN { printf "%.0f", (d > 0 ? a * b / d : 0) }')
[ $drc = 0 ] && [ "$b_made" -gt 0 ] && [ "${b_got:-0}" -gt 0 ] &&
	tap_ok "hmb-trace-daemon --device: the controller made $b_made records in ${SECS}s, the daemon wrote $b_got ($b_lost dropped in its whole run)" ||
	tap_fail "hmb-trace-daemon --device drained the controller's records" "exit $drc, made $b_made, got '$b_got'; $(tail -3 "$R/daemon.err")"

ra=$(awk -v g="$a_got" -v s="$SECS" 'BEGIN { printf "%.0f", g / s }')
rb=$(awk -v g="$b_got" -v s="$SECS" 'BEGIN { printf "%.0f", g / s }')
ratio=$(awk -v a="$ra" -v b="$rb" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }')
cat > "$R/bench.txt" <<EOT
secs=$SECS
bridge_rps=$ra
bridge_made_rps=$((a_made / SECS))
bridge_lost=$a_lost
daemon_rps=$rb
daemon_made_rps=$((b_made / SECS))
daemon_lost=$b_lost
ratio=$ratio
EOT
tap_diag "bridge->tracefs $ra records/s (controller made $a_made, $a_lost dropped); daemon via mmap $rb records/s (made $b_made, $b_lost dropped); bridge/daemon $ratio"
[ "$ra" -gt 0 ] && [ "$rb" -gt 0 ] && tap_ok "both rates measured (bridge/daemon = $ratio)" ||
	tap_fail "both rates measured" "$ra $rb"
rmmod nvme_hmb_trace && tap_ok "rmmod nvme_hmb_trace" || tap_fail "rmmod nvme_hmb_trace"
hmb_dmesg_check
tap_done
