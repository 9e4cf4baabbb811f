#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The fleet client's credentials and what it shows of a server, against a
stand-in for ClickHouse's HTTP interface that records every request:

  - the user and the password come from --export-credentials FILE, the
    URL, or $CLICKHOUSE_USER / $CLICKHOUSE_PASSWORD, each from the first
    that has it, and reach the server as X-ClickHouse-User/-Key headers,
    never in the request line;
  - a credentials file open to group or others, or not a regular file (a
    FIFO: refused without waiting for a writer), is refused;
  - no error, retry or summary line shows the password, a malformed URL's
    included;
  - escape sequences in the server's answers reach the terminal as \\xNN.

usage: t05-untrusted.py ANALYZE
"""

import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(TOP, "python"))
sys.path.insert(0, os.path.join(TOP, "tests", "formats"))
sys.path.insert(0, HERE)
from hmb_trace.writer import encode_record  # noqa: E402
from standin import StandIn  # noqa: E402
from tap import Tap  # noqa: E402

ANALYZE = sys.argv[1]
T = Tap()
WORK = tempfile.mkdtemp(prefix="hmb-fleet-t05.")


def refuse_inserts(n, insert):
    """Row counts 0; every insert refused for good: the export ends."""
    if insert:
        return 500, b"Code: 60, e.displayText() = DB::Exception: fake: no table"
    return 200, b"0\t0\n"


class Server:
    """A stand-in (standin.py) that records each request and answers what
    script(n, insert) says."""

    def __init__(self, script=refuse_inserts):
        self.seen = []
        self.script = script
        self.srv = StandIn(self.respond)
        self.url = self.srv.url

    def respond(self, req):
        self.seen.append({"path": req.path,
                          "user": req.headers.get("X-ClickHouse-User"),
                          "key": req.headers.get("X-ClickHouse-Key")})
        return self.script(len(self.seen), "query" in req.query)

    def stop(self):
        self.srv.stop()


dump = os.path.join(WORK, "t.bin")
with open(dump, "wb") as f:
    for i in range(20):
        f.write(encode_record(i, 1000 + i, 3, 0, 0, bytes(8)))
BASE = ["export", "--to", "clickhouse", "--hostname", "h", "--day",
        "2024-01-01", "--retries", "1", "--backoff-ms", "1", "--timeout", "5"]


def export(url, *extra, env=None, timeout=30):
    e = {k: v for k, v in os.environ.items() if not k.startswith("CLICKHOUSE_")}
    e.update(env or {})
    p = subprocess.run([ANALYZE] + BASE + list(extra) + [url, dump],
                       capture_output=True, env=e, timeout=timeout)
    return p.returncode, p.stdout + p.stderr


def cred_file(name, text, mode=0o600):
    path = os.path.join(WORK, name)
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, mode)
    return path


def who(s):
    """(user, key) of the first request, and whether any request line held
    credentials."""
    if not s.seen:
        return None, False
    leak = any("user=" in r["path"] or "password=" in r["path"] for r in s.seen)
    return (s.seen[0]["user"], s.seen[0]["key"]), leak


# --- where the credentials come from, and which wins
s = Server()
H = s.url[len("http://"):]
cases = [
    ("URL query", s.url + "/?user=qu&password=QPW1", [], {}, ("qu", "QPW1")),
    ("URL user information", "http://uu:UPW2@" + H, [], {}, ("uu", "UPW2")),
    ("environment", s.url, [], {"CLICKHOUSE_USER": "eu",
                                "CLICKHOUSE_PASSWORD": "EPW3"}, ("eu", "EPW3")),
    ("file over URL over environment", s.url + "/?user=qu&password=QPW1",
     ["--export-credentials", cred_file("all", "# fleet\nuser=fu\npassword=F PW4\n")],
     {"CLICKHOUSE_USER": "eu", "CLICKHOUSE_PASSWORD": "EPW3"}, ("fu", "F PW4")),
    ("each field from the first that has it", s.url + "/?user=qu",
     ["--export-credentials", cred_file("pw", "password=FPW5\n")],
     {"CLICKHOUSE_USER": "eu"}, ("qu", "FPW5")),
    ("a password alone is the default user's", s.url, [],
     {"CLICKHOUSE_PASSWORD": "EPW6"}, ("default", "EPW6")),
]
for what, url, extra, env, want in cases:
    del s.seen[:]
    rc, out = export(url, *extra, env=env)
    got, leak = who(s)
    T.ok(got == want and not leak,
         "credentials from %s: %s/%s in headers, none in the request line"
         % (what, want[0], want[1]), "rc %d, got %r, leak %s\n%s" %
         (rc, got, leak, out.decode(errors="replace")))
    T.ok(want[1].encode() not in out,
         "credentials from %s: the password appears in no output line" % what,
         out.decode(errors="replace"))
del s.seen[:]
rc, out = export(s.url)
T.ok(who(s)[0] == (None, None), "no credentials anywhere: no headers",
     s.seen[:1])

# --- the file's checks
for what, path, text in [
        ("open to group", cred_file("g", "password=GPW7\n", 0o640),
         "open to group or others (mode 0640)"),
        ("open to others", cred_file("o", "password=GPW7\n", 0o604),
         "open to group or others (mode 0604)"),
        ("a bad line", cred_file("bad", "user=x\nGPW7\n"), ":2: not a user= or password= line"),
        ("missing", os.path.join(WORK, "nope"), "cannot open the credentials file")]:
    del s.seen[:]
    rc, out = export(s.url, "--export-credentials", path)
    T.ok(rc == 2 and text.encode() in out and not s.seen and b"GPW7" not in out,
         "credentials file %s: refused before any request, says why, shows "
         "no password" % what, "rc %d: %s" % (rc, out.decode(errors="replace")))
fifo = os.path.join(WORK, "fifo")
os.mkfifo(fifo, 0o600)
try:
    rc, out = export(s.url, "--export-credentials", fifo, timeout=20)
    T.ok(rc == 2 and b"not a regular file" in out,
         "credentials file a FIFO: refused at once, not waited on",
         "rc %d: %s" % (rc, out.decode(errors="replace")))
except subprocess.TimeoutExpired:
    T.ok(False, "credentials file a FIFO: refused at once, not waited on",
         "hung on the FIFO")
s.stop()

# --- no line shows a password: malformed URLs, retries, the summary
for url in ["http://u:TOPSECRET1@[::1", "ftp://u:TOPSECRET1@host/",
            "u:TOPSECRET1@host:8123", "http://u:TOPSECRET1@/x",
            "http://127.0.0.1:1/?password=TOPSECRET1&user=u"]:
    rc, out = export(url)
    T.ok(rc in (1, 2) and b"TOPSECRET1" not in out and
         (rc == 1 or b"***" in out),
         "URL %s: no line shows the password (a refused URL: ***)" % url,
         "rc %d: %s" % (rc, out.decode(errors="replace")))


def busy(n, insert):
    return 503, b"Service Unavailable"


s = Server(busy)
H = s.url[len("http://"):]
for fmt in ("text", "json"):
    rc, out = export("http://u:TOPSECRET2@" + H + "/?password=TOPSECRET3",
                     "--format", fmt)
    T.ok(rc == 1 and b"retry 1/1" in out and b"TOPSECRET" not in out,
         "retry lines and the %s summary show no password" % fmt,
         out.decode(errors="replace"))
s.stop()

# --- the server's words are escaped
ESC = b"\x1b]0;owned\x07\x1b[2J\x9b"


def hostile_error(n, insert):
    return 500, b"Code: 60, e.displayText() = DB::Exception: " + ESC + \
        b" table, e.what() = DB::Exception"


def hostile_count(n, insert):
    return 200, ESC + b"12\n"


for what, script in (("an error message", hostile_error),
                     ("an unexpected answer", hostile_count)):
    s = Server(script)
    for fmt in ("text", "json"):
        rc, out = export(s.url, "--format", fmt)
        T.ok(rc == 1 and b"\x1b" not in out and b"\x07" not in out and
             b"\x9b" not in out and b"\\x1b]0;owned\\x07\\x1b[2J\\x9b" in out,
             "%s from the server with escape sequences (%s): shown as \\xNN"
             % (what, fmt), repr(out))
    s.stop()

subprocess.run(["rm", "-rf", WORK])
sys.exit(T.done())
