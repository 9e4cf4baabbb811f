#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# check-nvme-patch.sh LINUX_SRC OUTDIR KDIR TOP [SERIES]: apply kernel/patches
# and Kconfig.patch to a fresh copy of linux-source-SERIES's (default 6.1)
# drivers/nvme/host and build the patched nvme.ko out of tree against KDIR
# (TAP on stdout).  A patch that differs for a series lives under
# kernel/patches/SERIES/ with the same name, and names the 6.1 patch it
# was ported from (a line "Ported-from-sha256: " and the first 32 hex
# digits of the 6.1 patch's sha256, in groups of 8 joined by "-" so that
# checkpatch does not take them for a commit id, in its description).  It replaces that patch only while the 6.1 patch is still
# the one it was ported from; otherwise the 6.1 patch itself is tried (and
# a diagnostic says the variant must be ported again).
# The result, OUTDIR/drivers/nvme/host/nvme.ko, loads next to Debian's own
# nvme-core; the VM suites load it (kmod.sh on Debian's QEMU, whose NVMe
# has no HMB; the hmb-* suites on the HMB-capable controller, vm-nvme:).
set -u
src=$1 out=$2 kdir=$3 top=$4 series=${5:-6.1}
t=0 fail=0
ok() { t=$((t + 1)); echo "ok $t - $*"; }
nok() { t=$((t + 1)); echo "not ok $t - $*"; fail=1; }
echo "1..5"
rm -rf "$out"
mkdir -p "$out/drivers/nvme"
cp -a "$src/drivers/nvme/host" "$out/drivers/nvme/"
applied=1
patches=()
for p in "$top"/kernel/patches/*.patch; do
	v=$top/kernel/patches/$series/${p##*/}
	if [ -f "$v" ]; then
		want=$(sed -n 's/^Ported-from-sha256: \([0-9a-f-]*\)$/\1/p' "$v" | tr -d -)
		have=$(sha256sum "$p" | cut -c1-32)
		if [ "$want" = "$have" ]; then
			p=$v
		else
			echo "# ${v#"$top"/} was ported from another version of ${p#"$top"/} (sha256 ${want:-none}..., now $have...): not used; port it again if ${p##*/} does not apply"
		fi
	fi
	patches+=("$p")
done
for p in "${patches[@]}" "$top/Kconfig.patch"; do
	name=${p#"$top"/}
	if log=$(patch -d "$out" -p1 -F0 -N --no-backup-if-mismatch <"$p" 2>&1); then
		ok "$name applies to linux-source-$series without fuzz"
	else
		nok "$name applies to linux-source-$series without fuzz"
		printf '%s\n' "$log" | sed 's/^/# /'
		applied=0
	fi
done
if [ $applied = 1 ] && log=$(perl "$src/scripts/checkpatch.pl" --strict --no-tree \
		--root="$src" --no-summary --terse --ignore FILE_PATH_CHANGES \
		"${patches[@]}" 2>&1) && [ -z "$log" ]; then
	ok "checkpatch --strict kernel/patches ($series)"
else
	nok "checkpatch --strict kernel/patches ($series)"
	printf '%s\n' "$log" | sed 's/^/# /'
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
	ok "patched nvme.ko builds against $(basename "$kdir") without warnings"
else
	nok "patched nvme.ko builds against $(basename "$kdir") without warnings"
	printf '%s\n' "$log" | grep -E 'warning|error|Error' | head -40 | sed 's/^/# /'
fi
if [ -f "$dir/nvme.ko" ] && modinfo -F parm "$dir/nvme.ko" | grep -q '^hmb_trace_kb:'; then
	ok "patched nvme.ko has the hmb_trace_kb parameter"
else
	nok "patched nvme.ko has the hmb_trace_kb parameter"
fi
exit $fail
