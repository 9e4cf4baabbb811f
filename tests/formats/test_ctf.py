#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""TAP tests of `hmb-trace-analyze convert --to ctf` (ctf.c, the analyze
helper's converter) and `--to ctf --raw` (ctfraw.c), read back by the
babeltrace2 command line: an independent check of both.

usage: test_ctf.py BINARY

For every v1 test vector, generated workloads (with losses) and a large
dump (HMB_FORMATS_BIG records, default 1,000,000): babeltrace2's events
must equal `decode --format jsonl` record for record (count, event name,
timestamp, seq, opcode, cpu, flags, payload bytes) and the dictionary
fields must equal the values this test decodes from the payload itself;
the discarded events babeltrace2 reports must add up to stats' `lost`.
"""

import glob
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, HERE)

from fwgen import Workload  # noqa: E402
from tap import Tap, run  # noqa: E402

T = Tap()
BIN = sys.argv[1]
WORK = tempfile.mkdtemp(prefix="hmb-formats-ctf.")
N = int(os.environ.get("HMB_FORMATS_CMDS", "3000"))
BIG = int(os.environ.get("HMB_FORMATS_BIG", "1000000"))
BT = shutil.which("babeltrace2")
DICT = os.path.join(TOP, "share", "hmb-events.dict")
FMT = {"u8": "<B", "u16": "<H", "u32": "<I", "u64": "<Q",
       "s8": "<b", "s16": "<h", "s32": "<i", "s64": "<q"}


def load_dict(path):
    """The dictionary, read here independently: opcode -> (name, fields,
    min_len) with fields [(name, fmt, offset)]."""
    ev = {}
    cur = None
    for line in open(path):
        w = line.split("#", 1)[0].split()
        if not w:
            continue
        if w[0] == "event":
            op = int(w[1], 0)
            ln = [int(a[4:]) for a in w[3:] if a.startswith("len=")]
            cur = ev[op] = [w[2], [], ln[0] if ln else None]
        elif w[0] == "field":
            cur[1].append((w[1], FMT[w[2]], int(w[3], 0)))
    for e in ev.values():
        if e[2] is None:
            e[2] = max((off + struct.calcsize(f) for _, f, off in e[1]),
                       default=0)
    return ev


DICTIONARY = load_dict(DICT)

LINE = re.compile(r"^\[(\d+)\] \([^)]*\) (\w+): \{ (.*?) \}, "
                  r"\{ (.*) \}$")
ARR = re.compile(r"payload = \[ ?(.*?) ?\]$")


def expected(rec):
    """(ts, seq, name, fields) babeltrace2 should show for a jsonl record:
    the event class is the dictionary event (NAME_short when the payload
    is too short for its fields, opcode_0xNNNN when the dictionary lacks
    the opcode); seq, cpu and flags in the event context; the dictionary
    fields, payload_len and the raw payload in the payload."""
    payload = bytes.fromhex(rec["payload"])
    f = {k: rec[k] for k in ("seq", "cpu", "flags", "payload_len")}
    f["payload"] = list(payload)
    d = DICTIONARY.get(rec["opcode"])
    if d and len(payload) >= d[2]:
        name = d[0]
        for fname, fmt, off in d[1]:
            f[fname] = struct.unpack_from(fmt, payload, off)[0]
    elif d:
        name = d[0] + "_short"
    else:
        name = "opcode_0x%04x" % rec["opcode"]
    return (rec["ts_ns"], rec["seq"], name, f)


def parse_bt(text):
    out = []
    bad = []
    for ln in text.splitlines():
        m = LINE.match(ln)
        if not m:
            bad.append(ln)
            continue
        ts, name, ctx, body = int(m.group(1)), m.group(2), m.group(3), \
            m.group(4)
        a = ARR.search(body)
        if not a:
            bad.append(ln)
            continue
        f = {}
        for kv in (ctx + ", " + body[:a.start()].rstrip(", ")).split(", "):
            if kv:
                k, v = kv.split(" = ")
                f[k] = int(v)
        f["payload"] = [int(x) for x in re.findall(r"\[\d+\] = (\d+)",
                                                   a.group(1))]
        out.append((ts, f["seq"], name, f))
    return out, bad


def discarded(stderr):
    return sum(int(x) for x in re.findall(
        r"discarded (\d+) events? between", stderr))


def check(label, dump, expect_rc=None):
    """Convert @dump and compare what babeltrace2 reads with decode."""
    dec = run([BIN, "decode", dump, "--format", "jsonl"])
    recs = [json.loads(ln) for ln in dec.stdout.decode().splitlines()]
    out = os.path.join(WORK, label + ".ctf")
    shutil.rmtree(out, ignore_errors=True)
    r = run([BIN, "convert", dump, out, "--to", "ctf"])
    if not T.eq(r.returncode, dec.returncode,
                "%s: convert exits as decode does (%d)" % (label,
                                                           dec.returncode)):
        print("# " + r.stderr.decode())
        return
    if r.returncode:
        # written whole or not at all: a cut trace reads as a whole one
        T.ok(not os.path.exists(out) and not [
            x for x in os.listdir(WORK) if x.startswith("." + label)],
             "%s: no trace directory, no temporary left" % label,
             r.stderr)
        return
    meta = open(os.path.join(out, "metadata")).read()
    T.ok(meta.startswith("/* CTF 1.8 */") and "clock {" in meta and
         "map = clock.fw.value" in meta,
         "%s: metadata begins with /* CTF 1.8 */ and declares the clock"
         % label)
    bt = subprocess.run([BT, "--clock-cycles", out], stdout=subprocess.PIPE,
                        stderr=subprocess.PIPE)
    T.eq(bt.returncode, 0, "%s: babeltrace2 reads it" % label)
    got, bad = parse_bt(bt.stdout.decode())
    T.ok(not bad, "%s: every babeltrace2 line parsed" % label, bad[:3])
    want = sorted(expected(x) for x in recs)
    got.sort(key=lambda e: (e[0], e[1]))
    T.eq(len(got), len(want), "%s: event count equals decode (%d)"
         % (label, len(want)))
    diff = next(((g, w) for g, w in zip(got, want) if g != w), None)
    T.ok(diff is None, "%s: names, timestamps and every field equal decode"
         % label, diff)
    if dec.returncode == 0:
        st = json.loads(run([BIN, "stats", dump, "--format",
                             "json"]).stdout)
        T.eq(discarded(bt.stderr.decode()), st["lost"],
             "%s: babeltrace2 reports the %d lost records as discarded"
             % (label, st["lost"]))


if not BT:
    T.skip("babeltrace2 reads the CTF conversion",
           "babeltrace2 not installed (scripts/deps.sh test)")
    sys.exit(T.done())

# The v1 test vectors (ring images and dumps, good and bad)
for vec in sorted(glob.glob(os.path.join(TOP, "docs", "test-vectors", "v1",
                                         "*.bin"))):
    check("vector " + os.path.basename(vec)[:-4], vec)

# Generated workloads: every event kind, unknown opcodes, losses
w = Workload(n_cmds=N, seed=21, first_seq=0xFFFFFFF0)
n = len(w.all)
w.lose([(n // 4, 7), (n // 2, 1), (n * 3 // 4, 30)])
dump = os.path.join(WORK, "lossy.bin")
w.write(dump)
check("lossy workload", dump)

# A short payload for a dictionary event becomes hmb_raw, keeping its bytes
from hmb_trace.writer import encode_record  # noqa: E402
odd = os.path.join(WORK, "odd.bin")
with open(odd, "wb") as f:
    f.write(encode_record(1, 100, 0x100, 0, 0, b"\x01\x00"))
    f.write(encode_record(2, 200, 0x220, 1, 2, b"\xfe\xff"))   # s16 -2
    f.write(encode_record(3, 150, 0x101, 0, 0, bytes(6)))      # backwards
    f.write(encode_record(4, 300, 0x999, 7, 0, b""))
check("short, signed, backwards, empty payloads", odd)
r = run([BIN, "convert", odd, os.path.join(WORK, "again.ctf"), "--to",
         "ctf"])
r = run([BIN, "convert", odd, os.path.join(WORK, "again.ctf"), "--to",
         "ctf"])
T.ok(r.returncode == 1 and b"already holds a trace" in r.stderr,
     "an existing trace directory is not overwritten", r.stderr)

# --raw: metadata that describes the dump's own bytes, no conversion
RAWLINE = re.compile(r"^\[(\d+)\] \([^)]*\) (\w+): \{ payload = \[ ?(.*?) ?\] \}$")
w = Workload(n_cmds=N, seed=22)
rawdump = os.path.join(WORK, "raw.bin")
w.write(rawdump)
rawdir = os.path.join(WORK, "raw.ctf")
r = run([BIN, "convert", rawdump, rawdir, "--to", "ctf", "--raw"])
if T.eq(r.returncode, 0, "--raw: convert exits 0"):
    T.ok(os.path.samefile(os.path.join(rawdir, "stream"), rawdump),
         "--raw: DIR/stream is the dump itself (link), not a copy")
    bt = subprocess.run([BT, "--clock-cycles", rawdir],
                        stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    T.eq(bt.returncode, 0, "--raw: babeltrace2 reads the dump as it is")
    got = []
    for ln in bt.stdout.decode().splitlines():
        m = RAWLINE.match(ln)
        got.append((int(m.group(1)), m.group(2), bytes(
            int(x) for x in re.findall(r"\[\d+\] = (\d+)", m.group(3))))
            if m else None)
    dec = run([BIN, "decode", rawdump, "--format", "jsonl"])
    want = []
    for ln in dec.stdout.decode().splitlines():
        x = json.loads(ln)
        d = DICTIONARY.get(x["opcode"])
        want.append((x["ts_ns"], d[0] if d else "op_0x%04x" % x["opcode"],
                     bytes.fromhex(x["payload"])))
    T.ok(got == want, "--raw: every record's name, timestamp and payload "
         "equal decode (%d)" % len(want),
         next(((a, b) for a, b in zip(got, want) if a != b),
              (len(got), len(want))))
r = run([BIN, "convert", odd, os.path.join(WORK, "oddraw.ctf"), "--to",
         "ctf", "--raw"])
T.ok(r.returncode == 1 and b"backwards" in r.stderr,
     "--raw: a dump whose timestamps go backwards is refused", r.stderr)
ring = os.path.join(TOP, "docs", "test-vectors", "v1", "single.bin")
r = run([BIN, "convert", ring, os.path.join(WORK, "ringraw.ctf"), "--to",
         "ctf", "--raw"])
T.ok(r.returncode == 1 and b"ring image" in r.stderr,
     "--raw: a ring image is refused (it is not a record stream)", r.stderr)

# A large dump
big = os.path.join(WORK, "big.bin")
wb = Workload(n_cmds=max(BIG // 5, 10), seed=99, gc_every=400)
nb = len(wb.all)
wb.lose([(nb // 3, 100), (nb // 2, 3)])
wb.write(big)
del wb
check("%d-record dump" % nb, big)
shutil.rmtree(WORK, ignore_errors=True)
sys.exit(T.done())
