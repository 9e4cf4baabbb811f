#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Attaching to a ring whose header or cursors are wrong.
#  - A ring header the daemon cannot read (size, record area offset, a
#    file shorter than the header says) is refused with exit 4; cursors no
#    producer could have left (head behind tail, more than a ring ahead,
#    either misaligned) are a corrupt ring, exit 3 (the man page's codes).
#    Nothing is written in either case.
. "$(dirname "$0")/lib.sh"

ring=$WORK/ring
# poke FILE OFFSET FORMAT VALUE: overwrite a little-endian field.
poke() {
	python3 -c 'import struct,sys
with open(sys.argv[1], "r+b") as f:
    f.seek(int(sys.argv[2], 0))
    f.write(struct.pack("<" + sys.argv[3], int(sys.argv[4], 0)))' "$@"
}

# refused NAME WANT WHAT GREP: attach to $ring as it is now.
refused() {
	local name=$1 want=$2 what=$3 pat=$4
	"$DAEMON" -r "$ring" -o "$WORK/$name.bin" --once 2> "$WORK/$name.err"
	eq "$what: exit $want" "$?" "$want"
	diag "$(cat "$WORK/$name.err")"
	check "$what: the error says what ($pat)" grep -q "$pat" "$WORK/$name.err"
	check "$what: no output written" [ ! -e "$WORK/$name.bin" ]
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

done_testing
