#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""TAP: scripts/check-vm-kernels on copies of docs/kernel.md: the current
table passes, a flipped cell, a missing or an extra row, a stale list of
the HMB path's suites off 6.12 fail, the rewrite restores the table, and a
document without the markers cannot be read; its reasons() on made-up
headers: a suite off 6.12 without a vm-not-6.12 line, one on 6.12 or of
the debug kernel only with one, and a vm-not line for another series are
named."""

import importlib.machinery
import importlib.util
import os
import subprocess
import sys
import tempfile
from types import SimpleNamespace

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
    row = "| `kmod` | `kernel/vm-suite/kmod.sh` | no | yes | yes | yes |  |\n"
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "kernel.md")

        def variant(text):
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)

        variant(orig)
        rc, out = check(path, "--check")
        tap.ok(rc == 0 and "not ok" not in out, "the committed table passes", out)

        tap.ok(row in orig, "the table has kmod on all three kernels")
        listed = "do not boot 6.12 in `make check`: none."
        tap.ok(listed in orig,
               "the list of the HMB path's suites off 6.12 says none")
        bad = {
            "a flipped cell": orig.replace(row, row.replace("| yes |  |\n", "| no |  |\n")),
            "a missing row": orig.replace(row, ""),
            "an extra row": orig.replace(row, row + row.replace("kmod", "kmod2")),
            "a stale list of the HMB path's suites off 6.12":
                orig.replace(listed, listed.replace("none", "`hmb-daemon`"), 1),
        }
        for what, text in bad.items():
            variant(text)
            rc, out = check(path, "--check")
            tap.ok(rc == 1 and "not ok 3" in out, what + " fails", out)
            rc, out = check(path)
            tap.ok(rc == 0 and open(path, encoding="utf-8").read() == orig,
                   "the rewrite restores the table after " + what, out)

        variant(orig.replace("<!-- vm-kernels:end -->", ""))
        rc, out = check(path, "--check")
        tap.ok(rc == 2, "a document without the end marker cannot be read", out)

    loader = importlib.machinery.SourceFileLoader("cvk", CHECK)
    spec = importlib.util.spec_from_loader("cvk", loader)
    cvk = importlib.util.module_from_spec(spec)
    loader.exec_module(cvk)

    def suite(not_on=None, kernels=("debian", "debug")):
        return SimpleNamespace(not_on=not_on or {}, kernels=list(kernels), nvme_hmb=None)

    reg = {"a": "a.sh", "b": "b.sh", "c": "c.sh", "d": "d.sh", "e": "e.sh"}
    boots = {"6.1": {"a", "b", "d", "e"}, "6.12": {"a"}, "debug": {"c"}}
    hdr = {"a": suite(), "b": suite({"6.12": "CI time"}), "c": suite(kernels=["debug"]),
           "d": suite({"6.12": "CI time"}), "e": suite({"6.12": "CI time"})}
    tap.ok(cvk.reasons(reg, boots, hdr) == [], "reasons where they belong: none named",
           cvk.reasons(reg, boots, hdr))
    hdr.update(a=suite({"6.12": "x"}), b=suite(), c=suite({"6.12": "x"}, ["debug"]),
               d=suite({"6.12": "CI time", "6.13": "x"}))
    bad = cvk.reasons(reg, boots, hdr)
    want = ["a: a vm-not-6.12 line, but it boots 6.12",
            "b: not on 6.12 and no vm-not-6.12 line says why",
            "c: a vm-not-6.12 line, but it is not a suite of the Debian kernels",
            "d: vm-not-6.13 (make check has no list for 6.13)"]
    tap.ok(bad == want, "a stray, a missing, a debug-only and another series' line are named",
           ["got: %s" % b for b in bad])
    return tap.done()


if __name__ == "__main__":
    sys.exit(main())
