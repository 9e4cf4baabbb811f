#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# Provider removal: the ivshmem PCI device is removed through sysfs while a
# consumer holds /dev/nvme-hmb-traceN open and mapped (it must see POLLHUP,
# ENODEV and SIGBUS, never freed memory), then again with the bridge on;
# the module unloads afterwards and dmesg has no WARNING:, BUG: or Oops.
# vm-timeout: 300
set -u
. "$HMB_REPO/scripts/vm/lib/tap.sh"
. "$HMB_REPO/kernel/tools/guest-lib.sh"
R=$HMB_RESULTS
PCIDEV=/sys/bus/pci/devices/$HMB_IVSHMEM_PCI

hmb_shm_init || tap_fail "VM host initialises the ivshmem ring header"
if ! hmb_load test_rings=1 test_ring_kb=64; then
	tap_fail "insmod nvme-hmb-trace.ko" "$(dmesg | tail -5)"
	tap_done
fi
iv=$(hmb_ring ivshmem)
[ -n "$iv" ] && tap_ok "ivshmem ring registered ($iv)" || tap_fail "ivshmem ring registered" "$(dmesg | tail -5)"

# --- removal under an open, mapped consumer ----------------------------------
: > "$R/hold.err"
"$HMB_ST/hmb_ring_hold" "/dev/$iv" 60 > "$R/hold.tap" 2> "$R/hold.err" &
hold=$!
i=0
while ! grep -q ready "$R/hold.err" && [ $i -lt 100 ]; do usleep 100000; i=$((i + 1)); done
grep -q ready "$R/hold.err" && tap_ok "consumer holds /dev/$iv open and mapped" ||
	tap_fail "consumer holds /dev/$iv open and mapped" "$(cat "$R/hold.err")"
echo 1 > "$PCIDEV/remove" && tap_ok "PCI remove of the ivshmem device through sysfs" ||
	tap_fail "PCI remove of the ivshmem device through sysfs"
wait $hold
rc=$?
# Re-number the consumer's own TAP lines into this suite.
while IFS= read -r line; do
	case $line in
	"ok "*) tap_ok "consumer: ${line#ok * - }" ;;
	"not ok "*) tap_fail "consumer: ${line#not ok * - }" ;;
	"# "*) echo "$line" ;;
	esac
done < "$R/hold.tap"
[ $rc = 0 ] && tap_ok "consumer exited 0 (no crash)" || tap_fail "consumer exited 0" "status $rc; $(cat "$R/hold.err")"
[ ! -e "/dev/$iv" ] && [ ! -e "$HMB_CLASS/$iv" ] && tap_ok "/dev/$iv and its class device are gone" ||
	tap_fail "/dev/$iv and its class device are gone"

# --- the device comes back; removal with the bridge on ------------------------
echo 1 > /sys/bus/pci/rescan
i=0
while ! iv=$(hmb_ring ivshmem) && [ $i -lt 50 ]; do usleep 100000; i=$((i + 1)); done
[ -n "$iv" ] && tap_ok "PCI rescan: the ivshmem ring is registered again ($iv)" ||
	tap_fail "PCI rescan: the ivshmem ring is registered again" "$(dmesg | tail -5)"
echo 1 > "$HMB_CLASS/$iv/bridge" && tap_ok "bridge on for $iv" || tap_fail "bridge on for $iv"
hostcmd shm-write 16 "$(le32 64)00000000" >/dev/null	# the host "produces": head = 64 (garbage)
sleep 1
c=$(cat "$HMB_CLASS/$iv/bridge_corrupt"); why=$(cat "$HMB_CLASS/$iv/corrupt")
[ "$c" = 1 ] && [ "$why" = "bad record magic" ] &&
	tap_ok "bridge stops at a record without magic and counts it (bridge_corrupt 1)" ||
	tap_fail "bridge stops at a corrupt record" "bridge_corrupt $c, corrupt '$why'"
echo 1 > "$PCIDEV/remove" && tap_ok "PCI remove with the bridge on" || tap_fail "PCI remove with the bridge on"

# --- headers the module must refuse --------------------------------------------
hmb_shm_init
hostcmd shm-write 4 "$(le32 2)" >/dev/null	# version 2
echo 1 > /sys/bus/pci/rescan
sleep 1
dmesg | grep -q "trace ring version 2 is newer than this module's 1; refusing to interpret it" &&
	! hmb_ring ivshmem >/dev/null &&
	tap_ok "a version 2 ring is refused with a clear message" ||
	tap_fail "a version 2 ring is refused with a clear message" "$(dmesg | grep -i ivshmem | tail -3)"
hostcmd shm-zero >/dev/null
echo "$HMB_IVSHMEM_PCI" > /sys/bus/pci/drivers/nvme-hmb-trace-ivshmem/bind 2>/dev/null
dmesg | grep -q "no trace ring header (magic " && ! hmb_ring ivshmem >/dev/null &&
	tap_ok "a BAR without a ring header is refused with a clear message" ||
	tap_fail "a BAR without a ring header is refused with a clear message" "$(dmesg | tail -3)"
hmb_shm_init
echo "$HMB_IVSHMEM_PCI" > /sys/bus/pci/drivers/nvme-hmb-trace-ivshmem/bind &&
	hmb_ring ivshmem >/dev/null && tap_ok "bind after the host initialised the header registers the ring" ||
	tap_fail "bind after the host initialised the header registers the ring"

# --- unload -------------------------------------------------------------------
test=$(hmb_ring test)
exec 3< "/dev/$test"
rmmod nvme_hmb_trace 2>/dev/null && tap_fail "rmmod refused while /dev/$test is open" ||
	tap_ok "rmmod refused while /dev/$test is open"
exec 3<&-
rmmod nvme_hmb_trace && tap_ok "rmmod after provider removal and re-probe" ||
	tap_fail "rmmod after provider removal and re-probe"
hmb_dmesg_check
tap_done
