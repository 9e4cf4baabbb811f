#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""TAP: the programs the VM bench's scripts run, on the host, against
recorded inputs and their expected outputs (scripts/tests/vm-programs/).

- kernel/vm-suite/tracecmd-check.awk: tracecmd-report.txt is the start of
  a guest's `trace-cmd report` (tracecmd suite) with one block request
  made longer, one background, one orphan and one repeated firmware
  record added; .check.txt and .check.err are what the suite keeps.
- kernel/vm-suite/kmod-records.awk: the start of a kmod run's trace_pipe
  (three payloads spoiled, one seq repeated) and perf script output.
- scripts/vm/qemu/ninja-progress.py: a ninja log of build-qemu (every
  seventh progress line, an error, a FAILED line that is not UTF-8, no
  newline at the end); the elapsed time in the lines is left out.
- scripts/vm/qemu/sync-tree.py and scripts/vm/extract-vmlinux.py: on
  trees and kernel images made here.
- scripts/vm/host/slow-check: an account, agent lines and bundles made
  here that agree, then each spoiled one way (a firing of a command the
  controller did not slow, a slowed command that did not fire, a bundle
  whose correlate gives the command another record, a bundle too few).
- scripts/vm/host/agent-attribution: agent JSON lines and producer logs
  made here (a right match, a record of another command, one producer
  command given twice, commands not matched for each reason and for none).
- scripts/vm/host/agent-facts: agent JSON lines, correlate lines and a
  QEMU trace made here; each subcommand must give what the guest-side
  sed, grep and awk it stands in for give (cmd-matches.awk and the
  pipelines agent-e2e.sh, agent-nvme.sh and hmb-agent.sh ran, run here by
  sh with this machine's tools, and with busybox awk where it is there);
  with no QEMU command in the window, where the guest's awk found no key
  missing, all are.
- scripts/vm/bench/window-cost.awk: the bpftool files of an armed round
  of window-bench (a run time past 2^31 ns, a program loaded before the
  agent); scripts/lib/window-table.py on a bench.txt made here, its peak
  RSS at its bound and a MiB past it (exit 3).

The awk programs run in the guest under busybox awk: each runs with
busybox awk when /bin/busybox is there, and with this machine's awk.
"""

import hashlib
import json
import lzma
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.join(HERE, "..", "..")
FIX = os.path.join(HERE, "vm-programs")
sys.path.insert(0, os.path.join(TOP, "tests", "formats"))
from tap import Tap, run  # noqa: E402

TRACECMD = os.path.join(TOP, "kernel", "vm-suite", "tracecmd-check.awk")
KMOD = os.path.join(TOP, "kernel", "vm-suite", "kmod-records.awk")
NINJA = os.path.join(TOP, "scripts", "vm", "qemu", "ninja-progress.py")
SYNC = os.path.join(TOP, "scripts", "vm", "qemu", "sync-tree.py")
VMLINUX = os.path.join(TOP, "scripts", "vm", "extract-vmlinux.py")
SLOWCHECK = os.path.join(TOP, "scripts", "vm", "host", "slow-check")
ATTRIB = os.path.join(TOP, "scripts", "vm", "host", "agent-attribution")
FACTS = os.path.join(TOP, "scripts", "vm", "host", "agent-facts")
CMDMATCH = os.path.join(TOP, "user", "agent", "vm-suite", "cmd-matches.awk")
WCOST = os.path.join(TOP, "scripts", "vm", "bench", "window-cost.awk")
WTABLE = os.path.join(TOP, "scripts", "lib", "window-table.py")


def fixture(name):
    with open(os.path.join(FIX, name), "rb") as f:
        return f.read()


def awks():
    out = []
    if os.access("/bin/busybox", os.X_OK):
        out.append(("busybox awk", ["/bin/busybox", "awk"]))
    out.append(("awk", ["awk"]))
    return out


def test_awk(t):
    for name, awk in awks():
        r = run(awk + ["-f", TRACECMD, os.path.join(FIX, "tracecmd-report.txt")])
        t.eq((r.returncode, r.stdout, r.stderr),
             (0, fixture("tracecmd-report.check.txt"),
              fixture("tracecmd-report.check.err")),
             "%s: tracecmd-check.awk on a recorded report" % name)
        for inp, want, nopay, exp in (
                ("kmod-trace_pipe.txt", 40, 0, "kmod-trace_pipe.want-40"),
                ("kmod-perf-script.txt", 40, 1,
                 "kmod-perf-script.want-40-nopay"),
                ("kmod-perf-script.txt", 12, 0, "kmod-perf-script.want-12")):
            r = run(awk + ["-v", "want=%d" % want, "-v", "nopay=%d" % nopay,
                           "-f", KMOD, os.path.join(FIX, inp)])
            t.eq((r.returncode, r.stdout, r.stderr), (0, fixture(exp), b""),
                 "%s: kmod-records.awk want=%d nopay=%d on %s"
                 % (name, want, nopay, inp))


def test_ninja(t):
    log = fixture("ninja.log")
    for quiet in (0, 1):
        t0 = int(time.time()) - 3725
        r = run([sys.executable, NINJA, str(quiet), str(t0)], input=log)
        times = set(re.findall(rb"^build-qemu: \[(\d+)m(\d\d)s\]", r.stderr,
                               re.M))
        got = re.sub(rb"(?m)^build-qemu: \[\d+m\d\ds\]",
                     b"build-qemu: [TIME]", r.stderr)
        t.eq((r.returncode, r.stdout, got),
             (0, b"", fixture("ninja.want-quiet%d" % quiet)),
             "ninja-progress.py quiet=%d on a recorded ninja log" % quiet)
        if quiet == 0:
            t.ok(times and all(m == b"62" and s in (b"05", b"06", b"07")
                               for m, s in times),
                 "ninja-progress.py: the time since T0 in minutes and "
                 "seconds", repr(times))


OLD = 1000000000


def make_trees(base):
    """SRC and a stale DST: a file and a directory to remove, a changed
    file, a directory become a file, a file become a link, a link to
    point elsewhere, permission bits to change."""
    s, d = os.path.join(base, "src"), os.path.join(base, "dst")
    for p in ("a/b", "c", "e/f"):
        os.makedirs(os.path.join(s, p))
    files = {"same.txt": "same\n", "changed.txt": "new\n",
             "a/b/new.c": "int x;\n", "mode.sh": "#!/bin/sh\n",
             "c/wasdir": "file now\n"}
    for p, text in files.items():
        with open(os.path.join(s, p), "w") as f:
            f.write(text)
    os.chmod(os.path.join(s, "mode.sh"), 0o755)
    os.symlink("same.txt", os.path.join(s, "link"))
    os.symlink("changed.txt", os.path.join(s, "relink"))
    for p in ("c/wasdir/x", "stale/deep", "e"):
        os.makedirs(os.path.join(d, p))
    stale = {"stale/deep/f": "x", "gone.txt": "x", "same.txt": "same\n",
             "changed.txt": "old\n", "mode.sh": "#!/bin/sh\n",
             "link": "a file, not a link\n"}
    for p, text in stale.items():
        with open(os.path.join(d, p), "w") as f:
            f.write(text)
    os.chmod(os.path.join(d, "mode.sh"), 0o644)
    os.symlink("gone.txt", os.path.join(d, "relink"))
    for root, _, names in os.walk(d):
        for n in names:
            os.utime(os.path.join(root, n), (OLD, OLD))
    return s, d


def listing(d):
    out = []
    for root, dirs, files in os.walk(d):
        for n in dirs + files:
            p = os.path.join(root, n)
            r = os.path.relpath(p, d)
            if os.path.islink(p):
                out.append("%s -> %s" % (r, os.readlink(p)))
            elif os.path.isdir(p):
                out.append(r + "/")
            else:
                st = os.stat(p)
                with open(p, "rb") as f:
                    h = hashlib.sha1(f.read()).hexdigest()[:8]
                out.append("%s %o %s %s" % (r, st.st_mode & 0o777, h,
                                            "kept" if st.st_mtime == OLD
                                            else "written"))
    return sorted(out)


SYNCED = [
    "a/", "a/b/", "a/b/new.c 644 70f09c7c written", "c/",
    "c/wasdir 644 24cf421c written", "changed.txt 644 389cc6b7 written",
    "e/", "e/f/", "link -> same.txt", "mode.sh 755 bd971bec kept",
    "relink -> changed.txt", "same.txt 644 2c985b16 kept",
]


def test_sync(t):
    os.umask(0o022)
    with tempfile.TemporaryDirectory() as base:
        s, d = make_trees(base)
        r = run([sys.executable, SYNC, s, d])
        t.eq((r.returncode, r.stdout, r.stderr, listing(d)),
             (0, b"", b"", SYNCED),
             "sync-tree.py: DST as SRC, unchanged files kept (mtime)")
        r = run([sys.executable, SYNC, s, os.path.join(base, "fresh")])
        t.eq(listing(os.path.join(base, "fresh")),
             [re.sub(" kept$", " written", x) for x in SYNCED],
             "sync-tree.py: into a DST that does not exist")


def test_vmlinux(t):
    elf = b"\x7fELF" + bytes(range(256)) * 50 + b"Xen\x00" + b"tail" * 100
    xz = lzma.compress(elf, format=lzma.FORMAT_XZ)
    cases = [("xz", b"MZ" * 300 + xz + b"\0" * 64, elf),
             ("no compressed kernel", b"MZ" * 1000, None),
             ("an ELF without a PVH note",
              b"MZ" + lzma.compress(elf[:-500], format=lzma.FORMAT_XZ), None)]
    if shutil.which("zstd"):
        zst = subprocess.run(["zstd", "-qc"], input=elf,
                             stdout=subprocess.PIPE).stdout
        cases.append(("zstd", b"MZ" * 300 + zst + b"trailer", elf))
    else:
        t.skip("extract-vmlinux.py: zstd", "no zstd here")
    with tempfile.TemporaryDirectory() as base:
        for what, image, want in cases:
            src, out = os.path.join(base, "vmlinuz"), os.path.join(base, "o")
            with open(src, "wb") as f:
                f.write(image)
            if os.path.exists(out):
                os.unlink(out)
            r = run([sys.executable, VMLINUX, src, out])
            got = None
            if os.path.exists(out):
                with open(out, "rb") as f:
                    got = f.read()
            t.ok(r.returncode == (0 if want else 1) and got == want,
                 "extract-vmlinux.py: %s: %s" % (
                     what, "the ELF" if want else "exit 1, nothing written"),
                 "exit %d, wrote %s" % (r.returncode,
                                        None if got is None else len(got)))


def slow_case(d, spoil):
    """An account, agent lines and bundles in @d that slow-check passes,
    but for @spoil."""
    slow_ns = 1000000000
    acct = [{"ev": "realize", "slow_every": 100, "slow_ns": slow_ns}]
    agent = []
    cmds = []
    for i in range(3):
        q, cid, slba, seq = 1, 7 + i, 1000 * i, 100 + 50 * i
        recs = [[seq + k, 0x100 + k, 5000 + k, 1] for k in range(4)]
        recs.append([seq + 4, 0x104, 5003 + slow_ns + 10, 1])
        acct.append({"ev": "cmd", "sqid": q, "cid": cid, "slba": slba, "done": True,
                     "slow_ns": slow_ns + 10, "recs": recs})
        acct.append({"ev": "slow", "sqid": q, "cid": cid, "slba": slba, "fetch_seq": seq,
                     "delay_ns": slow_ns + 10, "early": False})
        cmd = {"qid": q, "cid": cid, "slba": slba, "submit_ns": 77 + i, "match": "matched",
               "fw": [{"phase": p, "seq": seq + k} for k, p in enumerate(
                   ("fetch", "media_start", "media_end", "xfer_done", "cqe_posted"))]}
        cmds.append(cmd)
        if not (spoil == "missed" and i == 2):
            agent.append({"type": "trigger", "kind": "latency", "value_ns": slow_ns + 99,
                          "cmd": cmd})
    # an unslowed command: in the account, and fired only when spoiled
    acct.append({"ev": "cmd", "sqid": 1, "cid": 3, "slba": 5, "done": True, "slow_ns": 0,
                 "recs": [[300, 0x100, 1, 1], [301, 0x104, 2, 1]]})
    if spoil == "extra":
        agent.append({"type": "trigger", "kind": "latency", "value_ns": slow_ns,
                      "cmd": {"qid": 1, "cid": 3, "slba": 5, "submit_ns": 9}})
    # slow on the host side: the firing is right when the agent's own line
    # for the command has its host_total over the threshold
    if spoil in ("host-slow", "host-fast"):
        agent.append({"type": "trigger", "kind": "latency", "value_ns": 300000000,
                      "thresh_ns": 250000000,
                      "cmd": {"qid": 1, "cid": 3, "slba": 5, "submit_ns": 9}})
        agent.append({"type": "cmd", "cmd": {
            "qid": 1, "cid": 3, "slba": 5, "submit_ns": 9, "match": "matched",
            "host_total_ns": 300000000 if spoil == "host-slow" else 1000000}})
    n = len([o for o in agent if o["type"] == "trigger"])
    agent.append({"type": "summary", "triggers": [{"trigger": 1, "fired": n, "reported": n}],
                  "snapshots": {"requests": n, "written": 2, "failed": 0,
                                "suppressed": n - 2}})
    for i in range(1 if spoil == "bundle" else 2):
        b = os.path.join(d, "snap", "SNAP-%d" % i)
        os.makedirs(b)
        corr = json.loads(json.dumps(cmds[i]))
        if spoil == "seqs" and i == 1:
            corr["fw"][2]["seq"] = 300
        for name, lines in (("trigger.json", [{"cmd": cmds[i]}]),
                            ("host.jsonl", [{"type": "cmd", "cmd": cmds[i]}]),
                            ("corr.jsonl", [{"type": "cmd", "cmd": corr}])):
            with open(os.path.join(b, name), "w") as f:
                f.write("".join(json.dumps(o) + "\n" for o in lines))
    for name, lines in (("acct.jsonl", acct), ("agent.jsonl", agent)):
        with open(os.path.join(d, name), "w") as f:
            f.write("".join(json.dumps(o) + "\n" for o in lines))
    return run([sys.executable, SLOWCHECK, "--account", os.path.join(d, "acct.jsonl"),
                "--from-seq", "100", "--to-seq", "250", "--agent",
                os.path.join(d, "agent.jsonl"), "--snap", os.path.join(d, "snap")],
               text=True)


def test_slowcheck(t):
    for spoil, want in ((None, None), ("extra", "fired set == slowed set"),
                        ("missed", "fired set == slowed set"),
                        ("seqs", "SNAP-1: correlate on the bundle"),
                        ("bundle", "every firing is a bundle or counted suppressed"),
                        ("host-slow", None), ("host-fast", "fired set == slowed set")):
        with tempfile.TemporaryDirectory() as d:
            r = slow_case(d, spoil)
        bad = [ln.split("\t")[1] for ln in r.stdout.splitlines()
               if ln.startswith("not ok")]
        if want is None:
            t.ok(r.returncode == 0 and not bad and r.stdout.count("\n") >= 8,
                 "slow-check: firings, bundles and account that agree%s: exit 0, all ok" % (
                     ", one more firing of a command slow on the host side"
                     if spoil else ""), r.stdout + r.stderr)
        else:
            t.ok(r.returncode == 1 and len(bad) == 1 and bad[0].startswith(want),
                 "slow-check: %s: exit 1, only '%s' not ok" % (spoil, want),
                 r.stdout + r.stderr)


def attrib_cmd(qid, cid, match, flags, seqs, submit=0, refused=()):
    fw = [{"phase": p, "seq": s} for p, s in zip(("fetch", "cqe_posted"), seqs)]
    c = {"qid": qid, "cid": cid, "match": match, "flags": flags, "submit_ns": submit,
         "fw": fw}
    if refused:
        c["fw_refused"] = [{"phase": "cqe_posted", "seq": s} for s in refused]
    return json.dumps({"type": "cmd", "cmd": c}, separators=(",", ":"))


def test_attribution(t):
    # the simulator's log: four producer commands, two records each
    log = "".join("seq=%d sqid=1 cid=%d qline=%d\n" % (s, cid, q)
                  for s, cid, q in ((1, 7, 10), (2, 7, 10), (3, 7, 11), (4, 7, 11),
                                    (5, 9, 12), (6, 9, 12), (7, 9, 13), (8, 9, 13)))
    cases = (
        ("a right match", [attrib_cmd(1, 7, "matched", 0, (1, 2))],
         {"commands": 1, "wrong": 0, "twice": 0}, 0, 0),
        ("a record of another command", [attrib_cmd(1, 7, "matched", 0, (5, 6))],
         {"wrong": 1}, 0, 1),
        ("records of two producer commands", [attrib_cmd(1, 7, "matched", 0, (2, 3))],
         {"wrong": 1}, 0, 1),
        ("one producer command given twice",
         [attrib_cmd(1, 7, "matched", 0, (1, 2)), attrib_cmd(1, 7, "partial", 4, (1,))],
         {"twice": 1}, 0, 1),
        ("not matched, for each reason and for none",
         [attrib_cmd(1, 7, "partial", 1 << 2, (3,)), attrib_cmd(1, 9, "unmatched", 1 << 3, ()),
          attrib_cmd(1, 9, "unmatched", 1 << 1, ()), attrib_cmd(1, 9, "partial", 0, (5,), 42),
          attrib_cmd(0, 1, "host_only", 1 << 5, ()), attrib_cmd(1, 9, "matched", 1 << 2, ()),
          # records refused outside the window: its own (seq 8 is cid 9's)
          # and another command's (seq 2 is cid 7's)
          attrib_cmd(1, 9, "partial", 0, (7,), 50, refused=(8,)),
          attrib_cmd(1, 9, "unmatched", 0, (), 60, refused=(2,))],
         {"wrong": 0, "twice": 0}, {"commands": 6, "reused": 1, "swept": 1, "no_room": 1,
                                    "refused": 2, "refused_own": 1,
                                    "refused_other_use": 0, "unexplained": 1}, 0),
    )
    with tempfile.TemporaryDirectory() as base:
        lp, jp = os.path.join(base, "fw-cmd.log"), os.path.join(base, "agent.jsonl")
        with open(lp, "w") as f:
            f.write(log)
        for what, lines, want, want_nm, rc in cases:
            with open(jp, "w") as f:
                f.write("\n".join(lines + ['{"type":"summary"}']) + "\n")
            r = run([sys.executable, ATTRIB, jp, "--fwsim-cmd-log", lp])
            try:
                got = json.loads(r.stdout)
            except ValueError:
                got = {}
            good = r.returncode == rc and all(got.get(k) == v for k, v in want.items())
            if want_nm:
                good = good and got.get("not_matched") == want_nm and \
                    len(got.get("unexplained_examples", [])) == want_nm["unexplained"]
            t.ok(good, "agent-attribution: %s" % what,
                 "exit %d: %s" % (r.returncode, r.stdout.strip()[:300]))


def test_attribution_after_step(t):
    # the producer stepped at seq 5: the commands with records from there
    # on, and those of them the agent put outside their window or refused
    log = "".join("seq=%d sqid=1 cid=%d qline=%d\n" % (s, cid, q)
                  for s, cid, q in ((1, 7, 10), (2, 7, 10), (5, 9, 12), (6, 9, 12),
                                    (7, 7, 13), (8, 7, 13), (9, 9, 14), (10, 9, 14)))

    def cmd(cid, match, seqs, window, inside, refused=()):
        c = json.loads(attrib_cmd(1, cid, match, 0, seqs, 1000, refused))
        c["cmd"].update(complete_ns=1000 + window, in_window_err=inside)
        return json.dumps(c, separators=(",", ":"))
    lines = [cmd(7, "matched", (1, 2), 100, True),          # before the step
             cmd(9, "matched", (5, 6), 3000, True),         # after, fits
             cmd(7, "matched", (7, 8), 5000, False),        # after, outside
             cmd(9, "unmatched", (), 700, False, (10,))]    # after, refused
    want = {"commands": 3, "outside": 2, "narrowest_ns": 700}
    with tempfile.TemporaryDirectory() as base:
        lp, jp = os.path.join(base, "fw-cmd.log"), os.path.join(base, "agent.jsonl")
        with open(lp, "w") as f:
            f.write(log)
        with open(jp, "w") as f:
            f.write("\n".join(lines) + "\n")
        r = run([sys.executable, ATTRIB, jp, "--fwsim-cmd-log", lp, "--step-first-seq", "5"])
        try:
            got = json.loads(r.stdout)
        except ValueError:
            got = {}
        t.ok(r.returncode == 0 and got.get("after_step") == want and
             got.get("step_want_seq") == 5,
             "agent-attribution: after_step counts the commands after the step and "
             "those whose records contradict the agent's clock",
             "exit %d: %s" % (r.returncode, r.stdout.strip()[:300]))


def test_attribution_account(t):
    # the controller's account: two uses of id (2, 45184), reads of LBAs
    # 100 and 200, records 10..11 and 20..21
    acct = "".join(json.dumps({"ev": "cmd", "sqid": 2, "cid": 45184, "opc": 2,
                               "slba": lba, "recs": [[s, 256, 0, 1], [s + 1, 260, 0, 1]]},
                              separators=(",", ":"))
                   + "\n" for lba, s in ((100, 10), (200, 20)))

    def cmd(lba, match, seqs=(), refused=()):
        c = json.loads(attrib_cmd(2, 45184, match, 0, seqs, lba, refused))
        c["cmd"].update(opc="read", slba=lba)
        return json.dumps(c, separators=(",", ":"))
    cases = (
        ("account: each use its own records", [cmd(100, "matched", (10, 11)),
                                               cmd(200, "matched", (20, 21))], 0, None),
        ("account: a use given the records of the id's other use (same key, another LBA)",
         [cmd(200, "matched", (10, 11))], 1, None),
        ("account: refused records of the id's other use are not the command's own",
         [cmd(200, "unmatched", (), (11,))], 0, (0, 1)),
        ("account: refused records of its own use are",
         [cmd(200, "unmatched", (), (21,))], 0, (1, 0)),
    )
    with tempfile.TemporaryDirectory() as base:
        ap, jp = os.path.join(base, "acct.jsonl"), os.path.join(base, "agent.jsonl")
        with open(ap, "w") as f:
            f.write(acct)
        for what, lines, rc, own in cases:
            with open(jp, "w") as f:
                f.write("\n".join(lines) + "\n")
            r = run([sys.executable, ATTRIB, jp, "--account", ap])
            try:
                got = json.loads(r.stdout)
            except ValueError:
                got = {}
            nm = got.get("not_matched", {})
            rr = got.get("refused_records", {})
            good = r.returncode == rc and (
                own is None or ((nm.get("refused_own"), nm.get("refused_other_use")) == own
                                and (rr.get("own"), rr.get("other_use")) == own))
            t.ok(good, "agent-attribution: %s" % what,
                 "exit %d: %s" % (r.returncode, r.stdout.strip()[:300]))


def facts_cmd(qid, cid, submit, phases, comm="fio", opc="read", match="matched"):
    fw = ",".join('{"phase":"%s","seq":%d,"ts_ns":%d}' % (p, q, 1000 + q)
                  for p, q in phases)
    who = '"pid":318,"tid":318,"comm":"%s","cgroup":1,' % comm if comm else ""
    return ('{"type":"cmd","cmd":{"ctrl":0,"qid":%d,"cid":%d,"opc":"%s","nsid":1,'
            '"match":"%s","flags":0,"submit_ns":%d,"complete_ns":%d,%s"fw":[%s],'
            '"background":[]}}' % (qid, cid, opc, match, submit, submit + 5000, who, fw))


def facts_lines():
    """Agent lines: commands with and without records, an interval line,
    two summaries (the last counts), a dump object; correlate lines that
    differ from them in each way the comparison tells apart."""
    live, corr = ['{"type":"start","mode":"nvme+firmware"}'], []
    seq = 0
    for i in range(40):
        ph = [("fetch", seq), ("media_start", seq + 1), ("cqe_posted", seq + 2)]
        seq += 3
        c = facts_cmd(1 + i % 2, (i % 4) * 4096 + i, 10000 * i, ph,
                      comm=("fio", "kworker/0:1", "dd", "")[i % 4],
                      opc=("read", "write")[i % 2])
        live.append(c)
        if i == 3:  # another record
            c = c.replace('"seq":%d,' % (seq - 1), '"seq":%d,' % (seq + 999))
        if i == 5:  # offline only (another submit), and live only
            c = c.replace('"submit_ns":50000,', '"submit_ns":50001,')
        if i != 7:  # live only
            corr.append(c)
        if i == 20:
            live.append('{"type":"interval","counters":{"host_submit":21,'
                        '"ringbuf_reserve_failed":3},"dump":{"records":60}}')
    corr.append(facts_cmd(2, 5, 1, [("fetch", 7777)]))  # offline only
    live.append(facts_cmd(1, 77, 999999, [], match="unmatched"))
    live.append('{"type":"cmd","cmd":{"qid":1,"cid":78,"submit_ns":5,"fw":[]}}')
    live.append('{"type":"summary","completed":41,"counters":{"host_submit":40,'
                '"dump_records_sent":100,"dump_records_lost":0}}')
    live.append('{"type":"summary","completed":42,"totals":{"dump_records_sent":1},'
                '"counters":{"host_submit":42,"ringbuf_reserve_failed":0,'
                '"dump_records_sent":120,"dump_records_lost":2},'
                '"dump":{"file":"x","records":119,"lost":0}}')
    corr.append('{"type":"final","totals":{"commands":40}}')
    return live, corr


# What the guest ran, verbatim but for $AWK and the file names ($R the
# results, $Q the QEMU trace, $M cmd-matches.awk).
SH_NVME = r"""
sed -n 's/.*"type":"cmd","cmd":{"ctrl":\([0-9]*\),"qid":\([0-9]*\),"cid":\([0-9]*\),"opc":"\([a-z0-9]*\)".*/\1 \2 \3 \4/p' \
	"$R/agent.jsonl" > "$R/agent-cmds.txt"
sed -n "$((qstart + 1)),${qend}p" "$Q" | $AWK '
/pci_nvme_io_cmd / {
	for (i = 1; i <= NF; i++) {
		if ($i == "cid") cid = $(i + 1)
		if ($i == "sqid") sq = $(i + 1)
		if ($i == "opc") op = $(i + 1)
	}
	name = op == "0x2" ? "read" : op == "0x1" ? "write" : op == "0x0" ? "flush" : "op" op
	print 0, sq, cid, name
}' > "$R/qemu-cmds.txt"
echo na=$(wc -l < "$R/agent-cmds.txt")
echo nq=$(wc -l < "$R/qemu-cmds.txt")
echo comp=$(sed -n 's/.*"type":"summary".*"completed":\([0-9]*\).*/\1/p' "$R/agent.jsonl")
sort "$R/agent-cmds.txt" | uniq -c | $AWK '{print $2, $3, $4, $5, $1}' | sort > "$R/a.cnt"
sort "$R/qemu-cmds.txt" | uniq -c | $AWK '{print $2, $3, $4, $5, $1}' | sort > "$R/q.cnt"
echo missing=$($AWK 'NR == FNR { q[$1 " " $2 " " $3 " " $4] = $5; next }
	{ k = $1 " " $2 " " $3 " " $4; d = $5 - q[k]; if (d > 0) m += d }
	END { print m + 0 }' "$R/q.cnt" "$R/a.cnt")
echo gens=$($AWK '{ print int($3 / 4096) }' "$R/agent-cmds.txt" | sort -u | wc -l)
echo queues=$($AWK '{ print $2 }' "$R/agent-cmds.txt" | sort -u | wc -l)
echo dup=$($AWK '{ print $2, $3 }' "$R/agent-cmds.txt" | sort | uniq -d | wc -l)
echo sub=$(sed -n 's/.*"host_submit":\([0-9]*\).*/\1/p' "$R/agent.jsonl" | tail -1)
echo losses=$(sed -n 's/.*"ringbuf_reserve_failed":\([0-9]*\).*/\1/p' "$R/agent.jsonl" | tail -1)
cmdl() { grep '"type":"cmd"' "$1"; }
echo nwho=$(cmdl "$R/agent.jsonl" | grep -c '"pid":[0-9]*,"tid":[0-9]*,"comm":"[^"]*","cgroup":[0-9]*')
echo nfio=$(cmdl "$R/agent.jsonl" | grep -c '"comm":"fio"')
echo nkworker=$(cmdl "$R/agent.jsonl" | grep -c '"comm":"kworker')
"""

SH_MATCHES = r"""
$AWK -f "$M" "$R/agent.jsonl" > "$R/matches-live.txt"
$AWK -f "$M" "$R/correlate.jsonl" > "$R/matches-offline.txt"
$AWK 'NR == FNR { live[$1 " " $2 " " $3] = $0; n++; next }
	{ k = $1 " " $2 " " $3; off[k] = $0; m++
	  if (!(k in live)) extra++; else if (live[k] != $0) differ++; else same++ }
	END { for (k in live) if (!(k in off)) missing++
	      printf "%d %d %d %d %d %d\n", n, m, same, differ + 0, missing + 0, extra + 0 }' \
	"$R/matches-live.txt" "$R/matches-offline.txt"
"""

SH_DUMP = r"""
wcnt() { grep '"type":"summary"' "$R/agent.jsonl" | tail -1 | sed -n "s/.*\"counters\":{[^}]*\"$1\":\([0-9]*\).*/\1/p"; }
echo sent=$(wcnt dump_records_sent)
echo lost=$(wcnt dump_records_lost)
echo written=$(sed -n 's/.*"dump":{[^}]*"records":\([0-9]*\).*/\1/p' "$R/agent.jsonl" | tail -1)
"""

SH_LATE = r"""
$AWK -v a="${after:-0}" '/"match":"matched"/ && match($0, /"complete_ns":[0-9]+/) {
	if (substr($0, RSTART + 14, RLENGTH - 14) + 0 > a + 1e9) n++ } END { print n + 0 }' "$R/agent.jsonl"
"""


def facts_sh(script, env):
    r = run(["sh", "-c", script], env=dict(os.environ, **env), text=True)
    return r.stdout if r.returncode == 0 and not r.stderr else "sh failed: " + r.stderr


def facts_files(d, names, remove):
    got = {}
    for n in names:
        p = os.path.join(d, n)
        got[n] = None
        if os.path.exists(p):
            with open(p) as f:
                got[n] = f.read()
            if remove:
                os.unlink(p)
    return got


def facts_qemu(live):
    """QEMU's trace of the agent's commands, with a line without sqid (the
    awk keeps the last), an unknown opcode, a key QEMU did not see, and
    lines of other events."""
    q = ["11@1.0:pci_nvme_dbbuf_config x", "11@1.0:pci_nvme_io_cmd cid 1 sqid 1 opc 0x2"]
    for line in live:
        m = re.search(r'"qid":(\d+),"cid":(\d+),"opc":"(\w+)"', line)
        if m:
            q.append("11@1.1:pci_nvme_io_cmd cid %s nsid 0x1 sqid %s opc %s opname 'X'" % (
                m.group(2), m.group(1), "0x2" if m.group(3) == "read" else "0x1"))
            q.append("11@1.1:pci_nvme_rw x")
    q[9] = "11@1.1:pci_nvme_io_cmd cid 9 nsid 0x1 opc 0x0"
    q[13] = q[13].replace("opc 0x2", "opc 0x9")
    q[-4] = q[-4].replace(" cid ", " cid 7")
    return q + ["11@1.2:pci_nvme_io_cmd cid 1 sqid 1 opc 0x2"]


def test_facts(t):
    live, corr = facts_lines()
    qemu = facts_qemu(live)
    for awkname, awk in awks():
        with tempfile.TemporaryDirectory() as d:
            for name, ls in (("agent.jsonl", live), ("correlate.jsonl", corr),
                             ("trace.log", qemu)):
                with open(os.path.join(d, name), "w") as f:
                    f.write("".join(x + "\n" for x in ls))
            a = os.path.join(d, "agent.jsonl")
            env = {"R": d, "AWK": " ".join(awk), "M": CMDMATCH,
                   "Q": os.path.join(d, "trace.log")}
            want = facts_sh(SH_MATCHES, env)
            names = ("matches-live.txt", "matches-offline.txt")
            keep = facts_files(d, names, True)
            r = run([sys.executable, FACTS, "matches", a, os.path.join(d, "correlate.jsonl"),
                     "--live-out", os.path.join(d, names[0]),
                     "--offline-out", os.path.join(d, names[1])], text=True)
            got = facts_files(d, names, False)
            t.ok(r.returncode == 0 and r.stdout == want and want == "40 40 37 1 2 2\n" and
                 got == keep,
                 "agent-facts matches: %s's cmd-matches.awk lines and comparison "
                 "(40 live, 40 offline: 37 same, 1 different, 2 live only, 2 offline only)"
                 % awkname,
                 "exit %d: %r, the guest's: %r; the same lines: %s" % (
                     r.returncode, r.stdout, want, got == keep))
            want = facts_sh(SH_DUMP, env)
            r = run([sys.executable, FACTS, "dump-counts", a], text=True)
            t.ok(r.returncode == 0 and r.stdout == want and
                 want == "sent=120\nlost=2\nwritten=119\n",
                 "agent-facts dump-counts: the last summary's counters, the last dump's "
                 "records (the guest's sed)", "exit %d: %r, the guest's: %r" % (
                     r.returncode, r.stdout, want))
            names = ("agent-cmds.txt", "qemu-cmds.txt")
            for qs, qe in ((3, len(qemu) - 3), (4, 2)):
                env.update(qstart=str(qs), qend=str(qe))
                want = facts_sh(SH_NVME, env)
                keep = facts_files(d, names, True)
                r = run([sys.executable, FACTS, "nvme-keys", a, os.path.join(d, "trace.log"),
                         str(qs), str(qe), "--agent-cmds", os.path.join(d, names[0]),
                         "--qemu-cmds", os.path.join(d, names[1])], text=True)
                got = facts_files(d, names, False)
                t.ok(r.returncode == 0 and r.stdout == want and got == keep and
                     "missing=0" not in want and "comp=41 42\n" in want,
                     "agent-facts nvme-keys QSTART %d QEND %d: the keys, counts and files "
                     "of the guest's %s pipelines" % (qs, qe, awkname),
                     "exit %d: %r, the guest's: %r; the same files: %s" % (
                         r.returncode, r.stdout, want, got == keep))
            for after in ("", "89999", "1e3"):
                env["after"] = after
                want = facts_sh(SH_LATE, env)
                r = run([sys.executable, FACTS, "late-matched", a, after or "0"], text=True)
                t.ok(r.returncode == 0 and r.stdout == want and want.strip().isdigit(),
                     "agent-facts late-matched AFTER '%s': %s's count (%s)" % (
                         after, awkname, want.strip()),
                     "exit %d: %r, the guest's: %r" % (r.returncode, r.stdout, want))
            # no QEMU command in the window: the guest's awk took the
            # agent's counts for QEMU's (its NR == FNR held for both
            # files) and found none missing; agent-facts finds them all
            r = run([sys.executable, FACTS, "nvme-keys", a, os.path.join(d, "trace.log"),
                     str(len(qemu)), str(len(qemu))], text=True)
            t.ok(r.returncode == 0 and "\nnq=0\n" in r.stdout and "\nmissing=41\n" in r.stdout,
                 "agent-facts nvme-keys, no QEMU command in the window: all 41 of the "
                 "agent's keys missing (%s)" % awkname, r.stdout + r.stderr)
    with tempfile.TemporaryDirectory() as d:
        a = os.path.join(d, "agent.jsonl")
        with open(a, "w") as f:
            f.write("".join(x + "\n" for x in live))
        env = {"R": d}
        for sub, sh, arg in (("count", 'grep -c "$S" "$R/agent.jsonl"', '"comm":"fio"'),
                             ("count", 'grep -c "$S" "$R/agent.jsonl"', '"ev":"none"'),
                             ("last-line", 'grep "$S" "$R/agent.jsonl" | tail -1',
                              '"type":"summary"'),
                             ("last-line", 'grep "$S" "$R/agent.jsonl" | tail -1',
                              '"type":"none"'),
                             ("lines", 'grep "$S" "$R/agent.jsonl"', '"type":"summary"'),
                             ("lines", 'grep "$S" "$R/agent.jsonl"', '"type":"none"')):
            env["S"] = arg
            r = run(["sh", "-c", sh], env=dict(os.environ, **env), text=True)
            want = r.stdout
            r = run([sys.executable, FACTS, sub, a, arg], text=True)
            t.ok(r.returncode == 0 and r.stdout == want and
                 (want.strip() != "" or "none" in arg),
                 "agent-facts %s '%s': grep's answer (%r)" % (sub, arg, want[:20]),
                 "exit %d: %r, grep's: %r" % (r.returncode, r.stdout, want))
        # --exclude-refused: offline refused command 3's records (the one
        # that differs), live refused one of command 10's (the same on
        # both sides): both left out of every count
        refd = '],"fw_refused":[{"phase":"fetch","seq":1,"ts_ns":1}],"background"'
        lr, cr = list(live), list(corr)
        lr[11] = lr[11].replace('],"background"', refd)
        cr[3] = cr[3].replace('],"background"', refd)
        for name, ls in (("agent-r.jsonl", lr), ("correlate-r.jsonl", cr)):
            with open(os.path.join(d, name), "w") as f:
                f.write("".join(x + "\n" for x in ls))
        r = run([sys.executable, FACTS, "matches", os.path.join(d, "agent-r.jsonl"),
                 os.path.join(d, "correlate-r.jsonl"), "--exclude-refused"], text=True)
        t.ok(r.returncode == 0 and r.stdout == "38 38 36 0 2 2 2\n",
             "agent-facts matches --exclude-refused: the 2 commands either join refused "
             "records of are left out (38 live, 38 offline: 36 same, 0 different)",
             "exit %d: %r %s" % (r.returncode, r.stdout, r.stderr))
        r = run([sys.executable, FACTS, "dump-counts", os.path.join(d, "none.jsonl")],
                text=True)
        t.ok(r.returncode == 2 and r.stdout == "" and "none.jsonl" in r.stderr,
             "agent-facts: a file that is not there: exit 2, nothing on stdout",
             "exit %d: %r %r" % (r.returncode, r.stdout, r.stderr))


def test_window(t):
    # bpftool's files of an armed round (the agent's programs 15, 17, 18),
    # a run time past 2^31 ns, and a program of the same name loaded
    # before the agent (12), left out
    for name, awk in awks():
        r = run(awk + ["-v", "p0=" + os.path.join(FIX, "window-p0.txt"),
                       "-v", "s0=" + os.path.join(FIX, "window-s0.txt"),
                       "-v", "cfg=armed", "-v", "t0=100 4", "-v", "t1=1855 50",
                       "-f", WCOST, os.path.join(FIX, "window-s1.txt")])
        t.eq((r.returncode, r.stdout, r.stderr),
             (0, fixture("window-s1.want"), b""),
             "%s: window-cost.awk on an armed round's bpftool files" % name)
    # window-table.py: a run whose RSS stays within its bound, then one
    # past it by a MiB (exit 3, the section printed all the same)
    head = ("cost unarmed 1000 10 0 2000000\ncost armed 800 16 1 2400000\n"
            "base_kb=70000\nwindow_mb=8\nsecs=600\nslack_mb=4\nringbuf_mb=24\n"
            "rss 0 70000 70000 0\nrss 61 90000 90000 8388000\n")
    bound = 70000 + 36 * 1024
    with tempfile.TemporaryDirectory() as d:
        for last, rc, word in ((bound, 0, "**within**"), (bound + 1024, 3, "**OVER**")):
            f = os.path.join(d, "bench.txt")
            with open(f, "w") as o:
                o.write(head + "rss 600 %d %d 8388000\n" % (last, last))
            r = run([sys.executable, WTABLE, f, "600", "6.1", "props"])
            out = r.stdout.decode()
            t.ok(r.returncode == rc and word in out and
                 "agent CPU (utime + stime) 100000 (100000) against 200000 "
                 "(200000) ns, **2.00**" in out and
                 "BPF run time 2000 (2000) against 3000 (3000) ns, **1.50**" in out and
                 "<!-- bench-window-vm:end -->" in out,
                 "window-table.py: peak %d kB against a bound of %d: exit %d, %s"
                 % (last, bound, rc, word), "exit %d: %s %s" % (r.returncode, out[-400:],
                                                                 r.stderr.decode()))


def main():
    t = Tap()
    test_awk(t)
    test_ninja(t)
    test_sync(t)
    test_vmlinux(t)
    test_slowcheck(t)
    test_attribution(t)
    test_attribution_account(t)
    test_attribution_after_step(t)
    test_facts(t)
    test_window(t)
    return t.done()


if __name__ == "__main__":
    sys.exit(main())
