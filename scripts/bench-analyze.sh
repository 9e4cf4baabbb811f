#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# bench-analyze.sh: hmb-trace-analyze stats and decode against cat, and
# stats against babeltrace2, on dumps from the page cache.
#
# Dumps (made once by hmb-fwsim --log, cached in $HMB_BENCH_DIR, default
# build/bench, named by their parameters):
#   64-byte records:  -p fixed:32, HMB_BENCH_FIXED_MIB MiB (default 256)
#   default mix:      hmb-fwsim's payload mix 16x40,64x40,512x15,4064x5,
#                     HMB_BENCH_MIX_MIB MiB (default 512)
# Per dump, HMB_BENCH_RUNS rounds (default 11), each running back to back
#   cat FILE > /dev/null                          (the reference)
#   hmb-trace-analyze stats FILE > /dev/null
#   hmb-trace-analyze decode FILE --format jsonl > /dev/null
# so that the three see the same load on a shared machine; medians of wall
# and CPU time (user + system, from wait4(): exact, not clock ticks; each
# command started by posix_spawn), and its peak RSS under GNU time.  The "vs cat" ratios are cat's median over the
# command's: >= 0.8 is the goal for stats (and peak RSS < 16 MiB).
#
# babeltrace2: 1 M records converted with convert --to ctf,
# read by babeltrace2 to its dummy sink (and as text to /dev/null), against
# stats on the dump, HMB_BENCH_CTF_RUNS paired rounds (default 5): once for
# opaque 64-byte records (hmb-fwsim -p fixed:32, opcodes the dictionary
# does not name) and once for the shipped dictionary's events.  Goal:
# stats >= 100x faster than the dummy sink.
#
# Prints Markdown and writes it into docs/benchmarks.md between the
# "bench-analyze" markers (HMB_BENCH_NO_DOC=1 to leave the doc alone).
. "$(dirname "$0")/lib/preamble.sh"
set -o pipefail
. "$top/scripts/lib/bench-doc.sh"
bin=$top/build/bin/hmb-trace-analyze
sim=$top/build/bin/hmb-fwsim
fixed_mib=${HMB_BENCH_FIXED_MIB:-256}
mix_mib=${HMB_BENCH_MIX_MIB:-512}
runs=${HMB_BENCH_RUNS:-11}
ctf_runs=${HMB_BENCH_CTF_RUNS:-5}
nctf=${HMB_BENCH_CTF_RECORDS:-1000000}
dir=${HMB_BENCH_DIR:-$top/build/bench}

[ -x "$bin" ] || make -C "$top/user/analyze" all >&2
[ -x "$sim" ] || make -C "$top/mock/hmb-fwsim" all >&2
command -v babeltrace2 > /dev/null || "$top/scripts/deps.sh" test >&2
[ -x /usr/bin/time ] || "$top/scripts/deps.sh" build >&2
mkdir -p "$dir"

# sim_dump FILE RECORDS MIX MAXREC: a dump of RECORDS records by hmb-fwsim
# --log through a ring in /dev/shm that holds them all (RECORDS x MAXREC
# bytes, at most 1 GiB: the mix averages ~344 bytes), so none is dropped.
sim_dump() {
	local file=$1 n=$2 mix=$3 maxrec=$4 ring rs=1048576
	[ -s "$file" ] && return 0
	ring=$(mktemp -u /dev/shm/hmb-bench-analyze.XXXXXX)
	while [ $rs -lt $((n * maxrec)) ] && [ $rs -lt $((1 << 30)) ]; do
		rs=$((rs * 2))
	done
	echo "bench-analyze: generating $file ($n records, $mix)" >&2
	"$sim" -r "$ring" -s "$rs" -n "$n" -p "$mix" --seed 7 --log "$file.tmp" -q
	rm -f "$ring"
	mv "$file.tmp" "$file"
}
fixed=$dir/analyze-fixed32-${fixed_mib}mib.bin
mix=$dir/analyze-mix-${mix_mib}mib.bin
# 64 bytes a record; the default mix averages ~344 bytes a record.
sim_dump "$fixed" $((fixed_mib * 1048576 / 64)) fixed:32 64
sim_dump "$mix" $((mix_mib * 1048576 / 344)) mix:16x40,64x40,512x15,4064x5 4096

# hold PATH...: drop each file (of a directory: the files in it) from the
# page cache, read it back once, and keep it there until the next hold or
# the end of the script.  Read back, so that every run finds it cached the
# way readahead caches a file (folios up to 2 MiB), not the way it was
# written or left by earlier runs: in 4 KiB folios cat takes twice as
# long or more, and mapping costs several times more.  Kept, mapped and
# locked (mlock) by a process of its own, because some virtual machines'
# hosts take page cache back by themselves within a minute (no reclaim
# counted in /proc/vmstat); unheld, runs read part of a dump from disk,
# and what reads it back leaves it in 4 KiB folios.  $unheld says why a
# lock did not take (root, or RLIMIT_MEMLOCK), empty if every one did.
holder="" unheld=""
hold() {
	local ready held
	release
	ready=$(mktemp)
	python3 "$bench_py" hold "$ready" "$@" &
	holder=$!
	while [ ! -s "$ready" ]; do
		if ! kill -0 "$holder" 2> /dev/null; then
			echo "bench-analyze: the page cache holder for $* failed" >&2
			exit 1
		fi
		sleep 0.05
	done
	held=$(cat "$ready")
	rm -f "$ready"
	[ "$held" = held ] || unheld=$held
}
release() {
	[ -n "$holder" ] || return 0
	kill "$holder" 2> /dev/null || true
	wait "$holder" 2> /dev/null || true
	holder=""
}
trap release EXIT

# paired RUNS LABEL CMD [-- LABEL CMD ...]: RUNS rounds of the commands in
# turn (stdout to /dev/null); one JSON line per label: median wall and CPU
# ms, peak RSS KiB.
paired() { python3 "$bench_py" paired "$@"; }
# get JSON KEY: the value of KEY in the line of label $2 of $1
get() { python3 "$bench_py" get "$1" "$2" "$3"; }
fmt1() { awk -v v="$1" 'BEGIN { printf "%.1f", v }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }'; }

rows=""
dumps=""
verdicts=""
for which in fixed mix; do
	file=${!which}
	size=$(stat -c %s "$file")
	records=$("$bin" stats "$file" --format json | python3 -c 'import json, sys; print(json.load(sys.stdin)["records"])')
	# Every run reads the file from the page cache, as readahead left it.
	hold "$file"
	cat "$file" > /dev/null
	out=$(paired "$runs" cat cat "$file" -- stats "$bin" stats "$file" -- \
		decode "$bin" decode "$file" --format jsonl)
	cw=$(get "$out" cat wall_ms) cc=$(get "$out" cat cpu_ms)
	if [ "$which" = fixed ]; then
		title="64-byte records (\`hmb-fwsim -p fixed:32\`)"
	else
		title="default payload mix (\`hmb-fwsim\`'s 16x40,64x40,512x15,4064x5)"
	fi
	short=${title%% (*}
	dumps+="${dumps:+; }$title, $records records, $size bytes ($((size / records)) bytes a record on average)"
	for c in cat stats decode; do
		w=$(get "$out" $c wall_ms) u=$(get "$out" $c cpu_ms) m=$(get "$out" $c rss_kib)
		case $c in
		cat) name="\`cat FILE > /dev/null\`" ;;
		stats) name="\`hmb-trace-analyze stats FILE\`" ;;
		decode) name="\`hmb-trace-analyze decode FILE --format jsonl > /dev/null\`" ;;
		esac
		rows+="| $short | $name | $(fmt1 "$w") ms | $(fmt1 "$u") ms | $(ratio "$cw" "$w") | $(ratio "$cc" "$u") | $(awk -v b="$size" -v ms="$w" 'BEGIN { printf "%.2f", b / ms / 1e6 }') | $(awk -v n="$records" -v ms="$u" 'BEGIN { printf "%.1f", n / ms / 1e3 }') | $(fmt1 "$(awk -v k="$m" 'BEGIN { print k / 1024 }')") MiB |
"
	done
	sw=$(get "$out" stats wall_ms) sc=$(get "$out" stats cpu_ms) sm=$(get "$out" stats rss_kib)
	v=$(awk -v a="$(ratio "$cc" "$sc")" -v m="$sm" \
		'BEGIN { print (a >= 0.8 && m < 16384) ? "met" : "NOT met" }')
	verdicts+="- $title: **$v** (stats at $(ratio "$cc" "$sc") of cat on CPU time, $(ratio "$cw" "$sw") on wall time, peak RSS $(fmt1 "$(awk -v k="$sm" 'BEGIN { print k / 1024 }')") MiB)
"
done

# babeltrace2 on the CTF conversion of 1 M records, twice: opaque 64-byte
# records, and the shipped dictionary's events.
odump=$dir/analyze-ctf-opaque-$nctf.bin
sim_dump "$odump" "$nctf" fixed:32 64
ddump=$dir/analyze-ctf-dict-$nctf.bin
if [ ! -s "$ddump" ]; then
	python3 "$top/scripts/lib/dict-dump.py" "$ddump.tmp" "$nctf"
	mv "$ddump.tmp" "$ddump"
fi
bt2ver=$(babeltrace2 --version | awk 'NR == 1 { print $2 }')
ctf_rows=""
for which in opaque dict; do
	if [ $which = opaque ]; then
		d=$odump what="opaque 64-byte records (\`hmb-fwsim -p fixed:32\`)"
	else
		d=$ddump what="the shipped dictionary's events"
	fi
	cdir=$dir/analyze-ctf-$which-$nctf.ctf
	rm -rf "$cdir"
	"$bin" convert "$d" "$cdir" --to ctf > /dev/null
	hold "$d" "$cdir"
	# stats alternates with the dummy sink (the goal's comparison); the
	# text output goes in rounds of its own: a stats run right after its
	# 2-5 s of CPU found its caches cold (9.7 against 6.6 ms).
	out=$(paired "$ctf_runs" stats "$bin" stats "$d" -- \
		dummy babeltrace2 "$cdir" -o dummy)
	out+=$'\n'$(paired "$ctf_runs" text babeltrace2 "$cdir")
	sw=$(get "$out" stats wall_ms) sc=$(get "$out" stats cpu_ms)
	for c in dummy text; do
		w=$(get "$out" $c wall_ms) u=$(get "$out" $c cpu_ms)
		ctf_rows+="| $what | \`babeltrace2 CTF $([ $c = dummy ] && echo '-o dummy' || echo '> /dev/null')\` | $(fmt1 "$w") ms | $(fmt1 "$u") ms | $(fmt1 "$sw") ms | $(fmt1 "$sc") ms | $(awk -v a="$w" -v b="$sw" 'BEGIN { printf "%.0f", a / b }')x | $(awk -v a="$u" -v b="$sc" 'BEGIN { printf "%.0f", a / b }')x |
"
		if [ $c = dummy ]; then
			v=$(awk -v a="$u" -v b="$sc" 'BEGIN { print (a / b >= 100) ? "met" : "NOT met" }')
			verdicts+="- stats >= 100x babeltrace2's dummy sink, $what: **$v** ($(awk -v a="$u" -v b="$sc" 'BEGIN { printf "%.0f", a / b }')x on CPU time, $(awk -v a="$w" -v b="$sw" 'BEGIN { printf "%.0f", a / b }')x on wall time)
"
		fi
	done
done
load_end=$(cut -d' ' -f1-3 /proc/loadavg)

table=$(cat <<EOT
<!-- bench-analyze:begin (generated by scripts/bench-analyze.sh) -->
### hmb-trace-analyze stats and decode against cat; stats against babeltrace2

Measured $(date -u +%Y-%m-%d) by \`HMB_BENCH_FIXED_MIB=$fixed_mib HMB_BENCH_MIX_MIB=$mix_mib HMB_BENCH_RUNS=$runs HMB_BENCH_CTF_RUNS=$ctf_runs scripts/bench-analyze.sh\`, $(nproc) CPUs ($(awk -F': ' '/model name/ { print $2; exit }' /proc/cpuinfo)), kernel $(uname -r), load average at the end $load_end. Dumps: $dumps. Each file dropped from the page cache and read back once (as readahead caches it: how the cache holds a file moves cat's time 2x), then $([ -z "$unheld" ] && echo "held there through the runs (mapped and locked by a process of its own)" || echo "$unheld: runs may have read part of a file from disk"). Medians of $runs rounds of the three commands back to back, each started by posix_spawn(); CPU is user + system time (wait4()); peak RSS from one more run of each under GNU time. "vs cat" is cat's median over the command's.

| dump | command | wall | CPU (user+sys) | vs cat (wall) | vs cat (CPU) | GB/s (wall) | M records/s (CPU) | peak RSS |
|---|---|---|---|---|---|---|---|---|
$rows
Stats against babeltrace2 $bt2ver on the CTF conversion (\`convert --to ctf\`) of $nctf records: medians of $ctf_runs rounds of stats and the dummy sink back to back, then $ctf_runs runs of the text output (run in the same rounds, its seconds of CPU left stats' caches cold).

| records | babeltrace2 | its wall | its CPU | stats wall | stats CPU | stats faster (wall) | stats faster (CPU) |
|---|---|---|---|---|---|---|---|
$ctf_rows
Goals, judged on CPU time (on a shared machine wall time mostly measures waiting for a CPU): stats at >= 0.8 of cat on both dumps with peak RSS under 16 MiB; stats >= 100x faster than babeltrace2's dummy sink.

${verdicts%$'\n'}
<!-- bench-analyze:end -->
EOT
)
echo "$table"
printf '%s\n' "$table" | bench_doc bench-analyze
