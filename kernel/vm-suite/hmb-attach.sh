#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# hmb-attach: the agent's clock wherever it attaches.  The HMB-capable NVMe
# controller writes the firmware records of every command by DMA on its own
# clock (1 s offset, +200 ppm fast); fio runs randrw at QD32 the whole time
# and the agent is attached ten times, each at a random moment of it (the
# seed is printed: HMB_ATTACH_SEED replays it), for 5 s.  Each attach's last
# estimate is held to the controller's clock truth (vm-nvme-hmb clock reads
# right before and after it, scripts/vm/README.md "The firmware clock and
# the truth"): converged (the agent says "converged": true, and the offset
# is within 20 us of the truth, the drift within 10 %, its own error bound
# reaching the truth) or honestly converging ("consistent": false, or
# consistent with the truth inside its bound but "converged": false, its
# drift bound still wider than 10 %); never an estimate that is wrong.  At
# least one of the ten must have converged, else the check says nothing.
# Each attach enables the nvme tracepoints' static keys in nvme_core while
# fio runs through them on the other vCPU; under TCG with a host thread per
# vCPU that patching is what TCG's cross-modifying-code race needs (an
# int3 Oops in nvme_setup_cmd or nvme_complete_batch_req, both boots of a
# make check on 6.12), so one host thread runs both vCPUs here.
# vm-timeout: 600
# vm-alone: yes
# vm-tcg-thread: single
# vm-nvme: patched hmb_trace_kb=1024
# vm-nvme-hmb: hmpre=2048, hmmin=256, hmmaxd=16, hmb-bg-rate=0, hmb-clock-drift-ppm=200, hmb-clock-offset=1000000000
set -u
. "$HMB_REPO/scripts/vm/lib/tap.sh"
. "$HMB_REPO/kernel/tools/guest-lib.sh"
. "$HMB_REPO/user/agent/vm-suite/lib/agent.sh"
N=${HMB_ATTACH_N:-10}
RUN_S=5			# each attach's life, from its start line
SEED=${HMB_ATTACH_SEED:-$(date +%s)}
R=$HMB_RESULTS
C=$HMB_NVME_CTRL

hmb_need_patched_hmb
hmb_nvme_bridge_on

# clock reads: each the best round trip of 3 (vm-nvme-hmb clock), as JSON lines
clock_reads() {
	for _i in $(seq "$2"); do vm-nvme-hmb clock "$C" 3; done > "$1"
}

clock_reads "$R/clock-start.jsonl" 5
fio --name=qd32 --filename="$HMB_NVME_DEV" --direct=1 --ioengine=libaio \
	--iodepth=32 --rw=randrw --bs=4k --size=64M --time_based --runtime=600 \
	--output-format=terse > "$R/fio.txt" 2> "$R/fio.err" &
fpid=$!
# the moments: a pause of 0.2 to 2.5 s before each attach
awk -v s="$SEED" -v n="$N" 'BEGIN { srand(s); for (i = 0; i < n; i++) printf "%d\n", 200000 + rand() * 2300000 }' \
	> "$R/pauses.txt"
tap_diag "seed $SEED (HMB_ATTACH_SEED): pauses before the attaches $(tr '\n' ' ' < "$R/pauses.txt")us"
usleep 1500000
i=0
while read -r pause; do
	i=$((i + 1))
	usleep "$pause"
	clock_reads "$R/clock-pre$i.jsonl" 3
	"$AGENT" -d "${HMB_NVME_DEV#/dev/}" -j -o "$R/attach$i.jsonl" 1 2> "$R/attach$i.err" &
	apid=$!
	if agent_wait_start "$R/attach$i.jsonl"; then
		sleep $RUN_S
	fi
	kill -INT $apid
	wait $apid
	echo $? > "$R/attach$i.rc"
	clock_reads "$R/clock-post$i.jsonl" 3
done < "$R/pauses.txt"
kill -INT $fpid 2> /dev/null
wait $fpid
clock_reads "$R/clock-end.jsonl" 5

# the true drift: the best reads at the start and at the end (the run's
# length apart: the round trips' error is under a few ppm), as hmb-agent
# takes it; host - fw = m - f, with host = fw + a + b (fw - ref)
cat "$R/clock-start.jsonl" "$R/clock-end.jsonl" | awk '
	function num(k,    r) { if (!match($0, "\"" k "\":[0-9]+")) return ""
		r = substr($0, RSTART, RLENGTH); sub(/.*:/, "", r); return r + 0 }
	/"status":0/ { n++; m = num("mono_ns"); f = num("fw_ns"); t = num("rtt_ns")
		if (n <= 5) { if (!b0 || t < t0) { b0 = 1; t0 = t; m0 = m; f0 = f } }
		else if (!b1 || t < t1) { b1 = 1; t1 = t; m1 = m; f1 = f } }
	END { if (!b0 || !b1) exit 1; printf "%.6f %.0f %.0f\n", ((m1 - m0) / (f1 - f0) - 1) * 1e6, t0, t1 }' \
	> "$R/drift-truth.txt"
read bt rtt0 rtt1 < "$R/drift-truth.txt"
tap_diag "truth: drift $bt ppm (best round trips $rtt0 and $rtt1 ns, at the start and the end)"

converged=0 converging=0 wrong=0 failed=0
i=0
while [ $i -lt "$N" ]; do
	i=$((i + 1))
	summ=$(grep '"type":"summary"' "$R/attach$i.jsonl" 2>/dev/null | tail -1)
	clk=$(printf '%s' "$summ" | sed -n 's/.*"clock":{\([^}]*\)}.*/\1/p')
	if [ "$(cat "$R/attach$i.rc")" != 0 ] || [ -z "$clk" ]; then
		failed=$((failed + 1))
		tap_diag "attach $i: exit $(cat "$R/attach$i.rc"), no summary clock: $(tail -3 "$R/attach$i.err")"
		continue
	fi
	# the truth bracket at the estimate's ref_fw_ns: every read right
	# before and after the attach says host - fw was within half its
	# round trip, carried to ref with the true drift
	v=$(cat "$R/clock-pre$i.jsonl" "$R/clock-post$i.jsonl" |
		awk -v clk="$clk" -v bt="$bt" -f "$HMB_REPO/kernel/vm-suite/attach-verdict.awk")
	tap_diag "attach $i: $v; $(printf '%s' "$clk" | sed -n 's/.*"points":\([0-9]*\).*"shed":\([0-9]*\).*/points \1 shed \2/p')"
	case $v in
	converged*) converged=$((converged + 1)) ;;
	converging*) converging=$((converging + 1)) ;;
	*) wrong=$((wrong + 1)) ;;
	esac
done
[ "$failed" = 0 ] &&
	tap_ok "$N attaches during fio QD32, each exited 0 with its clock in the summary" ||
	tap_fail "$N attaches exited 0 with a clock" "$failed did not"
[ "$wrong" = 0 ] && [ "$converged" -ge 1 ] && [ $((converged + converging)) = "$N" ] &&
	tap_ok "5 s after each attach: $converged converged to the truth, $converging honestly converging, none wrong" ||
	tap_fail "each attach converged or converging, none wrong" "converged $converged converging $converging wrong or without truth $wrong (of $N)"
echo 0 > "$S/bridge"
rmmod nvme_hmb_trace && tap_ok "rmmod nvme_hmb_trace" || tap_fail "rmmod nvme_hmb_trace"
hmb_dmesg_check
tap_done
