# SPDX-License-Identifier: Apache-2.0
"""hmb_trace against the v1 test vectors, and against hmb-trace-analyze.

The vectors (docs/test-vectors/v1/*.bin, each with the expected JSON its
generator wrote) pin the format down; the cross-checks feed the same
generated dumps and ring images to this decoder and to the C analyzer
(libhmbtrace) and require identical output: two independent decoders that
agree.
"""

import glob
import json
import os
import subprocess
import sys

import pytest

from conftest import VECTORS, PYDIR
from hmb_trace import FormatError, Accounting, open_trace
from hmb_trace.acct import NEW, DUPLICATE, MARKER, IGNORED
from hmb_trace.format import Record, KIND_DATA, KIND_MARKER, KIND_IGNORED
from hmb_trace.sidecar import read_sidecar
from hmb_trace.writer import (encode_record, encode_marker, RingProducer,
                              write_synthetic)

VECTOR_BINS = sorted(glob.glob(os.path.join(VECTORS, "*.bin")))


# ------------------------------------------------------------ test vectors
def test_vectors_present():
    assert len(VECTOR_BINS) >= 10, "no test vectors in %s" % VECTORS
    for b in VECTOR_BINS:
        assert os.path.exists(b[:-4] + ".json"), b


def decode_like_vector(path):
    """Decode path into the shape of the vectors' expected JSON."""
    reader = open_trace(path)
    acct = Accounting()
    records = []
    error = None
    try:
        for rec in reader:
            if acct.add(rec) == NEW:
                d = {"offset": rec.offset}
                d.update(rec.as_dict())
                records.append(d)
    except FormatError as e:
        error = {"code": e.code, "offset": e.offset}
    finally:
        reader.f.close()
    stats = {"records": acct.records, "wrap_markers": acct.wrap_markers,
             "ignored": acct.ignored, "truncated": acct.truncated,
             "lost": acct.lost, "gaps": acct.gaps_total,
             "duplicates": acct.duplicates, "resets": acct.resets,
             "bytes": acct.bytes, "payload_bytes": acct.payload_bytes}
    return {"dialect": reader.dialect, "ring": reader.ring,
            "records": records, "stats": stats, "error": error}


@pytest.mark.parametrize("vec", [os.path.basename(b)[:-4]
                                 for b in VECTOR_BINS])
def test_vector(vec):
    with open(os.path.join(VECTORS, vec + ".json")) as f:
        want = json.load(f)
    got = decode_like_vector(os.path.join(VECTORS, vec + ".bin"))
    for key in ("dialect", "ring", "records", "stats", "error"):
        assert got[key] == want[key], key


@pytest.mark.parametrize("vec", [os.path.basename(b)[:-4]
                                 for b in VECTOR_BINS])
def test_vector_both_decoders(vec, analyze):
    """The C analyzer and the Python CLI print the vector's records."""
    with open(os.path.join(VECTORS, vec + ".json")) as f:
        want = json.load(f)
    lines = [json.dumps({k: v for k, v in r.items() if k != "offset"},
                        separators=(",", ":")) + "\n"
             for r in want["records"]]
    path = os.path.join(VECTORS, vec + ".bin")
    for name, rc, out, err in both(analyze, "decode", path, "--format",
                                   "jsonl"):
        assert out.decode() == "".join(lines), name
        assert rc == (1 if want["error"] else 0), (name, err)
        if want["error"]:
            assert len(err.splitlines()) == 1, (name, err)


# ------------------------------------------------------------- unit tests
def rec(seq, kind=KIND_DATA, ts=0, offset=0):
    return Record(seq=seq, ts_ns=ts, opcode=1, cpu=0, flags=0,
                  payload_len=0, payload=b"", offset=offset, raw_len=32,
                  kind=kind)


def test_acct_gap_dup_reset_wrap():
    a = Accounting(dup_window=100)
    assert a.add(rec(0xFFFFFFFE, ts=1)) == NEW
    assert a.add(rec(0xFFFFFFFF, ts=2)) == NEW
    assert a.add(rec(0, kind=KIND_MARKER)) == MARKER
    assert a.add(rec(0, ts=3)) == NEW             # seq wrap: no gap
    assert a.add(rec(4, ts=7, offset=96)) == NEW   # 1, 2, 3 lost
    assert a.add(rec(2)) == DUPLICATE
    assert a.add(rec(4)) == DUPLICATE              # same seq again
    assert a.add(rec(5, kind=KIND_IGNORED)) == IGNORED
    assert a.add(rec(6, ts=9)) == NEW              # 5 was seen (ignored)
    assert a.add(rec((6 - 1000) & 0xFFFFFFFF)) == NEW            # far back: a restart
    assert (a.records, a.lost, a.duplicates, a.resets, a.ignored,
            a.wrap_markers) == (6, 3, 2, 1, 1, 1)
    assert a.gaps == [{"first_seq": 1, "last_seq": 3, "count": 3,
                       "ts_before": 3, "ts_after": 7, "offset": 96}]
    a.new_epoch()
    assert a.add(rec(0)) == NEW and a.resets == 1


def test_sidecar(tmp_path):
    p = tmp_path / "x.meta"
    p.write_text("hmb_trace_sidecar=1\nabi_version=1\nsource=/dev/shm/r\n"
                 "ring_size=4096\nfuture_key=whatever\nepoch=500\n"
                 "epoch=100\n")
    sc = read_sidecar(str(p))
    assert (sc.abi_version, sc.source, sc.ring_size, sc.epochs) == \
        (1, "/dev/shm/r", 4096, [100, 500])
    p.write_text("hmb_trace_sidecar=1\nabi_version=2\n")
    with pytest.raises(FormatError) as e:
        read_sidecar(str(p))
    assert e.value.code == "HMB_E_SIDECAR_VERSION"
    p.write_text("hmb_trace_sidecar=2\nabi_version=1\n")
    with pytest.raises(FormatError) as e:
        read_sidecar(str(p))
    assert e.value.code == "HMB_E_SIDECAR_VERSION"


# ----------------------------------------------------------- cross-checks
def both(analyze, *args, stdin=None):
    """Run the C analyzer and the Python CLI with the same arguments."""
    env = dict(os.environ, PYTHONPATH=PYDIR)
    out = []
    for name, cmd in (("c", [analyze]),
                      ("py", [sys.executable, "-m", "hmb_trace"])):
        p = subprocess.run(cmd + list(args), input=stdin, env=env,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        out.append((name, p.returncode, p.stdout, p.stderr.decode()))
    return out


def agree(analyze, path, *extra):
    """Both decoders: same jsonl and text bytes, same stats; returns the
    parsed stats."""
    (_, rc1, o1, e1), (_, rc2, o2, e2) = both(analyze, "decode", path,
                                              "--format", "jsonl", *extra)
    assert (rc1, rc2) == (0, 0), (e1, e2)
    assert o1 == o2, "decode --format jsonl differs"
    assert o1, "nothing decoded"
    (_, _, t1, _), (_, _, t2, _) = both(analyze, "decode", path, "--raw",
                                        *extra)
    assert t1 == t2, "decode --raw text differs"
    (_, rc1, s1, e1), (_, rc2, s2, e2) = both(analyze, "stats", path,
                                              "--format", "json", *extra)
    assert (rc1, rc2) == (0, 0), (e1, e2)
    s1, s2 = json.loads(s1), json.loads(s2)
    assert s1 == s2
    return s1


def test_cross_synthetic_dump(analyze, tmp_path):
    path = str(tmp_path / "syn.bin")
    with open(path, "wb") as f:
        n = write_synthetic(f, 4 << 20, seed=7, first_seq=0xFFFFF000,
                            drop_every=997)
    s = agree(analyze, path)
    assert s["records"] == n and s["lost"] > 0 and s["duplicates"] == 0


def test_cross_replays_markers_ignored(analyze, tmp_path):
    """A dump as the daemon writes it across crashes: replayed batches,
    wrap markers, unknown-flag and truncated records, a producer restart."""
    buf = bytearray()
    seq, ts = 100, 1
    batch = []
    for i in range(3000):
        flags = 0x40 if i % 211 == 5 else (2 if i % 13 == 0 else 0)
        r = encode_record(seq, ts, i % 5, i % 3, flags,
                          bytes((i + k) & 255 for k in range(i % 70)))
        buf += r
        batch.append(r)
        if i % 97 == 0:
            buf += encode_marker(seq + 1, ts)
        if i % 500 == 499:
            buf += b"".join(batch[-40:])       # a replayed batch
        if i == 2000:                          # a restart: far back
            seq = (seq - 200000) & 0xFFFFFFFF
        seq += 1 if i % 333 else 3             # and some losses
        ts += 17
    path = tmp_path / "replay.bin"
    path.write_bytes(bytes(buf))
    s = agree(analyze, str(path))
    assert s["duplicates"] > 0 and s["ignored"] > 0 and s["resets"] == 1
    assert s["wrap_markers"] > 0 and s["lost"] > 0 and s["truncated"] > 0


def test_cross_sidecar_epochs(analyze, tmp_path):
    buf = bytearray()
    epochs = []
    for ep in range(3):
        epochs.append(len(buf))
        for seq in range(200):
            buf += encode_record(seq, 1000 * ep + seq, 1, 0, 0, b"x" * ep)
    path = tmp_path / "ep.bin"
    path.write_bytes(bytes(buf))
    (tmp_path / "ep.bin.meta").write_text(
        "hmb_trace_sidecar=1\nabi_version=1\nsource=test\nring_size=4096\n" +
        "".join("epoch=%d\n" % e for e in epochs))
    s = agree(analyze, str(path))
    assert (s["records"], s["duplicates"], s["epochs"]) == (600, 0, 3)
    s = agree(analyze, str(path), "--no-meta")
    assert s["duplicates"] == 400


@pytest.mark.parametrize("ring_size", [256, 4096])
def test_cross_ring_images(analyze, tmp_path, ring_size):
    p = RingProducer(ring_size, first_seq=0xFFFFFFF0)
    starts = []
    checked = 0
    for i in range(600):
        plen = (i * 29) % (ring_size // 4)
        p.consume_to(p.head)
        p.emit(10 * i, opcode=i % 9, cpu=i % 2, payload=bytes([i & 255]) *
               plen)
        starts.append(p.head - 32 - ((plen + 7) & ~7))
        if i % 25 == 24:
            p.tail = next(s for s in starts if p.head - s <= ring_size)
            path = tmp_path / ("ring%d.img" % i)
            path.write_bytes(p.image())
            agree(analyze, str(path))
            checked += 1
    assert checked == 24 and p.markers > 0


@pytest.mark.parametrize("case", ["trunc-hdr", "trunc-payload", "magic",
                                  "len", "unknown"])
def test_cross_errors(analyze, tmp_path, case):
    good = b"".join(encode_record(i, i, 1, 0, 0, b"ab" * i)
                    for i in range(5))
    bad = {"trunc-hdr": good + encode_record(5, 5)[:17],
           "trunc-payload": good + encode_record(5, 5, payload=b"z" * 50)[:60],
           "magic": good + encode_record(5, 5, magic=0xdeadbeef),
           "len": good + encode_record(5, 5, payload_len=5000),
           "unknown": b"\x7fELF" + good}[case]
    path = tmp_path / (case + ".bin")
    path.write_bytes(bad)
    (n1, rc1, o1, e1), (n2, rc2, o2, e2) = both(analyze, "decode", str(path),
                                                "--format", "jsonl")
    assert rc1 == rc2 == 1
    assert o1 == o2 and (o1.count(b"\n") == 5) == (case != "unknown")
    assert len(e1.splitlines()) == 1 and len(e2.splitlines()) == 1
    off = 0 if case == "unknown" else len(good)
    assert ("offset %d" % off) in e1 and ("offset %d" % off) in e2


def test_cross_stdin(analyze, tmp_path):
    data = b"".join(encode_record(i, i * 3, 2, 1, 0, b"q" * (i % 9))
                    for i in range(100))
    (_, rc1, o1, _), (_, rc2, o2, _) = both(analyze, "decode", "-",
                                            "--format", "jsonl", stdin=data)
    assert rc1 == rc2 == 0 and o1 == o2 and o1.count(b"\n") == 100


FWSIM = os.path.join(os.path.dirname(PYDIR), "build", "bin", "hmb-fwsim")


@pytest.mark.parametrize("args", [
    ["-s", "64K", "-n", "20000", "--first-seq", "4294967000"],
    ["-s", "1M", "-n", "30000", "-p", "uniform:0-4064", "--cpus", "8",
     "--opcodes", "256:5,257:5,260:5,7:1"],
])
def test_cross_fwsim(analyze, tmp_path, args):
    """hmb-fwsim (the C producer) with no consumer: the ring fills and
    drops.  Its ring file (a ring image) and its log (every record it
    wrote, as a dump) decode the same in both decoders, and the losses
    found are the drops it reports between records."""
    if not os.access(FWSIM, os.X_OK):
        pytest.fail("%s is not built (make -C mock/hmb-fwsim)" % FWSIM)
    ring, log = str(tmp_path / "ring"), str(tmp_path / "log.bin")
    p = subprocess.run([FWSIM, "-r", ring, "--log", log, "--json"] + args,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       check=True)
    rep = json.loads(p.stdout)
    for path in (ring, log):
        s = agree(analyze, path)
        assert s["records"] == rep["produced"]
        assert s["lost"] == rep["dropped"] - rep["trailing_drops"]
        assert s["dialect"] == ("ring" if path == ring else "dump")
