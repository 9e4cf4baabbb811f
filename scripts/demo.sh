#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# demo.sh (make demo): the whole story, on the VM bench, in a few minutes.
#
# A Debian 12 guest under QEMU has a real NVMe controller (QEMU's model) and
# an ivshmem device whose memory is a /dev/shm file on this machine, the
# stand-in for the firmware's trace slice of the Host Memory Buffer.  QEMU
# traces what its NVMe model does with every command; hmb-fwsim
# --from-qemu-trace, here on the VM host, turns that trace into the firmware
# records of those very commands and writes them into the ring (and keeps
# them all in a dump).  In the guest, nvme-hmb-trace.ko reads the ring and
# bridges each record to a tracepoint; hmb-trace-agent joins them with the
# NVMe command tracepoints while fio runs.  Back here, hmb-trace-analyze
# reads the dump: stats, the offline join against the agent's output (which
# must agree with the live one), an HTML report and a Perfetto trace.
#
# The guest half is scripts/demo-guest.sh, run by scripts/vm/vm-run.  If the
# VM bench cannot run here (no QEMU, no Debian kernel headers, no module
# build), this says why and runs the host-only demo (scripts/demo-host.sh).
# Knobs: HMB_DEMO_FIO_SECS (seconds per fio phase, default 10),
# HMB_DEMO_DIR (default build/demo).
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
bin=$top/build/bin
out=${HMB_DEMO_DIR:-$top/build/demo}
secs=${HMB_DEMO_FIO_SECS:-10}
start=$SECONDS
last=$SECONDS

bold() { printf '\033[1m%s\033[0m\n' "$*"; }
took() { printf '   (%d s; %d s so far)\n' $((SECONDS - last)) $((SECONDS - start)); last=$SECONDS; }
say() { printf '\n'; bold "== $*"; }
run() { printf '$ %s\n' "$*"; "$@"; }
rel() { printf '%s' "${1#"$top"/}"; }

for p in hmb-fwsim hmb-trace-agent hmb-trace-analyze; do
	[ -x "$bin/$p" ] || { echo "demo: $bin/$p missing; run make first" >&2; exit 1; }
done

fallback() {
	echo
	bold "make demo: the VM part cannot run on this machine: $1"
	echo "So this is the host-only demo instead (make demo-host): the firmware"
	echo "simulator, the daemon and the analyzer, without a kernel module or VM."
	echo "For the whole story: $2; then make demo again."
	"$top/scripts/demo-host.sh"
	echo
	bold "make demo ran the host-only demo only: $1"
	exit 0
}
command -v "${HMB_VM_QEMU:-qemu-system-x86_64}" >/dev/null ||
	fallback "${HMB_VM_QEMU:-qemu-system-x86_64} is not installed" "scripts/deps.sh vm"
dpkg-query -W linux-headers-amd64 >/dev/null 2>&1 ||
	fallback "linux-headers-amd64 is not installed" "scripts/deps.sh kernel vm"

bold "nvme-hmb-trace demo: firmware trace records of real NVMe commands, joined live with the host's view"
cat <<EOF
Steps: build the kernel module, prepare the guest (the first time only),
boot a QEMU guest with an NVMe disk, run fio on it for 2 x ${secs} s while the
agent joins host and firmware events, then read the firmware's dump here.
About 2 minutes on 2 cores once built (the guest runs under TCG, no KVM needed).
Everything lands in $(rel "$out")/.
EOF
mkdir -p "$out"
rm -rf "$out/vm"
rm -f "$out"/agent.txt "$out"/agent.jsonl "$out"/agent*.err "$out"/fw.bin "$out"/fw-*.log \
	"$out"/fw-report.json "$out"/fio-*.txt "$out"/stats.txt "$out"/correlate.* \
	"$out"/report.html "$out"/trace.perfetto.json "$out"/matches-*.txt "$out"/vm.tap

say "1. Build nvme-hmb-trace.ko for the guest's kernel (Debian's, ~20 s)"
printf '$ make -C kernel module\n'
if ! make -s -C "$top/kernel" module >"$out/module-build.log" 2>&1; then
	tail -20 "$out/module-build.log"
	fallback "the kernel module does not build (log: $(rel "$out")/module-build.log)" \
		"scripts/deps.sh kernel"
fi
tail -1 "$out/module-build.log"
took

say "2. Prepare the guest: Debian's kernel image and a busybox initramfs (first time 30-70 s, then cached)"
printf '$ scripts/vm/build-guest\n'
if ! "$top/scripts/vm/build-guest" >"$out/guest-build.log" 2>&1; then
	tail -20 "$out/guest-build.log"
	echo "demo: the guest could not be prepared (log: $(rel "$out")/guest-build.log)" >&2
	exit 1
fi
tail -2 "$out/guest-build.log"
took

say "3. Boot the guest and run the workload (~$((2 * secs + 30))-$((2 * secs + 60)) s under TCG)"
cat <<EOF
   VM host: QEMU traces its NVMe model -> hmb-fwsim --from-qemu-trace writes
            the firmware records of those commands into the ivshmem ring,
            with its own clock (1 s offset, 50 ppm fast) and background
            garbage-collection/thermal windows, and keeps them all in fw.bin
   guest:   nvme-hmb-trace.ko (ivshmem provider, bridge on) -> tracepoint
            hmb_trace:hmb_trace_record; hmb-trace-agent joins it with
            nvme:nvme_setup_cmd / nvme_complete_rq; fio randrw 4k QD1, QD32
EOF
printf '$ scripts/vm/vm-run --live --run-dir %s scripts/demo-guest.sh\n' "$(rel "$out/vm")"
set +e
"$top/scripts/vm/vm-run" --live --run-dir "$out/vm" --env "HMB_DEMO_FIO_SECS=$secs" \
	"$top/scripts/demo-guest.sh" >"$out/vm.tap" 2> >(sed -u 's/^/   | /' >&2)
vrc=$?
set -e
sleep 0.2	# let the indenting sed finish
res=$out/vm/results/demo-guest
if [ $vrc != 0 ] || [ ! -s "$res/agent.txt" ] || [ ! -s "$res/fw.bin" ]; then
	echo
	bold "demo: the VM part failed (vm-run status $vrc)"
	grep -E '^(not ok|#)' "$out/vm.tap" | head -20 || true
	echo "The guest console: $(rel "$out/vm/console.log"); its files: $(rel "$res")/"
	exit 1
fi
for f in agent.txt agent.jsonl agent.err agent-text.err fw.bin fw-cmd.log fw-report.json \
	fio-qd1.txt fio-qd32.txt; do
	[ -e "$res/$f" ] && mv "$res/$f" "$out/"
done
took

export PATH=$bin:$PATH
say "4. What hmb-trace-agent showed in the guest, live (agent.txt)"
echo "Per command: host submit -> fw fetch -> fw media -> fw cqe posted -> host"
echo "complete; log2 histograms per phase; the slowest commands with their"
echo "firmware events and the gc/thermal windows in flight; the clock estimate."
echo
cat "$out/agent.txt"
took

say "5. The firmware's side, from its dump on the VM host: hmb-trace-analyze stats"
run hmb-trace-analyze stats "$out/fw.bin" | tee "$out/stats.txt"
took

say "6. The same join offline: hmb-trace-analyze correlate (dump + the agent's JSON lines)"
run hmb-trace-analyze correlate "$out/fw.bin" "$out/agent.jsonl" -o "$out/correlate.txt"
sed -n '1,/^$/p' "$out/correlate.txt" | head -20
hmb-trace-analyze correlate "$out/fw.bin" "$out/agent.jsonl" -j -o "$out/correlate.jsonl"
m=$top/user/agent/vm-suite/cmd-matches.awk
awk -f "$m" "$out/agent.jsonl" | sort > "$out/matches-live.txt"
awk -f "$m" "$out/correlate.jsonl" | sort > "$out/matches-offline.txt"
nl=$(wc -l < "$out/matches-live.txt")
no=$(wc -l < "$out/matches-offline.txt")
same=$(comm -12 "$out/matches-live.txt" "$out/matches-offline.txt" | wc -l)
echo "live agent: $nl commands with firmware records; offline correlate: $no;"
echo "identical (qid, cid, host submit) -> firmware record seqs: $same"
[ "$same" = "$nl" ] && [ "$same" = "$no" ] && echo "=> the offline join agrees with the live one, command for command" ||
	echo "=> they differ: compare $(rel "$out")/matches-live.txt and matches-offline.txt"
took

say "7. An HTML report and a Perfetto trace of the dump, with the host's commands"
run hmb-trace-analyze report "$out/fw.bin" --host "$out/agent.jsonl" -o "$out/report.html"
run hmb-trace-analyze convert "$out/fw.bin" "$out/trace.perfetto.json" --to perfetto \
	--host "$out/agent.jsonl"
took

say "Done in $((SECONDS - start)) s.  Everything is in $(rel "$out")/:"
cat <<EOF
  agent.txt            the agent's live report (what step 4 showed)
  agent.jsonl          the agent's JSON lines (-j --per-command): every command
  fw.bin               the firmware's records as a dump (hmb-fwsim --log)
  fw-cmd.log           which QEMU command each firmware record came from
  stats.txt            hmb-trace-analyze stats of fw.bin
  correlate.txt/.jsonl the offline join of fw.bin with agent.jsonl
  report.html          open in a browser (self-contained, no network)
  trace.perfetto.json  open in https://ui.perfetto.dev or chrome://tracing
  fio-qd1.txt, fio-qd32.txt, vm/ (guest console, QEMU trace log)
Try next:
  hmb-trace-analyze decode $(rel "$out")/fw.bin | less
  hmb-trace-analyze convert $(rel "$out")/fw.bin $(rel "$out")/ctf --to ctf && babeltrace2 $(rel "$out")/ctf | head
  make demo-host    the classic path (daemon, losses) without a VM
EOF
