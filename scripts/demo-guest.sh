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
# bridge emits each record as hmb_trace:hmb_trace_record; hmb-trace-agent
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
SECS=${HMB_DEMO_FIO_SECS:-10}
R=$HMB_RESULTS
AGENT=$HMB_BIN/hmb-trace-agent
DEV=${HMB_NVME_DEV#/dev/}
t0=$(date +%s)

say() { echo "[guest +$(($(date +%s) - t0))s] $*" >&2; }
die() { tap_fail "$1" "${2:-}"; say "FAILED: $1 ${2:-}"; tap_done; }

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

say "guest: start hmb-trace-agent -d $DEV twice: the report (agent.txt) and -j --per-command (agent.jsonl)"
"$AGENT" -d "$DEV" -N 5 -o "$R/agent.txt" 2>"$R/agent-text.err" &
tpid=$!
"$AGENT" -d "$DEV" -j --per-command -N 5 -o "$R/agent.jsonl" 2>"$R/agent.err" &
apid=$!
i=0
while [ $i -lt 300 ] && ! grep -q '"type":"start"' "$R/agent.jsonl" 2>/dev/null; do
	usleep 100000; i=$((i + 1))
done
# the text agent prints its banner when attached
while [ $i -lt 300 ] && [ ! -s "$R/agent.txt" ]; do usleep 100000; i=$((i + 1)); done
grep -q '"mode":"nvme+firmware"' "$R/agent.jsonl" ||
	die "agent in nvme+firmware mode" "$(cat "$R/agent.err") $(head -1 "$R/agent.jsonl")"
tap_ok "agent attached: $(head -1 "$R/agent.txt" 2>/dev/null | cut -c1-100)"

say "guest: fio randrw 4k, queue depth 1 for ${SECS}s (psync), then queue depth 32 for ${SECS}s (libaio)"
fio --name=qd1 --filename="$HMB_NVME_DEV" --direct=1 --ioengine=psync \
	--rw=randrw --bs=4k --size=64M --time_based --runtime="$SECS" \
	--output="$R/fio-qd1.txt" 2>"$R/fio-qd1.err" ||
	die "fio QD1" "$(cat "$R/fio-qd1.err")"
say "  QD1:  $(grep -E '^ *(read|write):' "$R/fio-qd1.txt" | sed 's/,.*//; s/^ *//' | tr '\n' ' ')"
fio --name=qd32 --filename="$HMB_NVME_DEV" --direct=1 --ioengine=libaio \
	--iodepth=32 --rw=randrw --bs=4k --size=64M --time_based \
	--runtime="$SECS" --output="$R/fio-qd32.txt" 2>"$R/fio-qd32.err" ||
	die "fio QD32" "$(cat "$R/fio-qd32.err")"
say "  QD32: $(grep -E '^ *(read|write):' "$R/fio-qd32.txt" | sed 's/,.*//; s/^ *//' | tr '\n' ' ')"
tap_ok "fio randrw QD1 then QD32, ${SECS}s each"

say "guest: stop the agents (SIGINT: they wait for late firmware records, then report)"
sleep 2
kill -INT $tpid $apid
wait $tpid; trc=$?
wait $apid; arc=$?
[ $trc = 0 ] && [ $arc = 0 ] && tap_ok "agents exit 0 on SIGINT" ||
	tap_fail "agents exit 0" "text $trc json $arc: $(tail -3 "$R/agent-text.err" "$R/agent.err")"
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
