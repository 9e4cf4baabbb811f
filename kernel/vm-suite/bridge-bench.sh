#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# Bridge versus daemon, same guest, same producer, same run: the in-kernel
# test producer at full rate feeds (A) the bridge emitting hmb_trace_record
# into the ftrace buffer, then (B) hmb-trace-daemon --device copying through
# its read-only mapping into a tmpfs file.  The figure is the rate at which
# each consumer advances the ring's tail (records/s, from tail bytes and the
# producer's mean record size) and the ratio of the two; TCG makes absolute
# numbers meaningless.  In `make check` this runs short (HMB_BENCH_SECS,
# default 3) and checks that both consumers kept draining; scripts/bench-kernel.sh
# runs it for 10 s and writes docs/benchmarks.md.
# vm-timeout: 300
# vm-mem: 2048
set -u
. "$HMB_REPO/scripts/vm/lib/tap.sh"
. "$HMB_REPO/kernel/tools/guest-lib.sh"
T=/sys/kernel/tracing
R=$HMB_RESULTS
SECS=${HMB_BENCH_SECS:-3}

if ! hmb_load test_rings=1 test_ring_kb=4096; then
	tap_fail "insmod nvme-hmb-trace.ko test_rings=1 test_ring_kb=4096" "$(dmesg | tail -5)"
	tap_done
fi
dev=$(hmb_ring test)
S=$HMB_CLASS/$dev
echo 16 > "$S/producer/payload_min"
echo 64 > "$S/producer/payload_max"
echo 0 > "$S/producer/rate"

# window CONSUMER: run the producer at full rate for SECS s; print
# "tail_bytes produced dropped bytes_produced" measured over the window.
window() {
	t0=$(cat "$S/tail"); p0=$(cat "$S/producer/produced"); d0=$(cat "$S/producer/dropped")
	b0=$(cat "$S/producer/bytes")
	echo 1 > "$S/producer/running"
	sleep "$SECS"
	t1=$(cat "$S/tail"); p1=$(cat "$S/producer/produced"); d1=$(cat "$S/producer/dropped")
	b1=$(cat "$S/producer/bytes")
	echo 0 > "$S/producer/running"
	echo "$((t1 - t0)) $((p1 - p0)) $((d1 - d0)) $((b1 - b0))"
}

# --- A: bridge -> tracefs -------------------------------------------------------
echo 1 > "$S/producer/reset"
echo 0 > $T/tracing_on
echo > $T/trace
echo 8192 > $T/buffer_size_kb
echo 1 > $T/events/hmb_trace/hmb_trace_record/enable
echo 1 > $T/tracing_on
echo 1 > "$S/bridge"
set -- $(window)
hmb_wait_drained "$dev" 60
echo 0 > "$S/bridge"
echo 0 > $T/tracing_on
echo 0 > $T/events/hmb_trace/hmb_trace_record/enable
a_tail=$1 a_prod=$2 a_drop=$3 a_bytes=$4
a_ok=0
[ "$(cat "$S/bridge_records")" = "$(cat "$S/producer/produced")" ] && a_ok=1
[ "$a_tail" -gt 0 ] && [ $a_ok = 1 ] &&
	tap_ok "bridge into tracefs drained the producer for ${SECS}s (every produced record emitted)" ||
	tap_fail "bridge into tracefs drained the producer" "tail advanced $a_tail; bridge_records $(cat "$S/bridge_records"), produced $(cat "$S/producer/produced")"

# --- B: daemon via mmap -------------------------------------------------------
echo 1 > "$S/producer/reset"
hmb-trace-daemon --device "/dev/$dev" -o /tmp/bench.bin -q --stats-json "$R/daemon.json" 2> "$R/daemon.err" &
dpid=$!
sleep 1
set -- $(window)
hmb_wait_drained "$dev" 60
kill -TERM $dpid
wait $dpid
drc=$?
b_tail=$1 b_prod=$2 b_drop=$3 b_bytes=$4
drec=$(sed -n 's/.*"records": *\([0-9]*\).*/\1/p' "$R/daemon.json")
[ "$b_tail" -gt 0 ] && [ $drc = 0 ] && [ "$drec" = "$(cat "$S/producer/produced")" ] &&
	tap_ok "hmb-trace-daemon --device drained the producer for ${SECS}s (every produced record written)" ||
	tap_fail "hmb-trace-daemon --device drained the producer" "tail advanced $b_tail, exit $drc, records '$drec', produced $(cat "$S/producer/produced"); $(tail -3 "$R/daemon.err")"
rm -f /tmp/bench.bin

# Records/s from tail bytes over the window, at the producer's mean size.
rate() {	# rate TAIL_BYTES BYTES_PRODUCED PRODUCED
	awk -v t="$1" -v b="$2" -v p="$3" -v s="$SECS" 'BEGIN { printf "%.0f", (p > 0 ? t / (b / p) : 0) / s }'
}
ra=$(rate "$a_tail" "$a_bytes" "$a_prod")
rb=$(rate "$b_tail" "$b_bytes" "$b_prod")
ratio=$(awk -v a="$ra" -v b="$rb" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }')
cat > "$R/bench.txt" <<EOT
secs=$SECS
bridge_rps=$ra
bridge_produced=$a_prod
bridge_dropped=$a_drop
daemon_rps=$rb
daemon_produced=$b_prod
daemon_dropped=$b_drop
ratio=$ratio
EOT
tap_diag "bridge->tracefs $ra records/s (producer made $a_prod, dropped $a_drop); daemon via mmap $rb records/s (made $b_prod, dropped $b_drop); bridge/daemon $ratio"
[ "$ra" -gt 0 ] && [ "$rb" -gt 0 ] && tap_ok "both rates measured (bridge/daemon = $ratio)" ||
	tap_fail "both rates measured" "$ra $rb"
rmmod nvme_hmb_trace && tap_ok "rmmod nvme_hmb_trace" || tap_fail "rmmod nvme_hmb_trace"
hmb_dmesg_check
tap_done
