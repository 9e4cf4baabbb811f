#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""slow-copy.py FILE OUT: copy FILE to OUT (a FIFO) in 200 pieces
10 ms apart, so that rows are still flowing when t01-export.sh kills
the server the exporter talks to."""

import os, sys, time
out = open(sys.argv[2], "wb", buffering=0)
# The whole file in about 2 s, whatever its size.
chunk = max(4096, os.path.getsize(sys.argv[1]) // 200)
with open(sys.argv[1], "rb") as f:
    while True:
        b = f.read(chunk)
        if not b:
            break
        out.write(b)
        time.sleep(0.01)
