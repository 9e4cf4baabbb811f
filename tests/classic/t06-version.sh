#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# A version-2 ring is refused with a clear message (exit 4); so is a file
# that is not a ring at all.
. "$(dirname "$0")/lib.sh"

"$FWSIM" -r "$WORK/ring" --version2 -n 10 -q
"$DAEMON" -r "$WORK/ring" -o "$WORK/out.bin" 2> "$WORK/err"
tap_eq "version-2 ring: exit 4" "$?" 4
tap_diag "$(cat "$WORK/err")"
tap_run "message says version 2 and refusing" grep -q "version 2.*version 1 only (refusing)" "$WORK/err"
tap_run "no output written" [ ! -s "$WORK/out.bin" ]

head -c 4160 /dev/urandom > "$WORK/junk"
"$DAEMON" -r "$WORK/junk" -o "$WORK/out2.bin" 2> "$WORK/err2"
tap_eq "not a ring: exit 4" "$?" 4
tap_run "message names the file" grep -q "$WORK/junk" "$WORK/err2"
: > "$WORK/empty"
"$DAEMON" -r "$WORK/empty" -o "$WORK/out3.bin" 2> "$WORK/err3"
tap_eq "empty file: exit 4" "$?" 4
"$DAEMON" -r "$WORK/missing" -o "$WORK/out4.bin" 2> "$WORK/err4"
tap_eq "missing ring file: exit 1" "$?" 1
tap_run "message names the missing file" grep -q "cannot open ring file $WORK/missing" "$WORK/err4"
tap_done
