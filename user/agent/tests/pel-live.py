#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""TAP test of `hmb-trace-agent --pel DEV`: the Persistent Event Log in
the live report.

usage: pel-live.py AGENT

Root (BPF, losetup).  The agent traces a loop device (host-only mode) and
reads the log through nvme-getlog-shim.so (user/analyze/tests), preloaded:
Get Log Page 0Dh is answered from a file written here, Get Features
Timestamp with the host's CLOCK_REALTIME.  The log holds two events at
the start; after the I/O, a thermal excursion stamped at a moment a
write was in flight is added, and the agent stopped (it reads the log at
exit too).  The agent must report that one only, placed on host
CLOCK_MONOTONIC, with commands around it that do meet its time +- bound.
"""

import json
import os
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
sys.path.insert(0, os.path.join(TOP, "tests", "formats"))
sys.path.insert(0, os.path.join(TOP, "user", "analyze", "tests"))
from tap import Tap  # noqa: E402
import pelgen as pg  # noqa: E402

T = Tap()
AGENT = sys.argv[1]


def main(work):
    print("TAP version 13")
    if os.geteuid() != 0:
        print("1..0 # SKIP needs root (BPF, losetup)")
        return 0
    shim, why = pg.build_shim(work)
    if not T.ok(shim, "the shim builds", why):
        return T.done()
    now = int(time.time() * 1000)
    old = [pg.event(0x04, pg.ts(now - 60000), pg.fw(b"FW11") + bytes(36)),
           pg.event(0x0D, pg.ts(now - 30000), bytes([1, 70]))]
    log = os.path.join(work, "pel.bin")
    with open(log, "wb") as f:
        f.write(pg.log(old))
    img = os.path.join(work, "img")
    with open(img, "wb") as f:
        f.truncate(64 << 20)
    loop = subprocess.run(["losetup", "-f", "--show", "--direct-io=on",
                           img], capture_output=True, text=True)
    if not T.ok(loop.returncode == 0, "losetup", loop.stderr):
        return T.done()
    dev = loop.stdout.strip()
    out = os.path.join(work, "out.jsonl")
    env = pg.shim_env(shim, log)
    try:
        a = subprocess.Popen([AGENT, "-d", os.path.basename(dev),
                              "--per-command", "-j", "--pel", "/dev/null",
                              "-o", out, "1"], env=env,
                             stderr=subprocess.PIPE)
        for _ in range(100):
            if os.path.exists(out) and '"type":"start"' in open(out).read():
                break
            time.sleep(0.1)
        # the event's stamp: a moment a write was in flight (the device's
        # inflight count read non-zero within 50 us), so that its time
        # +- bound must meet at least one command however the load
        # spaced them
        dd = subprocess.Popen(["dd", "if=/dev/zero", "of=" + dev, "bs=4k",
                               "count=12000", "oflag=direct"],
                              stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
        infl = "/sys/block/%s/inflight" % os.path.basename(dev)
        mid = None
        time.sleep(0.3)
        while mid is None and dd.poll() is None:
            t0 = time.time()
            with open(infl) as f:
                busy = sum(map(int, f.read().split()))
            t1 = time.time()
            if busy and t1 - t0 < 50e-6:
                mid = int(t0 * 1000)
        dd.wait()
        if not T.ok(mid is not None, "a moment with a write in flight"):
            a.send_signal(signal.SIGINT)
            a.communicate(timeout=30)
            return T.done()
        with open(log, "wb") as f:
            f.write(pg.log(old + [pg.event(0x0D, pg.ts(mid),
                                           bytes([3, 75]))]))
        # stopped only now: the agent reads the log once more at exit, so
        # the event is read however long dd took on a loaded machine
        a.send_signal(signal.SIGINT)
        _, err = a.communicate(timeout=30)
    finally:
        subprocess.run(["losetup", "-d", dev])
    err = [x for x in err.decode().splitlines() if not x.startswith("shim")
           and "host-only" not in x]
    lines = [json.loads(x) for x in open(out)]
    pel = [x for x in lines if x["type"] == "pel"]
    cmds = [x["cmd"] for x in lines if x["type"] == "cmd"]
    T.ok(a.returncode == 0 and not err and len(cmds) >= 11000,
         "the agent ran, %d commands" % len(cmds), err)
    T.ok(len(pel) == 1 and pel[0]["index"] == 2 and
         pel[0]["event"] == "thermal_excursion" and
         pel[0]["place"] == "placed" and
         pel[0]["fields"] == "over_temp=3 threshold=75",
         "one pel line: the event added while it ran (the two at the "
         "start are not new)", pel)
    if not pel:
        return T.done()
    p = pel[0]
    t, b = p["host_ns"], p["bound_ns"]
    around = [c for c in cmds if c["submit_ns"] <= t + b and
              c["complete_ns"] + b >= t]
    listed = p["commands"]
    T.ok(p["commands_overlapped"] == len(around) >= 1 and
         len(listed) == min(16, len(around)) and
         all(c["submit_ns"] <= t + b and c["complete_ns"] + b >= t
             for c in listed) and b < 10**7,
         "its time +- bound (%.3f ms) meets %d of the run's commands, as "
         "the agent says" % (b / 1e6, len(around)),
         (p["commands_overlapped"], len(around), b))
    first = min(c["submit_ns"] for c in cmds)
    last = max(c["complete_ns"] for c in cmds)
    T.ok(first - b <= t <= last + b,
         "placed inside the I/O it was stamped in the middle of")
    return T.done()


if __name__ == "__main__":
    w = tempfile.mkdtemp(prefix="hmb-agent-pel.")
    try:
        rc = main(w)
    except Exception:
        import traceback
        T.ok(False, "the test raised", traceback.format_exc())
        rc = T.done()
    subprocess.run(["rm", "-rf", w])
    sys.exit(rc)
