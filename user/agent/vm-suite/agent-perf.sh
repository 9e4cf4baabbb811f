#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# agent-perf: hmb-trace-agent next to perf.  The agent-e2e path (QEMU's NVMe
# trace -> hmb-fwsim --from-qemu-trace on the VM host -> ivshmem ring ->
# bridge -> hmb_trace:hmb_trace_record -> agent, joined with the nvme
# tracepoints) runs twice under fio randrw QD32: once while `perf trace -a`
# traces every system call, once while
# `perf record -e 'hmb_trace:*' -e 'nvme:*' -a` records the very
# tracepoints the agent attaches to.  Each time the agent is held to its
# own account and to the simulator's log (lib/agent.sh): no record on a
# command other than the one the simulator wrote it for; every command
# matched, or not matched for the reason the agent gives (under this load
# the simulator on the VM host can fall seconds behind, and a command whose
# records come after its id has been used again past the waiting depth is
# flushed and flagged: how many depends on the host's load, so no share of
# matches is asked for); no BPF ring buffer reservation failure.  And perf
# must have worked too: perf trace saw fio's
# io_submit calls, perf record holds at least the firmware records and
# completions the agent counted.  Both perf tools are started before the
# agent and waited for (perf record through its control fifo,
# scripts/vm/lib/perf.sh; perf trace until it writes), since either takes
# 15-20 s to start under TCG.  Under TCG, QD32 and perf record -a together
# saturate the guest's CPUs and the bridge can deliver a firmware record
# more than the default 1 s after its command completed: the agent runs
# with --fw-grace 5000 here (a command still waits for its records 5 s).
# perf reports its own losses (LOST events, a full perf buffer): then its
# counts must reach 95 % of the agent's instead of all of them.
# For a post-mortem: perf record runs with -k mono, so perf.data (kept in
# the results) has the agent's clock (CLOCK_MONOTONIC, bpf_ktime_get_ns)
# and its events line up with the agent's host windows; the agent runs
# with -v (every unmatched firmware record and why, in agent-NAME.err).
# vm-timeout: 600
# vm-alone: yes
# vm-qemu-trace: yes
# vm-shm-size: 16M
set -u
. "$HMB_REPO/scripts/vm/lib/tap.sh"
. "$HMB_REPO/kernel/tools/guest-lib.sh"
. "$HMB_REPO/scripts/vm/lib/perf.sh"
. "$HMB_REPO/user/agent/vm-suite/lib/agent.sh"
SECS=${HMB_AGENT_PERF_SECS:-3}	# fio QD32 per phase
R=$HMB_RESULTS
AGENT=$HMB_BIN/hmb-trace-agent
DEV=${HMB_NVME_DEV#/dev/}

hmb_ivshmem_bridge --clock-offset 1000000000 --clock-drift 100 --bg-rate 20 \
	--cmd-log @RESULTS@/fw-cmd.log

# run_agent NAME: the agent through one fio QD32 run; its JSON lines, one
# per command too, in $R/agent-NAME.jsonl (check_agent checks them once the
# simulator has stopped and said what it dropped).
run_agent() {
	out=$R/agent-$1.jsonl
	"$AGENT" -d "$DEV" -j --per-command -N 0 -v --fw-grace 5000 -o "$out" 1 2>"$R/agent-$1.err" &
	apid=$!
	i=0
	while [ $i -lt 300 ] && ! grep -q '"type":"start"' "$out" 2>/dev/null; do
		usleep 100000; i=$((i + 1))
	done
	grep -q '"mode":"nvme+firmware"' "$out" ||
		{ tap_fail "$1: agent in nvme+firmware mode" "$(cat "$R/agent-$1.err") $(head -1 "$out")"; kill $apid; return 1; }
	fio --name=qd32 --filename="$HMB_NVME_DEV" --direct=1 --ioengine=libaio \
		--iodepth=32 --rw=randrw --bs=4k --size=64M --time_based --runtime="$SECS" \
		--output-format=terse >"$R/fio-$1.txt" 2>"$R/fio-$1.err" ||
		tap_fail "$1: fio" "$(cat "$R/fio-$1.err")"
	sleep 3		# the firmware records of the last commands
	kill -INT $apid
	wait $apid
	arc=$?
	[ $arc = 0 ] && tap_ok "$1: agent exits 0 on SIGINT" ||
		tap_fail "$1: agent exit $arc" "$(grep -v '^libbpf' "$R/agent-$1.err" | tail -3)"
	cnum() { grep '"type":"summary"' "$out" | sed -n "s/.*\"counters\":{[^}]*\"$1\":\([0-9]*\).*/\1/p"; }
	fwr=$(cnum fw_records) hcomp=$(cnum host_complete)
}

# check_agent NAME LOST: run_agent NAME's join against the simulator's log
# (LOST: the records the simulator dropped, the bridge's losses added)
check_agent() {
	agent_summary "$R/agent-$1.jsonl"
	agent_check_attribution "agent-$1.jsonl" 500 "the simulator's log" \
		--fwsim-cmd-log @RESULTS@/fw-cmd.log
	cp "$R/attr.json" "$R/attr-$1.json"
	agent_check_accounted 500 $(($2 + A_bridge_lost))
	[ "$A_ringbuf_reserve_failed" = 0 ] && tap_ok "$1: zero BPF ring buffer reservation failures" ||
		tap_fail "$1: zero BPF ring buffer reservation failures" "'$A_ringbuf_reserve_failed'"
}

# --- next to perf trace -a ----------------------------------------------------
perf trace -a -o /tmp/ptrace.txt >"$R/perf-trace.out" 2>"$R/perf-trace.err" &
ptpid=$!
i=0
while [ ! -s /tmp/ptrace.txt ] && [ $i -lt 900 ] && kill -0 $ptpid 2>/dev/null; do
	usleep 100000; i=$((i + 1))
done
if [ -s /tmp/ptrace.txt ]; then
	tap_ok "perf trace -a is tracing (first output after $((i / 10)) s)"
	run_agent perf-trace
	kill -INT $ptpid
	wait $ptpid
	prc=$?
	io=$(grep -c 'io_submit(' /tmp/ptrace.txt)
	cp /tmp/ptrace.txt "$R/perf-trace.txt"
	[ $prc = 0 ] && [ "$io" -gt 0 ] &&
		tap_ok "perf trace -a ran alongside: $(wc -l < /tmp/ptrace.txt) lines, $io of fio's io_submit calls" ||
		tap_fail "perf trace -a ran alongside" "exit $prc, io_submit lines $io: $(tail -3 "$R/perf-trace.err")"
else
	tap_fail "perf trace -a starts" "$(tail -5 "$R/perf-trace.err")"
	kill $ptpid 2>/dev/null
fi

# --- next to perf record -e 'hmb_trace:*' -e 'nvme:*' -------------------------
if perf_start "$R/perf-record.out" "$R/perf-record.err" \
	record -e 'hmb_trace:*' -e 'nvme:*' -a -k mono -m 2048 -o /tmp/perf.data; then
	tap_ok "perf record -e 'hmb_trace:*' -e 'nvme:*' -a is recording"
	run_agent perf-record
	perf_stop
	prc=$?
	perf report -i /tmp/perf.data --stats >"$R/perf-stats.txt" 2>"$R/perf-stats.err"
	cp /tmp/perf.data "$R/perf.data"
	cnt() { awk -v e="$1 stats:" '$0 ~ e { f = 1; next } f && /SAMPLE events:/ { print $3; exit }' "$R/perf-stats.txt"; }
	precs=$(cnt hmb_trace:hmb_trace_record) pcomp=$(cnt nvme:nvme_complete_rq)
	lost=$(awk '/LOST events:/ { print $3; exit }' "$R/perf-stats.txt")
	tap_diag "perf record: hmb_trace_record ${precs:-0}, nvme_complete_rq ${pcomp:-0}, LOST events ${lost:-0}"
	# what perf must hold, in per mille of what the agent counted
	want=1000
	[ "${lost:-0}" -gt 0 ] && want=950
	[ $prc = 0 ] && [ -n "$precs" ] && [ -n "$fwr" ] && [ $((precs * 1000)) -ge $((fwr * want)) ] &&
		[ -n "$pcomp" ] && [ $((pcomp * 1000)) -ge $((hcomp * want)) ] &&
		tap_ok "perf record ran alongside: $precs firmware records (agent: $fwr), $pcomp completions (agent: $hcomp)" ||
		tap_fail "perf record ran alongside and holds what the agent saw" \
			"exit $prc; perf $precs records $pcomp completions; agent $fwr / $hcomp; $(tail -3 "$R/perf-record.err")"
else
	tap_fail "perf record starts (control fifo ack)" "$(tail -5 "$R/perf-record.err")"
fi

hostcmd stop fw >/dev/null 2>&1
sleep 1
cat "$R/host-fw.stdout" > "$R/fw-report.json" 2>/dev/null
tap_diag "simulator: $(cat "$R/fw-report.json")"
dropped=$(sed -n 's/.*"dropped":\([0-9]*\).*/\1/p' "$R/fw-report.json")
[ -n "$dropped" ] || tap_fail "the simulator's report" "$(cat "$R/fw-report.json")"
for ph in perf-trace perf-record; do
	[ -s "$R/agent-$ph.jsonl" ] && check_agent $ph "${dropped:-0}"
done
rmmod nvme_hmb_trace && tap_ok "rmmod nvme_hmb_trace" || tap_fail "rmmod"
hmb_dmesg_check
tap_done
