#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The commands table against real servers.

usage: t03-commands.py ANALYZE CMDGEN

Two ClickHouse shards (scripts/fleet/ch-cluster) with the shipped schema;
two simulated hosts, each a firmware dump and the host's view of the same
commands as agent JSON lines, made by CMDGEN (mock/hmb-fwsim/cmdgen.c,
hmb-cmdgen: known offset and drift, some records lost; it prints its own
truth).  `hmb-trace-analyze export --to clickhouse URL DUMP --host
HOSTFILE` writes the joined commands; checked against `hmb-trace-analyze
correlate -j --no-commands` of the same files (its final line: totals and
the log2 histogram of each phase) and the generator's truth:
  - one row per command correlate reports, per host, and the same count
    of each match class;
  - p50 and p99 of each phase from a SQL quantile over the rows fall
    within one log2 histogram bucket of correlate's own (the slot its
    histogram puts the same quantile in), over the same number of rows;
  - correlate's percentiles (p50, p90, p99, p99.9, max) of each phase are
    quantileExact's over the same rows where correlate held the values,
    and hold it within the bounds correlate states where it did not;
  - host times are on the wall clock through the sidecar (host A has one:
    realtime_ns - monotonic_ns added to every host time; the first
    submit is the generator's);
  - who issued each command (pid, tid, comm, cgroup) is the generator's:
    per issuing task the count of rows and the sum of their slba;
  - status and bg_in_flight are the generator's own: per status and per
    background group (gc, thermal) the count of rows and the sum of their
    slba (random per command) equal those of the commands the generator
    completed with that status / whose surviving records span a window
    of that group;
  - a re-export inserts nothing; the row count stays.
Nothing holds the commands in this process: the generator, correlate and
the store hand back counts and quantiles.
Size: HMB_FLEET_CMDS commands per host (default 500000: 2 x 500000 is the
issue's 1 M commands).
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "formats"))
from tap import Tap  # noqa: E402
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fleetq import PHASES, percentiles_bad, percentiles_sql  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.abspath(os.path.join(HERE, "..", ".."))

ANALYZE = sys.argv[1]
CMDGEN = sys.argv[2]
CLUSTER = os.path.join(TOP, "scripts", "fleet", "ch-cluster")
N = int(os.environ.get("HMB_FLEET_CMDS", "500000"))
WORK = tempfile.mkdtemp(prefix="hmb-fleet-cmds.")
CH = os.path.join(WORK, "ch")


def data_dir():
    """The generated files (about 450 bytes a command: dump and JSON lines)
    go to /dev/shm when it has room for twice that: the dump writer syncs
    the dump to disk, which on a busy disk costs more than making it."""
    need = 2 * 2 * 450 * N
    try:
        st = os.statvfs("/dev/shm")
        if st.f_bavail * st.f_frsize > need:
            return tempfile.mkdtemp(prefix="hmb-fleet-cmds.", dir="/dev/shm")
    except OSError:
        pass
    return WORK


DATA = data_dir()

tap = Tap()
ok = tap.ok


def done():
    status = tap.done()
    subprocess.run([CLUSTER, "stop", CH], stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    shutil.rmtree(WORK, ignore_errors=True)
    shutil.rmtree(DATA, ignore_errors=True)
    sys.exit(status)


def q(url, sql):
    r = subprocess.run([CLUSTER, "query", url, sql], capture_output=True,
                       text=True)
    if r.returncode:
        raise RuntimeError("query failed: %s: %s" % (sql, r.stderr))
    return r.stdout.strip()


def slot(ns):
    """hmbtrace_hist.h: floor(log2(us)), 0 for 0 and 1 us, at most 26."""
    us = int(ns) // 1000
    return min(us.bit_length() - 1 if us > 0 else 0, 26)


def hist_quantile_slot(hist, level):
    """The slot of correlate's histogram (hmb_hist_json: slot 0 first)
    holding the element ClickHouse's quantileExact picks: the one at
    floor(level * n) in sorted order."""
    n = sum(b["count"] for b in hist)
    k = min(int(level * n), n - 1)
    seen = 0
    for i, b in enumerate(hist):
        seen += b["count"]
        if seen > k:
            return i
    return None


MONO, REAL = 81_234_567_890, 1_706_745_600_000_000_000


def prepare(args):
    """One host's files (the two hosts are made in parallel) and what the
    checks want of them: the generator's truth and correlate's final
    line."""
    name, seed, sidecar = args
    dump = os.path.join(DATA, name + ".bin")
    host = os.path.join(DATA, name + ".jsonl")
    cmd = [CMDGEN, "-n", str(N), "--seed", str(seed), "--dump", dump,
           "--host", host, "--offset-ns", str(40_000_000_000 + seed * 1000),
           "--drift-ppm", "35", "--status-every", "101", "--gc-every", "200"]
    if sidecar:
        cmd += ["--sidecar", "%d:%d" % (REAL, MONO)]
    t0 = time.time()
    g = subprocess.run(cmd, capture_output=True, text=True)
    t1 = time.time()
    c = subprocess.run([ANALYZE, "correlate", dump, host, "-j",
                        "--no-commands"], capture_output=True, text=True)
    res = {"dump": dump, "host": host, "wall_off": REAL - MONO if sidecar
           else 0, "gen_rc": g.returncode, "rc": c.returncode,
           "stderr": g.stderr[-1000:] + c.stderr[-1000:],
           "secs": (t1 - t0, time.time() - t1)}
    try:
        res["truth"] = json.loads(g.stdout)
        res["final"] = json.loads(c.stdout)
    except ValueError as e:
        res["rc"] = res["rc"] or -1
        res["stderr"] += "\nnot JSON: %s" % e
        res["truth"], res["final"] = {}, {}
    return res


def export(url, dump, host, hostname, *extra):
    args = [ANALYZE, "export", "--to", "clickhouse", url, dump, "--host",
            host, "--hostname", hostname, "-j", *extra]
    r = subprocess.run(args, capture_output=True, text=True)
    try:
        return r, json.loads(r.stdout)
    except ValueError:
        return r, {}


def check_host(name, hostname, url, other, p, sidecar, exp):
    """The store's rows of one host against correlate and the generator."""
    r, js = exp
    truth, fin = p["truth"], p["final"]
    tot = fin.get("totals", {})
    ncmds = tot.get("commands")
    ok(p["gen_rc"] == 0 and p["rc"] == 0 and
       ncmds == truth.get("commands") == N and
       tot.get("fw_records_lost") == truth.get("records_lost"),
       "%s: correlate reports %s commands (the generator made %s), %s "
       "records lost" % (name, ncmds, truth.get("commands"),
                         tot.get("fw_records_lost")), p["stderr"])
    t = js.get("tables", {}).get("commands", {})
    ok(r.returncode == 0 and t.get("inserted") == ncmds and
       t.get("verified") is True,
       "%s: export --host exits 0, %s commands rows inserted, verified"
       % (name, t.get("inserted")), r.stderr + r.stdout)
    where = "host = '%s'" % hostname
    cnt = q(other, "SELECT count() FROM hmb.commands WHERE " + where)
    ok(cnt == str(ncmds),
       "%s: store holds %s commands rows == correlate's %s"
       % (name, cnt, ncmds))
    want = {k.replace("_", "-"): tot.get(k, 0) for k in
            ("matched", "partial", "unmatched", "host_only")}
    want = {k: v for k, v in want.items() if v}
    got = dict(line.split("\t") for line in q(
        url, "SELECT match_class, count() FROM hmb.commands WHERE %s "
        "GROUP BY match_class FORMAT TabSeparated" % where).splitlines())
    got = {k: int(v) for k, v in got.items()}
    ok(got == want, "%s: match classes as correlate: %s" % (name, got),
       "correlate: %s" % want)
    # wall clock: the first command's submit as the generator made it
    first = truth.get("first_submit_ns")
    sub = q(url, "SELECT min(submit_ns) FROM hmb.commands WHERE " + where)
    ok(first is not None and sub == str(first + p["wall_off"]),
       "%s: host times on the wall clock (%s = %s + %d)"
       % (name, sub, first, p["wall_off"]))
    for key, expr, cond in PHASES:
        hist = fin.get("hists_us", {}).get(key, [])
        nvals = sum(b["count"] for b in hist)
        w50 = hist_quantile_slot(hist, 0.5) if nvals else None
        w99 = hist_quantile_slot(hist, 0.99) if nvals else None
        ans = q(other, "SELECT count(), quantileExact(0.5)(%s), "
                "quantileExact(0.99)(%s) FROM hmb.commands WHERE %s AND %s "
                "FORMAT TabSeparated" % (expr, expr, where, cond))
        n, p50, p99 = (int(x) for x in ans.split("\t"))
        ok(nvals > N // 2 and n == nvals and
           abs(slot(p50) - w50) <= 1 and abs(slot(p99) - w99) <= 1,
           "%s: %s: %d rows; SQL p50 %d ns (slot %d), p99 %d ns (slot %d)"
           " vs correlate's p50 slot %s, p99 slot %s"
           % (name, key, n, p50, slot(p50), p99, slot(p99), w50, w99),
           "correlate's histogram has %d values" % nvals)
        # correlate's percentiles: quantileExact's when it held the values,
        # else holding it inside the bounds it states
        pc = fin.get("percentiles", {}).get(key, {})
        bad = percentiles_bad(key, pc, q(other, percentiles_sql(
            expr, "%s AND %s" % (where, cond))))
        slack = key == "fw_fetch_to_cqe_posted"
        ok(pc.get("n") == n and not bad,
           "%s: %s: correlate's p50 p90 p99 p99.9 max %s ClickHouse's "
           "quantileExact over the %d rows%s" % (
               name, key, "equal" if pc.get("exact") else
               "(from buckets) hold", n,
               " (within the drift: firmware clock)" if slack else ""),
           "; ".join(bad) or str(pc))
    want = {st: (n, tot) for st, n, tot in truth.get("status", [])}
    got = {}
    for line in q(other, "SELECT status, count(), sum(slba) FROM "
                  "hmb.commands WHERE %s GROUP BY status FORMAT "
                  "TabSeparated" % where).splitlines():
        st, n, tot = (int(x) for x in line.split("\t"))
        got[st] = (n, tot)
    ok(len(want) == 3 and got == want,
       "%s: status per row as the host saw it: %s" % (name, sorted(
           (hex(k), v[0]) for k, v in got.items())),
       "want %s" % sorted(want.items()))
    want = {(p, c, g): (n, tot) for p, c, g, n, tot in truth.get("who", [])}
    got = {}
    for line in q(other, "SELECT pid, comm, cgroup, count(), sum(slba), "
                  "countIf(tid < pid OR tid >= pid + 7) FROM hmb.commands "
                  "WHERE %s GROUP BY pid, comm, cgroup FORMAT "
                  "TabSeparated" % where).splitlines():
        p, c, g, n, tot, badtid = line.split("\t")
        got[(int(p), c, int(g))] = (int(n), int(tot))
        if int(badtid):
            got[(int(p), c, int(g), "tid")] = int(badtid)
    ok(len(want) == 3 and got == want,
       "%s: who issued each row (pid, comm, cgroup; tid among the "
       "process's threads) as the host saw it: %s" % (name, sorted(
           (k, v[0]) for k, v in got.items())),
       "want %s" % sorted(want.items()))
    want = {g: (v["commands"], v["slba"])
            for g, v in truth.get("bg", {}).items()}
    got = {}
    for grp in sorted(want):
        ans = q(url, "SELECT countIf(has(bg_in_flight, '%s')), "
                "sumIf(slba, has(bg_in_flight, '%s')) FROM hmb.commands "
                "WHERE %s FORMAT TabSeparated" % (grp, grp, where))
        got[grp] = tuple(int(x) for x in ans.split("\t"))
    other_grp = q(url, "SELECT count() FROM hmb.commands WHERE %s AND "
                  "hasAny(bg_in_flight, ['%s']) = 0 AND "
                  "length(bg_in_flight) > 0" % (where, "','".join(want)))
    ok(set(want) == {"gc", "thermal"} and
       all(v[0] > 0 for v in want.values()) and got == want and
       other_grp == "0",
       "%s: bg_in_flight as the generator's windows: %s"
       % (name, ", ".join("%s %d rows" % (g, v[0])
                          for g, v in sorted(got.items()))),
       "want %s, got %s, rows with other groups %s" % (want, got, other_grp))
    if sidecar:
        ans = q(url, "SELECT any(serial), any(fw_rev), any(ctrl) FROM "
                "hmb.commands WHERE " + where + " FORMAT TabSeparated")
        ok(ans == "S-%s\t2.1\tnvme0" % name,
           "%s: drive columns as given (%s)" % (name, ans.replace("\t", " ")))
    return ncmds


def main():
    r = subprocess.run([CLUSTER, "start", CH, "--shards", "2"],
                       capture_output=True, text=True)
    if not ok(r.returncode == 0, "two clickhouse-server shards start",
              r.stderr[-2000:]):
        done()
    env = {}
    with open(os.path.join(CH, "env")) as f:
        for line in f:
            k, _, v = line.strip().partition("=")
            env[k] = v.strip("'\"")
    u1, u2 = env["CH_URL_1"], env["CH_URL_2"]

    def pick_host(prefix, want):
        for k in range(100):
            name = "%s-%d" % (prefix, k)
            if q(u1, "SELECT cityHash64('%s') %% 2" % name) == str(want):
                return name
        return None
    ha, hb = pick_host("cmd-a", 0), pick_host("cmd-b", 1)
    ok(ha and hb, "host names for both shards (%s, %s)" % (ha, hb))

    # name, hostname, seed, sidecar, the server exported to, the other one
    sets = [("a", ha, 21, True, u1, u2,
             ["--serial", "S-a", "--fw-rev", "2.1"]),
            ("b", hb, 22, False, u2, u1, ["--day", "2024-02-29",
                                          "--trace-id", "77"])]
    t0 = time.time()
    with ThreadPoolExecutor(2) as pool:
        prep = list(pool.map(prepare, [(x[0], x[2], x[3]) for x in sets]))
    print("# both hosts made and correlated in %.1f s (each: generate, "
          "correlate: %s)" % (time.time() - t0, "; ".join(
              "%.1f %.1f s" % p["secs"] for p in prep)))

    def export_all():
        t0 = time.time()
        with ThreadPoolExecutor(2) as pool:
            res = list(pool.map(
                lambda xp: export(xp[0][4], xp[1]["dump"], xp[1]["host"],
                                  xp[0][1], *xp[0][6]), zip(sets, prep)))
        print("# both hosts exported (--host) in %.1f s" % (time.time() - t0))
        return res
    first = export_all()
    ncmds = [check_host(x[0], x[1], x[4], x[5], p, x[3], e)
             for x, p, e in zip(sets, prep, first)]
    # idempotent
    for x, n, (r, js) in zip(sets, ncmds, export_all()):
        name, where = x[0], "host = '%s'" % x[1]
        t = js.get("tables", {}).get("commands", {})
        cnt = q(u1, "SELECT count() FROM hmb.commands WHERE " + where)
        ok(r.returncode == 0 and t.get("inserted") == 0 and
           t.get("present") == n and cnt == str(n),
           "%s: a re-export inserts nothing (%s present), still %s rows"
           % (name, t.get("present"), cnt), r.stderr)
    # usage errors
    r = subprocess.run([ANALYZE, "export", "--to", "clickhouse", u1, "-",
                        "--host", "x.jsonl"], capture_output=True, text=True)
    ok(r.returncode == 2 and "stdin" in r.stderr,
       "--host with stdin: exit 2, says why", r.stderr)
    r = subprocess.run([ANALYZE, "export", "--to", "clickhouse", u1,
                        os.path.join(DATA, "a.bin"), "--serial", "x"],
                       capture_output=True, text=True)
    ok(r.returncode == 2 and "--host" in r.stderr,
       "--serial without --host: exit 2", r.stderr)
    r, js = export(u1, os.path.join(DATA, "a.bin"),
                   os.path.join(DATA, "missing.jsonl"), ha)
    ok(r.returncode != 0 and "missing.jsonl" in r.stderr,
       "a host file that is not there: exit %d, names it" % r.returncode,
       r.stderr)
    done()


if __name__ == "__main__":
    main()
