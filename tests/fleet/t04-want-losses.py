#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""t04-want-losses.py AGENT.jsonl: the nonzero BPF loss counters of the
agent's summary line as "bpf COUNTER COUNT" lines, sorted: the losses
rows t04-live-export.sh expects in the store."""

import json, sys
BPF = ["ringbuf_reserve_failed", "inflight_map_full", "waiting_map_full",
       "host_complete_without_submit", "flushed_by_cid_reuse",
       "host_submit_while_in_flight", "bpf_recursion_misses"]
for line in open(sys.argv[1]):
    o = json.loads(line)
    if o.get("type") == "summary":
        c = o["counters"]
        out = ["bpf %s %d" % (k, c[k]) for k in BPF if c.get(k)]
        print("\n".join(sorted(out)))
        break
