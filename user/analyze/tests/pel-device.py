#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""TAP tests of `hmb-trace-analyze pel --device`: the log read from a
controller by admin passthrough in the specification's protocol.

usage: pel-device.py BINARY

The controller is nvme-getlog-shim.so (pelgen.build_shim): preloaded, it
answers the tool's Get Log Page commands on /dev/null from a log file
written here, logs each one, and fails the step it is told to.
"""

import os
import subprocess
import sys
import tempfile

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
    T.ok(out == want.stdout and len(out.splitlines()) == 23,
         "the same 22 event lines as the file decoded",
         out.decode()[:300])
    with open(saved, "rb") as fh:
        T.eq(fh.read(), data, "--save wrote the log's bytes")

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
