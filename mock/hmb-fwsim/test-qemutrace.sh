#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# test-qemutrace.sh FWSIM: hmb-fwsim --from-qemu-trace on a synthetic QEMU
# NVMe trace (two queues, reads, writes, a
# flush, an admin completion, noise lines), read back from the ring file:
# the right records with the right keys for every command, the command log
# naming the right QEMU line, the clock (offset, drift, step) exact,
# background windows at the asked rate.  TAP.
. "$(dirname "$0")/../../scripts/lib/preamble.sh"
set +e
here=$top/mock/hmb-fwsim
fwsim=${1:?usage: test-qemutrace.sh FWSIM}
. "$top/scripts/lib/tap.sh"
work=$(mktemp -d /tmp/hmb-qemutrace.XXXXXX)
trap 'rm -rf "$work"' EXIT

python3 "$here/test-qemutrace-gen.py" "$work/trace.log"

"$fwsim" --ring-file "$work/ring" --ring-size 16M --from-qemu-trace - \
	--clock-offset 5000000 --clock-drift 100 --clock-step 2:300000 \
	--bg-rate 20 --cmd-log "$work/cmd.log" --event-dict "$top/share/hmb-events.dict" \
	--log "$work/fw.bin" < "$work/trace.log" > "$work/report.json" 2>"$work/err"
rc=$?
[ $rc = 0 ] && tap_ok "hmb-fwsim --from-qemu-trace exits 0" || tap_fail "exit $rc: $(cat "$work/err")"
"$fwsim" --ring-file "$work/ring2" --from-qemu-trace "$work/nonexistent" 2>"$work/err2" >/dev/null
rc=$?
[ $rc = 1 ] && grep -q "cannot open QEMU trace" "$work/err2" && tap_ok "missing trace file: exit 1 with a message" ||
	tap_fail "missing trace file: exit $rc $(cat "$work/err2")"
"$fwsim" --ring-file "$work/ring2" --from-qemu-trace - --clock-step 5 2>"$work/err3" >/dev/null </dev/null
rc=$?
[ $rc = 2 ] && grep -q "clock-step" "$work/err3" && tap_ok "bad --clock-step: usage error" ||
	tap_fail "bad --clock-step: exit $rc $(cat "$work/err3")"

python3 "$here/test-qemutrace-check.py" "$work" "$tap_n" "$tap_failed"
