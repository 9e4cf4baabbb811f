#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""TAP: scripts/check-vm-kernels on copies of docs/kernel.md: the current
table passes, a flipped cell, a missing or an extra row fail, the rewrite
restores the table, and a document without the markers cannot be read."""

import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "formats"))
from tap import Tap  # noqa: E402

CHECK = os.path.join(HERE, "..", "check-vm-kernels")
DOC = os.path.join(HERE, "..", "..", "docs", "kernel.md")


def check(path, *extra):
    p = subprocess.run([CHECK, "--doc", path] + list(extra),
                       capture_output=True, text=True)
    return p.returncode, p.stdout + p.stderr


def main():
    tap = Tap()
    orig = open(DOC, encoding="utf-8").read()
    row = "| `kmod` | `kernel/vm-suite/kmod.sh` | yes | yes | yes |\n"
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "kernel.md")

        def variant(text):
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)

        variant(orig)
        rc, out = check(path, "--check")
        tap.ok(rc == 0 and "not ok" not in out, "the committed table passes", out)

        tap.ok(row in orig, "the table has kmod on all three kernels")
        bad = {
            "a flipped cell": orig.replace(row, row.replace("| yes |\n", "| no |\n")),
            "a missing row": orig.replace(row, ""),
            "an extra row": orig.replace(row, row + row.replace("kmod", "kmod2")),
        }
        for what, text in bad.items():
            variant(text)
            rc, out = check(path, "--check")
            tap.ok(rc == 1 and "not ok 2" in out, what + " fails", out)
            rc, out = check(path)
            tap.ok(rc == 0 and open(path, encoding="utf-8").read() == orig,
                   "the rewrite restores the table after " + what, out)

        variant(orig.replace("<!-- vm-kernels:end -->", ""))
        rc, out = check(path, "--check")
        tap.ok(rc == 2, "a document without the end marker cannot be read", out)
    return tap.done()


if __name__ == "__main__":
    sys.exit(main())
