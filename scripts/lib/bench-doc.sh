# SPDX-License-Identifier: Apache-2.0
# Sourced by scripts/bench-*.sh.  The measuring is bench.py's (the
# harness: spawn, wait4, medians, peak RSS, page cache); this file holds
# what the scripts share around it.
bench_py=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/bench.py
#
# bench_run TIMEFILE CMD...: run CMD once, timed: sets bench_wall_ns (wall
# time, ns) and bench_cpu_ms (user + system CPU time, ms).  TIMEFILE holds
# bench.py run's output.
bench_run() {
	local tf=$1
	shift
	python3 "$bench_py" run "$tf" "$@"
	read -r bench_wall_ns bench_cpu_ms < "$tf"
}
#
# bench_time TIMEFILE KEY CMD...: bench_run CMD (stdout discarded), keeping
# in the caller's associative arrays best[KEY] the best wall time (ns) of
# the runs so far and cpu[KEY] the CPU time (ms) of that run.
bench_time() {
	local tf=$1 key=$2
	shift 2
	bench_run "$tf" "$@" > /dev/null
	if [ -z "${best[$key]:-}" ] || [ "$bench_wall_ns" -lt "${best[$key]}" ]; then
		best[$key]=$bench_wall_ns
		cpu[$key]=$bench_cpu_ms
	fi
}
#
# bench_doc NAME < TABLE: put the Markdown on standard input into
# docs/benchmarks.md in place of the section between "<!-- NAME:begin" and
# "<!-- NAME:end -->" (the table carries both markers), or append it when
# the document has no such section yet.  HMB_BENCH_DOC names another
# document (docs/fuzzing.md).  HMB_BENCH_NO_DOC=1 leaves the
# document alone.
bench_doc() {
	local name=$1 doc tf
	doc=${HMB_BENCH_DOC:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/docs/benchmarks.md}
	tf=$(mktemp) || return 1
	cat > "$tf"
	if [ "${HMB_BENCH_NO_DOC:-0}" = 1 ]; then
		rm -f "$tf"
		return 0
	fi
	if [ ! -f "$doc" ]; then
		printf '%s\n\n%s\n' "# Benchmarks" \
			"Measured numbers and the commands that reproduce them." > "$doc"
	fi
	if grep -q "<!-- $name:begin" "$doc"; then
		awk -v tf="$tf" -v b="<!-- $name:begin" -v e="<!-- $name:end" '
			index($0, b) == 1 { while ((getline l < tf) > 0) print l; skip = 1; next }
			index($0, e) == 1 { skip = 0; next }
			!skip { print }' "$doc" > "$doc.tmp" && mv "$doc.tmp" "$doc"
	else
		{ printf '\n'; cat "$tf"; } >> "$doc"
	fi
	rm -f "$tf"
	echo "$name: results written to $doc" >&2
}
