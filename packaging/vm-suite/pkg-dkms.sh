#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# pkg-dkms: the Debian packages in a guest.  The module DKMS built for this
# guest's kernel when packaging/tests/test-deb installed nvme-hmb-trace-dkms
# (kept in build/pkg/dkms/KVER/), and the daemon and analyzer of the
# hmb-trace-tools package (unpacked in build/pkg/root): the module loads
# with a test ring, the packaged daemon drains N records through
# /dev/nvme-hmb-traceN, the packaged analyzer counts all of them and no
# loss, the module unloads, dmesg stays clean.  Runs on 6.1 and 6.12.
# vm-timeout: 300
set -u
. "$HMB_REPO/scripts/vm/lib/tap.sh"
. "$HMB_REPO/kernel/tools/guest-lib.sh"
R=$HMB_RESULTS
P=$HMB_REPO/build/pkg
KO=$P/dkms/$HMB_KVER/nvme-hmb-trace.ko
BIN=$P/root/usr/bin
N=20000
CHUNK=1000

if [ ! -f "$KO" ] || [ ! -x "$BIN/hmb-trace-daemon" ] || [ ! -x "$BIN/hmb-trace-analyze" ]; then
	tap_fail "DKMS module and packaged tools present" \
		"no $KO or $BIN/hmb-trace-* (make -C packaging check on the host builds and installs the packages)"
	tap_done
fi
vm=$(modinfo -F vermagic "$KO" | cut -d' ' -f1)
[ "$vm" = "$HMB_KVER" ] && tap_ok "the DKMS-built module is for this kernel ($vm)" ||
	tap_fail "the DKMS-built module is for this kernel" "vermagic '$vm', kernel $HMB_KVER"
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
rmmod nvme_hmb_trace && tap_ok "rmmod nvme_hmb_trace" || tap_fail "rmmod nvme_hmb_trace"
hmb_dmesg_check
tap_done
