#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# --write-mode spans|copy (docs/format.md 9.5): both write the
# same dump; and under spans, a device that rewrites a checked record
# header between the check and the write (played by the LD_PRELOAD spy:
# flag bit 7 set in the first record of the first writev, in the ring) is
# caught by the check after the write: the batch is cut from the dump and
# written again from a checked copy, so the dump holds what the ring holds
# now, classified by what was checked, and the event is counted.
. "$(dirname "$0")/lib.sh"

SPY=${HMB_SPY:-$(dirname "$TBIN")/lib/fsync-spy.so}
[ -f "$SPY" ] || { tap_fail "spy library $SPY built (make -C tests all)"; tap_done; }
export ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0
ring=$WORK/ring

"$DAEMON" -r x -o y --write-mode mmap 2>/dev/null
tap_eq "--write-mode mmap: exit 2" "$?" 2
for m in spans copy; do
	"$FWSIM" -r "$ring" -s 1M -n 30000 -p "$MIX" --mode drop --log "$WORK/sim-$m.bin" -q
	"$DAEMON" -r "$ring" -o "$WORK/$m.bin" --once --write-mode "$m" -b 64K -q
	tap_eq "--write-mode $m --once: exit 0" "$?" 0
	tap_run "--write-mode $m: dump == what the simulator wrote" cmp "$WORK/$m.bin" "$WORK/sim-$m.bin"
done

"$FWSIM" -r "$ring" -n 5000 -p "$MIX" --log "$WORK/sim.bin" -q
HMB_SPY_MUTATE=1 HMB_SPY_LOG=$WORK/spy.log HMB_SPY_RING=$ring LD_PRELOAD=$SPY \
	"$DAEMON" -r "$ring" -o "$WORK/mut.bin" --once --write-mode spans \
	--stats-json "$WORK/mut.json" 2> "$WORK/mut.err"
tap_eq "ring rewritten under the write: exit 0" "$?" 0
tap_run "the spy rewrote a header" grep -q "^mutated" "$WORK/spy.log"
tap_run "the daemon logged it" grep -q "ring changed under the write" "$WORK/mut.err"
tap_eq "counted in ring_changed" "$(json "$WORK/mut.json" ring_changed)" 1
# What the ring holds now: the first record with flag bit 7 set.
python3 -c 'import sys
b = bytearray(open(sys.argv[1], "rb").read()); b[19] |= 0x80
open(sys.argv[2], "wb").write(b)' "$WORK/sim.bin" "$WORK/want.bin"
tap_run "the dump is the ring as it is now, checked" cmp "$WORK/mut.bin" "$WORK/want.bin"
tap_eq "the daemon counted the rewritten record as ignored" "$(json "$WORK/mut.json" ignored)" 1
tap_eq "and the others as records" "$(json "$WORK/mut.json" records)" 4999
if have_analyzer; then
	stats "$WORK/mut.bin" "$WORK/mut-stats.json"
	tap_eq "analyzer: the dump reads cleanly (ignored)" "$(json "$WORK/mut-stats.json" ignored)" 1
	tap_eq "analyzer: records" "$(json "$WORK/mut-stats.json" records)" 4999
fi
tap_done
