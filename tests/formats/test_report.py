#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""TAP tests of `hmb-trace-analyze report`: the HTML is self-contained,
states the counts the generator knows, and renders in headless Chromium
without console messages into a non-blank screenshot.

usage: test_report.py BINARY [--sample PNG] [--no-browser]
"""

import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from fwgen import Workload, EVENT_NAME, write_agent_jsonl  # noqa: E402
from tap import Tap, run  # noqa: E402

T = Tap()
BIN = sys.argv[1]
SAMPLE = sys.argv[sys.argv.index("--sample") + 1] \
    if "--sample" in sys.argv else None
WORK = tempfile.mkdtemp(prefix="hmb-formats-report.")
N = int(os.environ.get("HMB_FORMATS_CMDS", "3000"))
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROME_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu",
                "--disable-quic", "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update", "--disable-sync",
                "--enable-logging=stderr", "--v=0"]


def chromium(page, mode, width=1100, height=2400):
    """Run headless Chromium on @page with a fresh profile.  mode is
    ["--dump-dom"] or ["--screenshot=PATH"].  Returns (stdout, console
    lines, rc)."""
    prof = tempfile.mkdtemp(prefix="prof.", dir=WORK)
    r = subprocess.run([CHROMIUM, *CHROME_FLAGS, "--user-data-dir=" + prof,
                        "--window-size=%d,%d" % (width, height), *mode,
                        "file://" + page],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       timeout=240)
    err = r.stderr.decode(errors="replace").splitlines()
    console = [ln for ln in err if ":CONSOLE" in ln or "Uncaught" in ln]
    return r.stdout.decode(errors="replace"), console, r.returncode


def png_pixels(path):
    """Decode an 8-bit RGB/RGBA non-interlaced PNG (what Chromium writes)
    with the standard library; returns (width, height, rows of bytes, bpp)."""
    data = open(path, "rb").read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, hdr = 8, b"", None
    while pos < len(data):
        ln, typ = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + ln]
        if typ == b"IHDR":
            hdr = struct.unpack(">IIBBBBB", body)
        elif typ == b"IDAT":
            idat += body
        pos += 12 + ln
    w, h, depth, ctype, _, _, interlace = hdr
    assert depth == 8 and ctype in (2, 6) and interlace == 0, hdr
    bpp = 3 if ctype == 2 else 4
    raw = zlib.decompress(idat)
    stride = w * bpp
    rows, prev, i = [], bytearray(stride), 0
    for _ in range(h):
        ft = raw[i]
        line = bytearray(raw[i + 1:i + 1 + stride])
        i += 1 + stride
        for x in range(stride):
            a = line[x - bpp] if x >= bpp else 0
            b = prev[x]
            c = prev[x - bpp] if x >= bpp else 0
            if ft == 1:
                line[x] = (line[x] + a) & 255
            elif ft == 2:
                line[x] = (line[x] + b) & 255
            elif ft == 3:
                line[x] = (line[x] + (a + b) // 2) & 255
            elif ft == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                pr = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
                line[x] = (line[x] + pr) & 255
        rows.append(bytes(line))
        prev = line
    return w, h, rows, bpp


def colour_stats(path):
    w, h, rows, bpp = png_pixels(path)
    colours = set()
    nonwhite = 0
    for row in rows:
        for x in range(0, w * bpp, bpp):
            px = row[x:x + 3]
            colours.add(px)
            if px != b"\xff\xff\xff":
                nonwhite += 1
    return w, h, len(colours), nonwhite / float(w * h)


# --------------------------------------------------------------- the HTML
w = Workload(n_cmds=N, seed=5)
n = len(w.all)
w.lose([(n // 3, 40), (n // 2, 5)])
dump = os.path.join(WORK, "trace.bin")
w.write(dump)
hosts = w.host_commands(3_000_000_000, skip_first=N // 10)
hpath = os.path.join(WORK, "host.jsonl")
write_agent_jsonl(hpath, hosts)
html = os.path.join(WORK, "report.html")
r = run([BIN, "report", dump, "--host", hpath, "-o", html])
T.eq(r.returncode, 0, "report --host exits 0")
doc = open(html, encoding="utf-8").read() if os.path.exists(html) else ""
T.ok(doc.startswith("<!DOCTYPE html>") and doc.rstrip().endswith("</html>"),
     "a whole HTML document")
ext = re.findall(r'(?:src|href)\s*=\s*["\']?([^"\' >]+)', doc, re.I)
urls = [u for u in re.findall(r'(?:https?:)?//[\w.-]+', doc)
        if u != "http://www.w3.org" and not u.startswith("//")]
T.ok(not ext and not urls and "<link" not in doc and "@import" not in doc,
     "self-contained: no src/href, no link, no URL but the SVG namespace",
     (ext, urls))
lost = sum(g[1] for g in w.gaps)
m = re.search(r'id="loss-summary">(\d+) records? lost in (\d+) gaps?', doc)
T.ok(m and int(m.group(1)) == lost and int(m.group(2)) == len(w.gaps),
     "loss summary: %d records in %d gaps" % (lost, len(w.gaps)),
     m.group(0) if m else "no loss summary")
rows = re.findall(r'<td>(\d+)</td><td>(\d+)\.\.(\d+)</td>', doc)
T.eq(sorted((int(a), int(b)) for a, b, _ in rows),
     sorted((g[1], g[0]) for g in w.gaps), "every gap listed with its seq")
counts = {}
for rec in w.kept:
    counts[rec.opcode] = counts.get(rec.opcode, 0) + 1
found = {int(op, 16): int(c) for op, c in re.findall(
    r'>0x([0-9a-f]{4}) [^<]*</text><rect[^>]*/><text[^>]*>(\d+)</text>', doc)}
T.eq(found, counts, "events by opcode: every opcode with its count")
T.ok(all(EVENT_NAME[op] in doc for op in counts if op in EVENT_NAME),
     "opcodes named from the dictionary")
exp = w.expected_commands()
complete = [ph for ph in exp.values() if ph[0][0] == 1 and ph[-1][0] == 5]
m = re.search(r"total: fetch -&gt; cqe_posted</h3><p class=\"small\">n=(\d+)",
              doc)
T.ok(m and int(m.group(1)) == len(complete),
     "total latency histogram counts the %d complete commands"
     % len(complete), m.group(0) if m else "no total histogram")
slow = max(ph[-1][1] - ph[0][1] for ph in complete)
slow_txt = re.search(r'<table class="slow">.*?<td>1</td><td>\w+</td>'
                     r'<td>\d+</td><td>0x[0-9a-f]{4}</td><td>([^<]+)</td>',
                     doc, re.S)


def fmt_dur(ns):
    if ns < 1000:
        return "%d ns" % ns
    if ns < 1000000:
        return "%.1f µs" % (ns / 1e3)
    if ns < 1000000000:
        return "%.2f ms" % (ns / 1e6)
    return "%.3f s" % (ns / 1e9)


T.ok(slow_txt and slow_txt.group(1) == fmt_dur(slow),
     "slowest command first, with its firmware total (%s)" % fmt_dur(slow),
     slow_txt.group(1) if slow_txt else "no slowest table")
# the total's percentiles: quantileExact's of the complete commands
tot = sorted(ph[-1][1] - ph[0][1] for ph in complete)
want_p = ", ".join("%s %s" % (name, fmt_dur(tot[min(int(lv * len(tot)),
                                                 len(tot) - 1)]))
                   for name, lv in (("p50", 0.5), ("p90", 0.9),
                                    ("p99", 0.99), ("p99.9", 0.999)))
m = re.search(r"total: fetch -&gt; cqe_posted</h3><p class=\"small\">"
              r"n=\d+, min [^,]+, ([^<]*), max", doc)
T.ok(m and m.group(1) == want_p,
     "total latency: p50 p90 p99 p99.9 those of the complete commands, "
     "exact (%s)" % want_p, m.group(0) if m else "no total histogram")
n_charts = doc.count('<svg class="chart"')
whole = {i for i, ph in exp.items() if ph[0][0] == 1 and ph[-1][0] == 5}
want_m = sum(1 for h in hosts if h["idx"] in whole)
m = re.search(r'id="host-summary">[^<]*: (\d+) host commands; <b>(\d+) '
              r'matched', doc)
T.ok(m and int(m.group(1)) == len(hosts) and int(m.group(2)) == want_m,
     "host section: %d host commands, %d matched" % (len(hosts), want_m),
     m.group(0) if m else "no host section")
T.ok('id="host-slow"' in doc and 'id="clock"' in doc and
     "host submit -&gt; fw fetch (clock-mapped)" in doc,
     "host section: clock, breakdown histograms, slowest host commands")

# Hostile strings from HOST_EVENTS are text in the page, never markup:
# every host command named <b>X</b>.
hpath2 = os.path.join(WORK, "host-markup.jsonl")
with open(hpath) as fh, open(hpath2, "w") as out:
    for ln in fh:
        out.write(ln.replace('"opc": "read"', '"opc": "<b>X</b>"')
                  .replace('"opc": "write"', '"opc": "<b>X</b>"'))
html2 = os.path.join(WORK, "markup.html")
r2 = run([BIN, "report", dump, "--host", hpath2, "-o", html2])
doc2 = open(html2).read() if r2.returncode == 0 else ""
T.ok(r2.returncode == 0 and "&lt;b&gt;X&lt;/b&gt;" in doc2 and
     "<b>X</b>" not in doc2,
     "a host opcode named <b>X</b> appears escaped, not as markup",
     r2.stderr)

# Errors
r2 = run([BIN, "report", dump])
T.eq(r2.returncode, 2, "report without -o is a usage error")
bad = os.path.join(WORK, "bad.bin")
with open(bad, "wb") as f:
    f.write(w.dump()[:-3])
out_bad = os.path.join(WORK, "bad.html")
r2 = run([BIN, "report", bad, "-o", out_bad])
T.ok(r2.returncode == 1 and b"bad.bin" in r2.stderr and
     not os.path.exists(out_bad),
     "a truncated dump: exit 1 naming the file, no half report left",
     r2.stderr)
empty = os.path.join(WORK, "empty.bin")
open(empty, "wb").close()
r2 = run([BIN, "report", empty, "-o", os.path.join(WORK, "empty.html")])
T.eq(r2.returncode, 0, "an empty dump gives a report")

# ------------------------------------------------------------ in Chromium
if "--no-browser" in sys.argv:
    # the ASan run checks the C code; the page itself was checked above
    sys.exit(T.done())
if not CHROMIUM:
    for what in ("negative control: a script error is seen",
                 "report loads without console messages",
                 "inline script ran: every chart has a size",
                 "screenshot written", "screenshot is not blank"):
        T.skip(what, "chromium not installed (scripts/deps.sh report)")
    sys.exit(T.done())

neg = os.path.join(WORK, "neg.html")
with open(neg, "w") as f:
    f.write("<!DOCTYPE html><html><body><p>x</p>"
            "<script>undefinedFn();</script></body></html>")
_, console, _ = chromium(neg, ["--dump-dom"])
T.ok(any("Uncaught" in ln for ln in console),
     "negative control: a script error is seen in the console log", console)

dom, console, rc = chromium(html, ["--dump-dom"])
T.ok(rc == 0 and not console, "report loads without console messages",
     console or "rc %d" % rc)
m = re.search(r'<p[^>]*id="render-status"[^>]*>', dom)
st = m.group(0) if m else ""
T.ok('data-ok="1"' in st and 'data-charts="%d"' % n_charts in st,
     "inline script ran: all %d charts have a size" % n_charts, st)

png = os.path.join(WORK, "report.png")
_, console, rc = chromium(html, ["--screenshot=" + png])
T.ok(rc == 0 and os.path.exists(png) and not console, "screenshot written",
     console)
if os.path.exists(png):
    width, height, ncol, frac = colour_stats(png)
    T.ok(width == 1100 and height == 2400 and ncol >= 16 and frac > 0.05,
         "screenshot is not blank: %d colours, %.0f%% non-white"
         % (ncol, 100 * frac), (width, height, ncol, frac))
    if SAMPLE:
        shutil.copy(png, SAMPLE)
else:
    T.ok(False, "screenshot is not blank")
sys.exit(T.done())
