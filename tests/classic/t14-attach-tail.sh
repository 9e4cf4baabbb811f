#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Attaching to a ring whose header or cursors are wrong, and the tail the
# exit summary reports.
#  - A ring header the daemon cannot read (size, record area offset, a
#    file shorter than the header says) is refused with exit 4; cursors no
#    producer could have left (head behind tail, more than a ring ahead,
#    either misaligned) are a corrupt ring, exit 3 (the man page's codes).
#    Nothing is written in either case.
#  - --stats-json: "tail" is the tail published to the ring, "consumed"
#    how far the daemon read; they differ when it stops with a batch read
#    and not written (exit 6), and the ring's tail is "tail".
. "$(dirname "$0")/lib.sh"

ring=$WORK/ring
# poke FILE OFFSET FORMAT VALUE: overwrite a little-endian field.
poke() {
	python3 -c 'import struct,sys
with open(sys.argv[1], "r+b") as f:
    f.seek(int(sys.argv[2], 0))
    f.write(struct.pack("<" + sys.argv[3], int(sys.argv[4], 0)))' "$@"
}
tail_of() { od -An -t u8 -j 24 -N 8 "$ring" | tr -d ' '; }

# refused NAME WANT WHAT GREP: attach to $ring as it is now.
refused() {
	local name=$1 want=$2 what=$3 pat=$4
	"$DAEMON" -r "$ring" -o "$WORK/$name.bin" --once 2> "$WORK/$name.err"
	tap_eq "$what: exit $want" "$?" "$want"
	tap_diag "$(cat "$WORK/$name.err")"
	tap_run "$what: the error says what ($pat)" grep -q "$pat" "$WORK/$name.err"
	tap_run "$what: no output written" [ ! -e "$WORK/$name.bin" ]
}
# fresh HEAD TAIL: a 64 KiB ring holding records, then its cursors set.
fresh() {
	"$FWSIM" -r "$ring" -s 64K -n 100 -p fixed:64 -q
	poke "$ring" 0x10 Q "$1"
	poke "$ring" 0x18 Q "$2"
}

fresh 96 3
refused tailmis 3 "tail not 8-byte aligned" "tail 3 .*not 8-byte aligned"
fresh 5 0
refused headmis 3 "head not 8-byte aligned" "head 5 .*not 8-byte aligned"
fresh 64 128
refused back 3 "head behind tail" "head 64 is behind tail 128"
fresh $((65536 + 64)) 0
refused ahead 3 "head more than ring_size ahead" "more than ring_size 65536"

"$FWSIM" -r "$ring" -s 64K -n 10 -q
poke "$ring" 0x08 L 65535
refused size 4 "ring_size not a power of two" "ring_size 65535"
"$FWSIM" -r "$ring" -s 64K -n 10 -q
poke "$ring" 0x0c L 0x80
refused area 4 "record_area_off not 0x40" "record_area_off 0x80"
"$FWSIM" -r "$ring" -s 64K -n 10 -q
poke "$ring" 0x08 L $((1 << 20))
refused short 4 "file shorter than the header says" "shorter than header + ring_size"

# --- the tail in --stats-json ------------------------------------------
"$FWSIM" -r "$ring" -n 1000 -p "$MIX" -q
"$DAEMON" -r "$ring" -o "$WORK/once.bin" --once --stats-json "$WORK/once.json" 2>/dev/null
tap_eq "--once: exit 0" "$?" 0
tap_eq "--once: tail is the ring's tail" "$(json "$WORK/once.json" tail)" "$(tail_of)"
tap_eq "--once: consumed == tail" "$(json "$WORK/once.json" consumed)" "$(tail_of)"

# /dev/full: the batch is read, never written, never published.
"$FWSIM" -r "$ring" -n 1000 -p "$MIX" -q
t0=$(tail_of)
start_daemon full -r "$ring" -o /dev/full --stats-json "$WORK/full.json"
for i in $(seq 200); do
	grep -q "No space left" "$WORK/full.err" && break
	sleep 0.05
done
tap_run "/dev/full: the daemon holds its tail and retries" grep -q "No space left on device; holding the ring tail" "$WORK/full.err"
kill -TERM "$DPID"
wait_exit "$DPID" 20
tap_eq "/dev/full, SIGTERM: exit 6" "$RC" 6
tap_eq "/dev/full: the ring's tail did not move" "$(tail_of)" "$t0"
tap_eq "/dev/full: tail is the published tail" "$(json "$WORK/full.json" tail)" "$t0"
consumed=$(json "$WORK/full.json" consumed)
tap_run "/dev/full: consumed ($consumed) is past it: the batch read" [ "$consumed" -gt "$t0" ]
tap_eq "/dev/full: nothing counted as written" "$(json "$WORK/full.json" bytes)" 0
tap_done
