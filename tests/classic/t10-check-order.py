#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""t10-check-order.py POLICY LOG DUMP STATS: does the fsync spy's LOG of
the daemon's writes, syncs and renames keep the order --fsync POLICY
promises (t10-durability.sh)?  What it found as TAP comments; exit 1 on
a broken promise."""

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
