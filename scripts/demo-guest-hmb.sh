#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# demo-guest-hmb.sh: the guest half of `make demo` on the real HMB path
# (scripts/demo.sh runs it with scripts/vm/vm-run; deliberately not under a
# vm-suite/ directory, so the VM bench does not register it as a suite).
#
# The guest's NVMe controller is the VM bench's HMB-capable model: it asks
# for a Host Memory Buffer, and the project's patched nvme.ko (loaded at
# boot with hmb_trace_kb=1024) hands it one whose last descriptor is the
# trace slice, after writing the ring header.  For every command it serves
# the controller writes firmware records into the slice by DMA, on its own
# clock (1 s offset, 50 ppm fast), plus garbage-collection and thermal
# windows, and it makes every 5000th command it traces 500 ms slow
# (hmb-slow-every, hmb-slow-ns; its account says which).  nvme-hmb-trace.ko
# adopts the slice:
#   1. live: its bridge emits the records as hmb_trace:hmb_trace_records and
#      hmb-trace-agent joins them with nvme:nvme_setup_cmd/nvme_complete_rq
#      while fio runs at queue depth 1, then 32 (agent.txt, agent.jsonl);
#      the JSON one is armed as a flight recorder (--trigger, bundles in
#      snap/SNAP-*/);
#   2. offline: the bridge off, hmb-trace-daemon --device drains the ring
#      into a dump (fw.bin) while fio runs again and the agent records the
#      host's side of the commands (agent-host.jsonl), for hmb-trace-analyze
#      on the VM host.  The controller's own account of what it wrote is
#      the reference for both.
# Knob: HMB_DEMO_FIO_SECS (seconds per fio phase, default 10).
# Narration on stderr, TAP on stdout.
# vm-timeout: 500
# vm-nvme: patched hmb_trace_kb=1024
# vm-nvme-hmb: hmpre=2048, hmmin=256, hmmaxd=16, hmb-bg-rate=100, hmb-clock-drift-ppm=50, hmb-clock-offset=1000000000, hmb-slow-every=5000, hmb-slow-ns=500000000
set -u
. "$HMB_REPO/scripts/vm/lib/tap.sh"
. "$HMB_REPO/kernel/tools/guest-lib.sh"
. "$HMB_REPO/scripts/lib/demo-guest.sh"
SECS=${HMB_DEMO_FIO_SECS:-10}
# The flight recorder's trigger (scripts/demo.sh passes it): a command
# slower than 200 ms.  The controller holds the commands it slows 500 ms;
# TCG stalls the commands in flight for tens of ms now and then, well
# under the threshold.  --holdoff 3 lets a second and third slow command
# have their bundle.
DEMO_TRIGGER=${HMB_DEMO_TRIGGER:-host_total>200ms}
C=$HMB_NVME_CTRL

say "guest up: kernel $HMB_KVER; NVMe controller: the VM bench's HMB model, $(vm-nvme-hmb id "$C" | tr -d '{}"')"
# the boot's kernel log (init clears dmesg before each suite)
boot=/results/.vm/dmesg.boot
say "  nvme.ko (kernel/patches) loaded at boot: $(grep -E 'HMB trace slice|host memory buffer' "$boot" | sed 's/^\[[^]]*\] //' | tr '\n' ';' | sed 's/;$//')"
[ "$HMB_NVME_MODULE" = patched ] && grep -q 'HMB trace slice' "$boot" ||
	die "the patched nvme made an HMB trace slice" "$(grep -i nvme "$boot" | tail -5)"
tap_ok "patched nvme.ko: an HMB with a trace slice in its last descriptor"

say "guest: insmod nvme-hmb-trace.ko: it finds nvme's slice on the auxiliary bus and adopts it"
hmb_load || die "load nvme-hmb-trace.ko" "$(dmesg | tail -5)"
ring=$(hmb_wait_ring nvme-pci) || die "the nvme-pci ring registered" "$(ls $HMB_CLASS; dmesg | tail -5)"
S=$HMB_CLASS/$ring
say "  /dev/$ring: ring_size $(cat "$S/ring_size"), head $(cat "$S/head") (the controller traced the boot's I/O already)"
echo 1 > "$S/bridge" || die "bridge on for $ring" "$(dmesg | tail -3)"
tap_ok "module loaded, ring $ring (nvme-pci), bridge on"

say "1. live: hmb-trace-agent twice: the report (agent.txt) and -j --per-command (agent.jsonl), that one armed: $DEMO_TRIGGER"
# The bundles go to the guest's own memory while fio runs, then to
# /results: writing to that 9p share takes the VM host's CPU, which the
# TCG guest being measured runs on.
snap=/tmp/demo-snap
rm -rf "$snap" && mkdir -p "$snap"
demo_agents_start agent --trigger "$DEMO_TRIGGER" --snapshot-dir "$snap" \
	--pre 1 --post 0.5 --holdoff 3 --max-snapshots 3
demo_fio qd1 1 psync && demo_fio qd32 32 libaio || die "fio" "$(cat "$HMB_RESULTS"/fio-*.err)"
tap_ok "fio randrw QD1 then QD32, ${SECS}s each"
demo_agents_stop
if cp -r "$snap" "$HMB_RESULTS/snap"; then
	rm -rf "$snap"
else
	tap_fail "the flight recorder's bundles copied to /results/snap"
fi
say "  the flight recorder: $(ls "$HMB_RESULTS/snap" | wc -l) bundle(s); $(grep -c 'snapshot suppressed' "$HMB_RESULTS/agent.err") firing(s) suppressed"
tap_diag "bridge: records $(cat "$S/bridge_records") lost $(cat "$S/bridge_lost")"

say "2. offline: the bridge off, hmb-trace-daemon --device /dev/$ring -o fw.bin; the agent keeps the host's side (agent-host.jsonl)"
echo 0 > "$S/bridge"
hmb-trace-daemon --device "/dev/$ring" -o "$HMB_RESULTS/fw.bin" \
	--stats-json "$HMB_RESULTS/daemon.json" 2> "$HMB_RESULTS/daemon.err" &
dpid=$!
"$AGENT" -d "${HMB_NVME_DEV#/dev/}" -j --per-command -N 5 -o "$HMB_RESULTS/agent-host.jsonl" \
	2> "$HMB_RESULTS/agent-host.err" &
hpid=$!
i=0
while [ $i -lt 300 ] && ! grep -q '"type":"start"' "$HMB_RESULTS/agent-host.jsonl" 2>/dev/null; do
	usleep 100000; i=$((i + 1))
done
demo_fio offline 32 libaio || die "fio (offline phase)" "$(cat "$HMB_RESULTS/fio-offline.err")"
hmb_wait_drained "$ring" 30
kill -INT $hpid $dpid
wait $hpid; hrc=$?
wait $dpid; drc=$?
[ $hrc = 0 ] && [ $drc = 0 ] && tap_ok "daemon and agent exit 0: $(cut -c1-120 "$HMB_RESULTS/daemon.json")" ||
	tap_fail "daemon and agent exit 0" "daemon $drc agent $hrc: $(tail -3 "$HMB_RESULTS/daemon.err" "$HMB_RESULTS/agent-host.err")"
say "  the daemon: $(sed -n 's/.*summary: //p' "$HMB_RESULTS/daemon.err")"

hmb_acct_flush
say "VM host: the daemon's dump against the controller's own account (nvme-account-check)"
hostcmd run nvme-account-check @NVME_ACCOUNT@ @RESULTS@/fw.bin > "$HMB_RESULTS/account-check.json" \
	2> "$HMB_RESULTS/account-check.err" &&
	tap_ok "every record of fw.bin is one the controller wrote: $(cut -c1-200 "$HMB_RESULTS/account-check.json")" ||
	tap_fail "fw.bin against the controller's account" "$(cat "$HMB_RESULTS/account-check.json" "$HMB_RESULTS/account-check.err")"
rmmod nvme_hmb_trace || tap_fail "rmmod nvme_hmb_trace"
say "guest: done, powering off"
tap_done
