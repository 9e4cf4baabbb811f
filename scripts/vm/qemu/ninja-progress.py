#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""ninja-progress.py QUIET T0: build-qemu's view of ninja's output on stdin.

Every tenth percent of ninja's "[DONE/TOTAL]" lines becomes one line
"build-qemu: [MmSSs] compiling P% (DONE/TOTAL)" (the time since T0, in
seconds since the epoch), none with QUIET 1; a line naming an error
(error, Error, FAILED) is passed on.  Everything goes to stderr, line by
line; ninja's full output is in build-qemu's log.
"""
import re
import sys
import time

PROGRESS = re.compile(rb"^\[[0-9]+/[0-9]+\]")
ERROR = re.compile(rb"error|Error|FAILED")
NUMBER = re.compile(rb"^[ \t]*[-+]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][-+]?[0-9]+)?")


def num(s):
    """The number a string starts with, as awk reads it (0 if none)."""
    m = NUMBER.match(s)
    return float(m.group(0)) if m else 0.0


def main():
    quiet = num(sys.argv[1].encode()) != 0
    t0 = int(num(sys.argv[2].encode()))
    err = sys.stderr.buffer
    next_pct = 0
    for line in sys.stdin.buffer:
        line = line[:-1] if line.endswith(b"\n") else line
        if PROGRESS.match(line):
            first = re.split(rb"[ \t]+", line, maxsplit=1)[0]
            parts = first[1:-1].split(b"/")
            done, total = num(parts[0]), num(parts[1])
            pct = int(done * 100 / total)
            if not quiet and pct >= next_pct:
                s = int(time.time()) - t0
                err.write(b"build-qemu: [%dm%02ds] compiling %d%% (%d/%d)\n"
                          % (int(s / 60), s % 60, pct, done, total))
                err.flush()
                next_pct = pct - pct % 10 + 10
        elif ERROR.search(line):
            err.write(line + b"\n")
            err.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
