#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""join-input.py OUT N: bench-join.sh's inputs.  tests/formats/fwgen.py
writes a dump of N commands (OUT.x1.bin) and the host's view of them as
hmb-trace-agent JSON lines (OUT.x1.jsonl); OUT.x10.* is that trace ten
times over, each copy's seqs, times and slbas shifted past the previous
one so that the join finds no copy alike."""

import os
import re
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "formats"))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))
from fwgen import Workload, write_agent_jsonl  # noqa: E402
from hmb_trace.format import RECORD_HDR  # noqa: E402

out, n = sys.argv[1], int(sys.argv[2])
w = Workload(n_cmds=n, seed=7, gc_every=0, unknown_every=0)
w.write(out + ".x1.bin")
write_agent_jsonl(out + ".x1.jsonl", w.host_commands(123456789))
nrec = len(w.kept)
span = w.kept[-1].ts - w.kept[0].ts + 1_000_000     # 1 ms apart
del w
dump = bytearray(open(out + ".x1.bin", "rb").read())
offs, fetch, o = [], [], 0
while o < len(dump):
    offs.append(o)
    _, _, _, op, _, _, plen, _, _ = RECORD_HDR.unpack_from(dump, o)
    if op == 0x100:             # cmd_fetch: slba at payload offset 16
        fetch.append(o + 32 + 16)
    o += (32 + plen + 7) & ~7
assert len(offs) == nrec
with open(out + ".x10.bin", "wb") as f:
    for k in range(10):
        f.write(dump)
        for o in offs:          # the next copy: seqs and times shifted
            h = list(RECORD_HDR.unpack_from(dump, o))
            h[1], h[2] = (h[1] + nrec) & 0xFFFFFFFF, h[2] + span
            RECORD_HDR.pack_into(dump, o, *h)
        for o in fetch:         # ... and slbas: the copies are not alike
            slba = struct.unpack_from("<Q", dump, o)[0]
            struct.pack_into("<Q", dump, o, slba + (1 << 40))
num = re.compile(rb'"(submit_ns|complete_ns|slba)": (\d+)')
lines = open(out + ".x1.jsonl", "rb").read().splitlines(keepends=True)
with open(out + ".x10.jsonl.tmp", "wb") as f:
    for k in range(10):
        if k == 0:
            f.writelines(lines)
            continue
        sh = {b"submit_ns": k * span, b"complete_ns": k * span,
              b"slba": k << 40}
        f.writelines(num.sub(lambda m: b'"%s": %d' % (
            m.group(1), int(m.group(2)) + sh[m.group(1)]), l) for l in lines)
os.rename(out + ".x10.jsonl.tmp", out + ".x10.jsonl")
