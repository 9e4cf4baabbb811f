#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# The daemon as a flight recorder (--snapshot-on SIGUSR1): it drains the
# ring into a window of the last --window-mb of whole records and writes
# the window as SNAP-<time>-sigusr1/trace.bin (+ .meta) on the signal.
#  - Each snapshot is checked against the simulator's log of what it put
#    in the ring: exactly the longest run of whole last records that fits
#    the window, byte for byte; its sidecar says which seqs it holds, how
#    many the ring lost among them and what the window evicted before;
#    evicted + held = drained; the analyzer reads it (stats, decode,
#    convert, report).
#  - Signals are sent only once the simulator saw the ring drained
#    (--wait-drained), so "the last records" is known exactly.
#  - --max-snapshots and --holdoff suppress requests, each one counted.
#  - A snapshot that cannot be written is counted, leaves nothing, and the
#    daemon carries on.
#  - Bad option values: one usage line, exit 2.
. "$(dirname "$0")/lib.sh"

ring=$WORK/ring
snaps=$WORK/snaps
mkdir -p "$snaps"

# wait_for WHAT CMD...: until CMD succeeds (at most 20 s), then ok/not ok.
wait_for() {
	local what=$1 i=0
	shift
	until "$@"; do
		if [ $i -ge 400 ]; then
			tap_fail "$what (never happened)"
			return 1
		fi
		sleep 0.05
		i=$((i + 1))
	done
	tap_ok "$what"
}
# lines FILE PATTERN N: FILE has at least N lines matching PATTERN.
lines() { [ "$(grep -c "$2" "$1" 2>/dev/null)" -ge "$3" ]; }
nsnaps() { find "$snaps" -mindepth 1 -maxdepth 1 -name 'SNAP-*' | wc -l; }
newest() { ls -d "$snaps"/SNAP-* | sort | tail -1; }
meta() { sed -n "s/^$2=//p" "$1/trace.bin.meta"; }

# verify SNAP TRUTH WINDOW_BYTES: the snapshot against the producer's log.
verify() {
	local out
	out=$(python3 "$TOP/tests/classic/snapshot_check.py" "$1" "$2" "$3")
	case $out in
	ok:*) tap_ok "$4: $out" ;;
	*) tap_fail "$4: $out" ;;
	esac
}

# analyzer SNAP WHAT: every reader takes the snapshot as it is.
analyzer() {
	local s=$1 what=$2
	have_analyzer || { tap_skip "$what: analyzer reads it" "no analyzer"; return; }
	stats "$s/trace.bin" "$WORK/st.json"
	tap_eq "$what: analyzer stats: records" "$(json "$WORK/st.json" records)" \
		"$(meta "$s" snapshot_records)"
	tap_eq "$what: analyzer stats: lost" "$(json "$WORK/st.json" lost)" \
		"$(meta "$s" snapshot_lost)"
	tap_eq "$what: analyzer stats: duplicates, resets" \
		"$(json "$WORK/st.json" duplicates),$(json "$WORK/st.json" resets)" "0,0"
	tap_run "$what: analyzer decode, convert, report read it" \
		bash -c '"$1" decode "$2" > /dev/null && "$1" convert "$2" "$3.csv" &&
			 "$1" report "$2" -o "$3.html"' _ "$ANALYZE" "$s/trace.bin" "$WORK/conv"
}

# --- a window that rolls over, on a small ring that wraps ---------------
W=$((1 << 20))
"$FWSIM" -r "$ring" -s 256K --init-only
start_daemon fr -r "$ring" --snapshot-on SIGUSR1 --snapshot-dir "$snaps" \
	--window-mb 1 --holdoff 0 --max-snapshots 3 --stats-json "$WORK/fr.json"
"$FWSIM" -r "$ring" --attach -n 2000 -p "$MIX" --mode wait --wait-drained \
	--log "$WORK/a.bin" -q
kill -USR1 "$DPID"
wait_for "first snapshot written" lines "$WORK/fr.err" "snapshot .*SNAP-" 1
s1=$(newest)
tap_run "named SNAP-<UTC time>-sigusr1" bash -c \
	'[[ $(basename "$1") =~ ^SNAP-[0-9]{8}T[0-9]{6}\.[0-9]{3}Z-sigusr1$ ]]' _ "$s1"
verify "$s1" "$WORK/a.bin" $W "window not full"
tap_run "nothing evicted yet: no evicted seq" [ -z "$(meta "$s1" window_evicted_last_seq)" ]
analyzer "$s1" "window not full"

"$FWSIM" -r "$ring" --attach --first-seq 2000 -n 30000 -p "$MIX" --mode wait \
	--wait-drained --log "$WORK/b.bin" -q
cat "$WORK/a.bin" "$WORK/b.bin" > "$WORK/ab.bin"
kill -USR1 "$DPID"
wait_for "second snapshot written" lines "$WORK/fr.err" "snapshot .*SNAP-" 2
s2=$(newest)
verify "$s2" "$WORK/ab.bin" $W "window rolled over"
tap_eq "evicted seqs end just before the first held" \
	"$(($(meta "$s2" window_evicted_last_seq) + 1))" "$(meta "$s2" snapshot_first_seq)"
analyzer "$s2" "window rolled over"
verify "$s1" "$WORK/a.bin" $W "first snapshot, again"

# Records of nearly the largest size, which cannot all end at the end of
# the window's buffer: the window holds whole ones only.
"$FWSIM" -r "$ring" --attach --first-seq 32000 -n 300 -p fixed:4000 \
	--mode wait --wait-drained --log "$WORK/c.bin" -q
cat "$WORK/ab.bin" "$WORK/c.bin" > "$WORK/abc.bin"
kill -USR1 "$DPID"
wait_for "third snapshot written" lines "$WORK/fr.err" "snapshot .*SNAP-" 3
verify "$(newest)" "$WORK/abc.bin" $W "largest records"
kill -USR1 "$DPID"
wait_for "a fourth request is suppressed (--max-snapshots 3)" \
	lines "$WORK/fr.err" "snapshot suppressed: 3 written, --max-snapshots 3" 1
tap_eq "three snapshots on disk" "$(nsnaps)" 3
tap_run "no temporary directory left" [ -z "$(find "$snaps" -name '.SNAP-*')" ]
kill -TERM "$DPID"
wait_exit "$DPID" 10
tap_eq "SIGTERM: exit 0" "$RC" 0
tap_eq "stats: requests, written, suppressed max" \
	"$(json "$WORK/fr.json" snapshot_requests),$(json "$WORK/fr.json" snapshots_written),$(json "$WORK/fr.json" snapshots_suppressed_max)" \
	"4,3,1"
tap_eq "stats: evicted + held records = drained" \
	"$(json "$WORK/fr.json" window_evicted_records)" \
	"$((32300 - $(meta "$(newest)" snapshot_records)))"
tap_run "the summary logs the suppressed request" \
	grep -q "4 snapshot requests: 3 written, 0 failed, 1 suppressed (0 holdoff, 1 max" "$WORK/fr.err"

# --- the ring drops records: gaps inside the window are the ring's ------
rm -rf "$snaps"/SNAP-*
"$FWSIM" -r "$ring" -s 64K --init-only
start_daemon ov -r "$ring" --snapshot-on usr1 --snapshot-dir "$snaps" \
	--window-mb 1 --throttle 4M --batch-bytes 4K --stats-json "$WORK/ov.json"
# faster than the throttled daemon: drops between the records it gets
"$FWSIM" -r "$ring" --attach -n 20000 -R 100000 -p "$MIX" --wait-drained \
	--log "$WORK/ov.bin" --json > "$WORK/ov-sim.json"
dropped=$(json "$WORK/ov-sim.json" dropped)
tap_diag "the simulator dropped $dropped of 20000 records"
kill -USR1 "$DPID"
wait_for "snapshot of a lossy stream written" lines "$WORK/ov.err" "snapshot .*SNAP-" 1
verify "$(newest)" "$WORK/ov.bin" $W "ring overflowed"
analyzer "$(newest)" "ring overflowed"
tap_run "the ring lost records inside the window (else this proves nothing)" \
	[ "$(meta "$(newest)" snapshot_lost)" -gt 0 ]

# --- a ring re-initialised inside the window: an epoch line -------------
kill -TERM "$DPID"
wait_exit "$DPID" 10
rm -rf "$snaps"/SNAP-*
"$FWSIM" -r "$ring" -s 256K --init-only
start_daemon ep -r "$ring" --snapshot-on SIGUSR1 --snapshot-dir "$snaps" \
	--window-mb 1
"$FWSIM" -r "$ring" --attach -n 3000 -p "$MIX" --mode wait --freeze-after 1500 \
	--reinit-after-freeze --wait-drained --log "$WORK/ep.bin" -q
wait_for "the daemon saw the re-initialisation" lines "$WORK/ep.err" "re-initialised" 1
kill -USR1 "$DPID"
wait_for "snapshot across a re-initialisation written" lines "$WORK/ep.err" "snapshot .*SNAP-" 1
s=$(newest)
tap_run "it holds what the simulator wrote" cmp "$s/trace.bin" "$WORK/ep.bin"
want=$(python3 -c 'import sys; sys.path.insert(0, sys.argv[2]); from hmb_trace.format import RECORD_HDR
t=open(sys.argv[1],"rb").read(); o=0; prev=None
while o < len(t):
    _, seq, _, _, _, flags, plen, _, _ = RECORD_HDR.unpack_from(t, o)
    if not flags & 1:
        if prev is not None and seq != prev + 1: print(o)
        prev = seq
    o += 32 + ((plen + 7) & ~7)' "$WORK/ep.bin" "$TOP/python")
tap_eq "epoch= where the new epoch's first record is" "$(meta "$s" epoch)" "$want"
if have_analyzer; then
	stats "$s/trace.bin" "$WORK/ep.json"
	tap_eq "analyzer: records, epochs, duplicates, resets, lost" \
		"$(json "$WORK/ep.json" records),$(json "$WORK/ep.json" epochs),$(json "$WORK/ep.json" duplicates),$(json "$WORK/ep.json" resets),$(json "$WORK/ep.json" lost)" \
		"3000,1,0,0,0"
fi

# --- --holdoff; a snapshot that cannot be written -----------------------
kill -TERM "$DPID"
wait_exit "$DPID" 10
rm -rf "$snaps"/SNAP-*
"$FWSIM" -r "$ring" -s 256K --init-only
start_daemon ho -r "$ring" --snapshot-on SIGUSR1 --snapshot-dir "$snaps" \
	--holdoff 3600 --stats-json "$WORK/ho.json"
mv "$snaps" "$snaps.away"
"$FWSIM" -r "$ring" --attach -n 500 -p "$MIX" --mode wait --wait-drained \
	--log "$WORK/h.bin" -q
kill -USR1 "$DPID"
wait_for "no snapshot directory: the failure is logged" \
	lines "$WORK/ho.err" "cannot create $snaps/.SNAP-" 1
tap_run "the daemon carries on" kill -0 "$DPID"
mv "$snaps.away" "$snaps"
kill -USR1 "$DPID"
wait_for "a failed snapshot starts no holdoff" lines "$WORK/ho.err" "snapshot .*SNAP-" 1
verify "$(newest)" "$WORK/h.bin" $((64 << 20)) "after a failed one"
kill -USR1 "$DPID"
wait_for "a request within --holdoff is suppressed" \
	lines "$WORK/ho.err" "snapshot suppressed: the last one .* ago, --holdoff 3600 (1 suppressed so far)" 1
tap_eq "one snapshot on disk" "$(nsnaps)" 1
kill -TERM "$DPID"
wait_exit "$DPID" 10
tap_eq "SIGTERM: exit 0" "$RC" 0
tap_eq "stats: requests, written, failed, suppressed holdoff" \
	"$(json "$WORK/ho.json" snapshot_requests),$(json "$WORK/ho.json" snapshots_written),$(json "$WORK/ho.json" snapshots_failed),$(json "$WORK/ho.json" snapshots_suppressed_holdoff)" \
	"3,1,1,1"

# --- usage errors: one line, exit 2 ------------------------------------
usage() {
	local what=$1
	shift
	"$DAEMON" -r "$ring" "$@" > /dev/null 2> "$WORK/usage.err"
	local rc=$? n
	n=$(wc -l < "$WORK/usage.err")
	if [ "$rc" = 2 ] && [ "$n" = 1 ]; then
		tap_ok "$what: exit 2, one line ($(cat "$WORK/usage.err"))"
	else
		tap_fail "$what: exit $rc, $n lines: $(cat "$WORK/usage.err")"
	fi
}
fr=(--snapshot-on SIGUSR1 --snapshot-dir "$snaps")
usage "--snapshot-on SIGINT" --snapshot-on SIGINT --snapshot-dir "$snaps"
usage "--snapshot-on without --snapshot-dir" --snapshot-on SIGUSR1
usage "--snapshot-dir without --snapshot-on" -o x --snapshot-dir "$snaps"
usage "--window-mb without --snapshot-on" -o x --window-mb 4
usage "--holdoff without --snapshot-on" -o x --holdoff 4
usage "--max-snapshots without --snapshot-on" -o x --max-snapshots 4
usage "-o with --snapshot-on" "${fr[@]}" -o x
usage "--once with --snapshot-on" "${fr[@]}" --once
usage "--window-mb 0" "${fr[@]}" --window-mb 0
usage "--window-mb 16385" "${fr[@]}" --window-mb 16385
usage "--window-mb 1M" "${fr[@]}" --window-mb 1M
usage "--window-mb ''" "${fr[@]}" --window-mb ''
usage "--holdoff -1" "${fr[@]}" --holdoff -1
usage "--holdoff 86401" "${fr[@]}" --holdoff 86401
usage "--max-snapshots many" "${fr[@]}" --max-snapshots many
usage "--batch-bytes above the window" "${fr[@]}" --window-mb 1 --batch-bytes 2M
usage "--snapshot-dir ''" --snapshot-on SIGUSR1 --snapshot-dir ''
tap_done
