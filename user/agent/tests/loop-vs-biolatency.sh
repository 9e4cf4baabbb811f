#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# loop-vs-biolatency.sh AGENT: the agent's host-only fallback (no NVMe, no
# module) against libbpf-tools' biolatency, both attached at the same time
# to a loop device while fio does 4k O_DIRECT random reads (TAP).
#
# Agreement, precisely:
#  - both tools are attached and idle before fio starts and are stopped
#    after fio has exited, so every request fio makes is issued and completed
#    inside both tracing windows, and nothing else touches the loop device:
#    the total counts must be EQUAL to each other, and equal to fio's I/O
#    count but for what the agent reports the kernel skipped (a program
#    already running on that CPU: the per-program recursion guard, which
#    hits both tools alike under load) and at most 0.1 % more that neither
#    tool saw (seen on a loaded host: 2 of 20000, the same in both);
#  - each tool takes its own timestamps (bpf_ktime_get_ns in its own
#    program; both run one after the other on the same tracepoints), so the
#    two latencies of one request differ by the other program's run time:
#    0.1-0.3 us, more on a loaded machine, and systematically (the later
#    program's completion timestamp waits for the earlier program's work).
#    On a loop device over a sparse file most requests take 2-16 us, and
#    where the bulk sits next to a slot boundary (4, 8 or 16 us, depending
#    on the machine's load) that moves several % of the requests into the
#    neighbouring slot (one CI run moved 781 of 20000 from 8-16 to 16-32).
#    So:
#      * slots from 64 us up (the tail, where a skew of a few us is a small
#        part of the slot width) must agree per slot within max(10, 10 %)
#        requests (on a loaded machine a task can be preempted between the
#        two tools' programs);
#      * over all slots, no request may be more than one slot away: the
#        share that moves to the neighbouring slot is not bounded (it
#        depends on how close the bulk sits to a boundary: 3 to 60 % of
#        20000 requests seen on this machine kind with the same build,
#        within minutes), but a skew below the slot width moves a request
#        by one slot at most.  So each tool's cumulative count up to slot
#        k must be at least the other's up to slot k-1, within 0.5 % (a
#        task preempted between the two programs).  The share moved is
#        printed.
# Environment: HMB_LOOP_IOS (default 20000) requests.
set -u
agent=${1:?usage: loop-vs-biolatency.sh AGENT}
ios=${HMB_LOOP_IOS:-20000}
n=0
ok() { n=$((n + 1)); echo "ok $n - $*"; }
notok() { n=$((n + 1)); echo "not ok $n - $*"; }
skip_all() { echo "1..0 # SKIP $*"; exit 0; }

[ "$(id -u)" = 0 ] || skip_all "needs root (BPF, losetup)"
command -v biolatency >/dev/null || skip_all "biolatency missing (Debian package libbpf-tools; scripts/deps.sh bpf)"
command -v fio >/dev/null || skip_all "fio missing (scripts/deps.sh vm)"
[ -r /sys/kernel/btf/vmlinux ] || skip_all "kernel without BTF"
[ -x "$agent" ] || { echo "not ok 1 - agent $agent not built"; exit 1; }

work=$(mktemp -d /tmp/hmb-agent-loop.XXXXXX)
loop=
apid=
bpid=
cleanup() {
	[ -n "$apid" ] && kill -INT "$apid" 2>/dev/null
	[ -n "$bpid" ] && kill -INT "$bpid" 2>/dev/null
	wait 2>/dev/null
	[ -n "$loop" ] && losetup -d "$loop"
	rm -rf "$work"
}
trap cleanup EXIT

truncate -s 256M "$work/img"
loop=$(losetup -f --show --direct-io=on "$work/img") || { notok "losetup"; exit 1; }
dev=${loop#/dev/}
udevadm settle 2>/dev/null || sleep 1

"$agent" -d "$dev" -j -o "$work/agent.jsonl" 2>"$work/agent.err" &
apid=$!
stdbuf -oL biolatency -d "$dev" >"$work/bio.out" 2>&1 &
bpid=$!
# both attached: the agent wrote its start line, biolatency its banner
for i in $(seq 100); do
	grep -q '"type":"start"' "$work/agent.jsonl" 2>/dev/null &&
		grep -q "Tracing" "$work/bio.out" && break
	sleep 0.1
done
sleep 0.5
if grep -q '"type":"start"' "$work/agent.jsonl" 2>/dev/null; then
	ok "agent attached (host-only fallback)"
else
	notok "agent did not start: $(cat "$work/agent.err")"
	exit 1
fi
grep -q "no NVMe tracepoints" "$work/agent.err" &&
	ok "agent says what is missing: $(head -c 120 "$work/agent.err")" ||
	notok "agent gave no message about the missing NVMe driver"

fio --name=loop --filename="$loop" --direct=1 --rw=randread --bs=4k \
	--ioengine=psync --number_ios="$ios" --size=256M --time_based=0 \
	--output-format=json >"$work/fio.json" 2>"$work/fio.err" ||
	{ notok "fio failed: $(cat "$work/fio.err")"; exit 1; }
sleep 0.5
kill -INT "$apid" "$bpid"
wait "$apid"; arc=$?
wait "$bpid"; brc=$?
apid=; bpid=
[ $arc -eq 0 ] && ok "agent exits 0 on SIGINT" || notok "agent exit status $arc: $(cat "$work/agent.err")"
[ $brc -eq 0 ] || echo "# biolatency exit status $brc"

python3 - "$work/agent.jsonl" "$work/bio.out" "$work/fio.json" "$n" <<'EOF'
import json, re, sys
agent_f, bio_f, fio_f, n = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
def tap(cond, msg):
    global n
    n += 1
    print(("ok" if cond else "not ok") + " %d - %s" % (n, msg))
try:
    lines = [json.loads(l) for l in open(agent_f)]
    tap(True, "agent output is JSON lines (%d lines)" % len(lines))
except Exception as e:
    tap(False, "agent output is not JSON lines: %s" % e)
    print("1..%d" % n); sys.exit(1)
summ = [l for l in lines if l.get("type") == "summary"]
tap(len(summ) == 1, "agent wrote one summary")
if not summ:
    print("1..%d" % n); sys.exit(1)
s = summ[0]
ah = {h["lo_us"]: h["count"] for h in s["hists_us"]["host_total"]}
bh = {}
for line in open(bio_f):
    m = re.match(r"\s*(\d+)\s*->\s*(\d+)\s*:\s*(\d+)", line)
    if m:
        bh[int(m.group(1))] = int(m.group(3))
fio = json.load(open(fio_f))
fio_ios = fio["jobs"][0]["read"]["total_ios"]
a_tot, b_tot = sum(ah.values()), sum(bh.values())
print("# fio %d I/Os, agent %d, biolatency %d" % (fio_ios, a_tot, b_tot))
tap(a_tot == b_tot, "same I/O count as biolatency (%d vs %d)" % (a_tot, b_tot))
miss = s["counters"].get("bpf_recursion_misses", 0)
# Both tools see the block layer's tracepoints; on a busy host a request or
# two of fio's may not show on them in either tool (seen in CI-like runs:
# 19998 of 20000 in both, with no recursion miss reported): allow 0.1 %.
short = fio_ios - (a_tot + miss)
tap(a_tot <= fio_ios and short * 1000 <= fio_ios,
    "I/O count equals fio's but for the reported recursion misses, within 0.1 %% (%d + %d vs %d: %d short)" % (a_tot, miss, fio_ios, max(short, 0)))
tap(s["completed"] == a_tot, "reported count equals the histogram total")
hc = s["counters"].get("host_complete", -1)
tap(hc == a_tot, "the summary's host_complete counter equals its histogram total (%d vs %d): both read after the programs were detached" % (hc, a_tot))
keys = sorted(set(ah) | set(bh))
moved = sum(abs(ah.get(k, 0) - bh.get(k, 0)) for k in keys) // 2
print("# %d requests (%.1f %%) in a neighbouring slot" % (moved, 100.0 * moved / max(a_tot, 1)))
bad = [k for k in keys if k >= 64 and abs(ah.get(k, 0) - bh.get(k, 0)) > max(10, 0.1 * max(ah.get(k, 0), bh.get(k, 0)))]
tap(not bad, "histograms agree per slot from 64 us up (slots off: %s)" % (bad or "none"))
# no request more than one slot away: what one tool counts up to slot k-1
# the other counts up to slot k (the slots are consecutive powers of two)
slots = sorted(set(keys) | set(2 * k for k in keys if k))
tol = max(10, a_tot // 200)
ca = cb = pa = pb = 0; worst = 0; where = None
for k in slots:
    ca += ah.get(k, 0); cb += bh.get(k, 0)
    short = max(pb - ca, pa - cb)
    if short > worst:
        worst, where = short, k
    pa, pb = ca, cb
tap(worst <= tol, "no request more than one slot away: within %d (0.5 %%): worst %d%s" % (
    tol, worst, " at the slot from %d us" % where if where is not None else ""))
c = s["counters"]
tap(c["ringbuf_reserve_failed"] == 0, "no ring buffer reservation failed")
print("# agent/biolatency slots: " + " ".join("%d:%d/%d" % (k, ah.get(k, 0), bh.get(k, 0)) for k in keys))
print("1..%d" % n)
EOF
