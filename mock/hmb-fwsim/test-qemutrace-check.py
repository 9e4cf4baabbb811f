#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""test-qemutrace-check.py WORK N FAILED: the checks of test-qemutrace.sh
on what hmb-fwsim --from-qemu-trace left in WORK (ring, fw.bin, cmd.log,
report.json, trace.log); TAP numbered on from the script's N tests of
which FAILED failed."""

import json
import os
import re
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "formats"))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))
from tap import Tap  # noqa: E402
from hmb_trace.format import RECORD_HDR, RING_HDR  # noqa: E402

work = sys.argv[1]
t = Tap(int(sys.argv[2]), int(sys.argv[3]))
tap = t.ok
rep = json.load(open(work + "/report.json"))
ring = open(work + "/ring", "rb").read()
magic, ver, size, off, head, tail = RING_HDR.unpack_from(ring, 0)[:6]
dump = open(work + "/fw.bin", "rb").read()
tap(head > 0 and dump == ring[off:off + head], "--log: the dump holds every record written to the ring, byte for byte (%d bytes)" % len(dump))
recs = []
pos = 0
while pos < head:
    o = 64 + (pos % size)
    m, seq, ts, op, cpu, fl, plen = RECORD_HDR.unpack_from(ring, o)[:7]
    if m != 0x54434552: break
    if fl & 1:
        pos = (pos // size + 1) * size; continue
    recs.append((seq, ts, op, ring[o + 32:o + 32 + plen]))
    pos += 32 + ((plen + 7) & ~7)
tap(len(recs) == rep["records"] and rep["dropped"] == 0, "ring holds every record the report counts (%d)" % len(recs))
lines = open(work + "/trace.log").read().split("\n")
# expected per command: from the trace
cmds = {}
order = []
t0 = None
for ln, l in enumerate(lines, 1):
    m = re.match(r"\d+@([\d.]+):(\S+) (.*)", l)
    if not m: continue
    ts = float(m.group(1)); ev = m.group(2); a = m.group(3).split()
    if t0 is None: t0 = ts
    kv = {a[i]: a[i + 1] for i in range(len(a) - 1)}
    if ev == "pci_nvme_io_cmd":
        cmds[(int(kv["sqid"]), int(kv["cid"]))] = ln
        order.append((ln, int(kv["sqid"]), int(kv["cid"]), int(kv["opc"], 16)))
log = {}
for l in open(work + "/cmd.log"):
    d = dict(x.split("=") for x in l.split() if "=" in x)
    log[int(d["seq"])] = d
tap(len(log) == len(recs), "command log has a line per record")
# the fetch of a read/write carries the slba and (0-based) nlb QEMU traced
rw = {}
for ln, l in enumerate(lines, 1):
    m = re.match(r"\d+@[\d.]+:pci_nvme_(read|write) (.*)", l)
    if m:
        a = m.group(2).split()
        kv = {a[i]: a[i + 1] for i in range(len(a) - 1)}
        rw[ln - 1] = (int(kv["lba"], 16), int(kv["nlb"]) - 1)
nrw = badlba = 0
for seq, ts, op, pl in recs:
    if op == 0x100:
        ql = int(log[seq]["qline"])
        if ql in rw:
            nrw += 1
            slba, = struct.unpack_from("<Q", pl, 16)
            nlb, = struct.unpack_from("<H", pl, 10)
            badlba += (slba, nlb) != rw[ql]
tap(nrw == 2250 and badlba == 0, "fetch records of reads/writes carry QEMU's slba and nlb (%d, %d wrong)" % (nrw, badlba))
by_q = {}
bad_key = 0
for seq, ts, op, pl in recs:
    d = log[seq]
    if int(d["op"], 16) != op or int(d["ts"]) != ts: bad_key += 1; continue
    if op < 0x200:
        sq, cid = struct.unpack_from("<HH", pl, 0)
        if (sq, cid) != (int(d["sqid"]), int(d["cid"])): bad_key += 1
        by_q.setdefault(int(d["qline"]), []).append((op, sq, cid, ts))
tap(bad_key == 0, "payload keys (sqid, cid), opcode and ts agree with the command log")
want = {0x2: [0x100, 0x101, 0x102, 0x103, 0x104], 0x1: [0x100, 0x101, 0x102, 0x103, 0x104], 0x0: [0x100, 0x104]}
wrong = 0
for ln, sq, cid, opc in order:
    got = by_q.get(ln, [])
    if [g[0] for g in got] != want[opc] or any((g[1], g[2]) != (sq, cid) for g in got):
        wrong += 1
tap(wrong == 0 and len(order) == 3000, "every QEMU command got its own fetch..cqe_posted records with its sqid/cid (%d commands, %d wrong)" % (len(order), wrong))

tap(rep["commands"] == 3000 and rep["orphan_events"] == 1, "report: 3000 commands, 1 orphan (the admin completion)")
# clock: fw = (t - t0) * (1 + 100e-6) + 5e6 (+ 300000 from t0 + 2 s)
err = 0
for ln, sq, cid, opc in order:
    m = re.match(r"\d+@([\d.]+):", lines[ln - 1])
    rel = float(m.group(1)) - t0
    exp = rel * 1e9 * (1 + 100e-6) + 5e6 + (300000 if rel >= 2 else 0)
    fetch = by_q[ln][0][3]
    err = max(err, abs(fetch - exp))
tap(err < 2, "fetch timestamps follow offset, drift and step exactly (max error %.1f ns)" % err)
bg = [r for r in recs if r[2] >= 0x200]
gcs = sum(1 for r in bg if r[2] == 0x200)
tap(rep["bg_windows"] > 0 and 20 <= gcs <= 120, "background: %d gc windows over %.1f s at 20/s" % (gcs, rep["trace_seconds"]))
ends = sum(1 for r in bg if r[2] == 0x201)
tap(gcs - ends in (0, 1), "gc windows open and close (%d begin, %d end)" % (gcs, ends))
mono = all(recs[i][1] <= recs[i + 1][1] + 3000 for i in range(len(recs) - 1))
tap(mono, "record timestamps never go back by more than the 3 us of synthetic steps")
sys.exit(t.done())
