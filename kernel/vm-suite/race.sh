#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# Races, each bounded in time and count, each with the outcomes it may
# have: the bridge switched on and off from two threads while the ivshmem
# PCI function is unbound and bound again, and while the module is removed;
# mmap in a loop from two threads while the provider goes away (afterwards
# every mapping must fault, never show ring bytes); SET_TAIL from one thread
# while another closes the file; four processes racing open/close; poll and
# drain while the producer freezes and re-initialises the ring.  The
# consumer tracepoint must pair every bridge attach with a detach, and dmesg
# must stay clean (the debug kernel adds KASAN, lockdep, KFENCE,
# DEBUG_ATOMIC_SLEEP, DEBUG_OBJECTS and the lockup detectors).
# HMB_RACE_ROUNDS scales the counts.
# vm-timeout: 600
# vm-mem: 2048
# vm-kernels: debug
set -u
. "$HMB_REPO/scripts/vm/lib/tap.sh"
. "$HMB_REPO/kernel/tools/guest-lib.sh"
R=$HMB_RESULTS
T=/sys/kernel/tracing
RACE=$HMB_ST/hmb_race
N=${HMB_RACE_ROUNDS:-8}
PCI=$HMB_IVSHMEM_PCI
DRV=/sys/bus/pci/drivers/nvme-hmb-trace-ivshmem

# race_run WHAT CMD...: run an hmb_race mode, one TAP line from its verdict.
race_run() {
	_what=$1; shift
	"$@" > "$R/race.out" 2> "$R/race.err"
	_rc=$?
	if [ $_rc = 0 ]; then
		tap_ok "$_what: $(tail -1 "$R/race.out")"
	else
		tap_fail "$_what" "exit $_rc: $(cat "$R/race.out" "$R/race.err" | tail -5)"
	fi
}

# wait_ring PROVIDER: until the ring of PROVIDER is registered (a deadline
# of 60 s: probing under KASAN on a loaded host can take seconds).
wait_ring() {
	_i=0
	while ! hmb_ring "$1" >/dev/null && [ $_i -lt 600 ]; do usleep 100000; _i=$((_i + 1)); done
	hmb_ring "$1"
}

hmb_shm_init || tap_fail "VM host initialises the ivshmem ring header"
if ! hmb_load test_rings=1 test_ring_kb=64; then
	tap_fail "insmod nvme-hmb-trace.ko test_rings=1" "$(dmesg | tail -5)"
	tap_done
fi
[ -n "$PCI" ] && [ -n "$(hmb_ring ivshmem)" ] && tap_ok "ivshmem ring ($PCI) and test ring registered" ||
	{ tap_fail "ivshmem ring registered" "$(dmesg | tail -5)"; tap_done; }

echo 0 > $T/tracing_on
echo > $T/trace
echo 32768 > $T/buffer_size_kb
echo 1 > $T/events/hmb_trace/hmb_trace_consumer/enable
echo 1 > $T/tracing_on

# --- bridge on/off against PCI unbind/bind ------------------------------------
i=0 bad=0
while [ $i -lt $N ]; do
	iv=$(wait_ring ivshmem) || { bad=1; break; }
	"$RACE" bridge "$HMB_CLASS/$iv/bridge" 1 2 >> "$R/bridge-unbind.out" 2>&1 &
	pid=$!
	usleep $((200000 + i * 50000))
	echo "$PCI" > $DRV/unbind || bad=1
	usleep 100000
	echo "$PCI" > $DRV/bind || bad=1
	wait $pid || bad=1
	i=$((i + 1))
done
[ $bad = 0 ] && tap_ok "bridge on/off from 2 threads against $N ivshmem unbind/bind: every write allowed ($(grep -c . "$R/bridge-unbind.out") runs)" ||
	tap_fail "bridge on/off against ivshmem unbind/bind" "$(tail -5 "$R/bridge-unbind.out")"

# The last round's threads may leave the rebound ring's bridge on: off,
# so that every ring ends detached.  Unloading the module empties the
# trace buffer: look at it now.
iv=$(wait_ring ivshmem) && echo 0 > "$HMB_CLASS/$iv/bridge"
echo 0 > $T/tracing_on
cat $T/trace > "$R/consumer-trace.txt"
echo 0 > $T/events/hmb_trace/hmb_trace_consumer/enable
ovr=$(cat $T/per_cpu/cpu*/stats 2>/dev/null | awk '/^overrun:/ {s += $2} END {print s + 0}')
# Every ring's bridge attaches and detaches alternate, ending detached: an
# attach after unregistering began would leave one without its detach.
res=$(awk '/hmb_trace_consumer:/ && /who=bridge/ {
	r = ""; for (f = 1; f <= NF; f++) if ($f ~ /^ring=/) r = $f
	if ($0 ~ / attach /) { if (on[r]) dbl++; on[r] = 1; a++ }
	else if ($0 ~ / detach /) { if (!on[r]) orphan++; on[r] = 0; d++ }
} END { for (r in on) if (on[r]) left++
	printf "%d %d %d %d %d\n", a, d, dbl + 0, orphan + 0, left + 0 }' "$R/consumer-trace.txt")
set -- $res
if [ "$ovr" != 0 ]; then
	tap_fail "bridge attach/detach pairs in the consumer tracepoint" "trace buffer overran ($ovr events lost); $res"
elif [ "$1" -gt 0 ] && [ "$3" = 0 ] && [ "$4" = 0 ] && [ "$5" = 0 ]; then
	tap_ok "every bridge attach has its detach across the unbinds ($1 attaches, $2 detaches, none left attached)"
else
	tap_fail "every bridge attach has its detach across the unbinds" "attaches $1 detaches $2, attach twice $3, detach without attach $4, left attached $5"
fi

# --- bridge on/off against rmmod ------------------------------------------------
i=0 bad=0
while [ $i -lt $((N / 2)) ]; do
	t=$(wait_ring test) || { bad=1; break; }
	"$RACE" bridge "$HMB_CLASS/$t/bridge" 1.5 2 >> "$R/bridge-rmmod.out" 2>&1 &
	pid=$!
	usleep $((200000 + i * 50000))
	rmmod nvme_hmb_trace 2>> "$R/bridge-rmmod.out" || bad=1
	wait $pid || bad=1
	hmb_shm_init
	hmb_load test_rings=1 test_ring_kb=64 || bad=1
	i=$((i + 1))
done
[ $bad = 0 ] && tap_ok "bridge on/off from 2 threads against $((N / 2)) rmmod/insmod: every write allowed" ||
	tap_fail "bridge on/off against rmmod" "$(tail -5 "$R/bridge-rmmod.out")"

# --- mmap against removal --------------------------------------------------------
# The window (PTEs filled before the VMA is linked) is short: two threads
# map, and twice as many removals as the other races.
M=$((2 * N))
i=0 bad=0
while [ $i -lt $M ]; do
	iv=$(wait_ring ivshmem) || { bad=1; break; }
	: > "$R/mmap.err"
	"$RACE" mmap "/dev/$iv" 20 >> "$R/mmap.out" 2> "$R/mmap.err" &
	pid=$!
	k=0
	while ! grep -q ready "$R/mmap.err" && [ $k -lt 600 ]; do usleep 100000; k=$((k + 1)); done
	usleep $((100000 + (i % 5) * 37000))
	echo "$PCI" > $DRV/unbind || bad=1
	wait $pid || { bad=1; cat "$R/mmap.err" >> "$R/mmap.out"; }
	echo "$PCI" > $DRV/bind || bad=1
	i=$((i + 1))
done
[ $bad = 0 ] && tap_ok "mmap in a loop against $M removals: every mapping faults afterwards, mmap ENODEV ($(tail -1 "$R/mmap.out"))" ||
	tap_fail "mmap against removal" "$(grep -E 'FORBIDDEN|[1-9][0-9]* stale' "$R/mmap.out"; tail -3 "$R/mmap.out")"

# --- SET_TAIL against close -------------------------------------------------------
t=$(wait_ring test)
S=$HMB_CLASS/$t
echo 20000 > $S/producer/rate
echo 1 > $S/producer/running
race_run "SET_TAIL from a thread while the file is closed ($((N * 25)) rounds)" "$RACE" settail "/dev/$t" $((N * 25))
# --- several processes racing open/close ---------------------------------------------
race_run "4 processes racing open/map/close for 5 s" "$RACE" openclose "/dev/$t" "$S/consumer" 5 4
echo 0 > $S/producer/running

# --- poll across FROZEN re-initialisation -------------------------------------------
iv=$(wait_ring ivshmem)
: > "$R/poll.err"
"$RACE" poll "/dev/$iv" 8 > "$R/poll.out" 2> "$R/poll.err" &
pid=$!
k=0
while ! grep -q ready "$R/poll.err" && [ $k -lt 600 ]; do usleep 100000; k=$((k + 1)); done
"$RACE" fw "/sys/bus/pci/devices/$PCI/resource2" 5 > "$R/fw.out" 2>&1 || tap_fail "firmware role" "$(cat "$R/fw.out")"
wait $pid
rc=$?
[ $rc = 0 ] && tap_ok "poll and drain across FROZEN re-initialisations: $(tail -1 "$R/poll.out"); $(tail -1 "$R/fw.out")" ||
	tap_fail "poll across FROZEN re-initialisation" "exit $rc: $(cat "$R/poll.out" "$R/poll.err" "$R/fw.out" | tail -5)"

rmmod nvme_hmb_trace && tap_ok "rmmod nvme_hmb_trace" || tap_fail "rmmod nvme_hmb_trace"
hmb_dmesg_check
tap_done
