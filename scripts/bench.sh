#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# bench.sh: run every scripts/bench-*.sh (called by `make bench`).  Each one
# prints its table and writes it into docs/benchmarks.md between its own
# markers.  A failing benchmark is reported and the others still run.
. "$(dirname "$0")/lib/preamble.sh"
set +e
doc=$top/docs/benchmarks.md
failed=()
ran=0
for b in "$top"/scripts/bench-*.sh; do
	[ -e "$b" ] || continue
	name=$(basename "$b" .sh)
	echo "== $name" >&2
	ran=$((ran + 1))
	if ! bash "$b"; then
		echo "bench: $name FAILED" >&2
		failed+=("$name")
	fi
done
if [ "$ran" = 0 ]; then
	echo "bench: no scripts/bench-*.sh found" >&2
	exit 1
fi
echo "bench: $ran benchmark(s) run; results in $doc" >&2
if [ ${#failed[@]} -gt 0 ]; then
	echo "bench: failed: ${failed[*]}" >&2
	exit 1
fi
