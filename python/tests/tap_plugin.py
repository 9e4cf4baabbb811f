# SPDX-License-Identifier: Apache-2.0
"""A pytest plugin that writes TAP lines to the file descriptor named by
HMB_TAP_FD (stdout of scripts/tap-run, while pytest's own report goes to
stderr).  One line per test: ok / not ok / ok # SKIP; collection errors
are failures; a session that ran no test at all is a failure."""

import os

_out = None
_n = 0
_failed_collect = []


def _emit(line):
    global _out
    if _out is None:
        fd = int(os.environ.get("HMB_TAP_FD", "1"))
        _out = os.fdopen(os.dup(fd), "w", buffering=1)
    _out.write(line + "\n")


def pytest_collectreport(report):
    global _n
    if report.failed:
        _n += 1
        _emit("not ok %d - collecting %s" % (_n, report.nodeid or "tests"))
        for ln in str(report.longrepr).splitlines()[-20:]:
            _emit("#   " + ln)


def pytest_runtest_logreport(report):
    global _n
    name = report.nodeid.replace("#", "")
    if report.when == "setup" and report.skipped:
        _n += 1
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) \
            else str(report.longrepr)
        _emit("ok %d - %s # SKIP %s" % (_n, name, reason))
    elif report.when == "setup" and report.failed:
        _n += 1
        _emit("not ok %d - %s (setup)" % (_n, name))
        for ln in str(report.longrepr).splitlines()[-30:]:
            _emit("#   " + ln)
    elif report.when == "call":
        _n += 1
        if report.passed:
            _emit("ok %d - %s" % (_n, name))
        elif report.skipped:
            _emit("ok %d - %s # SKIP" % (_n, name))
        else:
            _emit("not ok %d - %s" % (_n, name))
            for ln in str(report.longrepr).splitlines()[-30:]:
                _emit("#   " + ln)
    elif report.when == "teardown" and report.failed:
        _n += 1
        _emit("not ok %d - %s (teardown)" % (_n, name))


def pytest_sessionfinish(session, exitstatus):
    global _n
    if _n == 0:
        _n += 1
        _emit("not ok 1 - no tests ran (pytest exit status %s)" % exitstatus)
    _emit("1..%d" % _n)
