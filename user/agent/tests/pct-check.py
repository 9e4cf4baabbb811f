#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""pct-check.py AGENT.jsonl: the summary line's percentiles of host_total
are ClickHouse's quantileExact (the sorted values at floor(level * n)) of
the command lines' host_total_ns.  Prints what differs; exit 1 then."""
import json
import sys

vals, summ = [], None
for line in open(sys.argv[1]):
    o = json.loads(line)
    if o["type"] == "cmd" and "host_total_ns" in o["cmd"]:
        vals.append(o["cmd"]["host_total_ns"])
    elif o["type"] == "summary":
        summ = o
vals.sort()
if not vals or summ is None:
    sys.exit("no commands or no summary line")
want = {"n": len(vals), "exact": True, "max_ns": vals[-1]}
for name, lv in (("p50", 0.5), ("p90", 0.9), ("p99", 0.99), ("p999", 0.999)):
    want[name + "_ns"] = vals[min(int(lv * len(vals)), len(vals) - 1)]
got = summ.get("percentiles", {}).get("host_total")
if got != want:
    sys.exit("got %s, want %s" % (got, want))
print("%d commands, p99.9 %d ns" % (len(vals), want["p999_ns"]))
