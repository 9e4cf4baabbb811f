#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""TAP tests of `hmb-trace-analyze convert --to perfetto` (protobuf).

usage: test_pftrace.py BINARY

Every packet is decoded with Perfetto's own schema
(tests/formats/perfetto/perfetto_trace.proto): by `protoc --decode` and by
Debian's Python protobuf runtime on a module protoc generates into a
temporary directory.  The events are then replayed as Perfetto's trace
processor reads them (per-sequence incremental clock, defaults, interned
names) and the slices, instants, counters and flows compared with what
fwgen.py wrote (the same ground truth as test_perfetto.py's).
"""

import os
import subprocess
import sys
import tempfile

try:
    import google.protobuf  # noqa: F401
except ImportError:
    # Debian's runtime (python3-protobuf) lives with Debian's interpreter
    if sys.executable != "/usr/bin/python3" and os.path.exists(
            "/usr/bin/python3"):
        os.execv("/usr/bin/python3", ["/usr/bin/python3"] + sys.argv)
    print("1..0 # SKIP python3-protobuf not installed (scripts/deps.sh test)")
    sys.exit(0)

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from fwgen import (Workload, EVENT_NAME, PHASE_NAME, PHASE_OF,  # noqa: E402
                   OP_FETCH, OP_MSTART, OP_MEND, OP_XFER, OP_CQE,
                   write_agent_jsonl)
from tap import Tap, run  # noqa: E402
import pelcase  # noqa: E402

T = Tap()
BIN = sys.argv[1]
WORK = tempfile.mkdtemp(prefix="hmb-formats-pftrace.")
N = int(os.environ.get("HMB_FORMATS_CMDS", "3000"))
PROTO_DIR = os.path.join(HERE, "perfetto")
PROTO = os.path.join(PROTO_DIR, "perfetto_trace.proto")

r = subprocess.run(["protoc", "-I", PROTO_DIR, "--python_out=" + WORK,
                    PROTO], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
if r.returncode:
    print("Bail out! protoc cannot compile %s: %s" % (PROTO, r.stderr))
    sys.exit(1)
sys.path.insert(0, WORK)
import perfetto_trace_pb2 as pb  # noqa: E402
from google.protobuf.message import DecodeError  # noqa: E402

TE = pb.TrackEvent
names = {0: "flush", 1: "write", 2: "read"}    # NVMe opcodes fwgen uses


def convert(dump, extra=(), to="perfetto", ext=".pftrace"):
    out = dump + ext
    r = run([BIN, "convert", dump, out, "--to", to, *extra])
    return r, out


class Decoded:
    """The trace as the trace processor sees it."""

    def __init__(self, path):
        data = open(path, "rb").read()
        self.size = len(data)
        self.trace = pb.Trace()
        self.trace.ParseFromString(data)
        self.tracks = {}        # uuid -> TrackDescriptor
        self.events = []        # (ts, track, type, name, args, te)
        self.problems = []
        seqs = {}
        for i, p in enumerate(self.trace.packet):
            if p.HasField("track_descriptor"):
                td = p.track_descriptor
                if td.uuid in self.tracks:
                    self.problems.append(("track twice", td.uuid))
                self.tracks[td.uuid] = td
                continue
            sid = p.trusted_packet_sequence_id
            if p.sequence_flags & 1:        # SEQ_INCREMENTAL_STATE_CLEARED
                seqs[sid] = {"names": {}, "anames": {}, "clock": None,
                             "defaults": p.trace_packet_defaults}
            st = seqs.get(sid)
            if st is None:
                self.problems.append(("packet before its sequence's state",
                                      i, sid))
                continue
            for n in p.interned_data.event_names:
                st["names"][n.iid] = n.name
            for n in p.interned_data.debug_annotation_names:
                st["anames"][n.iid] = n.name
            if p.HasField("clock_snapshot"):
                clk = {c.clock_id: c for c in p.clock_snapshot.clocks}
                if clk[64].timestamp != clk[6].timestamp or \
                        not clk[64].is_incremental:
                    self.problems.append(("clock snapshot", i))
                st["clock"] = clk[64].timestamp
                continue
            if not p.HasField("track_event"):
                continue
            if p.timestamp_clock_id == 6:
                ts = p.timestamp
            elif p.timestamp_clock_id in (0, 64) and \
                    st["defaults"].timestamp_clock_id == 64:
                st["clock"] += p.timestamp
                ts = st["clock"]
            else:
                self.problems.append(("clock", i, p.timestamp_clock_id))
                continue
            te = p.track_event
            track = te.track_uuid if te.HasField("track_uuid") else \
                st["defaults"].track_event_defaults.track_uuid
            if te.HasField("name_iid"):
                if te.name_iid not in st["names"]:
                    self.problems.append(("name not interned", i))
                name = st["names"].get(te.name_iid)
            else:
                name = te.name if te.HasField("name") else None
            args = {}
            for a in te.debug_annotations:
                if a.HasField("name_iid"):
                    if a.name_iid not in st["anames"]:
                        self.problems.append(("arg name not interned", i))
                    k = st["anames"].get(a.name_iid)
                else:
                    k = a.name
                args[k] = getattr(a, a.WhichOneof("value"))
            counters = []
            if te.extra_counter_values:
                uu = te.extra_counter_track_uuids or \
                    st["defaults"].track_event_defaults.\
                    extra_counter_track_uuids
                counters = list(zip(uu, te.extra_counter_values))
            if te.type == TE.TYPE_COUNTER:
                counters = [(track, te.counter_value)]
            self.events.append({"ts": ts, "track": track, "type": te.type,
                                "name": name, "args": args,
                                "counters": counters, "te": te})
        for e in self.events:
            if e["track"] not in self.tracks:
                self.problems.append(("event on an undescribed track",
                                      e["track"]))
        for td in self.tracks.values():
            if td.parent_uuid and td.parent_uuid not in self.tracks:
                self.problems.append(("parent missing", td.uuid))
        self.slices, bad = self.build_slices()
        self.problems += bad

    def name(self, uuid):
        return self.tracks[uuid].name

    def parent_name(self, uuid):
        p = self.tracks[uuid].parent_uuid
        return self.tracks[p].name if p else None

    def build_slices(self):
        """BEGIN/END per track, after sorting by time as the trace
        processor does (stable: file order within a timestamp)."""
        stacks, out, bad = {}, [], []
        evs = sorted(self.events, key=lambda e: e["ts"])
        for e in evs:
            st = stacks.setdefault(e["track"], [])
            if e["type"] == TE.TYPE_SLICE_BEGIN:
                s = {"track": e["track"], "name": e["name"], "t0": e["ts"],
                     "args": dict(e["args"]), "depth": len(st),
                     "flows": list(e["te"].flow_ids),
                     "term": list(e["te"].terminating_flow_ids)}
                st.append(s)
            elif e["type"] == TE.TYPE_SLICE_END:
                if not st:
                    bad.append(("END without BEGIN", e["track"], e["ts"]))
                    continue
                s = st.pop()
                s["t1"] = e["ts"]
                s["args"].update(e["args"])
                out.append(s)
        for k, st in stacks.items():
            if st:
                bad.append(("never ended", k, st[:2]))
        return out, bad


def track_slices(d, pred):
    return [s for s in d.slices if pred(d.tracks[s["track"]])]


def counter_samples(d, name):
    uu = [u for u, t in d.tracks.items() if t.name == name]
    if len(uu) != 1:
        return None
    return [(e["ts"], v) for e in d.events for u, v in e["counters"]
            if u == uu[0]]


def protoc_decode(path):
    with open(path, "rb") as f:
        r = subprocess.run(["protoc", "-I", PROTO_DIR,
                            "--decode=perfetto.protos.Trace", PROTO],
                           stdin=f, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE)
    return r.returncode, r.stdout.count(b"\npacket {") + \
        r.stdout.startswith(b"packet {"), r.stderr


def fw_lane(td, d):
    return td.parent_uuid and d.tracks[td.parent_uuid].name.startswith(
        "fw sq")


def test_workload(label, w, extra=()):
    dump = os.path.join(WORK, label + ".bin")
    w.write(dump)
    r, out = convert(dump, extra)
    if not T.eq(r.returncode, 0, "%s: convert --to perfetto exits 0"
                % label):
        print("# " + r.stderr.decode())
        return None
    rc, npk, err = protoc_decode(out)
    try:
        d = Decoded(out)
    except DecodeError as e:
        T.ok(False, "%s: the output parses as a perfetto.protos.Trace"
             % label, e)
        return None
    T.ok(rc == 0 and npk == len(d.trace.packet),
         "%s: protoc --decode=perfetto.protos.Trace reads every packet (%d)"
         % (label, len(d.trace.packet)), (rc, npk, err[:200]))
    T.ok(not d.problems, "%s: every event's sequence state, clock, track "
         "and interned names are defined before it; slices balanced and "
         "nested on every track" % label, d.problems[:5])
    kept = w.kept

    # Commands on their queue's lanes, phases nested with exact bounds
    exp = w.expected_commands()
    lane = track_slices(d, lambda td: fw_lane(td, d))
    top = [s for s in lane if s["depth"] == 0]
    steps = [s for s in lane if s["depth"] == 1]
    T.eq(len(top), len(exp), "%s: one command slice per command" % label)
    want_cmd = sorted((w.cmds[k]["sqid"], ph[0][1], ph[-1][1])
                      for k, ph in exp.items())
    got_cmd = sorted((int(d.parent_name(s["track"])[5:]), s["t0"], s["t1"])
                     for s in top)
    T.ok(got_cmd == want_cmd, "%s: command slices on their sqid's lanes "
         "span first to last record, exact ns" % label,
         next(((a, b) for a, b in zip(got_cmd, want_cmd) if a != b), None))
    want_steps = sorted(
        ("%s->%s" % (PHASE_NAME[a[0]], PHASE_NAME[b[0]]), a[1], b[1])
        for ph in exp.values() for a, b in zip(ph, ph[1:]))
    got_steps = sorted((s["name"], s["t0"], s["t1"]) for s in steps)
    T.ok(got_steps == want_steps, "%s: phase slices (%d) nested in their "
         "command with exact bounds" % (label, len(want_steps)),
         "got %d want %d" % (len(got_steps), len(want_steps)))
    by_start = {(w.cmds[k]["sqid"], ph[0][1]): k for k, ph in exp.items()}
    wrong = []
    for s in top:
        k = by_start.get((int(d.parent_name(s["track"])[5:]), s["t0"]))
        c = w.cmds[k] if k is not None else None
        if c is None or exp[k][0][0] != 1:
            continue
        want = {"cid": c["cid"], "nsid": c["nsid"], "nlb": c["nlb"],
                "slba": c["slba"]}
        got = {f: s["args"].get(f, 0) for f in want}
        if got != want or s["name"] != names[c["opc"]]:
            wrong.append((s["name"], got, want))
    T.ok(not wrong, "%s: command slices named after the opcode, the fetch "
         "record's fields as args (0 left out)" % label, wrong[:3])
    # each step carries the fields of the record that ends it
    rec_at = {(r.cmd, r.ts, PHASE_NAME[PHASE_OF[r.opcode]]): r
              for r in kept if r.cmd is not None}
    tops = {}
    for s in top:
        tops.setdefault(s["track"], []).append(s)
    wrong = []
    for s in steps:
        parent = [c for c in tops[s["track"]]
                  if c["t0"] <= s["t0"] and s["t1"] <= c["t1"]]
        k = by_start[(int(d.parent_name(s["track"])[5:]), parent[0]["t0"])]
        rec = rec_at[(k, s["t1"], s["name"].split("->")[1])]
        pl = rec.payload
        want = {OP_MSTART: {"die": int.from_bytes(pl[4:6], "little")},
                OP_MEND: {"die": int.from_bytes(pl[4:6], "little"),
                          "status": int.from_bytes(pl[6:8], "little")},
                OP_XFER: {"bytes": int.from_bytes(pl[4:8], "little")},
                OP_CQE: {"status": int.from_bytes(pl[4:6], "little"),
                         "cqid": int.from_bytes(pl[6:8], "little")},
                OP_FETCH: {}}[rec.opcode]
        got = {f: s["args"].get(f, 0) for f in want}
        if got != want or "sqid" in s["args"] or "cid" in s["args"]:
            wrong.append((s["name"], s["args"], want))
    T.ok(not wrong, "%s: each phase slice carries the fields of the record "
         "ending it, not the command keys" % label, wrong[:3])

    # The other records: instants on their CPU's track
    inst = [e for e in d.events if e["type"] == TE.TYPE_INSTANT and
            d.name(e["track"]).startswith("fw cpu ")]
    want = sorted((r.seq, r.ts, r.cpu,
                   EVENT_NAME.get(r.opcode, "op 0x%04x" % r.opcode))
                  for r in kept if r.opcode not in PHASE_OF)
    got = sorted((e["args"]["seq"], e["ts"], int(d.name(e["track"])[7:]),
                  e["name"]) for e in inst)
    T.ok(got == want, "%s: every background/unknown record an instant with "
         "seq, exact ns, its CPU's track and name (%d)" % (label, len(want)),
         next(((a, b) for a, b in zip(got, want) if a != b), len(got)))
    unk = [e for e in inst if e["name"].startswith("op 0x")]
    T.ok(unk and all("payload" in e["args"] for e in unk),
         "%s: unknown opcodes keep their raw payload" % label)

    # Background windows: slices and 0/1 counters
    want_bg = {k: sorted(v) for k, v in w.expected_bg_windows().items()}
    got_bg = {}
    for s in track_slices(d, lambda td: td.name.startswith("bg ")):
        got_bg.setdefault(s["name"], []).append((s["t0"], s["t1"]))
    got_bg = {k: sorted(v) for k, v in got_bg.items()}
    T.ok(got_bg == want_bg, "%s: background windows per group, exact ns"
         % label, {k: len(v) for k, v in got_bg.items()})
    ok = True
    for g, wins in want_bg.items():
        samples = counter_samples(d, g + " active")
        ok = ok and samples is not None and sorted(samples) == sorted(
            [(a, 1) for a, _ in wins] + [(b, 0) for _, b in wins])
    T.ok(ok, "%s: a GROUP active counter per group, 1 inside each window "
         "and 0 after" % label)

    # Commands in flight, replayed in record order from the ground truth
    if not w.gaps:
        first = {k: ph[0][1] for k, ph in exp.items()}
        last = {k: ph[-1][1] for k, ph in exp.items()}
        n, want = 0, []
        for rec in kept:
            if rec.cmd is None:
                continue
            if rec.ts == first[rec.cmd]:
                n += 1
                want.append((rec.ts, n))
            if rec.ts == last[rec.cmd] and rec.opcode == OP_CQE:
                n -= 1
                want.append((rec.ts, n))
        got = counter_samples(d, "fw commands in flight")
        T.ok(got is not None and sorted(got) == sorted(want),
             "%s: fw commands in flight counter, every change (%d), max %d"
             % (label, len(want), max(v for _, v in want)),
             (len(got or []), len(want)))

    # Losses
    lost = sorted(track_slices(d, lambda td: td.name == "lost records"),
                  key=lambda s: s["t0"])
    T.eq(len(lost), len(w.gaps), "%s: one LOST slice per gap" % label)
    T.ok(all(s["name"] == "LOST %d record%s" % (g[1], "" if g[1] == 1 else
                                                "s")
             and s["args"]["first_seq"] == g[0]
             and s["args"]["ts_before"] == g[2]
             and s["args"]["ts_after"] == g[3]
             for s, g in zip(lost, w.gaps)),
         "%s: LOST slices name the count, seqs and time" % label,
         [(s["name"], s["args"]) for s in lost][:3])
    summ = [e for e in d.events if e["name"] == "trace summary"]
    T.ok(len(summ) == 1 and summ[0]["args"]["lost"] ==
         sum(g[1] for g in w.gaps) and
         summ[0]["args"]["records"] == len(kept),
         "%s: the trace summary counts the records and the lost ones"
         % label, summ[0]["args"] if summ else None)
    return d, out


w = Workload(n_cmds=N, seed=7)
test_workload("clean", w)

w = Workload(n_cmds=N, seed=11, first_seq=0xFFFFFF00)
n = len(w.all)
w.lose([(n // 5, 3), (n // 2, 17), (n * 3 // 4, 1)])
test_workload("lossy", w)

# --host: host lanes per queue, flows host command -> firmware command
w = Workload(n_cmds=N, seed=13)
OFF = 55_000_000_000
hosts = w.host_commands(OFF, skip_first=N // 10)
hpath = os.path.join(WORK, "host.jsonl")
write_agent_jsonl(hpath, hosts)
res = test_workload("host", w, ["--host", hpath])
if res:
    d, out = res
    summ = next(e for e in d.events if e["name"] == "trace summary")["args"]
    err = summ["clock_offset_err_ns"]
    hs = track_slices(d, lambda td: td.parent_uuid and d.tracks[
        td.parent_uuid].name.startswith("host q"))
    T.eq(len(hs), len(hosts), "--host: one slice per host command")
    by = {}
    for h in hosts:
        by.setdefault((h["qid"], h["cid"]), []).append(h)
    place, bad = {}, []
    for s in hs:
        q = int(d.parent_name(s["track"])[6:])
        cand = [h for h in by.get((q, s["args"].get("cid", 0)), [])
                if abs(s["t0"] - (h["submit_ns"] - OFF)) <= err + 1]
        if len(cand) != 1:
            bad.append((q, s["args"], s["t0"]))
            continue
        h = cand[0]
        place[id(s)] = h
        if abs(s["t1"] - (h["complete_ns"] - OFF)) > err + 1 or \
                s["args"].get("host_total_ns") != \
                h["complete_ns"] - h["submit_ns"] or \
                s["name"] != names[h["opc"]]:
            bad.append(("span", s["name"], s["args"]))
    T.ok(not bad, "--host: each host slice on its queue's lane, placed on "
         "the firmware time line within the clock error (%d ns), named "
         "after its opcode, host_total_ns exact" % err, bad[:3])
    fetch_ts = {}
    for rec in w.kept:
        if rec.opcode == OP_FETCH:
            fetch_ts[rec.cmd] = rec.ts
    fw = {}
    for s in track_slices(d, lambda td: fw_lane(td, d)):
        for f in s["term"]:
            fw.setdefault(f, []).append(s)
    outs = [(f, s) for s in hs for f in s["flows"]]
    want_flows = sum(1 for h in hosts if h["idx"] in fetch_ts)
    wrong = [f for f, s in outs
             if len(fw.get(f, [])) != 1 or
             fw[f][0]["t0"] != fetch_ts[place[id(s)]["idx"]]]
    T.ok(len(outs) == want_flows and len(set(f for f, _ in outs)) ==
         len(outs) and not wrong and len(fw) == len(outs),
         "--host: one flow per host command whose fetch survived (%d), "
         "ending on its own firmware command's slice" % want_flows,
         (len(outs), len(fw), wrong[:3]))
    samples = counter_samples(d, "host commands in flight")
    begins = sorted((s["t0"], s["t1"]) for s in hs)
    want = []
    for t0, _ in begins:
        want.append((t0, sum(1 for a, b in begins if a <= t0 < b)))
    got_b = sorted(set(samples) & set(want)) if samples else []
    T.ok(samples is not None and sorted(want) == got_b and
         min(v for _, v in samples) >= 0 and
         sorted(samples)[-1][1] == 0,
         "--host: host commands in flight counter: at each submit the "
         "slices spanning it, 0 at the end")
    r, js = convert(os.path.join(WORK, "host.bin"), ["--host", hpath],
                    "perfetto-json", ".json")
    # The goal, 1/10 of the JSON, is measured at scale by
    # scripts/bench-perfetto.sh (100 000 commands); a small workload
    # carries the lanes' fixed cost (descriptors, interned names) over
    # fewer commands, so this guards against regressions at 1/8.
    T.ok(r.returncode == 0 and d.size * 8 <= os.path.getsize(js),
         "--host: the protobuf (%d bytes) is at most 1/8 of the JSON "
         "(%d bytes)" % (d.size, os.path.getsize(js)))

# --pel: the Persistent Event Log's placed events, instants on a track of
# their own at their host time mapped by the join's clock (pelcase.py:
# host = fw + pelcase.OFF exactly), in both Perfetto outputs
PW = os.path.join(WORK, "pel")
os.mkdir(PW)
pk = pelcase.make(PW)
pelcase.write_clock(pk["log"], pk["mono_before"], pelcase.pg.ts(pelcase.C))
want_pel = {i: v["host_ns"] - pelcase.OFF for i, v in pk["placed"].items()}
r, out = convert(pk["dump"], ["--host", pk["host"], "--pel", pk["log"]])
got_pel = {}
if T.ok(r.returncode == 0, "--pel: exit 0", r.stderr):
    d = Decoded(out)
    tr = [u for u, t in d.tracks.items()
          if t.name.startswith("NVMe Persistent Event Log")]
    got_pel = {e["args"]["index"]: (e["ts"], e["name"], e["args"])
               for e in d.events if tr and e["track"] == tr[0] and
               e["type"] == TE.TYPE_INSTANT}
    T.ok(not d.problems and len(tr) == 1 and
         sorted(got_pel) == sorted(want_pel) and
         all(abs(got_pel[i][0] - t) <= 5000 for i, t in want_pel.items())
         and got_pel[2][1] == "thermal_excursion" and
         got_pel[2][2]["fields"] == "over_temp=3 threshold=75" and
         got_pel[2][2]["commands_overlapped"] ==
         len(pk["placed"][2]["over"]),
         "--pel: the 3 placed events as instants on their own track, each "
         "at its firmware time within 5 us, with its fields and overlaps",
         (d.problems[:3], {i: v[:2] for i, v in got_pel.items()},
          want_pel))
r, js = convert(pk["dump"], ["--host", pk["host"], "--pel", pk["log"]],
                to="perfetto-json", ext=".json")
if T.ok(r.returncode == 0, "--pel perfetto-json: exit 0", r.stderr):
    import json
    doc = json.load(open(js))
    ev = {e["args"]["index"]: e["ts"] for e in doc["traceEvents"]
          if e.get("cat") == "pel"}
    T.ok(sorted(ev) == sorted(want_pel) and
         all(abs(ev[i] * 1000 - t) <= 5000 for i, t in want_pel.items())
         and doc["metadata"]["pel_on_timeline"] == 3 and
         doc["metadata"]["pel_events"] == 7,
         "--pel perfetto-json: the same instants, counted in the metadata",
         (ev, want_pel))
r, _ = convert(pk["dump"], ["--pel", pk["log"]])
T.ok(r.returncode == 2 and b"--pel needs --host" in r.stderr,
     "--pel without --host: usage error (no clock to place it)", r.stderr)

# The format from OUT's extension; errors
dump = os.path.join(WORK, "clean.bin")
r = run([BIN, "convert", dump, os.path.join(WORK, "ext.perfetto-trace")])
T.ok(r.returncode == 0 and Decoded(os.path.join(WORK, "ext.perfetto-trace"))
     .events, "OUT.perfetto-trace (and .pftrace) imply --to perfetto")
r, _ = convert(dump, ["--dict", os.path.join(WORK, "nope.dict")])
T.ok(r.returncode == 1 and b"nope.dict" in r.stderr,
     "a missing --dict file is an error naming it", r.stderr)
bad = os.path.join(WORK, "bad.bin")
with open(bad, "wb") as f:
    f.write(Workload(n_cmds=20, seed=3).dump()[:-5])
r, out = convert(bad)
T.ok(r.returncode == 1 and b"bad.bin" in r.stderr and b"offset" in r.stderr,
     "a truncated dump: exit 1, file and offset named", r.stderr)
r, _ = convert(dump, ["--host", "-"])
r = run([BIN, "convert", "-", os.path.join(WORK, "x.pftrace"), "--host",
         hpath])
T.eq(r.returncode, 2, "--host with FILE - is a usage error")
r = run([BIN, "convert", "--help"])
T.ok(r.returncode == 0 and b"perfetto-json" in r.stdout and
     b"protobuf" in r.stdout, "convert --help documents both formats")

sys.exit(T.done())
