#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# tracecmd: firmware records in one timeline with the block and nvme events
# of the same commands.  QEMU's NVMe trace drives hmb-fwsim on the VM host
# (the firmware records of the very commands the guest issues), the bridge
# emits them as hmb_trace:hmb_trace_record, and
#   trace-cmd record -e hmb_trace -e nvme -e block
# records them with the kernel's own events while fio reads and writes.
# `trace-cmd report` is then checked: every command (block_rq_issue,
# nvme_setup_cmd, nvme_complete_rq, block_rq_complete, joined on queue,
# command id, LBA and length) has its five firmware records (fetch, media
# start/end, transfer, completion posted, joined on sqid/cid and length),
# in order: host submit before the firmware's records, the records in seq
# order and in firmware-time order (equal times allowed: the simulator's
# clock comes from QEMU's microsecond trace stamps), host completion
# before block completion; and
# the firmware records are interleaved with the host events of later
# commands, not appended at the end.  fio is rate-limited: formatting the
# report costs milliseconds per line under TCG (scripts/vm/README.md).
# vm-timeout: 600
# vm-qemu-trace: yes
# vm-shm-size: 16M
set -u
. "$HMB_REPO/scripts/vm/lib/tap.sh"
. "$HMB_REPO/kernel/tools/guest-lib.sh"
R=$HMB_RESULTS
IOPS=${HMB_TRACECMD_IOPS:-200}
SECS=${HMB_TRACECMD_SECS:-3}

hmb_ivshmem_bridge --clock-offset 1000000000

cd /tmp || exit 1
t0=$(date +%s)
trace-cmd record -e hmb_trace -e nvme -e block -o /tmp/tc.dat \
	fio --name=tc --filename="$HMB_NVME_DEV" --direct=1 --ioengine=libaio --iodepth=4 \
	--rw=randrw --bs=4k --size=32M --time_based --runtime="$SECS" --rate_iops="$IOPS" \
	--output-format=terse > "$R/record.out" 2> "$R/record.err"
rc=$?
t1=$(date +%s)
[ $rc = 0 ] && tap_ok "trace-cmd record -e hmb_trace -e nvme -e block during fio (${SECS}s at $IOPS IOPS, $((t1 - t0)) s)" ||
	tap_fail "trace-cmd record -e hmb_trace -e nvme -e block" "exit $rc: $(tail -5 "$R/record.err")"
hostcmd stop fw >/dev/null 2>&1
trace-cmd report -i /tmp/tc.dat > "$R/report.txt" 2> "$R/report.err"
rc=$?
t2=$(date +%s)
[ $rc = 0 ] && tap_ok "trace-cmd report: $(wc -l < "$R/report.txt") lines ($((t2 - t1)) s)" ||
	tap_fail "trace-cmd report" "exit $rc: $(tail -5 "$R/report.err")"
brec=$(cat "$HMB_CLASS/$ring/bridge_records")
nrec=$(grep -c ' hmb_trace_record: ' "$R/report.txt")
[ "$nrec" = "$brec" ] && tap_ok "the report holds every record the bridge emitted ($nrec)" ||
	tap_fail "the report holds every record the bridge emitted" "report $nrec, bridge_records $brec"

# One pass over the report: kernel/vm-suite/tracecmd-check.awk.
awk -f "$HMB_REPO/kernel/vm-suite/tracecmd-check.awk" "$R/report.txt" > "$R/check.txt" 2> "$R/check.err"
ex=$(grep '^example' "$R/check.txt")
res=$(grep '^commands' "$R/check.txt")
tap_diag "$res"
[ -n "$ex" ] && tap_diag "$ex"
set -- $res
n=$2 good=$4 fw=${14} early=${22} trans=${24}
[ -n "$n" ] && [ "$n" -ge $((IOPS * SECS / 2)) ] && tap_ok "the report has $n NVMe read/write commands" ||
	tap_fail "the report has the NVMe commands fio issued" "$res $(cat "$R/check.err")"
[ -n "$good" ] && [ $((good * 100)) -ge $((n * 99)) ] &&
	tap_ok "$good of $n commands (>= 99 %): block, nvme and all 5 firmware events of the same command, in order" ||
	tap_fail "commands with block, nvme and 5 firmware events in order >= 99 %" "$res $(head -5 "$R/check.err")"
[ -n "$early" ] && [ $((early * 2)) -ge "$fw" ] && [ "$trans" -ge 20 ] &&
	tap_ok "firmware records interleaved with the host events: $early of $fw before the last submission, $trans host/firmware alternations" ||
	tap_fail "firmware records interleaved with host events" "$res"
rmmod nvme_hmb_trace && tap_ok "rmmod nvme_hmb_trace" || tap_fail "rmmod"
hmb_dmesg_check
tap_done
