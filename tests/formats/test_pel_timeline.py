#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""TAP tests of the Persistent Event Log on the join's timeline:
`correlate --pel FILE` with and without the saved log's clock reading
(FILE.clock), on the case pelcase.py makes (its truth computed there
from the rule in user/nvme/pel.h).

usage: test_pel_timeline.py BINARY
"""

import json
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import pelcase  # noqa: E402
from pelcase import pg  # noqa: E402
from tap import Tap, run  # noqa: E402

T = Tap()
BIN = sys.argv[1]
WORK = tempfile.mkdtemp(prefix="hmb-formats-pel.")


def main():
    print("TAP version 13")
    k = pelcase.make(WORK)
    dump, host, log, hosts = k["dump"], k["host"], k["log"], k["hosts"]
    r = run([BIN, "correlate", dump, host, "-j", "--pel", log])
    T.ok(r.returncode == 0, "correlate --pel without FILE.clock: exit 0",
         r.stderr.decode())
    lines = [json.loads(x) for x in r.stdout.decode().splitlines()] \
        if r.returncode == 0 else []
    pel = [x for x in lines if x.get("type") == "pel"]
    T.ok(len(pel) == 7 and all(not x["placed"] and x["place"] == "no_clock"
                               and x["host_ns"] is None for x in pel),
         "no clock reading: the 7 events listed, none placed", pel[:2])

    pelcase.write_clock(log, k["mono_before"], pg.ts(pelcase.C))
    r = run([BIN, "correlate", dump, host, "-j", "--pel", log])
    if not T.ok(r.returncode == 0, "correlate --pel with FILE.clock: "
                "exit 0", r.stderr.decode()):
        return
    lines = [json.loads(x) for x in r.stdout.decode().splitlines()]
    types = [x["type"] for x in lines]
    T.ok(types == ["cmd"] * len(hosts) + ["pel"] * 7 + ["final"],
         "json: the cmd lines, then one pel line per event, then final",
         types[-10:])
    pel = {x["index"]: x for x in lines if x["type"] == "pel"}
    final = lines[-1]
    T.eq({i: x["place"] for i, x in pel.items()}, pelcase.PLACE,
         "each event placed, or why not")
    T.eq([i for i, x in pel.items() if x["placed"]], [1, 2, 3],
         "placed events first, in host time order")
    want = k["placed"]
    T.eq({i: (pel[i]["host_ns"], pel[i]["bound_ns"]) for i in want},
         {i: (v["host_ns"], v["bound_ns"]) for i, v in want.items()},
         "host time M - (C - E) ms, bound bracket/2 + 1 ms + 100 ppm of "
         "the age")
    for i, v in want.items():
        x = pel[i]
        listed = sorted((c["qid"], c["cid"], c["submit_ns"])
                        for c in x["commands"])
        T.ok(x["commands_overlapped"] == len(v["over"]) and
             listed == v["over"] and
             x["commands_in_flight"] == v["in_flight"],
             "event %d: the %d commands it overlapped (%d in flight)"
             % (i, len(v["over"]), v["in_flight"]), (x, v))
    T.ok(pel[2]["commands_in_flight"] >= 1 and
         pel[3]["commands_overlapped"] == 0 and
         pel[2]["fields"] == "over_temp=3 threshold=75",
         "the excursion inside a command has it in flight; the one "
         "after the last command overlaps none")
    p = final.get("pel", {})
    T.ok(p.get("events") == 7 and p.get("placed") == 3 and
         p.get("not_placed") == {"no_clock": 0, "before_epoch": 1,
                                 "other_origin": 1, "after_read": 1,
                                 "before_boot": 1} and
         p.get("clock_monotonic_ns") == k["mid"],
         "final: the events counted, placed and not, and why", p)

    r = run([BIN, "correlate", dump, host, "--pel", log])
    text = r.stdout.decode()
    sec = text[text.find("persistent event log"):].splitlines()
    T.ok(r.returncode == 0 and len(sec) == 8 and
         "7 events, 3 placed on the host clock, 4 not placed" in sec[0] and
         "#1 power_on_reset" in sec[1] and "#2 thermal_excursion" in sec[2]
         and "#3 thermal_excursion" in sec[3] and
         sec[4].startswith("  not placed (before_epoch): #0"),
         "text: a section, placed events in host time order, then the "
         "ones not placed", sec)
    report(k)
    # a clock reading that does not parse: said, exit 1
    with open(log + ".clock", "a") as f:
        f.write("monotonic_after_ns=x\n")
    r = run([BIN, "correlate", dump, host, "--pel", log])
    T.ok(r.returncode == 1 and b"pel.bin.clock: not a number" in r.stderr,
         "a bad FILE.clock: its line said, exit 1", r.stderr.decode())


def report(k):
    """report --pel: a mark on the timeline per placed event inside the
    trace, a table row per event."""
    html = os.path.join(WORK, "r.html")
    r = run([BIN, "report", k["dump"], "--host", k["host"], "--pel",
             k["log"], "-o", html])
    if not T.ok(r.returncode == 0, "report --pel: exit 0", r.stderr):
        return
    page = open(html).read()
    table = page[page.find('id="pel-events"'):]
    table = table[:table.find("</table>")]
    rows = table.count("<tr><td>")
    marks = re.findall(r'<g class="pel">.*?<title>PEL #(\d+) ', page)
    T.ok(rows == 7 and "before_epoch" in table and
         "over_temp=3 threshold=75" in table and
         sorted(int(m) for m in marks) == [2] and
         "3 placed on the host clock" in page,
         "report --pel: the 7 events in its table; a timeline mark for the "
         "excursion inside the trace (the reset before it and the one "
         "after it lie outside its span)", (rows, marks))
    r = run([BIN, "report", k["dump"], "--pel", k["log"], "-o", html])
    T.ok(r.returncode == 2 and b"--pel needs --host" in r.stderr,
         "report --pel without --host: usage error", r.stderr)


if __name__ == "__main__":
    try:
        main()
    except Exception:
        import traceback
        T.ok(False, "the test raised", traceback.format_exc())
    subprocess.run(["rm", "-rf", WORK])
    sys.exit(T.done())
