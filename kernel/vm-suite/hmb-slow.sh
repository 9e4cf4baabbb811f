#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# hmb-slow: the flight recorder on the real HMB path, against commands the
# controller itself made slow.  The VM bench's HMB-capable NVMe controller
# holds every 100th I/O command it traces 1 s before completing it
# (hmb-slow-every, hmb-slow-ns: a QEMU timer, the command outstanding
# meanwhile, its cmd_cqe_posted written after the delay) and says in its
# account which ones ("slow" lines: sqid, cid, slba, the seq of its
# cmd_fetch, the delay).  hmb-trace-agent runs armed with
# --trigger 'host_total>250ms' --snapshot-dir (--holdoff 0
# --max-snapshots 2: each firing is a bundle or counted suppressed) while
# fio reads at QD1.  Held to the controller's account (scripts/vm/host/
# slow-check, on the VM host), over the commands fetched between the
# controller's seq just after the agent was armed and once the I/O was
# done:
#   - fired set == slowed set: a firing for each slowed command (qid, cid,
#     slba), once, and for no other command but one whose own line in
#     the agent's output has a host_total over the threshold (the guest
#     was slow, not the controller: the firing is right); its host_total
#     at least the delay; the summary's fired and reported counts the same;
#   - every firing a bundle or counted suppressed, none failed;
#   - each bundle: trigger.json names a slowed command, host.jsonl holds
#     it, and hmb-trace-analyze correlate on the bundle matches it with
#     exactly the records the controller wrote for it (cmd_cqe_posted last,
#     >= 1 s after its media records);
#   - no WARNING, BUG or Oops.
# The delay is 4x the threshold: an unslowed command of a TCG guest on a
# busy host stays below 250 ms as a rule, a slowed one cannot complete in
# less than 1 s.
# vm-timeout: 400
# vm-alone: yes
# vm-nvme: patched hmb_trace_kb=1024
# vm-nvme-hmb: hmpre=2048, hmmin=256, hmmaxd=16, hmb-bg-rate=0, hmb-slow-every=100, hmb-slow-ns=1000000000
set -u
. "$HMB_REPO/scripts/vm/lib/tap.sh"
. "$HMB_REPO/kernel/tools/guest-lib.sh"
. "$HMB_REPO/user/agent/vm-suite/lib/agent.sh"
IOS=${HMB_SLOW_IOS:-600}	# reads at QD1: IOS / 100 slowed
R=$HMB_RESULTS
snap=/tmp/slow-snap

hmb_need_patched_hmb
hmb_nvme_bridge_on

rm -rf "$snap" && mkdir -p "$snap"
agent_start "$R/agent.jsonl" --trigger 'host_total>250ms' --snapshot-dir "$snap" \
	--pre 3 --post 0.5 --holdoff 0 --max-snapshots 2 || tap_done
# the commands asked of the agent: fetched from here on ...
s0=$(hmb_next_seq)
fio --name=slow --filename="$HMB_NVME_DEV" --direct=1 --ioengine=psync \
	--rw=randread --bs=4k --size=64M --number_ios="$IOS" \
	--output-format=terse > "$R/fio.txt" 2> "$R/fio.err" &&
	tap_ok "fio randread QD1, $IOS reads" ||
	tap_fail "fio ran" "$(cat "$R/fio.err")"
# ... to here (every one of them completed: fio has returned)
s1=$(hmb_next_seq)
# the agent reports a command once both sides have it; the last bundle
# waits for its --post and for both sides to pass its window's end
sleep 3
agent_stop "$R/agent.jsonl"
hmb_acct_flush
tap_diag "controller seqs [$s0, $s1); $(grep -c '"ev":"slow"' "$HMB_NVME_ACCOUNT") slow lines in the account"
tap_diag "agent stderr: $(grep -c 'snapshot suppressed' "$R/agent.err") suppressed, $(grep -c 'snapshot /' "$R/agent.err") written"

if cp -r "$snap" "$R/snap"; then
	rm -rf "$snap"
else
	tap_fail "the bundles copied to the results" "$(ls -la "$snap")"
fi
n=0
for b in "$R"/snap/SNAP-*; do
	[ -d "$b" ] || continue
	n=$((n + 1))
	"$HMB_BIN/hmb-trace-analyze" correlate "$b/trace.bin" "$b/host.jsonl" -j \
		> "$b/corr.jsonl" 2> "$b/corr.err" ||
		tap_fail "correlate on $(basename "$b")" "$(cat "$b/corr.err")"
done
tap_diag "$n bundle(s) in $R/snap"

hostcmd run slow-check --account @NVME_ACCOUNT@ --from-seq "$s0" --to-seq "$s1" \
	--agent @RESULTS@/agent.jsonl --snap @RESULTS@/snap \
	> "$R/slow-check.txt" 2> "$R/slow-check.err"
tab=$(printf '\t')
while IFS=$tab read -r kind desc diag; do
	case $kind in
	ok) tap_ok "$desc" ;;
	*) tap_fail "$desc" "$diag" ;;
	esac
done < "$R/slow-check.txt"
grep -q . "$R/slow-check.txt" ||
	tap_fail "slow-check on the VM host" "$(cat "$R/slow-check.err")"

echo 0 > "$S/bridge"
rmmod nvme_hmb_trace && tap_ok "rmmod nvme_hmb_trace" || tap_fail "rmmod nvme_hmb_trace"
hmb_dmesg_check
tap_done
