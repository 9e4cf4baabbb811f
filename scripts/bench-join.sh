#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# bench-join.sh: does the offline join's cost stay flat as the trace grows?
# `correlate`, `report --host` and `convert --to perfetto-json --host` (the
# JSON, the heavier writer) over 1 M and 10 M commands: wall time, CPU time
# and peak RSS (/usr/bin/time -v's maximum resident set size).  Goals: the 10 M
# run at most 11x the 1 M run, peak RSS under 64 MiB at 10 M.
#
# Input (generated once, cached in build/bench keyed by a hash of this
# script and tests/formats/fwgen.py): tests/formats/fwgen.py writes a dump
# of HMB_BENCH_JOIN_BASE commands (default 1000000; five records each) and
# the host's view of them as hmb-trace-agent JSON lines (completion order);
# the 10x input is that trace repeated ten times one after the other (seqs
# and firmware times shifted past the previous copy, host times by as
# much, slbas by 2^40 a copy so that no copy looks like another to the
# join), so that both have the same mix per command.  Then
# HMB_BENCH_RUNS rounds (default 5), the six commands interleaved in each
# round (each run's numbers on stderr as it ends); medians.  Prints a
# Markdown table and writes it into
# docs/benchmarks.md between the "bench-join" markers (HMB_BENCH_NO_DOC=1
# to leave the doc alone).
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
. "$top/scripts/lib/bench-doc.sh"
bin=$top/build/bin/hmb-trace-analyze
base=${HMB_BENCH_JOIN_BASE:-1000000}
runs=${HMB_BENCH_RUNS:-5}
dir=${HMB_BENCH_DIR:-$top/build/bench}
key=$(cat "$0" "$top/tests/formats/fwgen.py" | sha256sum | cut -c1-12)
d1=$dir/join-$base-$key
big=$((base * 10))

[ -x "$bin" ] || make -C "$top/user/analyze" all >&2
[ -x /usr/bin/time ] || "$top/scripts/deps.sh" build >&2
mkdir -p "$dir"
if [ ! -s "$d1.x10.jsonl" ]; then
	echo "bench-join: generating $base and $big commands in $d1.*" >&2
	rm -f "$dir"/join-"$base"-*
	PYTHONPATH=$top/tests/formats python3 - "$d1" "$base" <<'EOF'
import json, re, struct, sys
from fwgen import Workload, write_agent_jsonl
out, n = sys.argv[1], int(sys.argv[2])
w = Workload(n_cmds=n, seed=7, gc_every=0, unknown_every=0)
w.write(out + ".x1.bin")
write_agent_jsonl(out + ".x1.jsonl", w.host_commands(123456789))
nrec = len(w.kept)
span = w.kept[-1].ts - w.kept[0].ts + 1_000_000     # 1 ms apart
del w
dump = bytearray(open(out + ".x1.bin", "rb").read())
offs, fetch, o = [], [], 0
while o < len(dump):
    offs.append(o)
    op, plen = struct.unpack_from("<H2xH", dump, o + 16)
    if op == 0x100:             # cmd_fetch: slba at payload offset 16
        fetch.append(o + 32 + 16)
    o += (32 + plen + 7) & ~7
assert len(offs) == nrec
with open(out + ".x10.bin", "wb") as f:
    for k in range(10):
        f.write(dump)
        for o in offs:          # the next copy: seqs and times shifted
            seq, ts = struct.unpack_from("<IQ", dump, o + 4)
            struct.pack_into("<IQ", dump, o + 4, (seq + nrec) & 0xFFFFFFFF,
                             ts + span)
        for o in fetch:         # ... and slbas: the copies are not alike
            slba = struct.unpack_from("<Q", dump, o)[0]
            struct.pack_into("<Q", dump, o, slba + (1 << 40))
num = re.compile(rb'"(submit_ns|complete_ns|slba)": (\d+)')
lines = open(out + ".x1.jsonl", "rb").read().splitlines(keepends=True)
with open(out + ".x10.jsonl.tmp", "wb") as f:
    for k in range(10):
        if k == 0:
            f.writelines(lines)
            continue
        sh = {b"submit_ns": k * span, b"complete_ns": k * span,
              b"slba": k << 40}
        f.writelines(num.sub(lambda m: b'"%s": %d' % (
            m.group(1), int(m.group(2)) + sh[m.group(1)]), l) for l in lines)
import os
os.rename(out + ".x10.jsonl.tmp", out + ".x10.jsonl")
EOF
fi
cat "$d1".x1.* "$d1".x10.* > /dev/null

declare -A wall cpu rss
# one run: KEY CMD...; appends wall s, CPU s and peak RSS KiB to the arrays
run1() {
	local k=$1 t0 t1 tf=$dir/.join-time
	shift
	t0=$(date +%s%N)
	/usr/bin/time -o "$tf" -f "%U %S %M" "$@" > /dev/null
	t1=$(date +%s%N)
	read -r u s m < <(tail -n 1 "$tf")
	wall[$k]+="$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", (b - a) / 1e9 }') "
	cpu[$k]+="$(awk -v u="$u" -v s="$s" 'BEGIN { printf "%.2f", u + s }') "
	rss[$k]+="$m "
	echo "bench-join: $k: wall $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", (b - a) / 1e9 }') s, CPU $u + $s s, peak RSS $m KiB" >&2
}
med() { tr ' ' '\n' | grep . | sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
for ((i = 0; i < runs; i++)); do
	for x in x1 x10; do
		run1 "correlate.$x" "$bin" correlate "$d1.$x.bin" "$d1.$x.jsonl"
		run1 "report.$x" "$bin" report "$d1.$x.bin" --host "$d1.$x.jsonl" -o -
		run1 "perfetto.$x" "$bin" convert "$d1.$x.bin" - --to perfetto-json \
			--host "$d1.$x.jsonl"
	done
	echo "bench-join: round $((i + 1)) of $runs done" >&2
done

load=$(cut -d' ' -f1-3 /proc/loadavg)
rows=""
for c in correlate report perfetto; do
	w1=$(med <<< "${wall[$c.x1]}"); w10=$(med <<< "${wall[$c.x10]}")
	c1=$(med <<< "${cpu[$c.x1]}"); c10=$(med <<< "${cpu[$c.x10]}")
	r1=$(med <<< "${rss[$c.x1]}"); r10=$(med <<< "${rss[$c.x10]}")
	rmax=$(tr ' ' '\n' <<< "${rss[$c.x10]}" | grep . | sort -n | tail -1)
	rw=$(awk -v a="$w1" -v b="$w10" 'BEGIN { printf "%.2f", b / a }')
	rc=$(awk -v a="$c1" -v b="$c10" 'BEGIN { printf "%.2f", b / a }')
	ok=$(awk -v r="$rc" -v w="$rw" -v m="$rmax" 'BEGIN {
		t = (r <= 11 && w <= 11) ? "met" : "NOT met"
		s = (m < 64 * 1024) ? "met" : "NOT met"
		printf "time %s, RSS %s", t, s }')
	case $c in
	correlate) name='`correlate DUMP HOST.jsonl`' ;;
	report) name='`report DUMP --host HOST.jsonl -o -`' ;;
	perfetto) name='`convert DUMP - --to perfetto-json --host HOST.jsonl`' ;;
	esac
	rows+="| $name | $w1 s / $c1 s / $((r1 / 1024)) MiB | $w10 s / $c10 s / $((r10 / 1024)) MiB (max $((rmax / 1024))) | **$rw** / **$rc** | $ok |
"
done

bench_doc bench-join <<EOF
<!-- bench-join:begin (generated by scripts/bench-join.sh) -->
## The offline join as the trace grows: 1 M and 10 M commands

Measured $(date -u +%Y-%m-%d) by \`HMB_BENCH_JOIN_BASE=$base HMB_BENCH_RUNS=$runs scripts/bench-join.sh\` (or \`make bench\`), $(nproc) CPUs, load average at the end $load. Input: $base commands from tests/formats/fwgen.py (five records each, a dump of $(stat -c %s "$d1.x1.bin") bytes and $(stat -c %s "$d1.x1.jsonl") bytes of agent JSON lines), and the same trace ten times over ($big commands). The six runs interleaved, $runs rounds; medians of wall / CPU (user + system) time / peak RSS (/usr/bin/time); output to /dev/null. Goal: 10 M / 1 M <= 11 on time, peak RSS < 64 MiB at 10 M.

| command | 1 M: wall / CPU / RSS | 10 M: wall / CPU / RSS | 10 M / 1 M (wall / CPU) | goal |
|---|---|---|---|---|
${rows%$'\n'}
<!-- bench-join:end -->
EOF
