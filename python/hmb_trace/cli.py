# SPDX-License-Identifier: Apache-2.0
"""python3 -m hmb_trace decode|stats FILE: the Python twin of
hmb-trace-analyze.  decode --format jsonl prints the same lines as
``hmb-trace-analyze decode FILE --format jsonl``; stats --format json the
same counts as ``hmb-trace-analyze stats FILE --format json``."""

import argparse
import json
import os
import sys

from . import __version__
from .acct import Accounting, NEW
from .format import FormatError, REC_FLAG_TRUNCATED
from .reader import open_trace
from .sidecar import read_sidecar

PROG = "python3 -m hmb_trace"


def _records(args, acct, state):
    """Yield the new data records of args.file, accounted by acct."""
    sidecar = None
    if not args.no_meta:
        meta = args.meta or (None if args.file == "-" else
                             args.file + ".meta")
        if meta and (args.meta or os.path.exists(meta)):
            sidecar = read_sidecar(meta)
    state["sidecar"] = sidecar
    epochs = list(sidecar.epochs) if sidecar else []
    state["epochs"] = 0
    reader = open_trace(args.file)
    state["reader"] = reader
    nxt = 0
    for rec in reader:
        # A ring image's offsets are not dump offsets: its epochs say
        # nothing.  In a dump, an epoch where no record starts is warned
        # about and ignored (docs/format.md 12.4).
        while nxt < len(epochs) and rec.offset >= epochs[nxt]:
            if reader.dialect != "dump":
                pass
            elif rec.offset > epochs[nxt]:
                _bad_epoch(sidecar, nxt, "is inside a record (the next "
                           "starts at byte %d)" % rec.offset)
            else:
                acct.new_epoch()
                state["epochs"] += 1
            nxt += 1
        if acct.add(rec) == NEW:
            yield rec
    if reader.dialect == "dump":
        for i in range(nxt, len(epochs)):
            _bad_epoch(sidecar, i, "is past the dump's last record")


def _bad_epoch(sidecar, i, where):
    sys.stderr.write("hmb_trace: warning: %s:%d: epoch=%d %s; ignored\n" % (
        sidecar.path, sidecar.epoch_lines[i], sidecar.epochs[i], where))


def _text_line(rec):
    line = "[%03d] %6d.%09d: seq=%d opcode=0x%04x len=%d" % (
        rec.cpu, rec.ts_ns // 1000000000, rec.ts_ns % 1000000000, rec.seq,
        rec.opcode, rec.payload_len)
    if rec.flags & REC_FLAG_TRUNCATED:
        line += " TRUNCATED"
    if rec.payload_len:
        line += " payload=" + rec.payload.hex()
    return line + "\n"


def _jsonl_line(rec):
    return ('{"seq":%d,"ts_ns":%d,"opcode":%d,"cpu":%d,"flags":%d,'
            '"payload_len":%d,"payload":"%s"}\n' % (
                rec.seq, rec.ts_ns, rec.opcode, rec.cpu, rec.flags,
                rec.payload_len, rec.payload.hex()))


def cmd_decode(args):
    acct = Accounting(args.dup_window)
    out = sys.stdout
    fmt = _jsonl_line if args.format == "jsonl" else _text_line
    gaps_seen = 0
    buf = []
    try:
        for rec in _records(args, acct, {}):
            if args.format == "text" and acct.gaps_total != gaps_seen:
                gaps_seen = acct.gaps_total
                g = acct.last_gap
                buf.append("LOST %d record%s (seq %s) between ts_ns %d and "
                           "%d\n" % (g["count"],
                                     "" if g["count"] == 1 else "s",
                                     g["first_seq"] if g["count"] == 1 else
                                     "%d..%d" % (g["first_seq"],
                                                 g["last_seq"]),
                                     g["ts_before"], g["ts_after"]))
            buf.append(fmt(rec))
            if len(buf) >= 4096:
                out.write("".join(buf))
                buf.clear()
    finally:
        out.write("".join(buf))
        out.flush()
    return 0


def stats_dict(args, acct, state):
    reader = state["reader"]
    d = {"file": "<stdin>" if args.file == "-" else args.file,
         "dialect": reader.dialect,
         "records": acct.records, "wrap_markers": acct.wrap_markers,
         "ignored": acct.ignored, "truncated": acct.truncated,
         "lost": acct.lost, "duplicates": acct.duplicates,
         "resets": acct.resets, "epochs": state["epochs"],
         "bytes": acct.bytes, "payload_bytes": acct.payload_bytes,
         "first_ts_ns": acct.first_ts_ns, "last_ts_ns": acct.last_ts_ns,
         "opcodes": {str(k): v for k, v in sorted(acct.opcodes.items())},
         "gaps_total": acct.gaps_total, "gaps": acct.gaps,
         "gaps_omitted": acct.gaps_omitted}
    if reader.dialect == "ring":
        r = reader.ring
        d["ring"] = {k: r[k] for k in ("ring_size", "head", "tail",
                                       "flags")}
    sc = state["sidecar"]
    if sc:
        d["sidecar"] = {"path": sc.path, "abi_version": sc.abi_version,
                        "source": sc.source, "ring_size": sc.ring_size,
                        "realtime_ns": sc.realtime_ns,
                        "monotonic_ns": sc.monotonic_ns,
                        "boottime_ns": sc.boottime_ns}
    return d


def cmd_stats(args):
    acct = Accounting(args.dup_window, max_gaps=args.max_gaps)
    state = {}
    for _ in _records(args, acct, state):
        pass
    d = stats_dict(args, acct, state)
    if args.format == "json":
        json.dump(d, sys.stdout, indent=2)
        sys.stdout.write("\n")
        return 0
    w = sys.stdout.write
    w("file:          %s (%s)\n" % (d["file"], d["dialect"]))
    w("records:       %d decoded (%d truncated by the firmware)\n"
      % (d["records"], d["truncated"]))
    w("bytes:         %d (payload %d)\n" % (d["bytes"], d["payload_bytes"]))
    w("wrap markers:  %d\n" % d["wrap_markers"])
    w("ignored:       %d (unknown flag bits)\n" % d["ignored"])
    w("duplicates:    %d (replayed, dropped)\n" % d["duplicates"])
    w("lost:          %d records in %d gaps\n" % (d["lost"],
                                                  d["gaps_total"]))
    for g in d["gaps"]:
        w("  %d lost, seq %d..%d, between ts_ns %d and %d (before offset "
          "%d)\n" % (g["count"], g["first_seq"], g["last_seq"],
                     g["ts_before"], g["ts_after"], g["offset"]))
    for op, n in d["opcodes"].items():
        w("  0x%04x %12d\n" % (int(op), n))
    return 0


class _Parser(argparse.ArgumentParser):
    """argparse with the usage-error line of every nvme-hmb-trace tool:
    one line, PROG: [SUB: ]WHAT (try 'PROG [SUB ]--help'), exit 2."""

    def error(self, message):
        sub = self.prog[len(PROG) + 1:]
        head = PROG + ": " + (sub + ": " if sub else "")
        self.exit(2, "%s%s (try '%s --help')\n" % (head, message, self.prog))


def main(argv=None):
    ap = _Parser(
        prog=PROG,
        description="Decode and count v1 HMB trace dumps and ring images "
                    "(an independent twin of hmb-trace-analyze).",
        epilog="examples:\n  %(prog)s decode trace.bin --format jsonl\n"
               "  %(prog)s stats trace.bin\n",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-V", "--version", action="version",
                    version="hmb_trace " + __version__)
    sub = ap.add_subparsers(dest="cmd", required=True)
    for name, fmts, default in (("decode", ("text", "jsonl"), "text"),
                                ("stats", ("json", "text"), "json")):
        p = sub.add_parser(name, help="%s a trace file" % name)
        p.add_argument("file", help="dump or ring image, - for stdin")
        p.add_argument("-f", "--format", choices=fmts, default=default)
        p.add_argument("--meta", help="sidecar path (default FILE.meta)")
        p.add_argument("--no-meta", action="store_true",
                       help="ignore FILE.meta")
        p.add_argument("--dup-window", type=int, default=0)
        if name == "stats":
            p.add_argument("--max-gaps", type=int, default=100)
        else:
            # This decoder has no event dictionary: its text is always the
            # raw form, which the C analyzer prints with --raw.
            p.add_argument("--raw", action="store_true",
                           help="payload as hex (always, here)")
    args, extra = ap.parse_known_args(argv)
    if extra:
        # Name the command whose options these are not.
        sub.choices[args.cmd].error("unrecognized arguments: %s"
                                    % " ".join(extra))
    try:
        return cmd_decode(args) if args.cmd == "decode" else cmd_stats(args)
    except FormatError as e:
        sys.stdout.flush()
        name = "<stdin>" if e.name == args.file == "-" else e.name
        sys.stderr.write("hmb_trace: %s: offset %d: %s\n"
                         % (name, e.offset, e.reason))
        return 1
    except OSError as e:
        sys.stderr.write("hmb_trace: %s: %s\n" % (e.filename or args.file,
                                                 e.strerror))
        return 1
    except BrokenPipeError:
        return 1
