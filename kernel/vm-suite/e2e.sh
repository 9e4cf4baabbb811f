#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# End to end through the module: hmb-fwsim on the VM host writes the ivshmem
# file (the firmware writing its HMB slice), nvme-hmb-trace.ko exposes the
# BAR, hmb-trace-daemon --device drains it in the guest.  The dump must be
# byte-identical to the simulator's own log: 1 M records through a 64 KiB
# ring (thousands of laps: wrap markers and implicit skips), then one forced
# overflow (the daemon stopped while the simulator keeps producing) whose
# loss hmb-trace-analyze reports exactly.
# vm-timeout: 900
# vm-mem: 2048
set -u
. "$HMB_REPO/scripts/vm/lib/tap.sh"
. "$HMB_REPO/kernel/tools/guest-lib.sh"
R=$HMB_RESULTS
N=1000000
RING=65536
OVF=5000	# records offered while the daemon is stopped (the ring holds ~500)
TAILN=1000
DUMP=/tmp/trace.bin

json() {	# json KEY FILE: a number from a one-line JSON report
	sed -n "s/.*\"$1\": *\([0-9]*\).*/\1/p" "$2" | head -1
}

hmb_shm_init $RING || tap_fail "VM host writes the ring header ($RING-byte record area)"
if ! hmb_load; then
	tap_fail "insmod nvme-hmb-trace.ko" "$(dmesg | tail -5)"
	tap_done
fi
iv=$(hmb_ring ivshmem)
[ -n "$iv" ] && tap_ok "ivshmem ring registered ($iv, ring_size $(cat $HMB_CLASS/$iv/ring_size))" ||
	{ tap_fail "ivshmem ring registered" "$(dmesg | tail -5)"; tap_done; }

hmb-trace-daemon --device "/dev/$iv" -o "$DUMP" --stats-json "$R/daemon.json" \
	> "$R/daemon.out" 2> "$R/daemon.err" &
dpid=$!
sleep 1
[ "$(cat "$HMB_CLASS/$iv/consumer")" != none ] && tap_ok "hmb-trace-daemon --device holds /dev/$iv ($(cat "$HMB_CLASS/$iv/consumer"))" ||
	tap_fail "hmb-trace-daemon --device holds /dev/$iv" "$(cat "$R/daemon.err")"

# --- 1 M records, nothing lost ------------------------------------------------
t0=$(date +%s)
hostcmd run hmb-fwsim -r @SHM@ --attach -n $N -p uniform:0-200 --mode wait \
	--wait-drained --wait-timeout 120 --log @RESULTS@/sim1.bin --json > "$R/sim1.json" 2> "$R/sim1.err"
rc=$?
t1=$(date +%s)
[ $rc = 0 ] && tap_ok "hmb-fwsim wrote $N records into the BAR, the daemon drained them ($((t1 - t0)) s)" ||
	tap_fail "hmb-fwsim wrote $N records, drained" "status $rc: $(cat "$R/sim1.err")"
tap_diag "fwsim: $(cat "$R/sim1.json")"
m=$(json markers "$R/sim1.json")
w=$(json implicit_wraps "$R/sim1.json")
[ "${m:-0}" -gt 0 ] && [ "${w:-0}" -gt 0 ] && tap_ok "both wrap cases occurred: $m wrap markers, $w implicit skips" ||
	tap_fail "both wrap cases occurred" "markers '$m' implicit_wraps '$w'"

# --- a forced overflow ----------------------------------------------------------
kill -STOP $dpid
hostcmd run hmb-fwsim -r @SHM@ --attach --first-seq $N -n $OVF -p uniform:0-200 \
	--mode drop --log @RESULTS@/sim2.bin --json > "$R/sim2.json" 2> "$R/sim2.err"
D=$(json dropped "$R/sim2.json")
[ "${D:-0}" -gt 0 ] && tap_ok "overflow forced: $D of $OVF records dropped while the daemon was stopped" ||
	tap_fail "overflow forced" "$(cat "$R/sim2.json" "$R/sim2.err")"
flags=$(cat "$HMB_CLASS/$iv/flags")
[ $((flags & 1)) = 1 ] && tap_ok "OVERFLOWED is set in the ring header" || tap_fail "OVERFLOWED is set" "flags $flags"
kill -CONT $dpid
hostcmd run hmb-fwsim -r @SHM@ --attach --first-seq $((N + OVF)) -n $TAILN -p uniform:0-200 \
	--mode wait --wait-drained --wait-timeout 120 --log @RESULTS@/sim3.bin --json \
	> "$R/sim3.json" 2> "$R/sim3.err" && tap_ok "$TAILN more records after the overflow, drained" ||
	tap_fail "$TAILN more records after the overflow" "$(cat "$R/sim3.err")"

kill -TERM $dpid
wait $dpid
rc=$?
[ $rc = 0 ] && tap_ok "daemon exits 0 on SIGTERM" || tap_fail "daemon exits 0 on SIGTERM" "status $rc: $(tail -5 "$R/daemon.err")"
tap_diag "daemon: $(cat "$R/daemon.json" 2>/dev/null)"

# --- the dump is the simulator's log, byte for byte ---------------------------
cat "$R/sim1.bin" "$R/sim2.bin" "$R/sim3.bin" > /tmp/sim.bin
if cmp "$DUMP" /tmp/sim.bin > "$R/cmp.out" 2>&1; then
	tap_ok "dump identical to the simulator's log ($(wc -c < "$DUMP") bytes)"
else
	tap_fail "dump identical to the simulator's log" "$(cat "$R/cmp.out"; ls -l "$DUMP" /tmp/sim.bin)"
fi

# --- the analyzer reports the loss exactly ------------------------------------
hmb-trace-analyze stats "$DUMP" --format json > "$R/stats.json" 2> "$R/stats.err"
L=$(json lost "$R/stats.json")
P=$(json records "$R/stats.json")
T=$(json trailing_drops "$R/sim2.json")
tap_diag "analyzer: records $P lost $L; simulator: dropped $D (trailing $T)"
# sim2's trailing drops are followed by sim3's records: all of them are gaps.
want=$((D + $(json dropped "$R/sim3.json")))
[ "$L" = "$want" ] && tap_ok "hmb-trace-analyze reports exactly the $want records dropped" ||
	tap_fail "hmb-trace-analyze reports exactly the records dropped" "lost '$L', want $want"
exp=$(( $(json produced "$R/sim1.json") + $(json produced "$R/sim2.json") + $(json produced "$R/sim3.json") ))
[ "$P" = "$exp" ] && tap_ok "hmb-trace-analyze counts $exp records" ||
	tap_fail "hmb-trace-analyze counts every record" "records '$P', want $exp"

rm -f "$DUMP" /tmp/sim.bin
rmmod nvme_hmb_trace && tap_ok "rmmod nvme_hmb_trace" || tap_fail "rmmod nvme_hmb_trace"
hmb_dmesg_check
tap_done
