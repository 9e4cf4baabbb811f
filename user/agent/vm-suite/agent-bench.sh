#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# agent-bench: what hmb-trace-agent's BPF programs cost per command, against
# libbpf-tools' biolatency on the same I/Os, on the real
# HMB path: the VM bench's HMB-capable NVMe controller writes five firmware
# records per command it serves into the trace slice of the patched
# nvme.ko, the module's bridge emits them as hmb_trace:hmb_trace_record.
# Both tools are attached at the same time, each with its own programs;
# kernel.bpf_stats_enabled=1 and `bpftool prog show` (run_time_ns,
# run_cnt, recursion_misses) read before and after fio 4k randread QD32 on
# the NVMe disk give each program's run time over exactly those I/Os —
# the same method for both tools, in the same run:
#   A. the agent in nvme + firmware mode (nvme_setup_cmd, nvme_complete_rq,
#      hmb_trace_record) next to biolatency (block_rq_issue,
#      block_rq_complete): per command (setup + completion), per firmware
#      record, and per command with its records, against biolatency per I/O;
#   B. the agent's block-layer fallback (-m block) next to biolatency,
#      twice: with a program at block_rq_issue (--issue-stamp bpf, as
#      biolatency) and as the agent chooses (on Debian 6.1 the request's
#      own issue stamp, no program at issue); each time the two tools'
#      histograms must agree (no request more than one slot away).
# Programs are told apart by their ids (those that appeared when each tool
# started), not by name.  In `make check` the suite runs short
# (HMB_AGENT_BENCH_SECS, default 3) and checks the measurement itself, never
# a time: every program ran once per command or record the tools counted
# (run_cnt against the agent's own counters and biolatency's), both tools
# saw the same I/Os.  scripts/bench-agent-vm.sh runs it longer and writes
# docs/benchmarks.md from $HMB_RESULTS/bench.txt.
# vm-timeout: 500
# vm-alone: yes
# vm-nvme: patched hmb_trace_kb=1024
# vm-nvme-hmb: hmpre=2048, hmmin=256, hmmaxd=16, hmb-bg-rate=0
set -u
. "$HMB_REPO/scripts/vm/lib/tap.sh"
. "$HMB_REPO/kernel/tools/guest-lib.sh"
. "$HMB_REPO/user/agent/vm-suite/lib/agent.sh"
SECS=${HMB_AGENT_BENCH_SECS:-3}
R=$HMB_RESULTS
DISK=${HMB_NVME_DEV#/dev/}
STATS=/proc/sys/kernel/bpf_stats_enabled

hmb_need_patched_hmb
command -v biolatency >/dev/null || {
	tap_fail "biolatency in the guest (libbpf-tools on the VM host: scripts/deps.sh bpf, then the guest is rebuilt)"
	tap_done
}
hmb_nvme_bridge_on
echo 1 > $STATS

# progs FILE: "id name run_time_ns run_cnt recursion_misses" per loaded program
progs() {
	bpftool prog show | awk '/^[0-9]+:/ {
		id = $1; sub(/:/, "", id); name = ""; rt = 0; rc = 0; rm = 0
		for (i = 2; i < NF; i++) {
			if ($i == "name") name = $(i + 1)
			if ($i == "run_time_ns") rt = $(i + 1)
			if ($i == "run_cnt") rc = $(i + 1)
			if ($i == "recursion_misses") rm = $(i + 1)
		}
		print id, name, rt, rc, rm }' > "$1"
}
# ids FILE: the ids in a progs file
ids() { awk '{ print $1 }' "$1"; }

# phase NAME AGENT-ARGS...: the agent (with AGENT-ARGS) and biolatency on
# the NVMe disk through one fio run.  Leaves $R/NAME-delta.txt: "tool id
# name run_time_ns run_cnt recursion_misses" over the fio window, tool
# "agent" or "bio", and the agent's JSON lines in $R/agent-NAME.jsonl.
phase() {
	name=$1
	shift
	progs "$R/$name-p0.txt"
	"$AGENT" -d "$DISK" -j -N 0 -o "$R/agent-$name.jsonl" "$@" 1 2>"$R/agent-$name.err" &
	apid=$!
	agent_wait_start "$R/agent-$name.jsonl" ||
		{ tap_fail "$name: the agent starts" "$(cat "$R/agent-$name.err")"; kill $apid; return 1; }
	progs "$R/$name-p1.txt"
	biolatency -d "$DISK" >"$R/bio-$name.out" 2>&1 &
	bpid=$!
	# its banner sits in stdio's buffer (no stdbuf in the guest): wait
	# for its programs instead, then for it to attach them (the run
	# counts below tell if it had not)
	_i=0
	while [ $_i -lt 300 ] && kill -0 $bpid 2>/dev/null; do
		progs "$R/$name-p2.txt"
		[ "$(wc -l < "$R/$name-p2.txt")" -gt "$(wc -l < "$R/$name-p1.txt")" ] && break
		usleep 100000; _i=$((_i + 1))
	done
	[ "$(wc -l < "$R/$name-p2.txt")" -gt "$(wc -l < "$R/$name-p1.txt")" ] ||
		{ tap_fail "$name: biolatency starts" "$(cat "$R/bio-$name.out")"; kill $apid $bpid; return 1; }
	sleep 2
	progs "$R/$name-p2.txt"
	progs "$R/$name-s0.txt"
	fio --name=bench --filename="$HMB_NVME_DEV" --direct=1 --rw=randread --bs=4k \
		--size=64M --time_based --runtime="$SECS" --ioengine=libaio --iodepth=32 \
		--output-format=terse >"$R/fio-$name.txt" 2>"$R/fio-$name.err" ||
		tap_fail "$name: fio" "$(cat "$R/fio-$name.err")"
	# the firmware records of the last commands, through the bridge
	hmb_wait_drained "$dev" 30
	sleep 2
	progs "$R/$name-s1.txt"
	kill -INT $bpid $apid
	wait $bpid
	brc=$?
	wait $apid
	arc=$?
	[ $arc = 0 ] && [ $brc = 0 ] && tap_ok "$name: the agent and biolatency exit 0" ||
		tap_fail "$name: the agent and biolatency exit 0" "agent $arc: $(tail -2 "$R/agent-$name.err"); biolatency $brc: $(tail -2 "$R/bio-$name.out")"
	# the agent's programs: new at p1; biolatency's: new at p2
	awk -v p0="$R/$name-p0.txt" -v p1="$R/$name-p1.txt" -v p2="$R/$name-p2.txt" \
		-v s0="$R/$name-s0.txt" '
		BEGIN {
			while ((getline l < p0) > 0) { split(l, a, " "); old[a[1]] = 1 }
			while ((getline l < p1) > 0) { split(l, a, " "); if (!(a[1] in old)) tool[a[1]] = "agent" }
			while ((getline l < p2) > 0) { split(l, a, " "); if (!(a[1] in old) && !(a[1] in tool)) tool[a[1]] = "bio" }
			while ((getline l < s0) > 0) { split(l, a, " "); rt[a[1]] = a[3]; rc[a[1]] = a[4]; rm[a[1]] = a[5] }
		}
		($1 in tool) && ($1 in rt) {
			print tool[$1], $1, $2, $3 - rt[$1], $4 - rc[$1], $5 - rm[$1]
		}' "$R/$name-s1.txt" > "$R/$name-delta.txt"
	tap_diag "$name: programs over the fio window (tool id name run_time_ns run_cnt recursion_misses): $(tr '\n' ';' < "$R/$name-delta.txt")"
}

# sum NAME TOOL NAME-REGEX FIELD: the sum of FIELD (4 time, 5 count,
# 6 misses) over the programs of TOOL whose name matches
sum() {
	awk -v t="$2" -v re="$3" -v f="$4" '$1 == t && $3 ~ re { s += $f } END { printf "%.0f\n", s }' "$R/$1-delta.txt"
}
# agent_counter NAME KEY: the agent's summary counter
agent_counter() {
	grep '"type":"summary"' "$R/agent-$1.jsonl" | sed -n 's/.*"counters":{\([^}]*\)}.*/\1/p' |
		sed -n "s/.*\"$2\":\([0-9]*\).*/\1/p" | head -1
}
ns() { awk -v t="$1" -v c="$2" 'BEGIN { printf "%.0f\n", (c > 0 ? t / c : 0) }'; }

# --- A: nvme + firmware --------------------------------------------------------------
phase fw
grep -q '"mode":"nvme+firmware"' "$R/agent-fw.jsonl" &&
	tap_ok "fw: the agent ran in nvme+firmware mode" ||
	tap_fail "fw: the agent ran in nvme+firmware mode" "$(head -1 "$R/agent-fw.jsonl")"
a_set_t=$(sum fw agent '^nvme_setup' 4) a_set_c=$(sum fw agent '^nvme_setup' 5)
a_cmp_t=$(sum fw agent '^nvme_complete' 4) a_cmp_c=$(sum fw agent '^nvme_complete' 5)
a_rec_t=$(sum fw agent '^hmb_record' 4) a_rec_c=$(sum fw agent '^hmb_record' 5)
a_all_t=$(sum fw agent . 4) a_miss=$(sum fw agent . 6)
b_all_t=$(sum fw bio . 4) b_cmp_c=$(sum fw bio complete 5) b_miss=$(sum fw bio . 6)
hcomp=$(agent_counter fw host_complete) fwrec=$(agent_counter fw fw_records)
ios=$(awk -F';' '{ print int($6 / 4) }' "$R/fio-fw.txt")
tap_diag "fw: fio $ios I/Os; agent: setup $a_set_c runs, complete $a_cmp_c, hmb_record $a_rec_c (counters: host_complete $hcomp, fw_records $fwrec), misses $a_miss; biolatency: complete $b_cmp_c, misses $b_miss"
# every program ran once per command or record, and both tools saw the
# same I/Os (a run the kernel skipped is a recursion miss, counted)
[ "$a_cmp_c" -gt 0 ] && [ "$a_set_c" = "$a_cmp_c" ] && [ "$a_cmp_c" = "$hcomp" ] &&
	[ "$((a_cmp_c + a_miss))" -ge "$b_cmp_c" ] && [ "$((b_cmp_c + b_miss))" -ge "$a_cmp_c" ] &&
	[ "$a_cmp_c" -ge "$ios" ] &&
	tap_ok "fw: both tools measured over the same $a_cmp_c commands (setup = completion runs = the agent's host_complete; biolatency $b_cmp_c; fio $ios)" ||
	tap_fail "fw: both tools measured over the same commands" "setup $a_set_c complete $a_cmp_c host_complete $hcomp biolatency $b_cmp_c fio $ios misses $a_miss/$b_miss"
# hmb_records (the bridge's batches): one run per batch of up to 64
# records; hmb_record (an agent of before, --fw-event record): one per record
fwev=$(sed -n 's/.*"fw_event":"\([a-z_]*\)".*/\1/p' "$R/agent-fw.jsonl" | head -1)
if [ "$fwev" = hmb_trace_records ]; then
	[ "$fwrec" -gt "$a_cmp_c" ] && [ "$a_rec_c" -gt 0 ] && [ "$a_rec_c" -le "$fwrec" ] &&
		tap_ok "fw: hmb_records ran $a_rec_c times for the $fwrec firmware records the agent counted ($(awk -v r="$fwrec" -v c="$a_rec_c" 'BEGIN { printf "%.1f", r / c }') a run)" ||
		tap_fail "fw: hmb_records ran for the firmware records" "runs $a_rec_c, fw_records $fwrec, commands $a_cmp_c"
else
	[ "$a_rec_c" -gt "$a_cmp_c" ] && [ "$a_rec_c" = "$fwrec" ] &&
		tap_ok "fw: hmb_record ran for each of the $a_rec_c firmware records the agent counted" ||
		tap_fail "fw: hmb_record ran for each firmware record" "runs $a_rec_c, fw_records $fwrec, commands $a_cmp_c"
fi
runs_rec=$a_rec_c
a_rec_c=$fwrec
per_cmd=$(ns $((a_set_t + a_cmp_t)) "$a_cmp_c")
per_rec=$(ns "$a_rec_t" "$a_rec_c")
per_cmd_all=$(ns "$a_all_t" "$a_cmp_c")
bio_io=$(ns "$b_all_t" "$b_cmp_c")
recs=$(awk -v r="$a_rec_c" -v c="$a_cmp_c" 'BEGIN { printf "%.2f\n", (c > 0 ? r / c : 0) }')
five=$((per_cmd + 5 * per_rec))
ratio5=$(awk -v a="$five" -v b="$bio_io" 'BEGIN { printf "%.2f\n", (b > 0 ? a / b : 0) }')
ratio_all=$(awk -v a="$per_cmd_all" -v b="$bio_io" 'BEGIN { printf "%.2f\n", (b > 0 ? a / b : 0) }')
# which program dominates
tap_diag "fw: per command setup $(ns "$a_set_t" "$a_set_c") ns + completion $(ns "$a_cmp_t" "$a_cmp_c") ns; per firmware record $per_rec ns ($recs records per command); all agent programs $per_cmd_all ns per command; biolatency $bio_io ns per I/O; ratios: five records $ratio5, measured $ratio_all"

# --- B: the block-layer fallback ------------------------------------------------------
# slots_agree NAME: the agent's host_total histogram against biolatency's,
# both over the same I/Os: no request more than one slot away (each
# tool's count up to slot k at least the other's up to slot k-1, within
# max(10, 0.5 %): a task preempted between the two tools' programs).
# The two start times differ by a program's run time (biolatency's at
# block_rq_issue, or the request's own stamp just after it), a few us
# under TCG against the hundreds of a QD32 request.
slots_agree() {
	grep '"type":"summary"' "$R/agent-$1.jsonl" |
		sed 's/.*"host_total":\[\([^]]*\)\].*/\1/' | tr '}' '\n' |
		sed -n 's/.*"lo_us":\([0-9]*\).*"count":\([0-9]*\).*/a \1 \2/p' > "$R/$1-slots.txt"
	sed -n 's/^ *\([0-9][0-9]*\) *-> *[0-9][0-9]* *: *\([0-9][0-9]*\).*/b \1 \2/p' \
		"$R/bio-$1.out" >> "$R/$1-slots.txt"
	awk -f "$HMB_REPO/user/agent/vm-suite/hist-compare.awk" "$R/$1-slots.txt"
}

# blk NAME WANT AGENT-ARGS...: phase B with the agent's AGENT-ARGS, the
# issue stamp WANT expected (kernel or bpf; empty: either); sets blk_io,
# kbio_io, ratio_blk, stamp and k_cmp_c
blk() {
	bn=$1 want_stamp=$2
	shift 2
	phase "$bn" -m block "$@"
	grep -q '"mode":"block host-only"' "$R/agent-$bn.jsonl" &&
		tap_ok "$bn: the agent ran in block mode" ||
		tap_fail "$bn: the agent ran in block mode" "$(head -1 "$R/agent-$bn.jsonl")"
	stamp=$(sed -n 's/.*"issue_stamp":"\([a-z]*\)".*/\1/p' "$R/agent-$bn.jsonl" | head -1)
	why=$(sed -n 's/.*"issue_stamp_why":"\([^"]*\)".*/\1/p' "$R/agent-$bn.jsonl" | head -1)
	k_iss_c=$(sum "$bn" agent issue 5)
	k_cmp_c=$(sum "$bn" agent complete 5)
	# the stamp it chose, and the programs it ran: none at issue with the
	# request's own stamp, one per request with a program's
	{ [ "$stamp" = kernel ] && [ "$k_iss_c" = 0 ] &&
		! grep -q '^agent [0-9]* blk_issue' "$R/$bn-delta.txt"; } ||
		{ [ "$stamp" = bpf ] && [ "$k_iss_c" -ge "$k_cmp_c" ]; } &&
		tap_ok "$bn: issue time from $stamp ($why): $k_iss_c runs at issue, $k_cmp_c at completion" ||
		tap_fail "$bn: the issue stamp and the programs agree" "stamp '$stamp' ($why), runs at issue $k_iss_c, at completion $k_cmp_c"
	[ -z "$want_stamp" ] || [ "$stamp" = "$want_stamp" ] &&
		tap_ok "$bn: the expected issue stamp (${want_stamp:-any})" ||
		tap_fail "$bn: the expected issue stamp" "want $want_stamp, got '$stamp' ($why)"
	# -N 0 in block mode: no top list, nothing for user space to see per I/O
	k_hc=$(agent_counter "$bn" host_complete) k_sent=$(agent_counter "$bn" cmd_events_sent)
	k_below=$(agent_counter "$bn" cmd_below_min_latency)
	k_nosub=$(agent_counter "$bn" host_complete_without_submit)
	[ "${k_hc:-0}" -gt 0 ] && [ "$k_sent" = 0 ] && [ "$k_below" = "$k_hc" ] &&
		tap_ok "$bn: with --top 0 no I/O crosses the ring buffer ($k_below of $k_hc kept in the kernel)" ||
		tap_fail "$bn: with --top 0 no I/O crosses the ring buffer" "host_complete $k_hc cmd_events_sent $k_sent cmd_below_min_latency $k_below"
	[ "$k_nosub" = 0 ] &&
		tap_ok "$bn: every completion had its start time" ||
		tap_fail "$bn: every completion had its start time" "host_complete_without_submit $k_nosub"
	k_all_t=$(sum "$bn" agent . 4) k_miss=$(sum "$bn" agent . 6)
	kb_all_t=$(sum "$bn" bio . 4) kb_cmp_c=$(sum "$bn" bio complete 5) kb_miss=$(sum "$bn" bio . 6)
	kios=$(awk -F';' '{ print int($6 / 4) }' "$R/fio-$bn.txt")
	[ "$k_cmp_c" -gt 0 ] && [ "$((k_cmp_c + k_miss))" -ge "$kb_cmp_c" ] &&
		[ "$((kb_cmp_c + kb_miss))" -ge "$k_cmp_c" ] && [ "$k_cmp_c" -ge "$kios" ] &&
		tap_ok "$bn: both tools measured over the same $k_cmp_c I/Os (biolatency $kb_cmp_c; fio $kios)" ||
		tap_fail "$bn: both tools measured over the same I/Os" "agent $k_cmp_c biolatency $kb_cmp_c fio $kios misses $k_miss/$kb_miss"
	# both histograms hold the I/Os of the whole run (the tools were
	# attached before fio and stopped after it)
	set -- $(slots_agree "$bn")
	ta=$1 tb=$2 worst=$3 tol=$4
	shift 4
	[ "$ta" -gt 0 ] && [ "$ta" = "$k_hc" ] && [ "$((ta + k_miss))" -ge "$tb" ] &&
		[ "$((tb + kb_miss))" -ge "$ta" ] && [ "$worst" -le "$tol" ] &&
		tap_ok "$bn: the agent's latencies are biolatency's: $ta and $tb I/Os, none more than one slot away (worst $worst, within $tol)" ||
		tap_fail "$bn: the agent's latencies are biolatency's" "agent $ta (host_complete $k_hc), biolatency $tb, worst $worst (within $tol); slots agent/biolatency:$*"
	tap_diag "$bn: histogram slots (us) agent/biolatency:$*"
	blk_io=$(ns "$k_all_t" "$k_cmp_c")
	kbio_io=$(ns "$kb_all_t" "$kb_cmp_c")
	ratio_blk=$(awk -v a="$blk_io" -v b="$kbio_io" 'BEGIN { printf "%.2f\n", (b > 0 ? a / b : 0) }')
	tap_diag "$bn: agent $blk_io ns per I/O (issue stamp $stamp), biolatency $kbio_io ns per I/O, ratio $ratio_blk"
}

# the stamp auto chooses on this kernel: the request's own where the
# kernel takes it at issue (Debian 6.1: no blk_plug.cur_ktime; the NVMe
# disk's queue keeps statistics, wbt_lat_usec > 0), a program's elsewhere
auto=
if [ "$(cat /sys/block/$DISK/queue/wbt_lat_usec 2>/dev/null || echo 0)" -gt 0 ]; then
	case $(uname -r) in 6.1.*) auto=kernel ;; esac
fi
blk blkbpf bpf --issue-stamp bpf
bpf_blk_io=$blk_io bpf_kbio_io=$kbio_io bpf_ratio_blk=$ratio_blk bpf_ios=$k_cmp_c
blk blk "$auto"
cat > "$R/bench.txt" <<EOT
secs=$SECS
cmds=$a_cmp_c
records=$a_rec_c
record_runs=$runs_rec
fw_event=${fwev:-hmb_trace_record}
records_per_cmd=$recs
agent_setup_ns=$(ns "$a_set_t" "$a_set_c")
agent_complete_ns=$(ns "$a_cmp_t" "$a_cmp_c")
agent_cmd_ns=$per_cmd
agent_record_ns=$per_rec
agent_cmd_all_ns=$per_cmd_all
agent_cmd5_ns=$five
bio_ns=$bio_io
ratio5=$ratio5
ratio_all=$ratio_all
agent_misses=$a_miss
bio_misses=$b_miss
blk_ios=$k_cmp_c
blk_agent_ns=$blk_io
blk_bio_ns=$kbio_io
ratio_blk=$ratio_blk
blk_stamp=$stamp
blkbpf_ios=$bpf_ios
blkbpf_agent_ns=$bpf_blk_io
blkbpf_bio_ns=$bpf_kbio_io
ratio_blkbpf=$bpf_ratio_blk
EOT
echo 0 > $STATS
rmmod nvme_hmb_trace && tap_ok "rmmod nvme_hmb_trace" || tap_fail "rmmod nvme_hmb_trace"
hmb_dmesg_check
tap_done
