#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# demo-host.sh (make demo-host; make demo falls back to it when the VM
# bench cannot run): the classic path end to end on this machine, no
# kernel module needed.  A simulated SSD firmware (hmb-fwsim) writes trace
# records into a ring file in /dev/shm, standing in for the HMB trace slice;
# hmb-trace-daemon drains it into a dump; hmb-trace-analyze counts and
# decodes the dump.  Then the same with a consumer too slow for the load, to
# show how a loss is counted and located.  Leaves its files in
# build/demo-host/.
# Knobs: HMB_DEMO_RECORDS (default 500000), HMB_DEMO_DIR.
. "$(dirname "$0")/lib/preamble.sh"
set -o pipefail
bin=$top/build/bin
out=${HMB_DEMO_DIR:-$top/build/demo-host}
n=${HMB_DEMO_RECORDS:-500000}
ring=/dev/shm/hmb-demo-$$
dpid=

for p in hmb-fwsim hmb-trace-daemon hmb-trace-analyze; do
	[ -x "$bin/$p" ] || { echo "demo: $bin/$p missing; run make first" >&2; exit 1; }
done
cleanup() {
	[ -n "$dpid" ] && kill -TERM "$dpid" 2>/dev/null && wait "$dpid" 2>/dev/null
	rm -f "$ring"
}
trap cleanup EXIT
mkdir -p "$out"
rm -f "$out"/trace.bin* "$out"/slow.bin* "$out"/*.txt "$out"/*.json
export PATH=$bin:$PATH

say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
run() { printf '$ %s\n' "$*"; "$@"; }

say "1. A 4 MiB trace ring, as the firmware would lay it out in the HMB"
echo "The ring lives in $ring (on a drive: a slice of the Host Memory Buffer)."
run hmb-fwsim --ring-file "$ring" --ring-size 4M --init-only

say "2. The daemon attaches and waits for records (no CPU while idle)"
printf '$ hmb-trace-daemon --ring-file %s -o %s &\n' "$ring" "$out/trace.bin"
hmb-trace-daemon --ring-file "$ring" -o "$out/trace.bin" \
	--stats-json "$out/daemon.json" 2> "$out/daemon.txt" &
dpid=$!

say "3. The firmware writes $n records: mixed sizes, 4 cores, 4 opcodes"
echo "(mode wait: the firmware never overruns the daemon, so nothing may be lost)"
run hmb-fwsim --ring-file "$ring" --attach --count "$n" \
	--payload mix:16x40,64x40,512x15,2048x5 --cpus 4 --seed 42 --mode wait \
	--wait-drained --log "$out/firmware-log.bin"

say "4. Stop the daemon (SIGTERM: it finishes the batch in hand)"
kill -TERM "$dpid"; wait "$dpid"; dpid=
cat "$out/daemon.txt"

say "5. What arrived: hmb-trace-analyze stats"
run hmb-trace-analyze stats "$out/trace.bin" | tee "$out/stats.txt"

say "6. The first records, decoded"
printf "$ hmb-trace-analyze decode %s | head -8 | cut -c1-110\n" "$out/trace.bin"
hmb-trace-analyze decode "$out/trace.bin" | head -8 | cut -c1-110 || true

say "7. Check: the dump is byte for byte what the firmware wrote"
if cmp "$out/trace.bin" "$out/firmware-log.bin"; then
	echo "identical: $(stat -c %s "$out/trace.bin") bytes, every record once, in order"
else
	echo "demo: the dump differs from the firmware's log" >&2
	exit 1
fi
rm -f "$out/firmware-log.bin"

say "8. A consumer too slow for the load: the firmware drops, and says so"
echo "The daemon is throttled to 20 MB/s while the firmware offers ~100 MB/s."
"$bin/hmb-fwsim" --ring-file "$ring" --ring-size 1M --init-only
hmb-trace-daemon --ring-file "$ring" -o "$out/slow.bin" --throttle 20M \
	2> "$out/slow-daemon.txt" &
dpid=$!
run hmb-fwsim --ring-file "$ring" --attach --count 200000 --rate 400000 \
	--burst 2000 --payload mix:16x40,64x40,512x15,2048x5 --seed 7 --wait-drained
kill -TERM "$dpid"; wait "$dpid"; dpid=
grep -m2 "overflow" "$out/slow-daemon.txt" || true
printf '$ hmb-trace-analyze stats %s | head -20\n' "$out/slow.bin"
hmb-trace-analyze stats "$out/slow.bin" | head -20 || true
echo "(lost counts the drops that a later record reveals as a seq gap; drops"
echo " after the last record written show only in the firmware's own count)"

say "Done"
echo "Dumps and their sidecars are in $out:"
ls -l "$out"
