#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""TAP: scripts/lib/bench.py, the bench scripts' harness, on commands
whose results do not depend on the machine: medians printed the way the
awk ones they replaced printed them, run's exit status and its output
file, paired's lines, get, u64, median-round's choice of round, cpu's
reading of running processes, and hold's report on a file it could or
could not lock."""

import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "formats"))
from tap import Tap  # noqa: E402

BENCH = os.path.join(HERE, "..", "lib", "bench.py")


def bench(*args, stdin=""):
    p = subprocess.run([sys.executable, BENCH] + list(args), input=stdin,
                       capture_output=True, text=True)
    return p.returncode, p.stdout, p.stderr


def main():
    tap = Tap()
    for numbers, fmt, want in (("3\n1\n2\n", [], "2"),
                               ("3 1 2 10 ", [], "2.5"),
                               ("1024 1026", [], "1025"),
                               ("1.05 2.2", [], "1.625"),
                               ("0.010 0.020", ["--even-format", "%.6f"], "0.015000"),
                               ("0.500", ["--even-format", "%.6f"], "0.500")):
        rc, out, err = bench("median", *fmt, stdin=numbers)
        tap.eq((rc, out.strip()), (0, want),
               "median %s%s = %s" % (numbers.split(), " " + " ".join(fmt) if fmt else "", want))
    rc, _, _ = bench("median", stdin="")
    tap.ok(rc != 0, "median of nothing fails")
    with tempfile.TemporaryDirectory() as d:
        tf = os.path.join(d, "time")
        rc, out, _ = bench("run", tf, "sh", "-c", "echo out; exit 3")
        fields = open(tf).read().split()
        tap.ok(rc == 3 and out == "out\n" and len(fields) == 2 and
               all(f.isdigit() for f in fields),
               "run: the command's output and exit status, WALL_NS CPU_MS in the file",
               "rc %d, out %r, file %r" % (rc, out, fields))
        rc, _, _ = bench("run", tf, "sh", "-c", "kill -TERM $$")
        tap.eq(rc, 128 + 15, "run: a command killed by SIGTERM exits 143, as in a shell")
        rc, _, _ = bench("run", tf, "--rss", "true")
        fields = open(tf).read().split()
        tap.ok(rc == 0 and len(fields) == 3 and int(fields[2]) > 0,
               "run --rss: a third field, the peak RSS in KiB", fields)
        rc, out, err = bench("paired", "2", "t", "true", "--", "s", "sh", "-c", "echo x")
        lines = [json.loads(l) for l in out.splitlines()]
        tap.ok(rc == 0 and [l["label"] for l in lines] == ["t", "s"] and
               all(l["runs"] == 2 and l["rss_kib"] > 0 for l in lines),
               "paired: one line per label, in order, 2 runs each", out + err)
        rc, got, _ = bench("get", out, "s", "runs")
        tap.eq(got.strip(), "2", "get: a label's key")
        rc, _, err = bench("paired", "1", "f", "false")
        tap.ok(rc != 0 and "false failed" in err, "paired: a failing command fails", err)
        f = os.path.join(d, "hdr")
        with open(f, "wb") as h:
            h.write(bytes(16) + (1234567890123).to_bytes(8, "little"))
        rc, got, _ = bench("u64", f, "16")
        tap.eq(got.strip(), "1234567890123", "u64: a little-endian u64 at an offset")
        rounds = os.path.join(d, "rounds")
        with open(rounds, "w") as r:
            r.write("1 secs=10\n1 ratio=0.9\n1 other=5\n2 ratio=0.7\n"
                    "3 ratio=1.2\n4 ratio=n/a\n")
        rc, got, _ = bench("median-round", rounds, "ratio")
        tap.eq((rc, got.strip()), (0, "2"),
               "median-round: of 4 rounds the lower middle, what is no number first")
        with open(rounds, "a") as r:
            r.write("5 ratio=1.0\n")
        rc, got, _ = bench("median-round", rounds, "ratio")
        tap.eq((rc, got.strip()), (0, "1"), "median-round: of 5 rounds the middle")
        rc, got, err = bench("median-round", rounds, "none")
        tap.ok(rc != 0 and "no none= line" in err, "median-round: no such key fails", err)
        # a child that has used at least 0.3 s of CPU (its own clock says
        # so), then waits on stdin
        burn = subprocess.Popen(
            [sys.executable, "-c",
             "import sys, time\n"
             "while time.process_time() < 0.3: pass\n"
             "print('burnt', flush=True); sys.stdin.read()"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        idle = subprocess.Popen(["sleep", "60"])
        try:
            burn.stdout.readline()
            rc, b, _ = bench("cpu", str(burn.pid))
            rc2, i, _ = bench("cpu", str(idle.pid))
            rc3, both, _ = bench("cpu", str(burn.pid), str(idle.pid))
            tap.ok(rc == 0 and int(b) >= 250,
                   "cpu: a process that used 0.3 s of CPU reads >= 250 ms", b)
            tap.ok(rc2 == 0 and rc3 == 0 and int(both) == int(b) + int(i),
                   "cpu: of two processes the sum", (b, i, both))
        finally:
            burn.kill()
            idle.kill()
            burn.wait()
            idle.wait()
        rc, _, err = bench("cpu", str(idle.pid))
        tap.ok(rc != 0 and "no process" in err, "cpu: a process that is gone fails", err)
        ready = os.path.join(d, "ready")
        p = subprocess.Popen([sys.executable, BENCH, "hold", ready, f])
        try:
            for _ in range(600):
                if os.path.exists(ready) and os.path.getsize(ready):
                    break
                if p.poll() is not None:
                    break
                try:
                    p.wait(timeout=0.05)
                except subprocess.TimeoutExpired:
                    pass
            status = open(ready).read().strip() if os.path.exists(ready) else ""
            tap.ok(status == "held" or status.startswith("not held (mlock"),
                   "hold: reports held, or why mlock refused (%s)" % status)
            tap.ok(p.poll() is None, "hold: keeps running until killed")
        finally:
            p.kill()
            p.wait()
    return tap.done()


if __name__ == "__main__":
    sys.exit(main())
