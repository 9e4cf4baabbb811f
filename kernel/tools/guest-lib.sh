# SPDX-License-Identifier: GPL-2.0
# Helpers for the kernel suites inside the VM guest (busybox sh); source it.
# Built for the guest's kernel (make -C kernel module KERNEL=$HMB_KVER);
# vm-run --kernel debug names the debug build.
HMB_KO=${HMB_KO:-$HMB_REPO/build/kernel/$HMB_KVER/nvme-hmb-trace.ko}
HMB_CLASS=/sys/class/nvme-hmb-trace
HMB_ST=$HMB_REPO/build/selftests

le32() {
	printf '%02x%02x%02x%02x' $(($1 & 255)) $(($1 >> 8 & 255)) \
		$(($1 >> 16 & 255)) $(($1 >> 24 & 255))
}

# hmb_shm_ring_size: the largest power-of-two record area that fits the BAR.
hmb_shm_ring_size() {
	_rs=1
	while [ $((_rs * 2 + 64)) -le "$HMB_SHM_SIZE" ]; do _rs=$((_rs * 2)); done
	echo $_rs
}

# hmb_shm_init [RING_SIZE]: the VM host writes a fresh v1 ring header into
# the ivshmem file, as firmware initialising its HMB slice would.
hmb_shm_init() {
	_rs=${1:-$(hmb_shm_ring_size)}
	hostcmd shm-zero >/dev/null || return 1
	hostcmd shm-write 0 "$(le32 0x54424D48)$(le32 1)$(le32 "$_rs")$(le32 64)" >/dev/null
}

# hmb_load ARGS...: insmod the module built by make -C kernel module.
hmb_load() {
	[ -f "$HMB_KO" ] || { echo "no $HMB_KO (make -C kernel module KERNEL=$HMB_KVER on the host)" >&2; return 1; }
	insmod "$HMB_KO" "$@"
}

# hmb_ring PROVIDER: the class device name of the first ring of PROVIDER.
hmb_ring() {
	for _d in "$HMB_CLASS"/*; do
		[ "$(cat "$_d/provider" 2>/dev/null)" = "$1" ] && { basename "$_d"; return 0; }
	done
	return 1
}

# hmb_wait_drained DEV [SECONDS]: until the consumer has caught up.
hmb_wait_drained() {
	_i=0
	while [ "$(cat "$HMB_CLASS/$1/tail")" != "$(cat "$HMB_CLASS/$1/head")" ]; do
		_i=$((_i + 1))
		[ $_i -gt $((${2:-30} * 10)) ] && return 1
		usleep 100000
	done
	return 0
}

# What a clean kernel log never contains: WARNING/BUG/Oops lines and what
# the debug kernel's checkers print (KASAN, KFENCE, lockdep's reports are
# WARNING:/BUG: lines, DEBUG_OBJECTS "ODEBUG:", the hung-task detector).
HMB_DMESG_BAD='WARNING:|BUG:|Oops|KASAN|KFENCE|ODEBUG|INFO: task .* blocked|general protection fault|Kernel panic|soft lockup|circular locking|lock held when returning'

# hmb_dmesg_check: none of HMB_DMESG_BAD in the kernel log.
hmb_dmesg_check() {
	dmesg > "$HMB_RESULTS/dmesg.txt"
	_bad=$(grep -E "$HMB_DMESG_BAD" "$HMB_RESULTS/dmesg.txt")
	if [ -z "$_bad" ]; then
		tap_ok "dmesg free of WARNING, BUG, Oops, KASAN, KFENCE, lockdep and hung-task reports"
	else
		tap_fail "dmesg free of WARNING, BUG, Oops, KASAN, KFENCE, lockdep and hung-task reports" "$(printf '%s\n' "$_bad" | head -20)"
	fi
}
