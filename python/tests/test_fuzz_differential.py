# SPDX-License-Identifier: Apache-2.0
"""A seeded random differential run of the two decoders (docs/fuzzing.md):
Debian has no coverage-guided fuzzer for Python (no python3-atheris), so
the Python decoder is fuzzed against the C one.  Valid dumps, ring images
and sidecars are generated, then mutated (bits flipped, header fields
overwritten with boundary values, bytes cut, inserted or spliced); both
decoders must print the same bytes, exit with the same status and, on an
error, name the same byte offset of the trace when both name one (the
wording of the messages differs), or both blame the sidecar.

HMB_FUZZ_SEED picks another run (the seed of a failing case is in its
message); HMB_FUZZ_CASES sets how many cases (default 100: about 15 s).
"""

import os
import random
import re
import subprocess
import sys

from conftest import PYDIR
from hmb_trace.writer import encode_record, encode_marker, RingProducer

SEED = int(os.environ.get("HMB_FUZZ_SEED", "30"))
CASES = int(os.environ.get("HMB_FUZZ_CASES", "100"))
BOUNDARY = [0, 1, 7, 8, 31, 32, 33, 0x40, 4064, 4065, 0x7fffffff, 0x80000000,
            0xffffffff, 0xfffffff8]


def gen_dump(rng):
    buf = bytearray()
    seq = rng.choice([0, 5, 0xfffffff0, rng.getrandbits(32)])
    for i in range(rng.randrange(1, 60)):
        kind = rng.random()
        if kind < 0.08:
            buf += encode_marker(seq, i)
            continue
        flags = rng.choice([0, 0, 0, 1, 2, 0x40])
        plen = rng.choice([0, 1, 8, 24, 33, rng.randrange(0, 300)])
        buf += encode_record(seq, 1000 + i * 7, rng.randrange(0x300),
                             rng.randrange(4), flags,
                             bytes(rng.getrandbits(8) for _ in range(plen)))
        seq = (seq + rng.choice([1, 1, 1, 2, 0, -3, 100000])) & 0xffffffff
    return bytes(buf)


def gen_ring(rng):
    rs = rng.choice([256, 1024, 4096])
    p = RingProducer(rs, first_seq=rng.choice([0, 0xfffffff0]))
    for i in range(rng.randrange(1, 120)):
        p.consume_to(p.head)
        p.emit(10 * i, opcode=i % 9, cpu=i % 2,
               payload=bytes([i & 255]) * rng.randrange(0, rs // 4))
    p.tail = max(p.tail, p.head - rng.randrange(0, rs // 2)) & ~7
    return p.image()


def gen_sidecar(rng, n):
    lines = ["hmb_trace_sidecar=%d" % rng.choice([1, 1, 1, 2]),
             "abi_version=1", "source=fuzz", "ring_size=4096"]
    for _ in range(rng.randrange(0, 4)):
        lines.append("epoch=%d" % rng.choice([0, 32, n, n + 8,
                                              rng.randrange(0, n + 64)]))
    if rng.random() < 0.2:
        lines.append(rng.choice(["epoch=x", "epoch=", "=1", "junk",
                                 "epoch=99999999999999999999999"]))
    return ("\n".join(lines) + "\n").encode()


def mutate(rng, data):
    b = bytearray(data)
    for _ in range(rng.randrange(1, 4)):
        op = rng.randrange(5)
        if not b:
            b += bytes(rng.getrandbits(8) for _ in range(rng.randrange(1, 64)))
            continue
        at = rng.randrange(len(b))
        if op == 0:
            b[at] ^= 1 << rng.randrange(8)
        elif op == 1:
            v = rng.choice(BOUNDARY)
            w = rng.choice([2, 4, 8])
            b[at:at + w] = (v & ((1 << (8 * w)) - 1)).to_bytes(w, "little")
        elif op == 2:
            del b[at:]
        elif op == 3:
            b[at:at] = bytes(rng.getrandbits(8) for _ in range(rng.randrange(1, 40)))
        else:
            src = rng.randrange(len(b))
            n = rng.randrange(1, 64)
            b[at:at + n] = b[src:src + n]
    return bytes(b)


def run(cmd, args):
    env = dict(os.environ, PYTHONPATH=PYDIR)
    p = subprocess.run(cmd + args, env=env, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=60)
    return p.returncode, p.stdout, p.stderr.decode(errors="replace")


def offsets(err):
    return [int(x, 0) for x in re.findall(r"offset (0x[0-9a-fA-F]+|\d+)", err)]


def warnings(err):
    """(the warnings without the program's name, the other lines)"""
    warn, rest = [], []
    for line in err.splitlines(keepends=True):
        prog, sep, tail = line.partition(": warning: ")
        if sep and prog in ("hmb-trace-analyze", "hmb_trace"):
            warn.append(tail)
        else:
            rest.append(line)
    return warn, "".join(rest)


def test_fuzz_differential(analyze, tmp_path):
    rng = random.Random(SEED)
    py = [sys.executable, "-m", "hmb_trace"]
    failed = 0
    for case in range(CASES):
        seed = rng.getrandbits(32)
        r = random.Random(seed)
        data = r.choice([gen_dump, gen_dump, gen_ring])(r)
        if r.random() < 0.8:
            data = mutate(r, data)
        path = tmp_path / ("c%d.bin" % case)
        path.write_bytes(data)
        if r.random() < 0.3:
            (tmp_path / ("c%d.bin.meta" % case)).write_bytes(
                gen_sidecar(r, len(data)))
        args = ["decode", str(path), "--format", "jsonl"]
        rc1, o1, e1 = run([analyze], args)
        rc2, o2, e2 = run(py, args)
        what = "case %d (HMB_FUZZ_SEED=%d, case seed %d)" % (case, SEED, seed)
        assert rc1 == rc2, "%s: exit %d (C) vs %d (Python): %s | %s" % (
            what, rc1, rc2, e1.strip(), e2.strip())
        assert o1 == o2, "%s: the decoded records differ" % what
        w1, e1 = warnings(e1)
        w2, e2 = warnings(e2)
        assert w1 == w2, "%s: the warnings differ: %s | %s" % (what, w1, w2)
        if rc1 and (".meta" in e1 or ".meta" in e2):
            # the sidecar's errors name a line (C) or an offset (Python)
            assert ".meta" in e1 and ".meta" in e2, (
                "%s: only one decoder blames the sidecar: %s | %s" % (
                    what, e1, e2))
        elif rc1 and offsets(e1) and offsets(e2):
            # (C may name a ring offset and the file offset, Python one)
            assert (offsets(e2)[0] in offsets(e1) or
                    offsets(e1)[0] in offsets(e2)), (
                "%s: errors at different offsets: %s | %s" % (what, e1, e2))
        failed += rc1 != 0
    # the run reaches both the decoders' success and their error paths
    assert 0 < failed < CASES
