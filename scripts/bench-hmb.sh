#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# bench-hmb.sh: records/s that the HMB controller model + the bridge and the
# HMB controller model + hmb-trace-daemon --device sustain in the guest,
# without drops, same guest, same producer, same run: the VM
# suite kernel/vm-suite/hmb-bench.sh with HMB_BENCH_SECS (default 10) per
# consumer.  Writes its table into docs/benchmarks.md between the
# "bench-hmb" markers (HMB_BENCH_NO_DOC=1 leaves the doc alone).
. "$(dirname "$0")/lib/preamble.sh"
set -o pipefail
. "$top/scripts/lib/bench-doc.sh"
. "$top/scripts/lib/bench-vm.sh"
secs=${HMB_BENCH_SECS:-10}
bench_vm bench-hmb hmb-bench HMB_BENCH_SECS kernel/vm-suite/hmb-bench.sh
table=$(cat <<EOT
<!-- bench-hmb:begin -->
## The HMB path: the controller model with the bridge vs with the daemon

Measured $(date -u +%Y-%m-%d) by \`HMB_BENCH_SECS=$secs scripts/bench-hmb.sh\` (or \`make bench\`): Debian $(ls "$top/build/vm/kernel" 2>/dev/null | head -1) guest under QEMU TCG (2 vCPUs); the VM bench's HMB-capable NVMe controller (\`$props\`) writing, by DMA into a 2 MiB trace slice of the patched nvme.ko, the records of fio's QD32 random reads plus background windows (a QEMU timer); ${secs} s per consumer in one run. Made = the controller's seq counter over the window (records it wrote or dropped); sustained = records the consumer took in the window (the bridge's own count; for the daemon the tail it moved over the dump's mean record size); dropped = the controller's drops the consumer counted (ring full).

| consumer | made/s by the controller | sustained records/s | dropped |
|---|---|---|---|
| bridge -> \`hmb_trace_record\` -> ftrace buffer | $(get bridge_made_rps) | $(get bridge_rps) | $(get bridge_lost) |
| \`hmb-trace-daemon --device\` (mmap) -> tmpfs file | $(get daemon_made_rps) | $(get daemon_rps) | $(get daemon_lost) |

Ratio bridge / daemon: **$(get ratio)**; under TCG only the ratio means anything. With no drops each consumer took all the model made: the model (TCG I/O and its timer) is the bottleneck, and each consumer's CPU use slows the guest's I/O (the bridge formats every record), so the ratio is what each let the guest do while it consumed everything.
<!-- bench-hmb:end -->
EOT
)
echo "$table"
printf '%s\n' "$table" | bench_doc bench-hmb
