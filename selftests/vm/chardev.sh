#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# The char-device contract selftests (kselftest harness), against the test
# producer ring and the ivshmem ring (header written by the VM host).
# vm-timeout: 300
set -u
. "$HMB_REPO/scripts/vm/lib/tap.sh"
. "$HMB_REPO/kernel/tools/guest-lib.sh"
if ! hmb_shm_init || ! hmb_load test_rings=1 test_ring_kb=64; then
	tap_fail "load nvme-hmb-trace.ko with a test ring and an ivshmem ring" "$(dmesg | tail -5)"
	tap_done
fi
"$HMB_ST/hmb_chardev_test"
rc=$?
rmmod nvme_hmb_trace || rc=1
exit $rc
