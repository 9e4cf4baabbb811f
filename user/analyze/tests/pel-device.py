#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""TAP tests of `hmb-trace-analyze pel --device`: the log read from a
controller by admin passthrough in the specification's protocol.

usage: pel-device.py BINARY

The controller is nvme-getlog-shim.so (pelgen.build_shim): preloaded, it
answers the tool's Get Log Page commands on /dev/null from a log file
written here, logs each one, and fails the step it is told to.
"""

import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
sys.path.insert(0, os.path.join(TOP, "tests", "formats"))
sys.path.insert(0, HERE)
from tap import Tap  # noqa: E402
import pelgen as pg  # noqa: E402

PROG = "hmb-trace-analyze"
T = Tap()
BIN = sys.argv[1]
WORK = tempfile.mkdtemp(prefix="hmb-pel-device.")


def run(shim, log_file, *args, **extra):
    p = subprocess.run([BIN, "pel"] + list(args),
                       env=pg.shim_env(shim, log_file, **extra),
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    err = [x for x in p.stderr.decode().splitlines()
           if not x.startswith("shim: ")]
    return p.returncode, p.stdout, err, pg.shim_cmds(p.stderr)


def tests(shim):
    ev, _ = pg.all_types()
    data = pg.log(ev + [ev[0]] * 8, pad=1)     # 6411 bytes: two pages
    f = os.path.join(WORK, "pel.bin")
    with open(f, "wb") as fh:
        fh.write(data)
    saved = os.path.join(WORK, "saved.bin")
    rc, out, err, cmds = run(shim, f, "--device", "/dev/null", "--save",
                             saved, "-j")
    T.eq((rc, err), (0, []), "--device: exit 0, nothing on stderr")
    T.eq(cmds, [(1, 0, 512), (0, 0, 4096), (0, 4096, 2316), (2, 0, 512)],
         "establish (LSP 1, the header), read %d bytes a page at a time "
         "(LSP 0, the last rounded to dwords), release (LSP 2)" % len(data))
    want = subprocess.run([BIN, "pel", "-j", f], stdout=subprocess.PIPE)
    got = [json.loads(x) for x in out.splitlines()]
    bare = [{k: v for k, v in x.items()
             if k not in ("host_clock", "host_time_ms", "host_monotonic_ns",
                          "host_bound_ns", "host_place")} for x in got]
    T.ok(bare == [json.loads(x) for x in want.stdout.splitlines()] and
         len(got) == 23, "the same 22 event lines as the file decoded, "
         "with the host clock's keys", out.decode()[:300])
    with open(saved, "rb") as fh:
        T.eq(fh.read(), data, "--save wrote the log's bytes")
    saved_clock(shim, f, saved)

    clock(shim, f)

    rc, out, err, cmds = run(shim, f, "--device", "/dev/null",
                             PEL_SHIM_FAIL_LSP="1")
    T.eq((rc, out, err, cmds),
         (1, b"", ["%s: /dev/null: Get Log Page 0Dh (establish context): "
                   "NVMe status 0x002 (type 0, code 0x02)" % PROG],
          [(1, 0, 512)]),
         "establish refused: its status, nothing read, nothing to release")
    rc, out, err, cmds = run(shim, f, "--device", "/dev/null",
                             PEL_SHIM_FAIL_LSP="0")
    T.eq((rc, err, [c[0] for c in cmds]),
         (1, ["%s: /dev/null: Get Log Page 0Dh (read): NVMe status 0x002 "
              "(type 0, code 0x02)" % PROG], [1, 0, 2]),
         "read refused: its status, the context released all the same")
    rc, out, err, cmds = run(shim, f, "--device", "/dev/null",
                             PEL_SHIM_FAIL_LSP="2")
    T.eq((rc, out, err, [c[0] for c in cmds]),
         (1, b"", ["%s: /dev/null: Get Log Page 0Dh (release context): "
                   "NVMe status 0x002 (type 0, code 0x02)" % PROG],
          [1, 0, 0, 2]), "release refused: said, nothing printed")
    bad = bytearray(data)
    bad[8:16] = (1 << 40).to_bytes(8, "little")
    with open(f, "wb") as fh:
        fh.write(bad)
    rc, out, err, cmds = run(shim, f, "--device", "/dev/null")
    T.eq((rc, err, [c[0] for c in cmds]),
         (1, ["%s: /dev/null: byte 8: total log length 1099511627776: not "
              "in 512..268435456" % PROG], [1, 2]),
         "TLL of 1 TiB: refused before reading, the context released")
    rc, _, err, cmds = run(shim, f, "--device", "/dev/null", f)
    T.eq((rc, cmds), (2, []), "--device with a FILE: usage error")
    rc, _, err, cmds = run(shim, f, "--save", saved, f)
    T.eq((rc, err), (2, ["%s: pel: --save: only with --device (try '%s pel "
                         "--help')" % (PROG, PROG)]),
         "--save without --device: usage error")


def saved_clock(shim, f, saved):
    """--save also writes FILE.clock, the clock reading: the saved log
    read later is placed on the host's clock exactly as the device read
    placed it."""
    # the controller's clock 25 s after the log's first stamp: its events
    # are seconds old, after the host's boot
    skew = pg.TS0 + 25000 - int(time.time() * 1000)
    rc, out, err, _ = run(shim, f, "--device", "/dev/null", "--save",
                          saved, "-j", PEL_SHIM_TS_SKEW_MS=str(skew))
    dev = [json.loads(x) for x in out.splitlines()]
    kv = {}
    if os.path.exists(saved + ".clock"):
        with open(saved + ".clock") as fh:
            lines = fh.read().splitlines()
        kv = dict(x.split("=", 1) for x in lines[1:])
        T.ok(lines[0] == "hmb_pel_clock=1" and kv["device"] == "/dev/null"
             and int(kv["monotonic_before_ns"]) <=
             int(kv["monotonic_after_ns"]) and
             int(kv["ctrl_timestamp"]) >> 49 == 1,
             "FILE.clock: the controller's timestamp between two host "
             "monotonic reads", lines)
    else:
        T.ok(False, "--save wrote FILE.clock")
    rc2, out2, err2, _ = run(shim, f, "-j", saved)
    got = [json.loads(x) for x in out2.splitlines()]
    T.ok(rc == 0 and rc2 == 0 and got == dev and len(got) == 23 and
         got[0]["host_clock"]["first_event"] == 3 and
         [x["host_monotonic_ns"] is None for x in got[1:]] ==
         [True] * 3 + [False] * 19,
         "pel FILE with FILE.clock: the same lines as the device read, "
         "host_monotonic_ns from event 3 on", (err, err2, got[:2]))
    mono = got[4]["host_monotonic_ns"] if len(got) > 4 else None
    mid = (int(kv.get("monotonic_before_ns", 0)) +
           int(kv.get("monotonic_after_ns", 0))) // 2
    ctrl = int(kv.get("ctrl_timestamp", 0)) & ((1 << 48) - 1)
    T.ok(mono is not None and
         mono == mid - (ctrl - got[4]["timestamp_ms"]) * 10**6,
         "event 4 on host monotonic: M - (controller - event) ms",
         (mono, mid, ctrl))
    os.unlink(saved + ".clock")
    rc, out, err, _ = run(shim, f, "--device", "/dev/null", "--save",
                          saved, PEL_SHIM_NO_TS="1")
    T.ok(rc == 0 and not os.path.exists(saved + ".clock"),
         "no Timestamp feature: no FILE.clock (nothing to place it with)")


def clock(shim, f):
    """The controller's Timestamp, 250 s behind the host's clock: events
    on its present clock (from the last power-on/reset or timestamp
    change, #3 here) get the host's time."""
    rc, out, err, _ = run(shim, f, "--device", "/dev/null", "-j",
                          PEL_SHIM_TS_SKEW_MS="-250000")
    ls = [json.loads(x) for x in out.splitlines()]
    hc = ls[0].get("host_clock") or {}
    T.ok(rc == 0 and hc.get("first_event") == 3 and
         0 < hc.get("bound_ms", 0) < 100 and
         abs(hc.get("offset_ms", 0) - 250000) <= hc.get("bound_ms", 0) + 1,
         "host clock: controller + 250000 ms within its bound (%r), from "
         "event 3 on" % hc, err)
    T.eq([x["host_time_ms"] for x in ls[1:]],
         [None] * 3 + [x["timestamp_ms"] + hc.get("offset_ms", 0)
                       for x in ls[4:]],
         "host_time_ms: null before event 3, controller time + offset "
         "after")
    rc, text, err, _ = run(shim, f, "--device", "/dev/null",
                           PEL_SHIM_TS_SKEW_MS="-250000")
    T.ok(rc == 0 and b"(host 2023-11-14T22:17:34" in text and
         b"#2 @1094 2023-11-14T22:13:23.000Z ctrl" in text,
         "text: the host's time on the events that have one", text[:900])
    rc, out, err, _ = run(shim, f, "--device", "/dev/null", "-j",
                          PEL_SHIM_NO_TS="1")
    ls = [json.loads(x) for x in out.splitlines()]
    T.ok(rc == 0 and ls[0]["host_clock"] is None and
         all(x["host_time_ms"] is None for x in ls[1:]),
         "no Timestamp feature: host_clock and host_time_ms null, exit 0")
    rc, text, err, _ = run(shim, f, "--device", "/dev/null",
                           PEL_SHIM_NO_TS="1")
    T.ok(b"host clock: unknown (Get Features Timestamp: NVMe status 0x002)"
         in text, "text: the host clock unknown, and why")
    rc, out, _, _ = run(shim, f, "-j", f)
    T.ok(b"host_clock" not in out and b"host_time_ms" not in out,
         "a FILE: no host clock keys (nothing relates its clock to ours)")


def main():
    print("TAP version 13")
    shim, why = pg.build_shim(WORK)
    if T.ok(shim, "the shim builds (gcc)", why):
        try:
            tests(shim)
        except Exception as e:      # a crash in a test is a failure
            import traceback
            T.ok(False, "tests raised %s" % e, traceback.format_exc())
    subprocess.run(["rm", "-rf", WORK])
    return T.done()


if __name__ == "__main__":
    sys.exit(main())
