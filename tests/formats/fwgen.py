# SPDX-License-Identifier: Apache-2.0
"""Synthetic firmware workloads with their ground truth, for the formats
tests (Perfetto, report, CTF).

A workload is a list of NVMe commands going through the firmware phases of
share/hmb-events.dict (cmd_fetch .. cmd_cqe_posted) on several firmware
CPUs, overlapping, plus background windows (gc, thermal), temperature
points and records of an opcode the dictionary does not know.  Records get
seqs in timestamp order; optional losses remove seq ranges, as a producer
overflow would.  The generator knows what it wrote and what it removed, so
the tests derive the expected output from that knowledge, not from the tool.
"""

import random
import struct
import sys
import os

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(TOP, "python"))

from hmb_trace.writer import encode_record  # noqa: E402

OP_FETCH, OP_MSTART, OP_MEND, OP_XFER, OP_CQE = 0x100, 0x101, 0x102, 0x103, 0x104
OP_GC_START, OP_GC_END = 0x200, 0x201
OP_TH_START, OP_TH_END = 0x210, 0x211
OP_TEMP = 0x220
OP_UNKNOWN = 0x0999
PHASE_OF = {OP_FETCH: 1, OP_MSTART: 2, OP_MEND: 3, OP_XFER: 4, OP_CQE: 5}
PHASE_NAME = {1: "fetch", 2: "media_start", 3: "media_end", 4: "xfer_done",
              5: "cqe_posted"}
EVENT_NAME = {OP_FETCH: "cmd_fetch", OP_MSTART: "cmd_media_start",
              OP_MEND: "cmd_media_end", OP_XFER: "cmd_xfer_done",
              OP_CQE: "cmd_cqe_posted", OP_GC_START: "gc_start",
              OP_GC_END: "gc_end", OP_TH_START: "thermal_throttle_start",
              OP_TH_END: "thermal_throttle_end", OP_TEMP: "temperature"}
BG_GROUP = {OP_GC_START: ("gc", "begin"), OP_GC_END: ("gc", "end"),
            OP_TH_START: ("thermal", "begin"),
            OP_TH_END: ("thermal", "end")}


class Rec:
    __slots__ = ("seq", "ts", "opcode", "cpu", "payload", "cmd")

    def __init__(self, ts, opcode, cpu, payload, cmd=None):
        self.seq = None
        self.ts = ts
        self.opcode = opcode
        self.cpu = cpu
        self.payload = payload
        self.cmd = cmd          # index of the command, or None

    def encode(self):
        return encode_record(self.seq, self.ts, self.opcode, self.cpu, 0,
                             self.payload)


def _fetch(sqid, cid, nsid, opc, nlb, slba):
    return struct.pack("<HHIBxHxxxxQ", sqid, cid, nsid, opc, nlb, slba)


class Workload:
    def __init__(self, n_cmds=200, seed=1, cpus=4, qd=16, sqids=(1, 2),
                 gc_every=200, unknown_every=25, first_seq=0,
                 t0=5_000_000_000, gap=(200, 3000)):
        rnd = random.Random(seed)
        self.cmds = []          # dicts: sqid, cid, opc, phases {phase: ts}
        recs = []
        tags = {q: list(range(qd)) for q in sqids}
        gen = {}
        busy = []               # (end_ts, sqid, tag)
        t = t0
        for i in range(n_cmds):
            t += rnd.randint(*gap)
            busy.sort()
            while busy and busy[0][0] <= t:
                _, q, tag = busy.pop(0)
                tags[q].append(tag)
            q = rnd.choice(sqids)
            if not tags[q]:
                end, q2, tag = busy.pop(0)
                t = max(t, end)
                tags[q2].append(tag)
                q = q2
            tag = tags[q].pop(0)
            g = gen.get((q, tag), 0)
            gen[(q, tag)] = (g + 1) & 15
            cid = g << 12 | tag
            opc = rnd.choice([1, 2, 2, 2, 0])
            nlb = rnd.randint(0, 63)
            cpu = rnd.randrange(cpus)
            phases = {1: t}
            ts = t
            if opc != 0 or rnd.random() < 0.5:
                ts += rnd.randint(500, 5000)
                phases[2] = ts
                ts += rnd.randint(20_000, 120_000) if rnd.random() > 0.03 \
                    else rnd.randint(500_000, 2_000_000)
                phases[3] = ts
            ts += rnd.randint(1000, 8000)
            phases[4] = ts
            ts += rnd.randint(300, 2000)
            phases[5] = ts
            busy.append((ts, q, tag))
            idx = len(self.cmds)
            self.cmds.append({"sqid": q, "cid": cid, "opc": opc,
                              "phases": phases, "nlb": nlb,
                              "slba": rnd.randrange(1 << 32), "nsid": 1})
            for ph, pts in phases.items():
                pcpu = cpu if ph in (1, 5) else rnd.randrange(cpus)
                if ph == 1:
                    pl = _fetch(q, cid, 1, opc, nlb, self.cmds[-1]["slba"])
                elif ph == 2:
                    pl = struct.pack("<HHH", q, cid, rnd.randrange(8))
                elif ph == 3:
                    pl = struct.pack("<HHHH", q, cid, rnd.randrange(8), 0)
                elif ph == 4:
                    pl = struct.pack("<HHI", q, cid, (nlb + 1) * 512)
                else:
                    pl = struct.pack("<HHHH", q, cid, 0, q)
                recs.append(Rec(pts, [0, OP_FETCH, OP_MSTART, OP_MEND,
                                      OP_XFER, OP_CQE][ph], pcpu, pl, idx))
            if gc_every and i % gc_every == gc_every // 2:
                gs = t + rnd.randint(0, 10_000)
                recs.append(Rec(gs, OP_GC_START, cpus - 1,
                                struct.pack("<II", rnd.randrange(1000),
                                            rnd.randrange(4096))))
                recs.append(Rec(gs + rnd.randint(20_000, 150_000), OP_GC_END,
                                cpus - 1, struct.pack("<II", 7, 99)))
            if gc_every and i % (gc_every * 2) == 3:
                recs.append(Rec(t + 10, OP_TEMP, 0,
                                struct.pack("<h", rnd.randint(-5, 90))))
            if gc_every and i % (gc_every * 3) == 7:
                recs.append(Rec(t + 20, OP_TH_START, 0,
                                struct.pack("<hB", 85, 2)))
                recs.append(Rec(t + 300_000, OP_TH_END, 0,
                                struct.pack("<h", 70)))
            if unknown_every and i % unknown_every == 1:
                recs.append(Rec(t + 5, OP_UNKNOWN, rnd.randrange(cpus),
                                bytes(rnd.randrange(256)
                                      for _ in range(rnd.randrange(0, 20)))))
        recs.sort(key=lambda r: (r.ts, r.opcode))
        seq = first_seq
        for r in recs:
            r.seq = seq & 0xFFFFFFFF
            seq += 1
        self.all = recs
        self.kept = recs
        self.gaps = []

    def lose(self, ranges):
        """Remove records by index ranges [(start, count)] (not adjacent)."""
        drop = set()
        for start, count in ranges:
            assert start > 0 and start + count < len(self.all)
            self.gaps.append((self.all[start].seq, count,
                              self.all[start - 1].ts,
                              self.all[start + count].ts))
            drop.update(range(start, start + count))
        self.kept = [r for i, r in enumerate(self.all) if i not in drop]

    def dump(self):
        return b"".join(r.encode() for r in self.kept)

    def write(self, path):
        with open(path, "wb") as f:
            f.write(self.dump())

    # ------------------------------------------------ expected results

    def expected_commands(self):
        """Per command with a surviving record: sorted surviving phases."""
        seen = {}
        for r in self.kept:
            if r.cmd is not None:
                seen.setdefault(r.cmd, []).append(
                    (PHASE_OF[r.opcode], r.ts))
        return {k: sorted(v) for k, v in seen.items()}

    def expected_bg_windows(self):
        """Windows per group: surviving begins + ends whose begin is lost."""
        out = {}
        open_ = {}
        for r in self.kept:
            if r.opcode not in BG_GROUP:
                continue
            grp, edge = BG_GROUP[r.opcode]
            if edge == "begin":
                if open_.get(grp) is not None:
                    out.setdefault(grp, []).append((open_[grp], r.ts))
                open_[grp] = r.ts
            else:
                t0 = open_.pop(grp, None)
                out.setdefault(grp, []).append(
                    (t0 if t0 is not None else self.kept[0].ts, r.ts))
        last = max(r.ts for r in self.kept)
        for grp, t0 in open_.items():
            if t0 is not None:
                out.setdefault(grp, []).append((t0, last))
        return out


    # ------------------------------------------------ the host's view

    def host_commands(self, offset_ns, drift_ppm=0.0, ref=None, seed=3,
                      skip_first=0, ctrl=0, step_at=None, step_ns=0,
                      status_every=0):
        """Host submit/complete of every command, on a host clock with
        host = fw + offset + drift * (fw - ref): submitted 2..15 us before
        the firmware fetched it, completed 3..20 us after cqe_posted.
        The first @skip_first commands are left out (the host recorder
        started later).  With @step_at (firmware ns), the offset steps by
        @step_ns from there on.  With @status_every, every such command
        completes with an error status (0x2 Invalid Field in Command, or
        0x281 Unrecovered Read Error on reads), else 0.  Returns dicts in
        completion order."""
        rnd = random.Random(seed)
        ref = self.all[0].ts if ref is None else ref

        def host(fw):
            step = step_ns if step_at is not None and fw >= step_at else 0
            return int(fw + offset_ns + step + drift_ppm * 1e-6 * (fw - ref))
        out = []
        for i, c in enumerate(self.cmds[skip_first:], skip_first):
            ph = c["phases"]
            out.append({"idx": i, "ctrl": ctrl, "qid": c["sqid"],
                        "cid": c["cid"], "opc": c["opc"],
                        "nsid": c["nsid"], "slba": c["slba"],
                        "nlb": c["nlb"],
                        "status": (0 if not status_every or
                                   i % status_every != status_every // 3
                                   else 0x281 if c["opc"] == 2 else 0x2),
                        "submit_ns": host(ph[1]) - rnd.randint(2000, 15000),
                        "complete_ns": host(ph[5]) + rnd.randint(3000, 20000)})
        out.sort(key=lambda h: h["complete_ns"])
        return out


OPC_NAME = {0: "flush", 1: "write", 2: "read"}


def write_agent_jsonl(path, hosts):
    """hmb-trace-agent -j --per-command in host-only mode, with the
    interval report lines it interleaves."""
    import json
    with open(path, "w") as f:
        for i, h in enumerate(hosts):
            cmd = {"ctrl": h["ctrl"], "qid": h["qid"], "cid": h["cid"],
                   "opc": OPC_NAME[h["opc"]], "nsid": h["nsid"],
                   "slba": h["slba"], "nlb": h["nlb"] + 1, "dev": "259:0",
                   "match": "host-only", "flags": 32,
                   "submit_ns": h["submit_ns"],
                   "complete_ns": h["complete_ns"],
                   "status": h.get("status", 0),
                   "host_total_ns": h["complete_ns"] - h["submit_ns"],
                   "fw": []}
            f.write(json.dumps({"type": "cmd", "cmd": cmd}) + "\n")
            if i % 1000 == 999:
                f.write(json.dumps({"type": "interval", "time": "12:00:00",
                                    "top": [{"ctrl": 9, "qid": 1,
                                             "cid": 1}]}) + "\n")


def write_perf_script(path, hosts):
    """perf script --ns of nvme:nvme_setup_cmd / nvme:nvme_complete_rq."""
    ev = []
    for h in hosts:
        ev.append((h["submit_ns"], 0, h))
        ev.append((h["complete_ns"], 1, h))
    ev.sort(key=lambda e: (e[0], e[1]))
    with open(path, "w") as f:
        for ts, kind, h in ev:
            t = "%d.%09d" % (ts // 10**9, ts % 10**9)
            if kind == 0:
                f.write("             fio  4242 [001] %s: nvme:nvme_setup_cmd: "
                        "nvme%d: disk=nvme%dn1, qid=%d, cmdid=%d, nsid=%d, "
                        "flags=0x0, meta=0x0, cmd=(nvme_cmd_%s slba=%d, "
                        "len=%d, ctrl=0x0, dsmgmt=0, reftag=0)\n"
                        % (t, h["ctrl"], h["ctrl"], h["qid"], h["cid"],
                           h["nsid"], OPC_NAME[h["opc"]], h["slba"],
                           h["nlb"]))
            else:
                f.write("         swapper     0 [000] %s: "
                        "nvme:nvme_complete_rq: nvme%d: disk=nvme%dn1, "
                        "qid=%d, cmdid=%d, res=0x0, retries=0, flags=0x0, "
                        "status=%#x\n"
                        % (t, h["ctrl"], h["ctrl"], h["qid"], h["cid"],
                           h.get("status", 0)))
