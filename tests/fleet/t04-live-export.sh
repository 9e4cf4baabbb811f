#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# t04-live-export.sh AGENT: hmb-trace-agent --export against real servers.
# Two clickhouse-server shards (scripts/fleet/ch-cluster);
# the agent in its block-layer mode on a loop device (no NVMe or module
# needed: every completed request is a command row) while fio runs; the
# shard the agent talks to, which also holds this host's rows, is killed
# in the middle and restarted a few seconds later.  Checked:
#   - the agent exits 0 and its summary accounts for every row: made =
#     inserted + dropped, nothing left unexported;
#   - the store holds exactly the inserted rows, each once (cmd_id unique,
#     0..N-1 with the dropped ones never numbered);
#   - every row made is in the store or counted in a losses row
#     (layer agent, counter export_dropped) that reached the store too;
#   - rows made = requests the agent counted (its host_complete counter);
#   - a small queue while the server is down does drop rows (the test of
#     the counting is not vacuous);
#   - the clock table has the agent's host_open row (the host's clocks at
#     start: realtime - monotonic = the offset the commands rows use);
#   - every nonzero loss counter of the agent's summary (BPF side and
#     agent) is a losses row with the same count, and no other bpf row;
#   - block mode has no firmware records: fw_records gets none.
# The fw_records rows of a live run need firmware records (a VM with the
# module and the simulator); the row writer they go through is the
# offline export's, checked by t01.
# Needs root, BPF, fio, losetup and clickhouse-server (CI has them all).
set -u
agent=${1:?usage: t04-live-export.sh AGENT}
TOP=$(cd "$(dirname "$0")/../.." && pwd)
CLUSTER=$TOP/scripts/fleet/ch-cluster
SECS=${HMB_LIVE_EXPORT_SECS:-12}
. "$TOP/scripts/lib/tap.sh"

[ "$(id -u)" = 0 ] || tap_skip_all "needs root (BPF, losetup)"
command -v fio >/dev/null || tap_skip_all "fio missing (scripts/deps.sh vm)"
[ -r /sys/kernel/btf/vmlinux ] || tap_skip_all "kernel without BTF"
[ -x "$agent" ] || { tap_fail "agent $agent not built"; tap_done; }

work=$(mktemp -d /tmp/hmb-live-export.XXXXXX)
CH=$work/ch
loop=
apid=
cleanup() {
	[ -n "$apid" ] && kill -INT "$apid" 2>/dev/null && wait "$apid" 2>/dev/null
	[ -n "$loop" ] && losetup -d "$loop"
	"$CLUSTER" stop "$CH" >/dev/null 2>&1
	rm -rf "$work"
}
trap cleanup EXIT
q() { "$CLUSTER" query "$1" "$2"; }
jnum() {	# FILE PATH: a member of the summary line (export.rows, ...)
	python3 -c '
import json, sys
for line in open(sys.argv[1]):
    o = json.loads(line)
    if o.get("type") == "summary":
        for k in sys.argv[2].split("."):
            o = o.get(k, {}) if isinstance(o, dict) else {}
        print(o if o != {} else "")
        break' "$1" "$2"
}
# the summary's nonzero loss counters as "layer counter count" lines, sorted
want_losses() {
	python3 "$(dirname "$0")/t04-want-losses.py" "$1"
}

if ! "$CLUSTER" start "$CH" --shards 2 2>"$work/start.err"; then
	tap_fail "two clickhouse-server shards start: $(tail -n 5 "$work/start.err")"
	tap_done
	exit 1
fi
tap_ok "two clickhouse-server shards up with the schema"
. "$CH/env"
# a host name whose rows live on shard 1, the one the agent talks to
for k in $(seq 0 99); do
	[ "$(q "$CH_URL_2" "SELECT cityHash64('live-$k') % 2")" = 0 ] && { H=live-$k; break; }
done
tap_run "a host name on shard 1 ($H)" [ -n "${H:-}" ]

truncate -s 256M "$work/img"
loop=$(losetup -f --show --direct-io=on "$work/img") || { tap_fail "losetup"; tap_done; }
dev=${loop#/dev/}
udevadm settle 2>/dev/null || sleep 1

# run_agent TAG QUEUE: start the agent (block mode) exporting to shard 1
run_agent() {
	"$agent" -d "$dev" -m block -j -o "$work/$1.jsonl" --export "$CH_URL_1" \
		--export-hostname "$H-$1" --export-queue "$2" --export-wait 30000 \
		2>"$work/$1.err" &
	apid=$!
	for i in $(seq 100); do
		grep -q '"type":"start"' "$work/$1.jsonl" 2>/dev/null && break
		sleep 0.1
	done
}

# fio_for SECS: random 4k reads and writes on the loop device
fio_for() {
	fio --name=x --filename="$loop" --direct=1 --ioengine=psync --rw=randrw \
		--bs=4k --size=128M --time_based --runtime="$1" \
		--output-format=terse >"$work/fio.out" 2>&1
}

# verify TAG: the store against the agent's summary
verify() {
	local t=$1 host=$H-$1 made ins drop unexp lr cmp rows uniq maxid lsum hc
	made=$(jnum "$work/$t.jsonl" export.rows)
	ins=$(jnum "$work/$t.jsonl" export.inserted)
	drop=$(jnum "$work/$t.jsonl" export.dropped)
	unexp=$(jnum "$work/$t.jsonl" export.not_exported)
	lr=$(jnum "$work/$t.jsonl" export.losses_rows)
	hc=$(jnum "$work/$t.jsonl" counters.host_complete)
	tap_diag "$t: agent: rows $made inserted $ins dropped $drop not_exported $unexp losses_rows $lr host_complete $hc"
	read -r rows uniq maxid < <(q "$CH_URL_2" "SELECT count(), uniqExact(cmd_id), max(cmd_id) + 1 FROM hmb.commands WHERE host = '$host' FORMAT TabSeparated")
	lsum=$(q "$CH_URL_2" "SELECT sum(count) FROM hmb.losses WHERE host = '$host' AND layer = 'agent' AND counter = 'export_dropped'")
	tap_diag "$t: store: $rows rows, $uniq distinct ids, ids up to $maxid; export_dropped in losses: $lsum"
	tap_run "$t: every row made is inserted or dropped ($made = $ins + $drop), none unexported" \
		[ -n "$made" ] && [ "$made" -gt 1000 ] && [ $((ins + drop)) = "$made" ] && [ "$unexp" = 0 ]
	tap_run "$t: the store holds the $ins inserted rows once each (ids 0..$((maxid - 1)))" \
		[ "$rows" = "$ins" ] && [ "$uniq" = "$rows" ] && [ "$maxid" = "$rows" ]
	tap_run "$t: the $drop dropped rows are in the losses table ($lsum)" \
		[ "${lsum:-0}" = "$drop" ]
	tap_run "$t: one row per request the agent counted ($hc)" [ "$made" = "$hc" ]
	local clk want got fwr
	clk=$(q "$CH_URL_2" "SELECT count(), any(kind), any(host_ns) - any(monotonic_ns) > 0 FROM hmb.clock WHERE host = '$host' FORMAT TabSeparated")
	tap_run "$t: clock: the agent's host_open row (got '$clk')" \
		[ "$clk" = "$(printf '1\thost_open\t1')" ]
	want=$(want_losses "$work/$t.jsonl")
	got=$(q "$CH_URL_2" "SELECT layer, counter, count FROM hmb.losses WHERE host = '$host' AND layer = 'bpf' ORDER BY layer, counter FORMAT TSV" | tr '\t' ' ' | sort)
	tap_diag "$t: bpf loss counters: want [${want//$'\n'/; }] got [${got//$'\n'/; }]"
	tap_run "$t: every nonzero BPF loss counter of the summary is a losses row with its count" \
		[ "$got" = "$want" ]
	fwr=$(q "$CH_URL_2" "SELECT count() FROM hmb.fw_records WHERE host = '$host'")
	tap_run "$t: block mode: no fw_records rows ($fwr), the summary says 0 made" \
		[ "$fwr" = 0 ] && [ "$(jnum "$work/$t.jsonl" export.tables.fw_records.rows)" = 0 ]
	tap_run "$t: losses rows in the summary ($lr) = rows in the store" \
		[ "$lr" = "$(q "$CH_URL_2" "SELECT count() FROM hmb.losses WHERE host = '$host'")" ]
}

# 1: a server killed mid-export and restarted; the queue holds the outage
run_agent big 1000000
fio_for "$SECS" &
fpid=$!
sleep $((SECS / 3))
"$CLUSTER" kill "$CH" 1
tap_diag "shard 1 killed at $((SECS / 3)) s"
sleep 4
"$CLUSTER" restart "$CH" 1 >/dev/null 2>&1 && tap_diag "shard 1 back" || tap_fail "restart shard 1"
wait $fpid
kill -INT "$apid"
wait "$apid"
rc=$?
apid=
tap_run "big queue: agent exits 0 after the outage (rc $rc)" [ "$rc" = 0 ]
tap_run "big queue: the agent retried while the server was down" \
	[ "$(jnum "$work/big.jsonl" export.retries)" -gt 0 ]
verify big

# 2: a small queue: the outage overflows it; drops counted and reported
run_agent small 64
fio_for "$SECS" &
fpid=$!
sleep $((SECS / 3))
"$CLUSTER" kill "$CH" 1
sleep 4
"$CLUSTER" restart "$CH" 1 >/dev/null 2>&1 || tap_fail "restart shard 1 (small queue)"
wait $fpid
kill -INT "$apid"
wait "$apid"
rc=$?
apid=
tap_run "small queue: agent exits 0 (rc $rc)" [ "$rc" = 0 ]
tap_run "small queue: rows were dropped while the server was down ($(jnum "$work/small.jsonl" export.dropped))" \
	[ "$(jnum "$work/small.jsonl" export.dropped)" -gt 0 ]
verify small
[ "$tap_failed" = 0 ] || { tap_diag "agent stderr:"; sed 's/^/#   /' "$work"/*.err | tail -20; }
tap_done
