#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# hmb-lifecycle: the HMB trace slice's life on the VM bench's HMB-capable
# NVMe controller, with the project's patched nvme.ko:
#   - hmb_trace_kb that is not a power of two, larger than the controller
#     allows, larger than one contiguous allocation (4 MiB), or 0: one
#     clear dmesg line (none for 0), an HMB without a
#     trace slice (the controller refuses the last descriptor as a ring and
#     says why), I/O unaffected;
#   - nvme loaded first: the controller traces into the slice before
#     nvme-hmb-trace.ko is there; the module, loaded later, finds the slice
#     on the auxiliary bus and adopts it (the records made before it are
#     read);
#   - rmmod nvme-hmb-trace while nvme holds the HMB: refused while a
#     process holds the device ("in use"), done with the bridge on (the
#     controller keeps tracing), insmod again adopts the live ring;
#   - nvme-hmb-trace.ko loaded first: rmmod nvme lets go of the ring (the
#     shutdown freezes it), insmod nvme brings a new one;
#   - unbind and rebind of the NVMe PCI function while hmb-trace-daemon, and
#     then a test program, hold the device open and mapped: the daemon exits
#     "device gone" with its dump intact, the program sees POLLHUP, ENODEV
#     and SIGBUS; after the rebind there is a ring again;
#   - no WARNING, BUG or Oops in dmesg.
# vm-timeout: 600
# vm-nvme: none
# vm-nvme-hmb: hmpre=2048, hmmin=256, hmmaxd=16, hmb-bg-rate=0
set -u
. "$HMB_REPO/scripts/vm/lib/tap.sh"
. "$HMB_REPO/kernel/tools/guest-lib.sh"
R=$HMB_RESULTS
C=$HMB_NVME_CTRL
KB=256
# HMPRE 2048 and HMMIN 256 pages: 8 MiB preferred, the slice may take 7 MiB
LIMIT=$(((2048 - 256) * 4096))

[ -n "${HMB_NVME_HMB:-}" ] && [ -n "${HMB_NVME_ACCOUNT:-}" ] || {
	tap_fail "the HMB-capable controller (vm-nvme-hmb)" "HMB_NVME_HMB='${HMB_NVME_HMB:-}'"
	tap_done
}

# --- hmb_trace_kb the host must refuse --------------------------------------------
# bad VALUE WHAT PATTERN: load nvme with hmb_trace_kb=VALUE; PATTERN is the
# one dmesg line expected ("" for none).
bad() {
	mark=$(hmb_dmesg_mark)
	before=$(hmb_acct_count refuse)
	if ! hmb_nvme_load hmb_trace_kb="$1"; then
		tap_fail "hmb_trace_kb=$1 ($2): nvme loads and drives the disk" "$(dmesg | tail -5)"
		rmmod nvme 2>/dev/null
		return
	fi
	hmb_dmesg_since "$mark" > "$R/dmesg-kb$1.txt"
	n=$(grep -c "hmb_trace_kb=" "$R/dmesg-kb$1.txt")
	if [ -n "$3" ]; then
		[ "$n" = 1 ] && grep -q "$3" "$R/dmesg-kb$1.txt" &&
			tap_ok "hmb_trace_kb=$1 ($2): one dmesg line: $(grep 'hmb_trace_kb=' "$R/dmesg-kb$1.txt" | sed 's/^\[[^]]*\] //')" ||
			tap_fail "hmb_trace_kb=$1 ($2): one dmesg line matching '$3'" "$n lines: $(grep -i nvme "$R/dmesg-kb$1.txt")"
	else
		[ "$n" = 0 ] && tap_ok "hmb_trace_kb=$1: no trace slice and not a word about one" ||
			tap_fail "hmb_trace_kb=$1: no line about a trace slice" "$(grep 'hmb_trace_kb=' "$R/dmesg-kb$1.txt")"
	fi
	vm-nvme-hmb get "$C" > "$R/get-kb$1.json"
	grep -q 'host memory buffer' "$R/dmesg-kb$1.txt" && [ "$(hmb_jget ehm "$R/get-kb$1.json")" = 1 ] &&
		! grep -q 'HMB trace slice' "$R/dmesg-kb$1.txt" && [ -z "$(hmb_aux_slices)" ] &&
		tap_ok "hmb_trace_kb=$1: the HMB is enabled, without a trace slice" ||
		tap_fail "hmb_trace_kb=$1: an HMB without a trace slice" "$(cat "$R/get-kb$1.json"; hmb_aux_slices; grep -i hmb "$R/dmesg-kb$1.txt")"
	after=$(hmb_acct_count refuse)
	[ "$after" = $((before + 1)) ] &&
		tap_ok "hmb_trace_kb=$1: the controller found no ring in the last descriptor: $(grep '"ev":"refuse"' "$HMB_NVME_ACCOUNT" | tail -1 | sed -n 's/.*"why":"\([^"]*\)".*/\1/p')" ||
		tap_fail "hmb_trace_kb=$1: the controller refused the last descriptor as a ring" "refusals $before -> $after"
	hmb_io_ok && tap_ok "hmb_trace_kb=$1: I/O unaffected (1 MiB written and read back)" ||
		tap_fail "hmb_trace_kb=$1: I/O unaffected"
	rmmod nvme || tap_fail "rmmod nvme (hmb_trace_kb=$1)"
}
bad 3 "not a power of two" "hmb_trace_kb=3 is not a power of two"
bad 8192 "a slice larger than HMPRE - HMMIN" "hmb_trace_kb=8192 needs a 8392704-byte trace slice, more than the $LIMIT bytes the controller leaves"
bad 4096 "a slice larger than one contiguous allocation" "hmb_trace_kb=4096 needs a 4198400-byte trace slice, more than the largest contiguous buffer the kernel allocates (4194304 bytes)"
bad 0 "the default" ""

# --- nvme first: the controller traces before the module is there --------------
mark=$(hmb_dmesg_mark)
a0=$(hmb_acct_count adopt)
if ! hmb_nvme_load hmb_trace_kb=$KB; then
	tap_fail "patched nvme hmb_trace_kb=$KB loads" "$(dmesg | tail -5)"
	tap_done
fi
hmb_dmesg_since "$mark" > "$R/dmesg-load.txt"
grep -q "HMB trace slice: $((KB * 1024 + 4096)) bytes (ring_size $((KB * 1024)))" "$R/dmesg-load.txt" &&
	tap_ok "nvme hmb_trace_kb=$KB: $(grep 'HMB trace slice' "$R/dmesg-load.txt" | sed 's/^\[[^]]*\] //')" ||
	tap_fail "nvme announces the trace slice" "$(grep -i nvme "$R/dmesg-load.txt")"
[ "$(hmb_acct_count adopt)" = $((a0 + 1)) ] &&
	tap_ok "the controller adopted the ring nvme initialised (no nvme-hmb-trace.ko loaded)" ||
	tap_fail "the controller adopted the ring" "$(grep -E '"ev":"(adopt|refuse)"' "$HMB_NVME_ACCOUNT" | tail -2)"
slices=$(hmb_aux_slices)
[ "$slices" = "nvme.hmb_trace.0 none" ] &&
	tap_ok "the slice is on the auxiliary bus, unbound: $slices" ||
	tap_fail "auxiliary device nvme.hmb_trace.0 without a driver" "'$slices'"
# the records of this epoch: from the adoption on
acct_from=$(hmb_acct_last adopt)
set -- $(hmb_acct_records "$acct_from")
w0=$1
dd if="$HMB_NVME_DEV" of=/dev/null bs=4k count=100 iflag=direct 2>/dev/null
set -- $(hmb_acct_records "$acct_from")
w_before=$1
[ $(($1 - w0)) -ge 400 ] && [ "$2" = 0 ] &&
	tap_ok "the controller traced 100 reads into the slice without the module: $(($1 - w0)) records ($1 in the epoch)" ||
	tap_fail "records written before the module is loaded" "written $w0 -> $1 dropped $2"
hmb_load || { tap_fail "insmod nvme-hmb-trace.ko" "$(dmesg | tail -5)"; tap_done; }
dev=$(hmb_wait_ring nvme-pci)
S=$HMB_CLASS/$dev
[ -n "$dev" ] && [ "$(cat "$S/ring_size")" = $((KB * 1024)) ] && [ "$(cat "$S/name")" = nvme0 ] &&
	[ "$(hmb_aux_slices)" = "nvme.hmb_trace.0 nvme_hmb_trace.nvme-pci" ] &&
	tap_ok "nvme-hmb-trace.ko loaded second adopts the slice: $dev, ring_size $((KB * 1024)), head $(cat "$S/head")" ||
	tap_fail "nvme-hmb-trace.ko loaded second adopts the slice" "$(ls $HMB_CLASS; hmb_aux_slices; dmesg | tail -5)"
echo 1 > "$S/bridge"
hmb_wait_drained "$dev" 20
brec=$(cat "$S/bridge_records")
set -- $(hmb_acct_records "$acct_from")
[ "$brec" -ge "$w_before" ] && [ "$brec" = "$1" ] && [ "$(cat "$S/bridge_lost")" = 0 ] &&
	tap_ok "the bridge read every record made before the module was loaded ($brec of $1)" ||
	tap_fail "the records made before the module are read" "bridge $brec, account written $1 dropped $2, lost $(cat "$S/bridge_lost")"
echo 0 > "$S/bridge"

# --- rmmod nvme-hmb-trace while nvme holds the HMB ---------------------------------
hmb-trace-daemon --device "/dev/$dev" -o "$R/hold.bin" 2> "$R/hold-daemon.err" &
dpid=$!
i=0
while [ "$(cat "$S/consumer" 2>/dev/null)" = none ] && [ $i -lt 50 ]; do usleep 100000; i=$((i + 1)); done
refs=$(cat /sys/module/nvme_hmb_trace/refcnt)
if rmmod nvme_hmb_trace 2> "$R/rmmod-busy.err"; then
	tap_fail "rmmod nvme_hmb_trace is refused while the daemon holds /dev/$dev" "it was unloaded"
else
	# the open file holds the module (EWOULDBLOCK, "in use")
	grep -qE 'in use|Resource temporarily unavailable' "$R/rmmod-busy.err" &&
		[ -e "/dev/$dev" ] && [ "$refs" -ge 1 ] &&
		tap_ok "rmmod nvme_hmb_trace refused while the daemon holds /dev/$dev (refcnt $refs): $(cat "$R/rmmod-busy.err")" ||
		tap_fail "rmmod refused with a clear message" "refcnt $refs: $(cat "$R/rmmod-busy.err")"
fi
kill -INT $dpid
wait $dpid
[ $? = 0 ] && tap_ok "the daemon exits 0 afterwards" || tap_fail "daemon exit" "$(tail -3 "$R/hold-daemon.err")"

echo 1 > "$S/bridge"
fio --name=bg --filename="$HMB_NVME_DEV" --direct=1 --rw=randread --bs=4k --size=64M \
	--time_based --runtime=10 --ioengine=libaio --iodepth=4 --output-format=terse \
	> "$R/fio-bg.txt" 2> "$R/fio-bg.err" &
iop=$!
sleep 1
if rmmod nvme_hmb_trace 2> "$R/rmmod.err"; then
	tap_ok "rmmod nvme_hmb_trace with the bridge on, I/O running"
else
	tap_fail "rmmod nvme_hmb_trace with the bridge on" "$(cat "$R/rmmod.err")"
fi
[ ! -e "/dev/$dev" ] && [ "$(hmb_aux_slices)" = "nvme.hmb_trace.0 none" ] &&
	tap_ok "the ring is gone, the slice stays with nvme (unbound)" ||
	tap_fail "ring gone, slice unbound" "$(ls /dev/nvme-hmb-trace* 2>&1; hmb_aux_slices)"
# records made, dropped ones included (the ring fills without a consumer);
# fio may take a few seconds to start under TCG
w1=$(hmb_next_seq)
i=0
while w2=$(hmb_next_seq) && [ "$w2" -le "$w1" ] && [ $i -lt 50 ]; do usleep 100000; i=$((i + 1)); done
vm-nvme-hmb get "$C" > "$R/get-rmmod.json"
[ "$w2" -gt "$w1" ] && [ "$(hmb_jget ehm "$R/get-rmmod.json")" = 1 ] &&
	tap_ok "the controller keeps tracing without the module (records made $w1 -> $w2), HMB enabled" ||
	tap_fail "the controller keeps tracing without the module" "records made $w1 -> $w2; $(cat "$R/get-rmmod.json")"
hmb_load || tap_fail "insmod nvme-hmb-trace.ko again" "$(dmesg | tail -5)"
dev=$(hmb_wait_ring nvme-pci)
S=$HMB_CLASS/$dev
if [ -n "$dev" ]; then
	tap_ok "insmod again while I/O runs: the live ring is adopted ($dev, head $(cat "$S/head"), tail $(cat "$S/tail"))"
	echo 1 > "$S/bridge"
	sleep 2
	r1=$(cat "$S/bridge_records")
	[ "$r1" -gt 0 ] && [ "$(cat "$S/bridge_corrupt")" = 0 ] && [ "$(cat "$S/corrupt")" = none ] &&
		tap_ok "the bridge drains the adopted ring ($r1 records, not corrupt)" ||
		tap_fail "the bridge drains the adopted ring" "records $r1 corrupt $(cat "$S/bridge_corrupt") '$(cat "$S/corrupt")'"
else
	tap_fail "the live ring is adopted after insmod" "$(dmesg | tail -5)"
fi
wait $iop || tap_fail "fio while the module came and went" "$(cat "$R/fio-bg.err")"

# --- the module first: rmmod nvme lets go, insmod nvme brings a new slice --------
f0=$(hmb_acct_count freeze)
if rmmod nvme 2> "$R/rmmod-nvme.err"; then
	tap_ok "rmmod nvme with nvme-hmb-trace.ko loaded and the bridge on"
else
	tap_fail "rmmod nvme" "$(cat "$R/rmmod-nvme.err")"
fi
[ -z "$(hmb_aux_slices)" ] && ! hmb_ring nvme-pci > /dev/null &&
	[ "$(hmb_acct_count freeze)" -gt "$f0" ] &&
	tap_ok "the slice and its ring are gone; the shutdown froze the ring first" ||
	tap_fail "slice and ring gone, ring frozen" "$(hmb_aux_slices; ls $HMB_CLASS; grep freeze "$HMB_NVME_ACCOUNT" | tail -1)"
hmb_nvme_load hmb_trace_kb=$KB || tap_fail "insmod nvme again" "$(dmesg | tail -5)"
dev=$(hmb_wait_ring nvme-pci)
S=$HMB_CLASS/$dev
[ -n "$dev" ] && [ "$(hmb_aux_slices)" = "nvme.hmb_trace.0 nvme_hmb_trace.nvme-pci" ] &&
	tap_ok "nvme loaded second: the module adopts the new slice at once ($dev)" ||
	tap_fail "the module adopts a slice that appears after it" "$(hmb_aux_slices; dmesg | tail -5)"

# --- unbind and rebind of the NVMe PCI function -------------------------------------
# rebind: the driver back on the function, a ring again
rebind() {
	echo "$HMB_NVME_PCI" > /sys/bus/pci/drivers/nvme/bind 2> "$R/bind.err"
	hmb_nvme_wait_disk 20 && dev=$(hmb_wait_ring nvme-pci) && S=$HMB_CLASS/$dev && hmb_io_ok &&
		tap_ok "$1: rebind brings the disk and a ring back ($dev), I/O works" ||
		tap_fail "$1: rebind brings the disk and a ring back" "$(cat "$R/bind.err"; dmesg | tail -5)"
}
hmb-trace-daemon --device "/dev/$dev" -o "$R/unbind.bin" --stats-json "$R/unbind.json" \
	2> "$R/unbind-daemon.err" &
dpid=$!
i=0
while [ "$(cat "$S/consumer" 2>/dev/null)" = none ] && [ $i -lt 50 ]; do usleep 100000; i=$((i + 1)); done
dd if="$HMB_NVME_DEV" of=/dev/null bs=4k count=200 iflag=direct 2>/dev/null
hmb_wait_drained "$dev" 20
echo "$HMB_NVME_PCI" > /sys/bus/pci/drivers/nvme/unbind &&
	tap_ok "unbind $HMB_NVME_PCI from nvme while the daemon holds /dev/$dev open and mapped" ||
	tap_fail "unbind the NVMe function"
i=0
while kill -0 $dpid 2>/dev/null && [ $i -lt 100 ]; do usleep 100000; i=$((i + 1)); done
kill -0 $dpid 2>/dev/null && kill -KILL $dpid
wait $dpid
drc=$?
[ $drc = 5 ] && grep -q 'gone' "$R/unbind-daemon.err" &&
	tap_ok "the daemon exits 5 (device gone): $(grep gone "$R/unbind-daemon.err" | head -1)" ||
	tap_fail "the daemon exits 5 (device gone)" "status $drc: $(tail -3 "$R/unbind-daemon.err")"
hmb-trace-analyze stats "$R/unbind.bin" --format json > "$R/unbind-stats.json" 2> "$R/unbind-stats.err" &&
	[ "$(hmb_jget records "$R/unbind-stats.json")" -ge 1000 ] &&
	tap_ok "its dump is intact: $(hmb_jget records "$R/unbind-stats.json") records, lost $(hmb_jget lost "$R/unbind-stats.json")" ||
	tap_fail "the daemon's dump decodes" "$(cat "$R/unbind-stats.err" "$R/unbind-stats.json")"
[ -z "$(hmb_aux_slices)" ] && [ ! -e "/dev/$dev" ] &&
	tap_ok "unbind: the slice and /dev/$dev are gone" || tap_fail "unbind: slice and node gone" "$(hmb_aux_slices)"
rebind "daemon"

: > "$R/hold.err"
"$HMB_ST/hmb_ring_hold" "/dev/$dev" 60 > "$R/hold.tap" 2> "$R/hold.err" &
hold=$!
i=0
while ! grep -q ready "$R/hold.err" && [ $i -lt 100 ]; do usleep 100000; i=$((i + 1)); done
echo "$HMB_NVME_PCI" > /sys/bus/pci/drivers/nvme/unbind
wait $hold
rc=$?
while IFS= read -r line; do
	case $line in
	"ok "*) tap_ok "unbind under a mapping: ${line#ok * - }" ;;
	"not ok "*) tap_fail "unbind under a mapping: ${line#not ok * - }" ;;
	esac
done < "$R/hold.tap"
[ $rc = 0 ] || tap_fail "hmb_ring_hold exits 0" "status $rc: $(cat "$R/hold.err")"
rebind "mapping"

rmmod nvme_hmb_trace && tap_ok "rmmod nvme_hmb_trace" || tap_fail "rmmod nvme_hmb_trace"
rmmod nvme && tap_ok "rmmod nvme" || tap_fail "rmmod nvme"
bad=$(dmesg | grep -E 'disagrees about version of symbol|Unknown symbol')
[ -z "$bad" ] && tap_ok "no modversions complaint about the patched nvme.ko" || tap_fail "modversions" "$bad"
hmb_dmesg_check
tap_done
