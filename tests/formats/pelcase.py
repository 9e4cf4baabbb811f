# SPDX-License-Identifier: Apache-2.0
"""A dump, the host's commands and a Persistent Event Log whose events
fall among them, with the log's clock reading (FILE.clock): the case
correlate --pel (test_pel_timeline.py) and export --pel
(tests/fleet/t07-pel.py) are checked on.

fwgen.py writes the dump and the commands (2-4 ms apart, so that a point
event with its millisecond bound overlaps a few of them); pelgen.py the
log, stamped on a controller clock that FILE.clock reads at a known host
CLOCK_MONOTONIC.  Placements, bounds and overlaps are computed here from
the rule in user/nvme/pel.h: M - (C - E) ms within bracket/2 + 1 ms +
100 ppm of the age; an event overlaps a command when [submit, complete]
meets [t - bound, t + bound].
"""

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(TOP, "user", "analyze", "tests"))

from fwgen import Workload, write_agent_jsonl  # noqa: E402
import pelgen as pg  # noqa: E402

OFF = 50_000_000_000            # host = fw + OFF
C = pg.TS0 + 600_000            # the controller's clock at the read, ms
BRACKET = 4000                  # ns between the two monotonic reads
# why each event of the log is (not) placed, by index
PLACE = {0: "before_epoch", 1: "placed", 2: "placed", 3: "placed",
         4: "other_origin", 5: "after_read", 6: "before_boot"}


def write_clock(path, mono_before, ts_raw):
    with open(path + ".clock", "w") as f:
        f.write("hmb_pel_clock=1\ndevice=/dev/nvme9\n"
                "ctrl_timestamp=%d\nrealtime_before_ns=%d\n"
                "realtime_after_ns=%d\nmonotonic_before_ns=%d\n"
                "monotonic_after_ns=%d\nboottime_ns=%d\n"
                % (ts_raw, C * 10**6, C * 10**6 + BRACKET, mono_before,
                   mono_before + BRACKET, mono_before + 7))


def make(work, n_cmds=300, seed=7):
    """Write fw.bin, host.jsonl and pel.bin (without pel.bin.clock: the
    caller writes it with write_clock(log, mono_before, pg.ts(C))) into
    @work; returns a dict of the paths, the commands and the truth."""
    w = Workload(n_cmds=n_cmds, seed=seed, gap=(2_000_000, 4_000_000))
    dump = os.path.join(work, "fw.bin")
    w.write(dump)
    hosts = w.host_commands(OFF)
    host = os.path.join(work, "host.jsonl")
    write_agent_jsonl(host, hosts)
    t_first = min(h["submit_ns"] for h in hosts)
    t_last = max(h["complete_ns"] for h in hosts)
    # the read about 10 s after the last command, its midpoint M a whole
    # number of ms after the middle of the middle command (an event
    # stamped then lands inside it)
    mid_cmd = sorted(hosts, key=lambda h: h["submit_ns"])[n_cmds // 2]
    t_in = (mid_cmd["submit_ns"] + mid_cmd["complete_ns"]) // 2
    mid = t_in + (t_last + 10 * 10**9 - t_in) // 10**6 * 10**6

    def ms_at(t):      # the controller stamp of host time t (whole ms)
        return C - (mid - t) // 10**6

    # one event before the epoch, the epoch (power-on/reset), thermal
    # excursions inside a command and after the last one, one stamped on a
    # clock of another origin, one after the read, one before host
    # monotonic 0
    e_in = ms_at(t_in)
    e_late = ms_at(t_last) + 500
    stamps = {1: ms_at(t_first) - 1000, 2: e_in, 3: e_late}
    ev = [
        pg.event(0x0D, pg.ts(C - 10**7), bytes([1, 70])),
        pg.event(0x04, pg.ts(stamps[1]), pg.fw(b"FW11") + bytes(36)),
        pg.event(0x0D, pg.ts(e_in), bytes([3, 75])),
        pg.event(0x0D, pg.ts(e_late), bytes([0, 75])),
        pg.event(0x05, pg.ts(e_in, origin=0), bytes(4)),
        pg.event(0x05, pg.ts(C + 5000), bytes(4)),
        pg.event(0x05, pg.ts(C - (mid // 10**6) - 5000), bytes(4)),
    ]
    log = os.path.join(work, "pel.bin")
    with open(log, "wb") as f:
        f.write(pg.log(ev))
    placed = {}
    for i, e in stamps.items():
        t = mid - (C - e) * 10**6
        b = BRACKET // 2 + 10**6 + (C - e) * 100
        over = sorted((h["qid"], h["cid"], h["submit_ns"]) for h in hosts
                      if h["submit_ns"] <= t + b and
                      h["complete_ns"] >= t - b)
        fly = sum(1 for h in hosts
                  if h["submit_ns"] <= t <= h["complete_ns"])
        placed[i] = {"host_ns": t, "bound_ns": b, "over": over,
                     "in_flight": fly}
    return {"dump": dump, "host": host, "log": log, "hosts": hosts,
            "mid": mid, "mono_before": mid - BRACKET // 2,
            "placed": placed}
