#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# nvme-hmb-model: the HMB-capable NVMe controller model (scripts/vm/qemu)
# driven from the guest by admin passthrough (vm-nvme-hmb), with Debian's
# own nvme driver:
#   - Identify Controller shows the HMPRE/HMMIN/HMMINDS/HMMAXD properties
#     and Linux enables an HMB (dmesg, Get Features 0Dh);
#   - with the HMB disabled (Set Features EHM=0), every malformed
#     descriptor list gets its status code (zero entries, more than HMMAXD,
#     a zero-sized entry, HSIZE not the sum, HSIZE below HMMIN, an
#     unaligned entry, an unaligned list, a trace slice on the controller's
#     own registers (BAR0: CVE-2021-3929's hazard); enable while enabled), and the
#     controller's account gives the reason; Linux's HMB is enabled again
#     and I/O works;
#   - a trace ring in the tool's locked memory is adopted and consumed with
#     libhmbtrace while fio runs: wrap markers, a consumer pause that makes
#     the controller drop (OVERFLOWED), FROZEN on EHM=0, and the dump equal
#     to the controller's account (nvme-account-check on the VM host);
#   - FROZEN set by a controller reset (sysfs reset_controller) and by a
#     shutdown (unbinding the nvme driver), the ring's records all read.
# vm-timeout: 600
# vm-nvme-hmb: hmpre=2048, hmmin=8, hmmaxd=32, hmb-bg-rate=20, hmb-clock-drift-ppm=200, hmb-clock-offset=5000000000
# (the same properties as nvme-hmb-e2e, so that both can share a boot)
set -u
. "$HMB_REPO/scripts/vm/lib/tap.sh"
T=vm-nvme-hmb
C=$HMB_NVME_CTRL
R=$HMB_RESULTS
ACCT=$HMB_NVME_ACCOUNT
INVALID_FIELD=16386	# 0x4002: Invalid Field in Command, Do Not Retry
SEQ_ERROR=16396		# 0x400c: Command Sequence Error, Do Not Retry

# jget KEY FILE: the number (or true/false/string) KEY has in the JSON in FILE
jget() {
	sed -n "s/.*\"$1\":\(\"[^\"]*\"\|[-0-9a-z]*\).*/\1/p" "$2" | head -1 | tr -d '"'
}
# acct_has TEXT: the end of the account (its last 64 KiB, and nothing from
# before this suite began: the account is the run's) holds TEXT.  A clock
# read flushes it.  The lines looked for are the latest: after a freeze the
# controller writes no command lines.
B0=$(stat -c %s "$ACCT")
acct_has() {
	$T clock "$C" 1 >/dev/null 2>&1
	_n=$(( $(stat -c %s "$ACCT") - B0 ))
	[ $_n -gt 65536 ] && _n=65536
	[ $_n -gt 0 ] && tail -c $_n "$ACCT" | grep -q "$1"
}
fio_ok() {	# fio_ok NAME SECONDS [fio args]: random 4k read/write
	_n=$1 _s=$2
	shift 2
	fio --name="$_n" --filename="$HMB_NVME_DEV" --direct=1 --rw=randrw --bs=4k \
		--size=64M --time_based --runtime="$_s" --ioengine=libaio --iodepth=4 \
		--output-format=terse "$@" > "$R/fio-$_n.txt" 2> "$R/fio-$_n.err"
}

[ -n "${HMB_NVME_HMB:-}" ] && [ -c "$C" ] || {
	tap_fail "the HMB controller and $C" "HMB_NVME_HMB='${HMB_NVME_HMB:-}'"
	tap_done
}

# --- Identify, Linux's HMB ---------------------------------------------------
$T id "$C" > "$R/id.json"
[ "$(jget hmpre "$R/id.json")" = 2048 ] && [ "$(jget hmmin "$R/id.json")" = 8 ] &&
	[ "$(jget hmminds "$R/id.json")" = 0 ] && [ "$(jget hmmaxd "$R/id.json")" = 32 ] &&
	tap_ok "Identify Controller: $(cat "$R/id.json")" ||
	tap_fail "Identify Controller shows hmpre=2048 hmmin=8 hmminds=0 hmmaxd=32" "$(cat "$R/id.json")"
# (the bench loaded nvme at boot: its messages are in the boot log)
grep -q 'host memory buffer' /results/.vm/dmesg.boot &&
	tap_ok "Linux allocated an HMB: $(grep 'host memory buffer' /results/.vm/dmesg.boot | head -1 | sed 's/^\[[^]]*\] //')" ||
	tap_fail "Linux allocated an HMB" "$(grep -i nvme /results/.vm/dmesg.boot)"
$T get "$C" > "$R/linux-hmb.json"
LH_HSIZE=$(jget hsize "$R/linux-hmb.json")
LH_HMDLA=$(jget hmdla "$R/linux-hmb.json")
LH_HMDLEC=$(jget hmdlec "$R/linux-hmb.json")
[ "$(jget status "$R/linux-hmb.json")" = 0 ] && [ "$(jget ehm "$R/linux-hmb.json")" = 1 ] &&
	[ "$LH_HSIZE" = 2048 ] &&
	tap_ok "Get Features 0Dh: enabled by Linux, $(cat "$R/linux-hmb.json")" ||
	tap_fail "Get Features 0Dh: EHM=1, HSIZE 2048" "$(cat "$R/linux-hmb.json")"
$T clock "$C" 1 > /dev/null	# (at boot, before this suite: the whole account)
grep -q '"ev":"refuse".*"why":"magic 0x' "$ACCT" &&
	tap_ok "the controller refused to trace into Linux's last descriptor (no ring header there)" ||
	tap_fail "a refusal with its reason in the account" "$(tail -5 "$ACCT")"

# --- malformed descriptor lists ------------------------------------------------
$T set "$C" 0 0 0 0 > "$R/off.json"
$T get "$C" > "$R/off-get.json"
[ "$(jget status "$R/off.json")" = 0 ] && [ "$(jget ehm "$R/off-get.json")" = 0 ] &&
	tap_ok "Set Features 0Dh EHM=0 by passthrough: disabled" ||
	tap_fail "Set Features EHM=0" "$(cat "$R/off.json" "$R/off-get.json")"
for c in zero-entries:"HMDLEC is 0" too-many:"exceeds HMMAXD" zero-size:"BSIZE is 0" \
	hsize-mismatch:"the sum of the descriptors" below-hmmin:"below HMMIN" \
	unaligned:"not aligned to the memory page size" list-unaligned:"HMDLLA bits 3:0" \
	iomem:"is not all guest RAM"; do
	case_=${c%%:*} why=${c#*:}
	$T craft "$C" "$case_" > "$R/craft-$case_.json" 2> "$R/craft-$case_.err"
	st=$(jget status "$R/craft-$case_.json")
	if [ "$st" = $INVALID_FIELD ] && acct_has "$why"; then
		tap_ok "$case_: Invalid Field in Command ($st), account: '$why'"
	else
		tap_fail "$case_: Invalid Field in Command ($INVALID_FIELD) and '$why' in the account" \
			"$(cat "$R/craft-$case_.json" "$R/craft-$case_.err"; tail -2 "$ACCT")"
	fi
done
$T craft "$C" twice > "$R/craft-twice.json"
[ "$(jget status "$R/craft-twice.json")" = 0 ] &&
	[ "$(jget second_status "$R/craft-twice.json")" = $SEQ_ERROR ] &&
	[ "$(jget disable_status "$R/craft-twice.json")" = 0 ] && acct_has "already enabled" &&
	tap_ok "enable while enabled: Command Sequence Error ($SEQ_ERROR)" ||
	tap_fail "enable while enabled: Command Sequence Error" "$(cat "$R/craft-twice.json")"
$T set "$C" 3 "$LH_HSIZE" "$LH_HMDLA" "$LH_HMDLEC" > "$R/on.json"
$T get "$C" > "$R/on-get.json"
[ "$(jget status "$R/on.json")" = 0 ] && [ "$(jget ehm "$R/on-get.json")" = 1 ] &&
	[ "$(jget hmdla "$R/on-get.json")" = "$LH_HMDLA" ] &&
	tap_ok "Linux's HMB enabled again (MR=1, its own list)" ||
	tap_fail "Linux's HMB enabled again" "$(cat "$R/on.json" "$R/on-get.json")"
fio_ok after-lists 2 && tap_ok "fio after the malformed lists: $(cut -d';' -f6,8 "$R/fio-after-lists.txt") (read KiB;IOPS)" ||
	tap_fail "fio after the malformed lists" "$(cat "$R/fio-after-lists.err")"

# --- a ring in locked memory, while fio runs -------------------------------------
# fio first, so that the consumer's pause at the start meets a busy
# controller.  Nothing here assumes a rate (a loaded TCG guest may do a few
# commands a second, an idle one hundreds): fio runs until the ring is done
# and is stopped then; the consumer pauses until the controller sets
# OVERFLOWED (at most 60 s) and reads until the controller's head has gone
# 6 times round the 64 KiB ring and a wrap marker was read (whether a lap
# ends in a marker or an implicit skip depends on the record sizes there),
# with a 150 s deadline.
fio --name=ring --filename="$HMB_NVME_DEV" --direct=1 --rw=randrw --bs=4k \
	--size=64M --time_based --runtime=400 --ioengine=libaio --iodepth=4 \
	--output-format=terse > "$R/fio-ring.txt" 2> "$R/fio-ring.err" &
fp=$!	# fio's own pid: SIGTERM ends it with its results
sleep 1
rm -f "$R/ready.json"
$T ring "$C" --ring-size 65536 --seconds 150 --laps 6 --pause-ms 60000 --pause-until-overflow \
	--dump "$R/ring.bin" --ready "$R/ready.json" > "$R/ring.json" 2> "$R/ring.err" &
rp=$!
i=0
while [ ! -s "$R/ready.json" ] && [ $i -lt 300 ] && kill -0 $rp 2>/dev/null; do usleep 100000; i=$((i + 1)); done
[ -s "$R/ready.json" ] && tap_ok "the controller took an HMB whose trace slice is the tool's memory: $(cat "$R/ready.json")" ||
	tap_fail "the controller took the tool's HMB" "$(cat "$R/ring.err" "$R/ring.json" 2>/dev/null)"
wait $rp
rrc=$?
kill -TERM $fp 2>/dev/null
wait $fp || tap_diag "fio during the ring (stopped by SIGTERM once the ring was done): exit $?: $(tail -2 "$R/fio-ring.err")"
tap_diag "ring: $(cat "$R/ring.json")"
[ $rrc = 0 ] && [ "$(jget ended "$R/ring.json")" = laps ] &&
	[ "$(jget frozen "$R/ring.json")" = true ] && [ "$(jget disable_status "$R/ring.json")" = 0 ] &&
	[ "$(jget restore_status "$R/ring.json")" = 0 ] &&
	tap_ok "Set Features EHM=0 set FROZEN in the ring (flags $(jget flags "$R/ring.json")); Linux's HMB given back" ||
	tap_fail "EHM=0 froze the ring and Linux's HMB came back" "$(cat "$R/ring.err" "$R/ring.json")"
recs=$(jget records "$R/ring.json"); marks=$(jget markers "$R/ring.json"); lost=$(jget lost "$R/ring.json")
laps=$(( $(jget head "$R/ring.json") / 65536 ))
[ "${recs:-0}" -gt 1000 ] && [ "$laps" -gt 5 ] && [ "${marks:-0}" -gt 0 ] &&
	tap_ok "libhmbtrace read $recs records over $laps laps of a 64 KiB ring, $marks wrap markers" ||
	tap_fail "more than 1000 records, 5 laps, wrap markers" "$(cat "$R/ring.json")"
[ "${lost:-0}" -gt 0 ] && [ "$(jget overflowed_seen "$R/ring.json")" = true ] &&
	acct_has '"ev":"freeze","why":"set_features_ehm0"' &&
	tap_ok "the consumer's pause until the ring was full: OVERFLOWED seen, $lost records dropped by the controller (seq gaps)" ||
	tap_fail "OVERFLOWED and records dropped while the consumer paused" "$(cat "$R/ring.json")"
if hostcmd run nvme-account-check @NVME_ACCOUNT@ @RESULTS@/ring.bin \
	--slice "$(jget slice "$R/ready.json")" --last --expect-complete \
	> "$R/check-ring.json" 2> "$R/check-ring.err"; then
	tap_ok "the dump is exactly what the controller's account says it wrote: $(cut -c1-300 "$R/check-ring.json")"
else
	tap_fail "dump == account (nvme-account-check)" "$(cat "$R/check-ring.json" "$R/check-ring.err")"
fi

# --- FROZEN by a controller reset, then by a shutdown -----------------------------
# ring_until_frozen NAME: the ring in the background until the controller
# freezes it; then ACTION (the rest of the arguments) is run.
ring_until_frozen() {
	_name=$1
	shift
	rm -f "$R/ready-$_name.json"
	$T ring "$C" --ring-size 2048 --seconds 120 --until-frozen --dump "$R/ring-$_name.bin" \
		--ready "$R/ready-$_name.json" > "$R/ring-$_name.json" 2> "$R/ring-$_name.err" &
	_rp=$!
	_i=0
	while [ ! -s "$R/ready-$_name.json" ] && [ $_i -lt 100 ] && kill -0 $_rp 2>/dev/null; do
		usleep 100000; _i=$((_i + 1))
	done
	fio_ok "$_name" 2
	"$@"
	wait $_rp
	tap_diag "ring $_name: $(cat "$R/ring-$_name.json")"
	[ "$(jget ended "$R/ring-$_name.json")" = frozen ] &&
		[ "$(jget frozen_by_controller "$R/ring-$_name.json")" = true ]
}
reset_ctrl() { echo 1 > "/sys/class/nvme/${C#/dev/}/reset_controller"; }
if ring_until_frozen reset reset_ctrl && acct_has '"why":"controller_reset"'; then
	tap_ok "a controller reset set FROZEN in the ring (flags $(jget flags "$R/ring-reset.json"))"
else
	tap_fail "a controller reset sets FROZEN" "$(cat "$R/ring-reset.err" "$R/ring-reset.json")"
fi
hostcmd run nvme-account-check @NVME_ACCOUNT@ @RESULTS@/ring-reset.bin \
	--slice "$(jget slice "$R/ready-reset.json")" --last --expect-complete \
	> "$R/check-reset.json" 2>&1 &&
	tap_ok "every record written before the reset was read: $(cut -c1-200 "$R/check-reset.json")" ||
	tap_fail "dump == account across the reset" "$(cat "$R/check-reset.json")"
i=0
while [ $i -lt 100 ] && [ "$($T get "$C" 2>/dev/null | sed -n 's/.*"ehm":\([0-9]\).*/\1/p')" != 1 ]; do
	usleep 100000; i=$((i + 1))
done
$T get "$C" > "$R/after-reset.json"
[ "$(jget ehm "$R/after-reset.json")" = 1 ] && fio_ok after-reset 2 &&
	tap_ok "after the reset Linux enabled its HMB again (MR=1) and I/O works" ||
	tap_fail "HMB and I/O after the reset" "$(cat "$R/after-reset.json" "$R/fio-after-reset.err")"

bdf=$(basename "$(readlink -f "/sys/class/nvme/${C#/dev/}/device")")
unbind() { echo "$bdf" > /sys/bus/pci/drivers/nvme/unbind; }
if ring_until_frozen shutdown unbind && acct_has '"why":"shutdown"'; then
	tap_ok "a shutdown (unbinding $bdf from nvme) set FROZEN in the ring"
else
	tap_fail "a shutdown sets FROZEN" "$(cat "$R/ring-shutdown.err" "$R/ring-shutdown.json")"
fi
hostcmd run nvme-account-check @NVME_ACCOUNT@ @RESULTS@/ring-shutdown.bin \
	--slice "$(jget slice "$R/ready-shutdown.json")" --last --expect-complete > "$R/check-shutdown.json" 2>&1 &&
	tap_ok "every record written before the shutdown was read" ||
	tap_fail "dump == account across the shutdown" "$(cat "$R/check-shutdown.json")"
echo "$bdf" > /sys/bus/pci/drivers/nvme/bind
i=0
while [ ! -b "$HMB_NVME_DEV" ] && [ $i -lt 100 ]; do usleep 100000; i=$((i + 1)); done
fio_ok rebound 2 && tap_ok "rebound: $HMB_NVME_DEV back, I/O works" ||
	tap_fail "rebind and I/O" "$(cat "$R/fio-rebound.err"; dmesg | tail -5)"

$T clock "$C" 1 > /dev/null
bad=$(dmesg | grep -E 'WARNING:|BUG:|Oops')
[ -z "$bad" ] && tap_ok "dmesg free of WARNING:, BUG: and Oops" || tap_fail "dmesg clean" "$bad"
tap_done
