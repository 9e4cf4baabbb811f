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


def check(obj, tag, n):
    """TAP lines for OBJ's programs, numbered after N; (n, bad)."""
    bad = 0
    try:
        dis = subprocess.run(["llvm-objdump", "-d", "--no-show-raw-insn", obj],
                             check=True, capture_output=True, text=True).stdout
    except (OSError, subprocess.CalledProcessError) as e:
        print("not ok %d - llvm-objdump -d %s: %s" % (n + 1, obj, e))
        return n + 1, 1
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
        n += 1
        if cycles:
            bad += 1
            print("not ok %d - %s%s: loop (back-edge %d -> %d)" % (n, tag, sec, cycles[0][0], cycles[0][1]))
        else:
            print("ok %d - %s%s: no loop (%d instructions)" % (n, tag, sec, len(ins)))

    return n, bad


n = bad = 0
for obj in sys.argv[1:]:
    tag = os.path.basename(obj) + " " if len(sys.argv) > 2 else ""
    n, b = check(obj, tag, n)
    bad += b
print("1..%d" % n)
sys.exit(1 if bad or not n else 0)
