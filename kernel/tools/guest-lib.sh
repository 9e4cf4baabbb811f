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

# hmb_need_patched_hmb: the suite's vm-nvme-hmb and vm-nvme (patched, or
# dkms: the same patch as the package's DKMS built it) lines took effect
# (the HMB-capable controller and the patched nvme); else one failure and
# the suite ends.
hmb_need_patched_hmb() {
	[ -n "${HMB_NVME_HMB:-}" ] && case $HMB_NVME_MODULE in patched|dkms) true ;; *) false ;; esac &&
		return 0
	tap_fail "the HMB-capable controller with the patched nvme (vm-nvme-hmb, vm-nvme)" \
		"HMB_NVME_HMB='${HMB_NVME_HMB:-}' HMB_NVME_MODULE=$HMB_NVME_MODULE"
	tap_done
}

# hmb_nvme_bridge_on: insmod, the nvme-pci ring's name in $dev and its
# sysfs directory in $S, its bridge on; else one failure and the suite ends.
hmb_nvme_bridge_on() {
	hmb_load || { tap_fail "insmod nvme-hmb-trace.ko" "$(dmesg | tail -5)"; tap_done; }
	dev=$(hmb_wait_ring nvme-pci)
	S=$HMB_CLASS/$dev
	[ -n "$dev" ] && echo 1 > "$S/bridge" &&
		tap_ok "the nvme-pci ring $dev (ring_size $(cat "$S/ring_size")), bridge on" ||
		{ tap_fail "bridge on the nvme-pci ring" "$(ls $HMB_CLASS; dmesg | tail -5)"; tap_done; }
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

# --- the HMB path: the patched nvme.ko on the VM bench's HMB controller ---------
# (suites with "# vm-nvme-hmb:" and "# vm-nvme:", scripts/vm/README.md)

# hmb_jget KEY FILE: the value KEY has in the (first) JSON object in FILE
hmb_jget() {
	sed -n "s/.*\"$1\": *\(\"[^\"]*\"\|[-0-9a-z.]*\).*/\1/p" "$2" | head -1 | tr -d '"'
}

# hmb_nvme_load PARAMS...: insmod the patched nvme.ko, wait for the disk.
hmb_nvme_load() {
	[ -f "$HMB_NVME_KO" ] || { echo "no $HMB_NVME_KO (make -C kernel nvme-patched)" >&2; return 1; }
	modprobe nvme-core || return 1
	insmod "$HMB_NVME_KO" "$@" || return 1
	_i=0
	while [ ! -b "$HMB_NVME_DEV" ] && [ $_i -lt 200 ]; do usleep 100000; _i=$((_i + 1)); done
	[ -b "$HMB_NVME_DEV" ]
}

# hmb_nvme_wait_disk [SECONDS]: until the namespace's block device is back.
hmb_nvme_wait_disk() {
	_i=0
	while [ ! -b "$HMB_NVME_DEV" ] && [ $_i -lt $((${1:-20} * 10)) ]; do
		usleep 100000; _i=$((_i + 1))
	done
	[ -b "$HMB_NVME_DEV" ]
}

# hmb_io_ok: 1 MiB written and read back through the NVMe disk (direct I/O).
hmb_io_ok() {
	dd if=/dev/urandom of=/tmp/hmb-io.bin bs=64k count=16 2>/dev/null &&
		dd if=/tmp/hmb-io.bin of="$HMB_NVME_DEV" bs=64k seek=100 oflag=direct 2>/dev/null &&
		dd if="$HMB_NVME_DEV" of=/tmp/hmb-io.back bs=64k skip=100 count=16 iflag=direct 2>/dev/null &&
		cmp /tmp/hmb-io.bin /tmp/hmb-io.back
}

# hmb_acct_flush: make the controller write out its account (a clock read).
hmb_acct_flush() {
	vm-nvme-hmb clock "$HMB_NVME_CTRL" 1 > /dev/null 2>&1
}

# hmb_acct_records [FROM_LINE]: "written dropped" records in the controller's
# account (command and background records), from line FROM_LINE on.
hmb_acct_records() {
	hmb_acct_flush
	awk -v from="${1:-1}" 'NR < from { next }
		/"ev":"cmd"/ { r = $0; sub(/.*"recs":\[/, "", r); sub(/\]\}.*/, "", r)
			n = split(r, a, /\],?\[?/)
			for (i = 1; i <= n; i++) if (a[i] ~ /,/) { k = split(a[i], f, ","); if (f[k] + 0) w++; else d++ } }
		/"ev":"bg"/ { if ($0 ~ /"written":1/) w++; else d++ }
		END { print w + 0, d + 0 }' "$HMB_NVME_ACCOUNT"
}

# hmb_acct_last EV: the line number of the account's last "ev":"EV" line
hmb_acct_last() {
	hmb_acct_flush
	grep -n "\"ev\":\"$1\"" "$HMB_NVME_ACCOUNT" | tail -1 | cut -d: -f1
}

# hmb_dmesg_mark / hmb_dmesg_since MARK: the kernel log from a point on,
# without clearing it (hmb_dmesg_check reads all of it at the end)
hmb_dmesg_mark() {
	dmesg | wc -l
}
hmb_dmesg_since() {
	dmesg | sed "1,${1}d"
}

# hmb_next_seq: the controller's seq counter now (records made, dropped ones
# included), read from its clock feature
hmb_next_seq() {
	vm-nvme-hmb clock "$HMB_NVME_CTRL" 1 | sed -n 's/.*"next_seq":\([0-9]*\).*/\1/p'
}

# hmb_acct_count EV: how many "ev":"EV" lines the account has (counted on
# the VM host: grep over tens of MB is slow under TCG)
hmb_acct_count() {
	hmb_acct_flush
	hostcmd run agent-facts count @NVME_ACCOUNT@ "\"ev\":\"$1\""
}

# hmb_aux_slices: the nvme.hmb_trace auxiliary devices ("NAME DRIVER" lines)
hmb_aux_slices() {
	for _d in /sys/bus/auxiliary/devices/nvme.hmb_trace.*; do
		[ -e "$_d" ] || continue
		_drv=none
		[ -e "$_d/driver" ] && _drv=$(basename "$(readlink "$_d/driver")")
		echo "$(basename "$_d") $_drv"
	done
}

# hmb_wait_ring PROVIDER [SECONDS]: until a ring of PROVIDER is registered;
# prints its name.
hmb_wait_ring() {
	_i=0
	while ! hmb_ring "$1" && [ $_i -lt $((${2:-10} * 10)) ]; do
		usleep 100000; _i=$((_i + 1))
	done
}

# hmb_ivshmem_bridge [HMB-FWSIM OPTION...]: hmb-fwsim --from-qemu-trace on
# the VM host produces into the ivshmem ring (with these options), the
# module is loaded and the ring's bridge is on; sets $ring.  Any failure is
# a TAP failure that ends the suite (the caller sourced scripts/vm/lib/tap.sh).
hmb_ivshmem_bridge() {
	local rs i=0

	rs=$(hmb_shm_ring_size)
	hostcmd start fw --qemu-trace-stdin hmb-fwsim --ring-file @SHM@ --ring-size "$rs" \
		--from-qemu-trace - --event-dict @REPO@/share/hmb-events.dict "$@" >/dev/null ||
		{ tap_fail "start hmb-fwsim --from-qemu-trace on the VM host"; tap_done; }
	while [ $i -lt 100 ] && [ "$(vm-mmap "$HMB_IVSHMEM_RES" read 0 4 2>/dev/null)" != "484d4254" ]; do
		usleep 100000; i=$((i + 1))
	done
	hmb_load || { tap_fail "load nvme-hmb-trace.ko" "$(dmesg | tail -5)"; tap_done; }
	ring=$(hmb_ring ivshmem) || { tap_fail "ivshmem ring registered" "$(ls $HMB_CLASS)"; tap_done; }
	echo 1 > "$HMB_CLASS/$ring/bridge" && tap_ok "module loaded, ring $ring (ivshmem), bridge on" ||
		tap_fail "bridge on for $ring" "$(dmesg | tail -3)"
}
