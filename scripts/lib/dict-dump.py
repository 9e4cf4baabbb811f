#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""dict-dump.py FILE N: a dump of N records of the shipped dictionary's
events (share/hmb-events.dict), with payloads of their sizes, for
bench-analyze.sh's babeltrace2 comparison."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "python"))
from hmb_trace.writer import encode_record  # noqa: E402

n = int(sys.argv[2])
# (opcode, payload bytes) of the shipped events (share/hmb-events.dict)
evs = [(0x100, 24), (0x101, 6), (0x102, 8), (0x103, 8), (0x104, 8),
       (0x200, 8), (0x201, 8), (0x220, 2)]
with open(sys.argv[1], "wb") as f:
    buf = bytearray()
    for i in range(n):
        op, plen = evs[i % len(evs)]
        buf += encode_record(i, 10**9 + 500 * i, op, i % 4, 0,
                             bytes((i + k) & 255 for k in range(plen)))
        if len(buf) > 1 << 20:
            f.write(buf)
            buf = bytearray()
    f.write(buf)
