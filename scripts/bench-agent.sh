#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# bench-agent.sh: what hmb-trace-agent's host-only fallback costs, against
# libbpf-tools' biolatency: 4k random-read IOPS (fio, psync, O_DIRECT) on a
# loop device with nothing attached, with biolatency, and with the agent,
# in one run.  The three are interleaved for HMB_BENCH_ROUNDS rounds
# (default 3) of HMB_BENCH_SECS seconds (default 10) each, and the median
# of each is taken, so that drift in the machine's load hits all three.
#   cost(tool) = IOPS(nothing) / IOPS(tool) - 1      (fraction of throughput)
#   ratio      = cost(agent) / cost(biolatency)      goal: <= 1.0
# IOPS on a shared 2-core machine are noisy, so the same run also measures
# the programs themselves: both tools attached to the same I/Os with
# kernel.bpf_stats_enabled=1, the run time of each tool's BPF programs per
# I/O (bpftool prog show: run_time_ns / run_cnt, issue + completion).
# Needs root.  Prints a Markdown table and writes build/bench/agent.json.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
agent=$top/build/bin/hmb-trace-agent
secs=${HMB_BENCH_SECS:-10}
rounds=${HMB_BENCH_ROUNDS:-3}
out=$top/build/bench
mkdir -p "$out"

[ "$(id -u)" = 0 ] || { echo "bench-agent: needs root (BPF, losetup)" >&2; exit 1; }
for t in fio biolatency losetup; do
	command -v $t >/dev/null || { echo "bench-agent: $t missing (scripts/deps.sh bpf vm)" >&2; exit 1; }
done
[ -x "$agent" ] || { echo "bench-agent: $agent not built (make)" >&2; exit 1; }

work=$(mktemp -d /tmp/hmb-bench-agent.XXXXXX)
loop=
tpid=
cleanup() {
	[ -n "$tpid" ] && kill -INT "$tpid" 2>/dev/null && wait "$tpid" 2>/dev/null
	[ -n "$loop" ] && losetup -d "$loop"
	rm -rf "$work"
}
trap cleanup EXIT
truncate -s 1G "$work/img"
loop=$(losetup -f --show --direct-io=on "$work/img")
dev=${loop#/dev/}
udevadm settle 2>/dev/null || sleep 1

run_fio() {
	fio --name=bench --filename="$loop" --direct=1 --rw=randread --bs=4k \
		--ioengine=psync --time_based --runtime="$secs" \
		--output-format=json 2>/dev/null |
		python3 -c 'import json,sys; print(round(json.load(sys.stdin)["jobs"][0]["read"]["iops"]))'
}

start_tool() {	# start_tool none|biolatency|agent
	tpid=
	case $1 in
	none) return 0 ;;
	biolatency) stdbuf -oL biolatency -d "$dev" >"$work/tool.out" 2>&1 & tpid=$! ;;
	agent) "$agent" -d "$dev" -o "$work/tool.out" 2>"$work/tool.err" & tpid=$! ;;
	esac
	for _ in $(seq 100); do
		grep -q "Tracing" "$work/tool.out" 2>/dev/null && return 0
		sleep 0.1
	done
	echo "bench-agent: $1 did not start: $(cat "$work/tool.out" "$work/tool.err" 2>/dev/null)" >&2
	exit 1
}

stop_tool() {
	[ -n "$tpid" ] || return 0
	kill -INT "$tpid"
	wait "$tpid" || { echo "bench-agent: tool exited with $?" >&2; exit 1; }
	tpid=
}

declare -A res
for r in $(seq "$rounds"); do
	for t in none biolatency agent; do
		start_tool $t
		res[$t]+="$(run_fio) "
		stop_tool
	done
done

# programs' own cost, both tools on the same I/Os
old_stats=$(sysctl -n kernel.bpf_stats_enabled)
sysctl -qw kernel.bpf_stats_enabled=1
start_tool biolatency
bpid=$tpid
start_tool agent
run_fio >/dev/null
bpftool -j prog show > "$work/progs.json"
stop_tool
tpid=$bpid
stop_tool
sysctl -qw kernel.bpf_stats_enabled="$old_stats"

python3 - "$out/agent.json" "$secs" "$rounds" "${res[none]}" "${res[biolatency]}" "${res[agent]}" "$work/progs.json" <<'EOF'
import json, statistics, sys, platform, os
path, secs, rounds = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
runs = {k: [int(x) for x in v.split()] for k, v in zip(("none", "biolatency", "agent"), sys.argv[4:7])}
med = {k: statistics.median(v) for k, v in runs.items()}
cost = {k: med["none"] / med[k] - 1 for k in ("biolatency", "agent")}
ratio = cost["agent"] / cost["biolatency"] if cost["biolatency"] > 0 else float("nan")
progs = json.load(open(sys.argv[7]))
def prog_cost(names):
    t = c = 0
    for p in progs:
        if p.get("name") in names:
            t += p.get("run_time_ns", 0); c += p.get("run_cnt", 0)
    return t, c
bt, bc = prog_cost(("block_rq_issue_btf", "block_rq_complete_btf", "block_rq_issue", "block_rq_complete"))
at, ac = prog_cost(("blk_issue_btf", "blk_complete_btf", "blk_issue_raw", "blk_complete_raw"))
# per I/O = per issue+completion pair = 2 runs
ns_io = {"biolatency": 2 * bt / bc if bc else None, "agent": 2 * at / ac if ac else None}
res = {"bench": "agent-host-fallback", "bpf_ns_per_io": ns_io, "bpf_runs": {"biolatency": bc, "agent": ac}, "secs": secs, "rounds": rounds, "iops_runs": runs,
       "iops_median": med, "cost": cost, "ratio_agent_to_biolatency": ratio,
       "kernel": platform.release(), "cpus": os.cpu_count(),
       "loadavg": open("/proc/loadavg").read().split()[:3]}
json.dump(res, open(path, "w"), indent=1)
print("| setup | 4k randread IOPS (median of %d x %d s) | runs | cost vs nothing |" % (rounds, secs))
print("|---|---|---|---|")
for k in ("none", "biolatency", "agent"):
    c = "" if k == "none" else "%.1f %%" % (100 * cost[k])
    print("| %s | %d | %s | %s |" % (k if k != "none" else "nothing attached", med[k], " ".join(map(str, runs[k])), c))
print("\nagent/biolatency cost ratio (IOPS): %.2f (goal <= 1.0); load average %s" % (ratio, " ".join(res["loadavg"])))
if ns_io["agent"] and ns_io["biolatency"]:
    print("BPF program time per I/O, both attached to the same %d I/Os: biolatency %.0f ns, agent %.0f ns, ratio %.2f"
          % (ac // 2, ns_io["biolatency"], ns_io["agent"], ns_io["agent"] / ns_io["biolatency"]))
EOF
