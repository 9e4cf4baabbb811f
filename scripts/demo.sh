#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# demo.sh (make demo): the whole story, on the VM bench, in a few minutes.
#
# The real HMB path (the default): a Debian 12 guest under QEMU has the VM
# bench's HMB-capable NVMe controller (the project's patches to QEMU 7.2's
# model, scripts/vm/qemu; built on the first run, then cached).  The
# project's patched nvme.ko gives it a Host Memory Buffer whose last
# descriptor is a firmware trace slice; for every command it serves the
# controller writes firmware records into the slice by DMA, on its own
# clock.  In the guest nvme-hmb-trace.ko adopts the slice; its bridge emits
# each record as a tracepoint and hmb-trace-agent joins them live with the
# NVMe command tracepoints while fio runs; then hmb-trace-daemon drains the
# ring into a dump while fio runs again.  Back here, hmb-trace-analyze reads
# the dump: stats, the offline join against the host's commands (held to
# the controller's own account), an HTML report and a Perfetto trace.
#
# The stand-in path (the fallback, or HMB_DEMO_PATH=ivshmem): QEMU's own
# NVMe model without an HMB; hmb-fwsim --from-qemu-trace, here on the VM
# host, turns QEMU's trace of it into the firmware records of the very
# commands the guest issues and writes them into an ivshmem BAR.  It runs
# when the QEMU build cannot run here, and says why first.
#
# The guest halves are scripts/demo-guest-hmb.sh and scripts/demo-guest.sh,
# run by scripts/vm/vm-run.  If the VM bench cannot run at all (no QEMU, no
# Debian kernel headers, no module build), this says why and runs the
# host-only demo (scripts/demo-host.sh).
# Knobs: HMB_DEMO_FIO_SECS (seconds per fio phase, default 10),
# HMB_DEMO_PATH (hmb, the default, or ivshmem), HMB_DEMO_DIR (default
# build/demo).
. "$(dirname "$0")/lib/preamble.sh"
set -o pipefail
bin=$top/build/bin
out=${HMB_DEMO_DIR:-$top/build/demo}
secs=${HMB_DEMO_FIO_SECS:-10}
path=${HMB_DEMO_PATH:-hmb}
# The flight recorder's trigger on the real HMB path (scripts/demo-guest-hmb.sh,
# whose controller makes every 5000th command 500 ms slow)
trigger='host_total>200ms'
start=$SECONDS
last=$SECONDS

bold() { printf '\033[1m%s\033[0m\n' "$*"; }
took() { printf '   (%d s; %d s so far)\n' $((SECONDS - last)) $((SECONDS - start)); last=$SECONDS; }
say() { printf '\n'; bold "== $*"; }
run() { printf '$ %s\n' "$*"; "$@"; }
rel() { printf '%s' "${1#"$top"/}"; }

for p in hmb-fwsim hmb-trace-agent hmb-trace-analyze hmb-trace-daemon; do
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

case $path in hmb|ivshmem) ;; *) echo "demo: HMB_DEMO_PATH is hmb or ivshmem, not '$path'" >&2; exit 2 ;; esac
qemu_build=$top/scripts/vm/qemu/build-qemu
qemu_cached=0
[ "$path" = hmb ] && "$qemu_build" --check >/dev/null 2>&1 && qemu_cached=1
why=

bold "nvme-hmb-trace demo: firmware trace records of real NVMe commands, joined live with the host's view"
if [ "$path" = ivshmem ]; then
	qemu_line="use Debian's QEMU (HMB_DEMO_PATH=ivshmem: the stand-in path)"
elif [ $qemu_cached = 1 ]; then
	qemu_line="reuse the HMB-capable QEMU built before (build/qemu/)"
else
	qemu_line="build the HMB-capable QEMU (FIRST RUN ONLY: 5 to 16 minutes on 2 cores,
see step 2; cached in build/qemu/ after)"
fi
cat <<EOF
Steps: build the kernel module and the patched nvme driver, $qemu_line,
prepare the guest (the first time only), boot a QEMU guest with an NVMe disk,
run fio on it while the agent joins host and firmware events live, then read
the firmware's records here.  About 3 minutes on 2 cores once built (the guest
runs under TCG, no KVM needed).  Everything lands in $(rel "$out")/.
EOF
mkdir -p "$out"
rm -rf "$out/vm"
rm -f "$out"/agent.txt "$out"/agent.jsonl "$out"/agent*.err "$out"/agent-host.* "$out"/fw.bin \
	"$out"/fw.bin.meta "$out"/fw-*.log "$out"/fw-report.json "$out"/fio-*.txt "$out"/stats.txt \
	"$out"/correlate.* "$out"/report.html "$out"/trace.pftrace "$out"/matches-*.txt \
	"$out"/vm.tap "$out"/account*.json "$out"/nvme-account.jsonl "$out"/daemon.*
rm -rf "$out/snap"

say "1. Build nvme-hmb-trace.ko and the patched nvme.ko for the guest's kernel (Debian's, ~30 s)"
printf '$ make -C kernel module\n'
if ! make -s -C "$top/kernel" module >"$out/module-build.log" 2>&1; then
	tail -20 "$out/module-build.log"
	fallback "the kernel module does not build (log: $(rel "$out")/module-build.log)" \
		"scripts/deps.sh kernel"
fi
tail -1 "$out/module-build.log"
if [ "$path" = hmb ]; then
	printf '$ make -C kernel nvme-patched\n'
	if make -s -C "$top/kernel" nvme-patched >"$out/nvme-build.log" 2>&1; then
		grep -E '^(ok|not ok)' "$out/nvme-build.log" | tail -2
	else
		grep -E '^(ok|not ok|#)' "$out/nvme-build.log" | tail -10
		path=ivshmem
		why="the patched nvme.ko does not build (log: $(rel "$out")/nvme-build.log)"
	fi
fi
took

if [ "$path" = hmb ]; then
	say "2. The HMB-capable QEMU: Debian 12's qemu 7.2 + the project's NVMe HMB controller (scripts/vm/qemu)"
	if [ $qemu_cached = 1 ]; then
		printf '$ scripts/vm/qemu/build-qemu\n'
		"$qemu_build" 2>&1 | sed 's/^/   /'
	else
		cat <<EOF
   Not built on this machine yet: building it now, once.  It takes 5 to 16
   minutes on 2 cores (15 min 34 s measured with the machine loaded 6x over
   by other builds; about a third of that idle); later runs reuse
   build/qemu/ and skip this.  Its progress follows.
EOF
		printf '$ scripts/vm/qemu/build-qemu\n'
		set +e
		"$qemu_build" 2> >(tee "$out/qemu-build.log" | sed -u 's/^/   | /' >&2)
		qrc=$?
		set -e
		sleep 0.2	# let the indenting sed finish
		if [ $qrc = 3 ]; then
			path=ivshmem
			why="this machine cannot build the HMB-capable QEMU: $(grep 'cannot build here' "$out/qemu-build.log" | tail -1 | sed 's/.*cannot build here: //')"
		elif [ $qrc != 0 ]; then
			path=ivshmem
			why="the QEMU build failed (exit $qrc; log: $(rel "$out")/qemu-build.log)"
		fi
	fi
	took
fi
if [ "$path" = ivshmem ]; then
	echo
	if [ -n "$why" ]; then
		bold "make demo: the real HMB path cannot run: $why"
		echo "So the demo runs the stand-in path instead: QEMU's own NVMe model, with"
		echo "hmb-fwsim turning QEMU's trace of it into firmware records in an ivshmem BAR."
	else
		bold "HMB_DEMO_PATH=ivshmem: the stand-in path (hmb-fwsim from QEMU's NVMe trace, ivshmem)"
	fi
	say "2. QEMU: Debian's own $(command -v "${HMB_VM_QEMU:-qemu-system-x86_64}") (its NVMe model has no HMB; nothing to build)"
fi

say "3. Prepare the guest: Debian's kernel image and a busybox initramfs (first time 30-70 s, then cached)"
printf '$ scripts/vm/build-guest\n'
if ! "$top/scripts/vm/build-guest" >"$out/guest-build.log" 2>&1; then
	tail -20 "$out/guest-build.log"
	echo "demo: the guest could not be prepared (log: $(rel "$out")/guest-build.log)" >&2
	exit 1
fi
tail -2 "$out/guest-build.log"
took

if [ "$path" = hmb ]; then
	say "4. Boot the guest and run the workload (~$((3 * secs + 40))-$((3 * secs + 90)) s under TCG)"
	cat <<EOF
   controller: the HMB model asks for an 8 MiB HMB; the patched nvme.ko
            (hmb_trace_kb=1024) makes its last descriptor a 1 MiB trace ring
            and writes its header; the controller writes a record per command
            phase by DMA, on its own clock (1 s offset, 50 ppm fast), and
            garbage-collection/thermal windows; it makes every 5000th
            command 500 ms slow; it keeps an account
   guest:   nvme-hmb-trace.ko adopts the slice (auxiliary bus);
            live: bridge -> hmb_trace:hmb_trace_records -> hmb-trace-agent joins
            nvme:nvme_setup_cmd / nvme_complete_rq; fio randrw 4k QD1, QD32;
            the JSON agent is armed as a flight recorder: --trigger
            '$trigger' (a command slower than 200 ms) writes a bundle
            (snap/SNAP-*/), at most 3, 3 s apart;
            then hmb-trace-daemon --device -> fw.bin while fio QD32 runs again
EOF
	guest=$top/scripts/demo-guest-hmb.sh
	keep="agent.txt agent.jsonl agent.err agent-text.err agent-host.jsonl agent-host.err fw.bin fw.bin.meta daemon.json daemon.err account-check.json fio-qd1.txt fio-qd32.txt fio-offline.txt snap"
else
	say "4. Boot the guest and run the workload (~$((2 * secs + 30))-$((2 * secs + 60)) s under TCG)"
	cat <<EOF
   VM host: QEMU traces its NVMe model -> hmb-fwsim --from-qemu-trace writes
            the firmware records of those commands into the ivshmem ring,
            with its own clock (1 s offset, 50 ppm fast) and background
            garbage-collection/thermal windows, and keeps them all in fw.bin
   guest:   nvme-hmb-trace.ko (ivshmem provider, bridge on) -> tracepoint
            hmb_trace:hmb_trace_records; hmb-trace-agent joins it with
            nvme:nvme_setup_cmd / nvme_complete_rq; fio randrw 4k QD1, QD32
EOF
	guest=$top/scripts/demo-guest.sh
	keep="agent.txt agent.jsonl agent.err agent-text.err fw.bin fw-cmd.log fw-report.json fio-qd1.txt fio-qd32.txt"
fi
printf '$ scripts/vm/vm-run --live --run-dir %s %s\n' "$(rel "$out/vm")" "$(rel "$guest")"
set +e
"$top/scripts/vm/vm-run" --live --run-dir "$out/vm" --env "HMB_DEMO_FIO_SECS=$secs" \
	--env "HMB_DEMO_TRIGGER=$trigger" "$guest" >"$out/vm.tap" 2> >(sed -u 's/^/   | /' >&2)
vrc=$?
set -e
sleep 0.2	# let the indenting sed finish
res=$out/vm/results/$(basename "$guest" .sh)
if [ $vrc != 0 ] || [ ! -s "$res/agent.txt" ] || [ ! -s "$res/fw.bin" ]; then
	echo
	bold "demo: the VM part failed (vm-run status $vrc)"
	grep -E '^(not ok|#)' "$out/vm.tap" | head -20 || true
	echo "The guest console: $(rel "$out/vm/console.log"); its files: $(rel "$res")/"
	exit 1
fi
for f in $keep; do
	[ -e "$res/$f" ] && mv "$res/$f" "$out/"
done
[ "$path" = hmb ] && cp "$out/vm/results/.vm/nvme-account.jsonl" "$out/"
took

export PATH=$bin:$PATH
say "5. What hmb-trace-agent showed in the guest, live (agent.txt)"
echo "Per command: host submit -> fw fetch -> fw media -> fw cqe posted -> host"
echo "complete; log2 histograms per phase; the slowest commands with their"
echo "firmware events and the gc/thermal windows in flight; the clock estimate."
echo
cat "$out/agent.txt"
took

if [ "$path" = hmb ]; then
	say "6. The firmware's side: the ring drained by hmb-trace-daemon --device (fw.bin): hmb-trace-analyze stats"
else
	say "6. The firmware's side, from its dump on the VM host: hmb-trace-analyze stats"
fi
run hmb-trace-analyze stats "$out/fw.bin" | tee "$out/stats.txt"
took

if [ "$path" = hmb ]; then
	say "7. The join offline: hmb-trace-analyze correlate (the dump + the host's commands the agent saw)"
	run hmb-trace-analyze correlate "$out/fw.bin" "$out/agent-host.jsonl" -o "$out/correlate.txt"
	sed -n '1,/^$/p' "$out/correlate.txt" | head -20
	hmb-trace-analyze correlate "$out/fw.bin" "$out/agent-host.jsonl" -j -o "$out/correlate.jsonl"
	echo "Held to the controller's own account of which command each record came from:"
	if "$top/scripts/vm/host/agent-attribution" "$out/correlate.jsonl" \
		--account "$out/nvme-account.jsonl" > "$out/account-attribution.json"; then
		echo "=> $(sed -n 's/.*"commands": \([0-9]*\).*/\1/p' "$out/account-attribution.json") commands joined offline, each record to the command the controller wrote it for"
	else
		echo "=> misattributed: $(cat "$out/account-attribution.json")"
	fi
	j() { sed -n "s/.*\"$1\":\([0-9]*\).*/\1/p" "$out/account-check.json"; }
	echo "and the dump itself (nvme-account-check): its $(j dump_records) records are all records the controller"
	echo "wrote, with their opcodes, timestamps and commands ($(j mismatched) mismatched, $(j not_in_account) not in its account);"
	echo "the controller also wrote the $(j undelivered) records the bridge took live in step 4's first part."
	host=$out/agent-host.jsonl
	took
else
	say "7. The same join offline: hmb-trace-analyze correlate (dump + the agent's JSON lines)"
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
	host=$out/agent.jsonl
	took
fi

say "8. An HTML report and a Perfetto trace of the dump, with the host's commands"
run hmb-trace-analyze report "$out/fw.bin" --host "$host" -o "$out/report.html"
run hmb-trace-analyze convert "$out/fw.bin" "$out/trace.pftrace" --to perfetto \
	--host "$host"
took

snaps=()
if [ "$path" = hmb ]; then
	say "9. The flight recorder: the bundles the armed agent wrote in the guest (snap/)"
	shopt -s nullglob
	snaps=("$out"/snap/SNAP-*/)
	shopt -u nullglob
	snaps=("${snaps[@]%/}")
	# the agent's own count, from the "snapshots" object of its last report
	sj=$(grep -o '"snapshots":{[^}]*' "$out/agent.jsonl" | tail -1 || true)
	k() { printf '%s' "$sj" | sed -n "s/.*\"$1\":\([0-9]*\).*/\1/p"; }
	snapsum=
	[ -z "$sj" ] || snapsum="$(k requests) requested, $(k written) written, $(k failed) failed, $(k suppressed) suppressed (holdoff $(k suppressed_holdoff), max $(k suppressed_max), pending $(k suppressed_pending))"
	echo "the agent's count: snapshots ${snapsum:-unknown (no report in agent.jsonl)}"
	if [ ${#snaps[@]} -gt 0 ]; then
		first=${snaps[0]}
		printf '$ hmb-trace-analyze stats %s > %s\n' "$first/trace.bin" "$first/stats.txt"
		hmb-trace-analyze stats "$first/trace.bin" > "$first/stats.txt"
		grep -E '^(records|time|lost):' "$first/stats.txt"
		run hmb-trace-analyze correlate "$first/trace.bin" "$first/host.jsonl" \
			-o "$first/correlate.txt"
		run hmb-trace-analyze report "$first/trace.bin" --host "$first/host.jsonl" \
			-o "$first/report.html"
		slow=$(sed -n '/slowest commands:/{n;s/^ *#1 *//;p;q}' "$first/correlate.txt")
		# what fired it: trigger.json's value and threshold, in ms
		tj() { sed -n "s/.*\"$1\":\([0-9]*\).*/\1/p" "$first/trigger.json"; }
		fired=$(awk -v v="$(tj value_ns)" -v t="$(tj threshold_ns)" -v o="$(sed -n 's/.*"opc":"\([a-z0-9]*\)".*/\1/p' "$first/trigger.json")" \
			'BEGIN { if (v != "") printf "a %s of %.1f ms over a threshold of %.1f ms", o, v / 1e6, t / 1e6 }')
		split=$(sed -n '/slowest commands:/{n;n;s/^ *= *//;p;q}' "$first/correlate.txt")
		# the firing command in the controller's account of what it slowed
		q=$(tj qid) c=$(tj cid) s=$(tj slba)
		slowed=$(grep -E "\"ev\":\"slow\",\"sqid\":$q,\"cid\":$c,\"opc\":[0-9]+,\"slba\":$s," \
			"$out/nvme-account.jsonl" | head -1 || true)
		sa() { printf '%s' "$slowed" | sed -n "s/.*\"$1\":\([0-9]*\).*/\1/p"; }
		if [ -n "$slowed" ]; then
			slowed="q$q cid $c slba $s: one the controller slowed (nvme-account.jsonl \"slow\": fetch seq $(sa fetch_seq), held $(awk -v d="$(sa delay_ns)" 'BEGIN { printf "%.1f", d / 1e6 }') ms)"
		else
			slowed="q$q cid $c slba $s: NOT one the controller slowed (no \"slow\" line for it in nvme-account.jsonl)"
		fi
	fi
	took
fi

say "Done in $((SECONDS - start)) s.  Everything is in $(rel "$out")/:"
if [ "$path" = hmb ]; then
	cat <<EOF
  agent.txt            the agent's live report (what step 5 showed)
  agent.jsonl          the agent's JSON lines (-j --per-command): every command
  fw.bin (+ .meta)     the firmware's records, drained by hmb-trace-daemon --device
  agent-host.jsonl     the host's commands while fw.bin was recorded
  nvme-account.jsonl   the controller's own account: every command, its records
  stats.txt            hmb-trace-analyze stats of fw.bin
  correlate.txt/.jsonl the offline join of fw.bin with agent-host.jsonl
  report.html          open in a browser (self-contained, no network)
  trace.pftrace        open in https://ui.perfetto.dev (Perfetto's protobuf trace)
  snap/SNAP-*/         the flight recorder's bundles (step 9)
  fio-*.txt, vm/ (guest console)
EOF
else
	cat <<EOF
  agent.txt            the agent's live report (what step 5 showed)
  agent.jsonl          the agent's JSON lines (-j --per-command): every command
  fw.bin               the firmware's records as a dump (hmb-fwsim --log)
  fw-cmd.log           which QEMU command each firmware record came from
  stats.txt            hmb-trace-analyze stats of fw.bin
  correlate.txt/.jsonl the offline join of fw.bin with agent.jsonl
  report.html          open in a browser (self-contained, no network)
  trace.pftrace        open in https://ui.perfetto.dev (Perfetto's protobuf trace)
  fio-qd1.txt, fio-qd32.txt, vm/ (guest console, QEMU trace log)
EOF
fi
cat <<EOF
Try next:
  hmb-trace-analyze decode $(rel "$out")/fw.bin | less
  hmb-trace-analyze convert $(rel "$out")/fw.bin $(rel "$out")/ctf --to ctf && babeltrace2 $(rel "$out")/ctf | head
  HMB_DEMO_PATH=ivshmem make demo   the stand-in path (hmb-fwsim, ivshmem)
  make demo-host    the classic path (daemon, losses) without a VM
EOF
if [ "$path" = hmb ]; then
	echo
	if [ ${#snaps[@]} -gt 0 ]; then
		# why: each bundle's reason is the tail of its name
		why=$(for d in "${snaps[@]}"; do printf '%s\n' "${d##*-}"; done | sort | uniq -c |
			awk '{printf "%s%s x%s", (NR > 1 ? ", " : ""), $2, $1}')
		bold "Flight recorder: ${#snaps[@]} snapshot(s) taken ($why: --trigger '$trigger', a command slower than 200 ms)"
		echo "  the agent's count: ${snapsum:-unknown}"
		echo "  first bundle: $(rel "$first")/ (trigger.json: ${fired:-the command that fired it})"
		echo "  its firing command: $slowed"
		echo "  its report:   $(rel "$first")/report.html (correlate.txt and stats.txt beside it)"
		echo "  its slowest command: ${slow:-none joined (see correlate.txt)}"
		[ -z "${split:-}" ] || echo "    = $split"
	elif [ "$(k requests)" = 0 ] || [ -z "$sj" ]; then
		bold "Flight recorder: NO snapshot was taken: the trigger '$trigger' did not fire"
		echo "  the agent's count: ${snapsum:-unknown}; its stderr: $(rel "$out")/agent.err"
	else
		bold "Flight recorder: NO snapshot came back: the trigger '$trigger' fired, but no bundle was written"
		echo "  the agent's count: ${snapsum:-unknown}; its stderr: $(rel "$out")/agent.err"
	fi
fi
