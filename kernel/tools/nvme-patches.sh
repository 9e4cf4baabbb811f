#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# nvme-patches.sh PATCHDIR SERIES: the nvme-pci patches to apply to
# linux-source-SERIES's drivers/nvme/host, one path a line, in order.
# PATCHDIR holds the series written against 6.1; a patch that differs for
# a series lives under PATCHDIR/SERIES/ with the same name and names the
# 6.1 patch it was ported from (a line "Ported-from-sha256: " and the first
# 32 hex digits of the 6.1 patch's sha256, in groups of 8 joined by "-" so
# that checkpatch does not take them for a commit id).  It replaces that
# patch only while the 6.1 patch is still the one it was ported from;
# otherwise the 6.1 patch itself is listed and a line on stderr says the
# variant must be ported again.  Used by check-nvme-patch.sh (the build
# tree) and by the DKMS build of nvme-hmb-trace-nvme-dkms (its copy of
# kernel/patches).
set -eu
dir=$1 series=$2
for p in "$dir"/*.patch; do
	[ -f "$p" ] || { echo "nvme-patches.sh: no patch in $dir" >&2; exit 1; }
	v=$dir/$series/${p##*/}
	if [ -f "$v" ]; then
		want=$(sed -n 's/^Ported-from-sha256: \([0-9a-f-]*\)$/\1/p' "$v" | tr -d -)
		have=$(sha256sum "$p" | cut -c1-32)
		if [ "$want" = "$have" ]; then
			p=$v
		else
			echo "patches/$series/${p##*/} was ported from another version of ${p##*/} (sha256 ${want:-none}..., now $have...): not used; port it again if ${p##*/} does not apply" >&2
		fi
	fi
	echo "$p"
done
