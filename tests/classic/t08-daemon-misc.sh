#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Daemon odds and ends: --help, usage errors, --once, -o -, no CPU when
# idle, SIGINT at a record boundary, JSON logs.
. "$(dirname "$0")/lib.sh"

"$DAEMON" --help > "$WORK/help"
eq "--help exits 0" "$?" 0
check "--help has examples" grep -q "^Examples:" "$WORK/help"
"$DAEMON" 2>/dev/null
eq "no arguments: exit 2" "$?" 2
"$DAEMON" -r x -d y -o z 2>/dev/null
eq "two sources: exit 2" "$?" 2
"$DAEMON" -r x -o z -b 100 2>/dev/null
eq "batch below 4K: exit 2" "$?" 2

ring=$WORK/ring
"$FWSIM" -r "$ring" -n 20000 -p "$MIX" --log "$WORK/sim.bin" -q
"$DAEMON" -r "$ring" -o "$WORK/once.bin" --once 2>/dev/null
eq "--once exits 0" "$?" 0
check "--once drained the ring" cmp "$WORK/once.bin" "$WORK/sim.bin"
check "sidecar written" grep -q "^abi_version=1" "$WORK/once.bin.meta"
"$DAEMON" -r "$ring" -o "$WORK/again.bin" --once 2>/dev/null
check "a second --once finds nothing (the tail was published)" [ ! -s "$WORK/again.bin" ]

"$FWSIM" -r "$ring" -n 5000 --log "$WORK/sim2.bin" -q
"$DAEMON" -r "$ring" -o - --once 2>/dev/null > "$WORK/stdout.bin"
check "-o - writes the dump to stdout" cmp "$WORK/stdout.bin" "$WORK/sim2.bin"

# Idle: a ring with nothing in it should cost next to no CPU.
"$FWSIM" -r "$ring" --init-only
start_daemon idle -r "$ring" -o "$WORK/idle.bin" --log-format json
sleep 2
ticks=$(awk '{print $14 + $15}' "/proc/$DPID/stat")
hz=$(getconf CLK_TCK)
diag "idle daemon used $ticks ticks (of $hz/s) in 2 s"
check "idle CPU under 5% ($ticks ticks in 2 s)" [ "$ticks" -le $((hz / 10)) ]
kill -INT "$DPID"
wait_exit "$DPID" 10
	eq "SIGINT: exit 0" "$RC" 0
check "JSON log lines" python3 -c 'import json,sys
for l in open(sys.argv[1]): json.loads(l)' "$WORK/idle.err"
check "summary line logged" grep -q '"msg":"summary: 0 records' "$WORK/idle.err"

# The ring's memory going away (device removed; here: the ring file cut
# short) is a clean exit 5, not a crash.
"$FWSIM" -r "$ring" --init-only
start_daemon gone -r "$ring" -o "$WORK/gone.bin"
sleep 0.3
truncate -s 0 "$ring"
wait_exit "$DPID" 10
eq "ring memory gone: exit 5" "$RC" 5
check "says the ring is gone" grep -q "ring file $ring gone" "$WORK/gone.err"
done_testing
