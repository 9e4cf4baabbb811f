#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# hmb-agent: the real HMB path live.  The VM bench's HMB-capable NVMe
# controller writes the firmware records of every command it serves into
# the trace slice of the patched nvme.ko (hmb_trace_kb=1024) by DMA, on its
# own clock (1 s offset, +200 ppm, a +2 ms step armed for the middle of the
# QD32 run); nvme-hmb-trace.ko's bridge emits them as hmb_trace_record;
# hmb-trace-agent joins them with nvme:nvme_setup_cmd/nvme_complete_rq
# while fio runs at QD1 and QD32.  Held to the controller's own account:
#   - no record given to a command other than the one the controller wrote
#     it for (per-command account), every command matched or not matched
#     for the reason the agent gives (lib/agent.sh), >= 99.9 % of the
#     commands with every firmware event inside their host window (their
#     own records taken off outside it count against that, by the
#     account; another use's, refused by causality, do not);
#   - the clock: drift within 10 % and the offset within 20 us of the truth
#     (the controller's clocks read against CLOCK_MONOTONIC before and
#     after, vm-nvme-hmb clock), the step's size within the agent's bound
#     and 50 us, the controller's first record on the new clock inside the
#     bracket the agent's evidence gives for it (agent_check_step_seq);
#   - three controller resets during I/O with the bridge and the agent on:
#     the bridge carries on across every re-initialisation the controller
#     made (bridge_epochs against its adoptions),
#     every record the controller made is emitted or counted lost, the
#     agent carries on and exits 0; no WARNING, BUG or Oops;
#   - the live export (--export, with -w): every firmware record the agent
#     received a fw_records row equal to its -w dump's, its clock estimates
#     and loss counters as clock and losses rows, in a real clickhouse-server
#     on the VM host that the guest reaches through a relay (hostcmd), held
#     to the agent's summary (scripts/vm/host/fleet-live).
# vm-timeout: 700
# vm-alone: yes
# vm-nvme: patched hmb_trace_kb=1024
# vm-nvme-hmb: hmpre=2048, hmmin=256, hmmaxd=16, hmb-bg-rate=0, hmb-clock-drift-ppm=200, hmb-clock-offset=1000000000
set -u
. "$HMB_REPO/scripts/vm/lib/tap.sh"
. "$HMB_REPO/kernel/tools/guest-lib.sh"
. "$HMB_REPO/user/agent/vm-suite/lib/agent.sh"
SECS=${HMB_AGENT_FIO_SECS:-3}		# fio QD1
SECS32=${HMB_AGENT_FIO32_SECS:-6}	# fio QD32
DRIFT=200		# ppm, the controller's clock against QEMU's virtual clock
STEP_NS=2000000		# +2 ms, armed for the middle of the QD32 run
R=$HMB_RESULTS
C=$HMB_NVME_CTRL

hmb_need_patched_hmb
hmb_nvme_bridge_on

vm-nvme-hmb clock "$C" 50 > "$R/clock0.json"
# every command as a JSON line into the results share: in a guest starved
# of CPU the agent may take the QD32 run's events seconds late, so its ring
# buffer holds the whole run (as agent-e2e's), and any reservation that
# still fails is a failure below
agent_start "$R/agent.jsonl" -N 5 --ringbuf-mb 64 1 || tap_done
perf stat -a -e hmb_trace:hmb_trace_record -e nvme:nvme_complete_rq -x, \
	-o "$R/perf.csv" sleep $((SECS + SECS32 + 4)) &
ppid=$!
sleep 1
fio --name=qd1 --filename="$HMB_NVME_DEV" --direct=1 --ioengine=psync \
	--rw=randrw --bs=4k --size=64M --time_based --runtime="$SECS" \
	--output-format=terse >"$R/fio1.txt" 2>"$R/fio1.err"
frc=$?
# the step, for the middle of the QD32 run (fio takes about a second to
# start under TCG): armed now, so that arming it (an admin command, a
# process) does not widen the host windows of the commands around it
vm-nvme-hmb step "$C" $((SECS32 * 500000 + 1000000)) $STEP_NS > "$R/step.json"
[ "$(hmb_jget status "$R/step.json")" = 0 ] || tap_fail "arm the clock step" "$(cat "$R/step.json")"
fio --name=qd32 --filename="$HMB_NVME_DEV" --direct=1 --ioengine=libaio \
	--iodepth=32 --rw=randrw --bs=4k --size=64M --time_based \
	--runtime="$SECS32" --output-format=terse >"$R/fio32.txt" 2>"$R/fio32.err"
[ $? = 0 ] && [ $frc = 0 ] &&
	tap_ok "fio randrw QD1 ${SECS}s, then QD32 ${SECS32}s (clock step armed in its middle)" ||
	tap_fail "fio ran" "$(cat "$R/fio1.err" "$R/fio32.err")"
wait $ppid
agent_stop "$R/agent.jsonl"
hmb_wait_drained "$dev" 30
# 20 reads of the clocks (each the best of 3) bracket the truth
for i in $(seq 20); do vm-nvme-hmb clock "$C" 3; done > "$R/clock1.jsonl"
tap_diag "bridge: records $(cat "$S/bridge_records") lost $(cat "$S/bridge_lost")"

agent_summary "$R/agent.jsonl"
agent_check_reports "$R/agent.jsonl" 1

# no misattribution, against the controller's own per-command account;
# and the record the step must be placed at: the controller says which
# record was the first on the stepped clock, the agent (which sees command
# records only) must place it at the first command record from there on
hmb_acct_flush
first=$(grep -m 1 '"ev":"clock_step"' "$HMB_NVME_ACCOUNT" | sed -n 's/.*"first_seq":\([0-9]*\).*/\1/p')
agent_check_attribution agent.jsonl 1000 "the controller's account" \
	--account @NVME_ACCOUNT@ --step-first-seq "${first:-0}"
agent_check_window
# every command matched or not for the reason the agent gives; a record
# the bridge lost (a seq gap in the ring) may cost one its match
agent_check_accounted 1000 "$A_bridge_lost"

# the clock against the truth: the controller's clocks read against this
# guest's CLOCK_MONOTONIC (the agent's host clock, scripts/vm/README.md "The
# firmware clock and the truth").  The drift from the best read before and
# the best after (the step taken out); the offset at the agent's ref_fw_ns
# bracketed by every read after the step: each says host - fw lay within
# its round trip, the truth lies in all of them.  The agent's estimate
# host = fw + a + b (fw - ref) is on the stepped clock.
awk -v step=$STEP_NS -v ref="$A_ref_fw_ns" \
	-v m0="$(hmb_jget mono_ns "$R/clock0.json")" -v f0="$(hmb_jget fw_ns "$R/clock0.json")" \
	-v v0="$(hmb_jget virt_ns "$R/clock0.json")" \
	-f "$HMB_REPO/kernel/vm-suite/clock-truth.awk" "$R/clock1.jsonl" > "$R/clock-truth.txt"
read bt tlo thi gppm nreads rtt < "$R/clock-truth.txt"
tap_diag "truth: drift $bt ppm (configured +$DRIFT ppm fast of QEMU's virtual clock, guest CLOCK_MONOTONIC $gppm ppm against it); offset at ref_fw_ns $A_ref_fw_ns in [$tlo, $thi] ns ($nreads clock reads, best round trip $rtt ns)"
agent_check_drift "$bt"
# the distance from the agent's offset to the bracket (0 inside it)
oerr=$(awk -v a="$A_offset_ns" -v lo="$tlo" -v hi="$thi" 'BEGIN {
	if (lo > hi) { print "inconsistent"; exit }
	d = a < lo ? lo - a : (a > hi ? a - hi : 0)
	printf "%.0f\n", d }')
[ "$oerr" != inconsistent ] && [ "$oerr" -le 20000 ] &&
	tap_ok "offset within 20 us of the truth (agent $A_offset_ns ns +- $A_offset_err_ns, truth in [$tlo, $thi]: $oerr ns outside it)" ||
	tap_fail "offset within 20 us of the truth" "agent $A_offset_ns ns, truth in [$tlo, $thi] ($oerr)"
agent_check_step_size $STEP_NS "$bt"
tap_diag "step: the controller's first record on the new clock $first, first command record from it $A_step_want, $(sed -n 's/.*"across_step": \([0-9]*\).*/\1/p' "$R/attr.json") commands in flight across it"
agent_check_step_seq "$A_step_want"
agent_check_losses "$(cat "$S/bridge_records")"
grep -q '"fw_event":"hmb_trace_records"' "$R/agent.jsonl" &&
	tap_ok "the agent took the bridge's batches (hmb_trace_records, one program run per up to 64 records)" ||
	tap_fail "the agent took hmb_trace_records" "$(head -1 "$R/agent.jsonl" | cut -c1-300)"
ptr=$(awk -F, '/hmb_trace_record/ { print $1 }' "$R/perf.csv")
[ -n "$ptr" ] && [ "$ptr" -gt 0 ] &&
	tap_ok "perf stat alongside counted $ptr hmb_trace:hmb_trace_record" ||
	tap_fail "perf alongside" "$(cat "$R/perf.csv")"

# --- three controller resets with the bridge and the agent on ------------------------
n0=$(vm-nvme-hmb clock "$C" 1 | sed -n 's/.*"next_seq":\([0-9]*\).*/\1/p')
echo 0 > "$S/bridge"
echo 1 > "$S/bridge"
f0=$(hmb_acct_count freeze)
a0=$(hmb_acct_count adopt)
# this one a record per program run (hmb_trace_record), as with an older module
agent_start "$R/agent2.jsonl" -N 5 --fw-event record 1 || tap_done
# each reset takes a second or two under TCG: 14 s of I/O leave some after
# the last, so that every re-initialisation is followed by records
fio --name=resets --filename="$HMB_NVME_DEV" --direct=1 --ioengine=libaio --iodepth=8 \
	--rw=randrw --bs=4k --size=64M --time_based --runtime=14 --rate_iops=1000 \
	--output-format=terse > "$R/fio-resets.txt" 2> "$R/fio-resets.err" &
fpid=$!
sleep 2
nvme reset "$C" > "$R/reset.out" 2>&1
sleep 2.5
echo 1 > "/sys/class/nvme/${C#/dev/}/reset_controller"
sleep 2.5
nvme reset "$C" >> "$R/reset.out" 2>&1
# CLOCK_MONOTONIC (the agent's clock) once the last reset is done
after=$(vm-nvme-hmb clock "$C" 1 | sed -n 's/.*"mono_ns":\([0-9]*\).*/\1/p')
wait $fpid && tap_ok "fio randrw QD8 (1000 IOPS each way) 14 s across 3 controller resets (nvme reset, sysfs, nvme reset)" ||
	tap_fail "fio across the resets" "$(cat "$R/fio-resets.err" "$R/reset.out")"
# commands that surely complete more than 1 s after the last reset, by
# count rather than by time: a starved guest may have let the timed run
# above end right at the last reset
sleep 1.2
fio --name=after-resets --filename="$HMB_NVME_DEV" --direct=1 --ioengine=libaio --iodepth=8 \
	--rw=randread --bs=4k --size=64M --number_ios=1500 \
	--output-format=terse > /dev/null 2>> "$R/fio-resets.err" ||
	tap_diag "fio after the resets: $(cat "$R/fio-resets.err")"
# then records lost for real: the bridge's sampler looks once a second
# while fio at QD32 fills the 1 MiB ring several times over, so the
# controller drops records (seq used) and the bridge counts the gaps
# (a guest starved of CPU may not outrun a look a second: the burst is
# repeated until the bridge has counted a loss, at most 4 times, and the
# checks below hold the agent to the bridge's count whatever it is)
echo 1000000 > "$S/poll_interval_us"
for try in 1 2 3 4; do
	fio --name=overflow --filename="$HMB_NVME_DEV" --direct=1 --ioengine=libaio --iodepth=32 \
		--rw=randread --bs=4k --size=64M --time_based --runtime=3 \
		--output-format=terse > "$R/fio-overflow.txt" 2> "$R/fio-overflow.err" ||
		tap_diag "fio overflow burst: $(cat "$R/fio-overflow.err")"
	[ "$(cat "$S/bridge_lost")" -gt 0 ] && break
done
tap_diag "overflow bursts: $try"
echo 1000 > "$S/poll_interval_us"
# records after the burst: a drop at its very end is a gap the bridge only
# sees when a later record comes
fio --name=after --filename="$HMB_NVME_DEV" --direct=1 --ioengine=psync \
	--rw=randread --bs=4k --size=64M --time_based --runtime=1 --rate_iops=200 \
	--output-format=terse > /dev/null 2>> "$R/fio-overflow.err"
hmb_wait_drained "$dev" 30
n1=$(vm-nvme-hmb clock "$C" 1 | sed -n 's/.*"next_seq":\([0-9]*\).*/\1/p')
agent_stop "$R/agent2.jsonl"
ep=$(cat "$S/bridge_epochs"); brec=$(cat "$S/bridge_records"); blost=$(cat "$S/bridge_lost")
tap_diag "bridge: records $brec lost $blost epochs $ep duplicates $(cat "$S/bridge_duplicates") corrupt $(cat "$S/bridge_corrupt"); controller seqs $n0 -> $n1, freezes $((($(hmb_acct_count freeze)) - f0))"
# the controller's account says how many times it adopted a ring: the 3
# resets, and any reset the driver makes itself (an I/O timeout in a
# starved guest); the bridge sees each re-initialisation once, or two as
# one when they come between two of its looks, never one twice
ad=$(($(hmb_acct_count adopt) - a0))
[ "$ep" -ge 3 ] && [ "$ep" -le "$ad" ] && [ "$(cat "$S/bridge_corrupt")" = 0 ] && [ "$(cat "$S/corrupt")" = none ] &&
	tap_ok "the bridge carried on across the re-initialisations (bridge_epochs $ep, the controller adopted $ad rings, not corrupt)" ||
	tap_fail "the bridge carried on across the re-initialisations" "epochs $ep (controller adoptions $ad) corrupt $(cat "$S/bridge_corrupt") '$(cat "$S/corrupt")'"
[ -n "$n0" ] && [ -n "$n1" ] && [ $((brec + blost)) = $((n1 - n0)) ] &&
	tap_ok "every record the controller made is emitted or counted lost: $brec emitted + $blost lost = $((n1 - n0)) seqs" ||
	tap_fail "every record emitted or counted lost" "emitted $brec + lost $blost != seqs $n0 -> $n1"
agent_summary "$R/agent2.jsonl"
# the agent reports what the bridge lost of its ring while it ran
[ "$blost" -gt 0 ] && why="> 0, the overflow burst" || why="the bursts overflowed nothing: a starved guest"
[ -n "$A_bridge_lost" ] && [ "$A_bridge_lost" = "$blost" ] &&
	[ "$A_bridge_corrupt" = 0 ] &&
	tap_ok "the agent's summary has the bridge's losses while it ran: bridge_lost $A_bridge_lost = sysfs $blost ($why)" ||
	tap_fail "the agent's bridge_lost is the bridge's" "agent '$A_bridge_lost' sysfs '$blost' (corrupt '$A_bridge_corrupt')"
# the agent went on matching commands after the last reset (lines come
# in the order commands finish both sides, not of completion): matched
# lines whose complete_ns is more than 1 s after it, counted on the VM host
# (agent-facts: awk over these tens of MB is slow under TCG)
late=$(hostcmd run agent-facts late-matched @RESULTS@/agent2.jsonl "${after:-0}" 2> "$R/late.err")
[ -n "$A_matched" ] && [ "$A_matched" -gt 1000 ] && [ -n "$after" ] && [ "$late" -gt 100 ] &&
	tap_ok "the agent carried on across the resets: $A_matched of $A_commands commands matched, $late of them completed more than 1 s after the last reset" ||
	tap_fail "the agent carried on across the resets" "matched '$A_matched' of '$A_commands'; $late completed more than 1 s after the last reset (done at '$after')"
grep -q '"fw_event":"hmb_trace_record"' "$R/agent2.jsonl" &&
	tap_ok "--fw-event record: that run took one program run per record (hmb_trace_record)" ||
	tap_fail "--fw-event record took hmb_trace_record" "$(head -1 "$R/agent2.jsonl" | cut -c1-300)"
# --- the live export to the fleet store ---------------------------------------
# hmb-trace-agent -w --export: its fw_records rows (the records -w gets),
# clock estimate rows and losses rows go to a real clickhouse-server on the
# VM host (ch_relay_start); fleet-live check holds the store to the agent's
# summary and to its own -w dump
rid=${dev##*[!0-9]}
wdump=agent3-fw.bin
[ "$rid" = 0 ] || wdump=agent3-fw.bin.ring$rid
# the VM host's ClickHouse, started only now: its start takes the host's
# CPU for seconds, which under TCG widens the host windows of the commands
# around the clock step checked above
ch_relay_prepare "$R/fleet"
if ch_relay_start "$R/fleet" 8123; then
	# fio already running when the agent attaches: the command in flight
	# then is a loss the agent counts (its records without a command, its
	# completion without a submission), so that the losses rows have
	# something to hold to the summary; at most 300 IOPS each way, so that
	# the agent's start under TCG is not held up by the I/O
	fio --name=export --filename="$HMB_NVME_DEV" --direct=1 --ioengine=psync \
		--rw=randrw --bs=4k --size=64M --time_based --runtime=120 --rate_iops=300 \
		--output-format=terse > "$R/fio-export.txt" 2> "$R/fio-export.err" &
	fpid=$!
	agent_start "$R/agent3.jsonl" -N 5 -w "$R/agent3-fw.bin" \
		--export http://127.0.0.1:8123/cgi-bin/ch --export-hostname vm 1 || tap_done
	sleep 3
	kill -INT $fpid
	wait $fpid
	agent_stop "$R/agent3.jsonl"
	kill "$CH_RELAY_PID"
	CH_RELAY_PID=
	hostcmd run fleet-live check "$CH_RELAY_CH" @REPO@ @RESULTS@/agent3.jsonl \
		"@RESULTS@/$wdump" > "$R/fleet-check.txt" 2> "$R/fleet-check.err"
	tab=$(printf '\t')
	while IFS=$tab read -r kind desc diag; do
		case $kind in
		ok) tap_ok "live export: $desc" ;;
		*) tap_fail "live export: $desc" "$diag" ;;
		esac
	done < "$R/fleet-check.txt"
	grep -q . "$R/fleet-check.txt" ||
		tap_fail "fleet-live check on the VM host" "$(cat "$R/fleet-check.err")"
	tap_diag "relayed $(ls "$R/fleet" | grep -c '[.]q$') requests; $(sed -n 's/.*"export":{\([^{]*\).*/\1/p' "$R/agent3.jsonl" | tail -1)"
else
	tap_fail "a clickhouse-server on the VM host (fleet-live serve)" "$(cat "$R/fleet/start.out")"
fi
ch_relay_stop

echo 0 > "$S/bridge"
rmmod nvme_hmb_trace && tap_ok "rmmod nvme_hmb_trace" || tap_fail "rmmod nvme_hmb_trace"
hmb_dmesg_check
tap_done
