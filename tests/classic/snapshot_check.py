#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""snapshot_check.py SNAP TRUTH WINDOW_BYTES: t15's check of one daemon
snapshot against the producer's log of every record it wrote (TRUTH).

The snapshot must hold exactly the last whole records of the log that fit
in WINDOW_BYTES, and its sidecar (trace.bin.meta) must count them as the
log does: records, ignored records, markers, seqs the ring lost, what the
window evicted before them.  Prints "ok: ..." or the differences, joined
by "; ".
"""
import os, sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "python"))
from hmb_trace.format import RECORD_HDR  # noqa: E402
snap, truth, budget = sys.argv[1], sys.argv[2], int(sys.argv[3])
t = open(truth, "rb").read()
recs = []            # (offset, size, seq, marker, ignored)
o = 0
while o < len(t):
    magic, seq, _, _, _, flags, plen, _, _ = RECORD_HDR.unpack_from(t, o)
    assert magic == 0x54434552, "truth: bad magic at %d" % o
    size = 32 + ((plen + 7) & ~7)
    recs.append((o, size, seq, flags & 1, not (flags & 1) and (flags & ~3) != 0))
    o += size
held, i = 0, len(recs)
while i > 0 and held + recs[i - 1][1] <= budget:
    i -= 1
    held += recs[i][1]
want = t[len(t) - held:]
got = open(snap + "/trace.bin", "rb").read()
meta = dict(l.rstrip("\n").split("=", 1) for l in open(snap + "/trace.bin.meta")
            if "=" in l and not l.startswith("epoch="))
errs = []
if got != want:
    errs.append("dump is %d bytes, want the last %d of the log" % (len(got), held))
seqs = [r[2] for r in recs[i:] if not r[3]]
ev = [r for r in recs[:i] if not r[3]]
lost = sum((b - a - 1) % 2**32 for a, b in zip(seqs, seqs[1:]))
want_meta = {
    "snapshot_reason": "sigusr1",
    "snapshot_records": str(sum(1 for r in recs[i:] if not r[3] and not r[4])),
    "snapshot_ignored": str(sum(r[4] for r in recs[i:])),
    "snapshot_markers": str(sum(r[3] for r in recs[i:])),
    "snapshot_lost": str(lost),
    "window_bytes": str(budget),
    "window_evicted_records": str(sum(1 for r in ev if not r[4])),
    "window_evicted_ignored": str(sum(r[4] for r in ev)),
    "window_evicted_bytes": str(len(t) - held),
    "drained_records": str(sum(1 for r in recs if not r[3] and not r[4])),
    "anchor_offset": str(held),
}
if seqs:
    want_meta["snapshot_first_seq"] = str(seqs[0])
    want_meta["snapshot_last_seq"] = str(seqs[-1])
if ev:
    want_meta["window_evicted_last_seq"] = str(ev[-1][2])
elif "window_evicted_last_seq" in meta:
    errs.append("window_evicted_last_seq with nothing evicted")
for k, v in want_meta.items():
    if meta.get(k) != v:
        errs.append("%s=%s, want %s" % (k, meta.get(k), v))
if seqs and len(seqs) + lost != (seqs[-1] - seqs[0]) % 2**32 + 1:
    errs.append("records + lost do not span first..last seq")
print("; ".join(errs) if errs else
      "ok: %d records, seqs %s..%s, %d lost, %d evicted, %d markers" %
      (len(seqs), seqs[0] if seqs else "-", seqs[-1] if seqs else "-",
       lost, len(ev), int(want_meta["snapshot_markers"])))
