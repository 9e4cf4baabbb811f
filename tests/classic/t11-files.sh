#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# The daemon's files.
#  - The sidecar is not rewritten on a restart or a SIGHUP: appending to an
#    existing dump keeps its epoch= lines and its first clock anchors and
#    adds one restart= line; after a ring re-initialisation and a restart
#    the analyzer counts two epochs, no duplicates, no reset, nothing lost.
#  - Dump, sidecar and FILE.meta.tmp are never opened through a symbolic
#    link (a link planted at FILE.meta.tmp must not make the daemon write
#    its target), and new files get mode 0600 or exactly --file-mode.
. "$(dirname "$0")/lib.sh"

ring=$WORK/ring
mode() { stat -c %a "$1"; }
meta_val() { sed -n "s/^$2=//p" "$1" | head -1; }

# --- epochs and clock anchors survive restarts and SIGHUP ---------------
out=$WORK/ep.bin
"$FWSIM" -r "$ring" --init-only
start_daemon ep1 -r "$ring" -o "$out"
"$FWSIM" -r "$ring" --attach -n 30000 -p "$MIX" --mode wait \
	--freeze-after 10000 --reinit-after-freeze --wait-drained \
	--log "$WORK/ep-sim1.bin" -q
kill -TERM "$DPID"
wait_exit "$DPID" 20
tap_eq "first run (with a re-initialisation): exit 0" "$RC" 0
ep=$(meta_val "$out.meta" epoch)
rt=$(meta_val "$out.meta" realtime_ns)
tap_run "first run noted the epoch ($ep)" [ -n "$ep" ]
sleep 0.05
# Restart on the same dump; a second re-initialisation while it runs,
# then SIGHUP without moving the dump, then a third run.
# (The producer's seqs go on where they were: 10000 + 20000 so far.)
start_daemon ep2 -r "$ring" -o "$out"
"$FWSIM" -r "$ring" --attach -n 20000 -p "$MIX" --mode wait --first-seq 20000 \
	--freeze-after 5000 --reinit-after-freeze --wait-drained \
	--log "$WORK/ep-sim2.bin" -q
kill -HUP "$DPID"
"$FWSIM" -r "$ring" --attach -n 5000 -p "$MIX" --mode wait --first-seq 35000 \
	--wait-drained --log "$WORK/ep-sim3.bin" -q
kill -TERM "$DPID"
wait_exit "$DPID" 20
tap_eq "second run: exit 0" "$RC" 0
start_daemon ep3 -r "$ring" -o "$out" --once
wait_exit "$DPID" 20
tap_eq "third run (--once, nothing new): exit 0" "$RC" 0
tap_eq "first clock anchor kept across restarts" "$(meta_val "$out.meta" realtime_ns)" "$rt"
tap_eq "epoch lines kept and added" "$(grep -c '^epoch=' "$out.meta")" 2
tap_eq "first epoch line unchanged" "$(meta_val "$out.meta" epoch)" "$ep"
tap_eq "one restart line per start on an existing dump (SIGHUP on the same file: none)" \
	"$(grep -c '^restart=' "$out.meta")" 2
tap_run "restart line names dump offset, tail, ring and clocks" \
	grep -Eq '^restart=[0-9]+ tail=[0-9]+ ring_size=[0-9]+ realtime_ns=[0-9]+ monotonic_ns=[0-9]+ boottime_ns=[0-9]+ source=' "$out.meta"
cat "$WORK/ep-sim1.bin" "$WORK/ep-sim2.bin" "$WORK/ep-sim3.bin" > "$WORK/ep-all.bin"
tap_run "dump == the three simulator logs" cmp "$out" "$WORK/ep-all.bin"
if have_analyzer; then
	stats "$out" "$WORK/ep.json"
	tap_eq "analyzer: every record of the three epochs" "$(json "$WORK/ep.json" records)" 55000
	tap_eq "analyzer: two new epochs begun (the sidecar's epoch lines)" "$(json "$WORK/ep.json" epochs)" 2
	tap_eq "analyzer: duplicates" "$(json "$WORK/ep.json" duplicates)" 0
	tap_eq "analyzer: resets" "$(json "$WORK/ep.json" resets)" 0
	tap_eq "analyzer: lost" "$(json "$WORK/ep.json" lost)" 0
fi
# A sidecar the daemon cannot parse is left alone, and the daemon refuses.
printf 'hmb_trace_sidecar=1\nabi_version=1\nepoch=oops\n' > "$out.meta"
cp "$out.meta" "$WORK/bad.meta"
"$FWSIM" -r "$ring" -n 10 -q
"$DAEMON" -r "$ring" -o "$out" --once 2> "$WORK/bad.err"
tap_eq "malformed sidecar: exit 1" "$?" 1
tap_run "malformed sidecar: left as it was" cmp "$out.meta" "$WORK/bad.meta"
tap_run "malformed sidecar: the error names it" grep -q "ep.bin.meta:3" "$WORK/bad.err"

# --- modes -------------------------------------------------------------
umask 022
"$FWSIM" -r "$ring" -n 100 -q
"$DAEMON" -r "$ring" -o "$WORK/m1.bin" --once -q
tap_eq "new dump 0600 under umask 022" "$(mode "$WORK/m1.bin")" 600
tap_eq "new sidecar 0600" "$(mode "$WORK/m1.bin.meta")" 600
umask 077
"$FWSIM" -r "$ring" -n 100 -q
"$DAEMON" -r "$ring" -o "$WORK/m2.bin" --once -q --file-mode 0644
tap_eq "--file-mode 0644 exactly, even under umask 077 (dump)" "$(mode "$WORK/m2.bin")" 644
tap_eq "--file-mode 0644 exactly (sidecar)" "$(mode "$WORK/m2.bin.meta")" 644
umask 022
: > "$WORK/m3.bin"
chmod 0640 "$WORK/m3.bin"
"$FWSIM" -r "$ring" -n 100 -q
"$DAEMON" -r "$ring" -o "$WORK/m3.bin" --once -q
tap_eq "an existing dump keeps its mode" "$(mode "$WORK/m3.bin")" 640
"$DAEMON" -r "$ring" -o "$WORK/m4.bin" --once --file-mode 0999 2>/dev/null
tap_eq "--file-mode 0999: exit 2" "$?" 2

# --- symbolic links ----------------------------------------------------
echo precious > "$WORK/victim"
ln -s "$WORK/victim" "$WORK/s.bin.meta.tmp"
"$FWSIM" -r "$ring" -n 100 --log "$WORK/s-sim.bin" -q
"$DAEMON" -r "$ring" -o "$WORK/s.bin" --once -q
tap_eq "symlink at FILE.meta.tmp: exit 0" "$?" 0
tap_eq "symlink at FILE.meta.tmp: its target untouched" "$(cat "$WORK/victim")" precious
tap_run "symlink at FILE.meta.tmp: sidecar written" grep -q '^abi_version=1' "$WORK/s.bin.meta"
tap_run "symlink at FILE.meta.tmp: gone, nothing left" [ ! -e "$WORK/s.bin.meta.tmp" ] && [ ! -L "$WORK/s.bin.meta.tmp" ]
ln -s "$WORK/victim" "$WORK/l.bin"
"$FWSIM" -r "$ring" -n 100 -q
"$DAEMON" -r "$ring" -o "$WORK/l.bin" --once 2> "$WORK/l.err"
tap_eq "dump path is a symlink: exit 1" "$?" 1
tap_eq "dump path is a symlink: its target untouched" "$(cat "$WORK/victim")" precious
tap_run "dump path is a symlink: the error says so" grep -q "symbolic link" "$WORK/l.err"
"$DAEMON" -r "$ring" -o "$WORK/s.bin" --once -q
tap_eq "ring still drained into the real dump afterwards" "$?" 0
rm -f "$WORK/s.bin.meta"
ln -s "$WORK/victim" "$WORK/s.bin.meta"
"$FWSIM" -r "$ring" -n 100 -q
"$DAEMON" -r "$ring" -o "$WORK/s.bin" --once 2>/dev/null
tap_eq "existing dump whose sidecar is a symlink: exit 1" "$?" 1
tap_eq "sidecar symlink: its target untouched" "$(cat "$WORK/victim")" precious
ln -s "$WORK/victim" "$WORK/sj.json"
"$FWSIM" -r "$ring" -n 10 -q
"$DAEMON" -r "$ring" -o "$WORK/sj.bin" --once --stats-json "$WORK/sj.json" 2> "$WORK/sj.err"
tap_eq "--stats-json FILE a symlink: its target untouched" "$(cat "$WORK/victim")" precious
tap_run "--stats-json FILE a symlink: the error says so" grep -q "cannot write.*sj.json" "$WORK/sj.err"
tap_done
