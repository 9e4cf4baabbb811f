#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# What the daemon finds at its output path before it drains anything.
#  - An existing FILE that is not a dump up to a record boundary (a ring
#    image, a text file, a dump corrupt in the middle, a dump followed by
#    bytes that are no record) is refused with exit 7 and one line naming
#    the file and the byte offset; nothing is written and the ring's tail
#    does not move (the records stay in the ring).
#  - A dump whose last record is torn (a writer killed mid-write), or
#    followed by zero bytes only (blocks allocated but never written
#    before a crash), is cut back to its last whole record and appended to.
#    Only zeros or a prefix of a record header may follow it: the cut never
#    drops a byte that could mean something.
#  - A FIFO (or socket) at FILE or FILE.meta is refused at once (exit 1):
#    opening it must not block the daemon, which has SIGTERM blocked.
. "$(dirname "$0")/lib.sh"

ring=$WORK/ring
tail_of() { od -An -t u8 -j 24 -N 8 "$ring" | tr -d ' '; }
size_of() { stat -c %s "$1"; }
# a known dump of whole records, and one record (232 bytes) to tear
"$FWSIM" -r "$WORK/r0" -n 50 -p "$MIX" --seed 7 --log "$WORK/good.bin" -q
"$FWSIM" -r "$WORK/r1" -n 1 -p fixed:200 --log "$WORK/one.bin" -q
good=$(size_of "$WORK/good.bin")

# refused NAME WHAT OFFSET: FILE $WORK/NAME holds what it held before the
# test wrote it; the daemon must refuse it and leave ring and FILE alone.
refused() {
	local name=$1 what=$2 off=$3 f=$WORK/$1 rc t0
	cp "$f" "$WORK/$name.orig"
	"$FWSIM" -r "$ring" -n 100 -q
	t0=$(tail_of)
	timeout -k 2 30 "$DAEMON" -r "$ring" -o "$f" --once 2> "$WORK/$name.err"
	rc=$?
	tap_eq "$what: exit 7" "$rc" 7
	tap_diag "$(cat "$WORK/$name.err")"
	tap_eq "$what: one line" "$(wc -l < "$WORK/$name.err")" 1
	tap_run "$what: the line names the file and byte offset $off" \
		grep -q "output $f .*byte offset $off\b" "$WORK/$name.err"
	tap_run "$what: FILE untouched" cmp "$f" "$WORK/$name.orig"
	tap_run "$what: no sidecar written" [ ! -e "$f.meta" ]
	tap_eq "$what: the ring's tail did not move" "$(tail_of)" "$t0"
	"$DAEMON" -r "$ring" -o "$WORK/drain.bin" --once -q
}

cp "$WORK/r0" "$WORK/image.bin"
refused image.bin "a ring image" 0
tap_run "a ring image: the line says so" grep -q "ring image" "$WORK/image.bin.err"
printf 'some notes about the trace\n' > "$WORK/text.bin"
refused text.bin "a text file" 0
# records, 32 bytes that are no record header, records
{ head -c 1024 "$WORK/one.bin"; printf 'X%.0s' $(seq 32); cat "$WORK/good.bin"; } > "$WORK/mid.bin"
refused mid.bin "a dump corrupt in the middle" 232
# a whole dump followed by a few bytes that cannot begin a record
{ cat "$WORK/good.bin"; printf 'notes\n'; } > "$WORK/junk-tail.bin"
refused junk-tail.bin "a dump followed by 6 bytes of text" "$good"
# a torn payload whose header is not a header at all
{ cat "$WORK/good.bin"; head -c 64 /dev/urandom | tr '\0' x; } > "$WORK/rand-tail.bin"
refused rand-tail.bin "a dump followed by 64 random bytes" "$good"

# appended(NAME WHAT KEEP): FILE holds a dump whose first KEEP bytes are
# whole records, then a torn record or zeros; it is cut back to KEEP and the
# ring's records follow.
appended() {
	local name=$1 what=$2 keep=$3 f=$WORK/$1 rc
	head -c "$keep" "$f" > "$WORK/$name.want"
	"$FWSIM" -r "$ring" -n 100 -p "$MIX" --log "$WORK/$name.sim" -q
	"$DAEMON" -r "$ring" -o "$f" --once 2> "$WORK/$name.err"
	rc=$?
	tap_eq "$what: exit 0" "$rc" 0
	grep -E "warning|error" "$WORK/$name.err" | sed 's/^/# /'
	cat "$WORK/$name.sim" >> "$WORK/$name.want"
	tap_run "$what: cut back to $keep bytes, then the ring's records" cmp "$f" "$WORK/$name.want"
	tap_eq "$what: the ring was drained" "$(tail_of)" "$(od -An -t u8 -j 16 -N 8 "$ring" | tr -d ' ')"
}

{ cat "$WORK/good.bin"; head -c 20 "$WORK/one.bin"; } > "$WORK/torn-hdr.bin"
appended torn-hdr.bin "a torn record header (20 of 32 bytes)" "$good"
tap_run "a torn record: the warning says so" grep -q "torn record" "$WORK/torn-hdr.bin.err"
{ cat "$WORK/good.bin"; head -c 100 "$WORK/one.bin"; } > "$WORK/torn-pay.bin"
appended torn-pay.bin "a torn payload (100 of 232 bytes)" "$good"
{ cat "$WORK/good.bin"; head -c 3 "$WORK/one.bin"; } > "$WORK/torn-magic.bin"
appended torn-magic.bin "a torn magic (3 bytes)" "$good"
head -c 7 "$WORK/one.bin" > "$WORK/torn-first.bin"
appended torn-first.bin "a dump of one torn record" 0
{ cat "$WORK/good.bin"; head -c 8192 /dev/zero; } > "$WORK/zero-tail.bin"
appended zero-tail.bin "zero bytes after the last record" "$good"
tap_run "zero bytes: the warning says so" grep -q "zero bytes" "$WORK/zero-tail.bin.err"
head -c 4096 /dev/zero > "$WORK/zeros.bin"
appended zeros.bin "a file of zero bytes only" 0
: > "$WORK/empty.bin"
appended empty.bin "an empty file" 0
cp "$WORK/good.bin" "$WORK/whole.bin"
appended whole.bin "a whole dump" "$good"

# SIGHUP onto a FILE that is not a dump: refused the same way.
"$FWSIM" -r "$ring" --init-only
start_daemon hup -r "$ring" -o "$WORK/hup.bin"
"$FWSIM" -r "$ring" --attach -n 100 --mode wait --wait-drained --log "$WORK/hup-sim.bin" -q
mv "$WORK/hup.bin" "$WORK/hup.bin.1"
printf 'notes\n' > "$WORK/hup.bin"
cp "$WORK/hup.bin" "$WORK/hup.orig"
kill -HUP "$DPID"
wait_exit "$DPID" 20
tap_eq "SIGHUP onto a file that is not a dump: exit 7" "$RC" 7
tap_run "SIGHUP onto a file that is not a dump: the line says so" \
	grep -q "output $WORK/hup.bin is not a dump.*byte offset 0" "$WORK/hup.err"
tap_run "SIGHUP onto a file that is not a dump: FILE untouched" cmp "$WORK/hup.bin" "$WORK/hup.orig"
tap_run "SIGHUP: the records before it are in the old file" cmp "$WORK/hup.bin.1" "$WORK/hup-sim.bin"

# --- FIFOs -------------------------------------------------------------
# fifo_refused PATH-TO-FIFO OUTPUT WHAT
fifo_refused() {
	local fifo=$1 out=$2 what=$3 rc t0
	"$FWSIM" -r "$ring" -n 100 -q
	t0=$(tail_of)
	timeout -k 2 20 "$DAEMON" -r "$ring" -o "$out" --once 2> "$WORK/fifo.err"
	rc=$?
	tap_eq "$what: exit 1 at once (124/137: it blocked)" "$rc" 1
	tap_diag "$(cat "$WORK/fifo.err")"
	tap_run "$what: the error names the FIFO" grep -q "$fifo.*FIFO" "$WORK/fifo.err"
	tap_run "$what: still a FIFO" [ -p "$fifo" ]
	tap_eq "$what: the ring's tail did not move" "$(tail_of)" "$t0"
	"$DAEMON" -r "$ring" -o "$WORK/drain.bin" --once -q
}
mkfifo "$WORK/fifo.bin"
fifo_refused "$WORK/fifo.bin" "$WORK/fifo.bin" "a FIFO at FILE"
cp "$WORK/good.bin" "$WORK/fm.bin"
mkfifo "$WORK/fm.bin.meta"
fifo_refused "$WORK/fm.bin.meta" "$WORK/fm.bin" "a FIFO at FILE.meta of a dump"
tap_run "a FIFO at FILE.meta: the dump untouched" cmp "$WORK/fm.bin" "$WORK/good.bin"
mkfifo "$WORK/fn.bin.meta"
fifo_refused "$WORK/fn.bin.meta" "$WORK/fn.bin" "a FIFO at FILE.meta of a new dump"
# --stats-json FILE a FIFO nobody reads: the exit must not block on it.
mkfifo "$WORK/stats.fifo"
"$FWSIM" -r "$ring" -n 100 -q
timeout -k 2 20 "$DAEMON" -r "$ring" -o "$WORK/sj.bin" --once --stats-json "$WORK/stats.fifo" 2> "$WORK/sj.err"
tap_eq "--stats-json a FIFO nobody reads: exit 0 at once (124/137: it blocked)" "$?" 0
tap_run "--stats-json a FIFO nobody reads: the error names it" grep -q "cannot write $WORK/stats.fifo.*FIFO" "$WORK/sj.err"
# A character device is still an output (benchmarks drain into /dev/null).
"$FWSIM" -r "$ring" -n 100 -q
timeout -k 2 20 "$DAEMON" -r "$ring" -o /dev/null --once -q
tap_eq "-o /dev/null: exit 0" "$?" 0
tap_eq "-o /dev/null: the ring was drained" "$(tail_of)" "$(od -An -t u8 -j 16 -N 8 "$ring" | tr -d ' ')"
tap_done
