#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# The fleet store against real servers: two clickhouse-server shards
# (scripts/fleet/ch-cluster) with the shipped schema, traces of two
# simulated hosts (hmb-fwsim; one through the daemon, with overflow gaps and
# a sidecar) exported with hmb-trace-analyze export, and checked:
#   - what the store holds per host equals what `stats` reports (records,
#     payload bytes, opcodes, time span; losses: gaps and lost records;
#     the sidecar's clocks), and each host's rows sit on its shard;
#   - a re-export inserts nothing (row counts unchanged, nothing sent);
#   - a server killed and restarted in the middle of an export: retried,
#     every row in the store exactly once;
#   - an unreadable tail: the good records are exported, the tail is a
#     losses row, exit 1;
#   - server down, bad URL, HTTP error bodies: clear errors, exit != 0, and
#     every row not exported is counted.
# Sizes: host A is offered HMB_FLEET_RECORDS records (default 600000; the
# ring overflows, so it keeps fewer), host B writes 1.5 times as many; the
# two together must hold HMB_FLEET_MIN_RECORDS (default 1000000).
. "$(dirname "$0")/../classic/lib.sh"

CLUSTER=$TOP/scripts/fleet/ch-cluster
# The exporter under test (the ASan+UBSan build in make check's second run);
# the other tools come from HMB_BIN.
ANALYZE=${HMB_FLEET_ANALYZE:-$ANALYZE}
N=${HMB_FLEET_RECORDS:-600000}
NB=$((N * 3 / 2))
MIN=${HMB_FLEET_MIN_RECORDS:-1000000}
# Small payloads: the store keeps them all.
PAYLOAD=mix:0x20,8x40,24x30,64x10
CH=$WORK/ch
CLEANUP_HOOK='"$CLUSTER" stop "$CH"'

q() { "$CLUSTER" query "$1" "$2"; }
# export_json OUT ARGS...: run the exporter, JSON summary in OUT, rc in RC.
export_json() {
	local out=$1
	shift
	"$ANALYZE" export --to clickhouse "$@" --format json >"$out" 2>"$out.err"
	RC=$?
}
jget() { json "$1" "$2"; }

if ! "$CLUSTER" start "$CH" --shards 2 2>"$WORK/start.err"; then
	tap_fail "two clickhouse-server shards start: $(tail -n 5 "$WORK/start.err")"
	tap_done
fi
tap_ok "two clickhouse-server shards up with the schema (${SECONDS} s)"
. "$CH/env"
U1=$CH_URL_1
U2=$CH_URL_2

# Host names that the sharding key (cityHash64(host) % 2) puts one on each
# shard: the test sees both shards used.
pick_host() {
	local prefix=$1 want=$2 k
	for k in $(seq 0 99); do
		if [ "$(q "$U1" "SELECT cityHash64('$prefix-$k') % 2")" = "$want" ]; then
			echo "$prefix-$k"
			return
		fi
	done
}
HA=$(pick_host sim-a 0)
HB=$(pick_host sim-b 1)
tap_run "host names for both shards ($HA, $HB)" [ -n "$HA" ] && [ -n "$HB" ]

# Host A: simulator -> daemon (throttled: the ring overflows) -> dump with
# sidecar.
ring=$WORK/ring
"$FWSIM" -r "$ring" -s 256K --init-only
start_daemon daemon -r "$ring" -o "$WORK/a.bin" -b 64K --throttle 20M
# ~49 bytes x 600k/s = 29 MB/s offered in bursts, 20 MB/s drained.
"$FWSIM" -r "$ring" --attach -n "$N" -p "$PAYLOAD" -R 600000 -b 5000 \
	--wait-drained --seed 11 --json >"$WORK/sim-a.json"
tap_eq "host A: simulator finished" "$?" 0
kill -TERM "$DPID"
wait_exit "$DPID" 30
tap_eq "host A: daemon exits 0" "$RC" 0
# Host B: the simulator's own log (no sidecar: --day and a content hash);
# nobody drains its ring, which is large enough never to fill.
"$FWSIM" -r "$WORK/ring-b" -s 128M -n "$NB" -p "$PAYLOAD" --seed 12 \
	--log "$WORK/b.bin" --json >"$WORK/sim-b.json"
tap_eq "host B: simulator finished" "$?" 0
tap_eq "host B: nothing dropped" "$(jget "$WORK/sim-b.json" dropped)" 0
rm -f "$WORK/ring-b"
stats "$WORK/a.bin" "$WORK/a.stats"
stats "$WORK/b.bin" "$WORK/b.stats"
ra=$(jget "$WORK/a.stats" records)
rb=$(jget "$WORK/b.stats" records)
tap_diag "inputs made at ${SECONDS} s: host A: $ra records, $(jget "$WORK/a.stats" lost) lost in $(jget "$WORK/a.stats" gaps_total) gaps; host B: $rb records"
tap_run "host A's ring overflowed (gaps to export)" [ "$(jget "$WORK/a.stats" gaps_total)" -gt 0 ]
tap_run "at least $MIN records in all ($((ra + rb)))" [ $((ra + rb)) -ge "$MIN" ]

export_json "$WORK/xa.json" "$U1" --hostname "$HA" "$WORK/a.bin"
tap_eq "export host A exits 0" "$RC" 0
export_json "$WORK/xb.json" "$U2" --hostname "$HB" --day 2024-02-29 "$WORK/b.bin"
tap_eq "export host B exits 0" "$RC" 0
tap_eq "host A: rows inserted" "$(jget "$WORK/xa.json" tables.fw_records.inserted)" "$ra"
tap_eq "host B: rows inserted" "$(jget "$WORK/xb.json" tables.fw_records.inserted)" "$rb"

tap_diag "exports done at ${SECONDS} s"

# The store against stats, through the Distributed tables.
store_vs_stats() {
	local host=$1 st=$2 want got
	tap_eq "$host: fw_records rows == stats records" \
		"$(q "$U2" "SELECT count() FROM hmb.fw_records WHERE host = '$host'")" \
		"$(jget "$st" records)"
	tap_eq "$host: payload bytes == stats payload_bytes" \
		"$(q "$U1" "SELECT sum(length(payload)) FROM hmb.fw_records WHERE host = '$host'")" \
		"$(jget "$st" payload_bytes)"
	tap_eq "$host: firmware time span == stats" \
		"$(q "$U1" "SELECT concat(toString(min(fw_ns)), ' ', toString(max(fw_ns))) FROM hmb.fw_records WHERE host = '$host'")" \
		"$(jget "$st" first_ts_ns) $(jget "$st" last_ts_ns)"
	want=$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1]))["opcodes"]; print(" ".join("%s:%s" % (k, d[k]) for k in sorted(d, key=int)))' "$st")
	got=$(q "$U2" "SELECT opcode, count() FROM hmb.fw_records WHERE host = '$host' GROUP BY opcode ORDER BY opcode FORMAT TabSeparated" | tr '\t\n' ': ' | sed 's/ $//')
	tap_eq "$host: records by opcode == stats" "$got" "$want"
	tap_eq "$host: seq-gap rows == stats gaps" \
		"$(q "$U1" "SELECT count() FROM hmb.losses WHERE host = '$host' AND counter = 'lost'")" \
		"$(jget "$st" gaps_total)"
	tap_eq "$host: lost records in the store == stats lost" \
		"$(q "$U1" "SELECT sum(count) FROM hmb.losses WHERE host = '$host' AND counter = 'lost'")" \
		"$(jget "$st" lost)"
}
store_vs_stats "$HA" "$WORK/a.stats"
store_vs_stats "$HB" "$WORK/b.stats"
tap_eq "host A's rows all on shard 1" \
	"$(q "$U1" "SELECT count() FROM hmb.fw_records_local WHERE host = '$HA'") $(q "$U2" "SELECT count() FROM hmb.fw_records_local WHERE host = '$HA'")" "$ra 0"
tap_eq "host B's rows all on shard 2" \
	"$(q "$U1" "SELECT count() FROM hmb.fw_records_local WHERE host = '$HB'") $(q "$U2" "SELECT count() FROM hmb.fw_records_local WHERE host = '$HB'")" "0 $rb"
rt=$(sed -n 's/^realtime_ns=//p' "$WORK/a.bin.meta")
tap_eq "host A: clock row from the sidecar (realtime at open)" \
	"$(q "$U2" "SELECT concat(kind, ' ', toString(host_ns)) FROM hmb.clock WHERE host = '$HA'")" "host_open $rt"
tap_eq "host A: partition day from the sidecar" \
	"$(q "$U1" "SELECT DISTINCT toString(day) FROM hmb.fw_records WHERE host = '$HA'")" \
	"$(date -u -d "@$((rt / 1000000000))" +%F)"
tap_eq "host B: partition day from --day" \
	"$(q "$U1" "SELECT DISTINCT toString(day) FROM hmb.fw_records WHERE host = '$HB'")" 2024-02-29

tap_diag "checks done at ${SECONDS} s"

# Re-export: nothing sent, nothing doubled.
export_json "$WORK/xa2.json" "$U2" --hostname "$HA" "$WORK/a.bin"
tap_eq "re-export host A exits 0" "$RC" 0
tap_eq "re-export host A: nothing inserted" \
	"$(jget "$WORK/xa2.json" tables.fw_records.inserted) $(jget "$WORK/xa2.json" tables.losses.inserted) $(jget "$WORK/xa2.json" tables.clock.inserted)" "0 0 0"
tap_eq "re-export host A: every row found present" "$(jget "$WORK/xa2.json" tables.fw_records.present)" "$ra"
export_json "$WORK/xb2.json" "$U1" --hostname "$HB" --day 2024-02-29 "$WORK/b.bin"
tap_eq "re-export host B: nothing inserted" "$RC $(jget "$WORK/xb2.json" tables.fw_records.inserted)" "0 0"
tap_eq "after re-exports: rows per host unchanged, no duplicate row" \
	"$(q "$U1" "SELECT host, count(), uniqExact(trace_id, rec_off) FROM hmb.fw_records WHERE host IN ('$HA', '$HB') GROUP BY host ORDER BY host FORMAT CSV" | tr '\n' ' ')" \
	"$(printf '"%s",%s,%s "%s",%s,%s ' "$HA" "$ra" "$ra" "$HB" "$rb" "$rb")"

tap_diag "re-exports done at ${SECONDS} s"

# A server killed and restarted in the middle of an export.  The input
# comes through a pipe that pauses after 40 %: the first batches are in,
# then the shard that stores the host is killed and comes back 2 s later.
HC=$(pick_host sim-c 1)
# About 30 batches whatever the size, so that the crash falls between some.
crash_batch=$((rb / 30 + 1))
size=$(stat -c %s "$WORK/b.bin")
part=$(( (size * 2 / 5) / 8 * 8 ))
mkfifo "$WORK/pipe"
"$ANALYZE" export --to clickhouse "$U1" --hostname "$HC" --day 2024-03-01 \
	--trace-id 77 --batch-rows "$crash_batch" --backoff-ms 200 --format json - \
	<"$WORK/pipe" >"$WORK/xc.json" 2>"$WORK/xc.err" &
xpid=$!
PIDS+=("$xpid")
exec 7>"$WORK/pipe"
head -c "$part" "$WORK/b.bin" >&7
for _ in $(seq 1 100); do
	[ "$(q "$U2" "SELECT count() FROM hmb.fw_records_local WHERE host = '$HC'")" -gt 0 ] && break
	sleep 0.1
done
before=$(q "$U2" "SELECT count() FROM hmb.fw_records_local WHERE host = '$HC'")
"$CLUSTER" kill "$CH" 2
( sleep 2; "$CLUSTER" restart "$CH" 2 ) >"$WORK/restart2.log" 2>&1 &
rpid=$!
# Blocks while the exporter retries; goes on once the shard is back.
tail -c +"$((part + 1))" "$WORK/b.bin" >&7
exec 7>&-
wait "$rpid"
tap_eq "shard 2 restarted" "$?" 0
wait_exit "$xpid" 120
tap_eq "export through a shard crash exits 0" "$RC" 0
tap_diag "$before rows in before the kill; $(grep -c retry "$WORK/xc.err") retry lines: $(grep retry "$WORK/xc.err" | head -n 2 | tr '\n' ' ')"
tap_run "some rows were in before the kill, not all ($before of $rb)" [ "$before" -gt 0 ] && [ "$before" -lt "$rb" ]
tap_run "the exporter retried" [ "$(jget "$WORK/xc.json" retries)" -gt 0 ]
tap_eq "after the crash: every row once" \
	"$(q "$U1" "SELECT count(), uniqExact(rec_off) FROM hmb.fw_records WHERE host = '$HC' FORMAT CSV")" "$rb,$rb"
tap_eq "after the crash: nothing counted as not exported" "$(jget "$WORK/xc.json" tables.fw_records.not_exported)" 0

# The server the exporter talks to killed while rows flow (a batch may be
# in flight: it is checked in the store before it is sent again).
HD=$(pick_host sim-d 0)
mkfifo "$WORK/pipe2"
python3 "$(dirname "$0")/slow-copy.py" "$WORK/b.bin" "$WORK/pipe2" &
PIDS+=("$!")
"$ANALYZE" export --to clickhouse "$U1" --hostname "$HD" --day 2024-03-01 \
	--trace-id 78 --batch-rows "$crash_batch" --backoff-ms 200 --format json - \
	<"$WORK/pipe2" >"$WORK/xd.json" 2>"$WORK/xd.err" &
xpid=$!
PIDS+=("$xpid")
for _ in $(seq 1 200); do
	[ "$(q "$U1" "SELECT count() FROM hmb.fw_records_local WHERE host = '$HD'")" -gt 0 ] && break
	sleep 0.02
done
before=$(q "$U1" "SELECT count() FROM hmb.fw_records_local WHERE host = '$HD'")
"$CLUSTER" kill "$CH" 1
sleep 2
"$CLUSTER" restart "$CH" 1
tap_eq "shard 1 restarted" "$?" 0
tap_diag "$before rows in before the kill"
wait_exit "$xpid" 120
tap_eq "export through a crash of its own server exits 0" "$RC" 0
tap_run "the exporter retried" [ "$(jget "$WORK/xd.json" retries)" -gt 0 ]
tap_eq "after the crash: every row once" \
	"$(q "$U2" "SELECT count(), uniqExact(rec_off) FROM hmb.fw_records WHERE host = '$HD' FORMAT CSV")" "$rb,$rb"

tap_diag "crash exports done at ${SECONDS} s"

# An unreadable tail: the dump cut inside a record.
cut=$(( (size / 3) + 5 ))
head -c "$cut" "$WORK/b.bin" >"$WORK/cut.bin"
good=$("$ANALYZE" decode --format jsonl "$WORK/cut.bin" 2>/dev/null | wc -l)
export_json "$WORK/xe.json" "$U2" --hostname sim-e --day 2024-03-02 "$WORK/cut.bin"
tap_eq "unreadable tail: exit 1" "$RC" 1
tap_run "unreadable tail: the error names the file and offset" grep -q "cut.bin.*offset" "$WORK/xe.json.err"
tap_eq "unreadable tail: the good records are in the store" \
	"$(q "$U1" "SELECT count() FROM hmb.fw_records WHERE host = 'sim-e'")" "$good"
last_end=$(q "$U1" "SELECT max(rec_off + 32 + bitAnd(length(payload) + 7, bitNot(7))) FROM hmb.fw_records WHERE host = 'sim-e'")
tap_eq "unreadable tail: a losses row with the bytes after the last good record" \
	"$(q "$U1" "SELECT concat(layer, ' ', counter, ' ', toString(count)) FROM hmb.losses WHERE host = 'sim-e'")" \
	"dump unreadable $((cut - last_end))"

# Failures: every row counted, clear errors, exit != 0.
free=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
export_json "$WORK/xf.json" "http://127.0.0.1:$free" --hostname sim-f --retries 2 --backoff-ms 10 "$WORK/a.bin"
tap_eq "server down: exit 1" "$RC" 1
tap_run "server down: says it could not connect and gave up" grep -q "Couldn't connect.*gave up after 3 attempts" "$WORK/xf.json.err"
tap_eq "server down: every row counted as not exported" "$(jget "$WORK/xf.json" tables.fw_records.not_exported)" "$ra"
"$ANALYZE" export --to clickhouse "ftp://127.0.0.1/" --hostname x "$WORK/a.bin" 2>"$WORK/bad.err" >/dev/null
tap_eq "bad URL scheme: exit 2" "$?" 2
tap_run "bad URL scheme: says so" grep -q "not an http:// or https:// URL" "$WORK/bad.err"
"$ANALYZE" export --to clickhouse "http://[::1" --hostname x "$WORK/a.bin" 2>"$WORK/bad2.err" >/dev/null
tap_eq "malformed URL: exit 2" "$?" 2
tap_run "malformed URL: says so" grep -q "bad URL" "$WORK/bad2.err"
export_json "$WORK/xg.json" "$U1" --hostname sim-g --database nosuch "$WORK/a.bin"
tap_eq "unknown database: exit 1" "$RC" 1
tap_run "unknown database: the server's message" grep -q "HTTP 404: Code 81: Database nosuch doesn't exist" "$WORK/xg.json.err"
tap_run "unknown database: no retry (a permanent error)" [ "$(jget "$WORK/xg.json" retries)" = 0 ]
# Not ClickHouse: a plain HTTP server answers POST with 501 and a page.
python3 -m http.server --bind 127.0.0.1 "$free" >/dev/null 2>&1 &
PIDS+=("$!")
for _ in $(seq 1 50); do curl -s "http://127.0.0.1:$free/" >/dev/null && break; sleep 0.1; done
export_json "$WORK/xh.json" "http://127.0.0.1:$free" --hostname sim-h "$WORK/a.bin"
tap_eq "an HTTP server that is not ClickHouse: exit 1" "$RC" 1
tap_run "... its status and message are shown" grep -q "HTTP 501: .*Unsupported method" "$WORK/xh.json.err"
"$ANALYZE" export --to clickhouse "$U1" --hostname sim-i - <"$WORK/a.bin" 2>"$WORK/stdin.err" >/dev/null
tap_eq "stdin without --trace-id/--day: usage error" "$?" 2
tap_run "... saying what to give" grep -q "no sidecar to date the trace: give --day" "$WORK/stdin.err"
# The queries docs/fleet.md gives run on this server version.
nq=0
while IFS= read -r -d $'\x1e' sql; do
	nq=$((nq + 1))
	if out=$(q "$U1" "$sql" 2>&1); then
		tap_ok "docs/fleet.md query $nq runs"
	else
		tap_fail "docs/fleet.md query $nq runs: $out"
	fi
done < <(awk '/^```sql$/ { on = 1; next } /^```$/ && on { on = 0; printf "\x1e"; next } on { print }' "$TOP/docs/fleet.md")
tap_run "docs/fleet.md has queries ($nq)" [ "$nq" -ge 4 ]
tap_diag "all done at ${SECONDS} s"
tap_done
