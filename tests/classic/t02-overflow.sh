#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# A deliberately slow consumer (daemon --throttle) makes the ring overflow:
# the firmware drops records, the daemon logs the OVERFLOWED transitions,
# what arrived is exactly what the simulator wrote, and the analyzer's
# `lost` equals the simulator's drops.
. "$(dirname "$0")/lib.sh"

n=$((RECORDS / 10))
[ "$n" -lt 100000 ] && n=100000
ring=$WORK/ring
out=$WORK/out.bin
"$FWSIM" -r "$ring" -s 1M --init-only
start_daemon daemon -r "$ring" -o "$out" -b 64K --throttle 40M \
	--stats-json "$WORK/daemon.json"
# ~120 bytes x 500k/s = 60 MB/s offered in bursts, 40 MB/s drained.
"$FWSIM" -r "$ring" --attach -n "$n" -p "$MIX" -R 500000 -b 5000 \
	--wait-drained --log "$WORK/sim.bin" --json > "$WORK/sim.json"
tap_eq "simulator finished" "$?" 0
kill -TERM "$DPID"
wait_exit "$DPID" 30
	tap_eq "daemon exits 0" "$RC" 0

dropped=$(json "$WORK/sim.json" dropped)
produced=$(json "$WORK/sim.json" produced)
tap_diag "created $n, produced $produced, dropped $dropped in $(json "$WORK/sim.json" drop_ranges) ranges"
tap_run "the ring overflowed (simulator dropped records)" [ "$dropped" -gt 0 ]
tap_eq "produced + dropped == created" "$((produced + dropped))" "$n"
tap_run "daemon logged the overflow" grep -q "ring overflow" "$WORK/daemon.err"
ev=$(json "$WORK/daemon.json" overflow_events)
tap_run "daemon counted overflow transitions ($ev)" [ "$ev" -ge 1 ]
tap_run "dump == simulator log (nothing but drops missing)" cmp "$out" "$WORK/sim.bin"
tap_eq "daemon counted every written record" "$(json "$WORK/daemon.json" records)" "$produced"
if have_analyzer; then
	stats "$out" "$WORK/stats.json"
	# Drops after the last record written show as no gap: nothing follows.
	trailing=$(json "$WORK/sim.json" trailing_drops)
	tap_eq "analyzer: lost == simulator drops ($trailing trailing)" \
		"$(json "$WORK/stats.json" lost)" "$((dropped - trailing))"
	tap_eq "analyzer: records == simulator produced" "$(json "$WORK/stats.json" records)" "$produced"
	tap_eq "analyzer: duplicates" "$(json "$WORK/stats.json" duplicates)" 0
else
	tap_skip "analyzer checks" "hmb-trace-analyze not built"
fi
tap_done
