#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# The bridge at the edges of the cursor space and against a hostile ring.
# Cursors are byte counts modulo 2^64 (docs/format.md section 4): the test
# producer starts just below 2^64 and the bridge must pass a wrap marker and
# an implicit skip that end exactly at 2^64, and thousands of records on
# both sides of 0, with every counter agreeing and nothing taken for
# corruption.  Then the ivshmem ring plays a hostile device: a wrap marker
# whose lap ends beyond head in the last lap before 2^64 (where "cursor +
# bytes left" wraps to 0), with another marker at offset 0.  The bridge must
# stop on it at once (a soft lockup before), and disabling the bridge or
# reading sysfs must not wait behind a running batch.
# vm-timeout: 400
# vm-mem: 2048
set -u
. "$HMB_REPO/scripts/vm/lib/tap.sh"
. "$HMB_REPO/kernel/tools/guest-lib.sh"
R=$HMB_RESULTS
RS=1048576	# test ring, bytes

hmb_shm_init || tap_fail "VM host initialises the ivshmem ring header"
if ! hmb_load test_rings=1 test_ring_kb=$((RS / 1024)); then
	tap_fail "insmod nvme-hmb-trace.ko test_rings=1" "$(dmesg | tail -5)"
	tap_done
fi
dev=$(hmb_ring test)
S=$HMB_CLASS/$dev
tap_ok "test ring registered ($dev)"

# counters: the bridge's and the producer's, on one line.
counters() {
	echo "bridge records $(cat $S/bridge_records) markers $(cat $S/bridge_markers) bytes $(cat $S/bridge_bytes) lost $(cat $S/bridge_lost) corrupt $(cat $S/bridge_corrupt) ($(cat $S/corrupt)); producer produced $(cat $S/producer/produced) dropped $(cat $S/producer/dropped) markers $(cat $S/producer/wrap_markers) skips $(cat $S/producer/implicit_skips) bytes $(cat $S/producer/bytes); head $(cat $S/head) tail $(cat $S/tail)"
}

# agree WHAT: bridge and producer counters are equal, nothing corrupt.
agree() {
	if [ "$(cat $S/bridge_records)" = "$(cat $S/producer/produced)" ] &&
		[ "$(cat $S/bridge_markers)" = "$(cat $S/producer/wrap_markers)" ] &&
		[ "$(cat $S/bridge_bytes)" = "$(cat $S/producer/bytes)" ] &&
		[ "$(cat $S/bridge_lost)" = 0 ] && [ "$(cat $S/bridge_corrupt)" = 0 ] &&
		[ "$(cat $S/corrupt)" = none ] && [ "$(cat $S/tail)" = "$(cat $S/head)" ]; then
		tap_ok "$1"
	else
		tap_fail "$1" "$(counters)"
	fi
}

# start_at CURSOR MIN MAX: empty ring at CURSOR, payloads MIN..MAX, bridge on.
start_at() {
	echo 0 > $S/bridge
	echo "$1" > $S/producer/start_cursor
	echo 1 > $S/producer/reset
	echo "$2" > $S/producer/payload_min
	echo "$3" > $S/producer/payload_max
	echo 1 > $S/bridge
}

# produce N [CHUNK]: N records in chunks that fit, the bridge drains each.
produce() {
	_left=$1
	while [ "$_left" -gt 0 ]; do
		_c=${2:-2000}; [ "$_left" -lt "$_c" ] && _c=$_left
		echo "$_c" > $S/producer/produce
		hmb_wait_drained "$dev" 30 || return 1
		_left=$((_left - _c))
	done
}

# --- a wrap marker that ends exactly at 2^64 -----------------------------------
# 64 bytes before 2^64; a 72-byte record does not fit: marker, head -> 0.
start_at 18446744073709551552 40 40
produce 1
[ "$(cat $S/head)" = 72 ] && [ "$(cat $S/producer/wrap_markers)" = 1 ] &&
	tap_ok "producer: wrap marker in the last 64 bytes below 2^64, head wrapped to 72" ||
	tap_fail "producer: wrap marker below 2^64" "$(counters)"
agree "bridge passes a wrap marker ending at 2^64 (head wrapped past 0, tail not)"
produce 100
agree "bridge drains 100 more records after the wrap of the counter"

# --- an implicit skip that ends exactly at 2^64 ------------------------------
start_at 18446744073709551600 40 40
produce 1
[ "$(cat $S/head)" = 72 ] && [ "$(cat $S/producer/implicit_skips)" = 1 ] &&
	tap_ok "producer: implicit skip of the last 16 bytes below 2^64, head wrapped to 72" ||
	tap_fail "producer: implicit skip below 2^64" "$(counters)"
agree "bridge passes an implicit skip ending at 2^64"

# --- thousands of records on both sides of 0 -----------------------------------
# Two laps below 2^64, random sizes (markers and skips), into the next laps.
start_at 18446744073707454464 0 200
produce 60000 4000
[ "$(cat $S/producer/wrap_markers)" -gt 2 ] && [ "$(cat $S/producer/implicit_skips)" -gt 0 ] 2>/dev/null ||
	tap_diag "few wraps in this run: $(counters)"
case $(cat $S/head) in
1844674407*) tap_fail "head wrapped past 0 during the run" "$(counters)" ;;
*) tap_ok "head wrapped past 0 during the run ($(cat $S/head))" ;;
esac
agree "bridge drains 60000 records across 2^64: counters agree ($(cat $S/bridge_markers) markers, $(cat $S/producer/implicit_skips) skips)"
echo 0 > $S/bridge
echo 0 > $S/producer/start_cursor

# --- hostile: a lap that ends beyond head, just below 2^64 ---------------------
iv=$(hmb_ring ivshmem)
I=$HMB_CLASS/$iv
rs=$(cat "$I/ring_size")
# marker MARKER_HEX_OFFSET: a wrap-marker header at that record-area offset.
# Header bytes: magic, seq, ts_ns, opcode, cpu, flags = WRAP_MARKER,
# payload_len 0, reserved.
marker() {
	hostcmd shm-write $((64 + $1)) "$(le32 0x54434552)$(printf '%030d' 0)01$(printf '%024d' 0)" >/dev/null
}
# tail = 2^64 - 64, head = 2^64 - 8: the marker at ring_size - 64 claims the
# 64 bytes to the end of the lap, but only 56 are published.  The lap end
# computed as "cursor + bytes left" is 0 there.  A second marker at offset 0
# turns a bridge that believes it into an endless walk of laps.
marker $((rs - 64))
marker 0
hostcmd shm-write 16 "f8ffffffffffffffc0ffffffffffffff" >/dev/null
[ "$(cat "$I/head")" = 18446744073709551608 ] && [ "$(cat "$I/tail")" = 18446744073709551552 ] &&
	tap_ok "ivshmem ring: tail 2^64-64, head 2^64-8, wrap marker at ring_size-64 (hostile)" ||
	tap_fail "ivshmem ring set up" "head $(cat "$I/head") tail $(cat "$I/tail")"
echo 1 > "$I/bridge"
i=0
while [ "$(cat "$I/bridge_corrupt")" = 0 ] && [ $i -lt 600 ]; do usleep 100000; i=$((i + 1)); done
why=$(cat "$I/corrupt")
[ "$(cat "$I/bridge_corrupt")" = 1 ] && [ "$why" = "lap skip ends beyond head" ] &&
	tap_ok "bridge stops at once: 'lap skip ends beyond head'" ||
	tap_fail "bridge stops at the marker that ends beyond head" "bridge_corrupt $(cat "$I/bridge_corrupt") corrupt '$why' markers $(cat "$I/bridge_markers") tail $(cat "$I/tail")"
[ "$(cat "$I/tail")" = 18446744073709551552 ] && [ "$(cat "$I/bridge_markers")" = 0 ] &&
	tap_ok "tail stays at the last good cursor (2^64-64), no marker counted" ||
	tap_fail "tail stays at the last good cursor" "tail $(cat "$I/tail") markers $(cat "$I/bridge_markers")"
# Switching the bridge off and reading sysfs must come back: before the fix
# they blocked for good (the walk never ends), so a generous deadline
# (60 s: a loaded host can stall the guest) still tells the two apart.
rm -f /tmp/bridge-off /tmp/head-read
( echo 0 > "$I/bridge"; echo done > /tmp/bridge-off ) &
i=0
while [ ! -f /tmp/bridge-off ] && [ $i -lt 600 ]; do usleep 100000; i=$((i + 1)); done
if [ -f /tmp/bridge-off ]; then
	tap_ok "bridge=0 returns (deadline 60 s)"
else
	tap_fail "bridge=0 returns (deadline 60 s)" "still blocked: $(cat /proc/$!/wchan 2>/dev/null) $(dmesg | grep -E 'soft lockup|blocked for' | head -3)"
	hmb_dmesg_check
	tap_done	# the ring lock is held for good: nothing below can run
fi
( cat "$I/head" > /tmp/head-read ) &
i=0
while [ ! -s /tmp/head-read ] && [ $i -lt 600 ]; do usleep 100000; i=$((i + 1)); done
[ -s /tmp/head-read ] && tap_ok "sysfs head readable afterwards" || tap_fail "sysfs head readable afterwards"

rmmod nvme_hmb_trace && tap_ok "rmmod nvme_hmb_trace" || tap_fail "rmmod nvme_hmb_trace"
hmb_dmesg_check
tap_done
