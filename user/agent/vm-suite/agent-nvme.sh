#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# agent-nvme: hmb-trace-agent on a real NVMe controller (QEMU's model, driven
# by Debian 6.1's nvme driver), without the module: tp_btf attach and CO-RE
# reads against nvme_core's BTF, host-only mode, and the command keys the
# agent joins on (queue id, full 16-bit command id with its generation)
# checked one by one against what QEMU's NVMe model says it received.
# perf stat (armed before fio, scripts/vm/lib/perf.sh) counts the same
# tracepoint alongside.  Then the block-layer fallback on the same disk:
# the issue stamp its auto mode takes on this kernel (6.1: the request's
# own; 6.12: a program at block_rq_issue), and every read measured.
# vm-timeout: 400
# vm-qemu-trace: yes
set -u
. "$HMB_REPO/scripts/vm/lib/tap.sh"
. "$HMB_REPO/scripts/vm/lib/perf.sh"
. "$HMB_REPO/user/agent/vm-suite/lib/agent.sh"
SECS=${HMB_AGENT_FIO_SECS:-3}
R=$HMB_RESULTS

[ -x "$AGENT" ] || { tap_fail "hmb-trace-agent built" "$AGENT missing"; tap_done; }

"$AGENT" -d "${HMB_NVME_DEV#/dev/}" -j --per-command -N 3 -o "$R/agent.jsonl" \
	2>"$R/agent.err" &
apid=$!
if agent_wait_start "$R/agent.jsonl"; then
	tap_ok "agent attached: $(head -1 "$R/agent.jsonl" | cut -c1-160)"
else
	tap_fail "agent attached" "$(cat "$R/agent.err")"
	tap_done
fi
grep -q '"attach":"tp_btf"' "$R/agent.jsonl" &&
	tap_ok "NVMe tracepoints attached as tp_btf (module BTF of nvme_core)" ||
	tap_fail "NVMe tracepoints attached as tp_btf" "$(head -1 "$R/agent.jsonl")"
grep -q '"mode":"nvme host-only"' "$R/agent.jsonl" &&
	grep -q "hmb_trace_record not found" "$R/agent.err" &&
	tap_ok "without the module: host-only NVMe mode, and says what is missing" ||
	tap_fail "host-only NVMe mode message" "$(cat "$R/agent.err")"

# mark where this run starts in QEMU's trace log
qstart=$(wc -l < "$HMB_QEMU_TRACE_LOG")
# armed before fio starts (perf needs many seconds to open its events under TCG)
perf_start "$R/perf.out" "$R/perf.err" stat -a -e nvme:nvme_setup_cmd \
	-e nvme:nvme_complete_rq -x, -o "$R/perf.csv" ||
	tap_fail "perf stat starts (control fifo ack)" "$(tail -3 "$R/perf.err")"
fio --name=qd1 --filename="$HMB_NVME_DEV" --direct=1 --ioengine=psync \
	--rw=randrw --bs=4k --size=64M --time_based --runtime="$SECS" \
	--output-format=terse >"$R/fio1.txt" 2>"$R/fio1.err" &&
fio --name=qd32 --filename="$HMB_NVME_DEV" --direct=1 --ioengine=libaio \
	--iodepth=32 --rw=randrw --bs=4k --size=64M --time_based \
	--runtime="$SECS" --output-format=terse >"$R/fio32.txt" 2>"$R/fio32.err"
frc=$?
[ $frc = 0 ] && tap_ok "fio QD1 and QD32 randrw ran" ||
	tap_fail "fio ran" "$(cat "$R/fio1.err" "$R/fio32.err")"
sleep 0.5
perf_stop || tap_diag "perf stat: $(tail -3 "$R/perf.err")"
kill -INT $apid
wait $apid
arc=$?
[ $arc = 0 ] && tap_ok "agent exits 0 on SIGINT" ||
	tap_fail "agent exit status $arc" "$(cat "$R/agent.err")"
sync
qend=$(wc -l < "$HMB_QEMU_TRACE_LOG")

# the agent's commands ("ctrl qid cid opc" per line, agent-cmds.txt) and
# QEMU's (pci_nvme_io_cmd cid N nsid 0x1 sqid S opc 0xO in this window,
# qemu-cmds.txt), keyed and counted on the VM host by agent-facts: sed
# and awk over these MB of lines are slow under TCG
hostcmd run agent-facts nvme-keys @RESULTS@/agent.jsonl @QEMU_TRACE@ "$qstart" "$qend" \
	--agent-cmds @RESULTS@/agent-cmds.txt --qemu-cmds @RESULTS@/qemu-cmds.txt \
	> "$R/facts.txt" 2> "$R/facts.err" ||
	tap_fail "agent-facts nvme-keys on the VM host" "$(cat "$R/facts.err")"
fact() { sed -n "s/^$1=//p" "$R/facts.txt"; }
na=$(fact na)
nq=$(fact nq)
tap_diag "agent reported $na commands, QEMU received $nq I/O commands in the window"
comp=$(fact comp)
[ "$na" -gt 1000 ] && [ "$na" = "$comp" ] &&
	tap_ok "every completed command reported ($na, summary $comp)" ||
	tap_fail "every completed command reported" "per-command $na, summary completed '$comp'"
# every agent command is one QEMU saw (same queue, full cid, opcode): the
# agent's commands of each key beyond QEMU's count of that key
missing=$(fact missing)
[ "$missing" = 0 ] &&
	tap_ok "all $na (ctrl, qid, cid, opcode) keys of the agent are commands QEMU received" ||
	tap_fail "agent keys match QEMU's commands" "$missing of $na not found in QEMU's trace (see agent-cmds.txt, qemu-cmds.txt)"
gens=$(fact gens)
queues=$(fact queues)
[ "$gens" -ge 2 ] &&
	tap_ok "command ids carry the generation (top 4 bits): $gens generations, $queues queue(s)" ||
	tap_fail "command ids carry the generation" "$gens distinct generations"
dup=$(fact dup)
tap_diag "full (qid, cid) pairs seen more than once in the run (16 generations later): $dup"
# QEMU saw no command the agent missed (QEMU's window is a little wider:
# allow the commands in flight at the two edges, at most 32 + 1)
extra=$((nq - na))
[ "$extra" -ge 0 ] && [ "$extra" -le 33 ] &&
	tap_ok "QEMU received $nq, the agent reported $na (difference $extra <= 33: edges)" ||
	tap_fail "agent reported every command QEMU received" "QEMU $nq agent $na"
# perf saw the tracepoint at the same time
ps=$(awk -F, '/nvme_setup_cmd/ { print $1 }' "$R/perf.csv")
sub=$(fact sub)
tap_diag "perf stat nvme:nvme_setup_cmd: $ps; agent host_submit counter: $sub"
[ -n "$ps" ] && [ "$ps" -gt 1000 ] && [ -n "$sub" ] && [ "$sub" -ge "$ps" ] &&
	tap_ok "perf stat ran alongside and counted the tracepoint too ($ps <= agent's $sub)" ||
	tap_fail "perf alongside the agent" "perf '$ps' agent '$sub' $(head -5 "$R/perf.csv")"
losses=$(fact losses)
[ "$losses" = 0 ] && tap_ok "no ring buffer reservation failed" ||
	tap_fail "no ring buffer reservation failed" "$losses"

# Who issued each command: every line names its task (nvme_setup_cmd's
# current task); fio's direct I/O is dispatched in fio's own context on a
# queue without a scheduler, by a kworker only when blk-mq runs the queue
# later.
# (agent-facts: command lines naming pid, tid, comm and cgroup; fio's;
# a kworker's)
cmdl() { grep '"type":"cmd"' "$1"; }
nwho=$(fact nwho)
nfio=$(fact nfio)
tap_diag "who: $nfio of $na commands fio's, $(fact nkworker) a kworker's"
[ "$nwho" = "$na" ] && [ "$nfio" -gt $((na / 2)) ] &&
	tap_ok "every command names who issued it ($nwho of $na), most of them fio ($nfio)" ||
	tap_fail "every command names who issued it" "$nwho of $na with pid/tid/comm/cgroup, $nfio fio's"
# --comm fio: a dd reading the same disk is kept out, counted, and fio's
# commands are all there
"$AGENT" -d "${HMB_NVME_DEV#/dev/}" -j --per-command --comm fio \
	-o "$R/agent-who.jsonl" 2>"$R/agent-who.err" &
apid=$!
agent_wait_start "$R/agent-who.jsonl" ||
	tap_fail "agent --comm fio attached" "$(cat "$R/agent-who.err")"
dd if="$HMB_NVME_DEV" of=/dev/null bs=4k count=200 iflag=direct 2>/dev/null
fio --name=who --filename="$HMB_NVME_DEV" --direct=1 --ioengine=psync \
	--rw=randread --bs=4k --size=64M --number_ios=300 \
	--output-format=terse >"$R/fio-who.txt" 2>"$R/fio-who.err" ||
	tap_fail "fio for --comm fio" "$(cat "$R/fio-who.err")"
sleep 0.5
kill -INT $apid
wait $apid
nf=$(cmdl "$R/agent-who.jsonl" | grep -c '"comm":"fio"')
no=$(cmdl "$R/agent-who.jsonl" | grep -vc '"comm":"fio"')
filt=$(sed -n 's/.*"cmd_filtered":\([0-9]*\).*/\1/p' "$R/agent-who.jsonl" | tail -1)
[ "$nf" -ge 300 ] && [ "$no" = 0 ] && [ "${filt:-0}" -ge 200 ] &&
	tap_ok "--comm fio: fio's $nf commands reported, none of another task, dd's counted filtered ($filt)" ||
	tap_fail "--comm fio" "fio's $nf, others $no, cmd_filtered '$filt'"

# Armed with triggers: the armed tp_btf programs pass this kernel's
# verifier, a low threshold fires on fio's commands, a high one never.
"$AGENT" -d "${HMB_NVME_DEV#/dev/}" -j -N 0 --trigger 'host_total>1us' \
	--trigger 'read:host_total>3600s' -o "$R/agent-trig.jsonl" \
	2>"$R/agent-trig.err" &
apid=$!
agent_wait_start "$R/agent-trig.jsonl" ||
	tap_fail "armed agent attached" "$(cat "$R/agent-trig.err")"
fio --name=trig --filename="$HMB_NVME_DEV" --direct=1 --ioengine=psync \
	--rw=randread --bs=4k --size=64M --number_ios=500 \
	--output-format=terse >"$R/fio-trig.txt" 2>"$R/fio-trig.err" ||
	tap_fail "fio for the armed agent" "$(cat "$R/fio-trig.err")"
sleep 0.5
kill -INT $apid
wait $apid
trc=$?
att=$(sed -n 's/.*"attach":"\([a-z_]*\)".*/\1/p' "$R/agent-trig.jsonl" | head -1)
t1=$(grep -c '"type":"trigger","trigger":1,' "$R/agent-trig.jsonl")
t2=$(grep -c '"type":"trigger","trigger":2,' "$R/agent-trig.jsonl")
f1=$(grep '"type":"summary"' "$R/agent-trig.jsonl" | tail -1 |
	sed -n 's/.*"triggers":\[{"trigger":1,[^}]*"fired":\([0-9]*\),"reported":\([0-9]*\).*/\1 \2/p')
[ $trc = 0 ] && [ "$att" = tp_btf ] && [ "$t1" -ge 500 ] &&
	[ "$f1" = "$t1 $t1" ] && [ "$t2" = 0 ] &&
	tap_ok "armed (tp_btf): host_total>1us fired on $t1 commands (>= fio's 500; summary fired/reported $f1), read:host_total>3600s on none" ||
	tap_fail "armed agent's triggers" "exit $trc, attach '$att', fired $t1/$t2, summary '$f1': $(tail -3 "$R/agent-trig.err")"

# Block mode on this kernel: where does the start time come from?  6.1
# stamps each request at issue (io_start_time_ns, the NVMe disk's queue
# keeps statistics), so no program runs at issue; 6.9 and later stamp a
# plugged request with the plug's cached time, so a program does.
wbt=$(cat "/sys/block/${HMB_NVME_DEV#/dev/}/queue/wbt_lat_usec" 2>/dev/null || echo 0)
case $(uname -r) in
6.1.*) [ "$wbt" -gt 0 ] && want=kernel || want=bpf ;;
*) want=bpf ;;
esac
"$AGENT" -d "${HMB_NVME_DEV#/dev/}" -m block -j -N 0 -o "$R/agent-blk.jsonl" \
	2>"$R/agent-blk.err" &
apid=$!
agent_wait_start "$R/agent-blk.jsonl" ||
	tap_fail "block-mode agent attached" "$(cat "$R/agent-blk.err")"
fio --name=blk --filename="$HMB_NVME_DEV" --direct=1 --ioengine=psync \
	--rw=randread --bs=4k --size=64M --number_ios=2000 \
	--output-format=terse >"$R/fio-blk.txt" 2>"$R/fio-blk.err" ||
	tap_fail "fio for block mode" "$(cat "$R/fio-blk.err")"
sleep 0.5
kill -INT $apid
wait $apid
brc=$?
stamp=$(sed -n 's/.*"issue_stamp":"\([a-z]*\)".*/\1/p' "$R/agent-blk.jsonl" | head -1)
why=$(sed -n 's/.*"issue_stamp_why":"\([^"]*\)".*/\1/p' "$R/agent-blk.jsonl" | head -1)
[ $brc = 0 ] && [ "$stamp" = "$want" ] &&
	tap_ok "block mode on $(uname -r) (wbt_lat_usec $wbt): issue time from '$stamp' ($why)" ||
	tap_fail "block mode's issue stamp on $(uname -r)" "want $want, got '$stamp' ($why), exit $brc: $(cat "$R/agent-blk.err")"
hc=$(sed -n 's/.*"host_complete":\([0-9]*\).*/\1/p' "$R/agent-blk.jsonl" | tail -1)
nosub=$(sed -n 's/.*"host_complete_without_submit":\([0-9]*\).*/\1/p' "$R/agent-blk.jsonl" | tail -1)
hist=$(grep '"type":"summary"' "$R/agent-blk.jsonl" | sed 's/.*"host_total":\[\([^]]*\)\].*/\1/' |
	tr '}' '\n' | sed -n 's/.*"count":\([0-9]*\).*/\1/p' | awk '{ s += $1 } END { print s + 0 }')
[ "${hc:-0}" -ge 2000 ] && [ "$nosub" = 0 ] && [ "$hist" = "$hc" ] &&
	tap_ok "block mode measured fio's 2000 reads: host_complete $hc, histogram $hist, none without a start time" ||
	tap_fail "block mode measured fio's reads" "host_complete '$hc' histogram '$hist' host_complete_without_submit '$nosub'"
tap_done
