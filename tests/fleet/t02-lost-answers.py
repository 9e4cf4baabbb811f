#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The exporter's retry rules where a real server cannot be made to fail on
cue: a stand-in for ClickHouse's HTTP interface (enough of it for
`hmb-trace-analyze export`: the row-count query and RowBinary inserts into
fw_records) that, on one chosen insert,

  lost-answer  commits the batch, then drops the connection unanswered;
  refuse       answers "Code: 210 ... NetException" without committing;
  slow         commits only after the client's timeout, and answers
               "Code: 216 QUERY_WITH_SAME_ID_IS_ALREADY_RUNNING" to a
               retry of the same query_id while it runs, as ClickHouse does.

In every case the export must end with every record in the store exactly
once, having retried.  Rows are parsed here from the RowBinary the exporter
sends (the layout of share/fleet/schema.sql's fw_records).

usage: t02-lost-answers.py ANALYZE FWSIM
"""

import json
import os
import re
import struct
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "formats"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from standin import DROP, StandIn, uleb  # noqa: E402
from tap import Tap  # noqa: E402

ANALYZE, FWSIM = sys.argv[1], sys.argv[2]
N = 30000
BATCH = 2000
tap = Tap()
ok = tap.ok



def parse_fw_records(body):
    """(rec_off, seq) of every row in a RowBinary fw_records batch."""
    rows, i = [], 0
    while i < len(body):
        i += 2                                  # day
        for _ in range(2):                      # host, ring
            n, i = uleb(body, i)
            i += n
        _trace, rec_off, _epoch, seq = struct.unpack_from("<QQII", body, i)
        i += 24 + 8 + 8 + 2 + 1 + 1             # ... fw_ns host_ns opcode cpu flags
        n, i = uleb(body, i)
        i += n                                  # payload
        rows.append((rec_off, seq))
    if i != len(body):
        raise ValueError("batch ends inside a row")
    return rows


class Store:
    def __init__(self, mode, fail_at):
        self.mode, self.fail_at = mode, fail_at
        self.rows = []                          # (rec_off, seq), every insert
        self.inserts = 0
        self.running = set()
        self.lock = threading.Lock()


def respond(st, req):
    """The stand-in's answer to one request (standin.py) for Store st."""
    body = req.body
    if "query" not in req.query:
        m = re.match(r"SELECT count\(\), max\((\w+)\) FROM hmb\.(\w+) WHERE", body.decode())
        if not m:
            return 400, "Code: 62, e.displayText() = DB::Exception: fake: unexpected query"
        with st.lock:
            rows = st.rows if m.group(2) == "fw_records" else []
            mx = max((r[0] for r in rows), default=0)
            return 200, "%d\t%d\n" % (len(rows), mx)
    if not req.param("query").startswith("INSERT INTO hmb.fw_records "):
        return 500, "Code: 60, e.displayText() = DB::Exception: fake: no such table"
    qid = req.param("query_id")
    with st.lock:
        if qid in st.running:
            return 500, "Code: 216, e.displayText() = DB::Exception: Query with id = %s is already running." % qid
        st.inserts += 1
        nth = st.inserts
        st.running.add(qid)
    try:
        rows = parse_fw_records(body)
        if nth == st.fail_at and st.mode == "refuse":
            return 500, "Code: 210, e.displayText() = DB::NetException: Connection refused (fake shard)"
        if nth == st.fail_at and st.mode == "slow":
            time.sleep(2.5)                     # past the client's --timeout 1
        with st.lock:
            st.rows.extend(rows)
        if nth == st.fail_at and st.mode == "lost-answer":
            return DROP
        return 200, ""
    finally:
        with st.lock:
            st.running.discard(qid)


def run_case(mode, dump):
    st = Store(mode, fail_at=4)
    srv = StandIn(lambda req: respond(st, req))
    url = srv.url
    p = subprocess.run([ANALYZE, "export", "--to", "clickhouse", url, dump,
                        "--hostname", "fake", "--day", "2024-01-01",
                        "--batch-rows", str(BATCH), "--backoff-ms", "300",
                        "--timeout", "1", "--format", "json"],
                       capture_output=True, timeout=120)
    srv.stop()
    err = p.stderr.decode()
    ok(p.returncode == 0, "%s: export exits 0" % mode, err)
    try:
        s = json.loads(p.stdout)
    except ValueError:
        s = {"retries": 0, "tables": {"fw_records": {}}}
    offs = [r[0] for r in st.rows]
    ok(len(offs) == N and len(set(offs)) == N,
       "%s: every record in the store exactly once (%d rows, %d distinct)" % (mode, len(offs), len(set(offs))), err)
    ok(s["retries"] >= 1, "%s: the exporter retried (%d)" % (mode, s["retries"]), err)
    ok(s["tables"]["fw_records"].get("verified") is True, "%s: store verified" % mode)
    return err


work = tempfile.mkdtemp(prefix="hmb-fleet-t02.")
dump = os.path.join(work, "t.bin")
subprocess.run([FWSIM, "-r", os.path.join(work, "ring"), "-s", "16M", "-n", str(N),
                "-p", "mix:0x20,8x40,24x30,64x10", "--log", dump, "--quiet"], check=True)
os.unlink(os.path.join(work, "ring"))
err = run_case("lost-answer", dump)
ok("Empty reply from server" in err or "Server returned nothing" in err or "Recv failure" in err,
   "lost-answer: the retry line says the answer was lost", err)
err = run_case("refuse", dump)
ok("Code 210" in err, "refuse: the retry line has the server's message", err)
err = run_case("slow", dump)
ok("Timeout was reached" in err, "slow: the first attempt timed out", err)
ok("Code 216" in err, "slow: a retry overtaking the running insert is refused (216), not doubled", err)

# Usage and input errors need no server: exit 2 (usage) or 1 (input), one
# line saying what.
U = "http://127.0.0.1:9"
for args, rc, text in [
        (["export", U, dump], 2, "--to clickhouse is required"),
        (["export", "--to", "kafka", U, dump], 2, "unknown store 'kafka'"),
        (["export", "--to", "clickhouse", U], 2, "expected URL and FILE"),
        (["export", "--to", "clickhouse", "--batch-rows", "0", U, dump], 2, "--batch-rows: '0' is not a number in 1..1000000"),
        (["export", "--to", "clickhouse", "--day", "2024-13-01", U, dump], 2, "--day: '2024-13-01' is not a date"),
        (["export", "--to", "clickhouse", "--day", "2023-02-29", U, dump], 2, "--day: '2023-02-29' is not a date"),
        (["export", "--to", "clickhouse", "--database", "a;b", U, dump], 2, "not a plain identifier"),
        (["export", "--to", "clickhouse", "--day", "2024-01-01", U, dump + ".nope"], 1, "cannot open"),
        (["export", "--to", "clickhouse", "--day", "2024-01-01", "--hostname", "a\tb", U, dump], 2, "control characters"),
        (["export", "--help"], 0, "Examples:"),
        (["help", "export"], 0, "Idempotent"),
]:
    p = subprocess.run([ANALYZE] + args, capture_output=True, timeout=30)
    out = (p.stdout + p.stderr).decode()
    ok(p.returncode == rc and text in out, "export CLI: exit %d, says \"%s\"" % (rc, text),
       "exit %d: %s" % (p.returncode, out))
os.unlink(dump)
os.rmdir(work)
sys.exit(tap.done())
