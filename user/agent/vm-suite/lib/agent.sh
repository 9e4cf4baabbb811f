# SPDX-License-Identifier: GPL-2.0
# lib/agent.sh: what the live agent suites share (busybox sh; source it after
# scripts/vm/lib/tap.sh).  agent-e2e.sh (firmware records from hmb-fwsim
# through ivshmem) and kernel/vm-suite/hmb-agent.sh (from the HMB-capable
# NVMe controller) hold the agent to the same thresholds with these;
# agent-nvme.sh (no firmware records) and agent-bench.sh wait for its start
# line with agent_wait_start.
AGENT=$HMB_BIN/hmb-trace-agent

# agent_wait_start OUT [SECS]: until the agent's JSON lines in OUT hold its
# start line (SECS, default 120); false if they do not.  Loading and
# verifying the programs takes a few seconds under TCG, and more than 20
# on 6.12 beside a parallel build: the limit is only for an agent that
# hangs (one that fails exits with its error, which the caller shows).
agent_wait_start() {
	_i=0
	while [ $_i -lt $((${2:-120} * 10)) ] && ! grep -q '"type":"start"' "$1" 2>/dev/null; do
		usleep 100000; _i=$((_i + 1))
	done
	grep -q '"type":"start"' "$1" 2>/dev/null
}

# agent_start OUT [AGENT ARGS...]: hmb-trace-agent on the NVMe disk, JSON
# lines with per-command records into OUT; waits for its start line and
# checks it found the firmware records.  Sets AGENT_PID.
agent_start() {
	_out=$1
	shift
	"$AGENT" -d "${HMB_NVME_DEV#/dev/}" -j --per-command -o "$_out" "$@" \
		2>"${_out%.jsonl}.err" &
	AGENT_PID=$!
	agent_wait_start "$_out"
	grep -q '"mode":"nvme+firmware"' "$_out" &&
		tap_ok "agent attached with firmware records: $(head -1 "$_out" | cut -c1-120)" ||
		{ tap_fail "agent in nvme+firmware mode" "$(cat "${_out%.jsonl}.err") $(head -1 "$_out")"; return 1; }
}

# agent_stop: SIGINT, and it must exit 0
agent_stop() {
	kill -INT "$AGENT_PID"
	wait "$AGENT_PID"
	_rc=$?
	[ $_rc = 0 ] && tap_ok "agent exits 0 on SIGINT" ||
		tap_fail "agent exit $_rc" "$(tail -5 "${1%.jsonl}.err" 2>/dev/null)"
}

# agent_summary FILE: the summary line's totals, counters and clock into
# shell variables (A_commands, A_matched, ..., A_drift_ppm, A_step_seq ...).
# FILE is in $HMB_RESULTS: the VM host finds its last summary line (grep
# over tens of MB is slow under TCG)
agent_summary() {
	_summ=$(hostcmd run agent-facts last-line "@RESULTS@${1#"$HMB_RESULTS"}" '"type":"summary"')
	# totals and counters only (the top-N objects repeat some names)
	_tot=$(printf '%s' "$_summ" | sed -n 's/.*"totals":{\([^}]*\)}.*"counters":{\([^}]*\)}.*/\1,\2/p')
	_clk=$(printf '%s' "$_summ" | sed -n 's/.*"clock":{\([^}]*\)}.*/\1/p')
	for _k in commands matched partial unmatched placed in_window_err fw_records \
		ringbuf_reserve_failed host_complete bridge_lost bridge_ignored bridge_corrupt \
		fw_refused_when_placed host_only no_complete host_complete_without_submit \
		cmd_filtered; do
		eval "A_$_k=\$(printf '%s' \"\$_tot\" | sed -n 's/.*\"$_k\":\([0-9-]*\).*/\1/p' | head -1)"
	done
	for _k in offset_ns offset_err_ns ref_fw_ns drift_ppm steps step_seq step_lo_seq \
		step_hi_seq step_ns step_err_ns; do
		eval "A_$_k=\$(printf '%s' \"\$_clk\" | sed -n 's/.*\"$_k\":\([0-9.-]*\).*/\1/p' | head -1)"
	done
	tap_diag "agent: commands $A_commands matched $A_matched partial $A_partial unmatched $A_unmatched placed $A_placed in_window_err $A_in_window_err"
	tap_diag "agent counters: $(printf '%s' "$_summ" | sed -n 's/.*"counters":{\([^}]*\)}.*/\1/p')"
	tap_diag "agent clock: $_clk"
}

# agent_check_reports FILE INTERVAL: the agent kept to its loop while the
# flood lasted: its interval reports (FILE in $HMB_RESULTS; their "time" is
# to the second) came at most 5 s apart, INTERVAL s asked.  The loop is
# where the clock is solved and the waiting commands are placed: an agent
# kept in libbpf's consume by a producer as fast as itself placed the
# whole run on one late estimate.
agent_check_reports() {
	hostcmd run agent-facts lines "@RESULTS@${1#"$HMB_RESULTS"}" '"type":"interval"' |
		sed -n 's/.*"time":"\([0-9]*\):\([0-9]*\):\([0-9]*\)".*/\1 \2 \3/p' |
		awk '{ t = $1 * 3600 + $2 * 60 + $3; if (NR > 1) { d = t - p; if (d < 0) d += 86400
			if (d > g) g = d }; p = t } END { print NR + 0, g + 0 }' > "$HMB_RESULTS/reports.txt"
	read _nr _gap < "$HMB_RESULTS/reports.txt"
	[ "$_nr" -ge 2 ] && [ "$_gap" -le 5 ] &&
		tap_ok "the agent reported every interval through the run: $_nr reports, at most $_gap s apart (interval $2 s)" ||
		tap_fail "the agent reported every interval through the run" "$_nr reports, the longest gap $_gap s (interval $2 s; want <= 5 s)"
}

# agent_check_accounted MIN LOST: every command the agent saw is accounted
# for by the agent's own evidence, not by how soon its records came: it is
# matched, or the agent says why not (its per-command flags, sorted by
# agent_check_attribution, which must run first: its records came after
# its command id had been used again past the waiting depth, REUSED; none
# came within --fw-grace, SWEPT; no room in a map, NO_ROOM; or records it
# refused as outside the window on its clock, fw_refused: at most 0.1 % of
# the placed commands, agent_check_window holds that).  One that is
# not matched for none of these reasons is allowed only for a record lost
# on the way (LOST: the records the producer and the bridge say they
# lost; each can cost one command its match).  Every completion is a
# command, or counted as one without a submission (in flight when the
# agent attached), or as filtered (another namespace's, an admin command
# with -d a namespace).  And the join ran: more than MIN commands matched.
agent_check_accounted() {
	A_commands_completed=$((A_commands - A_no_complete))
	_miss=$((A_host_complete - A_commands_completed - A_host_complete_without_submit - A_cmd_filtered))
	tap_diag "accounted: $A_matched of $A_commands matched; not matched $A_nm_commands: flushed by id reuse $A_nm_reused, swept $A_nm_swept, no room $A_nm_no_room, records refused outside the window on the clock $A_nm_refused ($A_nm_refused_own the command's own, $A_nm_refused_other_use another use's of its id), for no reason the agent gave $A_nm_unexplained (records lost on the way: $2)"
	[ -n "$A_matched" ] && [ "$A_matched" -gt "$1" ] && [ -n "$A_nm_unexplained" ] &&
		[ "$A_nm_unexplained" -le "$2" ] &&
		[ $((A_matched + A_nm_commands + A_host_only)) = "$A_commands" ] &&
		tap_ok "every command accounted for: $A_matched matched, $((A_nm_commands - A_nm_unexplained)) not matched for the reason the agent gives, $A_nm_unexplained for none (<= $2 records lost on the way)" ||
		tap_fail "every command matched or not matched for the reason the agent gives" "matched '$A_matched' (want > $1) + not matched '$A_nm_commands' + host only '$A_host_only' of '$A_commands'; unexplained '$A_nm_unexplained' (want <= $2): $A_nm_examples"
	[ "$_miss" -le 0 ] &&
		tap_ok "every completion is a command or counted: $A_host_complete completions, $A_commands_completed commands completed, $A_host_complete_without_submit without a submission, $A_cmd_filtered filtered" ||
		tap_fail "every completion is a command or counted" "$A_host_complete completions, $A_commands_completed commands completed, $A_host_complete_without_submit without a submission, $A_cmd_filtered filtered"
}

# agent_check_window: >= 99.9 % of the placed commands have every firmware
# event inside their host window.  The command model takes a record outside
# it off its command (fw_refused_when_placed) so that every placed command
# is inside: those records count against it too, one command each -- but
# only the command's own (agent_check_attribution's A_rr_own, by the
# producer's account: the clock put them outside).  A record of another
# use of its id (A_rr_other_use; a predecessor given up after 32 waiting
# uses of the id, its records late behind a lagging ring) or of another
# command is refused by causality, as it must be: counted, shown, and not
# held against the clock.  Call it after agent_check_attribution.
agent_check_window() {
	_own=${A_rr_own:-$A_fw_refused_when_placed}
	[ -n "$A_placed" ] && [ "$A_placed" -gt 0 ] && [ -n "$_own" ] &&
		[ $(((A_in_window_err - _own) * 1000)) -ge $((A_placed * 999)) ] &&
		tap_ok "after clock mapping, $A_in_window_err of $A_placed commands have all firmware events inside their host window, $_own of their own records taken off outside it (>= 99.9 %); refused as not theirs: ${A_rr_other_use:-?} of another use of the id, ${A_rr_other:-?} of another command" ||
		tap_fail "firmware events inside host windows >= 99.9 %" "$A_in_window_err of $A_placed, $A_fw_refused_when_placed records taken off outside their window ($_own the command's own, ${A_rr_other_use:-?} another use's, ${A_rr_other:-?} another command's)"
}

# agent_check_attribution JSONL MIN WHOSE PRODUCER-ACCOUNT...: no
# misattribution.  Every record the agent gave a command (JSONL, a file in
# $HMB_RESULTS) must come from one producer command with that queue and
# command id, and no producer command may be given to two host commands,
# per the producer's own account (agent-attribution's --account FILE or
# --fwsim-cmd-log FILE, hostcmd paths; --step-first-seq N also gives the
# record the step must be placed at: A_step_want; the commands not matched
# by the agent's reason: A_nm_*, for agent_check_accounted).  The check
# runs on the VM host: the files are tens of MB.
agent_check_attribution() {
	_j=$1 _min=$2 _whose=$3
	shift 3
	hostcmd run agent-attribution "@RESULTS@/$_j" "$@" > "$HMB_RESULTS/attr.json" \
		2> "$HMB_RESULTS/attr.err"
	_n=$(sed -n 's/^{"commands": \([0-9]*\).*/\1/p' "$HMB_RESULTS/attr.json")
	_w=$(sed -n 's/.*"wrong": \([0-9]*\).*/\1/p' "$HMB_RESULTS/attr.json")
	_t=$(sed -n 's/.*"twice": \([0-9]*\).*/\1/p' "$HMB_RESULTS/attr.json")
	A_step_want=$(sed -n 's/.*"step_want_seq": \([0-9]*\).*/\1/p' "$HMB_RESULTS/attr.json")
	_nm=$(sed -n 's/.*"not_matched": {\([^}]*\)}.*/\1/p' "$HMB_RESULTS/attr.json")
	for _k in commands reused swept no_room refused refused_own refused_other_use unexplained; do
		eval "A_nm_$_k=\$(printf '%s' \"\$_nm\" | sed -n 's/.*\"$_k\": \([0-9]*\).*/\1/p')"
	done
	A_nm_examples=$(sed -n 's/.*"unexplained_examples": \(\[[^]]*\]\).*/\1/p' "$HMB_RESULTS/attr.json")
	_rr=$(sed -n 's/.*"refused_records": {\([^}]*\)}.*/\1/p' "$HMB_RESULTS/attr.json")
	for _k in own other_use other; do
		eval "A_rr_$_k=\$(printf '%s' \"\$_rr\" | sed -n 's/.*\"$_k\": \([0-9]*\).*/\1/p')"
	done
	_as=$(sed -n 's/.*"after_step": {\([^}]*\)}.*/\1/p' "$HMB_RESULTS/attr.json")
	for _k in commands outside narrowest_ns; do
		eval "A_after_$_k=\$(printf '%s' \"\$_as\" | sed -n 's/.*\"$_k\": \([0-9]*\).*/\1/p')"
	done
	[ -n "$_n" ] && [ "$_n" -gt "$_min" ] && [ "$_w" = 0 ] && [ "$_t" = 0 ] &&
		tap_ok "no misattribution: all records of each of $_n commands come from that one command ($_whose), no command given twice" ||
		tap_fail "no misattribution" "$(cat "$HMB_RESULTS/attr.json" "$HMB_RESULTS/attr.err")"
}

# agent_check_drift WANT_PPM: the agent's drift within 10 % of WANT_PPM
agent_check_drift() {
	awk -v d="$A_drift_ppm" -v w="$1" 'BEGIN { e = d - w; if (e < 0) e = -e
		exit !(d != "" && e <= 0.1 * (w < 0 ? -w : w)) }' &&
		tap_ok "drift recovered within 10 % ($A_drift_ppm ppm vs $1 ppm)" ||
		tap_fail "drift recovered within 10 %" "$A_drift_ppm ppm vs $1 ppm"
}

# agent_step_unseen WHAT: true (and an ok line for WHAT) when the agent
# found no step and its evidence could not show one.  Found only from
# windows, a step takes eight commands in a row that contradict the
# estimate (user/lib/model/clock.c; docs/agent.md, "placed on the host
# clock"); a load that stalls the guest right at the step leaves after it
# only commands whose windows hold their records on either clock.
# agent_check_attribution's A_after_* count, of the commands with records
# at or after the producer's step, those with a record outside their
# window or refused (on the agent's clock, which without a step is the
# one from before it): fewer than eight, and no rule of the agent's could
# have found the step.  Eight or more, and the agent missed it: the check
# that called this one holds the agent to the step.
agent_step_unseen() {
	[ -z "$A_step_ns" ] && [ "${A_steps:-0}" = 0 ] && [ -n "$A_after_outside" ] &&
		[ "$A_after_outside" -lt 8 ] || return 1
	tap_ok "$1: no step found, and none was in the evidence: of the $A_after_commands commands with records at or after it, $A_after_outside contradict the clock from before it (a step takes 8 in a row; narrowest window $A_after_narrowest_ns ns)"
}

# agent_check_step_size STEP_NS DRIFT_PPM: the step's measured size (a
# +STEP_NS firmware clock lowers host - fw by STEP_NS host ns a firmware ns:
# STEP_NS (1 + b), b the true drift in DRIFT_PPM) held to the agent's own
# evidence: within its bound (step_err_ns, what it tells its user: the two
# sides' intersection half widths and what the drift's bound moves each
# side's commands over their distance from the step), and that bound below
# half the step, so that the agent resolved a step at all.  Each side's
# offset is the middle of its intersection, off by half the difference of
# the fastest submit->fetch and cqe_posted->complete in it; under TCG on a
# loaded host those minima differ by tens of us from one side to the
# other, which the bound covers and a fixed threshold would not.
agent_check_step_size() {
	agent_step_unseen "offset step of $1 ns" && return
	awk -v s="$A_step_ns" -v w="$1" -v b="${2:-0}" \
		'BEGIN { e = s + w * (1 + b * 1e-6); if (e < 0) e = -e; printf "%.0f\n", e }' \
		> "$HMB_RESULTS/step-err.txt"
	awk -v s="$A_step_ns" -v e="$(cat "$HMB_RESULTS/step-err.txt")" -v b="$A_step_err_ns" -v w="$1" \
		'BEGIN { exit !(s != "" && b != "" && e <= b + 0 && 2 * b < w) }' &&
		tap_ok "offset step of $1 ns (at drift ${2:-0} ppm) recovered within the agent's bound, itself below half the step (agent: $A_step_ns ns, bound $A_step_err_ns ns; error $(cat "$HMB_RESULTS/step-err.txt") ns)" ||
		tap_fail "offset step recovered within the agent's bound, below half the step" "agent step_ns '$A_step_ns' (bound '$A_step_err_ns'), want -$1 at drift ${2:-0} ppm, error $(cat "$HMB_RESULTS/step-err.txt") ns"
}

# agent_check_step_seq WANT_SEQ: the step held to the agent's own
# evidence (docs/formats.md, "Firmware times are never rewritten").  Its
# bracket (step_lo_seq, step_hi_seq] is what the host windows prove: the
# last record on the old clock and the first on the new one; inside it the
# agent places the step by the firmware times' jump and marks the records
# between as step_bracket.  So the producer's first record on the new
# clock must lie in the bracket, and so must the agent's step_seq; where
# the agent gives no bracket it claims the very record.
agent_check_step_seq() {
	agent_step_unseen "the step's record (seq $1)" && return
	if [ -z "$A_step_lo_seq" ] || [ -z "$A_step_hi_seq" ]; then
		[ -n "$1" ] && [ "$A_step_seq" = "$1" ] &&
			tap_ok "no bracket: the agent placed the step at the very record the producer stepped at (seq $A_step_seq)" ||
			tap_fail "step placed at the producer's record (no bracket given)" "agent '$A_step_seq', producer '$1'"
		return
	fi
	[ -n "$1" ] && [ -n "$A_step_seq" ] &&
		[ "$A_step_lo_seq" -lt "$1" ] && [ "$1" -le "$A_step_hi_seq" ] &&
		[ "$A_step_lo_seq" -lt "$A_step_seq" ] && [ "$A_step_seq" -le "$A_step_hi_seq" ] &&
		tap_ok "the producer's step record (seq $1) lies in the agent's bracket (seq $A_step_lo_seq, $A_step_hi_seq], and so does its step_seq $A_step_seq ($(if [ "$A_step_seq" = "$1" ]; then echo exact; else echo "$((A_step_seq - $1)) records off"; fi))" ||
		tap_fail "step inside the agent's bracket" "producer '$1', agent step_seq '$A_step_seq' bracket ('$A_step_lo_seq', '$A_step_hi_seq']"
}

# agent_check_losses BRIDGE_RECORDS: no ring buffer failure, and the agent
# saw at most what the bridge emitted
agent_check_losses() {
	[ "$A_ringbuf_reserve_failed" = 0 ] && tap_ok "zero ring buffer reservation failures" ||
		tap_fail "ring buffer reservations failed" "$A_ringbuf_reserve_failed"
	tap_diag "agent saw $A_fw_records firmware records, bridge emitted $1"
	[ -n "$A_fw_records" ] && [ "$A_fw_records" -gt 0 ] && [ "$A_fw_records" -le "$1" ] &&
		tap_ok "agent's firmware record count ($A_fw_records) within the bridge's ($1)" ||
		tap_fail "agent's firmware record count" "agent $A_fw_records bridge $1"
}

# ch_relay_prepare DIR: have the VM host's fleet-live serve a one-shard
# ClickHouse cluster in DIR/ch (DIR under $HMB_RESULTS) from now on (hostcmd
# start fleet-ch), so that it is up when ch_relay_start needs it; it stops
# at ch_relay_stop, or with vm-run's cleanup if the suite ends first.
# CH_RELAY_CH is DIR/ch as the host names it (for fleet-live check).
ch_relay_prepare() {
	CH_RELAY_CH=@RESULTS@${1#"$HMB_RESULTS"}/ch
	hostcmd start fleet-ch fleet-live serve "$CH_RELAY_CH" @REPO@ > /dev/null
}

# ch_relay_stop: stop the relay's httpd and the host's cluster.
ch_relay_stop() {
	kill "$CH_RELAY_PID" 2>/dev/null
	hostcmd stop fleet-ch > /dev/null 2>&1
}

# ch_relay_start DIR PORT: a ClickHouse for hmb-trace-agent --export
# http://127.0.0.1:PORT/cgi-bin/ch, although the guest has no network: it
# waits for the cluster of ch_relay_prepare DIR (DIR.../ch.url, 300 s at
# most), then busybox httpd on the loopback runs a CGI that writes each
# request into DIR (REQ.q the URL's query string, REQ.body the body), has
# fleet-live relay it to that server (hostcmd) and answers with the
# server's status and answer.  CH_RELAY_PID is the httpd.  1 if the
# cluster is not up (DIR/start.out says why).
ch_relay_start() {
	_dir=$1
	_www=/tmp/ch-relay-www
	_hdir=@RESULTS@${_dir#"$HMB_RESULTS"}
	mkdir -p "$_www/cgi-bin" "$_dir"
	_i=0
	while [ ! -s "$_dir/ch.url" ] && [ $_i -lt 3000 ]; do
		usleep 100000; _i=$((_i + 1))
	done
	if [ ! -s "$_dir/ch.url" ]; then
		hostcmd wait fleet-ch 1 > "$_dir/start.out" 2>&1
		return 1
	fi
	cat > "$_www/cgi-bin/ch" <<EOF
#!/bin/sh
# one request, relayed as it came (hostcmd serialises them)
exec 2>>"$_dir/cgi.err"
n=\$(flock "$_dir/.lock" sh -c 'n=\$(cat "$_dir/.n" 2>/dev/null || echo 0); echo \$((n + 1)) | tee "$_dir/.n"')
req=\$(printf '%06d' "\$n")
printf '%s\n' "\${QUERY_STRING:-}" > "$_dir/\$req.q"
head -c "\${CONTENT_LENGTH:-0}" > "$_dir/\$req.body"
if hostcmd run fleet-live relay "$CH_RELAY_CH" "$_hdir/\$req" > "$_dir/\$req.ans"; then
	st=\$(head -1 "$_dir/\$req.ans")
else
	st=502
	echo "fleet-live relay failed" >> "$_dir/\$req.ans"
fi
# busybox httpd passes a reply that starts with a status line through
printf 'HTTP/1.0 %s relayed\r\nContent-Type: text/plain\r\nConnection: close\r\n\r\n' "\$st"
tail -n +2 "$_dir/\$req.ans"
rm -f "$_dir/\$req.body"
EOF
	chmod +x "$_www/cgi-bin/ch"
	ip link set lo up 2>/dev/null || ifconfig lo 127.0.0.1 up
	httpd -f -p "127.0.0.1:$2" -h "$_www" &
	CH_RELAY_PID=$!
	usleep 300000
}
