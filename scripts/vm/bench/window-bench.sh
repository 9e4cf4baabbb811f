#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# window-bench: what hmb-trace-agent's flight recorder (--snapshot-dir)
# costs, on the real HMB path (the VM bench's HMB-capable NVMe controller,
# every 5000th command held 1 s: hmb-slow-every, hmb-slow-ns, so that a
# 'host_total>250ms' trigger fires now and then and bundles are written).
# Not a `make check` suite (it is outside vm-run's suite globs: CI has no
# ten minutes for it); scripts/bench-window-vm.sh runs it and writes
# docs/benchmarks.md from $HMB_RESULTS/bench.txt.
#   A. cost: the agent unarmed (-j: the commands cross to user space,
#      the firmware records stay in BPF) and armed (--trigger,
#      --snapshot-dir: every firmware record crosses too), each
#      through fio 4k randread libaio QD32 for HMB_WINDOW_COST_SECS,
#      interleaved HMB_WINDOW_ROUNDS times in this one boot: the agent's
#      own CPU (utime + stime of /proc/PID/stat; its bundle writers'
#      apart, cutime + cstime) and its BPF programs' run time
#      (kernel.bpf_stats_enabled, bpftool prog show), per command (its
#      nvme_complete_rq program's run count over the same window);
#   B. memory: the agent armed with --window-mb HMB_WINDOW_MB through
#      HMB_WINDOW_SECS of the same fio, VmRSS and VmHWM every
#      HMB_WINDOW_EVERY seconds, the window's own accounting from its
#      interval lines (window_held_bytes), the bundles taken away as they
#      come.  The bound: VmRSS before any I/O (the agent attached, its
#      window mapped but not touched: its fixed overhead) + the window +
#      the BPF ring buffers (--ringbuf-mb 16, the default, and the raw
#      records' 8 MiB one, on while armed: mapped at attach, a page counts
#      once the agent has read it, and it reads them all as the producers
#      go round) + HMB_WINDOW_SLACK_MB
#      (default 4: malloc's arenas for the join and the lines).  Both are
#      fixed mappings written round: past the first lap of each the RSS
#      must stay flat.
# Between A and B, with perf in the guest (HMB_WINDOW_PERF=0: not), one
# fio window each way under perf record: where the agent's CPU goes.
# vm-timeout: 1800
# vm-alone: yes
# vm-nvme: patched hmb_trace_kb=1024
# vm-nvme-hmb: hmpre=2048, hmmin=256, hmmaxd=16, hmb-bg-rate=0, hmb-slow-every=5000, hmb-slow-ns=1000000000
set -u
. "$HMB_REPO/scripts/vm/lib/tap.sh"
. "$HMB_REPO/kernel/tools/guest-lib.sh"
. "$HMB_REPO/user/agent/vm-suite/lib/agent.sh"
CSECS=${HMB_WINDOW_COST_SECS:-20}
ROUNDS=${HMB_WINDOW_ROUNDS:-3}
WSECS=${HMB_WINDOW_SECS:-600}
EVERY=${HMB_WINDOW_EVERY:-5}
WMB=${HMB_WINDOW_MB:-8}
SLACK=${HMB_WINDOW_SLACK_MB:-4}
RBMB=16	# the agent's --ringbuf-mb default, given explicitly
RAWMB=8	# its raw records' ring buffer (bpf/hmb_agent.bpf.c, rawrb)
R=$HMB_RESULTS
DISK=${HMB_NVME_DEV#/dev/}
STATS=/proc/sys/kernel/bpf_stats_enabled
snap=/tmp/window-snap
OUT=$R/bench.txt
ARM="--trigger host_total>250ms --snapshot-dir $snap --pre 2 --post 0.5 --holdoff 20"

hmb_need_patched_hmb
hmb_nvme_bridge_on
echo 1 > $STATS
: > "$OUT"
rm -rf "$snap" && mkdir -p "$snap"
tap_diag "perf in the guest: $(command -v perf || echo none)"

# progs FILE: "id name run_time_ns run_cnt" per loaded program
progs() {
	bpftool prog show | awk '/^[0-9]+:/ {
		id = $1; sub(/:/, "", id); name = ""; rt = 0; rc = 0
		for (i = 2; i < NF; i++) {
			if ($i == "name") name = $(i + 1)
			if ($i == "run_time_ns") rt = $(i + 1)
			if ($i == "run_cnt") rc = $(i + 1)
		}
		print id, name, rt, rc }' > "$1"
}
# ticks PID: utime+stime and cutime+cstime, in clock ticks
ticks() { awk '{ print $14 + $15, $16 + $17 }' "/proc/$1/stat"; }
fio_run() {
	fio --name=bench --filename="$HMB_NVME_DEV" --direct=1 --rw=randread --bs=4k \
		--size=64M --time_based --runtime="$1" --ioengine=libaio --iodepth=32 \
		--output-format=terse >"$2" 2>"$2.err"
}
# stop NAME PID: SIGINT, and the agent must exit within 60 s; one that
# does not is a hang: its state (status, wchan, kernel stacks, 3 s of
# perf) kept in $R/NAME-hang.txt, then SIGKILL.  Sets arc.
stop() {
	kill -INT "$2"
	_i=0
	while kill -0 "$2" 2>/dev/null && [ $_i -lt 600 ]; do usleep 100000; _i=$((_i + 1)); done
	if kill -0 "$2" 2>/dev/null; then
		{ cat "/proc/$2/status"; for _t in /proc/"$2"/task/*; do
			echo "== $_t $(cat "$_t/comm") $(cat "$_t/wchan")"; cat "$_t/stack"; done
		} > "$R/$1-hang.txt" 2>&1
		if command -v perf >/dev/null; then
			perf record -e cpu-clock -F 499 -g -p "$2" -o "$R/$1-hang.data" -- sleep 3 >/dev/null 2>&1
			perf report -i "$R/$1-hang.data" --stdio --no-children 2>/dev/null | head -80 >> "$R/$1-hang.txt"
		fi
		kill -KILL "$2"
		tap_fail "$1: the agent exits within 60 s of SIGINT" "a hang: $R/$1-hang.txt; $(tail -2 "$R/agent-$1.err")"
	fi
	wait "$2"
	arc=$?
}
# reap: the bundles written so far, counted and taken away (guest memory)
nsnap=0
reap() {
	for _b in "$snap"/SNAP-*; do
		[ -d "$_b" ] || continue
		nsnap=$((nsnap + 1)) && rm -rf "$_b"
	done
}

# cost NAME CFG [AGENT ARGS]: one fio window under the agent; appends
# "cost CFG cmds cpu_ticks child_ticks bpf_ns" to $OUT
cost() {
	name=$1 cfg=$2
	shift 2
	progs "$R/$name-p0.txt"
	"$AGENT" -d "$DISK" -j -N 0 -o "$R/agent-$name.jsonl" "$@" 1 2>"$R/agent-$name.err" &
	apid=$!
	agent_wait_start "$R/agent-$name.jsonl" 60 ||
		{ tap_fail "$name: the agent starts" "$(cat "$R/agent-$name.err")"; kill $apid; return 1; }
	sleep 1
	t0=$(ticks $apid)
	progs "$R/$name-s0.txt"
	fio_run "$CSECS" "$R/fio-$name.txt" || tap_fail "$name: fio" "$(cat "$R/fio-$name.txt.err")"
	hmb_wait_drained "$dev" 30
	sleep 2
	progs "$R/$name-s1.txt"
	t1=$(ticks $apid)
	stop "$name" $apid
	reap
	[ $arc = 0 ] && tap_ok "$name: the agent exits 0" ||
		tap_fail "$name: the agent exits 0" "$(tail -3 "$R/agent-$name.err")"
	awk -v p0="$R/$name-p0.txt" -v s0="$R/$name-s0.txt" -v cfg="$cfg" -v t0="$t0" \
		-v t1="$t1" -f "$HMB_REPO/scripts/vm/bench/window-cost.awk" "$R/$name-s1.txt" >> "$OUT"
	tap_diag "$name: $(tail -1 "$OUT")"
}

# --- A: unarmed against armed, interleaved -----------------------------------------
for r in $(seq 1 "$ROUNDS"); do
	cost "unarmed-$r" unarmed
	# shellcheck disable=SC2086
	cost "armed-$r" armed $ARM --window-mb "$WMB"
done
awk '$1 == "cost" && $3 > 0 { n[$2]++ } END { exit !(n["unarmed"] == '"$ROUNDS"' && n["armed"] == '"$ROUNDS"') }' "$OUT" &&
	tap_ok "cost: $ROUNDS rounds of each measured (commands seen by the agent's programs)" ||
	tap_fail "cost: $ROUNDS rounds of each measured" "$(cat "$OUT")"

# --- where the agent's CPU goes: perf, armed and unarmed -------------------------------
# profile NAME [AGENT ARGS]: perf record (cpu-clock: no PMU under TCG) of
# the agent through one fio window; "perf NAME PCT DSO SYMBOL" lines, the
# ten largest, into $OUT
profile() {
	name=$1
	shift
	"$AGENT" -d "$DISK" -j -N 0 -o "$R/agent-$name.jsonl" "$@" 1 2>"$R/agent-$name.err" &
	apid=$!
	agent_wait_start "$R/agent-$name.jsonl" 60 ||
		{ tap_fail "$name: the agent starts" "$(cat "$R/agent-$name.err")"; kill $apid; return 1; }
	sleep 1
	perf record -e cpu-clock -F 499 -p $apid -o "$R/$name.data" -- sleep "$CSECS" \
		>"$R/$name.perf.err" 2>&1 &
	perfpid=$!
	fio_run "$CSECS" "$R/fio-$name.txt" || tap_fail "$name: fio" "$(cat "$R/fio-$name.txt.err")"
	wait $perfpid
	stop "$name" $apid
	reap
	perf report -i "$R/$name.data" --stdio --no-children --sort dso,sym 2>/dev/null |
		awk -v n="$name" '/^ *[0-9.]+%/ && k < 10 { k++; p = $1; sub(/%/, "", p)
			d = $2; $1 = $2 = $3 = ""; sub(/^ */, ""); print "perf", n, p, d, $0 }' >> "$OUT"
	grep -q "^perf $name " "$OUT" &&
		tap_ok "$name: perf profile of the agent ($(grep -c "^perf $name " "$OUT") symbols kept)" ||
		tap_fail "$name: perf profile of the agent" "$(tail -3 "$R/$name.perf.err")"
}
if [ "${HMB_WINDOW_PERF:-1}" = 1 ] && command -v perf >/dev/null; then
	profile perf-unarmed
	# shellcheck disable=SC2086
	profile perf-armed $ARM --window-mb "$WMB"
fi

# --- B: the window's memory over WSECS ----------------------------------------------
nsnap=0
# shellcheck disable=SC2086
"$AGENT" -d "$DISK" -j -N 0 -o "$R/agent-rss.jsonl" $ARM --window-mb "$WMB" \
	--ringbuf-mb "$RBMB" "$EVERY" \
	2>"$R/agent-rss.err" &
apid=$!
agent_wait_start "$R/agent-rss.jsonl" 60 ||
	{ tap_fail "rss: the agent starts" "$(cat "$R/agent-rss.err")"; tap_done; }
sleep 2
base=$(awk '/^VmRSS:/ { print $2 }' /proc/$apid/status)
echo "base_kb=$base" >> "$OUT"
echo "window_mb=$WMB" >> "$OUT"
echo "secs=$WSECS" >> "$OUT"
echo "slack_mb=$SLACK" >> "$OUT"
echo "ringbuf_mb=$((RBMB + RAWMB))" >> "$OUT"
fio_run "$WSECS" "$R/fio-rss.txt" &
fpid=$!
t0=$(date +%s)
while kill -0 $fpid 2>/dev/null; do
	t=$(($(date +%s) - t0))
	held=$(grep -o '"window_held_bytes":[0-9]*' "$R/agent-rss.jsonl" | tail -1 | cut -d: -f2)
	awk -v t=$t -v h="${held:-0}" '/^VmRSS:/ { r = $2 } /^VmHWM:/ { w = $2 }
		END { print "rss", t, r, w, h }' /proc/$apid/status >> "$OUT"
	reap
	sleep "$EVERY"
done
wait $fpid || tap_fail "rss: fio" "$(cat "$R/fio-rss.txt.err")"
hmb_wait_drained "$dev" 30
sleep 2
stop rss $apid
reap
[ $arc = 0 ] && tap_ok "rss: the agent exits 0 after ${WSECS}s" ||
	tap_fail "rss: the agent exits 0" "$(tail -3 "$R/agent-rss.err")"
echo "snapshots=$nsnap" >> "$OUT"
echo "rss_cmds=$(awk -F';' '{ print int($6 / 4) }' "$R/fio-rss.txt")" >> "$OUT"
grep '"type":"summary"' "$R/agent-rss.jsonl" | tail -1 |
	sed -n 's/.*\("snapshots":{.*}\),"top".*/summary \1/p' >> "$OUT"
tap_diag "rss: $(grep -c '^rss' "$OUT") samples, $nsnap bundles; $(grep '^summary' "$OUT")"
# bounded: peak within base + window + slack
awk -v b="$base" -v w="$WMB" -v s="$SLACK" -v rb="$((RBMB + RAWMB))" '$1 == "rss" && $4 > m { m = $4 }
	END { exit !(m > 0 && m <= b + (w + rb + s) * 1024) }' "$OUT" &&
	tap_ok "rss: peak VmHWM within the agent's start RSS $base kB + window $WMB MiB + ring buffers $((RBMB + RAWMB)) MiB + $SLACK MiB" ||
	tap_fail "rss: peak VmHWM within the bound" "$(grep '^rss' "$OUT" | tail -3)"

echo 0 > "$S/bridge"
rmmod nvme_hmb_trace && tap_ok "rmmod nvme_hmb_trace" || tap_fail "rmmod nvme_hmb_trace"
hmb_dmesg_check
tap_done
