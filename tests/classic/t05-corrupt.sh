#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Corruption injected by the simulator (bad magic in record S): the daemon
# writes and publishes the good prefix, exits 3 naming the cursor and ring
# offset, and the dump holds nothing after the last good record.
. "$(dirname "$0")/lib.sh"

ring=$WORK/ring
out=$WORK/out.bin
"$FWSIM" -r "$ring" --init-only
start_daemon daemon -r "$ring" -o "$out" --stats-json "$WORK/daemon.json"
"$FWSIM" -r "$ring" --attach -n 200001 -p "$MIX" --corrupt-seq 200000 --mode wait \
	--log "$WORK/sim.bin" --json > "$WORK/sim.json"
wait_exit "$DPID" 30
	tap_eq "daemon exits 3 (ring corrupt)" "$RC" 3
cur=$(json "$WORK/sim.json" corrupt.cursor)
logoff=$(json "$WORK/sim.json" corrupt.log_offset)
roff=$(printf '0x%x' $((cur & (4194304 - 1))))
tap_diag "$(grep 'ring corrupt' "$WORK/daemon.err")"
tap_run "error names the record's cursor ($cur)" grep -q "ring corrupt: .*cursor $cur " "$WORK/daemon.err"
tap_run "error names the ring offset ($roff)" grep -q "ring offset $roff" "$WORK/daemon.err"
tap_eq "dump ends at the last good record" "$(stat -c %s "$out")" "$logoff"
tap_run "dump == simulator log up to the bad record" cmp -n "$logoff" "$out" "$WORK/sim.bin"
tap_eq "exit reason in the stats" "$(json "$WORK/daemon.json" exit_reason)" corrupt
tail=$(od -An -t u8 -j 24 -N 8 "$ring" | tr -d ' ')
tap_eq "tail published up to the bad record" "$tail" "$cur"
if have_analyzer; then
	stats "$out" "$WORK/stats.json"
	tap_eq "analyzer: the good prefix decodes" "$(json "$WORK/stats.json" records)" 200000
fi
tap_done
