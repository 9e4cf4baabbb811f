# SPDX-License-Identifier: Apache-2.0
# Sourced by scripts/bench-*.sh.
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
