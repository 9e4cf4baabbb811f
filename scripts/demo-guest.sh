#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# demo-guest.sh: the guest half of `make demo` (scripts/demo.sh runs it with
# scripts/vm/vm-run; it is deliberately not under a vm-suite/ directory, so
# the VM bench does not register it as a test suite).
#
# On the VM host, hmb-fwsim --from-qemu-trace turns QEMU's trace of its NVMe
# model into the firmware records of the very commands the guest issues and
# writes them into the ivshmem ring (the stand-in for the HMB); it also
# keeps every record it wrote as a dump (fw.bin, --log).  In the guest,
# nvme-hmb-trace.ko reads that ring through the ivshmem provider and its
# bridge emits the records as hmb_trace:hmb_trace_records; hmb-trace-agent
# joins those with nvme:nvme_setup_cmd/nvme_complete_rq while fio runs a
# mixed random read/write load at queue depth 1, then 32.
#
# Leaves in $HMB_RESULTS: agent.txt (the agent's report), agent.jsonl (-j
# --per-command), fw.bin (the firmware's dump), fw-cmd.log (which QEMU
# command each record came from), fw-report.json, fio-qd1.txt, fio-qd32.txt.
# Knob: HMB_DEMO_FIO_SECS (seconds per fio phase, default 10).
# Narration on stderr, TAP on stdout.
# vm-timeout: 400
# vm-qemu-trace: yes
# vm-shm-size: 16M
set -u
. "$HMB_REPO/scripts/vm/lib/tap.sh"
. "$HMB_REPO/kernel/tools/guest-lib.sh"
. "$HMB_REPO/scripts/lib/demo-guest.sh"
SECS=${HMB_DEMO_FIO_SECS:-10}
R=$HMB_RESULTS

say "guest up: kernel $HMB_KVER, NVMe disk $HMB_NVME_DEV (QEMU's model), ivshmem BAR $HMB_SHM_SIZE bytes"
rs=$(hmb_shm_ring_size)
say "VM host: start hmb-fwsim --from-qemu-trace (QEMU NVMe trace -> firmware records in the ivshmem ring, dump in fw.bin)"
hostcmd start fw --qemu-trace-stdin hmb-fwsim --ring-file @SHM@ --ring-size "$rs" \
	--from-qemu-trace - --clock-offset 1000000000 --clock-drift 50 --bg-rate 100 \
	--log @RESULTS@/fw.bin --cmd-log @RESULTS@/fw-cmd.log \
	--event-dict @REPO@/share/hmb-events.dict >/dev/null ||
	die "start hmb-fwsim --from-qemu-trace on the VM host"
i=0
while [ $i -lt 100 ] && [ "$(vm-mmap "$HMB_IVSHMEM_RES" read 0 4 2>/dev/null)" != "484d4254" ]; do
	usleep 100000; i=$((i + 1))
done
[ $i -lt 100 ] || die "the firmware initialised its ring in the ivshmem BAR"
tap_ok "firmware simulator on the VM host, ring of $rs bytes in the ivshmem BAR"

say "guest: insmod nvme-hmb-trace.ko (ivshmem provider), bridge on"
hmb_load || die "load nvme-hmb-trace.ko" "$(dmesg | tail -5)"
ring=$(hmb_ring ivshmem) || die "ivshmem ring registered" "$(ls $HMB_CLASS)"
echo 1 > "$HMB_CLASS/$ring/bridge" || die "bridge on for $ring" "$(dmesg | tail -3)"
tap_ok "module loaded, ring $ring (ivshmem), bridge on"

say "guest: start hmb-trace-agent twice: the report (agent.txt) and -j --per-command (agent.jsonl)"
demo_agents_start agent
demo_fio qd1 1 psync || die "fio QD1" "$(cat "$R/fio-qd1.err")"
demo_fio qd32 32 libaio || die "fio QD32" "$(cat "$R/fio-qd32.err")"
tap_ok "fio randrw QD1 then QD32, ${SECS}s each"
demo_agents_stop
say "VM host: stop hmb-fwsim (its dump fw.bin is complete)"
hostcmd stop fw >/dev/null 2>&1
cat "$R/host-fw.stdout" > "$R/fw-report.json" 2>/dev/null
tap_diag "simulator: $(cat "$R/fw-report.json")"
tap_diag "bridge: records $(cat "$HMB_CLASS/$ring/bridge_records") lost $(cat "$HMB_CLASS/$ring/bridge_lost" 2>/dev/null)"
[ -s "$R/fw.bin" ] && tap_ok "firmware dump fw.bin: $(wc -c < "$R/fw.bin") bytes" ||
	tap_fail "firmware dump fw.bin written"
echo 0 > "$HMB_CLASS/$ring/bridge"
rmmod nvme_hmb_trace || tap_fail "rmmod nvme_hmb_trace"
say "guest: done, powering off"
tap_done
