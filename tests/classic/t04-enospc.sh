#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# ENOSPC on a small tmpfs: the daemon holds its tail (the simulator waits,
# the ring's tail does not move), says so once, and when space is freed it
# resumes; nothing is lost.  Needs root (mount).
. "$(dirname "$0")/lib.sh"

mnt=$WORK/mnt
mkdir -p "$mnt"
if [ "$(id -u)" != 0 ] || ! mount -t tmpfs -o size=32m hmb-test-enospc "$mnt" 2>/dev/null; then
	tap_skip "ENOSPC on a small tmpfs" "needs root to mount a tmpfs"
	tap_done
fi
CLEANUP_HOOK='umount -l "$mnt" 2>/dev/null'
# Leave about 3 MB free; the run needs ~12 MB.
dd if=/dev/zero of="$mnt/ballast" bs=1M count=29 status=none 2>/dev/null
ring=$WORK/ring
out=$mnt/out.bin
"$FWSIM" -r "$ring" -s 1M --init-only
start_daemon daemon -r "$ring" -o "$out" --stats-json "$WORK/daemon.json"
"$FWSIM" -r "$ring" --attach -n 100000 -p "$MIX" --mode wait --wait-timeout 60 \
	--wait-drained --log "$WORK/sim.bin" --json > "$WORK/sim.json" &
spid=$!
PIDS+=("$spid")

tail_of() { od -An -t u8 -j 24 -N 8 "$ring" | tr -d ' '; }
for i in $(seq 100); do
	grep -q "No space left" "$WORK/daemon.err" && break
	sleep 0.1
done
tap_run "daemon reports ENOSPC" grep -q "No space left on device; holding the ring tail" "$WORK/daemon.err"
sleep 0.5
t1=$(tail_of); s1=$(stat -c %s "$out")
sleep 1
t2=$(tail_of); s2=$(stat -c %s "$out")
tap_eq "ring tail held while the output is full" "$t2" "$t1"
tap_eq "output does not grow while full" "$s2" "$s1"
tap_run "simulator waits for room" kill -0 "$spid"
tap_eq "the episode is logged once" "$(grep -c 'No space left' "$WORK/daemon.err")" 1

rm -f "$mnt/ballast"
wait "$spid"
tap_eq "simulator finished after space was freed" "$?" 0
kill -TERM "$DPID"
wait_exit "$DPID" 30
	tap_eq "daemon exits 0" "$RC" 0
tap_run "daemon says it writes again" grep -q "writing again" "$WORK/daemon.err"
tap_eq "one output error episode counted" "$(json "$WORK/daemon.json" output_errors)" 1
tap_run "dump == simulator log (nothing lost)" cmp "$out" "$WORK/sim.bin"
tap_done
