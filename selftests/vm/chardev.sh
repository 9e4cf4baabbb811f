#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# The char-device contract selftests (kselftest harness), against the test
# producer ring and the ivshmem ring (header written by the VM host): once
# as a 64-bit program, once as a 32-bit one (the compat ioctl path).  They
# include the misuse cases: SET_TAIL through a read-only file, writes
# through /proc/self/mem and process_vm_writev, fork with the mapping.
# vm-timeout: 400
set -u
. "$HMB_REPO/scripts/vm/lib/tap.sh"
. "$HMB_REPO/kernel/tools/guest-lib.sh"
if ! hmb_shm_init || ! hmb_load test_rings=1 test_ring_kb=64; then
	tap_fail "load nvme-hmb-trace.ko with a test ring and an ivshmem ring" "$(dmesg | tail -5)"
	tap_done
fi
# Each harness run prints its own plan; fold both into this suite's TAP,
# and hold each run to its exit status (a binary that is missing or died
# prints no "not ok")
for t in hmb_chardev_test hmb_chardev_test32; do
	"$HMB_ST/$t" > "$HMB_RESULTS/$t.tap" 2>&1
	r=$?
	while IFS= read -r line; do
		case $line in
		"ok "*) tap_ok "$t: ${line#ok * }" ;;
		"not ok "*) tap_fail "$t: ${line#not ok * }" ;;
		"#"*) echo "$line" ;;
		esac
	done < "$HMB_RESULTS/$t.tap"
	[ $r = 0 ] && tap_ok "$t exits 0" ||
		tap_fail "$t exits 0" "status $r: $(tail -3 "$HMB_RESULTS/$t.tap")"
done
rmmod nvme_hmb_trace && tap_ok "rmmod nvme_hmb_trace" || tap_fail "rmmod nvme_hmb_trace"
hmb_dmesg_check
tap_done
