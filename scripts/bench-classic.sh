#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# bench-classic.sh: drain rate of hmb-trace-daemon.
#
# For 64- and 512-byte records, on every directory of HMB_BENCH_DIRS
# (default: build/bench on the repository's filesystem, and /dev/shm):
#   1. hmb-fwsim, unthrottled, produces about HMB_BENCH_BYTES (default 1 GB)
#      into a 4 MiB ring file in /dev/shm while hmb-trace-daemon drains it
#      into DIR.  The simulator runs in wait mode, so every byte offered is
#      drained and the simulator sleeps instead of spinning when the ring is
#      full; the rate is the daemon's bytes over the time from the first
#      record to a drained ring.  The daemon's CPU time (utime + stime) is
#      read too: bytes per CPU second is its capacity whatever else the
#      machine runs;
#   2. dd writes the same number of bytes, bs = the daemon's batch (256K),
#      from /dev/zero to the same directory, right after, timed the same way
#      (wall and CPU);
#   3. daemon / dd, on wall time and per CPU second (goal >= 0.8).
# Then, per record size, the highest simulator rate (records/s, bursts of
# 100, drop mode: the firmware rule) with zero drops over 2-s runs, by
# bisection (HMB_BENCH_SEARCH=0 skips it).
# Prints a Markdown table and writes it into docs/benchmarks.md between the
# "bench-classic" markers (HMB_BENCH_NO_DOC=1 leaves the doc alone).
. "$(dirname "$0")/lib/preamble.sh"
set -o pipefail
. "$top/scripts/lib/bench-doc.sh"
bin=$top/build/bin
sim=$bin/hmb-fwsim
daemon=$bin/hmb-trace-daemon
bytes=${HMB_BENCH_BYTES:-1000000000}
dirs=${HMB_BENCH_DIRS:-$top/build/bench /dev/shm}
batch=262144
rounds=${HMB_BENCH_ROUNDS:-3}

[ -x "$sim" ] && [ -x "$daemon" ] || make -C "$top" all >&2
ring=$(mktemp /dev/shm/hmb-bench-ring.XXXXXX)
scratch=()
dpid=
cleanup() {
	[ -n "$dpid" ] && kill -KILL "$dpid" 2>/dev/null
	rm -f "$ring" "${scratch[@]}"
}
trap cleanup EXIT

jget() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$1" "$2"; }

# start_daemon OUT STATS [OPTIONS]: a daemon draining $ring into OUT.
start_daemon() {
	"$daemon" -r "$ring" -o "$1" --stats-json "$2" -q "${@:3}" &
	dpid=$!
}
# cpu_ms PID: the CPU time (user + system, ms) a running process has
# used, read before it is stopped: its teardown is not the drain's.
cpu_ms() { python3 "$bench_py" cpu "$1"; }
stop_daemon() {
	kill -TERM "$dpid"
	wait "$dpid" || { echo "bench-classic: daemon failed" >&2; exit 1; }
	dpid=
}

rows=""
declare -A best_rate
last_dir=$(echo "$dirs" | awk '{ print $NF }')
for dir in $dirs; do
	mkdir -p "$dir"
	fs=$(df -T "$dir" | awk 'NR == 2 { print $2 }')
	# the daemon with its defaults; in the last directory also with
	# --watermark 0 (write whatever is there at once: the behaviour before
	# the watermark), for the comparison in the same run
	variants=default
	[ "$dir" = "$last_dir" ] && variants="default nowm"
	for variant in $variants; do
	for size in 64 512; do
		dopts=()
		[ "$variant" = nowm ] && dopts=(--watermark 0)
		n=$((bytes / (32 + size)))
		out=$dir/hmb-bench-$$.bin
		st=$dir/hmb-bench-$$.json
		sj=$dir/hmb-bench-$$.sim.json
		scratch+=("$out" "$out.meta" "$st" "$sj" "$dir/hmb-bench-$$.dd")
		best_d=; best_dd=
		for ((round = 0; round < rounds; round++)); do
			rm -f "$out" "$out.meta"
			"$sim" -r "$ring" --init-only
			start_daemon "$out" "$st" "${dopts[@]}"
			"$sim" -r "$ring" --attach -n "$n" -p "fixed:$size" --mode wait \
				--wait-drained --json > "$sj"
			dcpu_ms=$(cpu_ms "$dpid")
			stop_daemon
			el=$(jget "$sj" elapsed_s)
			sim_rate=$(jget "$sj" rate_rps)
			dbytes=$(jget "$st" bytes)
			drec=$(jget "$st" records)
			rm -f "$out" "$out.meta"
			sync -f "$dir" 2>/dev/null || true
			cnt=$(((dbytes + batch - 1) / batch))
			scratch+=("$dir/hmb-bench-$$.time")
			bench_run "$dir/hmb-bench-$$.time" \
				dd if=/dev/zero of="$dir/hmb-bench-$$.dd" bs=$batch count=$cnt status=none
			dd_cpu=$(awk -v ms="$bench_cpu_ms" 'BEGIN { print ms / 1000 }')
			rm -f "$dir/hmb-bench-$$.dd"
			dd_gbs=$(awk -v b=$((cnt * batch)) -v ns="$bench_wall_ns" 'BEGIN { printf "%.3f", b / ns }')
			dd_cgbs=$(awk -v b=$((cnt * batch)) -v c="$dd_cpu" 'BEGIN { printf "%.2f", (c > 0 ? b / c / 1e9 : 0) }')
			d_gbs=$(awk -v b="$dbytes" -v s="$el" 'BEGIN { printf "%.3f", b / s / 1e9 }')
			d_mrs=$(awk -v r="$drec" -v s="$el" 'BEGIN { printf "%.2f", r / s / 1e6 }')
			d_cpu=$(awk -v ms="$dcpu_ms" 'BEGIN { printf "%.2f", ms / 1000 }')
			d_cgbs=$(awk -v b="$dbytes" -v c="$d_cpu" 'BEGIN { printf "%.2f", (c > 0 ? b / c / 1e9 : 0) }')
			# Best of the rounds, each side on its own: the machine's
			# page-cache and scheduling noise is larger than the effect.
			if [ -z "$best_d" ] || awk -v a="$d_gbs" -v b="$best_d" 'BEGIN { exit !(a > b) }'; then
				best_d=$d_gbs; b_drec=$drec; b_mrs=$d_mrs; b_cpu=$d_cpu; b_cgbs=$d_cgbs
				b_sim_rate=$sim_rate
			fi
			if [ -z "$best_dd" ] || awk -v a="$dd_gbs" -v b="$best_dd" 'BEGIN { exit !(a > b) }'; then
				best_dd=$dd_gbs; b_dd_cgbs=$dd_cgbs
			fi
		done
		d_gbs=$best_d; drec=$b_drec; d_mrs=$b_mrs; d_cpu=$b_cpu; d_cgbs=$b_cgbs
		sim_rate=$b_sim_rate; dd_gbs=$best_dd; dd_cgbs=$b_dd_cgbs
		ratio=$(awk -v a="$d_gbs" -v b="$dd_gbs" 'BEGIN { printf "%.2f", a / b }')
		cratio=$(awk -v a="$d_cgbs" -v b="$dd_cgbs" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }')
		best_rate[$size]=${best_rate[$size]:-$sim_rate}
		echo "bench-classic: $dir ($fs) ${size}B: daemon $d_mrs M rec/s $d_gbs GB/s ($d_cgbs GB per CPU s), dd $dd_gbs GB/s ($dd_cgbs GB per CPU s), ratio $ratio wall, $cratio CPU" >&2
		rows+="| ${dir#"$top"/} ($fs) | ${dopts[*]:-defaults} | $size | $drec | $d_mrs | $d_gbs | $dd_gbs | **$ratio** | $d_cpu s | $d_cgbs | $dd_cgbs | **$cratio** |"$'\n'
	done
	done
done

# Highest simulator rate with zero drops (bisection over 2-s runs).
search_rows=""
if [ "${HMB_BENCH_SEARCH:-1}" = 1 ]; then
	sdir=$(echo "$dirs" | awk '{ print $NF }')
	for size in 64 512; do
		lo=0
		hi=$(awk -v r="${best_rate[$size]}" 'BEGIN { printf "%d", r * 1.2 }')
		for i in 1 2 3 4 5 6 7; do
			mid=$(((lo + hi) / 2))
			[ "$mid" -le 0 ] && break
			out=$sdir/hmb-bench-$$.bin
			rm -f "$out" "$out.meta"
			"$sim" -r "$ring" --init-only
			start_daemon "$out" "$sdir/hmb-bench-$$.json"
			"$sim" -r "$ring" --attach -n $((mid * 2)) -R "$mid" -b 100 \
				-p "fixed:$size" --wait-drained --json > "$sdir/hmb-bench-$$.sim.json"
			stop_daemon
			d=$(jget "$sdir/hmb-bench-$$.sim.json" dropped)
			echo "bench-classic: ${size}B at $mid records/s: $d dropped" >&2
			if [ "$d" = 0 ]; then lo=$mid; else hi=$mid; fi
		done
		rm -f "$out" "$out.meta"
		search_rows+="| $size | $lo | $(awk -v r="$lo" -v s="$size" 'BEGIN { printf "%.3f", r * (32 + s) / 1e9 }') | $hi |"$'\n'
	done
fi

table=$(cat <<EOT
<!-- bench-classic:begin (generated by scripts/bench-classic.sh) -->
### hmb-trace-daemon drain rate

Measured $(date -u +%Y-%m-%d) by \`HMB_BENCH_BYTES=$bytes HMB_BENCH_ROUNDS=$rounds scripts/bench-classic.sh\` (directories: HMB_BENCH_DIRS, default build/bench and /dev/shm), $(nproc) CPUs ($(awk -F': ' '/model name/ { print $2; exit }' /proc/cpuinfo)), load average at the end $(cut -d' ' -f1-3 /proc/loadavg). A 4 MiB ring file in /dev/shm; hmb-fwsim unthrottled, wait mode; the daemon with its defaults (256 KiB batches, drained once 64 KiB wait or 1 ms passed) and with \`--watermark 0\` (at once); dd bs=256K from /dev/zero to the same directory; each the best of $rounds rounds. Wall rates from the first record to a drained ring; "per CPU s": bytes over user + system time.

| output directory (fs) | daemon options | payload B | records | daemon M rec/s | daemon GB/s | dd GB/s | daemon / dd (wall) | daemon CPU | daemon GB per CPU s | dd GB per CPU s | daemon / dd (CPU) |
|---|---|---|---|---|---|---|---|---|---|---|---|
${rows}
Goal: daemon >= 0.8 of dd. The wall rate is the pace of the pair simulator + daemon on two shared cores (with 64-byte records the simulator is the slower); the CPU columns compare the cost per byte: dd copies once from /dev/zero, the daemon copies each batch out of the ring before validating it (the bytes written are the bytes checked) and then writes it. The watermark cuts the writes and tail updates, which is what costs with small records.

Highest simulator rate with zero drops (2-s runs, bursts of 100 records, bisection; output in $(echo "$dirs" | awk '{ print $NF }')):

| payload B | records/s | GB/s | lowest rate that dropped |
|---|---|---|---|
${search_rows%$'\n'}
<!-- bench-classic:end -->
EOT
)
echo "$table"
printf '%s\n' "$table" | bench_doc bench-classic
