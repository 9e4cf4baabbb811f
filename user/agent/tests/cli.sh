#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# cli.sh AGENT: option checks of hmb-trace-agent (TAP).  Bad values exit 2
# with a message naming the option; --ringbuf-mb sizes the BPF ring buffer
# the running agent really has (its map fd's /proc fdinfo); --issue-stamp
# chooses block mode's programs (the prog ids of its fds); --trigger's
# usage errors, and an armed agent's firings and counts.  Needs root
# for the running parts (block mode: no NVMe or module needed).
set -u
agent=${1:?usage: cli.sh AGENT}
. "$(dirname "$0")/../../../scripts/lib/tap.sh"
tmp=$(mktemp -d)
trap 'kill $apid 2>/dev/null; rm -rf "$tmp"' EXIT
apid=

for v in 0 3 2048 abc -4; do
	"$agent" --ringbuf-mb "$v" >/dev/null 2>"$tmp/err"
	rc=$?
	tap_run "--ringbuf-mb $v: exit 2, bad usage ($rc)" [ "$rc" = 2 ]
	tap_run "--ringbuf-mb $v: the error names the option" grep -q -- "--ringbuf-mb '$v'" "$tmp/err"
done
tap_run "--help lists --ringbuf-mb" sh -c "'$agent' --help | grep -q -- --ringbuf-mb"

# One agent, one firmware clock: its rings belong to one controller.
"$agent" --ring-ctrl 0=0 --ring-ctrl 1=1 >/dev/null 2>"$tmp/err"
rc=$?
tap_run "--ring-ctrl to two controllers: exit 2 ($rc)" [ "$rc" = 2 ]
tap_run "--ring-ctrl to two controllers: the error says why" grep -q -- "--ring-ctrl '1=1': ring 0 already belongs to nvme0" "$tmp/err"
"$agent" --ring-ctrl 0=0 --ring-ctrl 1=0 --ring-ctrl 0=0 --help >/dev/null 2>"$tmp/err"
rc=$?
tap_run "--ring-ctrl: several rings to one controller are accepted ($rc)" [ "$rc" = 0 ]

# A running agent's ring buffer has the size asked for.
"$agent" -m block --ringbuf-mb 2 1 3 >"$tmp/out" 2>"$tmp/agent.err" &
apid=$!
found=
for _ in $(seq 100); do
	# the agent's own fds: the ring buffer map is map_type 27
	# two: "rb" (the commands) and "rawrb" (-w's records: one page without -w)
	found=$(grep -l '^map_type:[[:space:]]*27$' /proc/$apid/fdinfo/* 2>/dev/null |
		xargs -r grep -h '^max_entries' | awk '{ print $2 }' | sort -n | tr '\n' ' ')
	[ "$(echo $found | wc -w)" = 2 ] && break
	kill -0 $apid 2>/dev/null || break
	sleep 0.1
done
tap_run "the running agent's ring buffers: '$found' (2 MiB asked; -w's one page without -w)" [ "$found" = "$(getconf PAGESIZE) 2097152 " ]
wait $apid
rc=$?
tap_run "block-mode agent with --ringbuf-mb 2 exits 0 ($rc)" [ "$rc" = 0 ] || cat "$tmp/agent.err" | sed 's/^/# /'

# Percentiles where every command reaches user space (--per-command), of
# the commands it printed; none in block mode's summary without it (only
# the slow ones come up).
"$agent" -m block -j --per-command 1 3 >"$tmp/pct.jsonl" 2>"$tmp/agent.err" &
apid=$!
sleep 1
io="$(dirname "$agent")/.pct-io.$$"	# on disk: /tmp may be a tmpfs
dd if=/dev/zero of="$io" bs=4k count=500 oflag=direct 2>/dev/null ||
	dd if=/dev/zero of="$io" bs=4k count=500 conv=fsync 2>/dev/null
wait $apid
msg=$(python3 "$(dirname "$0")/pct-check.py" "$tmp/pct.jsonl" 2>&1)
tap_run "--per-command: the summary's host_total percentiles are quantileExact's of the command lines ($msg)" [ $? = 0 ]
"$agent" -m block -j 1 1 >"$tmp/nopct.jsonl" 2>"$tmp/agent.err"
tap_run "block mode without --per-command: no percentiles from the slow commands alone" \
	sh -c "grep -q '\"type\":\"summary\"' '$tmp/nopct.jsonl' && ! grep -q '\"percentiles\"' '$tmp/nopct.jsonl'"
rm -f "$io"

# The options that take one of three words refuse anything else (a
# prefix, another case, a number, nothing) and name themselves and the
# words they take.
for o in "--issue-stamp:auto, kernel, bpf" "--fw-event:auto, batch, record" \
	 "-m:auto, nvme, block"; do
	opt=${o%%:*} words=${o#*:} name=${o%%:*}
	[ "$opt" = -m ] && name=mode
	for v in "" kern 1 AUTO batc; do
		"$agent" $([ "$opt" = -m ] || echo -m block) "$opt" "$v" >/dev/null 2>"$tmp/err"
		rc=$?
		tap_run "$opt '$v': exit 2, bad usage ($rc)" [ "$rc" = 2 ]
		tap_run "$opt '$v': the error names the option and its words" grep -q -- "invalid $name '$v' ($words)" "$tmp/err"
	done
done
tap_run "--help lists --issue-stamp" sh -c "'$agent' --help | grep -q -- --issue-stamp"

# --pid, --comm, --cgroup: bad values refused with one line naming them.
for t in "--pid:0:invalid --pid '0' (a process id, 1 to 4194304)" \
	 "--pid:x1:invalid --pid 'x1' (a process id, 1 to 4194304)" \
	 "--pid:4194305:invalid --pid '4194305' (a process id, 1 to 4194304)" \
	 "--comm::invalid --comm '' (a task name, 1 to 15 characters)" \
	 "--comm:sixteen-chars-xx:invalid --comm 'sixteen-chars-xx' (a task name, 1 to 15 characters)" \
	 "--cgroup:/nonexistent/hmb-cg:invalid --cgroup '/nonexistent/hmb-cg' (a cgroup v2 directory): No such file or directory"; do
	opt=${t%%:*} rest=${t#*:}
	v=${rest%%:*} want=${rest#*:}
	"$agent" -m block "$opt" "$v" >/dev/null 2>"$tmp/err"
	rc=$?
	tap_run "$opt '$v': exit 2, bad usage ($rc)" [ "$rc" = 2 ]
	tap_run "$opt '$v': one line, '$want'" sh -c "[ \$(wc -l <'$tmp/err') = 1 ] && grep -qF -- \"$want\" '$tmp/err'"
done
"$agent" -m block --issue-stamp kernel --comm dd 1 1 >/dev/null 2>"$tmp/err"
rc=$?
tap_run "--comm with --issue-stamp kernel: exit 1, the filter needs the program at issue ($rc)" \
	sh -c "[ $rc = 1 ] && grep -qF -- '--pid, --comm and --cgroup need a program at block_rq_issue' '$tmp/err'"

# --comm in block mode: dd's direct writes reported as dd's where the
# kernel dispatched them in dd (else its kworker's, filtered), and nothing
# of any other task; --comm naming nobody reports nothing and counts what
# it kept out.
io="$(dirname "$agent")/.who-io.$$"
for c in dd hmb-nobody; do
	"$agent" -m block -j --per-command --comm $c 1 1 >"$tmp/who-$c.jsonl" 2>"$tmp/agent.err" &
	apid=$!
	sleep 1
	dd if=/dev/zero of="$io" bs=4k count=200 oflag=direct 2>/dev/null ||
		dd if=/dev/zero of="$io" bs=4k count=200 conv=fsync 2>/dev/null
	wait $apid
	apid=
	rm -f "$io"
done
n_dd=$(grep -c '"type":"cmd"' "$tmp/who-dd.jsonl")
n_other=$(grep '"type":"cmd"' "$tmp/who-dd.jsonl" | grep -vc '"comm":"dd","cgroup"')
f_none=$(sed -n 's/.*"cmd_filtered":\([0-9]*\).*/\1/p' "$tmp/who-hmb-nobody.jsonl" | tail -n 1)
tap_run "--comm dd: $n_dd commands, each with pid, tid, comm dd and cgroup, none of another task ($n_other)" \
	[ "$n_other" = 0 ]
tap_run "--comm hmb-nobody: no command reported, the I/Os counted filtered (${f_none:-none})" \
	sh -c "! grep -q '\"type\":\"cmd\"' '$tmp/who-hmb-nobody.jsonl' && [ '${f_none:-0}' -gt 0 ]"
for v in bpf kernel auto; do
	"$agent" -m block -j --issue-stamp "$v" >"$tmp/out" 2>"$tmp/agent.err" &
	apid=$!
	for _ in $(seq 100); do
		grep -q '"type":"start"' "$tmp/out" && break
		kill -0 $apid 2>/dev/null || break
		sleep 0.1
	done
	# the agent's programs: the prog ids of its fds, by name
	names=$(grep -h '^prog_id:' /proc/$apid/fdinfo/* 2>/dev/null | awk '{ print $2 }' | sort -u |
		while read -r id; do bpftool prog show id "$id" 2>/dev/null |
			awk '/^[0-9]+:/ { for (i = 1; i < NF; i++) if ($i == "name") print $(i + 1) }'; done)
	issue=$(echo "$names" | grep -c '^blk_issue')
	complete=$(echo "$names" | grep -c '^blk_complete')
	kill -INT $apid
	wait $apid
	rc=$?
	apid=
	got=$(sed -n 's/.*"issue_stamp":"\([a-z]*\)".*/\1/p' "$tmp/out" | head -1)
	why=$(sed -n 's/.*"issue_stamp_why":"\([^"]*\)".*/\1/p' "$tmp/out" | head -1)
	tap_run "--issue-stamp $v: exits 0 ($rc)" [ "$rc" = 0 ]
	case $v in
	auto) want=$got ;;
	*) want=$v ;;
	esac
	tap_run "--issue-stamp $v: the start line says '$got' ($why)" [ -n "$got" -a "$got" = "$want" -a -n "$why" ]
	if [ "$got" = kernel ]; then
		tap_run "--issue-stamp $v: no program at issue, one at completion ($issue, $complete)" [ "$issue" = 0 -a "$complete" = 1 ]
	else
		tap_run "--issue-stamp $v: a program at issue and one at completion ($issue, $complete)" [ "$issue" = 1 -a "$complete" = 1 ]
	fi
done

# --trigger: a bad expression is one line with its column and why, exit 2
# (before anything is loaded); so is a ninth trigger.
for t in "host_total>5xs:column 13: unknown unit 'xs'" \
	 "nosuch_event:column 1: the event dictionary has no event or background group 'nosuch_event'" \
	 "read:gc:column 8: '>' and a threshold are expected"; do
	e=${t%%:column*} want=column${t#*:column}
	"$agent" -m block --trigger "$e" >/dev/null 2>"$tmp/err"
	rc=$?
	tap_run "--trigger '$e': exit 2 ($rc)" [ "$rc" = 2 ]
	tap_run "--trigger '$e': one line, '$want'" sh -c "[ \$(wc -l <'$tmp/err') = 1 ] && grep -qF -- \"--trigger '$e': $want\" '$tmp/err'"
done
"$agent" -m block $(for i in 1 2 3 4 5 6 7 8 9; do echo --trigger reset; done) >/dev/null 2>"$tmp/err"
rc=$?
tap_run "nine --trigger: exit 2, at most 8 ($rc)" sh -c "[ $rc = 2 ] && grep -q 'at most 8 triggers' '$tmp/err'"

# An armed block-mode agent: a line per firing, the summary counts them.
"$agent" -m block -j --trigger 'host_total>1ns' --trigger 'write:host_total>3600s' 1 2 \
	>"$tmp/trig.jsonl" 2>"$tmp/agent.err" &
apid=$!
sleep 1
io="$(dirname "$agent")/.trig-io.$$"
dd if=/dev/zero of="$io" bs=4k count=200 oflag=direct 2>/dev/null ||
	dd if=/dev/zero of="$io" bs=4k count=200 conv=fsync 2>/dev/null
wait $apid
rc=$?
apid=
rm -f "$io"
lines=$(grep -c '"type":"trigger","trigger":1,' "$tmp/trig.jsonl")
other=$(grep -c '"type":"trigger","trigger":2,' "$tmp/trig.jsonl")
fired=$(grep '"type":"summary"' "$tmp/trig.jsonl" | sed -n 's/.*"triggers":\[{"trigger":1,[^}]*"fired":\([0-9]*\),"reported":\([0-9]*\).*/\1 \2/p')
tap_run "armed agent exits 0 ($rc)" [ "$rc" = 0 ]
tap_run "host_total>1ns: firings on the I/Os ($lines lines), the summary's fired and reported agree ($fired)" \
	[ "$lines" -gt 0 -a "$fired" = "$lines $lines" ]
tap_run "write:host_total>3600s: no firing ($other)" [ "$other" = 0 ]
# who issued the firing command: known with a program at issue, not on
# the request's own stamp
who=$(grep '"type":"trigger","trigger":1,' "$tmp/trig.jsonl" | grep -c '"pid":[0-9]*,"tid":[0-9]*,"comm":"[^"]*","cgroup":[0-9]*')
stamp=$(sed -n 's/.*"issue_stamp":"\([a-z]*\)".*/\1/p' "$tmp/trig.jsonl" | head -n 1)
if [ "$stamp" = bpf ]; then want=$lines; else want=0; fi
tap_run "firings name who issued the command where the programs know it (issue stamp $stamp: $who of $lines)" \
	[ "$who" = "$want" ]
tap_done
