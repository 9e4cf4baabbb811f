#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# pkg-dkms: the Debian packages in a guest.  The modules DKMS built for this
# guest's kernel when packaging/tests/test-deb installed nvme-hmb-trace-dkms
# and nvme-hmb-trace-nvme-dkms (kept in build/pkg/dkms/KVER/), and the
# daemon and analyzer of the hmb-trace-tools package (unpacked in
# build/pkg/root), on the VM bench's HMB-capable NVMe controller:
#   - the guest's init loaded the DKMS-built nvme.ko with hmb_trace_kb=128
#     instead of Debian's (vm-nvme: dkms): its version, srcversion and
#     parameter in /sys/module/nvme, the disk does I/O;
#   - the DKMS-built nvme-hmb-trace.ko loads with a test ring: the packaged
#     daemon drains N records through /dev/nvme-hmb-traceN, the packaged
#     analyzer counts all of them and no loss;
#   - the HMB path: the module adopts the slice the DKMS-built nvme carved
#     out of the HMB, the packaged daemon drains the controller model's
#     records while fio does I/O, and its dump is exactly what the
#     controller says it wrote (nvme-account-check --expect-complete);
#   - the module unloads, dmesg stays clean.  Runs on 6.1 and 6.12.
# vm-timeout: 400
# vm-nvme: dkms hmb_trace_kb=128
# vm-nvme-hmb: hmpre=2048, hmmin=256, hmmaxd=16, hmb-bg-rate=0
set -u
. "$HMB_REPO/scripts/vm/lib/tap.sh"
. "$HMB_REPO/kernel/tools/guest-lib.sh"
R=$HMB_RESULTS
P=$HMB_REPO/build/pkg
KO=$P/dkms/$HMB_KVER/nvme-hmb-trace.ko
NVKO=$P/dkms/$HMB_KVER/nvme.ko
BIN=$P/root/usr/bin
N=20000
CHUNK=1000

if [ ! -f "$KO" ] || [ ! -f "$NVKO" ] || [ ! -x "$BIN/hmb-trace-daemon" ] ||
	[ ! -x "$BIN/hmb-trace-analyze" ]; then
	tap_fail "DKMS modules and packaged tools present" \
		"no $KO, $NVKO or $BIN/hmb-trace-* (make -C packaging check on the host builds and installs the packages)"
	tap_done
fi
hmb_need_patched_hmb
vm=$(modinfo -F vermagic "$KO" | cut -d' ' -f1)
nvm=$(modinfo -F vermagic "$NVKO" | cut -d' ' -f1)
[ "$vm" = "$HMB_KVER" ] && [ "$nvm" = "$HMB_KVER" ] &&
	tap_ok "the DKMS-built nvme-hmb-trace.ko and nvme.ko are for this kernel ($vm)" ||
	tap_fail "the DKMS-built modules are for this kernel" "vermagic '$vm' and '$nvm', kernel $HMB_KVER"

# --- the DKMS-built nvme.ko drives the disk ------------------------------------------
M=/sys/module/nvme
want="$(modinfo -F version "$NVKO") $(modinfo -F srcversion "$NVKO") 128"
have="$(cat $M/version) $(cat $M/srcversion) $(cat $M/parameters/hmb_trace_kb)"
[ "$have" = "$want" ] && [ "$HMB_NVME_KO" = "$NVKO" ] &&
	tap_ok "the nvme driver running is the DKMS-built one: version, srcversion, hmb_trace_kb $have" ||
	tap_fail "the nvme driver running is the DKMS-built one" "want '$want', /sys/module/nvme '$have', HMB_NVME_KO $HMB_NVME_KO"
hmb_io_ok && tap_ok "1 MiB written to $HMB_NVME_DEV and read back through it" ||
	tap_fail "I/O through the DKMS-built nvme.ko"
if ! insmod "$KO" test_rings=1 test_ring_kb=256 2>"$R/insmod.err"; then
	tap_fail "insmod the DKMS-built nvme-hmb-trace.ko" "$(cat "$R/insmod.err"; dmesg | tail -5)"
	tap_done
fi
tap_ok "insmod the DKMS-built nvme-hmb-trace.ko test_rings=1"
dev=$(hmb_ring test) || { tap_fail "test ring registered"; tap_done; }
S=$HMB_CLASS/$dev
echo 16 > "$S/producer/payload_min"
echo 64 > "$S/producer/payload_max"
"$BIN/hmb-trace-daemon" --device "/dev/$dev" -o "$R/pkg.bin" --stats-json "$R/daemon.json" \
	2> "$R/daemon.err" &
dpid=$!
i=0
while [ "$(cat "$S/consumer")" = none ] && [ $i -lt 100 ]; do usleep 100000; i=$((i + 1)); done
[ "$(cat "$S/consumer")" != none ] && tap_ok "packaged hmb-trace-daemon holds /dev/$dev" ||
	tap_fail "packaged hmb-trace-daemon holds /dev/$dev" "$(cat "$R/daemon.err")"
n=0 rc=0
while [ $n -lt $N ]; do
	echo $CHUNK > "$S/producer/produce" || { rc=1; break; }
	hmb_wait_drained "$dev" 60 || { rc=1; break; }
	n=$((n + CHUNK))
done
kill -INT $dpid
wait $dpid
drc=$?
[ $rc = 0 ] && [ $drc = 0 ] && tap_ok "produced $N records, the daemon drained them and exited 0 on SIGINT" ||
	tap_fail "produce $N records and drain them" "produce rc $rc, daemon exit $drc: $(tail -3 "$R/daemon.err")"
"$BIN/hmb-trace-analyze" stats "$R/pkg.bin" --format json > "$R/stats.json" 2> "$R/stats.err"
recs=$(sed -n 's/.*"records": *\([0-9]*\).*/\1/p' "$R/stats.json")
lost=$(sed -n 's/.*"lost": *\([0-9]*\).*/\1/p' "$R/stats.json")
dropped=$(cat "$S/producer/dropped")
[ "$recs" = $N ] && [ "$lost" = 0 ] && [ "$dropped" = 0 ] &&
	tap_ok "packaged hmb-trace-analyze stats: $recs records, 0 lost (producer dropped 0)" ||
	tap_fail "packaged hmb-trace-analyze stats counts every record" \
		"records '$recs' lost '$lost' dropped '$dropped': $(cat "$R/stats.err")"

# --- the HMB path: the controller's records through the DKMS-built drivers ------------
dev=$(hmb_wait_ring nvme-pci)
S=$HMB_CLASS/$dev
[ -n "$dev" ] && [ "$(cat "$S/ring_size")" = 131072 ] &&
	tap_ok "the slice the DKMS-built nvme carved out of the HMB is adopted: /dev/$dev, ring_size 131072" ||
	{ tap_fail "the nvme-pci ring" "$(ls $HMB_CLASS; hmb_aux_slices; dmesg | tail -5)"; tap_done; }
"$BIN/hmb-trace-daemon" --device "/dev/$dev" -o "$R/hmb.bin" --stats-json "$R/hmb-daemon.json" \
	2> "$R/hmb-daemon.err" &
dpid=$!
i=0
while [ "$(cat "$S/consumer")" = none ] && [ $i -lt 100 ]; do usleep 100000; i=$((i + 1)); done
[ "$(cat "$S/consumer")" != none ] && tap_ok "packaged hmb-trace-daemon holds /dev/$dev" ||
	tap_fail "packaged hmb-trace-daemon holds /dev/$dev" "$(cat "$R/hmb-daemon.err")"
# 4 KiB random reads and writes, at most 500 IOPS each way: the ring
# (128 KiB) never fills while the daemon drains it
fio --name=pkg --filename="$HMB_NVME_DEV" --direct=1 --rw=randrw --bs=4k --size=64M \
	--time_based --runtime=6 --ioengine=libaio --iodepth=8 --rate_iops=500 \
	--output-format=terse > "$R/fio.txt" 2> "$R/fio.err" &&
	tap_ok "fio randrw QD8 (500 IOPS each way) 6 s on the DKMS-built nvme.ko" ||
	tap_fail "fio on the DKMS-built nvme.ko" "$(cat "$R/fio.err")"
hmb_acct_flush
hmb_wait_drained "$dev" 30 || tap_fail "the daemon caught up" "head $(cat "$S/head") tail $(cat "$S/tail")"
kill -INT $dpid
wait $dpid
drc=$?
[ $drc = 0 ] && tap_ok "the packaged daemon exits 0 on SIGINT" ||
	tap_fail "the packaged daemon's exit status" "$drc: $(tail -3 "$R/hmb-daemon.err")"
"$BIN/hmb-trace-analyze" stats "$R/hmb.bin" --format json > "$R/hmb-stats.json" 2> "$R/hmb-stats.err"
recs=$(hmb_jget records "$R/hmb-stats.json")
[ "${recs:-0}" -gt 0 ] && tap_ok "packaged hmb-trace-analyze stats: $recs controller records, lost $(hmb_jget lost "$R/hmb-stats.json")" ||
	tap_fail "the controller's records in the dump" "$(cat "$R/hmb-stats.json" "$R/hmb-stats.err")"
if hostcmd run nvme-account-check @NVME_ACCOUNT@ @RESULTS@/hmb.bin --expect-complete \
	> "$R/hmb-check.json" 2> "$R/hmb-check.err"; then
	tap_ok "the dump is exactly what the controller wrote, lost == dropped: $(cut -c1-300 "$R/hmb-check.json")"
else
	tap_fail "dump == the controller's account" "$(cat "$R/hmb-check.json" "$R/hmb-check.err")"
fi
[ "$(cat "$S/corrupt")" = none ] && tap_ok "the ring was never found corrupt" ||
	tap_fail "ring not corrupt" "$(cat "$S/corrupt")"
rmmod nvme_hmb_trace && tap_ok "rmmod nvme_hmb_trace" || tap_fail "rmmod nvme_hmb_trace"
hmb_dmesg_check
tap_done
