#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Simulator -> daemon -> analyzer with HMB_TEST_RECORDS (10 M) mixed-size
# records while the output is rotated and the daemon sent SIGHUP every
# 100 ms: the concatenation of all output files is byte for byte what the
# simulator wrote (every record exactly once, in order), and the analyzer
# counts every record with nothing lost or repeated.
. "$(dirname "$0")/lib.sh"

ring=$WORK/ring
out=$WORK/out.bin
"$FWSIM" -r "$ring" --init-only
start_daemon daemon -r "$ring" -o "$out" --stats-json "$WORK/daemon.json"
"$FWSIM" -r "$ring" --attach -n "$RECORDS" -p "$MIX" --mode wait \
	--wait-drained --log "$WORK/sim.bin" --json > "$WORK/sim.json" &
spid=$!
PIDS+=("$spid")

# Rotate like logrotate: move the file away, then SIGHUP.
i=0
while kill -0 "$spid" 2>/dev/null; do
	sleep 0.1
	if [ -e "$out" ]; then
		i=$((i + 1))
		mv "$out" "$WORK/part.$(printf %06d $i)"
		kill -HUP "$DPID"
	fi
done
wait "$spid"
tap_eq "simulator finished" "$?" 0
# The last SIGHUP must be handled before SIGTERM: both pending at once,
# the daemon stops without reopening (it acts on signals between batches).
# Its reopen creates FILE again.
for k in $(seq 200); do
	[ -e "$out" ] && break
	sleep 0.05
done
kill -TERM "$DPID"
wait_exit "$DPID" 30
	tap_eq "daemon exits 0 on SIGTERM" "$RC" 0
[ -e "$out" ] && mv "$out" "$WORK/part.$(printf %06d $((i + 1)))"
tap_diag "$i rotations"
tap_run "the output was rotated during the run ($i times)" [ "$i" -ge 2 ]

produced=$(json "$WORK/sim.json" produced)
tap_eq "simulator wrote every record (wait mode)" "$produced" "$RECORDS"
tap_eq "simulator dropped none" "$(json "$WORK/sim.json" dropped)" 0
tap_eq "daemon reopened once per SIGHUP" "$(json "$WORK/daemon.json" reopens)" "$i"
tap_eq "daemon counted every record" "$(json "$WORK/daemon.json" records)" "$produced"
tap_eq "daemon counted every wrap marker" "$(json "$WORK/daemon.json" markers)" \
	"$(json "$WORK/sim.json" markers)"

tap_run "concatenated outputs == simulator log, byte for byte" \
	cmp <(cat "$WORK"/part.*) "$WORK/sim.bin"
rm -f "$WORK/sim.bin"
bad=0
for f in "$WORK"/part.*; do
	[ -s "$f" ] || continue
	if [ "$(head -c 4 "$f")" != RECT ]; then bad=$((bad + 1)); fi
done
tap_eq "every rotated file starts with a whole record" "$bad" 0

if have_analyzer; then
	cat "$WORK"/part.* | "$ANALYZE" stats - --format json > "$WORK/stats.json"
	tap_eq "analyzer: records" "$(json "$WORK/stats.json" records)" "$produced"
	tap_eq "analyzer: lost" "$(json "$WORK/stats.json" lost)" 0
	tap_eq "analyzer: duplicates" "$(json "$WORK/stats.json" duplicates)" 0
	tap_eq "analyzer: wrap_markers" "$(json "$WORK/stats.json" wrap_markers)" \
		"$(json "$WORK/sim.json" markers)"
else
	tap_skip "analyzer checks" "hmb-trace-analyze not built"
fi
tap_done
