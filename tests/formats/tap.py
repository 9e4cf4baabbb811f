# SPDX-License-Identifier: Apache-2.0
"""The project's TAP module for Python tests: ok / eq / skip / todo,
then done() for the plan and the exit status.  Tap(n, failed) numbers
on after n tests a shell script already printed (failed of them failed)."""

import subprocess
import sys


class Tap:
    def __init__(self, n=0, failed=0):
        self.n = n
        self.failed = failed

    def ok(self, cond, what, diag=None):
        """diag, shown when cond is false: a string (its first 40 lines)
        or a list of lines."""
        self.n += 1
        print("%s %d - %s" % ("ok" if cond else "not ok", self.n, what))
        if not cond:
            self.failed += 1
            if isinstance(diag, (list, tuple)):
                lines = [str(d) for d in diag]
            else:
                lines = [] if diag is None else str(diag).splitlines()[:40]
            for line in lines:
                print("#   " + line)
        sys.stdout.flush()
        return bool(cond)

    def todo(self, what, why):
        """A known gap: "not ok N - what # TODO why", not a failure."""
        self.n += 1
        print("not ok %d - %s # TODO %s" % (self.n, what, why))
        sys.stdout.flush()

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
