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
# matches (issue 6; cmd-matches.awk).  fw.bin and agent.jsonl stay in the
# results directory: HMB_VM_RUN_DIR for tests/formats/test_correlate.py.
# vm-timeout: 700
# vm-qemu-trace: yes
# vm-shm-size: 16M
set -u
. "$HMB_REPO/scripts/vm/lib/tap.sh"
. "$HMB_REPO/kernel/tools/guest-lib.sh"
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
AGENT=$HMB_BIN/hmb-trace-agent

rs=$(hmb_shm_ring_size)
hostcmd start fw --qemu-trace-stdin hmb-fwsim --ring-file @SHM@ --ring-size "$rs" \
	--from-qemu-trace - --clock-offset 1000000000 --clock-drift $DRIFT \
	--clock-step "$STEP_AT:$STEP_NS" --bg-rate 20 \
	--cmd-log @RESULTS@/fw-cmd.log --log @RESULTS@/fw.bin --event-dict @REPO@/share/hmb-events.dict \
	>/dev/null || { tap_fail "start hmb-fwsim --from-qemu-trace on the VM host"; tap_done; }
i=0
while [ $i -lt 100 ] && [ "$(vm-mmap "$HMB_IVSHMEM_RES" read 0 4 2>/dev/null)" != "484d4254" ]; do
	usleep 100000; i=$((i + 1))
done
if ! hmb_load; then
	tap_fail "load nvme-hmb-trace.ko" "$(dmesg | tail -5)"
	tap_done
fi
ring=$(hmb_ring ivshmem) || { tap_fail "ivshmem ring registered" "$(ls $HMB_CLASS)"; tap_done; }
echo 1 > "$HMB_CLASS/$ring/bridge" && tap_ok "module loaded, ring $ring (ivshmem), bridge on" ||
	tap_fail "bridge on for $ring" "$(dmesg | tail -3)"

# 64 MiB of BPF ring buffer: under TCG the agent's thread shares a slow
# vCPU with fio and the bridge, and may fall seconds behind the I/O
"$AGENT" -d "${HMB_NVME_DEV#/dev/}" -j --per-command -N 5 --ringbuf-mb 64 -o "$R/agent.jsonl" 1 \
	2>"$R/agent.err" &
apid=$!
i=0
while [ $i -lt 200 ] && ! grep -q '"type":"start"' "$R/agent.jsonl" 2>/dev/null; do
	usleep 100000; i=$((i + 1))
done
grep -q '"mode":"nvme+firmware"' "$R/agent.jsonl" &&
	tap_ok "agent attached with firmware records: $(head -1 "$R/agent.jsonl" | cut -c1-120)" ||
	{ tap_fail "agent in nvme+firmware mode" "$(cat "$R/agent.err") $(head -1 "$R/agent.jsonl")"; tap_done; }

perf stat -a -e hmb_trace:hmb_trace_record -e nvme:nvme_complete_rq -x, \
	-o "$R/perf.csv" sleep $((SECS + SECS32 + 4)) &
ppid=$!
sleep 1
fio --name=qd1 --filename="$HMB_NVME_DEV" --direct=1 --ioengine=psync \
	--rw=randrw --bs=4k --size=64M --time_based --runtime="$SECS" \
	--output-format=terse >"$R/fio1.txt" 2>"$R/fio1.err" &&
fio --name=qd32 --filename="$HMB_NVME_DEV" --direct=1 --ioengine=libaio \
	--iodepth=32 --rw=randrw --bs=4k --size=64M --time_based \
	--runtime="$SECS32" --output-format=terse >"$R/fio32.txt" 2>"$R/fio32.err" &&
	tap_ok "fio randrw QD1 ${SECS}s, then QD32 ${SECS32}s" ||
	tap_fail "fio ran" "$(cat "$R/fio1.err" "$R/fio32.err")"
wait $ppid
kill -INT $apid
wait $apid
arc=$?
[ $arc = 0 ] && tap_ok "agent exits 0 on SIGINT" || tap_fail "agent exit $arc" "$(tail -5 "$R/agent.err")"
hostcmd stop fw >/dev/null 2>&1
sleep 1
cat "$R/host-fw.stdout" > "$R/fw-report.json" 2>/dev/null
tap_diag "simulator: $(cat "$R/fw-report.json")"
tap_diag "bridge: records $(cat $HMB_CLASS/$ring/bridge_records) lost $(cat $HMB_CLASS/$ring/bridge_lost 2>/dev/null)"

summ=$(grep '"type":"summary"' "$R/agent.jsonl")
# totals and counters only (the top-N objects repeat some names)
tot=$(printf '%s' "$summ" | sed -n 's/.*"totals":{\([^}]*\)}.*"counters":{\([^}]*\)}.*/\1,\2/p')
num() { printf '%s' "$tot" | sed -n "s/.*\"$1\":\([0-9-]*\).*/\1/p" | head -1; }
cmds=$(num commands); matched=$(num matched); partial=$(num partial)
unmatched=$(num unmatched); placed=$(num placed); inw=$(num in_window_err)
tap_diag "agent: commands $cmds matched $matched partial $partial unmatched $unmatched placed $placed in_window_err $inw"
tap_diag "agent counters: $(printf '%s' "$summ" | sed -n 's/.*"counters":{\([^}]*\)}.*/\1/p')"
tap_diag "agent clock: $(printf '%s' "$summ" | sed -n 's/.*"clock":{\([^}]*\)}.*/\1/p')"
[ -n "$cmds" ] && [ "$cmds" -gt 1000 ] && [ $((matched * 1000)) -ge $((cmds * 999)) ] &&
	tap_ok "matched $matched of $cmds completed commands (>= 99.9 %)" ||
	tap_fail "matched >= 99.9 % of completed commands" "$matched of $cmds; partial $partial unmatched $unmatched"
[ -n "$placed" ] && [ "$placed" -gt 0 ] && [ $((inw * 1000)) -ge $((placed * 999)) ] &&
	tap_ok "after clock mapping, $inw of $placed commands have all firmware events inside their host window (>= 99.9 %)" ||
	tap_fail "firmware events inside host windows >= 99.9 %" "$inw of $placed"

# no misattribution: every firmware record the agent gave a command came
# from that very QEMU command, per the simulator's log
awk '/^seq=/ { for (i = 1; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
	print v["seq"], v["sqid"], v["cid"], v["qline"] }' "$R/fw-cmd.log" > "$R/fw-seq.txt"
grep '"type":"cmd"' "$R/agent.jsonl" | sed -n 's/.*"qid":\([0-9]*\),"cid":\([0-9]*\),.*"fw":\[\(.*\)\].*/\1 \2 \3/p' |
	awk '{ q = $1; c = $2; n = split($0, a, "\"seq\":"); s = "";
	       for (i = 2; i <= n; i++) { split(a[i], b, ","); s = s " " b[1] }
	       if (s != "") print q, c, s }' > "$R/agent-fw.txt"
awk 'NR == FNR { sq[$1] = $2; cid[$1] = $3; ql[$1] = $4; next }
	{ q = ""; bad = 0
	  for (i = 3; i <= NF; i++) {
		if (!($i in ql)) { bad = 1; continue }
		if (sq[$i] != $1 || cid[$i] != $2) bad = 1
		if (q == "") q = ql[$i]; else if (ql[$i] != q) bad = 1
	  }
	  if (bad) wrong++; else if (used[q]++) twice++
	  n++ }
	END { printf "%d %d %d\n", n, wrong + 0, twice + 0 }' "$R/fw-seq.txt" "$R/agent-fw.txt" > "$R/attr.txt"
read nfw wrong twice < "$R/attr.txt"
[ "$nfw" -gt 1000 ] && [ "$wrong" = 0 ] && [ "$twice" = 0 ] &&
	tap_ok "no misattribution: all records of each of $nfw commands come from that one QEMU command (simulator's log), no QEMU command given twice" ||
	tap_fail "no misattribution" "$nfw commands with records: $wrong with a record of another command, $twice QEMU commands given twice"

# clock: the simulator's drift, and its +2 ms step at STEP_AT s, recovered
drift=$(printf '%s' "$summ" | sed -n 's/.*"drift_ppm":\([0-9.-]*\).*/\1/p')
steps=$(printf '%s' "$summ" | sed -n 's/.*"steps":\([0-9]*\).*/\1/p')
# the agent reports b in host = fw + a + b (fw - ref): a firmware clock
# running DRIFT ppm fast gives b = 1 / (1 + DRIFT) - 1, about -DRIFT ppm
want=$(awk -v w=$DRIFT 'BEGIN { printf "%.3f", (1 / (1 + w * 1e-6) - 1) * 1e6 }')
tap_diag "estimated drift $drift ppm (simulator's clock +$DRIFT ppm fast: expect $want), steps $steps"
awk -v d="$drift" -v w="$want" 'BEGIN { e = d - w; if (e < 0) e = -e; exit !(d != "" && e <= 0.1 * (w < 0 ? -w : w)) }' &&
	tap_ok "drift recovered within 10 % ($drift ppm vs $want ppm)" ||
	tap_fail "drift recovered within 10 %" "$drift ppm vs $want ppm"
# the step's size: the agent measures it between the commands just before
# and just after it (same load on both sides, so the latency biases of the
# two offsets cancel); a +STEP_NS firmware clock lowers host - fw by STEP_NS
sstep=$(printf '%s' "$summ" | sed -n 's/.*"step_ns":\([0-9.-]*\).*/\1/p')
sserr=$(printf '%s' "$summ" | sed -n 's/.*"step_err_ns":\([0-9.-]*\).*/\1/p')
awk -v s="$sstep" -v w="$STEP_NS" 'BEGIN { e = s + w; if (e < 0) e = -e; printf "%.0f\n", e; exit !(s != "" && e <= 20000) }' \
	> "$R/step-err.txt" &&
	tap_ok "offset step of $STEP_NS ns recovered within 20 us (agent: $sstep ns, bound $sserr ns; error $(cat "$R/step-err.txt") ns)" ||
	tap_fail "offset step recovered within 20 us" "agent step_ns '$sstep' (bound '$sserr'), want -$STEP_NS"
# for comparison: the interval reports' offsets before and after the step
# (whole windows, so QD1 before and QD32 after), extrapolated to the step
grep '"type":"interval"' "$R/agent.jsonl" | sed -n 's/.*"offset_ns":\([0-9.-]*\),"offset_err_ns":\([0-9.-]*\),"ref_fw_ns":\([0-9.-]*\),"drift_ppm":\([0-9.-]*\).*"steps":\([0-9]*\).*/\1 \2 \3 \4 \5/p' > "$R/clock-intervals.txt"
tap_diag "interval clock estimates (offset err ref drift steps): $(tr '\n' ';' < "$R/clock-intervals.txt")"
awk -v step=$STEP_NS -v at=$STEP_AT -v dr=$DRIFT '
	{ o[NR] = $1; r[NR] = $3; d[NR] = $4; s[NR] = $5 }
	END {
		tf = 1e9 + at * 1e9 * (1 + dr * 1e-6)	# fw time of the step
		for (i = 1; i <= NR; i++) { if (s[i] == 0) b = i; if (s[i] >= 1 && !a) a = i }
		if (!a || !b) { print "n/a"; exit }
		a = NR	# the last estimate after the step
		ob = o[b] + d[b] * 1e-6 * (tf - r[b])
		oa = o[a] + d[a] * 1e-6 * (tf + step - r[a])
		diff = (ob - oa) - step	# host = fw + off: a +step fw clock lowers off
		if (diff < 0) diff = -diff
		printf "%.0f\n", diff
	}' "$R/clock-intervals.txt" > "$R/step-err-intervals.txt"
tap_diag "step from the whole-window interval estimates: error $(cat "$R/step-err-intervals.txt") ns"
# the step's record: the simulator knows the first record it wrote on the
# stepped clock; the first command record from there on is where the agent
# must have placed the step (it sees command records only)
sim_step=$(sed -n 's/.*"step_first_seq":\([0-9-]*\).*/\1/p' "$R/fw-report.json")
want_seq=$(awk -v s="$sim_step" '/^seq=/ && !/ qline=0/ {
	split($1, kv, "="); if (kv[2] + 0 >= s + 0) { print kv[2]; exit } }' "$R/fw-cmd.log")
got_seq=$(printf '%s' "$summ" | sed -n 's/.*"step_seq":\([0-9]*\).*/\1/p')
across=$(grep '"type":"cmd"' "$R/agent.jsonl" | awk -v s="$want_seq" '{
	f = c = ""
	if (match($0, /"phase":"fetch","seq":[0-9]+/)) f = substr($0, RSTART + 22, RLENGTH - 22)
	if (match($0, /"phase":"cqe_posted","seq":[0-9]+/)) c = substr($0, RSTART + 27, RLENGTH - 27)
	if (f != "" && c != "" && f + 0 < s + 0 && c + 0 >= s + 0) n++ }
	END { print n + 0 }')
tap_diag "step: simulator's first record on the new clock $sim_step, first command record from it $want_seq; agent placed the step at $got_seq; $across commands in flight across it"
[ -n "$want_seq" ] && [ "$got_seq" = "$want_seq" ] &&
	tap_ok "the agent placed the step at the very record the simulator stepped at (seq $got_seq, $across commands across it)" ||
	tap_fail "step placed at the simulator's record" "agent '$got_seq', simulator '$want_seq'"

# losses: all counted; none in the ring buffer
rbf=$(num ringbuf_reserve_failed)
[ "$rbf" = 0 ] && tap_ok "zero ring buffer reservation failures" || tap_fail "ring buffer reservations failed" "$rbf"
fwr=$(num fw_records); brec=$(cat "$HMB_CLASS/$ring/bridge_records")
tap_diag "agent saw $fwr hmb_trace_record events, bridge emitted $brec"
[ -n "$fwr" ] && [ "$fwr" -gt 0 ] && [ "$fwr" -le "$brec" ] &&
	tap_ok "agent's firmware record count ($fwr) within the bridge's ($brec)" ||
	tap_fail "agent's firmware record count" "agent $fwr bridge $brec"
ptr=$(awk -F, '/hmb_trace_record/ { print $1 }' "$R/perf.csv")
[ -n "$ptr" ] && [ "$ptr" -gt 0 ] &&
	tap_ok "perf stat alongside counted $ptr hmb_trace:hmb_trace_record" ||
	tap_fail "perf alongside" "$(cat "$R/perf.csv")"

# offline = live: hmb-trace-analyze correlate (on the VM host) of the
# simulator's dump against the agent's own JSON lines gives every command
# the live agent gave firmware records exactly the same records (phase ->
# seq), keyed by (qid, cid, host submit_ns), and gives records to no other
# command.
if hostcmd run hmb-trace-analyze correlate @RESULTS@/fw.bin @RESULTS@/agent.jsonl \
	-j -o @RESULTS@/correlate.jsonl >"$R/correlate.out" 2>"$R/correlate.err"; then
	M=$HMB_REPO/user/agent/vm-suite/cmd-matches.awk
	awk -f "$M" "$R/agent.jsonl" > "$R/matches-live.txt"
	awk -f "$M" "$R/correlate.jsonl" > "$R/matches-offline.txt"
	awk 'NR == FNR { live[$1 " " $2 " " $3] = $0; n++; next }
		{ k = $1 " " $2 " " $3; off[k] = $0; m++
		  if (!(k in live)) extra++; else if (live[k] != $0) differ++; else same++ }
		END { for (k in live) if (!(k in off)) missing++
		      printf "%d %d %d %d %d %d\n", n, m, same, differ + 0, missing + 0, extra + 0 }' \
		"$R/matches-live.txt" "$R/matches-offline.txt" > "$R/matches-cmp.txt"
	read nl no same differ missing extra < "$R/matches-cmp.txt"
	tap_diag "correlate: $(grep '"type":"final"' "$R/correlate.jsonl" | sed -n 's/.*"totals":{\([^}]*\)}.*/\1/p')"
	tap_diag "matches: live $nl commands with firmware records, offline $no; same $same, different $differ, live only $missing, offline only $extra"
	[ "$nl" -gt 1000 ] && [ "$same" = "$nl" ] && [ "$no" = "$nl" ] &&
		tap_ok "hmb-trace-analyze correlate of the dump gives the live agent's matches: $same of $nl commands, same (qid, cid, submit) -> firmware seqs, none more" ||
		tap_fail "correlate of the dump gives the live agent's matches" "live $nl offline $no same $same different $differ live-only $missing offline-only $extra"
else
	tap_fail "hmb-trace-analyze correlate fw.bin agent.jsonl on the VM host" "$(cat "$R/correlate.err")"
fi

echo 0 > "$HMB_CLASS/$ring/bridge"
rmmod nvme_hmb_trace && tap_ok "module unloaded" || tap_fail "rmmod"
hmb_dmesg_check
tap_done
