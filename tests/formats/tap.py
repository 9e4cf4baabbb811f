# SPDX-License-Identifier: Apache-2.0
"""Minimal TAP output for the formats tests."""

import subprocess
import sys


class Tap:
    def __init__(self):
        self.n = 0
        self.failed = 0

    def ok(self, cond, what, diag=None):
        self.n += 1
        print("%s %d - %s" % ("ok" if cond else "not ok", self.n, what))
        if not cond:
            self.failed += 1
            if diag is not None:
                for line in str(diag).splitlines()[:40]:
                    print("#   " + line)
        sys.stdout.flush()
        return bool(cond)

    def eq(self, got, want, what):
        return self.ok(got == want, what, "got:  %r\nwant: %r" % (got, want))

    def skip(self, what, why):
        self.n += 1
        print("ok %d - %s # SKIP %s" % (self.n, what, why))
        sys.stdout.flush()

    def done(self):
        print("1..%d" % self.n)
        return 1 if self.failed else 0


def run(cmd, **kw):
    return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          **kw)
