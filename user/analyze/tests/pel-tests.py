#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""TAP tests of `hmb-trace-analyze pel`, the NVMe Persistent Event Log.

usage: pel-tests.py BINARY

Every log is written here from the specification's layout (pelgen.py)
with the values its fields were given; the expected output is those
values, never the tool's own output.
"""

import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
sys.path.insert(0, os.path.join(TOP, "tests", "formats"))
sys.path.insert(0, HERE)
from tap import Tap  # noqa: E402
import pelgen as pg  # noqa: E402

PROG = "hmb-trace-analyze"
T = Tap()
BIN = sys.argv[1]
WORK = tempfile.mkdtemp(prefix="hmb-pel-test.")


def run(*args, stdin=None):
    p = subprocess.run([BIN] + [str(a) for a in args], input=stdin,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    return p.returncode, p.stdout.decode(), p.stderr.decode().splitlines()


def write(name, data):
    path = os.path.join(WORK, name)
    with open(path, "wb") as f:
        f.write(data)
    return path


def jlines(out):
    return [json.loads(line) for line in out.splitlines()]


def test_help():
    rc, out, err = run("pel", "--help")
    T.ok(rc == 0 and out.startswith("Usage: %s pel FILE" % PROG) and
         "Examples:" in out and "nvme persistent-event-log" in out,
         "pel --help: usage and examples", out + str(err))
    T.eq(run("help", "pel")[1], out, "help pel equals pel --help")
    rc, out, _ = run("--help")
    T.ok(rc == 0 and "\n  pel " in out, "the command list names pel")
    T.eq(run("pel")[::2], (2, ["%s: pel: expected one FILE (try '%s pel "
                               "--help')" % (PROG, PROG)]),
         "pel without FILE: exit 2, one line")
    T.eq(run("pel", "-q", "x")[::2],
         (2, ["%s: pel: unknown option '-q' (try '%s pel --help')"
              % (PROG, PROG)]), "unknown option: exit 2")
    missing = os.path.join(WORK, "missing")
    T.eq(run("pel", missing)[::2],
         (1, ["%s: %s: cannot open: No such file or directory"
              % (PROG, missing)]), "missing file: exit 1, one line")


def test_all_types():
    ev, want = pg.all_types()
    data = pg.log(ev)
    f = write("all.bin", data)
    rc, out, err = run("pel", "-j", f)
    T.eq((rc, err), (0, []), "14 events: exit 0, nothing on stderr")
    lines = jlines(out)
    T.eq(len(lines), 15, "a header line and 14 event lines")
    h = lines[0]
    T.eq({k: h[k] for k in ("kind", "lid", "tnev", "tll", "bytes",
                            "log_revision", "lhl", "timestamp_ms",
                            "timestamp_synch", "timestamp_origin",
                            "power_on_hours", "power_cycle_count", "vid",
                            "ssvid", "sn", "mn", "subnqn", "gen_number",
                            "rci")},
         {"kind": "header", "lid": 13, "tnev": 14, "tll": len(data),
          "bytes": len(data), "log_revision": 3, "lhl": 492,
          "timestamp_ms": pg.TS0 + 123, "timestamp_synch": False,
          "timestamp_origin": 1, "power_on_hours": "7777",
          "power_cycle_count": 99, "vid": 0x144D, "ssvid": 0x144E,
          "sn": "SN-PY-0042", "mn": "Python PEL Model",
          "subnqn": "nqn.2014-08.org.example:pel", "gen_number": 5,
          "rci": (1 << 18) | 7}, "header fields")
    T.eq(h["supported_events"], list(range(1, 14)) + [0xDE],
         "supported events bitmap")
    off = 512
    for i, (line, (t, fields)) in enumerate(zip(lines[1:], want)):
        T.eq((line["kind"], line["index"], line["offset"], line["type"],
              line["type_rev"], line["ehl"], line["cntlid"],
              line["timestamp_ms"], line["timestamp_origin"], line["vsil"],
              line["el"]),
             ("event", i, off, t, 2, 21, 1, pg.TS0 + 1000 * (i + 1), 1, 0,
              len(ev[i]) - 24),
             "event %d (%02Xh %s): header fields" % (i, t,
                                                    line["type_name"]))
        T.eq(line["fields"], fields, "event %d (%02Xh): every field" % (i, t))
        off += len(ev[i])
    rc, text, err = run("pel", f)
    tl = text.splitlines()
    T.ok(rc == 0 and tl[0].startswith("persistent event log: 14 events, %d "
                                      "bytes" % len(data)) and
         '"Python PEL Model"' in tl[1] and "DEh" in tl[5],
         "text: header lines", text[:600])
    heads = [x for x in tl if x.startswith("#")]
    T.eq([x.split(": ")[0].split()[-1].rstrip(":") for x in heads],
         ["smart", "fw_commit", "timestamp_change", "power_on_reset",
          "hw_error", "change_namespace", "format_start", "format_complete",
          "sanitize_start", "sanitize_complete", "set_feature",
          "telemetry_log_created", "thermal_excursion", "vendor_specific"],
         "text: one line per event, by name")
    T.ok("#12 @%d 2023-11-14T22:13:33.000Z ctrl 1 thermal_excursion: "
         "over_temp=3 threshold=75" % (off - len(ev[13]) - len(ev[12]))
         in tl, "text: a thermal excursion, at its byte, in UTC")
    T.ok("#2 @%d 2023-11-14T22:13:23.000Z ctrl 1 timestamp_change: "
         "prev_timestamp_ms=%d prev_timestamp_synch=1 "
         "prev_timestamp_origin=0 ms_since_reset=4242"
         % (512 + len(ev[0]) + len(ev[1]), pg.TS0 - 60000) in tl,
         "text: a timestamp change", text[:2000])
    rc, out2, _ = run("pel", "-j", "-", stdin=data)
    T.eq((rc, out2), (0, out), "- reads stdin: the same lines")


def test_zero_and_odd():
    f = write("zero.bin", pg.log([]))
    rc, out, err = run("pel", "-j", f)
    T.ok(rc == 0 and not err and len(jlines(out)) == 1 and
         jlines(out)[0]["tnev"] == 0, "zero events: the header only",
         out + str(err))
    # vendor information ahead of the data; a type nobody defined
    e1 = pg.event(0x0D, pg.ts(pg.TS0), bytes([1, 60]), vsi=b"\xaa\xbb\xcc")
    e2 = pg.event(0x77, pg.ts(pg.TS0, origin=0), b"\x00\xff")
    f = write("odd.bin", pg.log([e1, e2]))
    rc, out, err = run("pel", "-j", f)
    ls = jlines(out)
    T.ok(rc == 0 and ls[1]["vsi"] == "aabbcc" and ls[1]["el"] == 5 and
         ls[1]["fields"] == {"over_temp": 1, "threshold": 60},
         "VSIL 3: vendor information, then the data", out)
    T.ok(ls[2]["type_name"] is None and ls[2]["fields"] == {"data": "00ff"}
         and ls[2]["timestamp_origin"] == 0, "type 77h: its bytes", out)
    rc, text, _ = run("pel", f)
    T.ok("ctrl 1 type_77: data=00ff" in text and
         "reset+%d.000s" % (pg.TS0 // 1000) in text,
         "text: an unknown type; a timestamp counted from reset", text)
    # hostile strings: control characters and bytes that are not UTF-8
    f = write("strings.bin", pg.log([], sn=b"\x1b[31mX\xff", mn=b"a\"b\\"))
    rc, out, err = run("pel", "-j", f)
    h = jlines(out)[0] if rc == 0 else {}
    T.ok(h.get("sn") == "\x1b[31mX\xff" and h.get("mn") == 'a"b\\',
         "JSON: serial and model escaped, valid", out)
    rc, text, _ = run("pel", f)
    T.ok("\x1b" not in text and "\\x1b[31mX\\xff" in text,
         "text: control bytes escaped", repr(text))


def test_refusals():
    ev, _ = pg.all_types()
    full = pg.log(ev)
    offs = [512]
    for e in ev:
        offs.append(offs[-1] + len(e))
    # cut inside event 7's header
    cut = offs[7] + 10
    rc, out, err = run("pel", "-j", write("cut.bin", full[:cut]))
    T.eq((rc, len(jlines(out)) - 1), (1, 7),
         "cut at byte %d: the 7 events before it, exit 1" % cut)
    T.eq(err, ["%s: %s: byte %d: event 7 of 14: its header needs 24 bytes, "
               "the log has 10 left (total log length %d, log truncated)"
               % (PROG, os.path.join(WORK, "cut.bin"), offs[7], len(full))],
         "one line naming the byte")
    # EL past the end
    bad = bytearray(full)
    bad[offs[13] + 22:offs[13] + 24] = b"\xff\x00"
    rc, out, err = run("pel", write("el.bin", bytes(bad)))
    T.ok(rc == 1 and len(err) == 1 and "byte %d: event 13 (type 0xde) is "
         "279 bytes, past the end of the log at byte %d"
         % (offs[13] + 22, len(full)) in err[0] and
         len(out.splitlines()) == 6 + 13 + 2,
         "EL 255 in the last event: 13 events, then refused at its EL",
         err)
    # VSIL > EL
    bad = bytearray(full)
    bad[offs[1] + 20:offs[1] + 22] = b"\xff\x00"
    rc, out, err = run("pel", write("vsil.bin", bytes(bad)))
    T.ok(rc == 1 and "byte %d: event 1: vendor specific information length "
         "255 exceeds its event length 22" % (offs[1] + 20) in err[0],
         "VSIL past EL: refused at its VSIL", err)
    # data short for the type: the event carries the error, the walk goes on
    short = pg.event(0x02, pg.ts(pg.TS0), b"\x00" * 10)
    ok_ev = pg.event(0x0D, pg.ts(pg.TS0), b"\x02\x50")
    rc, out, err = run("pel", "-j", write("short.bin",
                                          pg.log([short, ok_ev])))
    ls = jlines(out)
    T.ok(rc == 1 and ls[1]["error"] == {
        "offset": 536, "message": "event 0 (fw_commit): 10 bytes of data, "
        "its layout has 20"} and ls[2]["fields"]["threshold"] == 0x50 and
        err == ["%s: %s: byte 536: event 0 (fw_commit): 10 bytes of data, "
                "its layout has 20" % (PROG, os.path.join(WORK,
                                                          "short.bin"))],
        "short firmware commit: its error in its line, the next event "
        "decoded, exit 1", out + str(err))
    # not a Persistent Event Log; shorter than a header
    rc, _, err = run("pel", write("smart.bin", b"\x02" + bytes(600)))
    T.ok(rc == 1 and "byte 0: log identifier is 0x02" in err[0],
         "log identifier 02h: refused at byte 0", err)
    rc, _, err = run("pel", write("short-hdr.bin", full[:100]))
    T.ok(rc == 1 and "byte 100: log is 100 bytes, its header alone is 512"
         in err[0], "100 bytes: refused", err)
    # every truncation and a corruption at every 7th byte: never a crash
    # (the ASan build aborts on a read out of bounds), exit 0 or 1
    rcs = set()
    for n in range(0, len(full) + 1, 3):
        rcs.add(run("pel", "-j", "-", stdin=full[:n])[0])
    for i in range(0, len(full), 7):
        bad = bytearray(full)
        bad[i] ^= 0xA5
        rcs.add(run("pel", "-j", "-", stdin=bytes(bad))[0])
    T.ok(rcs <= {0, 1}, "%d cut and corrupted logs: exit 0 or 1, no crash"
         % (len(full) // 3 + 1 + len(full) // 7 + 1), rcs)


def main():
    print("TAP version 13")
    for t in (test_help, test_all_types, test_zero_and_odd, test_refusals):
        try:
            t()
        except Exception as e:      # a crash in a test is a failure
            import traceback
            T.ok(False, "%s raised %s" % (t.__name__, e),
                 traceback.format_exc())
    subprocess.run(["rm", "-rf", WORK])
    return T.done()


if __name__ == "__main__":
    sys.exit(main())
