#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# snap.sh AGENT T_SNAP: the agent's flight recorder (--snapshot-dir), TAP.
#  - its options' usage errors: one line, exit 2;
#  - the window and the bundle without BPF (t_snap feeds snap.c a
#    hmb-cmdgen dump and its host lines as the agent does): every file
#    there and parseable, hmb-trace-analyze stats and correlate exit 0
#    on it, the records it holds plus those evicted are all there were,
#    the window stays within --window-mb and evicts by budget and by age,
#    and the lines of commands done before it, which came late, are not
#    in it; a line too long for the agent's buffer is counted, and the
#    lines after it are in; only the lines a bundle holds are formatted,
#    by its writer;
#  - a running block-mode agent (root, as cli.sh): SIGUSR1 caught from
#    the start, a bundle on SIGUSR1 and one on a trigger, holdoff and
#    max-snapshots suppression counted, a line each.
# HMB_SNAP_NO_AGENT=1: t_snap's part only (make check-asan, on its ASan
# build).
set -u
agent=${1:?usage: snap.sh AGENT T_SNAP}
tsnap=${2:?usage: snap.sh AGENT T_SNAP}
bin=$(dirname "$agent")
analyze=$bin/hmb-trace-analyze
cmdgen=$bin/hmb-cmdgen
. "$(dirname "$0")/../../../scripts/lib/tap.sh"
tmp=$(mktemp -d)
apid=
trap '[ -n "$apid" ] && kill $apid 2>/dev/null; rm -rf "$tmp"' EXIT

# Usage errors: exit 2, one line that names the option.
while IFS='|' read -r args want; do
	# shellcheck disable=SC2086
	"$agent" -m block $args >/dev/null 2>"$tmp/err"
	rc=$?
	tap_run "$args: exit 2 ($rc)" [ "$rc" = 2 ]
	tap_run "$args: one line, '$want'" sh -c "[ \$(wc -l <'$tmp/err') = 1 ] && grep -qF -- \"$want\" '$tmp/err'"
done <<'LIST'
--pre 1|--pre needs --snapshot-dir DIR
--post 1|--post needs --snapshot-dir DIR
--window-mb 8|--window-mb needs --snapshot-dir DIR
--holdoff 0|--holdoff needs --snapshot-dir DIR
--max-snapshots 1|--max-snapshots needs --snapshot-dir DIR
--snapshot-dir /tmp --pre abc|invalid --pre 'abc'
--snapshot-dir /tmp --pre 0|invalid --pre '0'
--snapshot-dir /tmp --post -1|invalid --post '-1'
--snapshot-dir /tmp --window-mb 0|invalid --window-mb '0'
--snapshot-dir /tmp --window-mb 16385|invalid --window-mb '16385'
--snapshot-dir /tmp --holdoff 1s|invalid --holdoff '1s'
--snapshot-dir /tmp --max-snapshots x|invalid --max-snapshots 'x'
--snapshot-dir=|--snapshot-dir needs a directory
LIST
# A directory that is not there: an error (exit 1), one line, before
# anything is loaded (no root needed to say it).
"$agent" -m block --snapshot-dir "$tmp/none" >/dev/null 2>"$tmp/err"
rc=$?
tap_run "--snapshot-dir that does not exist: exit 1 ($rc)" [ "$rc" = 1 ]
tap_run "--snapshot-dir that does not exist: one line naming it" sh -c "[ \$(wc -l <'$tmp/err') = 1 ] && grep -q -- '--snapshot-dir $tmp/none: No such file' '$tmp/err'"
tap_run "--help lists --snapshot-dir with an example" sh -c "'$agent' --help | grep -q -- '--trigger .* --snapshot-dir'"

# jq-free checks of a bundle: every file there and parseable JSON.
bundle_ok() {	# DIR WHAT
	local d=$1 what=$2 f
	for f in trace.bin trace.bin.meta host.jsonl clock.json trigger.json snapshot.json; do
		tap_run "$what: $f there" [ -f "$d/$f" ]
	done
	tap_run "$what: the JSON files parse" python3 -c '
import json, sys
d = sys.argv[1]
for f in ("clock.json", "trigger.json", "snapshot.json"):
    json.load(open(d + "/" + f))
for l in open(d + "/host.jsonl"):
    json.loads(l)
' "$d"
	"$analyze" stats "$d/trace.bin" >"$tmp/stats" 2>&1
	tap_run "$what: hmb-trace-analyze stats exits 0 ($?)" [ $? = 0 ] || sed 's/^/# /' "$tmp/stats"
}
# KEY of snapshot.json (a python expression on s)
sj() { python3 -c 'import json,sys; s=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$1/snapshot.json" "$2"; }

# --- the window and the bundle, fed by t_snap
"$cmdgen" -n 20000 --dump "$tmp/a.bin" --host "$tmp/a.jsonl" >"$tmp/truth.json"
recs=$("$analyze" stats "$tmp/a.bin" | sed -n 's/^records: *\([0-9]*\) decoded.*/\1/p')
hosts=$(wc -l <"$tmp/a.jsonl")
# edge: --pre 98.5 s reaches back to t = 1.5 s, the window (with its 2 s
# more) to t = 0: the first half (t = 1 s) is held but before the start
for c in "full:64:1000" "budget:1:1000" "age:64:2" "late:64:2" "edge:64:98.5"; do
	name=${c%%:*} rest=${c#*:} mb=${rest%%:*} pre=${rest#*:}
	late=; [ "$name" = late ] && late=late
	mkdir "$tmp/$name"
	# shellcheck disable=SC2086
	"$tsnap" "$tmp/a.bin" "$tmp/a.jsonl" "$tmp/$name" "$mb" "$pre" $late >"$tmp/$name.json" 2>"$tmp/$name.err"
	tap_run "t_snap $name: exits 0 ($?)" [ $? = 0 ] || sed 's/^/# /' "$tmp/$name.err"
	b=$(ls -d "$tmp/$name"/SNAP-*-test 2>/dev/null | head -1)
	tap_run "t_snap $name: one bundle SNAP-<time>-test ($b)" [ -n "$b" -a "$(ls "$tmp/$name" | wc -l)" = 1 ]
	[ -n "$b" ] || continue
	bundle_ok "$b" "t_snap $name"
	"$analyze" correlate "$b/trace.bin" "$b/host.jsonl" -j --no-commands >"$tmp/corr" 2>&1
	rc=$?
	matched=$(python3 -c 'import json,sys; print([json.loads(l) for l in open(sys.argv[1])][-1]["totals"]["matched"])' "$tmp/corr" 2>/dev/null)
	tap_run "t_snap $name: correlate exits 0 and matches commands ($rc, ${matched:-none})" [ "$rc" = 0 -a "${matched:-0}" -gt 0 ]
	held=$(sj "$b" 's["fw"][0]["records"]')
	ev=$(sj "$b" 's["evicted_by_age"]["fw_records"] + s["evicted_by_budget"]["fw_records"] + s["fw_records_before_window"]')
	tap_eq "t_snap $name: records held + evicted + before the window = the dump's" "$((held + ev))" "$recs"
	inside=$("$analyze" stats "$b/trace.bin" | sed -n 's/^records: *\([0-9]*\) decoded.*/\1/p')
	tap_eq "t_snap $name: snapshot.json's count is the dump's" "$inside" "$held"
	lost=$("$analyze" stats "$b/trace.bin" | sed -n 's/^lost: *\([0-9]*\) records.*/\1/p')
	tap_eq "t_snap $name: lost by the ring inside it, as stats counts" "$(sj "$b" 's["fw"][0]["lost_by_ring"]')" "$lost"
	tap_run "t_snap $name: the window held at most --window-mb" \
		[ "$(sj "$b" 's["window_held_bytes"] <= s["window_bytes"] == '$mb' << 20')" = True ]
	tap_eq "t_snap $name: the line past the window's end left out, counted" \
		"$(sj "$b" 's["after_window"]["host_commands"]')" 1
	# budget: a 1 MiB window, the long line evicted before the writer came
	want=1; [ "$name" = budget ] && want=0
	tap_eq "t_snap $name: the line too long for the agent's buffer counted too_big" \
		"$(sj "$b" 's["too_big"]')" $want
	tap_eq "t_snap $name: only the lines the bundle holds formatted, in its writer" \
		"$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["formatted"])' "$tmp/$name.json")" \
		"$(($(wc -l <"$b/host.jsonl") + $(sj "$b" 's["too_big"]')))"
	case $name in
	full) tap_eq "t_snap full: nothing evicted" "$ev" 0
	      tap_eq "t_snap full: every other line in host.jsonl" "$(wc -l <"$b/host.jsonl")" "$hosts"
	      tap_eq "t_snap full: 6 lost, as hmb-cmdgen made" "$lost" 6 ;;
	budget) tap_run "t_snap budget: records evicted by budget, none by age ($ev)" \
		[ "$ev" -gt 0 -a "$(sj "$b" 's["evicted_by_age"]["fw_records"]')" = 0 ] ;;
	age) tap_eq "t_snap age: the first half evicted by age" "$(sj "$b" 's["evicted_by_age"]["fw_records"]')" "$((recs / 2))"
	     tap_eq "t_snap age: none by budget" "$(sj "$b" 's["evicted_by_budget"]["fw_records"]')" 0 ;;
	late) # the lines of commands done before the window, which came
	      # behind its records, are not in: both sides span the window
	      tap_eq "t_snap late: host.jsonl holds the second half only" \
		"$(wc -l <"$b/host.jsonl")" "$((hosts - hosts / 2))"
	      tap_eq "t_snap late: snapshot.json counts the first half as before the window" \
		"$(sj "$b" 's["host_commands_before_window"]')" "$((hosts / 2))"
	      tap_eq "t_snap late: both sides from the window's start" \
		"$(sj "$b" '[s["fw_records_monotonic_ns"][0], s["host_completed_monotonic_ns"][0]]')" \
		"[100000000000, 100000000000]" ;;
	edge) tap_eq "t_snap edge: nothing evicted" \
		"$(sj "$b" 's["evicted_by_age"]["fw_records"] + s["evicted_by_budget"]["fw_records"]')" 0
	      tap_eq "t_snap edge: the first half of the records before the window, left out" \
		"$(sj "$b" 's["fw_records_before_window"]')" "$((recs / 2))"
	      tap_eq "t_snap edge: and of the host lines" \
		"$(sj "$b" 's["host_commands_before_window"]')" "$((hosts / 2))"
	      tap_eq "t_snap edge: both sides from the window's start" \
		"$(sj "$b" '[s["fw_records_monotonic_ns"][0], s["host_completed_monotonic_ns"][0]]')" \
		"[100000000000, 100000000000]" ;;
	esac
done

# --- a running agent (block mode: host commands only; root for BPF)
if [ -n "${HMB_SNAP_NO_AGENT:-}" ]; then
	tap_skip "running agent" "HMB_SNAP_NO_AGENT: t_snap's part only, as check-asan runs it"
	tap_done
	exit
fi
if [ "$(id -u)" != 0 ]; then
	tap_skip "running agent" "needs root (BPF)"
	tap_done
	exit
fi
io() {	# some I/O the block-mode agent sees
	local f="$bin/.snap-io.$$"
	dd if=/dev/zero of="$f" bs=4k count=${1:-50} oflag=direct 2>/dev/null ||
		dd if=/dev/zero of="$f" bs=4k count=${1:-50} conv=fsync 2>/dev/null
	rm -f "$f"
}
# SigCgt of the process has SIGUSR1 (10): bit 9
caught_usr1() {
	local m
	m=$(sed -n 's/^SigCgt:[[:space:]]*//p' /proc/$1/status 2>/dev/null)
	[ -n "$m" ] && [ $((0x$m & 512)) != 0 ]
}
start() {	# OUTDIR ARGS...: the agent in the background, $apid
	local o=$1; shift
	mkdir -p "$o/snaps"
	"$agent" -m block -j --snapshot-dir "$o/snaps" "$@" >"$o/out.jsonl" 2>"$o/err" &
	apid=$!
}
stop() {
	kill -INT $apid; wait $apid; rc=$?; apid=
}
summary() {	# OUTDIR EXPR on the summary's "snapshots" object s
	python3 -c '
import json, sys
s = [json.loads(l) for l in open(sys.argv[1]) if "\"summary\"" in l][-1]["snapshots"]
print(eval(sys.argv[2]))' "$1/out.jsonl" "$2"
}

# SIGUSR1 as early as the agent catches it, before it is ready: no death,
# and the snapshot is taken once it is.
o=$tmp/usr1
start "$o" --pre 5 --post 0.2
for _ in $(seq 500); do caught_usr1 $apid && break; sleep 0.01; done
# from then on, SIGUSR1s until it is ready (its start line)
early=0
for _ in $(seq 1000); do
	grep -q '"type":"start"' "$o/out.jsonl" && break
	kill -USR1 $apid 2>/dev/null || break
	early=$((early + 1))
	sleep 0.005
done
[ $early = 0 ] && kill -USR1 $apid
io 50
for _ in $(seq 50); do ls "$o/snaps" | grep -q sigusr1 && break; sleep 0.1; done
kill -0 $apid 2>/dev/null
tap_run "SIGUSR1 before the agent was ready ($early of them) did not kill it" [ $? = 0 ]
stop
tap_eq "agent with --snapshot-dir exits 0 on SIGINT" "$rc" 0
b=$(ls -d "$o"/snaps/SNAP-*-sigusr1 2>/dev/null | head -1)
tap_run "SIGUSR1: a bundle SNAP-<time>-sigusr1 ($b)" [ -n "$b" ]
if [ -n "$b" ]; then
	bundle_ok "$b" "SIGUSR1 bundle"
	tap_run "SIGUSR1 bundle: trigger.json names the signal" grep -q '"signal":"SIGUSR1"' "$b/trigger.json"
	tap_run "SIGUSR1 bundle: host commands in host.jsonl ($(wc -l <"$b/host.jsonl"))" [ -s "$b/host.jsonl" ]
fi
tap_eq "summary: 1 written" "$(summary "$o" 's["written"]')" 1

# Without --snapshot-dir a SIGUSR1 is said to be ignored, and kills nothing.
"$agent" -m block -j >"$tmp/plain.jsonl" 2>"$tmp/plain.err" &
apid=$!
for _ in $(seq 100); do grep -q '"type":"start"' "$tmp/plain.jsonl" && break; sleep 0.1; done
kill -USR1 $apid; kill -USR1 $apid
sleep 0.3
stop
tap_eq "unarmed agent: SIGUSR1 does not kill it, exit 0" "$rc" 0
tap_eq "unarmed agent: one line says SIGUSR1 is ignored" "$(grep -c 'SIGUSR1 ignored: no --snapshot-dir' "$tmp/plain.err")" 1

# A trigger on every I/O, --holdoff 3600: one bundle, the rest suppressed
# by holdoff (after the first's --post), each with its line.
o=$tmp/hold
start "$o" --trigger 'host_total>1ns' --post 0.2 --holdoff 3600
for _ in $(seq 100); do grep -q '"type":"start"' "$o/out.jsonl" && break; sleep 0.1; done
io 20; sleep 0.5; io 20; sleep 0.3
stop
b=$(ls -d "$o"/snaps/SNAP-*-trigger1 2>/dev/null | head -1)
tap_run "trigger: a bundle SNAP-<time>-trigger1 ($b)" [ -n "$b" ]
if [ -n "$b" ]; then
	bundle_ok "$b" "trigger bundle"
	tap_run "trigger bundle: trigger.json has the expression and the command" \
		grep -q '"expr":"host_total>1ns".*"cmd":{' "$b/trigger.json"
fi
tap_eq "--holdoff: one bundle" "$(ls "$o/snaps" | wc -l)" 1
h=$(summary "$o" 's["suppressed_holdoff"]')
tap_run "--holdoff 3600: later firings suppressed by holdoff ($h)" [ "${h:-0}" -gt 0 ]
tap_eq "--holdoff: a line per suppression" "$(grep -c 'snapshot suppressed' "$o/err")" "$(summary "$o" 's["suppressed"]')"

# --max-snapshots 1 --holdoff 0: one bundle, the rest suppressed by max.
o=$tmp/max
start "$o" --trigger 'host_total>1ns' --post 0.1 --holdoff 0 --max-snapshots 1
for _ in $(seq 100); do grep -q '"type":"start"' "$o/out.jsonl" && break; sleep 0.1; done
io 20; sleep 0.5; io 20; sleep 0.3
stop
tap_eq "--max-snapshots 1: one bundle" "$(ls "$o/snaps" | wc -l)" 1
m=$(summary "$o" 's["suppressed_max"]')
tap_run "--max-snapshots 1: later firings suppressed by max ($m)" [ "${m:-0}" -gt 0 ]
tap_eq "--max-snapshots: a line per suppression" "$(grep -c 'snapshot suppressed' "$o/err")" "$(summary "$o" 's["suppressed"]')"
tap_done
