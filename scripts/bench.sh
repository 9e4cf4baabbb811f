#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# bench.sh: run every scripts/bench-*.sh in turn (make bench).  Each writes
# its own section of docs/benchmarks.md.  Exits non-zero if any failed.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
rc=0
for b in "$top"/scripts/bench-*.sh; do
	[ -x "$b" ] || continue
	echo "== $(basename "$b")" >&2
	"$b" || { echo "bench.sh: $(basename "$b") failed" >&2; rc=1; }
done
exit $rc
