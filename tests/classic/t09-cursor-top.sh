#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Cursors are byte counters modulo 2^64: ring images whose head lies in a
# wrap gap in the last lap before 2^64 are refused at once by stats and by
# the daemon (with and without --once) instead of looping, writing
# markers without end; a live ring whose cursors cross 2^64 (head wrapped
# past 0 while tail has not) is drained byte for byte.
. "$(dirname "$0")/lib.sh"

V=$TOP/docs/test-vectors/v1

# run_to SECS OUT CMD...: run CMD with a time limit, stdout to OUT; RC gets
# its status ("timeout" if it had to be killed).
run_to() {
	local secs=$1 out=$2
	shift 2
	timeout -s KILL "$secs" "$@" > "$out" 2>> "$WORK/err"
	RC=$?
	[ "$RC" = 137 ] && RC=timeout
}

for v in top-marker-gap top-implicit-gap; do
	run_to 30 "$WORK/$v.stats" "$ANALYZE" stats "$V/$v.bin"
	tap_eq "stats $v.bin: refused, exit 1 (no hang)" "$RC" 1
	tap_run "stats $v.bin names the gap" grep -q "inside the" "$WORK/err"
	for once in --once ""; do
		cp "$V/$v.bin" "$WORK/ring"
		rm -f "$WORK/out.bin" "$WORK/out.bin.meta"
		run_to 30 /dev/null "$DAEMON" -r "$WORK/ring" -o "$WORK/out.bin" $once -q
		tap_eq "daemon ${once:-(live)} on $v.bin: exit 3 (ring corrupt, no hang)" "$RC" 3
		sz=$(stat -c %s "$WORK/out.bin" 2>/dev/null || echo missing)
		tap_eq "daemon ${once:-(live)} on $v.bin wrote nothing" "$sz" 0
	done
done

# The valid images whose head wrapped past 0 while tail has not.
for v in top-wrap top-implicit; do
	cp "$V/$v.bin" "$WORK/ring"
	rm -f "$WORK/out.bin" "$WORK/out.bin.meta"
	run_to 30 /dev/null "$DAEMON" -r "$WORK/ring" -o "$WORK/out.bin" --once -q
	tap_eq "daemon --once on $v.bin: exit 0" "$RC" 0
	run_to 30 "$WORK/$v.json" "$ANALYZE" stats "$WORK/out.bin" --format json
	want=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["stats"]["records"])' "$V/$v.json")
	tap_eq "$v: the dump holds the image's records" "$(json "$WORK/$v.json" records)" "$want"
	tail=$(python3 -c 'import struct,sys; print(struct.unpack_from("<Q", open(sys.argv[1],"rb").read(), 0x18)[0])' "$WORK/ring")
	head=$(python3 -c 'import struct,sys; print(struct.unpack_from("<Q", open(sys.argv[1],"rb").read(), 0x10)[0])' "$WORK/ring")
	tap_eq "$v: the tail published past 2^64 is head" "$tail" "$head"
done

# A live pair across 2^64: the simulator starts 40 KiB before the top of
# a 64 KiB ring's cursor space and waits for room; the daemon drains.
ring=$WORK/live
start=$(python3 -c 'print(2**64 - 40960)')
"$FWSIM" -r "$ring" -s 64K --start-cursor "$start" --init-only
start_daemon live -r "$ring" -o "$WORK/live.bin" --watermark 0
"$FWSIM" -r "$ring" --attach -n 20000 -p "$MIX" --mode wait --wait-drained \
	--wait-timeout 60 --log "$WORK/live-sim.bin" -q
tap_eq "simulator across 2^64: exit 0 (every record drained)" "$?" 0
kill -TERM "$DPID"
wait_exit "$DPID" 20
tap_eq "daemon across 2^64: exit 0" "$RC" 0
tap_run "dump across 2^64 is the simulator's log byte for byte" \
	cmp "$WORK/live.bin" "$WORK/live-sim.bin"
head=$(python3 -c 'import struct,sys; print(struct.unpack_from("<Q", open(sys.argv[1],"rb").read(), 0x10)[0])' "$ring")
tap_run "head wrapped past 0 ($head)" [ "$head" -lt 1000000000 ]
tap_done
