#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# kill -9 of the daemon and a restart, ten times during a run: nothing is
# lost (the tail is published only after the write), a batch written but
# not published is written again and the analyzer drops and counts it.
. "$(dirname "$0")/lib.sh"

n=$((RECORDS / 5))
[ "$n" -lt 100000 ] && n=100000
ring=$WORK/ring
out=$WORK/out.bin
"$FWSIM" -r "$ring" --init-only
"$FWSIM" -r "$ring" --attach -n "$n" -p "$MIX" --mode wait \
	--wait-timeout 60 --wait-drained --log "$WORK/sim.bin" --json \
	> "$WORK/sim.json" &
spid=$!
PIDS+=("$spid")
kills=0
during=0
# The simulator is unthrottled in wait mode, so the daemon is always behind
# and sets the pace: its throttle (a run of about 6 s at ~120 bytes per
# record) holds each batch's tail back for a while after the write, so most
# kills land between write and publish and the next daemon writes that
# batch again.
thr=$((n * 20))
for i in $(seq 10); do
	start_daemon daemon -r "$ring" -o "$out" --throttle "$thr"
	sleep "0.$((RANDOM % 4 + 2))"
	kill -0 "$spid" 2>/dev/null && during=$((during + 1))
	kill -KILL "$DPID" && kills=$((kills + 1))
	wait "$DPID" 2>/dev/null
done
start_daemon daemon -r "$ring" -o "$out" --stats-json "$WORK/daemon.json"
wait "$spid"
tap_eq "simulator finished (drained by the last daemon)" "$?" 0
kill -TERM "$DPID"
wait_exit "$DPID" 30
	tap_eq "last daemon exits 0" "$RC" 0
tap_eq "daemon killed ten times" "$kills" 10
tap_eq "every kill happened while the simulator was producing" "$during" 10

produced=$(json "$WORK/sim.json" produced)
tap_eq "simulator wrote every record (wait mode)" "$produced" "$n"
torn=$(grep -c "torn record" "$WORK/daemon.err")
tap_diag "torn records cut back at restart: $torn"
"$DEDUP" "$out" > "$WORK/dedup.bin" 2> "$WORK/dedup.txt"
tap_eq "dedup tool ran" "$?" 0
tap_diag "$(cat "$WORK/dedup.txt")"
tap_run "dump without repeated batches == simulator log" cmp "$WORK/dedup.bin" "$WORK/sim.bin"
dups=$(sed -n 's/.*duplicates=\([0-9]*\).*/\1/p' "$WORK/dedup.txt")
tap_run "some batches were written twice ($dups records)" [ "$dups" -gt 0 ]
if have_analyzer; then
	stats "$out" "$WORK/stats.json"
	tap_eq "analyzer: records" "$(json "$WORK/stats.json" records)" "$produced"
	tap_eq "analyzer: lost" "$(json "$WORK/stats.json" lost)" 0
	tap_eq "analyzer: duplicates counted" "$(json "$WORK/stats.json" duplicates)" "$dups"
else
	tap_skip "analyzer checks" "hmb-trace-analyze not built"
fi
tap_done
