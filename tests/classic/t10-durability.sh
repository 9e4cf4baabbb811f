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
	python3 - "$@" <<'EOF'
import json, os, sys
policy, log, dump, stats = sys.argv[1:5]
dump = os.path.realpath(dump)
ev = []
for line in open(log):
    parts = line.split()
    ev.append((parts[0], parts[1:-1], int(parts[-1].split('=')[1])))
st = json.load(open(stats))
dw = [e for e in ev if e[0] in ('write', 'writev') and e[1][0] == dump]
ds = [e for e in ev if e[0] == 'fdatasync' and e[1][0] == dump]
errs = []
if not dw:
    errs.append('no write to the dump was seen')
if policy == 'batch':
    # After each write to the dump, the next dump event that is not a
    # write must be its fdatasync, at the same tail (not yet published).
    pending = None
    for e in ev:
        if e[1][:1] != [dump]:
            continue
        if e[0] in ('write', 'writev'):
            if pending is not None and e[2] != pending:
                errs.append('tail moved from %d to %d before the fdatasync' % (pending, e[2]))
            pending = e[2]
        elif e[0] == 'fdatasync':
            if pending is None:
                continue
            if e[2] != pending:
                errs.append('fdatasync at tail %d, write at tail %d: published before the sync' % (e[2], pending))
            pending = None
    if pending is not None:
        errs.append('last write never fdatasync\'ed')
    if len(ds) < st['batches']:
        errs.append('%d fdatasyncs for %d batches' % (len(ds), st['batches']))
    d = os.path.dirname(dump)
    if not any(e[0] == 'fsync' and e[1][0] == d for e in ev):
        errs.append('the new dump\'s directory was never fsync\'ed')
elif policy == 'none':
    if ds:
        errs.append('%d fdatasyncs of the dump under --fsync none' % len(ds))
elif policy == 'interval':
    if not ds:
        errs.append('no fdatasync under --fsync interval')
    last = [e for e in ev if e[1][:1] == [dump]][-1]
    if last[0] != 'fdatasync':
        errs.append('the last dump event is %s, not the exit fdatasync' % last[0])
# The sidecar: renamed from .tmp, then its directory synced.
meta = dump + '.meta'
ren = [i for i, e in enumerate(ev) if e[0] == 'rename' and e[1] == [meta + '.tmp', meta]]
if not ren:
    errs.append('sidecar not renamed into place')
elif not any(e[0] == 'fsync' and e[1][0] == os.path.dirname(meta) for e in ev[ren[0] + 1:]):
    errs.append('no directory fsync after the sidecar rename')
print('# %d dump writes, %d fdatasyncs, %d batches, stats fsyncs %d' % (len(dw), len(ds), st['batches'], st['fsyncs']))
for e in errs:
    print('# ' + e)
sys.exit(1 if errs else 0)
EOF
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
