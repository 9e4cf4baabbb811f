#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""TAP tests of hmb-trace-analyze.

usage: run-tests.py BINARY [--asan]

Every input is generated here (python/hmb_trace/writer.py) from a scenario
whose answer the scenario itself knows: which records were written, which
seqs were left out, which batch was replayed.  The expected output is built
from that knowledge, never from the tool's own output.
"""

import json
import os
import struct
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
sys.path.insert(0, os.path.join(TOP, "python"))

from hmb_trace.writer import (encode_record, encode_marker,  # noqa: E402
                              encode_ring_hdr, RingProducer)
from hmb_trace.format import RECORD_HDR, RECORD_MAGIC  # noqa: E402
sys.path.insert(0, os.path.join(TOP, "tests", "formats"))
from tap import Tap  # noqa: E402  (the formats tests' TAP helper)

PROG = "hmb-trace-analyze"
MIB = 1 << 20


T = Tap()
BIN = sys.argv[1]
ASAN = "--asan" in sys.argv[2:]
WORK = tempfile.mkdtemp(prefix="hmb-analyze-test.")
UMASK = os.umask(0o22)
os.umask(UMASK)


class Result:
    def __init__(self, rc, out, err, maxrss_kib=None):
        self.rc = rc
        self.out = out
        self.err = err
        self.maxrss_kib = maxrss_kib

    @property
    def text(self):
        return self.out.decode()

    @property
    def errlines(self):
        return self.err.decode().splitlines()


def run(*args, stdin=None, stdin_file=None):
    """Run the analyzer; returns Result with its peak RSS (KiB)."""
    inp = subprocess.PIPE if stdin is not None else (
        open(stdin_file, "rb") if stdin_file else subprocess.DEVNULL)
    p = subprocess.Popen([BIN] + [str(a) for a in args], stdin=inp,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out, err = p.communicate(stdin)
    # communicate() has reaped it; the rusage of children covers it too,
    # but wait4 on the pid is not possible any more: read our children's
    # maximum instead, which only grows and is checked on small runs.
    if stdin_file:
        inp.close()
    return Result(p.returncode, out, err)


def run_rss(*args):
    """Run with stdout to /dev/null; returns (rc, peak RSS in KiB) as GNU
    time reports it (a fork of this Python process would count its pages
    as the child's)."""
    with open(os.devnull, "wb") as null:
        p = subprocess.run(["/usr/bin/time", "-f", "maxrss=%M", BIN] +
                           [str(a) for a in args], stdout=null,
                           stderr=subprocess.PIPE)
    rss = [ln for ln in p.stderr.decode().splitlines()
           if ln.startswith("maxrss=")]
    return p.returncode, int(rss[-1][7:]) if rss else 1 << 30


def path(name):
    return os.path.join(WORK, name)


def write(name, data):
    with open(path(name), "wb") as f:
        f.write(data)
    return path(name)


# ---------------------------------------------------------------- scenario
class Dump:
    """A dump being built, remembering what a decoder must report."""

    def __init__(self):
        self.buf = bytearray()
        self.data = []        # records decode must print, in order
        self.markers = 0
        self.ignored = 0
        self.duplicates = 0
        self.truncated = 0
        self.offsets = {}     # seq -> offset of its first data record

    def add(self, seq, ts, opcode=1, cpu=0, flags=0, payload=b"",
            kind="data"):
        off = len(self.buf)
        if kind == "marker":
            self.buf += encode_marker(seq, ts, cpu)
            self.markers += 1
            return off
        self.buf += encode_record(seq, ts, opcode, cpu, flags, payload)
        if kind == "ignored":
            self.ignored += 1
        elif kind == "dup":
            self.duplicates += 1
        else:
            self.data.append({"seq": seq & 0xFFFFFFFF, "ts_ns": ts,
                              "opcode": opcode, "cpu": cpu, "flags": flags,
                              "payload_len": len(payload),
                              "payload": bytes(payload).hex()})
            self.offsets[seq & 0xFFFFFFFF] = off
            if flags & 2:
                self.truncated += 1
        return off

    def jsonl(self):
        return [json.dumps(d, separators=(",", ":")) for d in self.data]

    def opcodes(self):
        c = {}
        for d in self.data:
            c[str(d["opcode"])] = c.get(str(d["opcode"]), 0) + 1
        return c


def payload(n, salt=0):
    return bytes(((i * 7 + salt) & 0xFF) for i in range(n))


def mixed_dump():
    """Sizes across the padding boundaries and the maximum, markers,
    an ignored record, truncated records, several cpus and opcodes."""
    d = Dump()
    sizes = [0, 1, 7, 8, 9, 15, 16, 31, 32, 33, 100, 255, 1000, 4063, 4064]
    seq, ts = 1000, 5_000_000_000
    for i, n in enumerate(sizes * 2):
        if i == 5:
            d.add(seq, ts, kind="marker")
        if i == 11:
            d.add(seq, ts, opcode=9, flags=0x80, payload=payload(12),
                  kind="ignored")
            seq += 1
            ts += 10
        flags = 2 if i % 7 == 3 else 0
        d.add(seq, ts, opcode=(i % 4) * 0x101, cpu=i % 3, flags=flags,
              payload=payload(n, i))
        seq += 1
        ts += 1234
    d.add(seq, ts, kind="marker")
    return d


def jsonl_lines(res):
    return [ln for ln in res.text.split("\n") if ln]


# ------------------------------------------------------------------ tests
def test_help():
    r = run("--help")
    T.ok(r.rc == 0 and "Commands:" in r.text and "Examples:" in r.text,
         "--help lists commands and examples", r.err)
    for cmd in ("decode", "stats", "convert"):
        r = run(cmd, "--help")
        T.ok(r.rc == 0 and r.text.startswith("Usage: %s %s" % (PROG, cmd))
             and "Examples:" in r.text, "%s --help" % cmd, r.text + r.errlines.__str__())
        r2 = run("help", cmd)
        T.eq(r2.out, r.out, "help %s equals %s --help" % (cmd, cmd))
    r = run("-V")
    T.ok(r.rc == 0 and r.text.startswith(PROG + " ") and "format v1" in r.text,
         "-V prints the version", r.text)
    r = run("--version")
    T.ok(r.rc == 0 and r.text.startswith(PROG + " "), "--version")
    r = run("frobnicate")
    T.eq((r.rc, r.errlines),
         (2, ["%s: unknown command 'frobnicate' (try '%s --help')"
              % (PROG, PROG)]), "unknown command: exit 2, one line")
    r = run()
    T.eq((r.rc, r.errlines),
         (2, ["%s: no command given (try '%s --help')" % (PROG, PROG)]),
         "no command: exit 2, one line")
    r = run("decode")
    T.eq(r.rc, 2, "decode without FILE: exit 2")
    r = run("decode", path("x"), "--format", "xml")
    T.eq((r.rc, r.errlines),
         (2, ["%s: decode: --format: unknown format 'xml' (expected text or"
              " jsonl) (try '%s decode --help')" % (PROG, PROG)]),
         "decode --format xml: exit 2")
    r = run("decode", path("does-not-exist"))
    T.eq((r.rc, r.errlines),
         (1, ["%s: %s: cannot open: No such file or directory"
              % (PROG, path("does-not-exist"))]),
         "missing file: exit 1, one line")


def test_decode_mixed():
    d = mixed_dump()
    f = write("mixed.bin", d.buf)
    r = run("decode", f, "--format", "jsonl")
    T.eq(r.rc, 0, "decode jsonl: exit 0")
    got = jsonl_lines(r)
    T.eq(len(got), len(d.data), "decode jsonl: one line per data record")
    T.eq(got, d.jsonl(),
         "decode jsonl: byte-identical lines (keys, order, hex payloads)")
    T.ok(all(list(json.loads(x).keys()) == ["seq", "ts_ns", "opcode", "cpu",
                                             "flags", "payload_len",
                                             "payload"] for x in got),
         "decode jsonl: exactly the seven keys")
    r2 = run("decode", f, "-j")
    T.eq(r2.out, r.out, "decode -j equals --format jsonl")

    r = run("decode", f)
    lines = r.text.splitlines()
    T.eq(len(lines), len(d.data), "decode text: one line per data record")
    first = d.data[0]
    want0 = "[%03d] %6d.%09d: seq=%d opcode=0x%04x len=%d" % (
        first["cpu"], first["ts_ns"] // 10**9, first["ts_ns"] % 10**9,
        first["seq"], first["opcode"], first["payload_len"])
    T.eq(lines[0], want0, "decode text: perf-script-like line")
    i = next(i for i, x in enumerate(d.data) if x["flags"] & 2)
    x = d.data[i]
    want = "[%03d] %6d.%09d: seq=%d opcode=0x%04x len=%d TRUNCATED payload=%s" % (
        x["cpu"], x["ts_ns"] // 10**9, x["ts_ns"] % 10**9, x["seq"],
        x["opcode"], x["payload_len"], x["payload"])
    T.eq(lines[i], want, "decode text: truncated record with payload")

    r = run("stats", f, "--format", "json")
    T.eq(r.rc, 0, "stats json: exit 0")
    s = json.loads(r.out)
    want = {"dialect": "dump", "records": len(d.data),
            "wrap_markers": d.markers, "ignored": d.ignored,
            "truncated": d.truncated, "lost": 0, "duplicates": 0,
            "bytes": len(d.buf), "first_ts_ns": d.data[0]["ts_ns"],
            "last_ts_ns": d.data[-1]["ts_ns"], "opcodes": d.opcodes(),
            "gaps": [], "gaps_total": 0, "gaps_omitted": 0}
    T.eq({k: s.get(k) for k in want}, want, "stats json: every count")

    r = run("stats", f)
    T.ok(r.rc == 0 and "records:       %d decoded" % len(d.data) in r.text
         and "lost:          0 records" in r.text
         and "wrap markers:  %d" % d.markers in r.text,
         "stats text: records, markers, nothing lost", r.text)


def test_stdin():
    d = mixed_dump()
    f = write("stdin.bin", d.buf)
    r = run("decode", "-", "--format", "jsonl", stdin_file=f)
    T.eq(jsonl_lines(r), d.jsonl(), "decode - reads stdin (file)")
    r = run("decode", "-", "--format", "jsonl", stdin=bytes(d.buf))
    T.eq(jsonl_lines(r), d.jsonl(), "decode - reads stdin (pipe)")
    r = run("stats", "-", "-j", stdin=bytes(d.buf))
    s = json.loads(r.out)
    T.eq((s["file"], s["records"], s["bytes"]),
         ("<stdin>", len(d.data), len(d.buf)), "stats - reads a pipe")


def gap_dump():
    d = Dump()
    missing = set(range(10, 13)) | {50} | set(range(70, 80))
    ts = 1_000_000
    prev_ts = None
    gaps = []
    for seq in range(0, 100):
        ts += 1000
        if seq in missing:
            continue
        off = d.add(seq, ts, opcode=2, payload=payload(seq % 20))
        if prev_ts is not None and seq - 1 in missing:
            first = seq - 1
            while first - 1 in missing:
                first -= 1
            gaps.append({"first_seq": first, "last_seq": seq - 1,
                         "count": seq - first, "ts_before": prev_ts,
                         "ts_after": ts, "offset": off})
        prev_ts = ts
    return d, gaps, len(missing)


def test_gaps():
    d, gaps, lost = gap_dump()
    f = write("gaps.bin", d.buf)
    s = json.loads(run("stats", f, "-j").out)
    T.eq((s["lost"], s["gaps_total"], s["records"]),
         (lost, len(gaps), len(d.data)), "gaps: lost and gap count")
    T.eq(s["gaps"], gaps, "gaps: seq range, timestamps around, offset")
    s = json.loads(run("stats", f, "-j", "--max-gaps", "1").out)
    T.eq((s["gaps"], s["gaps_omitted"], s["gaps_total"], s["lost"]),
         (gaps[:1], len(gaps) - 1, len(gaps), lost),
         "gaps: --max-gaps bounds the list and counts the rest")
    r = run("stats", f)
    g = gaps[0]
    T.ok("lost:          %d records in %d gaps" % (lost, len(gaps)) in r.text
         and "seq %d..%d, between ts_ns %d and %d" % (
             g["first_seq"], g["last_seq"], g["ts_before"], g["ts_after"])
         in r.text, "stats text: how many lost and between which timestamps",
         r.text)
    r = run("stats", f, "--max-gaps", "1")
    T.ok("... %d more gaps not listed" % (len(gaps) - 1) in r.text,
         "stats text: says how many gaps were not listed", r.text)
    r = run("decode", f)
    lost_lines = [ln for ln in r.text.splitlines() if ln.startswith("LOST")]
    want = ["LOST %d record%s (seq %s) between ts_ns %d and %d" % (
        g["count"], "" if g["count"] == 1 else "s",
        str(g["first_seq"]) if g["count"] == 1 else "%d..%d" % (
            g["first_seq"], g["last_seq"]), g["ts_before"], g["ts_after"])
        for g in gaps]
    T.eq(lost_lines, want, "decode text: LOST lines where the gaps are")
    r = run("decode", f, "-j")
    T.eq(jsonl_lines(r), d.jsonl(), "decode jsonl: no LOST lines in jsonl")


def test_duplicates():
    d = Dump()
    ts = 10
    for seq in range(0, 50):
        d.add(seq, ts + seq, payload=payload(seq % 9))
    for seq in range(40, 50):   # a replayed batch (crash before the tail)
        d.add(seq, ts + seq, payload=payload(seq % 9), kind="dup")
    for seq in range(50, 60):
        d.add(seq, ts + seq, payload=payload(seq % 9))
    f = write("dups.bin", d.buf)
    r = run("decode", f, "-j")
    T.eq(jsonl_lines(r), d.jsonl(), "duplicates: not printed by decode")
    s = json.loads(run("stats", f, "-j").out)
    T.eq((s["records"], s["duplicates"], s["lost"]), (60, 10, 0),
         "duplicates: counted, not lost")
    r = run("stats", f)
    T.ok("duplicates:    10" in r.text, "stats text: duplicates", r.text)


def test_seq_wrap():
    d = Dump()
    base = (1 << 32) - 5
    for i in range(10):
        if i == 7:
            continue    # seq 2 after the wrap is missing
        d.add(base + i, 100 + i)
    f = write("seqwrap.bin", d.buf)
    s = json.loads(run("stats", f, "-j").out)
    T.eq((s["records"], s["lost"], s["duplicates"],
          [(g["first_seq"], g["last_seq"]) for g in s["gaps"]]),
         (9, 1, 0, [(2, 2)]), "seq wrap at 2^32: one lost, no false gap")


def ring_scenario(ring_size=512, n=200):
    """Produce n records into a small ring whose consumer keeps up (tail
    follows head), so the area holds the last ring_size bytes of the
    stream.  Returns the producer and [(record start cursor, record)]."""
    p = RingProducer(ring_size, first_seq=7)
    emitted = []
    for i in range(n):
        plen = (i * 37) % 120
        pl = payload(plen, i)
        p.consume_to(p.head)
        seq = p.seq
        assert p.emit(1000 + i, opcode=i % 5, cpu=i % 4,
                      payload=pl) is not None
        start = p.head - (32 + ((plen + 7) & ~7))
        emitted.append((start, {"seq": seq, "ts_ns": 1000 + i,
                                "opcode": i % 5, "cpu": i % 4, "flags": 0,
                                "payload_len": plen, "payload": pl.hex()}))
    return p, emitted


def test_ring():
    rs = 512
    p, emitted = ring_scenario(rs)
    # The consumer has read everything before the oldest record that is
    # still whole in the ring.
    tail = next(e[0] for e in emitted if p.head - e[0] <= rs)
    p.consume_to(tail)
    img = p.image()
    want = [e[1] for e in emitted if e[0] >= tail]
    f = write("ring.img", img)
    r = run("decode", f, "-j")
    T.eq(r.rc, 0, "ring image: decode exit 0")
    T.eq([json.loads(x) for x in jsonl_lines(r)], want,
         "ring image: records from tail to head, in order")
    s = json.loads(run("stats", f, "-j").out)
    T.eq((s["dialect"], s["records"], s["ring"]),
         ("ring", len(want), {"ring_size": rs, "head": p.head, "tail": tail,
                              "flags": 0}),
         "ring image: stats dialect, records, ring header")
    # Snapshots taken while producing, each window tail..head overlapping
    # the previous one, so every wrap (marker or implicit skip) of the
    # stream is decoded in some window.
    q = RingProducer(rs, first_seq=(1 << 32) - 40)
    stream = []
    okall, bad = True, ""
    for i in range(400):
        plen = (i * 53 + i // 7) % 90
        seq = q.seq
        q.consume_to(q.head)
        q.emit(5000 + i, opcode=7, cpu=1, payload=payload(plen, i))
        stream.append((q.head - 32 - ((plen + 7) & ~7),
                       {"seq": seq, "ts_ns": 5000 + i, "opcode": 7, "cpu": 1,
                        "flags": 0, "payload_len": plen,
                        "payload": payload(plen, i).hex()}))
        if i % 4:
            continue
        q.tail = next(e[0] for e in stream if q.head - e[0] <= rs)
        want = [e[1] for e in stream if e[0] >= q.tail]
        rr = run("decode", write("win.img", q.image()), "-j")
        got = [json.loads(x) for x in jsonl_lines(rr)]
        if got != want or rr.rc != 0:
            okall, bad = False, "i=%d %r" % (i, rr.err)
            break
    T.ok(okall and q.markers > 0 and q.implicit_wraps > 0,
         "ring image: 100 windows tail..head over %d marker and %d "
         "implicit wraps" % (q.markers, q.implicit_wraps), bad)
    r = run("decode", "-", "-j", stdin=img)
    T.eq([json.loads(x) for x in jsonl_lines(r)],
         [e[1] for e in emitted if e[0] >= tail], "ring image on stdin")

    # Empty ring: head == tail.
    q = RingProducer(256)
    r = run("stats", write("empty.img", q.image()), "-j")
    s = json.loads(r.out)
    T.eq((r.rc, s["dialect"], s["records"], s["first_ts_ns"]),
         (0, "ring", 0, None), "empty ring image")


def test_empty_dump():
    f = write("empty.bin", b"")
    r = run("decode", f, "-j")
    T.eq((r.rc, r.out, r.err), (0, b"", b""), "empty file: decodes to nothing")
    s = json.loads(run("stats", f, "-j").out)
    T.eq((s["dialect"], s["records"], s["bytes"], s["first_ts_ns"],
          s["last_ts_ns"], s["opcodes"]),
         ("dump", 0, 0, None, None, {}), "empty file: an empty dump")


def test_convert():
    d = mixed_dump()
    f = write("conv.bin", d.buf)
    out = path("out.csv")
    r = run("convert", f, out)
    T.eq(r.rc, 0, "convert to .csv: exit 0")
    want = ["seq,ts_ns,opcode,cpu,flags,payload_len,payload"] + [
        ",".join(str(x[k]) for k in ("seq", "ts_ns", "opcode", "cpu",
                                     "flags", "payload_len", "payload"))
        for x in d.data]
    with open(out) as fh:
        T.eq(fh.read().splitlines(), want, "convert csv: header and rows")
    r = run("convert", f, "-", "--to", "csv")
    T.eq(r.text.splitlines(), want, "convert - --to csv: stdout")
    out = path("out.jsonl")
    r = run("convert", f, out)
    with open(out) as fh:
        T.eq(fh.read().splitlines(), d.jsonl(), "convert to .jsonl")
    r = run("convert", f, "-", "--to", "jsonl")
    T.eq(jsonl_lines(r), d.jsonl(), "convert - --to jsonl")
    r = run("convert", f, path("out.dat"))
    T.ok(r.rc == 2 and len(r.errlines) == 1 and "--to" in r.errlines[0],
         "convert: unknown extension needs --to (exit 2)", r.errlines)
    r = run("convert", "-", path("pipe.csv"), stdin=bytes(d.buf))
    with open(path("pipe.csv")) as fh:
        T.eq(fh.read().splitlines(), want, "convert from stdin")


def test_convert_bad_input():
    """A converter whose input turns bad leaves no cut file under OUT and
    does not replace one already there; it says so."""
    d = good_records(3)
    bad = write("conv-bad.bin", bytes(d.buf) + encode_record(3, 1, magic=0x12345678))
    for fmt, name in (("csv", "o.csv"), ("jsonl", "o.jsonl"),
                      ("perfetto", "o.pftrace"), ("perfetto-json", "o.json")):
        out = path(name)
        if os.path.exists(out):
            os.unlink(out)
        r = run("convert", bad, out, "--to", fmt)
        T.ok(r.rc == 1 and not os.path.exists(out) and
             r.errlines[-1:] == ["%s: %s: not written (the partial output "
                                 "was removed)" % (PROG, out)] and
             not [x for x in os.listdir(WORK) if x.startswith("." + name)],
             "convert --to %s, input bad: no OUT, no temporary left, said"
             % fmt, r.errlines)
        write(name, b"previous")
        r = run("convert", bad, out, "--to", fmt)
        T.ok(r.rc == 1 and open(out, "rb").read() == b"previous",
             "convert --to %s, input bad: an existing OUT is left as it was"
             % fmt)
        good = write("conv-good.bin", bytes(d.buf))
        r = run("convert", good, out, "--to", fmt)
        T.ok(r.rc == 0 and os.path.getsize(out) > len(b"previous") and
             oct(os.stat(out).st_mode & 0o777) == oct(0o644 & ~UMASK),
             "convert --to %s, input good: OUT replaced, mode 0644 less "
             "the umask" % fmt, r.errlines)
    r = run("convert", bad, "/dev/null", "--to", "csv")
    T.ok(r.rc == 1 and os.path.exists("/dev/null") and
         os.path.isfile("/dev/null") is False,
         "convert to /dev/null: written through, the device left alone")

    # ctf: OUT is a directory, written as a temporary directory beside it
    out = path("o.ctf")
    subprocess.run(["rm", "-rf", out])

    def temps():
        return [x for x in os.listdir(WORK) if x.startswith(".o.ctf.")]
    r = run("convert", bad, out, "--to", "ctf")
    T.ok(r.rc == 1 and not os.path.exists(out) and not temps() and
         r.errlines[-1:] == ["%s: %s: not written (the partial output "
                             "was removed)" % (PROG, out)],
         "convert --to ctf, input bad: no OUT, no temporary left, said",
         (r.errlines, temps()))
    os.mkdir(out)
    r = run("convert", bad, out, "--to", "ctf")
    T.ok(r.rc == 1 and os.path.isdir(out) and os.listdir(out) == [] and
         not temps(),
         "convert --to ctf, input bad: an existing empty OUT is left empty",
         (r.errlines, os.listdir(out), temps()))
    good = write("conv-good.bin", bytes(d.buf))
    r = run("convert", good, out, "--to", "ctf")
    T.ok(r.rc == 0 and sorted(os.listdir(out)) == ["metadata", "stream_0"]
         and oct(os.stat(out).st_mode & 0o777) == oct(0o755 & ~UMASK) and
         not temps(),
         "convert --to ctf, input good: the empty OUT replaced by the trace, "
         "mode 0755 less the umask", (r.errlines, os.listdir(out)))
    before = {x: open(os.path.join(out, x), "rb").read()
              for x in os.listdir(out)}
    r = run("convert", good, out, "--to", "ctf")
    T.ok(r.rc == 1 and "already holds a trace" in "".join(r.errlines) and
         {x: open(os.path.join(out, x), "rb").read()
          for x in os.listdir(out)} == before and not temps(),
         "convert --to ctf: a trace already in OUT is left as it was",
         r.errlines)
    subprocess.run(["rm", "-rf", out])
    os.mkdir(out)
    write("o.ctf/notes.txt", b"mine")
    r = run("convert", good, out, "--to", "ctf")
    T.ok(r.rc == 1 and os.listdir(out) == ["notes.txt"] and not temps(),
         "convert --to ctf: a directory that is not empty is refused, left "
         "as it was", r.errlines)
    subprocess.run(["rm", "-rf", out])
    r = run("convert", good, out, "--to", "ctf", "--raw")
    T.ok(r.rc == 0 and sorted(os.listdir(out)) == ["metadata", "stream"]
         and not temps(),
         "convert --to ctf --raw: the directory renamed into place",
         r.errlines)
    subprocess.run(["rm", "-rf", out])


def test_many_commands():
    """More commands in flight than the firmware model's
    table holds (700 k fetch records, every one a new (sqid, cid)).  The
    model closes open commands early (counted as evicted) and must keep
    going in constant time per record; it used to fill its table and spin
    in the probe loop.  A hang is caught by the timeout, not timed."""
    n, limit = 700000, 65536 // 4 * 3
    pl = struct.Struct("<HHIBxHxxxxQ")     # cmd_fetch: sqid cid nsid opc nlb slba
    buf = bytearray()
    for i in range(n):
        body = pl.pack(1 + (i >> 16), i & 0xFFFF, 1, 2, 7, i)
        buf += RECORD_HDR.pack(RECORD_MAGIC, i, 1000 * (i + 1), 0x0100, 0,
                               0, len(body), 0, 0) + body
    f = write("many-keys.bin", buf)
    out = path("many-keys.json")
    try:
        p = subprocess.run([BIN, "convert", f, out, "--to", "perfetto-json"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           timeout=600)
        rc, err = p.returncode, p.stderr
    except subprocess.TimeoutExpired:
        rc, err = None, b"still running after 600 s"
    if not T.ok(rc == 0, "700 k commands in flight: convert --to "
                "perfetto-json finishes (exit 0)",
                err.decode(errors="replace")):
        return
    with open(out, "rb") as fh:      # 300 MB: only its metadata object
        fh.seek(max(0, os.path.getsize(out) - 8192))
        tail = fh.read().decode()
    meta = json.loads(tail[tail.rindex('"metadata":') + 11:].strip()[:-1])
    T.ok(meta["commands"] == n and meta["commands_evicted"] == n - limit and
         meta["commands_open_at_end"] == limit,
         "700 k commands in flight: %d evicted, %d open at the end"
         % (n - limit, limit), meta)
    os.unlink(out)
    # the protobuf: a lane per command in flight (49152 of them)
    out = path("many-keys.pftrace")
    try:
        p = subprocess.run([BIN, "convert", f, out, "--to", "perfetto"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           timeout=600)
        rc, err = p.returncode, p.stderr
    except subprocess.TimeoutExpired:
        rc, err = None, b"still running after 600 s"
    T.ok(rc == 0, "700 k commands in flight: convert --to perfetto "
         "finishes (exit 0)", err.decode(errors="replace"))
    if os.path.exists(out):
        os.unlink(out)
    try:
        p = subprocess.run([BIN, "report", f, "-o", path("many.html")],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           timeout=600)
        rc, err = p.returncode, p.stderr
    except subprocess.TimeoutExpired:
        rc, err = None, b"still running after 600 s"
    T.ok(rc == 0, "700 k commands in flight: report finishes (exit 0)",
         err.decode(errors="replace"))
    os.unlink(f)


# ----------------------------------------------------------------- errors
def good_records(n):
    d = Dump()
    for i in range(n):
        d.add(i, 100 + i, opcode=3, payload=payload(i * 3))
    return d


def check_error(name, data, want_line, what, cmd="decode", args=("-j",),
                meta=None):
    d_prefix = good_records(3)
    f = write(name, data)
    if meta is not None:
        write(name + ".meta", meta)
    r = run(cmd, f, *args)
    T.eq((r.rc, r.errlines), (1, [want_line.replace("FILE", f)]),
         "%s: exit 1 and exactly this stderr line" % what)
    return r, d_prefix


def test_errors():
    d = good_records(3)
    n = len(d.buf)
    # Truncated header: the daemon was cut mid-write.
    data = bytes(d.buf) + encode_record(3, 1, payload=b"x" * 5)[:20]
    r, _ = check_error("trunc-hdr.bin", data,
                       "%s: FILE: end of data inside the record header at "
                       "byte offset %d (20 of 32 bytes present)" % (PROG, n),
                       "truncated header")
    T.eq(jsonl_lines(r), d.jsonl(),
         "truncated header: records before it were decoded and kept")
    r = run("stats", path("trunc-hdr.bin"))
    T.ok(r.rc == 1 and r.out == b"" and len(r.errlines) == 1,
         "truncated header: stats prints no partial statistics")
    data = bytes(d.buf) + encode_record(3, 1, payload=payload(100))[:32 + 50]
    check_error("trunc-pl.bin", data,
                "%s: FILE: end of data inside the record at byte offset %d: "
                "payload_len 100 needs 136 bytes with padding, 82 present"
                % (PROG, n), "truncated payload")
    data = bytes(d.buf) + encode_record(3, 1, magic=0x12345678) + \
        encode_record(4, 2)
    r, _ = check_error("magic.bin", data,
                       "%s: FILE: bad record magic 0x12345678 at byte "
                       "offset %d" % (PROG, n), "bad magic mid-file")
    T.eq(jsonl_lines(r), d.jsonl(), "bad magic: nothing after the last "
         "good record")
    data = bytes(d.buf) + encode_record(3, 1, payload=b"", payload_len=4065)
    check_error("len.bin", data,
                "%s: FILE: record payload_len 4065 over 4064 at byte offset "
                "%d" % (PROG, n), "payload_len over 4064")
    check_error("unknown.bin", b"ABCD" + bytes(60),
                "%s: FILE: unknown file magic 41 42 43 44 at byte offset 0: "
                "neither a dump (\"RECT\") nor a ring image (\"HMBT\")"
                % PROG, "unknown first magic")
    r = run("stats", "-", stdin=b"\x7fELF" + bytes(100))
    T.eq((r.rc, r.errlines),
         (1, ["%s: <stdin>: unknown file magic 7f 45 4c 46 at byte offset "
              "0: neither a dump (\"RECT\") nor a ring image (\"HMBT\")"
              % PROG]), "unknown first magic on stdin names <stdin>")
    img = encode_ring_hdr(256, 0, 0, version=2) + bytes(256)
    check_error("v2.img", img,
                "%s: FILE: ring version 2 at offset 0x04 is not supported "
                "(this library reads version 1 only)" % PROG,
                "ring version 2 refused", cmd="stats", args=())
    r, _ = check_error("side.bin", bytes(d.buf),
                       "%s: FILE.meta:2: abi_version 2 is not supported "
                       "(this library reads version 1)" % PROG,
                       "sidecar abi_version 2 refused",
                       meta=b"hmb_trace_sidecar=1\nabi_version=2\n")
    T.eq(r.out, b"", "sidecar refused: nothing decoded")
    check_error("side2.bin", bytes(d.buf),
                "%s: FILE.meta:1: sidecar format 2 is newer than this "
                "library (1)" % PROG, "sidecar format 2 refused",
                meta=b"hmb_trace_sidecar=2\nabi_version=1\n")
    # Output errors are reported too.
    with open("/dev/full", "wb") as full:
        p = subprocess.run([BIN, "decode", path("magic.bin")], stdout=full,
                           stderr=subprocess.PIPE)
    T.eq((p.returncode, p.stderr.decode().splitlines()),
         (1, ["%s: <stdout>: write error: No space left on device" % PROG]),
         "write error on stdout: exit 1, one line")


def test_sidecar():
    # A dump across a ring re-initialisation: seqs restart at 0.
    d = Dump()
    for seq in range(30):
        d.add(seq, 1000 + seq, payload=payload(seq))
    epoch_off = len(d.buf)
    for seq in range(20):
        d.add(seq, 10 + seq, payload=payload(seq, 1))
    f = write("epoch.bin", d.buf)
    meta = ("hmb_trace_sidecar=1\nabi_version=1\nsource=/dev/shm/ring\nring_size=4096\n"
            "epoch=0\nepoch=%d\n" % epoch_off).encode()
    write("epoch.bin.meta", meta)
    s = json.loads(run("stats", f, "-j").out)
    T.eq((s["records"], s["duplicates"], s["lost"], s["epochs"]),
         (50, 0, 0, 2), "sidecar epochs: restart is a new epoch, no dups")
    T.eq(s.get("sidecar", {}).get("source"), "/dev/shm/ring",
         "sidecar: reported in stats json")
    r = run("decode", f, "-j")
    T.eq(jsonl_lines(r), d.jsonl(), "sidecar epochs: decode prints both "
         "epochs")
    s = json.loads(run("stats", f, "-j", "--no-meta").out)
    T.eq((s["records"], s["duplicates"]), (30, 20),
         "--no-meta: the restart looks like a replay without the sidecar")
    # The sidecar is text anyone may have written: what stats and the
    # error lines show of it cannot act on the terminal.
    write("epoch.bin.meta", meta.replace(b"/dev/shm/ring",
                                         b"\x1b]0;owned\x07\x1b[2J"))
    r = run("stats", f)
    T.ok(r.rc == 0 and b"\x1b" not in r.out and b"\x07" not in r.out and
         b"(source \\x1b]0;owned\\x07\\x1b[2J," in r.out,
         "stats text: escape sequences in the sidecar's source as \\xNN",
         r.out)
    write("epoch.bin.meta", meta + b"ring_size=1\x1b[2J\n")
    r = run("stats", f)
    T.eq((r.rc, r.errlines),
         (1, ["%s: %s.meta:7: ring_size=1\\x1b[2J is not a valid number"
              % (PROG, f)]),
         "sidecar error line: the bad value escaped")
    write("epoch.bin.meta", meta)
    os.rename(path("epoch.bin.meta"), path("other.meta"))
    s = json.loads(run("stats", f, "-j").out)
    T.eq(s["duplicates"], 20, "no sidecar beside the dump: none used")
    s = json.loads(run("stats", f, "-j", "--meta", path("other.meta")).out)
    T.eq((s["records"], s["duplicates"], s["epochs"]), (50, 0, 2),
         "--meta PATH: an explicit sidecar")
    s = json.loads(run("stats", "-", "-j", "--meta", path("other.meta"),
                       stdin=bytes(d.buf)).out)
    T.eq((s["records"], s["duplicates"]), (50, 0),
         "--meta with stdin")

    # epoch= offsets where no record starts (inside one, past the end):
    # a warning naming the sidecar's line, and the entry ignored.
    inside, past = epoch_off + 8, len(d.buf) + 64
    write("epoch.bin.meta", meta + ("epoch=%d\nepoch=%d\n"
                                    % (past, inside)).encode())
    r = run("stats", f, "-j")
    s = json.loads(r.out) if r.rc == 0 else {}
    T.eq((r.rc, s.get("records"), s.get("duplicates"), s.get("epochs")),
         (0, 50, 0, 2), "bad epoch= offsets: ignored, the good ones kept")
    T.eq(r.errlines,
         ["%s: warning: %s.meta:8: epoch=%d is inside a record (the next "
          "starts at byte %d); ignored" % (PROG, f, inside,
                                           epoch_off + len(encode_record(
                                               0, 0, payload=payload(0, 1)))),
          "%s: warning: %s.meta:7: epoch=%d is past the dump's last record; "
          "ignored" % (PROG, f, past)],
         "bad epoch= offsets: one warning each, naming the sidecar's line")
    r2 = run("decode", f, "-j")
    T.ok(r2.rc == 0 and r2.errlines == r.errlines and
         jsonl_lines(r2) == d.jsonl(),
         "bad epoch= offsets: decode warns the same and prints every record",
         r2.errlines)
    write("epoch.bin.meta", meta)

    # A FIFO (or any non-regular file) as the sidecar is refused at once,
    # not waited on for a writer that never comes.
    fifo = path("fifo.meta")
    os.mkfifo(fifo)
    os.rename(fifo, f + ".meta")
    for args in ((), ("--meta", f + ".meta")):
        try:
            p = subprocess.run([BIN, "stats", f] + list(args),
                               capture_output=True, timeout=20)
            T.eq((p.returncode, p.stderr.decode().splitlines()),
                 (1, ["%s: %s.meta: not a regular file of at most 16777216 "
                      "bytes (a FIFO)" % (PROG, f)]),
                 "sidecar a FIFO%s: refused without blocking"
                 % (" (--meta)" if args else ""))
        except subprocess.TimeoutExpired:
            T.ok(False, "sidecar a FIFO: refused without blocking", "hung")
    os.unlink(f + ".meta")

    # An NVMe controller's seq continues across a reset (format.md,
    # "The HMB trace slice"): records the old epoch never delivered show
    # up as a forward gap at the epoch boundary and are counted lost.
    d = Dump()
    for seq in range(30):
        d.add(seq, 1000 + seq, payload=payload(seq))
    epoch_off = len(d.buf)
    for seq in range(35, 55):
        d.add(seq, 2000 + seq, payload=payload(seq, 1))
    f = write("cont.bin", d.buf)
    write("cont.bin.meta", ("hmb_trace_sidecar=1\nabi_version=1\n"
                            "epoch=%d\n" % epoch_off).encode())
    s = json.loads(run("stats", f, "-j").out)
    T.eq((s["records"], s["lost"], s["gaps_total"], s["duplicates"],
          s["resets"], s["epochs"]), (50, 5, 1, 0, 0, 1),
         "epoch boundary, seq continued: the 5 records in between are lost")
    T.eq(s["gaps"], [{"first_seq": 30, "last_seq": 34, "count": 5,
                      "ts_before": 1029, "ts_after": 2035,
                      "offset": epoch_off}],
         "epoch boundary: the gap is located at the new epoch's first record")
    # ... while a restart at the boundary (seq back, or 2^31 and more
    # ahead) counts nothing
    for first, what in ((3, "a little behind"), (30 + (1 << 31), "2^31 ahead")):
        d = Dump()
        for seq in range(30):
            d.add(seq, 1000 + seq)
        epoch_off = len(d.buf)
        for i in range(20):
            d.add((first + i) & 0xffffffff, 2000 + i)
        f = write("restart.bin", d.buf)
        write("restart.bin.meta", ("hmb_trace_sidecar=1\nabi_version=1\n"
                                   "epoch=%d\n" % epoch_off).encode())
        s = json.loads(run("stats", f, "-j").out)
        T.eq((s["records"], s["lost"], s["duplicates"], s["resets"]),
             (50, 0, 0, 0), "epoch boundary, seq %s: a restart, "
             "nothing lost, nothing duplicated" % what)


def test_memory():
    """Peak RSS stays small on a large dump (constant memory)."""
    if ASAN:
        print("# peak RSS is measured on the plain build only (ASan inflates it)")
        return
    size = int(os.environ.get("HMB_TEST_BIG_MIB", "64")) * MIB
    recs = [encode_record(i, 1000 + i, i % 7, i % 4, 0, payload(24 + i % 40))
            for i in range(4096)]
    block = b"".join(recs)
    f = path("big.bin")
    # Seqs repeat per block: the accounting sees replays/restarts, which is
    # fine for a memory test; the point is bytes streamed.
    with open(f, "wb") as fh:
        for _ in range(size // len(block) + 1):
            fh.write(block)
    for cmd in (("stats", f), ("decode", f, "-j")):
        rc, rss = run_rss(*cmd)
        T.ok(rc == 0 and rss < 16 * 1024,
             "%s on %d MiB: peak RSS %d KiB < 16 MiB" % (
                 cmd[0], size // MIB, rss), "rc %d" % rc)
    os.unlink(f)


# ------------------------------------------------- dictionary and CTF
DICT_EVENTS = {   # opcode: (name, [(field, struct fmt, offset)]) as shipped
    0x100: ("cmd_fetch", [("sqid", "H", 0), ("cid", "H", 2),
                          ("nsid", "I", 4), ("opc", "B", 8),
                          ("nlb", "H", 10), ("slba", "Q", 16)]),
    0x104: ("cmd_cqe_posted", [("sqid", "H", 0), ("cid", "H", 2),
                               ("status", "H", 4), ("cqid", "H", 6)]),
    0x210: ("thermal_throttle_start", [("temp_c", "h", 0),
                                       ("level", "B", 2)]),
}


def dict_payload(opcode, values, extra=b""):
    import struct
    name, fields = DICT_EVENTS[opcode]
    end = max(off + struct.calcsize(f) for _, f, off in fields)
    buf = bytearray(end)
    for (fname, f, off) in fields:
        struct.pack_into("<" + f, buf, off, values[fname])
    return bytes(buf) + extra


def dict_dump():
    """Records of shipped events (with the values they carry), a record
    too short for its fields, an unknown opcode, a gap, and a timestamp
    that goes backwards."""
    d = Dump()
    expect = []        # (name or None, fields or None) per data record
    vals = [
        (0x100, {"sqid": 1, "cid": 0x4040, "nsid": 1, "opc": 2, "nlb": 7,
                 "slba": 123456789}, b""),
        (0x104, {"sqid": 1, "cid": 0x4040, "status": 0, "cqid": 1},
         b"\x01\x02"),
        (0x210, {"temp_c": -5, "level": 3}, b""),
    ]
    seq, ts = 10, 1000
    for i in range(30):
        op, v, extra = vals[i % 3]
        v = dict(v)
        if "cid" in v:
            v["cid"] = (v["cid"] + i) & 0xFFFF
        d.add(seq, ts, opcode=op, cpu=i % 2, payload=dict_payload(op, v,
                                                                  extra))
        expect.append((DICT_EVENTS[op][0], v))
        seq += 2 if i == 10 else 1       # one record lost after the 11th
        ts += 100 if i != 20 else -500   # the clock goes back once
    full = dict_payload(0x100, vals[0][1])
    d.add(seq, ts, opcode=0x100, payload=full[:10])         # short
    expect.append(("cmd_fetch_short", None))
    d.add(seq + 1, ts + 5, opcode=0x777, flags=2, payload=b"abc")
    expect.append(("opcode_0x0777", None))
    return d, expect


def test_names():
    d, expect = dict_dump()
    f = write("dict.bin", d.buf)
    r = run("decode", f, "-j", "--names")
    T.eq(r.rc, 0, "decode --names: exit 0")
    objs = [json.loads(x) for x in jsonl_lines(r)]
    raw = [json.loads(x) for x in d.jsonl()]
    T.eq([{k: o[k] for k in raw[0]} for o in objs], raw,
         "decode --names jsonl: the raw keys are unchanged")
    got = [(o.get("name"), o.get("fields")) for o in objs]
    want = []
    for name, v in expect:
        if name.endswith("_short"):
            want.append((name[:-6], {"sqid": 1, "cid": 0x4040, "nsid": 1,
                                     "opc": 2, "nlb": None, "slba": None}))
        elif name.startswith("opcode_"):
            want.append((None, None))
        else:
            want.append((name, v))
    T.eq(got, want, "decode --names jsonl: name and fields (signed, "
         "too short -> null, unknown opcode raw)")
    r = run("decode", f, "--names")
    lines = [ln for ln in r.text.splitlines() if not ln.startswith("LOST")]
    T.ok(lines[0].endswith("seq=10 opcode=0x0100 len=24 cmd_fetch sqid=1 "
                           "cid=16448 nsid=1 opc=2 nlb=7 slba=123456789")
         and "thermal_throttle_start temp_c=-5 level=3" in lines[2]
         and lines[1].endswith(" tail=0102")
         and lines[-1].endswith("len=3 TRUNCATED payload=616263"),
         "decode --names text: event names and fields", "\n".join(lines[:3]))
    r2 = run("decode", f, "-j")
    T.eq(jsonl_lines(r2), d.jsonl(), "decode without --names: raw only")
    r3 = run("decode", f)
    T.eq(r3.text, r.text, "decode text uses the shipped dictionary by default")
    r4 = run("decode", f, "--raw")
    first = [ln for ln in r4.text.splitlines() if not ln.startswith("LOST")][0]
    pl = json.loads(d.jsonl()[0])["payload"]
    T.ok(r4.rc == 0 and "cmd_fetch" not in r4.text and
         first.endswith("seq=10 opcode=0x0100 len=24 payload=" + pl),
         "decode --raw text: payload as hex, no names", first)
    # A dictionary of one's own.
    df = write("my.dict", b"dict 1\nevent 0x777 my_event\n"
                          b"field a u8 0\nfield b u16 2\n")
    r = run("decode", f, "-j", "--dict", df)
    last = json.loads(jsonl_lines(r)[-1])
    T.eq((last.get("name"), last.get("fields")),
         ("my_event", {"a": 0x61, "b": None}), "--dict FILE: its events")
    bad = write("bad.dict", b"dict 1\nevent 0x1 x\nfield a u99 0\n")
    r = run("decode", f, "--dict", bad)
    T.ok(r.rc == 1 and len(r.errlines) == 1 and
         r.errlines[0].startswith("%s: %s:3: " % (PROG, bad)),
         "--dict with a bad dictionary: one line naming file:line",
         r.errlines)
    r = run("convert", f, "-", "--to", "csv", "--names")
    rows = r.text.splitlines()
    T.ok(rows[0].endswith(",payload,name") and rows[1].endswith(",cmd_fetch")
         and rows[-1].endswith(","), "convert csv --names: a name column",
         rows[:2])


def bt2_events(ctfdir):
    """Events babeltrace2 reads from a CTF trace: (ts, name, seq, cpu,
    flags, fields, payload); and its discarded-event warnings."""
    import re
    p = subprocess.run(["babeltrace2", "--clock-cycles", "--no-delta",
                        ctfdir], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE)
    ev_re = re.compile(r"^\[(\d+)\] (\S+): \{ seq = (\d+), cpu = (\d+), "
                       r"flags = (\d+) \}, \{ (.*) \}$")
    out = []
    for line in p.stdout.decode().splitlines():
        m = ev_re.match(line)
        if not m:
            out.append(("unparsed", line))
            continue
        body = m.group(6)
        head, _, pl = body.partition("payload = [")
        fields = {}
        for kv in head.split(", "):
            if " = " in kv:
                k, v = kv.split(" = ")
                fields[k] = int(v)
        plen = fields.pop("payload_len")
        payload = bytes(int(x) for x in re.findall(r"\[\d+\] = (\d+)", pl))
        assert len(payload) == plen
        out.append((int(m.group(1)), m.group(2), int(m.group(3)),
                    int(m.group(4)), int(m.group(5)), fields,
                    payload.hex()))
    warn = re.findall(r"discarded (\d+) events? between \[([0-9:.]+)\] "
                      r"and \[([0-9:.]+)\]", p.stderr.decode())
    return p.returncode, out, warn


def expected_ctf(jsonl):
    """What babeltrace2 must show for decode --names --format jsonl lines."""
    out = []
    for line in jsonl:
        o = json.loads(line)
        name, fields = o.get("name"), o.get("fields") or {}
        if name is None:
            name, fields = "opcode_0x%04x" % o["opcode"], {}
        elif None in fields.values():
            name, fields = name + "_short", {}
        out.append((o["ts_ns"], name, o["seq"], o["cpu"], o["flags"],
                    fields, o["payload"]))
    return out


def ctf_check(src, what, sort=False, want_rc=0):
    out = path("ctf-" + os.path.basename(src))
    subprocess.run(["rm", "-rf", out])
    r = run("convert", src, out, "--to", "ctf")
    dec = run("decode", src, "-j", "--names")
    if not T.ok(r.rc == want_rc and dec.rc == want_rc,
                "%s: convert --to ctf exit %d" % (what, want_rc), r.errlines):
        return None
    if want_rc:
        T.ok(not os.path.exists(out) and r.errlines[-1:] ==
             ["%s: %s: not written (the partial output was removed)"
              % (PROG, out)],
             "%s: no trace directory, said" % what, r.errlines)
        return None
    rc, got, warn = bt2_events(out)
    want = expected_ctf(jsonl_lines(dec))
    if sort:
        got.sort(key=lambda e: (e[0], e[2]))
        want.sort(key=lambda e: (e[0], e[2]))
    T.ok(rc == 0 and got == want,
         "%s: babeltrace2 reads %d events, names, timestamps and fields "
         "equal to decode" % (what, len(want)),
         "rc %d, first difference: %r" % (rc, next(
             ((g, w) for g, w in zip(got, want) if g != w),
             (len(got), len(want)))))
    return warn


def test_ctf():
    import shutil
    if not shutil.which("babeltrace2"):
        T.skip("CTF output read by babeltrace2", "babeltrace2 not installed")
        return
    d, _ = dict_dump()
    warn = ctf_check(write("dictctf.bin", d.buf), "dictionary dump",
                     sort=True)
    T.eq([w[0] for w in warn or []], ["1"],
         "CTF: the lost record is a discarded event for babeltrace2")
    g, gaps, lost = gap_dump()
    warn = ctf_check(write("gapctf.bin", g.buf), "gap dump")

    def clk(ns):
        return "00:00:%02d.%09d" % (ns // 10**9, ns % 10**9)
    T.eq(warn, [(str(x["count"]), clk(x["ts_before"]), clk(x["ts_after"]))
                for x in gaps],
         "CTF: babeltrace2 reports each gap's count between the timestamps "
         "around it")
    ctf_check(write("mixedctf.bin", mixed_dump().buf), "mixed dump")
    vdir = os.path.join(TOP, "docs", "test-vectors", "v1")
    vecs = sorted(x[:-5] for x in os.listdir(vdir) if x.endswith(".json"))
    nvec = 0
    for v in vecs:
        with open(os.path.join(vdir, v + ".json")) as fh:
            exp = json.load(fh)
        if exp["dialect"] is None or (exp["error"] and exp["error"]["code"]
                                      in ("HMB_E_RING_VERSION",)):
            r = run("convert", os.path.join(vdir, v + ".bin"),
                    path("ctf-v-" + v), "--to", "ctf")
            T.ok(r.rc == 1 and len(r.errlines) == 1,
                 "vector %s: refused, one error line" % v, r.errlines)
            continue
        ctf_check(os.path.join(vdir, v + ".bin"), "vector " + v,
                  want_rc=1 if exp["error"] else 0)
        nvec += 1
    T.ok(nvec >= 8, "CTF: %d test vectors checked" % nvec)
    # A large dump: one million records.
    n = int(os.environ.get("HMB_TEST_CTF_RECORDS", "1000000"))
    if ASAN:
        n = min(n, 20000)
    import struct
    big = path("ctf-big.bin")
    hdr = struct.Struct("<IIQHBBHHQ")
    ops = [0x100, 0x101, 0x102, 0x103, 0x104, 0x200, 0x220, 0x999]
    with open(big, "wb") as fh:
        chunk = bytearray()
        for i in range(n):
            op = ops[i % len(ops)]
            plen = (0, 8, 8, 8, 8, 8, 2, 3)[i % len(ops)] if op != 0x100 \
                else 24
            pl = bytes(((i >> (8 * (k % 4))) + k) & 255 for k in range(plen))
            chunk += hdr.pack(0x54434552, i + (i // 100000), 10**9 + 7 * i,
                              op, i % 4, 0, plen, 0, 0) + pl + \
                b"\0" * ((-plen) & 7)
            if len(chunk) > 1 << 20:
                fh.write(chunk)
                chunk = bytearray()
        fh.write(chunk)
    ctf_check(big, "%d-record dump" % n)
    os.unlink(big)


def main():
    print("TAP version 13")
    for t in (test_help, test_decode_mixed, test_stdin, test_gaps,
              test_duplicates, test_seq_wrap, test_ring, test_empty_dump,
              test_convert, test_convert_bad_input, test_many_commands, test_errors, test_sidecar, test_memory,
              test_names, test_ctf):
        try:
            t()
        except Exception as e:      # a crash in a test is a failure
            import traceback
            T.ok(False, "%s raised %s" % (t.__name__, e),
                 traceback.format_exc())
    rc = T.done()
    subprocess.run(["rm", "-rf", WORK])
    return rc


if __name__ == "__main__":
    sys.exit(main())
