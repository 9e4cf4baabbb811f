#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Every tool reports a bad command line the same way (TAP).

usage: test_usage.py BINDIR

Each bad invocation must exit 2, print nothing on stdout and exactly one
line on stderr:  PROG: [SUB: ]WHAT (try 'PROG [SUB ]--help')  naming what
was wrong.  None of them touches a device or a file: the tools refuse the
command line before they open anything.
"""

import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "formats"))
from tap import Tap, run  # noqa: E402

DUMP = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                    "docs", "test-vectors", "v1", "dump-basic.bin")

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
]


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__.strip().splitlines()[2])
    bindir = sys.argv[1]
    t = Tap()
    for prog, sub, args, word in CASES:
        name = " ".join([prog] + [a if a != DUMP else "DUMP" for a in args])
        try:
            r = run([os.path.join(bindir, prog)] + args,
                    stdin=open(os.devnull), timeout=60)
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
