# SPDX-License-Identifier: Apache-2.0
"""Adversarial inputs for the join, with the truth they were made from.

Written from docs/format.md and docs/agent.md alone, not from the join's
code: one true clock (the host's), a firmware clock that drifts and may
step either way while commands are in flight, a trace that pauses (no
records written, no seqs consumed) while the host keeps issuing, records
lost in seq ranges (overflow), command ids reused as fast as the host's
tags allow, flushes and other commands without an LBA, a host recorder
that starts late or stops early, and seqs that wrap at 2^32.

The generator knows which record belongs to which command, so a test can
hold every output of the join to that: no record on the wrong command.
"""

import json
import random
import struct
import sys
import os

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))

from hmb_trace.writer import encode_record  # noqa: E402

OPCODE = {1: 0x100, 2: 0x101, 3: 0x102, 4: 0x103, 5: 0x104}
PHASE_NAME = {1: "fetch", 2: "media_start", 3: "media_end", 4: "xfer_done",
              5: "cqe_posted"}
OPC_NAME = {0: "flush", 1: "write", 2: "read", 8: "write_zeroes", 9: "dsm"}


class Cmd:
    __slots__ = ("i", "q", "cid", "opc", "slba", "nlb", "submit", "complete",
                 "phases", "recs")

    def __init__(self, i, q, cid, opc, slba, nlb):
        self.i, self.q, self.cid, self.opc = i, q, cid, opc
        self.slba, self.nlb = slba, nlb
        self.phases = []        # (phase, true time)
        self.recs = {}          # phase -> (seq, fw ts) of surviving records


class Scenario:
    """Generate with keyword knobs (all optional):

    n             commands
    queues, qd    queue ids and tags per queue (few tags: tight id reuse)
    flush_frac    share of flushes and dsm (no slba in the fetch record)
    offset_ns     host - fw at the start; drift_ppm: the firmware's rate
    steps         [(fraction of the run, ns)]: the firmware clock jumps
                  ahead by ns (negative: back) at that true time
    pauses        [(fraction, length ns)]: no records in that true span
    losses        [(fraction, records)]: a seq range lost (overflow)
    pair_losses   how many times a command's cqe_posted and the next
                  same-id command's fetch are lost together
    host_from, host_to   fractions: the host recorder's span
    fetch_ns      (min, max) submit -> fetch latency (queueing spreads it)
    first_seq     seq of the first record (near 2^32: seqs wrap)
    late_stamp    (count, ns): that many commands whose host submit stamp
                  was taken ns after the controller fetched them (a
                  hostile host recorder): causality must refuse their
                  records, and say so (self.late: those commands)
    """

    def __init__(self, seed=1, n=4000, queues=(1, 2, 3), qd=8,
                 flush_frac=0.15, offset_ns=-7_000_000_000_123,
                 drift_ppm=-120.0, steps=(), pauses=(), losses=(),
                 pair_losses=0, host_from=0.0, host_to=1.0, first_seq=0,
                 gap_ns=(1_000, 30_000), fetch_ns=(1_500, 12_000),
                 late_stamp=(0, 0)):
        rnd = random.Random(seed)
        self.rnd = rnd
        self.offset_ns, self.drift = offset_ns, drift_ppm * 1e-6
        self.cmds = []
        free = {q: list(range(qd)) for q in queues}
        gen = {}
        busy = []               # (host complete time, cmd)
        t = 1_000_000_000       # true time = host clock
        for i in range(n):
            t += rnd.randint(*gap_ns)
            busy.sort(key=lambda b: b[0])
            while busy and busy[0][0] <= t:
                _, c = busy.pop(0)
                free[c.q].append(c.cid & 0xfff)
            q = rnd.choice(queues)
            if not free[q]:
                t2, c = busy.pop(0)
                t = max(t, t2) + rnd.randint(0, 2000)
                free[c.q].append(c.cid & 0xfff)
                q = c.q
            tag = free[q].pop()     # the tag freed last: reused at once
            g = gen.get((q, tag), 0)
            gen[(q, tag)] = (g + 1) & 15
            r = rnd.random()
            opc = (0 if r < flush_frac * 0.7 else 9 if r < flush_frac
                   else rnd.choice((1, 2, 2, 8)))
            c = Cmd(i, q, g << 12 | tag, opc,
                    0 if opc in (0, 9) else rnd.randrange(1 << 40),
                    0 if opc in (0, 9) else rnd.randint(0, 255))
            c.submit = t
            f = t + rnd.randint(*fetch_ns)
            if rnd.random() < 0.02:                 # queued in the device
                f += rnd.randint(50_000, 400_000)
            ph = [(1, f)]
            x = f
            if opc in (1, 2, 8) or rnd.random() < 0.3:
                x += rnd.randint(300, 4_000)
                ph.append((2, x))
                x += (rnd.randint(15_000, 90_000) if rnd.random() > 0.02
                      else rnd.randint(300_000, 1_500_000))
                ph.append((3, x))
            x += rnd.randint(500, 8_000)
            ph.append((4, x))
            x += rnd.randint(200, 2_000)
            ph.append((5, x))
            c.phases = ph
            c.complete = x + rnd.randint(2_500, 25_000)
            busy.append((c.complete, c))
            self.cmds.append(c)
        self.late = []
        cnt, ns = late_stamp
        for c in rnd.sample(self.cmds, len(self.cmds)):
            if len(self.late) >= cnt:
                break
            f = c.phases[0][1]
            if c.i and c.complete - f > ns + 2_000:
                c.submit = f + ns
                self.late.append(c)
        self.t_begin = self.cmds[0].submit
        self.t_end = max(c.complete for c in self.cmds)
        span = self.t_end - self.t_begin
        at = lambda frac: self.t_begin + int(frac * span)  # noqa: E731
        self.steps = sorted((at(fr), int(s)) for fr, s in steps)
        self.pauses = [(at(fr), at(fr) + int(ln)) for fr, ln in pauses]
        # the firmware writes its records in true-time order
        recs = []
        for c in self.cmds:
            for p, tt in c.phases:
                if any(a <= tt < b for a, b in self.pauses):
                    continue
                recs.append((tt, p, c))
        recs.sort(key=lambda r: (r[0], r[1]))
        self.records = []       # (seq, fw ts, phase, cmd), all written
        seq = first_seq
        for tt, p, c in recs:
            self.records.append((seq & 0xffffffff, self.fw_of(tt), p, c))
            seq += 1
        # first record on each step's new clock (the truth a step's
        # placement is held to)
        self.step_first_seq = []
        for ts, _ in self.steps:
            k = next((k for k, (tt, _, _) in enumerate(recs) if tt >= ts),
                     None)
            if k is not None:
                self.step_first_seq.append(self.records[k][0])
        lost = set()
        n_rec = len(self.records)
        for fr, cnt in losses:
            k = max(1, min(n_rec - cnt - 1, int(fr * n_rec)))
            lost.update(range(k, k + cnt))
        index = {(id(c), p): k for k, (_, _, p, c) in
                 enumerate(self.records)}
        done = 0
        for c in self.cmds:
            if done >= pair_losses:
                break
            nxt = next((d for d in self.cmds[c.i + 1:c.i + 400]
                        if d.q == c.q and d.cid == c.cid), None)
            if not nxt or rnd.random() > 0.05:
                continue
            a, b = index.get((id(c), 5)), index.get((id(nxt), 1))
            if a is None or b is None or b - a > 40 or a <= 0:
                continue
            lost.add(a)
            lost.add(b)
            done += 1
        self.pair_lost = done
        self.kept = [r for k, r in enumerate(self.records) if k not in lost]
        self.lost = len(lost)
        for seq, ts, p, c in self.kept:
            c.recs[p] = (seq, ts)
        h0, h1 = at(host_from), at(host_to) if host_to < 1 else None
        self.host = [c for c in self.cmds if c.submit >= h0 and
                     (h1 is None or c.complete <= h1)]

    def fw_of(self, tt):
        """Firmware time of true (host) time @tt."""
        fw = (tt - self.offset_ns - self.t_begin) * (1 - self.drift) + \
            self.t_begin
        for ts, s in self.steps:
            if tt >= ts:
                fw += s
        return int(fw)

    def dump(self):
        out = []
        for seq, ts, p, c in self.kept:
            if p == 1:
                pl = struct.pack("<HHIBxHxxxxQ", c.q, c.cid, 1, c.opc,
                                 c.nlb, c.slba)
            elif p == 2:
                pl = struct.pack("<HHH", c.q, c.cid, 3)
            elif p == 3:
                pl = struct.pack("<HHHH", c.q, c.cid, 3, 0)
            elif p == 4:
                pl = struct.pack("<HHI", c.q, c.cid, (c.nlb + 1) * 512)
            else:
                pl = struct.pack("<HHHH", c.q, c.cid, 0, c.q)
            out.append(encode_record(seq, ts, OPCODE[p], c.i % 4, 0, pl))
        return b"".join(out)

    def write(self, dump_path, host_path):
        with open(dump_path, "wb") as f:
            f.write(self.dump())
        with open(host_path, "w") as f:
            for c in sorted(self.host, key=lambda c: c.complete):
                f.write(json.dumps({"type": "cmd", "cmd": {
                    "ctrl": 0, "qid": c.q, "cid": c.cid,
                    "opc": OPC_NAME[c.opc], "nsid": 1, "slba": c.slba,
                    "nlb": c.nlb + 1, "dev": "259:0", "match": "host-only",
                    "flags": 32, "submit_ns": c.submit,
                    "complete_ns": c.complete, "status": 0,
                    "host_total_ns": c.complete - c.submit,
                    "fw": []}}) + "\n")

    def truth(self):
        """(qid, cid, submit) -> {phase name: (seq, ts)} of its records."""
        return {(c.q, c.cid, c.submit):
                {PHASE_NAME[p]: v for p, v in c.recs.items()}
                for c in self.host}
