#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The bench scripts' harness: run commands, time them, take medians, and
keep files in the page cache.  scripts/bench-*.sh call it as a command:

  bench.py run TIMEFILE [--rss] CMD...   run CMD once (stdio inherited),
        write "WALL_NS CPU_MS" (and " RSS_KIB" with --rss) to TIMEFILE;
        exits with CMD's status
  bench.py paired RUNS LABEL CMD... [-- LABEL CMD...]   RUNS rounds of
        the commands in turn (output to /dev/null); one JSON line per
        label: median wall and CPU ms, peak RSS KiB
  bench.py get LINES LABEL KEY   KEY of LABEL's line in paired's output
  bench.py median [--even-format FMT]   the median of the numbers on stdin
  bench.py hold READY PATH...   drop PATHs from the page cache, read them
        back, keep them mapped and locked until killed; READY gets "held"
        or why not
  bench.py u64 FILE OFFSET   a little-endian u64 of FILE
  bench.py cpu PID...   the CPU time (user + system, ms) the running
        processes PID... have used so far, summed
  bench.py median-round FILE KEY   of FILE's "ROUND KEY=VALUE" lines, the
        ROUND whose KEY is the median (the lower middle one of an even
        count)
"""

import ctypes
import json
import math
import os
import signal
import statistics
import sys
import tempfile
import time

GNU_TIME = "/usr/bin/time"


def _null_fds(fd):
    return [(os.POSIX_SPAWN_DUP2, fd, 1), (os.POSIX_SPAWN_DUP2, fd, 2)]


def spawn(argv, file_actions=()):
    """Run argv; return (exit status, wall ns, CPU ms from wait4)."""
    t0 = time.monotonic_ns()
    # posix_spawn (vfork), not fork: a forked child's CPU time holds the
    # teardown of its copy of this Python's address space at exec, which
    # is as large as a short command's own.
    try:
        pid = os.posix_spawnp(argv[0], argv, os.environ,
                              file_actions=list(file_actions))
    except OSError as e:
        sys.exit("bench: cannot run %s: %s" % (argv[0], e.strerror))
    _, status, ru = os.wait4(pid, 0)
    t1 = time.monotonic_ns()
    st = os.waitstatus_to_exitcode(status)
    # a signal as the shell reports it: 128 + its number
    return (st if st >= 0 else 128 - st, t1 - t0,
            (ru.ru_utime + ru.ru_stime) * 1e3)


def peak_rss_kib(argv, file_actions=()):
    """Peak RSS of argv under GNU time (a small C process).  The kernel
    charges an exec'd child the peak RSS of the address space it
    replaced, so a child of this Python reports Python's for any
    command; time's own is about 1 MiB."""
    with tempfile.NamedTemporaryFile("r") as tf:
        st, _, _ = spawn([GNU_TIME, "-f", "%M", "-o", tf.name] + argv,
                         file_actions)
        if st:
            sys.exit("bench: %s %s failed (status %d)" %
                     (GNU_TIME, " ".join(argv), st))
        return int(tf.read().split()[-1])


def median(values):
    return statistics.median(values)


def paired(runs, cmds):
    """cmds: [(label, argv)]; RUNS rounds of them in turn."""
    res = {label: {"wall": [], "cpu": [], "rss": 0} for label, _ in cmds}
    devnull = os.open(os.devnull, os.O_WRONLY)
    for _ in range(runs):
        for label, argv in cmds:
            st, wall_ns, cpu_ms = spawn(argv, _null_fds(devnull))
            if st:
                sys.exit("bench: %s failed (status %d)" % (" ".join(argv), st))
            res[label]["wall"].append(wall_ns / 1e6)
            res[label]["cpu"].append(cpu_ms)
    for label, argv in cmds:
        res[label]["rss"] = peak_rss_kib(argv, _null_fds(devnull))
    os.close(devnull)
    return [{"label": label, "wall_ms": median(res[label]["wall"]),
             "cpu_ms": median(res[label]["cpu"]),
             "rss_kib": res[label]["rss"], "runs": len(res[label]["wall"])}
            for label, _ in cmds]


def hold(ready, paths):
    """Drop each file (of a directory: the files in it) from the page
    cache and read it back once, so that every run finds it cached the
    way readahead caches a file (large folios), not the way it was
    written; then keep it mapped and locked, because some virtual
    machines' hosts take page cache back by themselves.  Writes "held"
    or why not to READY, then waits to be killed."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mmap.restype = ctypes.c_void_p
    libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int,
                          ctypes.c_int, ctypes.c_int, ctypes.c_long]
    libc.mlock.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
    files = []
    for a in paths:
        if os.path.isdir(a):
            files += sorted(os.path.join(a, f) for f in os.listdir(a)
                            if os.path.isfile(os.path.join(a, f)))
        else:
            files.append(a)
    status = "held"
    for f in files:
        fd = os.open(f, os.O_RDONLY)
        size = os.fstat(fd).st_size
        os.fsync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        while os.read(fd, 1 << 20):
            pass
        if not size or status != "held":
            continue
        p = libc.mmap(None, size, 1, 1, fd, 0)  # PROT_READ, MAP_SHARED
        if p is None or p == ctypes.c_void_p(-1).value:
            status = "not held (mmap %s: %s)" % (f, os.strerror(ctypes.get_errno()))
        elif libc.mlock(p, size):
            status = "not held (mlock: %s)" % os.strerror(ctypes.get_errno())
    with open(ready, "w") as r:
        r.write(status + "\n")
    signal.pause()


def cpu_ms(pids):
    """User + system time of running processes, ms, from /proc/PID/stat:
    for a process the bench does not start and wait for itself (a server,
    a daemon it stops after reading)."""
    hz = os.sysconf("SC_CLK_TCK")
    ticks = 0
    for pid in pids:
        try:
            with open("/proc/%s/stat" % pid) as f:
                stat = f.read()
        except OSError as e:
            sys.exit("bench: no process %s: %s" % (pid, e.strerror))
        # the fields after the command name, which may hold spaces and ")"
        fields = stat[stat.rindex(")") + 2:].split()
        ticks += int(fields[11]) + int(fields[12])  # utime, stime
    return ticks * 1000 // hz


def median_round(path, key):
    """The round of "ROUND KEY=VALUE" lines whose KEY has the median value
    (the lower middle one of an even count); None without any."""
    vals = []
    with open(path) as f:
        for line in f:
            parts = line.split()
            if len(parts) < 2:
                continue
            k, _, v = parts[1].partition("=")
            if k != key:
                continue
            try:
                x = float(v)
            except ValueError:
                x = math.nan
            # what is no number sorts first, as sort -g puts it
            vals.append((-math.inf if math.isnan(x) else x, parts[0]))
    if not vals:
        return None
    vals.sort()
    return vals[(len(vals) - 1) // 2][1]


def _awk_number(v):
    """A number as awk's print shows it (OFMT %.6g, integers whole)."""
    return str(int(v)) if v == int(v) and abs(v) < 1e16 else "%.6g" % v


def cmd_median(args):
    fmt = args[1] if args[:1] == ["--even-format"] else None
    toks = sys.stdin.read().split()
    if not toks:
        sys.exit("bench: median of nothing")
    toks.sort(key=float)
    n = len(toks)
    if n % 2:
        print(toks[n // 2])
        return
    v = (float(toks[n // 2 - 1]) + float(toks[n // 2])) / 2
    print(fmt % v if fmt else _awk_number(v))


def cmd_run(args):
    tf, argv = args[0], args[1:]
    rss = argv[:1] == ["--rss"]
    if rss:
        argv = argv[1:]
        with tempfile.NamedTemporaryFile("r") as rf:
            st, wall_ns, cpu_ms = spawn([GNU_TIME, "-f", "%M", "-o", rf.name] + argv)
            kib = rf.read().split()
            line = "%d %d %s" % (wall_ns, int(cpu_ms + 0.5), kib[-1] if kib else 0)
    else:
        st, wall_ns, cpu_ms = spawn(argv)
        line = "%d %d" % (wall_ns, int(cpu_ms + 0.5))
    with open(tf, "w") as f:
        f.write(line + "\n")
    return st


def cmd_paired(args):
    cmds, cur = [], []
    for a in args[1:] + ["--"]:
        if a == "--":
            cmds.append((cur[0], cur[1:]))
            cur = []
        else:
            cur.append(a)
    for r in paired(int(args[0]), cmds):
        print(json.dumps(r))


def cmd_get(args):
    for line in args[0].splitlines():
        d = json.loads(line)
        if d["label"] == args[1]:
            print(d[args[2]])


def main(argv):
    if not argv:
        sys.exit(__doc__)
    cmd, args = argv[0], argv[1:]
    if cmd == "run":
        return cmd_run(args)
    if cmd == "paired":
        cmd_paired(args)
    elif cmd == "get":
        cmd_get(args)
    elif cmd == "median":
        cmd_median(args)
    elif cmd == "hold":
        hold(args[0], args[1:])
    elif cmd == "cpu":
        if not args:
            sys.exit("bench: cpu PID...")
        print(cpu_ms(args))
    elif cmd == "median-round":
        r = median_round(args[0], args[1])
        if r is None:
            sys.exit("bench: no %s= line in %s" % (args[1], args[0]))
        print(r)
    elif cmd == "u64":
        with open(args[0], "rb") as f:
            f.seek(int(args[1]))
            print(int.from_bytes(f.read(8), "little"))
    else:
        sys.exit("bench: unknown command %s\n%s" % (cmd, __doc__))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
