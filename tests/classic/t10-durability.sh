#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Durability: --fsync none|batch|interval, observed
# with an LD_PRELOAD spy (tests/tools/fsync-spy.c) that logs every write,
# fdatasync, fsync and rename with the ring's published tail at that
# moment.  batch: every write to the dump is fdatasync'ed before the tail
# moves past it, and a new dump's directory is synced; none: the dump is
# never synced; interval: synced, and once more at exit.  The sidecar is
# always renamed into place and its directory fsync'ed after the rename.
. "$(dirname "$0")/lib.sh"

SPY=${HMB_SPY:-$(dirname "$TBIN")/lib/fsync-spy.so}
[ -f "$SPY" ] || { tap_fail "spy library $SPY built (make -C tests all)"; tap_done; }
# An ASan build wants its runtime first; the spy does not care.
export ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0

ring=$WORK/ring
# spy_daemon LOG ARGS...: the daemon under the spy.
spy_daemon() {
	local log=$1
	shift
	HMB_SPY_LOG=$log HMB_SPY_RING=$ring LD_PRELOAD=$SPY "$DAEMON" "$@"
}

# check_order POLICY LOG DUMP STATS: the order the policy promises.
check_order() {
	python3 "$(dirname "$0")/t10-check-order.py" "$@"
}

"$DAEMON" -r x -o y --fsync sometimes 2>/dev/null
tap_eq "--fsync sometimes: exit 2" "$?" 2

for policy in batch none; do
	"$FWSIM" -r "$ring" -n 20000 -p "$MIX" --log "$WORK/sim-$policy.bin" -q
	spy_daemon "$WORK/$policy.log" -r "$ring" -o "$WORK/$policy.bin" --once \
		-b 64K --fsync "$policy" --stats-json "$WORK/$policy.json" -q
	tap_eq "--fsync $policy --once: exit 0" "$?" 0
	tap_run "--fsync $policy: dump complete" cmp "$WORK/$policy.bin" "$WORK/sim-$policy.bin"
	tap_run "--fsync $policy: syncs in the promised order" \
		check_order "$policy" "$WORK/$policy.log" "$WORK/$policy.bin" "$WORK/$policy.json"
done

# interval: a live daemon, records trickling in for about a second.
"$FWSIM" -r "$ring" --init-only
HMB_SPY_LOG=$WORK/interval.log HMB_SPY_RING=$ring LD_PRELOAD=$SPY \
	start_daemon interval -r "$ring" -o "$WORK/interval.bin" --fsync interval \
	--fsync-interval-ms 100 --stats-json "$WORK/interval.json" -q
"$FWSIM" -r "$ring" --attach -n 20000 -R 20000 -b 100 -p "$MIX" \
	--log "$WORK/sim-interval.bin" -q --wait-drained
kill -TERM "$DPID"
wait_exit "$DPID" 20
tap_eq "--fsync interval: exit 0" "$RC" 0
tap_run "--fsync interval: dump complete" cmp "$WORK/interval.bin" "$WORK/sim-interval.bin"
tap_run "--fsync interval: synced, and at exit" \
	check_order interval "$WORK/interval.log" "$WORK/interval.bin" "$WORK/interval.json"
tap_done
