#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# hmb-fwsim on its own: options, determinism, overflow accounting, fault
# modes as they appear in the ring header.  TAP output.
set -u
SIM=${1:?usage: test-fwsim.sh PATH-TO-hmb-fwsim}
W=$(mktemp -d /dev/shm/fwsim-test.XXXXXX 2>/dev/null || mktemp -d)
trap 'rm -rf "$W"' EXIT
. "$(dirname "$0")/../../scripts/lib/tap.sh"
json() { python3 -c 'import json,sys; v=json.load(open(sys.argv[1]))[sys.argv[2]]; print(json.dumps(v) if isinstance(v,(list,dict,bool)) or v is None else v)' "$1" "$2"; }
u32() { od -An -t u4 -j "$2" -N 4 "$1" | tr -d ' '; }
u64() { od -An -t u8 -j "$2" -N 8 "$1" | tr -d ' '; }

"$SIM" --help > "$W/help"
tap_eq "--help exits 0" "$?" 0
tap_run "--help shows examples" grep -q "^Examples:" "$W/help"
"$SIM" 2>/dev/null
tap_eq "no --ring-file: exit 2" "$?" 2
"$SIM" -r "$W/r" -s 1000 2>/dev/null
tap_eq "ring size not a power of two: exit 2" "$?" 2
"$SIM" -r "$W/r" -p mix:64x0 2>"$W/err"
tap_eq "zero weight: exit 2" "$?" 2
"$SIM" -r "$W/r" -p fixed:4065 2>"$W/err"
tap_eq "payload over 4064: exit 2" "$?" 2
tap_run "message names the limit" grep -q 4064 "$W/err"
"$SIM" -r "$W/r" --opcodes 0x10000 2>/dev/null
tap_eq "opcode over 0xffff: exit 2" "$?" 2
"$SIM" -r "$W/r" --reinit-after-freeze 2>/dev/null
tap_eq "--reinit-after-freeze without --freeze-after: exit 2" "$?" 2

# Header as the producer initialises it.
"$SIM" -r "$W/r" -s 64K --init-only
tap_eq "file size is 64 + ring_size" "$(stat -c %s "$W/r")" 65600
tap_eq "magic HMBT" "$(head -c 4 "$W/r")" HMBT
tap_eq "version 1" "$(u32 "$W/r" 4)" 1
tap_eq "ring_size" "$(u32 "$W/r" 8)" 65536
tap_eq "record_area_off" "$(u32 "$W/r" 12)" 64

# No consumer, drop mode: the ring fills, the rest is dropped and counted.
"$SIM" -r "$W/r" -s 64K -n 10000 -p fixed:64 --json > "$W/a.json"
tap_eq "drop mode exits 0" "$?" 0
c=$(json "$W/a.json" created); p=$(json "$W/a.json" produced); d=$(json "$W/a.json" dropped)
tap_eq "created == --count" "$c" 10000
tap_eq "produced + dropped == created" "$((p + d))" 10000
tap_eq "a 64K ring holds 682 records of 96 bytes" "$p" 682
tap_eq "drops are one seq range" "$(json "$W/a.json" drops)" "[[682, 9999]]"
tap_eq "OVERFLOWED set in the ring" "$(( $(u32 "$W/r" 32) & 1 ))" 1
tap_eq "head == bytes written" "$(u64 "$W/r" 16)" "$(json "$W/a.json" bytes)"

# Wait mode without a consumer gives up after --wait-timeout: exit 3.
"$SIM" -r "$W/r" -s 64K -n 10000 --mode wait --wait-timeout 0.5 -q
tap_eq "wait mode, no consumer: exit 3 (stalled)" "$?" 3

# Determinism: same seed -> same records except ts_ns; another seed differs.
"$SIM" -r "$W/r1" -s 1M -n 3000 --seed 7 --log "$W/l1" -q
"$SIM" -r "$W/r2" -s 1M -n 3000 --seed 7 --log "$W/l2" -q
"$SIM" -r "$W/r3" -s 1M -n 3000 --seed 8 --log "$W/l3" -q
strip() { python3 -c 'import sys
d=bytearray(open(sys.argv[1],"rb").read()); i=0
while i < len(d):
    l=int.from_bytes(d[i+20:i+22],"little"); d[i+8:i+16]=bytes(8); i+=32+((l+7)&~7)
sys.stdout.buffer.write(d)' "$1"; }
tap_run "same seed: identical records apart from ts_ns" cmp -s <(strip "$W/l1") <(strip "$W/l2")
differ() { ! cmp -s "$1" "$2"; }
tap_run "another seed: different records" differ "$W/l1" "$W/l3"
tap_run "log == ring contents for a run that fits" cmp -s "$W/l1" <(tail -c +65 "$W/r1" | head -c "$(stat -c %s "$W/l1")")

# Faults.
"$SIM" -r "$W/r" -s 64K -n 100 --freeze-after 50 --json > "$W/f.json"
tap_eq "--freeze-after stops after N records" "$(json "$W/f.json" created)" 50
tap_eq "FROZEN left set" "$(( $(u32 "$W/r" 32) & 2 ))" 2
"$SIM" -r "$W/r" -s 64K -n 100 --freeze-after 50 --reinit-after-freeze \
	--freeze-hold 0 --json > "$W/g.json"
tap_eq "re-init: FROZEN cleared" "$(( $(u32 "$W/r" 32) & 2 ))" 0
tap_eq "re-init counted" "$(json "$W/g.json" reinits)" 1
tap_eq "unread bytes at re-init reported" "$(json "$W/g.json" unread_at_reinit_bytes)" \
	"$(json "$W/f.json" bytes)"
tap_eq "seq restarts (last seq of the new epoch)" "$(json "$W/g.json" last_seq)" 49
"$SIM" -r "$W/r" -s 64K -n 10 --corrupt-seq 3 -p fixed:8 --json > "$W/c.json"
off=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["corrupt"]["file_offset"])' "$W/c.json")
tap_eq "corrupt record at file offset 64 + 3 * 40" "$off" 184
tap_eq "its magic is overwritten" "$(u32 "$W/r" "$off")" 3735928559
"$SIM" -r "$W/r" -s 64K -n 1 --version2 -q
tap_eq "--version2 header" "$(u32 "$W/r" 4)" 2
"$SIM" -r "$W/r" -s 64K --init-only
"$SIM" -r "$W/r" --attach -n 5 -p fixed:0 --first-seq 100 --json > "$W/t.json"
tap_eq "--attach keeps the ring and continues at --first-seq" \
	"$(json "$W/t.json" first_seq)-$(u64 "$W/r" 16)" "100-160"
tap_done
