#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# bench-bpf-join.sh: the agent's in-kernel join alone, on this machine's
# own kernel (the component without a VM): BPF run time
# per command submission, completion and firmware record of
# hmb_agent.bpf.c's join core, driven through its test program with
# BPF_PROG_TEST_RUN (user/agent/tests/bench_bpf_join.c), against
# biolatency's work per I/O (a hash insert at issue; lookup, histogram
# and delete at completion) run through the same test program in the
# same rounds.  HMB_BENCH_RUNS runs (default 5) of HMB_BENCH_ROUNDS rounds
# (default 7) of 4096 commands each, each run once with the records one
# per program run (hmb_trace_record) and once in batches of up to 64
# (hmb_trace_records, --batch), and once in batches armed as the flight
# recorder arms the agent (three latency triggers, --armed), interleaved;
# medians.  The guest's figures with
# the real tracepoints are bench-agent-vm.sh's.  Needs root.  Prints a
# Markdown table and writes it into docs/benchmarks.md between the
# "bench-bpf-join" markers (HMB_BENCH_NO_DOC=1 to leave the doc alone).
. "$(dirname "$0")/lib/preamble.sh"
set -o pipefail
. "$top/scripts/lib/bench-doc.sh"
runs=${HMB_BENCH_RUNS:-5}
rounds=${HMB_BENCH_ROUNDS:-7}
bin=$top/build/tests/agent/bench_bpf_join
[ "$(id -u)" = 0 ] || { echo "bench-bpf-join: needs root (BPF)" >&2; exit 1; }
make -s -C "$top/user/agent" "$bin" >&2
out=$(mktemp)
tab=$(mktemp)
trap 'rm -f "$out" "$tab"' EXIT
for r in $(seq 1 "$runs"); do
	for b in "" --batch "--batch --armed"; do
		"$bin" "$top/share/hmb-events.dict" "$rounds" --json $b >> "$out"
		echo "bench-bpf-join: run $r${b:+ ($b)}: $(tail -n 1 "$out")" >&2
	done
done
python3 "$top/scripts/lib/bpf-join-table.py" "$out" "$runs" "$rounds" "$(uname -r)" "$(nproc)" \
	"$(cut -d' ' -f1-3 /proc/loadavg)" > "$tab"
cat "$tab"
bench_doc bench-bpf-join < "$tab"
