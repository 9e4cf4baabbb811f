#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# bench-commands.sh: the fleet store's commands rows,
# offline and live, rows/s per core, and the agent's CPU with and without
# --export.
#
# Offline: tests/formats/fwgen.py makes (once, cached in build/bench) a dump
# of HMB_BENCH_CMDS commands (default 300000) and the host's agent JSON
# lines for them; a two-shard cluster (scripts/fleet/ch-cluster); then
# HMB_BENCH_RUNS rounds (default 3) of, back to back:
#   hmb-trace-analyze correlate DUMP HOSTFILE    (the join, text summary)
#   export DUMP                                  (fw_records, losses, clock)
#   export DUMP --host HOSTFILE                  (the same and commands)
# each export with a new --trace-id, keeping the best wall time and its CPU
# time.  The commands rows' own cost is the difference of the two exports'
# CPU; rows/s per core is rows / that.
#
# Live (root, BPF, fio; else skipped and said so): hmb-trace-agent -m block
# on a loop device while fio runs HMB_BENCH_LIVE_SECS (default 10) of 4k
# random reads and writes, once without and once with --export to the
# cluster, HMB_BENCH_RUNS times each, interleaved: the agent's CPU time
# (wait4, scripts/lib/bench.py), the commands it made (= rows), the rows
# it inserted.  The export's cost per row is the CPU difference over the
# rows.
#
# Prints a Markdown table and writes it into docs/benchmarks.md between
# the "bench-commands" markers (HMB_BENCH_NO_DOC=1 to leave the doc alone).
. "$(dirname "$0")/lib/preamble.sh"
set -o pipefail
. "$top/scripts/lib/bench-doc.sh"
bin=$top/build/bin
n=${HMB_BENCH_CMDS:-300000}
runs=${HMB_BENCH_RUNS:-3}
secs=${HMB_BENCH_LIVE_SECS:-10}
dir=${HMB_BENCH_DIR:-$top/build/bench}
ch=$dir/commands-ch
dump=$dir/commands-$n.bin
host=$dir/commands-$n.jsonl

"$top/scripts/deps.sh" build fleet >&2
[ -x "$bin/hmb-trace-analyze" ] || make -C "$top" all >&2
mkdir -p "$dir"
if [ ! -s "$dump" ] || [ ! -s "$host" ]; then
	echo "bench-commands: generating $n commands in $dump and $host" >&2
	python3 - "$top/tests/formats" "$n" "$dump" "$host" <<'EOF'
import sys
sys.path.insert(0, sys.argv[1])
from fwgen import Workload, write_agent_jsonl
w = Workload(n_cmds=int(sys.argv[2]), seed=9, gc_every=0, unknown_every=0)
w.write(sys.argv[3] + ".tmp")
write_agent_jsonl(sys.argv[4] + ".tmp",
                  w.host_commands(offset_ns=30_000_000_000, drift_ppm=20.0))
EOF
	mv "$dump.tmp" "$dump"
	mv "$host.tmp" "$host"
fi
cat "$dump" "$host" >/dev/null

"$top/scripts/fleet/ch-cluster" stop "$ch"
"$top/scripts/fleet/ch-cluster" start "$ch" >&2
loop=
cleanup() {
	[ -n "$loop" ] && losetup -d "$loop"
	rm -f "$dir/live-img"
	"$top/scripts/fleet/ch-cluster" stop "$ch"
}
trap cleanup EXIT
. "$ch/env"
declare -A best cpu
tf=$dir/.time-commands
x=("$bin/hmb-trace-analyze" export --to clickhouse "$CH_URL_1"
	--hostname bench-cmds --day 2024-01-01 --quiet "$dump")
for ((i = 0; i < runs; i++)); do
	bench_time "$tf" join "$bin/hmb-trace-analyze" correlate "$dump" "$host"
	bench_time "$tf" plain "${x[@]}" --trace-id "$((2000 + i))"
	bench_time "$tf" host "${x[@]}" --trace-id "$((3000 + i))" --host "$host"
done
rows=$("$top/scripts/fleet/ch-cluster" query "$CH_URL_1" "SELECT count() FROM hmb.commands WHERE trace_id = 3000")
[ "$rows" = "$n" ] || {
	echo "bench-commands: the store holds $rows commands rows of a round, not $n" >&2
	exit 1
}
per_s() { awk -v n="$1" -v ms="$2" 'BEGIN { printf "%.0f", (ms > 0 ? n * 1000 / ms : 0) }'; }
ms() { echo $(($1 / 1000000)); }
dcpu=$((cpu[host] - cpu[plain]))

# ------------------------------------------------------------------ live
live="Live: skipped ($(id -u) is not root, or no fio or BTF)."
if [ "$(id -u)" = 0 ] && command -v fio >/dev/null && [ -r /sys/kernel/btf/vmlinux ] &&
	[ -x "$bin/hmb-trace-agent" ]; then
	truncate -s 256M "$dir/live-img"
	loop=$(losetup -f --show --direct-io=on "$dir/live-img")
	dev=${loop#/dev/}
	declare -A lcpu lrows lins
	live1() { # KEY ARGS...
		local key=$1 out=$dir/live-$1.jsonl apid c made ins
		shift
		python3 "$bench_py" run "$tf" "$bin/hmb-trace-agent" -d "$dev" \
			-m block -j -o "$out" "$@" 2>"$dir/live-$key.err" &
		apid=$!
		for _ in $(seq 100); do
			grep -q '"type":"start"' "$out" 2>/dev/null && break
			sleep 0.1
		done
		fio --name=x --filename="$loop" --direct=1 --ioengine=psync \
			--rw=randrw --bs=4k --size=128M --time_based \
			--runtime="$secs" --output-format=terse >/dev/null 2>&1
		kill -INT "$(pgrep -P "$apid" hmb-trace-agent || echo "$apid")"
		wait "$apid"
		read -r _ c < "$tf"
		# the summary line: requests counted, commands rows inserted
		read -r made ins < <(python3 -c '
import json, sys
for line in open(sys.argv[1]):
    o = json.loads(line)
    if o.get("type") == "summary":
        print(o["counters"]["host_complete"],
              o.get("export", {}).get("inserted", 0))' "$out")
		lcpu[$key]=$(( ${lcpu[$key]:-0} + c ))
		lrows[$key]=$(( ${lrows[$key]:-0} + made ))
		lins[$key]=$(( ${lins[$key]:-0} + ${ins:-0} ))
	}
	for ((i = 0; i < runs; i++)); do
		live1 off
		live1 on --export "$CH_URL_1" --export-hostname bench-live
	done
	us_per() { awk -v c="$1" -v r="$2" 'BEGIN { printf "%.2f", (r > 0 ? c * 1000 / r : 0) }'; }
	ldiff=$((lcpu[on] - lcpu[off]))
	if [ "$ldiff" -gt 0 ]; then
		face="i.e. about $(per_s "${lrows[on]}" "$ldiff") rows/s per core if the difference is taken at face value"
	else
		face="here within the noise of the measurement (no extra CPU seen)"
	fi
	live=$(cat <<EOT
Live: \`hmb-trace-agent -m block\` on a loop device (256 MiB sparse file, direct I/O) while fio runs ${secs} s of 4k random reads and writes (psync, QD1) — the rate at which this machine's I/O makes commands — $runs runs each way, interleaved, summed:

| agent | commands (rows made) | rows/s made | agent CPU | CPU per command | rows inserted |
|---|---|---|---|---|---|
| without \`--export\` | ${lrows[off]} | $(per_s "${lrows[off]}" $((runs * secs * 1000))) | ${lcpu[off]} ms | $(us_per "${lcpu[off]}" "${lrows[off]}") µs | - |
| with \`--export\` | ${lrows[on]} | $(per_s "${lrows[on]}" $((runs * secs * 1000))) | ${lcpu[on]} ms | $(us_per "${lcpu[on]}" "${lrows[on]}") µs | ${lins[on]} |

The export's own cost: $ldiff ms of agent CPU for ${lrows[on]} rows, $(us_per "$ldiff" "${lrows[on]}") µs a row (the difference of the CPU columns, with the noise of both), $face. It includes every command crossing the BPF ring buffer (without \`--export\` only top-N candidates do). Block mode has no firmware records: the live \`fw_records\` rows (a VM with the module) are not measured.
EOT
)
fi

load=$(cut -d' ' -f1-3 /proc/loadavg)
table=$(cat <<EOT
<!-- bench-commands:begin (generated by scripts/bench-commands.sh) -->
### The fleet store's commands rows (offline and live)

Measured $(date -u +%Y-%m-%d) by \`HMB_BENCH_CMDS=$n HMB_BENCH_RUNS=$runs HMB_BENCH_LIVE_SECS=$secs scripts/bench-commands.sh\`, $(nproc) CPUs ($(awk -F': ' '/model name/ { print $2; exit }' /proc/cpuinfo)), load average at the end $load; ClickHouse $("$top/scripts/fleet/ch-cluster" query "$CH_URL_1" "SELECT version()") (Debian 12), two shards on this machine; CPU = user + system (wait4).

Offline: $n commands (tests/formats/fwgen.py: a dump of $(stat -c %s "$dump") bytes and the host's agent JSON lines), best wall time of $runs interleaved rounds, CPU of that run:

| command | wall | CPU |
|---|---|---|
| \`correlate DUMP HOSTFILE\` (the join, text summary) | $(ms "${best[join]}") ms | ${cpu[join]} ms |
| \`export DUMP\` (fw_records, losses, clock) | $(ms "${best[plain]}") ms | ${cpu[plain]} ms |
| \`export DUMP --host HOSTFILE\` (the same, and $rows commands rows) | $(ms "${best[host]}") ms | ${cpu[host]} ms |

The commands rows cost $dcpu ms of exporter CPU over the export without them (the join and the rows): $(per_s "$rows" "$dcpu") commands rows/s per exporter core, the join included (correlate's join with its text summary takes ${cpu[join]} ms on its own).

$live
<!-- bench-commands:end -->
EOT
)
echo "$table"
printf '%s\n' "$table" | bench_doc bench-commands
