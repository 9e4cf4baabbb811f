#!/usr/bin/env python3
# SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
# check-no-loops.py OBJ...: every program in each BPF object OBJ is
# loop-free (TAP; with several objects each line names its object).  The
# agent must load on Debian 12's Linux 6.1, whose verifier refuses some
# loop shapes that the build machine's newer kernel accepts (seen:
# "back-edge from insn 444 to 445"); the build machine cannot run the 6.1
# verifier, so this looks for cycles in each program's control-flow graph
# as llvm-objdump shows it.
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "tests", "formats"))
from tap import Tap  # noqa: E402

T = Tap()


def check(obj, tag):
    """A TAP line for each of OBJ's programs."""
    try:
        dis = subprocess.run(["llvm-objdump", "-d", "--no-show-raw-insn", obj],
                             check=True, capture_output=True, text=True).stdout
    except (OSError, subprocess.CalledProcessError) as e:
        T.ok(False, "llvm-objdump -d %s: %s" % (obj, e))
        return
    secs = {}
    sec = None
    for line in dis.splitlines():
        m = re.match(r"Disassembly of section (\S+):", line)
        if m:
            sec = m.group(1)
            secs[sec] = []
            continue
        m = re.match(r"\s*(\d+):\s*(.*)", line)
        if m and sec:
            secs[sec].append((int(m.group(1)), m.group(2)))
    for sec, ins in secs.items():
        if not ins or sec.startswith(".") and not sec.startswith(".text"):
            continue
        succ = {}
        for i, (a, t) in enumerate(ins):
            nxt = ins[i + 1][0] if i + 1 < len(ins) else None
            m = re.search(r"goto ([+-]\d+)", t)
            if t.startswith("exit"):
                s = []
            elif m:
                s = [a + 1 + int(m.group(1))]
                if t.startswith("if "):
                    s.append(nxt)
            else:
                s = [nxt]
            succ[a] = [x for x in s if x is not None]
        color, cycles = {}, []
        stack = [(ins[0][0], 0)]
        color[ins[0][0]] = 1
        while stack:
            node, k = stack[-1]
            ss = succ.get(node, [])
            if k < len(ss):
                stack[-1] = (node, k + 1)
                w = ss[k]
                if w not in succ:
                    continue
                c = color.get(w, 0)
                if c == 1:
                    cycles.append((node, w))
                elif c == 0:
                    color[w] = 1
                    stack.append((w, 0))
            else:
                color[node] = 2
                stack.pop()
        if cycles:
            T.ok(False, "%s%s: loop (back-edge %d -> %d)" % (tag, sec, cycles[0][0], cycles[0][1]))
        else:
            T.ok(True, "%s%s: no loop (%d instructions)" % (tag, sec, len(ins)))


for obj in sys.argv[1:]:
    check(obj, os.path.basename(obj) + " " if len(sys.argv) > 2 else "")
if not T.n:
    T.ok(False, "programs to check (no BPF object named, or none in it)")
sys.exit(T.done())
