#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# agent-e2e: the whole path.  QEMU traces what its NVMe model does with each
# command the guest issues; hmb-fwsim --from-qemu-trace on the VM host turns
# that into the firmware records of those very commands (real sqid and cid,
# its own clock with a known offset, drift and step, gc/thermal windows) in
# the ivshmem ring; nvme-hmb-trace.ko's bridge emits them as
# hmb_trace:hmb_trace_record; hmb-trace-agent joins them with
# nvme:nvme_setup_cmd/nvme_complete_rq.  fio mixed read/write at QD1 and
# QD32.  Checked against the simulator's own log of which QEMU command each
# record came from.  The simulator also keeps every record it wrote as a
# dump (fw.bin); at the end the VM host runs `hmb-trace-analyze correlate`
# on fw.bin and the agent's JSON lines, which must give the live agent's
# matches (cmd-matches.awk's lines, made and compared on the VM host by
# agent-facts: awk over these tens of MB is slow under TCG).  The agent
# itself keeps every record it received with -w (agent-fw.bin): correlate
# of that dump must give the same matches, and its stats must count what
# the agent counted.  fw.bin, agent-fw.bin and agent.jsonl stay in the results
# directory: HMB_VM_RUN_DIR for tests/formats/test_correlate.py.
# One host thread for both vCPUs: when two vCPU threads read the TSC, the
# guest's CLOCK_MONOTONIC runs fast of the host's by a load-dependent 3 to
# 23 ppm (scripts/vm/README.md, "The guest's clock under TCG"), and this
# suite's truth is the host's clock.
# vm-timeout: 900
# vm-alone: yes
# vm-tcg-thread: single
# vm-qemu-trace: yes
# vm-shm-size: 16M
set -u
. "$HMB_REPO/scripts/vm/lib/tap.sh"
. "$HMB_REPO/kernel/tools/guest-lib.sh"
. "$HMB_REPO/user/agent/vm-suite/lib/agent.sh"
SECS=${HMB_AGENT_FIO_SECS:-3}		# fio QD1
SECS32=${HMB_AGENT_FIO32_SECS:-6}	# fio QD32
DRIFT=200		# ppm, simulator clock
# s after the first trace line (about when fio QD1 starts): the middle of
# the QD32 run (QD1 takes SECS s, then fio starts again in 0.2 to 2 s under
# TCG), so that commands may be in flight across the step and the agent
# measures the step's size on thousands of QD32 commands on either side
STEP_AT=$(awk -v a="$SECS" -v b="$SECS32" 'BEGIN { print a + 1 + b / 2 }')
STEP_NS=2000000		# +2 ms
R=$HMB_RESULTS

hmb_ivshmem_bridge --clock-offset 1000000000 --clock-drift $DRIFT \
	--clock-step "$STEP_AT:$STEP_NS" --bg-rate 20 \
	--cmd-log @RESULTS@/fw-cmd.log --log @RESULTS@/fw.bin

# 64 MiB of BPF ring buffer: under TCG the agent's thread shares a slow
# vCPU with fio and the bridge, and may fall seconds behind the I/O
agent_start "$R/agent.jsonl" -N 5 --ringbuf-mb 64 -w "$R/agent-fw.bin" 1 || tap_done

perf stat -a -e hmb_trace:hmb_trace_record -e nvme:nvme_complete_rq -x, \
	-o "$R/perf.csv" sleep $((SECS + SECS32 + 4)) &
ppid=$!
sleep 1
fio --name=qd1 --filename="$HMB_NVME_DEV" --direct=1 --ioengine=psync \
	--rw=randrw --bs=4k --size=64M --time_based --runtime="$SECS" \
	--output-format=terse >"$R/fio1.txt" 2>"$R/fio1.err" &&
# QD32 at most 2000 IOPS each way: QEMU's trace, vm-run's relay and the
# simulator on the VM host must keep up with the guest, and with the
# guest's clock right (vm-run's tsc_early_khz) fio really runs SECS32 s;
# unbounded, on a busy machine the records come too late for their command
# ids (flushed by reuse) and the clock estimate fails.  Still > 8192
# commands on either side of the step.
fio --name=qd32 --filename="$HMB_NVME_DEV" --direct=1 --ioengine=libaio \
	--iodepth=32 --rw=randrw --bs=4k --size=64M --time_based --rate_iops=2000 \
	--runtime="$SECS32" --output-format=terse >"$R/fio32.txt" 2>"$R/fio32.err" &&
	tap_ok "fio randrw QD1 ${SECS}s, then QD32 ${SECS32}s (at most 2000 IOPS each way)" ||
	tap_fail "fio ran" "$(cat "$R/fio1.err" "$R/fio32.err")"
wait $ppid
agent_stop "$R/agent.jsonl"
hostcmd stop fw >/dev/null 2>&1
sleep 1
cat "$R/host-fw.stdout" > "$R/fw-report.json" 2>/dev/null
tap_diag "simulator: $(cat "$R/fw-report.json")"
tap_diag "bridge: records $(cat $HMB_CLASS/$ring/bridge_records) lost $(cat $HMB_CLASS/$ring/bridge_lost 2>/dev/null)"

agent_summary "$R/agent.jsonl"
agent_check_reports "$R/agent.jsonl" 1

# no misattribution: every firmware record the agent gave a command came
# from that very QEMU command, per the simulator's log; and the first
# command record on the stepped clock (checked below)
sim_step=$(sed -n 's/.*"step_first_seq":\([0-9-]*\).*/\1/p' "$R/fw-report.json")
agent_check_attribution agent.jsonl 1000 "the simulator's log" \
	--fwsim-cmd-log @RESULTS@/fw-cmd.log --step-first-seq "$sim_step"
agent_check_window
# every command matched or not for the reason the agent gives; the records
# the simulator dropped and the bridge lost may each cost one its match
dropped=$(sed -n 's/.*"dropped":\([0-9]*\).*/\1/p' "$R/fw-report.json")
agent_check_accounted 1000 $((${dropped:-0} + A_bridge_lost))

# clock: the simulator's drift, and its +2 ms step at STEP_AT s, recovered
# the agent reports b in host = fw + a + b (fw - ref): a firmware clock
# running DRIFT ppm fast gives b = 1 / (1 + DRIFT) - 1, about -DRIFT ppm
want=$(awk -v w=$DRIFT 'BEGIN { printf "%.3f", (1 / (1 + w * 1e-6) - 1) * 1e6 }')
tap_diag "estimated drift $A_drift_ppm ppm (simulator's clock +$DRIFT ppm fast: expect $want), steps $A_steps"
agent_check_drift "$want"
# the step's size: the agent measures it between the commands just before
# and just after it (same load on both sides, so the latency biases of the
# two offsets cancel); a +STEP_NS firmware clock lowers host - fw by STEP_NS
agent_check_step_size $STEP_NS "$want"
# for comparison: the interval reports' offsets before and after the step
# (whole windows, so QD1 before and QD32 after), extrapolated to the step;
# the VM host picks the interval lines out of the agent's
hostcmd run agent-facts lines @RESULTS@/agent.jsonl '"type":"interval"' | sed -n 's/.*"offset_ns":\([0-9.-]*\),"offset_err_ns":\([0-9.-]*\),[^}]*"ref_fw_ns":\([0-9.-]*\),"drift_ppm":\([0-9.-]*\).*"steps":\([0-9]*\).*/\1 \2 \3 \4 \5/p' > "$R/clock-intervals.txt"
tap_diag "interval clock estimates (offset err ref drift steps): $(tr '\n' ';' < "$R/clock-intervals.txt")"
awk -v step=$STEP_NS -v at=$STEP_AT -v dr=$DRIFT -f "$HMB_REPO/user/agent/vm-suite/step-err.awk" \
	"$R/clock-intervals.txt" > "$R/step-err-intervals.txt"
tap_diag "step from the whole-window interval estimates: error $(cat "$R/step-err-intervals.txt") ns"
# the step's record: the simulator knows the first record it wrote on the
# stepped clock; the first command record from there on is where the step
# is (the agent sees command records only), and it must lie in the bracket
# the agent's evidence gives
want_seq=$A_step_want
got_seq=$A_step_seq
across=$(sed -n 's/.*"across_step": \([0-9]*\).*/\1/p' "$R/attr.json")
tap_diag "step: simulator's first record on the new clock $sim_step, first command record from it $want_seq; agent placed the step at $got_seq; $across commands in flight across it"
agent_check_step_seq "$want_seq"

# losses: all counted; none in the ring buffer
agent_check_losses "$(cat "$HMB_CLASS/$ring/bridge_records")"
ptr=$(awk -F, '/hmb_trace_record/ { print $1 }' "$R/perf.csv")
[ -n "$ptr" ] && [ "$ptr" -gt 0 ] &&
	tap_ok "perf stat alongside counted $ptr hmb_trace:hmb_trace_record" ||
	tap_fail "perf alongside" "$(cat "$R/perf.csv")"

# offline = live: hmb-trace-analyze correlate (on the VM host) of a dump
# against the agent's own JSON lines gives every command the live agent
# gave firmware records exactly the same records (phase -> seq), keyed by
# (qid, cid, host submit_ns), and gives records to no other command.  Once
# with the simulator's dump (what the firmware wrote), once with the
# agent's own -w dump (what the agent received).
ref_ok=0
offline_eq_live() {	# DUMP TAG WHAT [ref: compare with correlate.jsonl first]
	if hostcmd run hmb-trace-analyze correlate "@RESULTS@/$1" @RESULTS@/agent.jsonl \
		-j -o "@RESULTS@/correlate$2.jsonl" >"$R/correlate$2.out" 2>"$R/correlate$2.err"; then
		# the same command lines as a correlate output already compared
		# with the live matches: the same matches (and no slow awk under TCG)
		if [ "${4:-}" = ref ] && [ "$ref_ok" = 1 ] && grep '"type":"cmd"' "$R/correlate$2.jsonl" > "$R/cmds$2.txt" &&
			grep '"type":"cmd"' "$R/correlate.jsonl" | cmp -s - "$R/cmds$2.txt" &&
			[ -s "$R/cmds$2.txt" ]; then
			tap_ok "hmb-trace-analyze correlate of $3 gives the live agent's matches: its $(wc -l < "$R/cmds$2.txt") command lines are those of correlate of the dump already compared, byte for byte"
			return
		fi
		# both joins' matches keyed by (qid, cid, submit): live and
		# offline line counts, same, different, live only, offline
		# only, and the commands left out because either join refused
		# a record of theirs as outside the window on its clock (the
		# two clocks are different estimates: at a window's edge they
		# may disagree; at most 0.1 % of the commands)
		hostcmd run agent-facts matches @RESULTS@/agent.jsonl "@RESULTS@/correlate$2.jsonl" \
			--live-out @RESULTS@/matches-live.txt --offline-out "@RESULTS@/matches-offline$2.txt" \
			--exclude-refused \
			> "$R/matches-cmp$2.txt" 2> "$R/matches-cmp$2.err" ||
			tap_diag "agent-facts matches: $(cat "$R/matches-cmp$2.err")"
		read nl no same differ missing extra edge < "$R/matches-cmp$2.txt"
		tap_diag "correlate $1: $(hostcmd run agent-facts lines "@RESULTS@/correlate$2.jsonl" '"type":"final"' | sed -n 's/.*"totals":{\([^}]*\)}.*/\1/p')"
		tap_diag "matches ($1): live $nl commands with firmware records, offline $no; same $same, different $differ, live only $missing, offline only $extra; left out, a record refused at the window's edge by either: $edge"
		[ "$nl" -gt 1000 ] && [ "$same" = "$nl" ] && [ "$no" = "$nl" ] &&
			[ $((edge * 1000)) -le "$nl" ] && ref_ok=1 &&
			tap_ok "hmb-trace-analyze correlate of $3 gives the live agent's matches: $same of $nl commands, same (qid, cid, submit) -> firmware seqs, none more ($edge left out: a record refused at the window's edge, <= 0.1 %)" ||
			tap_fail "correlate of $3 gives the live agent's matches" "live $nl offline $no same $same different $differ live-only $missing offline-only $extra refused-at-edge $edge (<= 0.1 % of live)"
	else
		tap_fail "hmb-trace-analyze correlate $1 agent.jsonl on the VM host" "$(cat "$R/correlate$2.err")"
	fi
}
offline_eq_live fw.bin "" "the simulator's dump"

# -w: the agent's own dump (ring N's records in agent-fw.bin.ringN, N > 0)
rid=${ring##*[!0-9]}
wdump=agent-fw.bin
[ "$rid" = 0 ] || wdump=agent-fw.bin.ring$rid
fwr=$A_fw_records
# the last summary line's dump_records_sent and dump_records_lost, the
# last "dump":{... "records"} (agent-facts on the VM host)
hostcmd run agent-facts dump-counts @RESULTS@/agent.jsonl > "$R/dump-counts.txt" 2> "$R/dump-counts.err" ||
	tap_diag "agent-facts dump-counts: $(cat "$R/dump-counts.err")"
wcnt() { sed -n "s/^$1=//p" "$R/dump-counts.txt"; }
sent=$(wcnt sent); dlost=$(wcnt lost); wrec=$(wcnt written)
tap_diag "-w: agent counted $fwr firmware records, handed $sent to user space, lost $dlost, wrote $wrec into $wdump"
[ -n "$sent" ] && [ "$sent" = "$fwr" ] && [ "$dlost" = 0 ] && [ "$wrec" = "$fwr" ] &&
	grep -qx 'consumer_lost=0' "$R/$wdump.meta" &&
	tap_ok "-w: all $fwr records the agent received were handed over and written, none lost (sidecar: consumer_lost=0)" ||
	tap_fail "-w: every received record written" "fw_records $fwr sent $sent lost $dlost written $wrec; sidecar: $(tr '\n' ' ' < "$R/$wdump.meta" 2>&1)"
if hostcmd run hmb-trace-analyze stats -j "@RESULTS@/$wdump" >"$R/wstats.json" 2>"$R/wstats.err"; then
	wnum() { sed -n "s/^{[^{]*\"$1\":\([0-9]*\).*/\1/p" "$R/wstats.json"; }
	srec=$(wnum records); slost=$(wnum lost); sdup=$(wnum duplicates); sign=$(wnum ignored)
	tap_diag "stats $wdump: records $srec lost $slost duplicates $sdup ignored $sign"
	[ -n "$srec" ] && [ "$srec" = "$fwr" ] && [ "$slost" = 0 ] && [ "$sdup" = 0 ] &&
		tap_ok "stats of the -w dump counts what the agent counted: $srec records, 0 lost, 0 duplicates" ||
		tap_fail "stats of the -w dump counts what the agent counted" "stats records '$srec' lost '$slost' duplicates '$sdup'; agent fw_records $fwr"
else
	tap_fail "hmb-trace-analyze stats $wdump on the VM host" "$(cat "$R/wstats.err")"
fi
offline_eq_live "$wdump" "-w" "the agent's own -w dump" ref

echo 0 > "$HMB_CLASS/$ring/bridge"
rmmod nvme_hmb_trace && tap_ok "module unloaded" || tap_fail "rmmod"
# One TCG thread: with Debian's QEMU the guest's barriers were dropped and
# QEMU's NVMe model lost commands (the guest's 30 s timeout, then a reset:
# the run's matches and its step fall apart); vm-run boots the project's
# QEMU, which keeps them (scripts/vm/qemu/patches/0003)
tmo=$(dmesg | grep -E 'nvme[0-9]+: .*(timeout|reset controller)' | head -3)
[ -z "$tmo" ] && tap_ok "no NVMe I/O timeout in the guest (the controller model lost no command)" ||
	tap_fail "no NVMe I/O timeout in the guest" "$tmo"
hmb_dmesg_check
tap_done
