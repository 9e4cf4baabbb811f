#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""TAP: make check T=PATTERN's parts on a temporary results directory:
tap-want's globs, tap-run skipping the suites T does not name and failing
a suite named outside its directory's prefixes, tap-summary counting only
the named suites, and check-dir entering only the directories whose
prefixes T can match."""

import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "formats"))
from tap import Tap  # noqa: E402

SCRIPTS = os.path.join(HERE, "..")


def sh(args, env, cwd=None):
    # The make check running this test may have set them for itself.
    e = {k: v for k, v in os.environ.items() if k not in
         ("HMB_TEST_ONLY", "HMB_SUITE_PREFIXES", "HMB_TEST_RESULTS")}
    e.update(env)
    return subprocess.run([os.path.join(SCRIPTS, args[0])] + args[1:],
                          env=e, cwd=cwd, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True)


def main():
    t = Tap()
    for only, name, want in [
            ("", "lib-t_live", True),
            ("lib-t_live", "lib-t_live", True),
            ("lib-t_live", "lib-asan-t_live", False),
            ("formats-*", "formats-ctf-asan", True),
            ("formats-*", "fleet-export", False),
            ("analyze* usage-errors*", "usage-errors-asan", True),
            ("*-asan", "analyze-asan", True),
            ("lib-t_[lu]*", "lib-t_util", True),
            ("lib-t_[lu]*", "lib-t_dict", False)]:
        r = sh(["tap-want", name], {"HMB_TEST_ONLY": only})
        t.eq(r.returncode == 0, want, "tap-want %s with T=%s: %s"
             % (name, only or "(none)", "runs" if want else "skipped"))

    with tempfile.TemporaryDirectory() as d:
        res = os.path.join(d, "res")
        mark = os.path.join(d, "ran")
        env = {"HMB_TEST_RESULTS": res, "HMB_TEST_ONLY": "a-*"}
        r = sh(["tap-run", "b-one", "--", "touch", mark], env)
        t.ok(r.returncode == 0 and not os.path.exists(mark)
             and not os.path.exists(os.path.join(res, "b-one.tap")),
             "tap-run: a suite T does not name is not run, no TAP file")
        r = sh(["tap-run", "a-one", "--", "sh", "-c", "echo ok 1 - x"], env)
        t.ok(open(os.path.join(res, "a-one.tap")).read() == "ok 1 - x\n",
             "tap-run: a suite T names runs")
        env = {"HMB_TEST_RESULTS": res, "HMB_SUITE_PREFIXES": "x- y-"}
        sh(["tap-run", "z-one", "--", "sh", "-c", "echo ok 1 - x"], env)
        tap = open(os.path.join(res, "z-one.tap")).read()
        t.ok("not ok - suite name z-one starts with none of x- y-" in tap,
             "tap-run: a suite named outside its directory's prefixes fails",
             tap)
        sh(["tap-run", "y-one", "--", "sh", "-c", "echo ok 1 - x"], env)
        t.eq(open(os.path.join(res, "y-one.tap")).read(), "ok 1 - x\n",
             "tap-run: a suite named with a prefix passes")
        r = sh(["tap-summary", res], {"HMB_TEST_ONLY": "a-* y-*"})
        t.ok(r.returncode == 0 and
             r.stdout.endswith("2 passed, 0 failed, 0 skipped\n"),
             "tap-summary: only the suites T names count (z-one's failure "
             "left out)", r.stdout)
        r = sh(["tap-summary", res], {"HMB_TEST_ONLY": ""})
        t.ok(r.returncode == 1 and "1 failed" in r.stdout,
             "tap-summary without T: every suite counts", r.stdout)

        # check-dir runs `make -C TOP/DIR check`: a directory that says so.
        top = os.path.join(SCRIPTS, "..")
        for only, prefixes, want in [
                ("lib-t_live", ["lib-"], True),
                ("lib-t_live", ["fwsim"], False),
                ("formats-*", ["formats-"], True),
                ("*-asan", ["kernel-"], True),
                ("fwsim*", ["fwsim"], True),
                ("fw", ["fwsim"], True),
                ("classic-t0[1-3]*", ["classic-", "usage-errors"], True),
                ("usage-errors", ["classic-", "make-missing-tools"], False)]:
            fake = tempfile.mkdtemp(dir=d)
            with open(os.path.join(fake, "Makefile"), "w") as f:
                f.write("check:\n\t@touch %s/entered\n" % fake)
            r = sh(["check-dir", os.path.relpath(fake, top)] + prefixes,
                   {"HMB_TEST_RESULTS": res, "HMB_TEST_ONLY": only,
                    "MAKEFLAGS": ""})
            got = os.path.exists(os.path.join(fake, "entered"))
            t.ok(r.returncode == 0 and got == want,
                 "check-dir with T=%s, prefixes %s: %s" %
                 (only, " ".join(prefixes), "entered" if want else "skipped"),
                 r.stdout + r.stderr)
        fake = tempfile.mkdtemp(dir=d)
        with open(os.path.join(fake, "Makefile"), "w") as f:
            f.write("check:\n\t@false\n")
        rel = os.path.relpath(fake, top)
        r = sh(["check-dir", rel, "p-"], {"HMB_TEST_RESULTS": res,
                                          "HMB_TEST_ONLY": "", "MAKEFLAGS": ""})
        log = os.path.join(res, "make-%s.tap" % rel.replace("/", "-"))
        t.ok(r.returncode == 1 and os.path.exists(log),
             "check-dir: a failing make is recorded as make-DIR.tap, exit 1",
             r.stdout + r.stderr)
    return t.done()


if __name__ == "__main__":
    sys.exit(main())
