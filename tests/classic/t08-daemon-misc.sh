#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Daemon odds and ends: --help, usage errors, --once, -o -, no CPU when
# idle, SIGINT at a record boundary, JSON logs.
. "$(dirname "$0")/lib.sh"

"$DAEMON" --help > "$WORK/help"
tap_eq "--help exits 0" "$?" 0
tap_run "--help has examples" grep -q "^Examples:" "$WORK/help"
"$DAEMON" 2>/dev/null
tap_eq "no arguments: exit 2" "$?" 2
"$DAEMON" -r x -d y -o z 2>/dev/null
tap_eq "two sources: exit 2" "$?" 2
"$DAEMON" -r x -o z -b 100 2>/dev/null
tap_eq "batch below 4K: exit 2" "$?" 2

ring=$WORK/ring
"$FWSIM" -r "$ring" -n 20000 -p "$MIX" --log "$WORK/sim.bin" -q
"$DAEMON" -r "$ring" -o "$WORK/once.bin" --once 2>/dev/null
tap_eq "--once exits 0" "$?" 0
tap_run "--once drained the ring" cmp "$WORK/once.bin" "$WORK/sim.bin"
tap_run "sidecar written" grep -q "^abi_version=1" "$WORK/once.bin.meta"
"$DAEMON" -r "$ring" -o "$WORK/again.bin" --once 2>/dev/null
tap_run "a second --once finds nothing (the tail was published)" [ ! -s "$WORK/again.bin" ]

"$FWSIM" -r "$ring" -n 5000 --log "$WORK/sim2.bin" -q
"$DAEMON" -r "$ring" -o - --once 2>/dev/null > "$WORK/stdout.bin"
tap_run "-o - writes the dump to stdout" cmp "$WORK/stdout.bin" "$WORK/sim2.bin"

# Idle: a ring with nothing in it should cost next to no CPU.
"$FWSIM" -r "$ring" --init-only
start_daemon idle -r "$ring" -o "$WORK/idle.bin" --log-format json
sleep 2
ticks=$(awk '{print $14 + $15}' "/proc/$DPID/stat")
hz=$(getconf CLK_TCK)
tap_diag "idle daemon used $ticks ticks (of $hz/s) in 2 s"
tap_run "idle CPU under 5% ($ticks ticks in 2 s)" [ "$ticks" -le $((hz / 10)) ]
kill -INT "$DPID"
wait_exit "$DPID" 10
	tap_eq "SIGINT: exit 0" "$RC" 0
tap_run "JSON log lines" python3 -c 'import json,sys
for l in open(sys.argv[1]): json.loads(l)' "$WORK/idle.err"
tap_run "summary line logged" grep -q '"msg":"summary: 0 records' "$WORK/idle.err"

# The watermark holds a few records back, but never past a stop, --once or
# a FROZEN ring.  A watermark no run reaches (clamped to a quarter of the
# ring) and a 60 s delay, so that only those events can drain them.
"$DAEMON" -r "$ring" -o z --watermark 2G 2>/dev/null
tap_eq "--watermark above 1G: exit 2" "$?" 2
"$DAEMON" -r "$ring" -o z --max-delay-us 0 2>/dev/null
tap_eq "--max-delay-us 0: exit 2" "$?" 2
"$FWSIM" -r "$ring" -n 10 -p fixed:64 --log "$WORK/wm1.bin" -q
"$DAEMON" -r "$ring" -o "$WORK/wm-once.bin" --once --watermark 1G --max-delay-us 60000000 2>/dev/null
tap_run "--once drains below the watermark" cmp "$WORK/wm-once.bin" "$WORK/wm1.bin"
"$FWSIM" -r "$ring" --init-only
start_daemon wm -r "$ring" -o "$WORK/wm-stop.bin" --watermark 1G --max-delay-us 60000000
"$FWSIM" -r "$ring" --attach -n 10 -p fixed:64 --log "$WORK/wm2.bin" -q
sleep 0.3
tap_run "below the watermark, nothing written yet" [ ! -s "$WORK/wm-stop.bin" ]
kill -TERM "$DPID"
wait_exit "$DPID" 10
tap_eq "SIGTERM below the watermark: exit 0" "$RC" 0
tap_run "SIGTERM drains what the watermark held" cmp "$WORK/wm-stop.bin" "$WORK/wm2.bin"
"$FWSIM" -r "$ring" --init-only
start_daemon wmf -r "$ring" -o "$WORK/wm-frozen.bin" --watermark 1G --max-delay-us 60000000
# at 20 records/s the daemon sees the first records (and holds them)
# well before the freeze
"$FWSIM" -r "$ring" --attach -n 20 -R 20 --freeze-after 10 -p fixed:64 --log "$WORK/wm3.bin" -q
i=0
while [ $i -lt 50 ] && ! cmp -s "$WORK/wm-frozen.bin" "$WORK/wm3.bin"; do
	sleep 0.1; i=$((i + 1))
done
tap_run "a FROZEN ring is drained below the watermark" cmp "$WORK/wm-frozen.bin" "$WORK/wm3.bin"
kill -TERM "$DPID"
wait_exit "$DPID" 10

# The ring's memory going away (device removed; here: the ring file cut
# short) is a clean exit 5, not a crash.
"$FWSIM" -r "$ring" --init-only
start_daemon gone -r "$ring" -o "$WORK/gone.bin"
sleep 0.3
truncate -s 0 "$ring"
wait_exit "$DPID" 10
tap_eq "ring memory gone: exit 5" "$RC" 5
tap_run "says the ring is gone" grep -q "ring file $ring gone" "$WORK/gone.err"
tap_done
