#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The pel_events table against a real server.

usage: t07-pel.py ANALYZE

One ClickHouse shard (scripts/fleet/ch-cluster) with the shipped schema;
the case of tests/formats/pelcase.py (a dump, the host's commands and a
Persistent Event Log with its clock reading, the truth computed there).
`export --to clickhouse URL DUMP --host HOSTFILE --pel LOG` writes the
commands and the log's events:
  - one pel_events row per event, each placed (host_ns and bound_ns the
    truth's) or not with the reason the truth gives;
  - the query of docs/fleet.md joining pel_events to commands counts, per
    placed event, the commands it overlapped: the truth's counts, and
    correlate --pel's;
  - a re-export inserts nothing.
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(TOP, "tests", "formats"))
from tap import Tap  # noqa: E402
import pelcase  # noqa: E402

ANALYZE = sys.argv[1]
CLUSTER = os.path.join(TOP, "scripts", "fleet", "ch-cluster")
WORK = tempfile.mkdtemp(prefix="hmb-fleet-pel.")
CH = os.path.join(WORK, "ch")
T = Tap()

# docs/fleet.md, "Persistent Event Log": the commands each placed event
# overlapped (both on the host's clock, the event within its bound)
OVERLAP_SQL = """
SELECT pel_id, event, count() AS overlapped
FROM hmb.pel_events
ALL INNER JOIN
    (SELECT host, trace_id, submit_ns, complete_ns FROM hmb.commands_local) AS c
    USING (host, trace_id)
WHERE place = 'placed'
  AND submit_ns <= host_ns + bound_ns
  AND complete_ns + bound_ns >= host_ns
GROUP BY pel_id, event
ORDER BY pel_id
"""


def q(url, sql):
    r = subprocess.run([CLUSTER, "query", url, sql], capture_output=True,
                       text=True)
    if r.returncode:
        raise RuntimeError("query failed: %s: %s" % (sql, r.stderr))
    return r.stdout.strip()


def export(url, k):
    r = subprocess.run([ANALYZE, "export", "--to", "clickhouse", url,
                        k["dump"], "--host", k["host"], "--pel", k["log"],
                        "--hostname", "pel-host", "--day", "2024-03-01",
                        "--trace-id", "6", "-j"],
                       capture_output=True, text=True)
    try:
        return r, json.loads(r.stdout)
    except ValueError:
        return r, {}


def main():
    print("TAP version 13")
    r = subprocess.run([CLUSTER, "start", CH, "--shards", "1"],
                       capture_output=True, text=True)
    if not T.ok(r.returncode == 0, "a clickhouse-server shard starts",
                r.stderr[-2000:]):
        return
    env = {}
    with open(os.path.join(CH, "env")) as f:
        for line in f:
            key, _, v = line.strip().partition("=")
            env[key] = v.strip("'\"")
    url = env["CH_URL_1"]
    k = pelcase.make(WORK)
    pelcase.write_clock(k["log"], k["mono_before"],
                        pelcase.pg.ts(pelcase.C))
    r, js = export(url, k)
    tb = js.get("tables", {}).get("pel_events", {})
    T.ok(r.returncode == 0 and tb.get("rows") == 7 and
         tb.get("inserted") == 7 and tb.get("verified"),
         "export --pel: 7 pel_events rows inserted, the store verified",
         r.stderr[-2000:] + r.stdout[-1000:])
    rows = q(url, "SELECT pel_id, place, host_ns, bound_ns, event, serial, "
             "fields FROM hmb.pel_events ORDER BY pel_id")
    got = [x.split("\t") for x in rows.splitlines()]
    T.eq({int(x[0]): x[1] for x in got}, pelcase.PLACE,
         "each row placed, or why not")
    T.eq({int(x[0]): (int(x[2]), int(x[3])) for x in got
          if x[1] == "placed"},
         {i: (v["host_ns"], v["bound_ns"]) for i, v in k["placed"].items()},
         "host_ns and bound_ns as pel.h's rule gives them (no sidecar: "
         "host times as the commands', CLOCK_MONOTONIC)")
    T.ok(all(x[5] == "SN-PY-0042" for x in got) and len(got) == 7 and
         got[2][4] == "thermal_excursion" and
         got[2][6] == "over_temp=3 threshold=75" and
         all(x[2] == "0" for x in got if x[1] != "placed"),
         "the drive's serial, the event's name and fields; host_ns 0 when "
         "not placed", rows)
    ov = q(url, OVERLAP_SQL)
    want = {i: len(v["over"]) for i, v in k["placed"].items() if v["over"]}
    gotov = {int(x.split("\t")[0]): int(x.split("\t")[2])
             for x in ov.splitlines()}
    c = subprocess.run([ANALYZE, "correlate", k["dump"], k["host"], "-j",
                        "--no-commands", "--pel", k["log"]],
                       capture_output=True, text=True)
    corr = {x["index"]: x["commands_overlapped"]
            for x in map(json.loads, c.stdout.splitlines())
            if x["type"] == "pel" and x["commands_overlapped"]}
    T.ok(gotov == want == corr and want,
         "docs/fleet.md's join: the commands each event overlapped, as "
         "the truth and correlate --pel count them", (gotov, want, corr))
    r, js = export(url, k)
    tb = js.get("tables", {}).get("pel_events", {})
    T.ok(r.returncode == 0 and tb.get("present") == 7 and
         tb.get("inserted") == 0 and
         q(url, "SELECT count() FROM hmb.pel_events") == "7",
         "a re-export inserts nothing; 7 rows stay", tb)


if __name__ == "__main__":
    try:
        main()
    except Exception:
        import traceback
        T.ok(False, "the test raised", traceback.format_exc())
    subprocess.run([CLUSTER, "stop", CH], stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    shutil.rmtree(WORK, ignore_errors=True)
    sys.exit(T.done())
