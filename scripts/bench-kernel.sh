#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# bench-kernel.sh: records/s through the bridge into tracefs versus through
# hmb-trace-daemon via mmap, same guest, same producer (the
# module's test producer at full rate), same run: the VM suite
# kernel/vm-suite/bridge-bench.sh with HMB_BENCH_SECS (default 10) per
# consumer.  Writes its table into docs/benchmarks.md between the
# "bench-kernel" markers (HMB_BENCH_NO_DOC=1 leaves the doc alone).
. "$(dirname "$0")/lib/preamble.sh"
set -o pipefail
. "$top/scripts/lib/bench-doc.sh"
secs=${HMB_BENCH_SECS:-10}
make -s -C "$top" all >&2
make -s -C "$top/kernel" module >&2
make -s -C "$top/selftests" all >&2
"$top/scripts/vm/vm-run" --env "HMB_BENCH_SECS=$secs" bridge-bench >&2
res=$top/build/vm/runs/bridge-bench/results/bridge-bench/bench.txt
[ -f "$res" ] || { echo "bench-kernel: no $res" >&2; exit 1; }
get() { sed -n "s/^$1=//p" "$res"; }
table=$(cat <<EOT
<!-- bench-kernel:begin -->
## Kernel: bridge into tracefs vs daemon via mmap

Measured $(date -u +%Y-%m-%d) by \`HMB_BENCH_SECS=$secs scripts/bench-kernel.sh\` (or \`make bench\`): Debian $(ls "$top/build/vm/kernel" 2>/dev/null | head -1) guest under QEMU TCG (2 vCPUs), the module's test producer at full rate (payloads 16..64 bytes, 4 MiB ring), ${secs} s per consumer in one run; records/s = the tail's advance over the producer's mean record size.

| consumer | records/s | producer made | producer dropped (ring full) |
|---|---|---|---|
| bridge -> \`hmb_trace_record\` -> ftrace buffer | $(get bridge_rps) | $(get bridge_produced) | $(get bridge_dropped) |
| \`hmb-trace-daemon --device\` (mmap) -> tmpfs file | $(get daemon_rps) | $(get daemon_produced) | $(get daemon_dropped) |

Ratio bridge / daemon: **$(get ratio)**; under TCG only the ratio means anything. A producer that drops outran its consumer, so the rate is the consumer's ceiling (a drop is one check, no copy, hence the large counts).
<!-- bench-kernel:end -->
EOT
)
echo "$table"
printf '%s\n' "$table" | bench_doc bench-kernel
