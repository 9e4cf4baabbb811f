#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# hmb-resets: controller resets of the patched nvme.ko while requests wait
# to be dispatched, on the VM bench's NVMe controller (which offers Doorbell
# Buffer Config, so the driver uses shadow doorbells).
# Four tags a hardware queue (nr_requests 4) and fio at QD8 in 4 jobs keep
# requests waiting for a tag, inside the queue's usage count, at every
# reset.  The reset frees tags and those requests are dispatched, in more
# than one batch, once the new I/O queues are started; they and the
# requests after the reset must reach the controller.  A driver that uses
# the shadow doorbells before it has given the controller their address
# (Debian's 6.1: nvme_dbbuf_set() after the queues were started) rings no
# MMIO doorbell after the first batch (the zeroed event index says the
# controller would read the shadow doorbell): those commands are never
# fetched, the request times out and the controller is removed or reset
# in a loop.  Held to:
#   - fio across four resets ("nvme reset") exits 0 and does I/O;
#   - no request of the namespace times out (io_timeout 10 s, a third of
#     the default, so that a lost command shows in the run);
#   - the disk is there and reads back what was written after the resets;
#   - no WARNING, BUG or Oops.
# vm-timeout: 400
# vm-nvme: patched hmb_trace_kb=1024
# vm-nvme-hmb: hmpre=2048, hmmin=256, hmmaxd=16, hmb-bg-rate=0
set -u
. "$HMB_REPO/scripts/vm/lib/tap.sh"
. "$HMB_REPO/kernel/tools/guest-lib.sh"
R=$HMB_RESULTS
C=$HMB_NVME_CTRL
Q=/sys/block/${HMB_NVME_DEV#/dev/}/queue
RESETS=${HMB_RESETS:-4}

hmb_need_patched_hmb
echo 4 > "$Q/nr_requests" && echo 10000 > "$Q/io_timeout" &&
	tap_ok "nr_requests $(cat "$Q/nr_requests"), io_timeout $(cat "$Q/io_timeout") ms" ||
	{ tap_fail "nr_requests 4, io_timeout 10000 ms" "$(cat "$Q/nr_requests" "$Q/io_timeout")"; tap_done; }

m=$(hmb_dmesg_mark)
fio --name=requeue --filename="$HMB_NVME_DEV" --direct=1 --ioengine=libaio --iodepth=8 \
	--numjobs=4 --rw=randread --bs=4k --size=64M --time_based --runtime=$((RESETS * 2 + 4)) \
	--group_reporting --output-format=terse > "$R/fio.txt" 2> "$R/fio.err" &
fpid=$!
sleep 2
i=0
while [ $i -lt "$RESETS" ]; do
	nvme reset "$C" >> "$R/reset.out" 2>&1
	sleep 1.5
	i=$((i + 1))
done
# terse v3: field 6 the read KiB
wait $fpid && kib=$(cut -d';' -f6 "$R/fio.txt") && [ "${kib:-0}" -gt 0 ] &&
	tap_ok "fio randread QD8 x4 jobs across $RESETS controller resets: $kib KiB read" ||
	tap_fail "fio across the resets" "$(cat "$R/fio.err" "$R/reset.out" | tail -20)"
hmb_dmesg_since "$m" > "$R/dmesg-resets.txt"
n=$(grep -c "timeout" "$R/dmesg-resets.txt")
[ "$n" = 0 ] &&
	tap_ok "no request timed out across the resets" ||
	tap_fail "no request timed out across the resets ($n lines)" "$(grep -E "timeout|Removing|disable" "$R/dmesg-resets.txt" | head -20)"
hmb_nvme_wait_disk 20 && hmb_io_ok &&
	tap_ok "1 MiB written and read back after the resets" ||
	tap_fail "I/O after the resets" "$(ls /dev/nvme* 2>&1; dmesg | tail -10)"
hmb_dmesg_check
tap_done
