#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# The firmware freezes the ring, then re-initialises it (head = tail = 0,
# seq restarts): the daemon reports FROZEN and the re-initialisation, notes
# the new epoch in the sidecar, and carries on with the new ring.
. "$(dirname "$0")/lib.sh"

ring=$WORK/ring
out=$WORK/out.bin
"$FWSIM" -r "$ring" --init-only
start_daemon daemon -r "$ring" -o "$out" --stats-json "$WORK/daemon.json"
"$FWSIM" -r "$ring" --attach -n 400000 -p "$MIX" --mode wait \
	--freeze-after 150000 --reinit-after-freeze --wait-drained \
	--log "$WORK/sim.bin" --json > "$WORK/sim.json"
tap_eq "simulator finished" "$?" 0
kill -TERM "$DPID"
wait_exit "$DPID" 30
	tap_eq "daemon carried on and exits 0" "$RC" 0
tap_eq "simulator re-initialised once" "$(json "$WORK/sim.json" reinits)" 1
tap_eq "no unread record was discarded by the re-init" \
	"$(json "$WORK/sim.json" unread_at_reinit_bytes)" 0
tap_run "daemon logged FROZEN" grep -q "ring FROZEN" "$WORK/daemon.err"
tap_run "daemon logged the re-initialisation" grep -q "ring re-initialised (epoch 1)" "$WORK/daemon.err"
tap_eq "daemon counted one re-init" "$(json "$WORK/daemon.json" reinits)" 1
tap_eq "daemon counted FROZEN set and cleared" "$(json "$WORK/daemon.json" frozen_events)" 2
tap_eq "daemon counted all records of both epochs" "$(json "$WORK/daemon.json" records)" 400000
tap_run "dump == simulator log" cmp "$out" "$WORK/sim.bin"
ep=$(sed -n 's/^epoch=//p' "$out.meta")
tap_diag "sidecar epoch offset: $ep"
# The first epoch is the first 150000 records: find its size in the log.
tap_run "sidecar notes the epoch start inside the dump" [ -n "$ep" ] && [ "$ep" -gt 0 ] && [ "$ep" -lt "$(stat -c %s "$out")" ]
tap_run "the new epoch starts with seq 0" [ "$(od -An -t u4 -j $((ep + 4)) -N 4 "$out" | tr -d ' ')" = 0 ]
if have_analyzer; then
	stats "$out" "$WORK/stats.json"
	tap_eq "analyzer: records of both epochs" "$(json "$WORK/stats.json" records)" 400000
	tap_eq "analyzer: lost" "$(json "$WORK/stats.json" lost)" 0
	tap_eq "analyzer: duplicates" "$(json "$WORK/stats.json" duplicates)" 0
fi
tap_done
