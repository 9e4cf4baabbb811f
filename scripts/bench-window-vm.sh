#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# bench-window-vm.sh: hmb-trace-agent's flight recorder in the guest, on
# the real HMB path: its memory over HMB_WINDOW_SECS (default 600) of
# steady I/O while armed (--snapshot-dir, a trigger that fires on the
# controller's slowed commands), and its CPU and BPF run time per command
# armed against unarmed, interleaved in the same boot.  The VM bench
# scripts/vm/bench/window-bench.sh (not a `make check` suite); this
# script boots it once and writes its table into docs/benchmarks.md
# between the "bench-window-vm" markers (HMB_BENCH_NO_DOC=1 leaves the
# doc alone; HMB_BENCH_FROM=FILE redoes the table from an earlier run's
# bench.txt; HMB_WINDOW_COST_SECS, _ROUNDS, _MB, _PERF are handed to the
# suite, see its header).  Fails if the agent's RSS passed its bound (the table is
# written all the same).
. "$(dirname "$0")/lib/preamble.sh"
set -o pipefail
. "$top/scripts/lib/bench-doc.sh"
secs=${HMB_WINDOW_SECS:-600}
runs=$top/build/vm/runs
suite=$top/scripts/vm/bench/window-bench.sh
res=${HMB_BENCH_FROM:-$runs/window-bench/results/window-bench/bench.txt}
rc=0
if [ -z "${HMB_BENCH_FROM:-}" ]; then
	make -s -C "$top" all >&2
	make -s -C "$top/kernel" module nvme-patched >&2
	rm -rf "$runs/window-bench"
	envs=(--env "HMB_WINDOW_SECS=$secs")
	for v in HMB_WINDOW_COST_SECS HMB_WINDOW_ROUNDS HMB_WINDOW_MB HMB_WINDOW_PERF; do
		[ -z "${!v:-}" ] || envs+=(--env "$v=${!v}")
	done
	"$top/scripts/vm/vm-run" --run-dir "$runs/window-bench" "${envs[@]}" "$suite" >&2 || rc=1
fi
[ -s "$res" ] || { echo "bench-window-vm: no $res" >&2; exit 1; }
table=$(python3 "$top/scripts/lib/window-table.py" "$res" "$secs" \
	"$(ls "$top/build/vm/kernel" 2>/dev/null | head -1)" \
	"$(sed -n 's/^# vm-nvme-hmb: //p' "$suite")") || { [ $? = 3 ] && rc=1 || exit 1; }
echo "$table"
printf '%s\n' "$table" | bench_doc bench-window-vm
exit $rc
