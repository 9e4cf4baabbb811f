#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The fleet store on a current ClickHouse: chDB (ClickHouse 26.x in this
process, libchdb.so from scripts/deps.sh chdb) behind a stand-in for the
HTTP interface (standin.py), so that the project's own client talks to it:

  - the shipped DDL (share/fleet/schema.sql, statement by statement as
    ch-cluster applies it) creates every table, on a one-shard hmb_fleet
    cluster whose shard is this process, and leaves no server warning;
  - `hmb-trace-analyze export --to clickhouse --host` of two simulated
    hosts (hmb-cmdgen) runs against it: the client's resume and
    verification queries run on 26.x as the client wrote them, and each
    insert's RowBinary body is written to a file and loaded with the
    client's own INSERT (FROM INFILE, with the client's settings, none of
    which the engine calls obsolete); every table ends verified;
  - the batches, decoded here from the DDL's column types, are the dump's
    records (the project's Python reader), the generator's losses and the
    sidecar's clocks, one commands row per command correlate reports;
    the engine gives back exactly those bytes (SELECT ... FORMAT
    RowBinary);
  - correlate's percentiles equal quantileExact's on 26.x over the same
    rows (as t03 asks of 18.16);
  - every query of docs/fleet.md runs, and its result equals the one
    computed here from the decoded rows (clock estimates and steps, made
    only by the live agent, are added in the client's layout, checked
    byte for byte against its host_open rows);
  - the same batches loaded into Debian's clickhouse-server 18.16 (one
    ch-cluster shard) give the same answer to every query.

usage: t06-chdb.py ANALYZE CMDGEN LIBCHDB
Size: HMB_FLEET_CHDB_CMDS commands per host (default 20000).
HMB_FLEET_CHDB_KEEP=1 keeps the engine's data and the batches.
"""

import ctypes
import datetime
import json
import math
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import threading
import urllib.error
import urllib.parse
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(TOP, "python"))
sys.path.insert(0, os.path.join(TOP, "tests", "formats"))
sys.path.insert(0, HERE)
from fleetq import PHASES, percentiles_bad, percentiles_sql  # noqa: E402
from hmb_trace.format import KIND_DATA  # noqa: E402
from hmb_trace.reader import open_trace  # noqa: E402
from standin import StandIn, uleb  # noqa: E402
from tap import Tap  # noqa: E402
import pelcase  # noqa: E402

ANALYZE, CMDGEN, LIBCHDB = sys.argv[1:4]
SCHEMA = os.environ.get("HMB_FLEET_SCHEMA",
                        os.path.join(TOP, "share", "fleet", "schema.sql"))
DOC = os.environ.get("HMB_FLEET_DOC", os.path.join(TOP, "docs", "fleet.md"))
N = int(os.environ.get("HMB_FLEET_CHDB_CMDS", "20000"))
CLUSTER = os.path.join(TOP, "scripts", "fleet", "ch-cluster")
T = Tap()
WORK = tempfile.mkdtemp(prefix="hmb-fleet-chdb.")
U64 = 1 << 64
ID = {"fw_records": "rec_off", "commands": "cmd_id", "losses": "loss_id",
      "clock": "clk_id"}
# and with export --pel (the case of tests/formats/pelcase.py)
ALL_ID = dict(ID, pel_events="pel_id")


def done():
    if ch is not None:
        ch.close()
    if os.environ.get("HMB_FLEET_CHDB_KEEP"):
        print("# kept %s (the engine's data in db/, the batches)" % WORK)
    else:
        shutil.rmtree(WORK, ignore_errors=True)
    status = T.done()
    sys.stdout.flush()
    # no interpreter teardown with the engine's threads still in the
    # process (it crashed there, SIGSEGV, once the connection was closed)
    os._exit(status)


class Chdb:
    """One chDB connection (programs/local/chdb.h's stable C API)."""

    def __init__(self, lib, args):
        L = ctypes.CDLL(lib)
        L.chdb_connect.restype = ctypes.c_void_p
        L.chdb_connect.argtypes = [ctypes.c_int,
                                   ctypes.POINTER(ctypes.c_char_p)]
        L.chdb_close_conn.argtypes = [ctypes.c_void_p]
        L.chdb_query.restype = ctypes.c_void_p
        L.chdb_query.argtypes = [ctypes.c_void_p, ctypes.c_char_p,
                                 ctypes.c_char_p]
        L.chdb_result_buffer.restype = ctypes.c_void_p
        L.chdb_result_buffer.argtypes = [ctypes.c_void_p]
        L.chdb_result_length.restype = ctypes.c_size_t
        L.chdb_result_length.argtypes = [ctypes.c_void_p]
        L.chdb_result_error.restype = ctypes.c_char_p
        L.chdb_result_error.argtypes = [ctypes.c_void_p]
        L.chdb_destroy_query_result.argtypes = [ctypes.c_void_p]
        self.L = L
        argv = [b"clickhouse"] + [a.encode() for a in args]
        self.pp = L.chdb_connect(len(argv), (ctypes.c_char_p * len(argv))(*argv))
        if not self.pp:
            raise RuntimeError("chdb_connect failed")
        self.conn = ctypes.cast(self.pp, ctypes.POINTER(ctypes.c_void_p))[0]
        self.lock = threading.Lock()

    def run(self, sql, fmt="TSV"):
        """(answer bytes, None) or (None, the engine's error)."""
        with self.lock:
            r = self.L.chdb_query(self.conn, sql.encode(), fmt.encode())
            try:
                err = self.L.chdb_result_error(r)
                if err is not None:
                    return None, err.decode(errors="replace")
                buf = self.L.chdb_result_buffer(r)
                n = self.L.chdb_result_length(r)
                return (ctypes.string_at(buf, n) if buf else b""), None
            finally:
                self.L.chdb_destroy_query_result(r)

    def close(self):
        self.L.chdb_close_conn(ctypes.c_void_p(self.pp))

    def q(self, sql):
        out, err = self.run(sql)
        if err is not None:
            raise RuntimeError("%s: %s" % (sql, err))
        return out.decode().rstrip("\n")


# --- RowBinary, from the DDL's types (independent of the engine and the
# client): the column list of each *_local table of the schema.
def schema_columns(text):
    cols = {}
    for m in re.finditer(r"CREATE TABLE IF NOT EXISTS hmb\.(\w+)_local \((.*?)\n\) ENGINE",
                         text, re.S):
        body = re.sub(r"--[^\n]*", "", m.group(2))
        cols[m.group(1)] = [tuple(c.split(None, 1)) for c in
                            (x.strip() for x in body.split(",")) if c]
    return cols


FIXED = {"UInt8": "<B", "UInt16": "<H", "UInt32": "<I", "UInt64": "<Q",
         "Float64": "<d", "Date": "<H"}


def leb(n):
    out = b""
    while True:
        b, n = n & 0x7F, n >> 7
        out += bytes([b | (0x80 if n else 0)])
        if not n:
            return out



def dec_value(typ, b, i):
    if typ in FIXED:
        v = struct.unpack_from(FIXED[typ], b, i)[0]
        return v, i + struct.calcsize(FIXED[typ])
    if typ == "String":
        n, i = uleb(b, i)
        return bytes(b[i:i + n]), i + n
    if typ == "Array(String)":
        n, i = uleb(b, i)
        out = []
        for _ in range(n):
            v, i = dec_value("String", b, i)
            out.append(v)
        return out, i
    raise ValueError("no RowBinary decoder for %s" % typ)


def enc_value(typ, v):
    if typ in FIXED:
        return struct.pack(FIXED[typ], v)
    if typ == "String":
        return leb(len(v)) + v
    if typ == "Array(String)":
        return leb(len(v)) + b"".join(enc_value("String", x) for x in v)
    raise ValueError("no RowBinary encoder for %s" % typ)


def decode_rows(cols, b):
    rows, i = [], 0
    while i < len(b):
        row = {}
        for name, typ in cols:
            row[name], i = dec_value(typ, b, i)
        rows.append(row)
    return rows


def encode_rows(cols, rows):
    return b"".join(enc_value(t, r[c]) for r in rows for c, t in cols)


# --- the engine, the schema, the stand-in
conf = os.path.join(WORK, "chdb.xml")
with open(conf, "w") as f:
    f.write("<clickhouse><timezone>UTC</timezone><tcp_port>9000</tcp_port>"
            "<remote_servers><hmb_fleet><shard><replica><host>127.0.0.1"
            "</host><port>9000</port></replica></shard></hmb_fleet>"
            "</remote_servers></clickhouse>\n")
ch = None
if not os.path.exists(LIBCHDB):
    T.ok(False, "libchdb.so at %s (scripts/deps.sh chdb)" % LIBCHDB)
    done()
ch = Chdb(LIBCHDB, ["--path=" + os.path.join(WORK, "db"),
                    "--config-file=" + conf])
version = ch.q("SELECT version()")
T.ok(int(version.split(".")[0]) >= 24,
     "chDB %s: a ClickHouse fleets run (24.x and later)" % version)
T.eq(ch.q("SELECT is_local FROM system.clusters WHERE cluster = 'hmb_fleet'"),
     "1", "the hmb_fleet cluster: one shard, this process")

with open(SCHEMA) as f:
    schema_text = f.read()
stmts = [s for s in re.sub(r"--.*", "", schema_text).split(";") if s.strip()]
bad = []
for s in stmts:
    _, err = ch.run(s)
    if err is not None:
        bad.append("%s...: %s" % (" ".join(s.split())[:60], err))
COLS = schema_columns(schema_text)
# the database, then each table's *_local and its Distributed
T.ok(len(COLS) >= len(ID) and len(stmts) == 1 + 2 * len(COLS) and not bad,
     "the shipped DDL: %d statements, every one accepted" % len(stmts), bad)
got = ch.q("SELECT name, engine FROM system.tables WHERE database = 'hmb' "
           "ORDER BY name").splitlines()
want = sorted(["%s\tDistributed" % t for t in COLS] +
              ["%s_local\tReplacingMergeTree" % t for t in COLS])
T.eq(got, want, "every table of the schema exists with its engine")
T.eq(ch.q("SELECT count() FROM system.warnings"), "0",
     "the engine has no warning after the DDL")
T.ok(set(ID) <= set(COLS) and all(
    ch.q("SELECT groupArray(concat(name, ' ', type)) FROM (SELECT name, "
         "type FROM system.columns WHERE database = 'hmb' AND table = '%s' "
         "ORDER BY position)" % t) ==
    "[%s]" % ",".join("'%s %s'" % c for c in COLS[t]) for t in COLS),
     "the engine's columns and types are the DDL's, in order")

BATCHES = os.path.join(WORK, "batches")
os.mkdir(BATCHES)
sent = []                       # (table, columns, file) of every insert
settings_seen = set()
INSERT = re.compile(r"INSERT INTO (\w+)\.(\w+) \(([^)]*)\) FORMAT RowBinary\Z")


def respond(req):
    """The client's requests, run on chDB: queries as they come, inserts
    with their body from a file."""
    if "query" not in req.query:
        out, err = ch.run(req.body.decode())
        return (500, err) if err is not None else (200, out)
    m = INSERT.match(req.param("query"))
    if not m:
        return 400, "Code: 62. DB::Exception: stand-in: not an insert it knows"
    sets = {k: v[0] for k, v in req.query.items()
            if k not in ("query", "query_id")}
    settings_seen.update(sets)
    with ch.lock:
        path = os.path.join(BATCHES, "%04d-%s.rowbinary" % (len(sent), m.group(2)))
        with open(path, "wb") as f:
            f.write(req.body)
        sent.append((m.group(2), [c.strip() for c in m.group(3).split(",")], path))
    sql = "INSERT INTO %s.%s (%s) FROM INFILE '%s'%s FORMAT RowBinary" % (
        m.group(1), m.group(2), m.group(3), path,
        " SETTINGS " + ", ".join("%s = %s" % kv for kv in sorted(sets.items()))
        if sets else "")
    out, err = ch.run(sql)
    return (500, err) if err is not None else (200, "")


srv = StandIn(respond)

# --- two hosts, last night (the sidecar's realtime at noon of yesterday)
yesterday = ch.q("SELECT yesterday()")
noon = int(datetime.datetime.strptime(yesterday, "%Y-%m-%d").replace(
    tzinfo=datetime.timezone.utc).timestamp() + 43200) * 10**9
MONO = 81_234_567_890
HOSTS = [("a", "db7", 31, "2.1"), ("b", "db8", 32, "3.0")]
truth, final = {}, {}
for name, host, seed, rev in HOSTS:
    dump = os.path.join(WORK, name + ".bin")
    hostf = os.path.join(WORK, name + ".jsonl")
    g = subprocess.run([CMDGEN, "-n", str(N), "--seed", str(seed), "--dump",
                        dump, "--host", hostf, "--gc-every", "50",
                        "--sidecar", "%d:%d" % (noon + seed, MONO)],
                       capture_output=True, text=True)
    c = subprocess.run([ANALYZE, "correlate", dump, hostf, "-j",
                        "--no-commands"], capture_output=True, text=True)
    x = subprocess.run([ANALYZE, "export", "--to", "clickhouse", srv.url,
                        dump, "--host", hostf, "--hostname", host,
                        "--serial", "S-" + name, "--fw-rev", rev, "-j"],
                       capture_output=True, text=True)
    try:
        truth[name], final[name] = json.loads(g.stdout), json.loads(c.stdout)
        summ = json.loads(x.stdout)
    except ValueError:
        summ = {}
    tabs = summ.get("tables", {})
    T.ok(x.returncode == 0 and sorted(tabs) == sorted(ID) and
         all(t.get("verified") is True for t in tabs.values()) and
         tabs["commands"].get("inserted") == N,
         "host %s: export --host to ClickHouse %s exits 0, every table "
         "verified (%s)" % (name, version, ", ".join(
             "%s %s" % (k, v.get("inserted")) for k, v in sorted(tabs.items()))),
         g.stderr + c.stderr + x.stderr + x.stdout)
# a third host: the case of pelcase.py, its drive's Persistent Event Log
# too (export --pel: the pel_events table)
PELW = os.path.join(WORK, "pel")
os.mkdir(PELW)
PK = pelcase.make(PELW)
pelcase.write_clock(PK["log"], PK["mono_before"], pelcase.pg.ts(pelcase.C))
x = subprocess.run([ANALYZE, "export", "--to", "clickhouse", srv.url,
                    PK["dump"], "--host", PK["host"], "--pel", PK["log"],
                    "--hostname", "pel-host", "--day", "2024-03-01",
                    "--trace-id", "6", "-j"], capture_output=True, text=True)
try:
    tb = json.loads(x.stdout).get("tables", {}).get("pel_events", {})
except ValueError:
    tb = {}
T.ok(x.returncode == 0 and tb.get("inserted") == 7 and tb.get("verified"),
     "export --pel to ClickHouse %s: 7 pel_events rows, verified" % version,
     x.stderr[-2000:] + x.stdout[-1000:])
srv.stop()
if T.failed:
    done()
T.ok(settings_seen and all(
    ch.q("SELECT tier FROM system.settings WHERE name = '%s'" % k)
    == "Production" for k in settings_seen),
     "the client's insert settings (%s) are production settings of %s, "
     "not obsolete" % (", ".join(sorted(settings_seen)), version))

# --- the batches, decoded from the DDL's types
rows = {t: [] for t in ALL_ID}
bad = []
for table, cols, path in sent:
    with open(path, "rb") as f:
        body = f.read()
    types = dict(COLS[table])
    tc = [(c, types[c]) for c in cols]
    try:
        rs = decode_rows(tc, body)
    except (ValueError, IndexError, struct.error) as e:
        bad.append("%s: %s" % (path, e))
        continue
    if [c for c, _ in tc] != [c for c, _ in COLS[table]]:
        bad.append("%s: columns %s, not the DDL's order" % (path, cols))
    if encode_rows(tc, rs) != body:
        bad.append("%s: does not re-encode to the same bytes" % path)
    rows[table] += rs
T.ok(sent and not bad, "%d batches, each whole rows of its table in the "
     "DDL's columns and types" % len(sent), bad)
for t in ALL_ID:
    rows[t].sort(key=lambda r: (r["host"], r["trace_id"], r[ALL_ID[t]]))


def table_bytes(t):
    out, err = ch.run("SELECT * FROM hmb.%s ORDER BY host, trace_id, %s "
                      "FORMAT RowBinary" % (t, ALL_ID[t]), "RowBinary")
    return out if err is None else err.encode()


for t in ALL_ID:
    T.ok(table_bytes(t) == encode_rows(COLS[t], rows[t]),
         "%s: the engine gives back the batches' %d rows byte for byte"
         % (t, len(rows[t])))

# --- the batches against the inputs
for name, host, seed, rev in HOSTS:
    recs = [(r.offset, r.seq, r.ts_ns, r.opcode, r.cpu, r.flags, r.payload)
            for r in open_trace(os.path.join(WORK, name + ".bin"))
            if r.kind == KIND_DATA]
    got = [(r["rec_off"], r["seq"], r["fw_ns"], r["opcode"], r["cpu"],
            r["flags"], r["payload"]) for r in rows["fw_records"]
           if r["host"] == host.encode()]
    T.ok(recs and got == recs, "host %s: fw_records rows are the dump's %d "
         "data records (offset, seq, time, opcode, cpu, flags, payload)"
         % (name, len(recs)))
    lost = sum(r["count"] for r in rows["losses"] if r["host"] == host.encode()
               and r["counter"] == b"lost")
    T.eq(lost, truth[name]["records_lost"], "host %s: losses rows count the "
         "generator's lost records" % name)
    clk = [(r["kind"], r["host_ns"], r["monotonic_ns"]) for r in rows["clock"]
           if r["host"] == host.encode()]
    T.eq(clk, [(b"host_open", noon + seed, MONO)],
         "host %s: the clock row is the sidecar's" % name)
    cmds = [r for r in rows["commands"] if r["host"] == host.encode()]
    tot = final[name]["totals"]
    classes = {}
    for r in cmds:
        classes[r["match_class"].decode()] = classes.get(
            r["match_class"].decode(), 0) + 1
    T.ok(len(cmds) == tot["commands"] == N and all(
        classes.get(k, 0) == tot.get(k, 0) for k in
        ("matched", "partial", "unmatched")) and
        {r["fw_rev"] for r in cmds} == {rev.encode()} and
        {r["day"] for r in cmds} == {rows["fw_records"][0]["day"]},
         "host %s: one commands row per command correlate reports, its "
         "match classes %s, the drive's revision, the export's day"
         % (name, classes))
    days = {r["day"] for t in ID for r in rows[t] if r["host"] == host.encode()}
    T.eq([str(datetime.date(1970, 1, 1) + datetime.timedelta(d))
          for d in days], [yesterday], "host %s: every row on the sidecar's "
         "day (yesterday, UTC)" % name)
    for key, expr, cond in PHASES:
        pc = final[name].get("percentiles", {}).get(key, {})
        where = "host = '%s' AND %s" % (host, cond)
        n = int(ch.q("SELECT count() FROM hmb.commands WHERE " + where))
        bad = percentiles_bad(key, pc, ch.q(percentiles_sql(expr, where)))
        T.ok(pc.get("n") == n and n > N // 2 and not bad,
             "host %s: %s: correlate's p50 p90 p99 p99.9 max %s %s's "
             "quantileExact over the %d rows" % (
                 name, key, "equal" if pc.get("exact") else "hold",
                 version, n), "; ".join(bad) or str(pc))

# --- clock estimates and steps (the live agent's), in the client's layout:
# the host_open rows above re-encode to the client's bytes, so these are
# what the client would send.
today = datetime.date.fromisoformat(yesterday) + datetime.timedelta(1)
dnum = (today - datetime.date(1970, 1, 1)).days
extra = []
for k, (name, host, seed, rev) in enumerate(HOSTS):
    base = dict(rows["clock"][k], ring=b"agent", trace_id=1000 + k,
                fw_ns=0, monotonic_ns=0, boottime_ns=0, drift_err_ppm=0.25)
    for i in range(12):
        extra.append(dict(base, day=dnum - (10 if i == 11 else i % 3),
                          clk_id=i, kind=b"step" if i in (4, 9) else
                          b"estimate" if i else b"host_open",
                          host_ns=noon + i * 10**9, fw_ns=i * 10**9,
                          offset_ns=4e10 + (k + 1) * i * 1.5e5 - i * i * 1e4,
                          drift_ppm=(-1) ** k * (10 + 7 * k + 0.5 * i),
                          err_ns=100.0 + 37 * ((i * (k + 3)) % 5)))
EST = os.path.join(WORK, "estimates.rowbinary")
with open(EST, "wb") as f:
    f.write(encode_rows(COLS["clock"], extra))
_, err = ch.run("INSERT INTO hmb.clock FROM INFILE '%s' SETTINGS "
                "insert_distributed_sync = 1 FORMAT RowBinary" % EST)
T.ok(err is None, "%d clock estimate and step rows in" % len(extra), err)
rows["clock"] += extra
TODAY = dnum
YDAY = dnum - 1


# --- every query of docs/fleet.md, against its result computed here
def qexact(vals, level):
    s = sorted(vals)
    return s[min(int(level * len(s)), len(s) - 1)]


def q1():
    by = {}
    for r in rows["commands"]:
        if (r["day"] == YDAY and r["match_class"] == b"matched" and
                r["media_start_ns"] > 0 and
                r["media_end_ns"] >= r["media_start_ns"]):
            by.setdefault(r["fw_rev"], []).append(
                r["media_end_ns"] - r["media_start_ns"])
    out = [(k, len(v), qexact(v, 0.999) / 1000) for k, v in by.items()]
    return sorted(out, key=lambda x: -x[2]), [2]


def q2():
    reads = {}
    for r in rows["commands"]:
        if r["day"] == YDAY and r["opcode"] == 2:
            reads.setdefault((r["host"], r["ctrl"]), []).append(r)
    out = []
    for (h, c), rs in reads.items():
        p = qexact([(r["complete_ns"] - r["submit_ns"]) % U64 for r in rs],
                   0.999)
        slow = [r for r in rs if (r["complete_ns"] - r["submit_ns"]) % U64 >= p]
        gc = sum(1 for r in slow if b"gc" in r["bg_in_flight"])
        if gc:
            out.append((h, c, len(slow), gc, round(gc / len(slow), 3)))
    return sorted(out, key=lambda x: (-x[4], -x[2])), [4, 2]


def q2b():
    by = {}
    for r in rows["fw_records"]:
        if r["day"] == YDAY and r["opcode"] == 512:
            by.setdefault((r["host"], r["ring"]), []).append(r["fw_ns"])
    out = [(h, g, len(v), min(v), max(v)) for (h, g), v in by.items()]
    return sorted(out, key=lambda x: -x[2]), [2]


def q3():
    by = {}
    for r in rows["clock"]:
        if r["day"] >= TODAY - 7 and r["kind"] in (b"estimate", b"step"):
            by.setdefault((r["host"], r["ring"]), []).append(r)
    out = []
    for (h, g), rs in by.items():
        offs = [r["offset_ns"] for r in rs]
        out.append((h, g, max(rs, key=lambda r: r["host_ns"])["drift_ppm"],
                    (max(offs) - min(offs)) / 1e6,
                    max(r["err_ns"] for r in rs),
                    sum(1 for r in rs if r["kind"] == b"step")))
    return sorted(out, key=lambda x: -abs(x[2])), [2]


def q4():
    by = {}
    for r in rows["losses"]:
        if r["day"] == YDAY:
            by.setdefault((r["host"], r["ring"], r["layer"], r["counter"]),
                          []).append(r)
    out = [k + (sum(r["count"] for r in v), min(r["fw_ns_from"] for r in v),
                max(r["fw_ns_to"] for r in v)) for k, v in by.items()]
    return sorted(out, key=lambda x: -x[4]), [4]


def qpel():
    by = {}
    for r in rows["commands"]:
        by.setdefault((r["host"], r["trace_id"]), []).append(r)
    out = []
    for e in rows["pel_events"]:
        n = sum(1 for c in by.get((e["host"], e["trace_id"]), [])
                if e["place"] == b"placed" and
                c["submit_ns"] <= e["host_ns"] + e["bound_ns"] and
                c["complete_ns"] + e["bound_ns"] >= e["host_ns"])
        if n:
            out.append((e["pel_id"], e["event"], n))
    # and the case's own truth (pelcase.py): the commands each overlapped
    if {i: n for i, _, n in out} != {i: len(v["over"]) for i, v in
                                     PK["placed"].items() if v["over"]}:
        out.append(("pelcase.py's truth disagrees with the rows", b"", 0))
    return sorted(out), [0]


# (a phrase only that query has, its result here, what a non-empty
# result needs)
TRUTH = [("quantileExact(0.999)(media_end_ns", q1),
         ("AS under_gc", q2),
         ("AND opcode = 512", q2b),
         ("argMax(drift_ppm, host_ns)", q3),
         ("FROM hmb.losses", q4),
         ("FROM hmb.pel_events", qpel)]


def cell(v):
    if isinstance(v, bytes):
        return v.decode()
    if isinstance(v, float):
        return "%.12g" % v
    return str(v)


def norm(text, like):
    """The engine's TabSeparated answer as cell() shows the values of the
    row like (the types of the answer's columns, as computed here)."""
    out = []
    for line in text.splitlines():
        r = []
        for x, w in zip(line.split("\t"), like):
            r.append(cell(float(x) if isinstance(w, float) else
                          int(x) if isinstance(w, int) else x.encode()))
        out.append(tuple(r))
    return out


with open(DOC) as f:
    doc = f.read()
queries = re.findall(r"^```sql\n(.*?)^```$", doc, re.S | re.M)
answers = []                    # (number, name, sql, rows, a row computed here)
T.ok(len(queries) == len(TRUTH), "docs/fleet.md has %d queries, each with "
     "its result computed here" % len(queries))
for i, sql in enumerate(queries, 1):
    fn = [f for phrase, f in TRUTH if phrase in sql]
    if len(fn) != 1:
        T.ok(False, "docs/fleet.md query %d: no result computed here for it"
             % i, sql)
        continue
    raw, keys = fn[0]()
    want = [tuple(cell(x) for x in r) for r in raw]
    out, err = ch.run(sql)
    if err is not None:
        T.ok(False, "docs/fleet.md query %d (%s) runs on %s" % (
            i, fn[0].__name__, version), err)
        continue
    try:
        got = norm(out.decode(), raw[0] if raw else ())
    except ValueError as e:
        got = [("not the columns computed here: %s" % e,)]
    answers.append((i, fn[0].__name__, sql, got, raw[0] if raw else ()))
    # rows that tie on ORDER BY come in any order
    T.ok(want and sorted(got) == sorted(want) and
         [[r[k] for k in keys] for r in got] ==
         [[r[k] for k in keys] for r in want],
         "docs/fleet.md query %d (%s): %d rows on %s, as computed from the "
         "rows" % (i, fn[0].__name__, len(got), version),
         ["got:  %s" % (r,) for r in got[:8]] +
         ["want: %s" % (r,) for r in want[:8]])


# --- the same batches and queries on Debian's 18.16 server (one shard of
# ch-cluster, the schema applied by it): the same answers
def ch_post(url, sql, body=None, **params):
    qs = urllib.parse.urlencode(dict(params, **({"query": sql} if body
                                                  is not None else {})))
    req = urllib.request.Request(url + "/?" + qs, data=body if body is not
                                 None else sql.encode(), method="POST")
    try:
        with urllib.request.urlopen(req, timeout=120) as r:
            return r.read().decode(), None
    except urllib.error.HTTPError as e:
        return None, e.read().decode(errors="replace")[:2000]
    except OSError as e:
        return None, str(e)


def old_server():
    if not shutil.which("clickhouse-server"):
        T.skip("the queries' answers on clickhouse-server 18.16",
               "no clickhouse-server (scripts/deps.sh fleet)")
        return
    chdir = os.path.join(WORK, "ch")
    r = subprocess.run([CLUSTER, "start", chdir, "--shards", "1"],
                       capture_output=True, text=True)
    if not T.ok(r.returncode == 0, "clickhouse-server: one ch-cluster shard "
                "with the schema", r.stderr[-2000:]):
        return
    try:
        with open(os.path.join(chdir, "env")) as f:
            url = re.search(r"CH_URL_1=['\"]?([^'\"\n]+)", f.read()).group(1)
        old, _ = ch_post(url, "SELECT version()")
        bad = []
        for table, cols, path in sent + [("clock", [c for c, _ in COLS["clock"]],
                                          EST)]:
            with open(path, "rb") as f:
                _, err = ch_post(url, "INSERT INTO hmb.%s (%s) FORMAT RowBinary"
                                 % (table, ", ".join(cols)), f.read(),
                                 insert_distributed_sync=1)
            if err is not None:
                bad.append("%s: %s" % (path, err))
        n = [ch_post(url, "SELECT count() FROM hmb.%s" % t)[0] for t in ID]
        T.ok(not bad and [int(x or -1) for x in n] ==
             [len(rows[t]) for t in ID],
             "clickhouse-server %s: the same batches in (%s rows)"
             % ((old or "?").strip(), ", ".join(x.strip() for x in n if x)),
             bad)
        for i, name, sql, got, like in answers:
            out, err = ch_post(url, sql)
            try:
                res = norm(out, like) if err is None else None
            except ValueError as e:
                res, err = None, str(e)
            T.ok(res is not None and sorted(res) == sorted(got),
                 "docs/fleet.md query %d (%s): clickhouse-server %s answers "
                 "as %s" % (i, name, (old or "?").strip(), version),
                 [err] if err else ["18.16: %s" % (r,) for r in res[:8]] +
                 ["%s: %s" % (version, r) for r in got[:8]])
    finally:
        subprocess.run([CLUSTER, "stop", chdir], capture_output=True)


old_server()
done()
