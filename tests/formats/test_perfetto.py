#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""TAP tests of `hmb-trace-analyze convert --to perfetto-json`.

usage: test_perfetto.py BINARY

The workloads come from fwgen.py, which knows every command, phase,
background window and lost range it wrote; the expected slices are derived
from that, then compared with the Trace Event JSON the tool wrote.
"""

import json
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from fwgen import (Workload, EVENT_NAME, PHASE_NAME,  # noqa: E402
                   OP_FETCH, write_agent_jsonl)
from tap import Tap, run  # noqa: E402

T = Tap()
BIN = sys.argv[1]
WORK = tempfile.mkdtemp(prefix="hmb-formats-perfetto.")
N = int(os.environ.get("HMB_FORMATS_CMDS", "3000"))


def convert(dump, extra=()):
    out = dump + ".json"
    r = run([BIN, "convert", dump, out, "--to", "perfetto-json", *extra])
    return r, out


def sync_overlaps(events):
    """Slices (ph X) per (pid, tid) must nest or be disjoint."""
    tracks = {}
    for e in events:
        if e["ph"] == "X":
            tracks.setdefault((e["pid"], e["tid"]), []).append(
                (round(e["ts"] * 1000), round(e["dur"] * 1000), e["name"]))
    bad = []
    for key, sl in tracks.items():
        sl.sort(key=lambda s: (s[0], -s[1]))
        stack = []
        for ts, dur, name in sl:
            while stack and stack[-1][0] <= ts:
                stack.pop()
            if stack and ts + dur > stack[-1][0]:
                bad.append((key, name, ts, dur, stack[-1]))
            stack.append((ts + dur, name))
    return bad


def check_async(events):
    """b/e balanced per id, properly nested, ends not before begins.
    Returns ({id: [(name, ts_b, ts_e, depth)]}, problems)."""
    open_ = {}
    done = {}
    problems = []
    for e in events:
        if e["ph"] not in "be":
            continue
        key = (e["cat"], e["id"])
        ts = round(e["ts"] * 1000)
        st = open_.setdefault(key, [])
        if e["ph"] == "b":
            st.append((e["name"], ts))
        else:
            if not st or st[-1][0] != e["name"]:
                problems.append(("unbalanced", key, e["name"]))
                continue
            name, tb = st.pop()
            if ts < tb:
                problems.append(("ends before it begins", key, name))
            done.setdefault(key, []).append((name, tb, ts, len(st)))
    for key, st in open_.items():
        if st:
            problems.append(("never ended", key, st))
    return done, problems


def test_workload(label, w, extra=()):
    dump = os.path.join(WORK, label + ".bin")
    w.write(dump)
    r, out = convert(dump, extra)
    if not T.eq(r.returncode, 0, "%s: convert --to perfetto-json exits 0" % label):
        print("# " + r.stderr.decode())
        return None
    try:
        with open(out) as f:
            doc = json.load(f)
        T.ok(True, "%s: output parses as JSON" % label)
    except ValueError as e:
        T.ok(False, "%s: output parses as JSON" % label, e)
        return None
    ev = doc["traceEvents"]
    kept = w.kept

    # Every record: a zero-length slice (command/unknown) or an instant (bg)
    recs = [e for e in ev if e.get("cat") == "fw"]
    inst = [e for e in ev if e["ph"] == "i"]
    bg_ops = {op for op in EVENT_NAME if op >= 0x200}
    want_x = [r for r in kept if r.opcode not in bg_ops]
    want_i = [r for r in kept if r.opcode in bg_ops]
    T.eq(len(recs), len(want_x), "%s: one slice per command/unknown record"
         % label)
    T.eq(len(inst), len(want_i), "%s: one instant per background record"
         % label)
    got = sorted((e["args"]["seq"], round(e["ts"] * 1000), e["tid"], e["name"])
                 for e in recs + inst)
    want = sorted((r.seq, r.ts, r.cpu,
                   EVENT_NAME.get(r.opcode, "op 0x%04x" % r.opcode))
                  for r in kept)
    T.ok(got == want, "%s: seq, exact ns timestamp, cpu track and name of "
         "every record" % label,
         "first difference: %r" % next(((a, b) for a, b in zip(got, want)
                                       if a != b), None))
    # dictionary fields as args
    f = next(e for e in recs if e["name"] == "cmd_fetch")
    src = next(r for r in kept if r.seq == f["args"]["seq"])
    c = w.cmds[src.cmd]
    T.ok(f["args"].get("sqid") == c["sqid"] and
         f["args"].get("cid") == c["cid"] and
         f["args"].get("slba") == c["slba"] and
         f["args"].get("nlb") == c["nlb"],
         "%s: fetch record carries its dictionary fields" % label, f)
    unk = [e for e in recs if e["name"].startswith("op 0x")]
    T.ok(all("payload" in e["args"] for e in unk) and unk,
         "%s: unknown opcodes keep their raw payload" % label)

    # CPU tracks named
    names = {e["tid"]: e["args"]["name"] for e in ev
             if e["ph"] == "M" and e["name"] == "thread_name"}
    cpus = {r.cpu for r in kept}
    T.ok(all(names.get(c) == "fw cpu %d" % c for c in cpus),
         "%s: one named track per firmware CPU" % label, names)

    # Commands and phases
    done, problems = check_async(ev)
    T.ok(not problems, "%s: async slices balanced and nested" % label,
         problems[:5])
    exp = w.expected_commands()
    top = [s for sl in done.values() for s in sl if s[3] == 0]
    steps = [s for sl in done.values() for s in sl if s[3] == 1]
    T.eq(len(top), len(exp), "%s: one async slice per command" % label)
    want_steps = sorted(
        ("%s->%s" % (PHASE_NAME[a[0]], PHASE_NAME[b[0]]), a[1], b[1])
        for ph in exp.values() for a, b in zip(ph, ph[1:]))
    got_steps = sorted((s[0], s[1], s[2]) for s in steps)
    T.ok(got_steps == want_steps, "%s: phase slices (%d) nested in their "
         "command with exact bounds" % (label, len(want_steps)),
         "got %d want %d" % (len(got_steps), len(want_steps)))
    want_cmd = sorted((ph[0][1], ph[-1][1]) for ph in exp.values())
    got_cmd = sorted((s[1], s[2]) for s in top)
    T.ok(got_cmd == want_cmd, "%s: command slices span first to last event"
         % label)

    # Background windows
    bgs = {}
    for e in ev:
        if e["ph"] == "X" and e.get("cat") == "fw.bg":
            bgs.setdefault(e["name"], []).append(
                (round(e["ts"] * 1000), round((e["ts"] + e["dur"]) * 1000)))
    want_bg = {k: sorted(v) for k, v in w.expected_bg_windows().items()}
    got_bg = {k: sorted(v) for k, v in bgs.items()}
    # ts + dur in float may be off by a rounding step: compare with 1 ns
    close = (got_bg.keys() == want_bg.keys() and all(
        len(got_bg[k]) == len(want_bg[k]) and
        all(a[0] == b[0] and abs(a[1] - b[1]) <= 1
            for a, b in zip(got_bg[k], want_bg[k])) for k in want_bg))
    T.ok(close, "%s: background windows per group" % label,
         "got %r\nwant %r" % ({k: len(v) for k, v in got_bg.items()},
                              {k: len(v) for k, v in want_bg.items()}))

    # Losses
    lost = [e for e in ev if e.get("cat") == "loss"]
    T.eq(len(lost), len(w.gaps), "%s: one LOST slice per gap" % label)
    T.ok(all(e["name"] == "LOST %d record%s" % (g[1], "" if g[1] == 1 else "s")
             and e["args"]["first_seq"] == g[0]
             and e["args"]["ts_before"] == g[2]
             and e["args"]["ts_after"] == g[3]
             for e, g in zip(sorted(lost, key=lambda e: e["ts"]), w.gaps)),
         "%s: LOST slices name the count, seqs and time" % label,
         [(e["name"], e["args"]) for e in lost][:3])
    T.eq(doc["metadata"]["lost"], sum(g[1] for g in w.gaps),
         "%s: metadata counts the lost records" % label)

    bad = sync_overlaps(ev)
    T.ok(not bad, "%s: no overlapping slices on any synchronous track"
         % label, bad[:5])
    return doc


w = Workload(n_cmds=N, seed=7)
test_workload("clean", w)

w = Workload(n_cmds=N, seed=11, first_seq=0xFFFFFF00)
n = len(w.all)
w.lose([(n // 5, 3), (n // 2, 17), (n * 3 // 4, 1)])
test_workload("lossy", w)

# --host: host commands beside the firmware's, flows submit -> fetch
w = Workload(n_cmds=N, seed=13)
n = len(w.all)
w.lose([(n // 3, 12)])
OFF = 55_000_000_000
hosts = w.host_commands(OFF, skip_first=N // 10)
dump = os.path.join(WORK, "host.bin")
w.write(dump)
hpath = os.path.join(WORK, "host.jsonl")
write_agent_jsonl(hpath, hosts)
r, out = convert(dump, ["--host", hpath])
if T.eq(r.returncode, 0, "--host: convert exits 0"):
    doc = json.load(open(out))
    ev = doc["traceEvents"]
    hb = [e for e in ev if e.get("cat") == "host" and e["ph"] == "b"]
    T.eq(len(hb), len(hosts), "--host: one async slice per host command")
    err = doc["metadata"]["clock_offset_err_ns"]
    by = {(h["qid"], h["cid"], h["submit_ns"]): h for h in hosts}
    bad = [e for e in hb if abs(round(e["ts"] * 1000) - (
        by[(e["args"]["qid"], e["args"]["cid"],
            e["args"]["submit_ns"])]["submit_ns"] - OFF)) > err + 1]
    T.ok(not bad, "--host: host slices placed on the firmware time line "
         "within the clock error (%d ns)" % err, bad[:2])
    outs = {e["bind_id"]: e for e in ev if e.get("flow_out")}
    ins = {}
    for e in ev:
        if e.get("flow_in"):
            ins.setdefault(e["bind_id"], []).append(e)
    fetch_of = {}
    for rec in w.kept:
        if rec.opcode == OP_FETCH:
            fetch_of[rec.cmd] = rec.seq
    want_flows = sum(1 for h in hosts if h["idx"] in fetch_of)
    T.ok(len(outs) == want_flows and set(outs) == set(ins) and
         all(len(v) == 1 for v in ins.values()),
         "--host: one flow per host command whose fetch survived (%d), "
         "each with one end" % want_flows, (len(outs), len(ins)))
    wrong = []
    for bid, o in outs.items():
        h = by[(o["args"]["qid"], o["args"]["cid"], next(
            b["args"]["submit_ns"] for b in hb if b["id"] == bid))]
        i = ins[bid][0]
        if i["args"]["seq"] != fetch_of[h["idx"]] or i["ts"] < o["ts"]:
            wrong.append((bid, i["args"]["seq"], fetch_of[h["idx"]]))
    T.ok(not wrong, "--host: every flow ends on its own command's fetch "
         "record, after the submit", wrong[:3])
    T.ok(not sync_overlaps(ev), "--host: no overlapping slices on any "
         "synchronous track")

# Errors: a missing dictionary, an unreadable input, an unknown format.
dump = os.path.join(WORK, "clean.bin")
r, _ = convert(dump, ["--dict", os.path.join(WORK, "nope.dict")])
T.ok(r.returncode == 1 and b"nope.dict" in r.stderr,
     "a missing --dict file is an error naming it", r.stderr)
r, _ = convert(os.path.join(WORK, "missing.bin"))
T.ok(r.returncode == 1 and b"missing.bin" in r.stderr,
     "a missing input is an error naming it", r.stderr)
bad = os.path.join(WORK, "bad.bin")
with open(bad, "wb") as f:
    f.write(Workload(n_cmds=20, seed=3).dump()[:-5])
r, out = convert(bad)
T.ok(r.returncode == 1 and b"bad.bin" in r.stderr and b"offset" in r.stderr,
     "a truncated dump: exit 1, file and offset named", r.stderr)
r = run([BIN, "convert", dump, "x.out", "--to", "nope"])
T.eq(r.returncode, 2, "an unknown --to is a usage error")
r = run([BIN, "convert", "--help"])
T.ok(r.returncode == 0 and b"perfetto-json" in r.stdout,
     "convert --help documents --to perfetto-json")

sys.exit(T.done())
