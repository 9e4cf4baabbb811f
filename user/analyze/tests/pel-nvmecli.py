#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""TAP: `hmb-trace-analyze pel -j` cross-checked against nvme-cli's own
`persistent-event-log -o json` on the same bytes (a reader nobody here
wrote).

usage: pel-nvmecli.py BINARY

nvme-cli reads the log only from a device.  It is pointed at /dev/null
with nvme-getlog-shim.so preloaded, which answers its Get Log Page
commands from the file (built here with gcc); the commands it sent are
checked too.  Every value both tools print is compared, field by field,
with the mapping of their names below.

What nvme-cli 2.3 (Debian 12) does not decode, and is therefore not
compared: Set Feature (0Bh) and Telemetry Log Created (0Ch) event data
(it prints their headers only); a vendor specific (DEh) event (its JSON
output dies of a segmentation fault on one: the log here stops at 0Dh,
and the run on one is only reported, as a comment); event data after
vendor specific information (it reads the data right after the event
header, so the log here carries none); the last event when it ends
exactly at the log's end (its bound check is `>=`): the log here counts
one byte of padding in TLL; and of a power-on/reset event's list only
the last entry (each entry's keys replace the previous one's in its JSON
object, the event's ctrl_id included), compared with our last entry.
"""

import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
sys.path.insert(0, os.path.join(TOP, "tests", "formats"))
sys.path.insert(0, HERE)
from tap import Tap  # noqa: E402
import pelgen as pg  # noqa: E402

T = Tap()
BIN = sys.argv[1]
WORK = tempfile.mkdtemp(prefix="hmb-pel-nvmecli.")

# nvme-cli's key -> ours, per event type (same name where absent).
COMMON = {"event_type_rev": "type_rev", "event_header_len": "ehl",
          "event_header_additional_info": "ehai", "ctrl_id": "cntlid",
          "port_id": "pelpid", "vu_info_len": "vsil", "event_len": "el"}
BY_TYPE = {
    0x01: {"temperature": "temperature_k"},
    0x02: {"vu_assign_fw_commit_rc": "vu_fw_commit_rc"},
    0x03: {"ml_secs_since_reset": "ms_since_reset"},
    0x04: {"power_on_ml_secs": "power_on_ms"},
    0x05: {"nss_hw_err_code": "hw_err_code"},
    0x09: {"SANICAP": "sanicap"},
    0x0A: {"cmpln_info": "compln_info"},
}
FW_KEYS = ("old_fw_rev", "new_fw_rev", "fw_rev")


def pairs(kv):
    """A key's values, should one come twice."""
    d = {}
    for k, v in kv:
        d.setdefault(k, []).append(v)
    return d


def raw_ts(ms, synch, origin):
    return ms | int(bool(synch)) << 48 | origin << 49


def fw_u64(s):
    return struct.unpack("<Q", s.encode().ljust(8, b" "))[0]


def ours_values(line):
    """Our event line as nvme-cli's names -> list of values."""
    t = line["type"]
    names = BY_TYPE.get(t, {})
    back = {v: k for k, v in list(COMMON.items()) + list(names.items())}
    f = dict(line["fields"])
    out = {}

    def put(k, v):
        out.setdefault(back.get(k, k), []).append(v)

    for k in COMMON.values():
        put(k, line[k])
    out["event_time_stamp"] = [raw_ts(line["timestamp_ms"],
                                      line["timestamp_synch"],
                                      line["timestamp_origin"])]
    if t == 0x03:
        out["prev_ts"] = [raw_ts(f.pop("prev_timestamp_ms"),
                                 f.pop("prev_timestamp_synch"),
                                 f.pop("prev_timestamp_origin"))]
    for e in f.pop("entries", []) if t == 0x04 else []:
        e = dict(e)
        e["ctrl_time_stamp"] = raw_ts(e.pop("ctrl_timestamp_ms"),
                                      e.pop("ctrl_timestamp_synch"),
                                      e.pop("ctrl_timestamp_origin"))
        for k, v in e.items():
            put(k, v)
    for k, v in f.items():
        if k in FW_KEYS:
            v = fw_u64(v)
        elif k.startswith("temp_sensor_"):
            k = "temperature_sensor_" + k[len("temp_sensor_"):]
        put(k, v)
    return out


def theirs_values(ev):
    out = {}
    for k, vs in ev.items():
        if k in ("event_number", "event_type"):
            continue
        if k in FW_KEYS:
            vs = [int(v.split()[0]) for v in vs]
        out[k] = vs
    return out


def nvme_cli(nvme, shim, name, data):
    f = os.path.join(WORK, name)
    with open(f, "wb") as fh:
        fh.write(data)
    env = pg.shim_env(shim, f)
    return f, subprocess.run([nvme, "persistent-event-log", "/dev/null",
                              "-o", "json"], env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def protocol(nvme, shim, data, ours):
    """The specification's protocol as nvme-cli runs it: establish the
    context (LSP 1), read the log raw (LSP 0), release it (LSP 2)."""
    f = os.path.join(WORK, "pel.bin")
    env = pg.shim_env(shim, f)
    lsps, raw = [], b""
    for action in (1, 0, 2):
        p = subprocess.run([nvme, "persistent-event-log", "/dev/null",
                            "--action=%d" % action] +
                           (["--raw-binary"] if action == 0 else []),
                           env=env, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE)
        lsps.append([c[0] for c in pg.shim_cmds(p.stderr)])
        if action == 0:
            raw = p.stdout
    T.eq(lsps, [[1], [0, 0, 0], [2]], "--action=1, 0, 2 send LSP 1 "
         "(establish), 0 (read) and 2 (release)")
    r = subprocess.run([BIN, "pel", "-j", "-"], input=raw,
                       stdout=subprocess.PIPE)
    T.ok(raw == data and r.returncode == 0 and
         [json.loads(x) for x in r.stdout.decode().splitlines()] == ours,
         "--action=0 --raw-binary writes the log's %d bytes; pel decodes "
         "them from standard input as from the file" % len(data))


def compare(nvme, shim):
    ev, _ = pg.all_types()
    ev = ev[:13]                    # 01h-0Dh: not the vendor event
    data = pg.log(ev, pad=1)
    f, p = nvme_cli(nvme, shim, "pel.bin", data)
    cmds = pg.shim_cmds(p.stderr)
    T.ok(p.returncode == 0 and cmds and
         any(c[2] == len(data) for c in cmds),
        "nvme-cli read the log through Get Log Page 0Dh (%d commands, "
        "one of TLL = %d bytes)" % (len(cmds), len(data)),
        p.stderr.decode())
    try:
        theirs = json.loads(p.stdout, object_pairs_hook=pairs)
    except ValueError as e:
        T.ok(False, "nvme-cli's JSON parses", "%s\n%s" % (e, p.stdout[:500]))
        return
    r = subprocess.run([BIN, "pel", "-j", f], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE)
    ours = [json.loads(x) for x in r.stdout.decode().splitlines()]
    T.eq((r.returncode, len(ours)), (0, 14), "ours: 13 events, exit 0")

    h, th = ours[0], {k: v[0] for k, v in theirs.items()}
    want = {"log_id": h["lid"], "total_num_of_events": h["tnev"],
            "total_log_len": h["tll"], "log_revision": h["log_revision"],
            "log_header_len": h["lhl"],
            "timestamp": raw_ts(h["timestamp_ms"], h["timestamp_synch"],
                                h["timestamp_origin"]),
            "power_on_hours": h["power_on_hours"],
            "power_cycle_count": h["power_cycle_count"],
            "pci_vid": h["vid"], "pci_ssvid": h["ssvid"], "sn": h["sn"],
            "mn": h["mn"], "subnqn": h["subnqn"],
            "gen_number": h["gen_number"], "rci": h["rci"]}
    got = {k: (th[k].rstrip() if k in ("sn", "mn") else th.get(k))
           for k in want}
    T.eq(got, want, "header: the %d fields agree" % len(want))
    bits = sorted(int(k[len("bitmap_"):], 16) for k in th
                  if k.startswith("bitmap_"))
    T.eq(bits, [t for t in h["supported_events"] if t <= 0x0D],
         "supported events 01h-0Dh agree (nvme-cli names no others)")

    tev = theirs.get("list_of_event_entries", [[]])[0]
    T.eq(len(tev), 13, "nvme-cli shows the 13 events")
    agreed = 0
    for i, (o, t) in enumerate(zip(ours[1:], tev)):
        a, b = ours_values(o), theirs_values(t)
        common = sorted(set(a) & set(b))
        for k in common:            # their one value: our last entry's
            if len(b[k]) == 1 and len(a[k]) > 1:
                a[k] = a[k][-1:]
        bad = [(k, a[k], b[k]) for k in common if a[k] != b[k]]
        only = sorted(set(b) - set(a))
        typ = int(t["event_type"][0].rsplit("(", 1)[1].rstrip(")"), 16)
        T.ok(typ == o["type"] and not bad and not only,
             "event %d (%02Xh): %d values agree" % (i, o["type"],
                                                    len(common)),
             ["type %02Xh vs %02Xh" % (typ, o["type"])] +
             ["%s: ours %r, nvme-cli %r" % x for x in bad] +
             ["only nvme-cli has %s" % k for k in only])
        agreed += sum(len(a[k]) for k in common) if not bad else 0
    T.ok(agreed > 150, "%d values compared in all" % agreed)
    protocol(nvme, shim, data, ours)
    _, p = nvme_cli(nvme, shim, "vendor.bin",
                    pg.log(pg.all_types()[0][13:], pad=1))
    print("# nvme-cli on a vendor specific (DEh) event: exit status %d, "
          "%d bytes of JSON" % (p.returncode, len(p.stdout)))


def main():
    print("TAP version 13")
    nvme = shutil.which("nvme")
    if not nvme:
        T.ok(False, "nvme (Debian: nvme-cli) is installed "
             "(scripts/deps.sh test)")
        return T.done()
    v = subprocess.run([nvme, "version"], stdout=subprocess.PIPE)
    print("# " + v.stdout.decode().strip().replace("\n", "; "))
    shim, why = pg.build_shim(WORK)
    if T.ok(shim, "the shim builds (gcc)", why):
        try:
            compare(nvme, shim)
        except Exception as e:      # a crash in a test is a failure
            import traceback
            T.ok(False, "compare raised %s" % e, traceback.format_exc())
    shutil.rmtree(WORK)
    return T.done()


if __name__ == "__main__":
    sys.exit(main())
