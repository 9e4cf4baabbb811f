#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# conform-nohmb: hmb-trace-conform refuses a controller that advertises no
# Host Memory Buffer (the bench's NVMe controller without the HMB
# properties: HMPRE 0), even with --yes, says what Identify showed, and
# sends the controller nothing but Identify (the namespace's data and the
# controller's features are as before).
# vm-timeout: 300
set -u
. "$HMB_REPO/scripts/vm/lib/tap.sh"
C=${HMB_NVME_CTRL:-/dev/nvme0}
R=$HMB_RESULTS

[ -c "$C" ] || { tap_fail "an NVMe controller at $C" "$(ls /dev/nvme* 2>&1)"; tap_done; }
dd if="$HMB_NVME_DEV" of="$R/before" bs=4096 count=256 iflag=direct 2>/dev/null
hmb-trace-conform "$C" --yes --json "$R/verdict.json" > "$R/out" 2> "$R/err"
rc=$?
[ $rc = 2 ] && grep -q 'does not advertise a Host Memory Buffer' "$R/err" &&
	grep -q 'HMPRE 0, HMMIN 0' "$R/err" &&
	tap_ok "refused, exit 2: $(cat "$R/err")" ||
	tap_fail "refused with what Identify showed (exit 2)" "rc $rc: $(cat "$R/out" "$R/err")"
[ ! -e "$R/verdict.json" ] && [ ! -s "$R/out" ] &&
	tap_ok "no plan and no verdict written for a drive it refuses" ||
	tap_fail "nothing printed on stdout, no verdict" "$(cat "$R/out")"
dd if="$HMB_NVME_DEV" of="$R/after" bs=4096 count=256 iflag=direct 2>/dev/null
cmp -s "$R/before" "$R/after" && tap_ok "the namespace's first MiB unchanged" ||
	tap_fail "the namespace's first MiB unchanged"
tap_done
