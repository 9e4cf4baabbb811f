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
# Needs root.  Prints a Markdown table, writes build/bench/agent.json and
# the table into docs/benchmarks.md between the "bench-agent" markers
# (HMB_BENCH_NO_DOC=1 leaves the doc alone).
. "$(dirname "$0")/lib/preamble.sh"
. "$top/scripts/lib/bench-doc.sh"
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

python3 "$top/scripts/lib/agent-table.py" "$out/agent.json" "$secs" "$rounds" "${res[none]}" "${res[biolatency]}" "${res[agent]}" "$work/progs.json" > "$work/table.md"
cat "$work/table.md"
bench_doc bench-agent < "$work/table.md"
