#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# check-nvme-patch.sh LINUX_SRC OUTDIR KDIR TOP [SERIES]: apply kernel/patches
# and Kconfig.patch to a fresh copy of linux-source-SERIES's (default 6.1)
# drivers/nvme/host and build the patched nvme.ko out of tree against KDIR
# (TAP on stdout).  A patch that differs for a series lives under
# kernel/patches/SERIES/ and replaces its 6.1 patch while it is current
# (kernel/tools/nvme-patches.sh says which and how).
# The result, OUTDIR/drivers/nvme/host/nvme.ko, loads next to Debian's own
# nvme-core; the VM suites load it (kmod.sh on Debian's QEMU, whose NVMe
# has no HMB; the hmb-* suites on the HMB-capable controller, vm-nvme:).
set -u
src=$1 out=$2 kdir=$3 top=$4 series=${5:-6.1}
. "$top/scripts/lib/tap.sh"
rm -rf "$out"
mkdir -p "$out/drivers/nvme"
cp -a "$src/drivers/nvme/host" "$out/drivers/nvme/"
applied=1
diag=$(mktemp)
mapfile -t patches < <("$top/kernel/tools/nvme-patches.sh" "$top/kernel/patches" "$series" 2>"$diag")
sed 's/^/# /' "$diag"
rm -f "$diag"
[ ${#patches[@]} -gt 0 ] || applied=0
for p in "${patches[@]}" "$top/Kconfig.patch"; do
	name=${p#"$top"/}
	if log=$(patch -d "$out" -p1 -F0 -N --no-backup-if-mismatch <"$p" 2>&1); then
		tap_ok "$name applies to linux-source-$series without fuzz"
	else
		tap_fail "$name applies to linux-source-$series without fuzz" "$log"
		applied=0
	fi
done
if [ $applied = 1 ] && log=$(perl "$src/scripts/checkpatch.pl" --strict --no-tree \
		--root="$src" --no-summary --terse --ignore FILE_PATH_CHANGES \
		"${patches[@]}" 2>&1) && [ -z "$log" ]; then
	tap_ok "checkpatch --strict kernel/patches ($series)"
else
	tap_fail "checkpatch --strict kernel/patches ($series)" "$log"
fi
# Only nvme.ko: nvme-core and the fabrics drivers are Debian's, unchanged.
dir=$out/drivers/nvme/host
if [ $applied = 1 ] && log=$(make -C "$kdir" M="$dir" \
		CONFIG_NVME_CORE= CONFIG_NVME_FABRICS= CONFIG_NVME_RDMA= \
		CONFIG_NVME_FC= CONFIG_NVME_TCP= CONFIG_NVME_APPLE= \
		CONFIG_BLK_DEV_NVME=m \
		KCFLAGS="-I$top/kernel/include -I$top/include/uapi" \
		modules 2>&1) && [ -f "$dir/nvme.ko" ] && \
		! printf '%s\n' "$log" | grep -qE 'warning:|error:'; then
	tap_ok "patched nvme.ko builds against $(basename "$kdir") without warnings"
else
	tap_fail "patched nvme.ko builds against $(basename "$kdir") without warnings" \
		"$(printf '%s\n' "$log" | grep -E 'warning|error|Error' | head -40)"
fi
if [ -f "$dir/nvme.ko" ] && modinfo -F parm "$dir/nvme.ko" | grep -q '^hmb_trace_kb:'; then
	tap_ok "patched nvme.ko has the hmb_trace_kb parameter"
else
	tap_fail "patched nvme.ko has the hmb_trace_kb parameter"
fi
tap_done
