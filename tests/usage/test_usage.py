#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Every tool reports a bad command line the same way (TAP).

usage: test_usage.py BINDIR

Every installed tool and every command of it is here (mk/install.mk's
tools, python3 -m hmb_trace of the Python package, and the build tree's
hmb-cmdgen), each with an unknown option, a missing argument, a bad
number and an extra argument where it takes them.  Each bad invocation
must exit 2, print nothing on stdout and exactly one line on stderr:
PROG: [SUB: ]WHAT (try 'PROG [SUB ]--help')  naming what was wrong.
None of them touches a device or a file: the tools refuse the
command line before they open anything.
"""

import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "formats"))
from tap import Tap, run  # noqa: E402

TOP = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
DUMP = os.path.join(TOP, "docs", "test-vectors", "v1", "dump-basic.bin")
PY = "python3 -m hmb_trace"

# (tool, subcommand the line names or None, argv, a word the line must hold)
CASES = [
    ("hmb-trace-daemon", None, ["--bogus"], "'--bogus'"),
    ("hmb-trace-daemon", None, ["-Z"], "'-Z'"),
    ("hmb-trace-daemon", None, ["-r", "x", "-o"], "'-o'"),
    ("hmb-trace-daemon", None, ["-r", "x", "-o", "y", "--batch-bytes"],
     "'--batch-bytes'"),
    ("hmb-trace-daemon", None, ["-r", "x", "-o", "y", "--batch-bytes", "12"],
     "--batch-bytes"),
    ("hmb-trace-daemon", None, ["-r", "x", "-o", "y", "--fsync", "often"],
     "'often'"),
    ("hmb-trace-daemon", None, ["-r", "x", "-o", "y", "extra"], "'extra'"),
    ("hmb-trace-daemon", None, ["-o", "y"], "--ring-file"),
    ("hmb-trace-daemon", None, ["--log-format", "json", "--bogus"],
     "'--bogus'"),
    ("hmb-trace-daemon", None, ["--once=1"], "'--once'"),
    ("hmb-trace-daemon", None, ["-r", "x", "--snapshot-on", "SIGINT",
                                "--snapshot-dir", "d"], "'SIGINT'"),
    ("hmb-trace-daemon", None, ["-r", "x", "--snapshot-on", "SIGUSR1",
                                "--snapshot-dir", "d", "--window-mb", "0"],
     "--window-mb"),
    ("hmb-trace-daemon", None, ["-r", "x", "-o", "y", "--holdoff", "5"],
     "--snapshot-on"),
    ("hmb-fwsim", None, ["--bogus"], "'--bogus'"),
    ("hmb-fwsim", None, ["-Z"], "'-Z'"),
    ("hmb-fwsim", None, ["-r", "x", "--rate"], "'--rate'"),
    ("hmb-fwsim", None, ["-r", "x", "--rate", "-5"], "'-5'"),
    ("hmb-fwsim", None, ["-r", "x", "--ring-size", "5000"], "--ring-size"),
    ("hmb-fwsim", None, ["-r", "x", "extra"], "'extra'"),
    ("hmb-fwsim", None, [], "--ring-file"),
    ("hmb-trace-agent", None, ["--bogus"], "'--bogus'"),
    ("hmb-trace-agent", None, ["-Zj"], "'-Z'"),
    ("hmb-trace-agent", None, ["-o"], "'-o'"),
    ("hmb-trace-agent", None, ["--top", "5000"], "--top"),
    ("hmb-trace-agent", None, ["--json=1"], "'--json'"),
    ("hmb-trace-agent", None, ["1", "2", "3"], "'3'"),
    ("hmb-trace-analyze", None, [], "command"),
    ("hmb-trace-analyze", None, ["frobnicate"], "'frobnicate'"),
    ("hmb-trace-analyze", None, ["help", "frobnicate"], "'frobnicate'"),
    ("hmb-trace-analyze", "stats", ["stats"], "FILE"),
    ("hmb-trace-analyze", "stats", ["stats", "--bogus", DUMP], "'--bogus'"),
    ("hmb-trace-analyze", "stats", ["stats", "-Z", DUMP], "'-Z'"),
    ("hmb-trace-analyze", "stats", ["stats", DUMP, "--max-gaps"],
     "'--max-gaps'"),
    ("hmb-trace-analyze", "stats", ["stats", "--max-gaps", "x", DUMP], "'x'"),
    ("hmb-trace-analyze", "stats", ["stats", "--no-meta=1", DUMP],
     "'--no-meta'"),
    ("hmb-trace-analyze", "decode", ["decode", "--format", "xml", DUMP],
     "'xml'"),
    ("hmb-trace-analyze", "decode", ["decode", DUMP, "--meta"], "'--meta'"),
    ("hmb-trace-analyze", "convert", ["convert", "--to", "xx", DUMP, "o"],
     "'xx'"),
    ("hmb-trace-analyze", "convert", ["convert", DUMP], "OUT"),
    ("hmb-trace-analyze", "correlate", ["correlate", DUMP], "HOST_EVENTS"),
    ("hmb-trace-analyze", "correlate", ["correlate", "-f"], "'-f'"),
    ("hmb-trace-analyze", "report", ["report", DUMP], "-o"),
    ("hmb-trace-analyze", "export",
     ["export", "--to", "mysql", "http://127.0.0.1:1", DUMP], "'mysql'"),
    ("hmb-trace-analyze", "pel", ["pel"], "FILE"),
    ("hmb-trace-analyze", "pel", ["pel", "--bogus", DUMP], "'--bogus'"),
    ("hmb-trace-analyze", "pel", ["pel", "--save", "x", DUMP], "--save"),
    ("hmb-trace-analyze", "pel", ["pel", "--device"], "'--device'"),
    ("hmb-trace-daemon", None, ["-r", "x", "-o", "y", "--idle-max-ms", "x"],
     "'x'"),
    ("hmb-trace-daemon", None, ["-r", "x", "-o", "y", "--file-mode", "999"],
     "'999'"),
    ("hmb-trace-daemon", None, ["-r", "x", "--snapshot-on", "SIGUSR1",
                                "--snapshot-dir", "d", "--max-snapshots",
                                "many"], "'many'"),
    ("hmb-trace-daemon", None, ["-r", "x", "-o", "y", "--snapshot-on",
                                "SIGUSR1", "--snapshot-dir", "d"],
     "--snapshot-on"),
    ("hmb-trace-daemon", None, ["-r", "x", "-d", "y", "-o", "z"],
     "--device"),
    ("hmb-fwsim", None, ["-r", "x", "--ring-size", "big"], "'big'"),
    ("hmb-trace-agent", None, ["--top", "many"], "'many'"),
    ("hmb-trace-agent", None, ["--mode", "pci"], "'pci'"),
    ("hmb-trace-analyze", None, ["--bogus"], "'--bogus'"),
    ("hmb-trace-analyze", "stats", ["stats", DUMP, "extra"], "FILE"),
    ("hmb-trace-analyze", "decode", ["decode", "--bogus", DUMP],
     "'--bogus'"),
    ("hmb-trace-analyze", "decode", ["decode", "--dup-window", "x", DUMP],
     "'x'"),
    ("hmb-trace-analyze", "decode", ["decode", DUMP, "extra"], "FILE"),
    ("hmb-trace-analyze", "convert", ["convert", "--bogus", DUMP, "o"],
     "'--bogus'"),
    ("hmb-trace-analyze", "convert", ["convert", DUMP, "o", "--to"],
     "'--to'"),
    ("hmb-trace-analyze", "convert",
     ["convert", "--dup-window", "x", DUMP, "o.csv"], "'x'"),
    ("hmb-trace-analyze", "convert", ["convert", DUMP, "o.csv", "extra"],
     "OUT"),
    ("hmb-trace-analyze", "report", ["report", "--bogus", DUMP], "'--bogus'"),
    ("hmb-trace-analyze", "report", ["report", DUMP, "-o"], "'-o'"),
    ("hmb-trace-analyze", "report",
     ["report", "--top", "x", "-o", "r.html", DUMP], "'x'"),
    ("hmb-trace-analyze", "report", ["report", "-o", "r.html", DUMP, "extra"],
     "FILE"),
    ("hmb-trace-analyze", "correlate", ["correlate", "--bogus", DUMP, "h"],
     "'--bogus'"),
    ("hmb-trace-analyze", "correlate",
     ["correlate", "--top", "x", DUMP, "h"], "'x'"),
    ("hmb-trace-analyze", "correlate", ["correlate", DUMP, "h", "extra"],
     "HOST_EVENTS"),
    ("hmb-trace-analyze", "export",
     ["export", "--bogus", "--to", "clickhouse", "http://127.0.0.1:1", DUMP],
     "'--bogus'"),
    ("hmb-trace-analyze", "export",
     ["export", "--to", "clickhouse", "http://127.0.0.1:1", DUMP, "--day"],
     "'--day'"),
    ("hmb-trace-analyze", "export",
     ["export", "--to", "clickhouse", "--trace-id", "x",
      "http://127.0.0.1:1", DUMP], "'x'"),
    ("hmb-trace-analyze", "export",
     ["export", "--to", "clickhouse", "http://127.0.0.1:1", DUMP, "extra"],
     "URL"),
    ("hmb-trace-conform", None, ["--bogus", "/dev/nvme0"], "'--bogus'"),
    ("hmb-trace-conform", None, ["/dev/nvme0", "--json"], "'--json'"),
    ("hmb-trace-conform", None, [], "/dev/nvmeX"),
    ("hmb-trace-conform", None, ["/dev/nvme0", "/dev/nvme1"], "'/dev/nvme1'"),
    ("hmb-trace-conform", None, ["--io-secs", "x", "/dev/nvme0"], "'x'"),
    ("hmb-trace-conform", None, ["--ring-size", "1000", "/dev/nvme0"],
     "--ring-size"),
    ("hmb-cmdgen", None, ["--bogus"], "'--bogus'"),
    ("hmb-cmdgen", None, ["-n"], "'-n'"),
    ("hmb-cmdgen", None, ["-n", "x", "--dump", "d", "--host", "h"], "'x'"),
    ("hmb-cmdgen", None, ["-n", "5", "--dump", "d", "--host", "h", "extra"],
     "'extra'"),
    ("hmb-cmdgen", None, ["-n", "5"], "--dump"),
    (PY, None, [], "cmd"),
    (PY, None, ["frobnicate"], "'frobnicate'"),
    (PY, "stats", ["stats"], "file"),
    (PY, "stats", ["stats", "--bogus", DUMP], "--bogus"),
    (PY, "stats", ["stats", DUMP, "--meta"], "--meta"),
    (PY, "stats", ["stats", "--max-gaps", "x", DUMP], "'x'"),
    (PY, "stats", ["stats", "--no-meta=1", DUMP], "--no-meta"),
    (PY, "decode", ["decode", "--format", "xml", DUMP], "'xml'"),
    (PY, "decode", ["decode", "--dup-window", "x", DUMP], "'x'"),
    (PY, "decode", ["decode", DUMP, "extra"], "extra"),
]


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__.strip().splitlines()[2])
    bindir = sys.argv[1]
    t = Tap()
    for prog, sub, args, word in CASES:
        name = " ".join([prog] + [a if a != DUMP else "DUMP" for a in args])
        if prog == PY:
            cmd = [sys.executable, "-m", "hmb_trace"]
            env = dict(os.environ, PYTHONPATH=os.path.join(TOP, "python"))
        else:
            cmd, env = [os.path.join(bindir, prog)], None
        try:
            r = run(cmd + args, stdin=open(os.devnull), timeout=60, env=env)
        except Exception as e:  # a tool that runs instead of refusing
            t.ok(False, name, repr(e))
            continue
        err = r.stderr.decode(errors="replace").splitlines()
        head = prog + ": " + (sub + ": " if sub else "")
        tail = " (try '%s --help')" % " ".join(filter(None, (prog, sub)))
        line = err[0] if len(err) == 1 else None
        t.ok(r.returncode == 2 and not r.stdout and line is not None
             and re.fullmatch(re.escape(head) + r".+" + re.escape(tail), line)
             is not None and word in line[len(head):-len(tail)],
             "%s: exit 2, one line '%s... %s'" % (name, head, tail.strip()),
             "exit %d, stdout %d bytes, stderr:\n%s"
             % (r.returncode, len(r.stdout), "\n".join(err)))
    return t.done()


if __name__ == "__main__":
    sys.exit(main())
