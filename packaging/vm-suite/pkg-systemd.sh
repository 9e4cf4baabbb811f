#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# pkg-systemd: the shipped unit, udev rule and logrotate snippet under
# Debian's systemd as PID 1.  They are installed as make install installs
# them (ExecStart in BINDIR, here the tree's build/bin), the module gives a
# test ring (/dev/nvme-hmb-trace0), and then: the device unit the service
# binds to appears; systemctl start drains records; the hardening is in
# force in the running daemon (read-only /, private /tmp and network,
# no new privileges, no capabilities, seccomp, a device cgroup program) and
# systemd-analyze security gives the score packaging/README.md states;
# systemctl reload after a rename and logrotate -f with the shipped
# snippet (twice: the second compresses the first) rotate; kill -9 of the
# daemon is followed by a restart by systemd; systemctl stop exits 0 and
# leaves the exit summary; every record produced is in the files, seqs
# contiguous across them, and the producer dropped none.
# vm-init: systemd
# vm-timeout: 420
set -u
. "$HMB_REPO/scripts/vm/lib/tap.sh"
. "$HMB_REPO/kernel/tools/guest-lib.sh"
R=$HMB_RESULTS
I=nvme-hmb-trace0
U=hmb-trace-daemon@$I.service
LOGS=/var/log/hmb-trace
CHUNK=1000
produced=0

# prop NAME: a property of the service.
prop() { systemctl show -p "$1" --value "$U"; }
# produce N: N records into the test ring, in chunks the ring holds.
produce() {
	_n=0
	while [ $_n -lt "$1" ]; do
		echo $CHUNK > "$S/producer/produce" || return 1
		_n=$((_n + CHUNK)); produced=$((produced + CHUNK))
		hmb_wait_drained $I 60 || return 1
	done
}
# journal: the unit's log, for failures.
journal() { journalctl -u "$U" --no-pager -o cat 2>&1 | tail -${1:-8}; }

pid1=$(readlink /proc/1/exe)
case $pid1 in
*/systemd) tap_ok "PID 1 is systemd ($(systemctl --version | head -1))" ;;
*) tap_fail "PID 1 is systemd" "PID 1 runs '$pid1' (vm-init: systemd)"; tap_done ;;
esac

# What make install puts in UNITDIR, UDEVRULESDIR and LOGROTATEDIR.
P=$HMB_REPO/packaging
sed "s|@BINDIR@|$HMB_BIN|g" "$P/systemd/hmb-trace-daemon@.service" > /etc/systemd/system/hmb-trace-daemon@.service
mkdir -p /etc/udev/rules.d /etc/logrotate.d /var/lib/logrotate
cp "$P/udev/60-nvme-hmb-trace.rules" /etc/udev/rules.d/
cp "$P/logrotate/hmb-trace" /etc/logrotate.d/hmb-trace
udevadm control --reload
systemctl daemon-reload

if ! hmb_load test_rings=1 test_ring_kb=256 2> "$R/insmod.err"; then
	tap_fail "insmod nvme-hmb-trace.ko test_rings=1" "$(cat "$R/insmod.err")"
	tap_done
fi
udevadm settle -t 30
dev=$(hmb_ring test)
S=$HMB_CLASS/$dev
[ "$dev" = $I ] && tap_ok "the module's test ring is /dev/$I" ||
	{ tap_fail "the module's test ring is /dev/$I" "got '$dev'"; tap_done; }
echo 16 > "$S/producer/payload_min"
echo 64 > "$S/producer/payload_max"
st=$(systemctl show -p ActiveState --value "dev-$I.device")
[ "$st" = active ] && tap_ok "udev rule: dev-$I.device (the unit's BindsTo) is active" ||
	tap_fail "udev rule: dev-$I.device (the unit's BindsTo) is active" \
		"state '$st'; $(udevadm info "/dev/$I" 2>&1 | grep -E 'TAGS|SYSTEMD' | tr '\n' ' ')"

# The device cgroup the unit had (DeviceAllow=... r) refuses the daemon's
# read-write open: the unit with that line back, in a drop-in.
D=/etc/systemd/system/$U.d
mkdir -p $D
printf '[Service]\nDeviceAllow=\nDeviceAllow=/dev/%%i r\nRestart=no\n' > $D/ro.conf
systemctl daemon-reload
timeout 90 systemctl start "$U" > "$R/ro.out" 2>&1
i=0
while [ "$(prop ActiveState)" != failed ] && [ $i -lt 100 ]; do usleep 100000; i=$((i + 1)); done
journal 20 > "$R/ro.journal"
grep -q "cannot open /dev/$I: Operation not permitted" "$R/ro.journal" &&
	tap_ok "DeviceAllow=/dev/%i r (read only): the daemon's read-write open is refused (EPERM)" ||
	tap_fail "DeviceAllow=/dev/%i r refuses the daemon's read-write open" "$(prop ActiveState): $(cat "$R/ro.journal")"
rm -r $D
systemctl daemon-reload
systemctl reset-failed "$U"

if ! timeout 90 systemctl start "$U" 2> "$R/start.err"; then
	tap_fail "systemctl start $U" "$(cat "$R/start.err"; journal)"
	tap_done
fi
i=0
while [ "$(cat "$S/consumer")" = none ] && [ $i -lt 100 ]; do usleep 100000; i=$((i + 1)); done
pid=$(prop MainPID)
[ "$(cat "$S/consumer")" != none ] && [ "$(prop ActiveState)" = active ] &&
	tap_ok "systemctl start $U: active, pid $pid holds /dev/$I" ||
	tap_fail "systemctl start $U: the daemon holds /dev/$I" "$(prop ActiveState); $(journal)"
produce 3000 && tap_ok "3000 records drained by the service" ||
	tap_fail "3000 records drained by the service" "$(journal)"

# The hardening, seen from the running daemon.
ps=/proc/$pid/status
mi=/proc/$pid/mountinfo
bad=
[ "$(sed -n 's/^NoNewPrivs:[[:space:]]*//p' $ps)" = 1 ] || bad="$bad NoNewPrivs"
[ "$(sed -n 's/^CapBnd:[[:space:]]*//p' $ps)" = 0000000000000000 ] || bad="$bad CapabilityBoundingSet"
[ "$(sed -n 's/^Seccomp:[[:space:]]*//p' $ps)" = 2 ] || bad="$bad Seccomp(SystemCallArchitectures,MemoryDenyWriteExecute)"
awk '$5 == "/" && $6 !~ /^ro/ { e = 1 } END { exit e }' $mi || bad="$bad ProtectSystem(/ writable)"
awk -v d=$LOGS '$5 == d && $6 ~ /^rw/ { f = 1 } END { exit !f }' $mi || bad="$bad LogsDirectory(not writable)"
awk '$5 == "/tmp" { f = 1 } END { exit !f }' $mi && [ "$(stat -c %i /proc/$pid/root/tmp)" != "$(stat -c %i /tmp)" ] ||
	bad="$bad PrivateTmp"
[ "$(readlink /proc/$pid/ns/net)" != "$(readlink /proc/1/ns/net)" ] || bad="$bad PrivateNetwork"
[ "$(readlink /proc/$pid/ns/mnt)" != "$(readlink /proc/1/ns/mnt)" ] || bad="$bad mount-namespace"
cg=/sys/fs/cgroup$(sed -n 's/^0:://p' /proc/$pid/cgroup)
bpftool cgroup show "$cg" > "$R/cgroup-progs.txt" 2>&1
grep -q cgroup_device "$R/cgroup-progs.txt" || bad="$bad DevicePolicy(no device program on $cg)"
[ -z "$bad" ] && tap_ok "hardening in force in the daemon (pid $pid)" ||
	tap_fail "hardening in force in the daemon (pid $pid)" "missing:$bad"
systemd-analyze security --no-pager "$U" > "$R/security.txt" 2>&1
score=$(sed -n 's/.*Overall exposure level for .*: \([0-9.]*\) .*/\1/p' "$R/security.txt")
doc=$(sed -n 's/.*`systemd-analyze security` gives \([0-9.]*\) .*/\1/p' "$P/README.md" | head -1)
[ -n "$score" ] && [ "$score" = "$doc" ] &&
	tap_ok "systemd-analyze security: exposure $score, as packaging/README.md says" ||
	tap_fail "systemd-analyze security: exposure as packaging/README.md says" \
		"measured '$score', the README says '$doc': $(tail -3 "$R/security.txt")"

# Rotation by hand: rename, systemctl reload (SIGHUP), the daemon reopens.
mv $LOGS/$I.bin $LOGS/$I.bin.hand
mv $LOGS/$I.bin.meta $LOGS/$I.bin.hand.meta
timeout 30 systemctl reload "$U"
produce 2000
[ -s $LOGS/$I.bin ] && [ -s $LOGS/$I.bin.meta ] && [ "$(prop MainPID)" = "$pid" ] &&
	tap_ok "systemctl reload: the same daemon reopened $LOGS/$I.bin (new dump and sidecar)" ||
	tap_fail "systemctl reload reopens the dump" "$(ls -l $LOGS; journal)"

# logrotate with the shipped snippet, for real: rename, sidecar copied,
# SIGHUP through systemctl kill; the second run compresses the first.
lr() { logrotate -f -s /var/lib/logrotate/status /etc/logrotate.d/hmb-trace > "$R/logrotate$1.out" 2>&1; }
if lr 1; then
	produce 2000
	sleep 1.1     # dateext's -%s: the next rotation gets another name
	lr 2; rc=$?
	produce 1000
else
	rc=1
fi
rot=$(ls $LOGS | grep -c "^$I\.bin-[0-9]*-[0-9]*\(\.gz\)\{0,1\}$")
gz=$(ls $LOGS | grep -c "^$I\.bin-[0-9]*-[0-9]*\.gz$")
meta=$(ls $LOGS | grep -c "^$I\.bin-[0-9]*-[0-9]*\.meta$")
[ $rc = 0 ] && [ "$rot" = 2 ] && [ "$gz" = 1 ] && [ "$meta" = 2 ] && [ "$(prop MainPID)" = "$pid" ] &&
	tap_ok "logrotate -f twice: 2 rotated dumps (1 compressed), their sidecars, the daemon reopened" ||
	tap_fail "logrotate -f with the shipped snippet" \
		"rc $rc, rotated $rot, gz $gz, meta $meta: $(ls $LOGS | tr '\n' ' '); $(cat "$R"/logrotate*.out)"

# kill -9: systemd restarts the daemon (Restart=on-failure, RestartSec=1s);
# what the ring held is drained by the new one.
echo $CHUNK > "$S/producer/produce"; produced=$((produced + CHUNK))
kill -9 "$pid"
echo $CHUNK > "$S/producer/produce"; produced=$((produced + CHUNK))
i=0
while { [ "$(prop MainPID)" = "$pid" ] || [ "$(prop MainPID)" = 0 ] ||
	[ "$(prop ActiveState)" != active ]; } && [ $i -lt 150 ]; do usleep 100000; i=$((i + 1)); done
npid=$(prop MainPID)
nr=$(prop NRestarts)
[ "$npid" != "$pid" ] && [ "$npid" != 0 ] && [ "$nr" = 1 ] && hmb_wait_drained $I 60 &&
	tap_ok "kill -9: systemd restarted the daemon (pid $pid -> $npid, NRestarts $nr), the ring drained" ||
	tap_fail "kill -9: systemd restarts the daemon" "pid $pid -> '$npid', NRestarts '$nr': $(journal)"
produce 1000

timeout 60 systemctl stop "$U"
res=$(prop Result) code=$(prop ExecMainCode) status=$(prop ExecMainStatus)
[ "$res" = success ] && [ "$status" = 0 ] && [ "$(prop ActiveState)" = inactive ] &&
	tap_ok "systemctl stop: exit 0, inactive" ||
	tap_fail "systemctl stop exits cleanly" "Result $res, code $code, status $status: $(journal)"
[ -s /run/hmb-trace/$I.stats.json ] &&
	tap_ok "the exit summary stays in /run/hmb-trace/$I.stats.json after the stop" ||
	tap_fail "the exit summary stays in /run/hmb-trace/$I.stats.json after the stop" \
		"$(ls -la /run/hmb-trace 2>&1)"

# Every record produced is in the files, in order: the hand-rotated dump,
# the two logrotated ones (oldest first), the current one.
: > "$R/seqs"
for f in $LOGS/$I.bin.hand $(ls $LOGS/$I.bin-* | grep -v '\.meta$' | sort) $LOGS/$I.bin; do
	case $f in
	*.gz) zcat "$f" | "$HMB_BIN/hmb-trace-analyze" decode - --format jsonl ;;
	*) "$HMB_BIN/hmb-trace-analyze" decode "$f" --format jsonl ;;
	esac 2>> "$R/decode.err" | sed -n 's/^{"seq":\([0-9]*\),.*/\1/p' >> "$R/seqs"
done
uniq=$(sort -n -u "$R/seqs" | wc -l)
first=$(sort -n "$R/seqs" | head -1)
last=$(sort -n "$R/seqs" | tail -1)
dups=$(($(wc -l < "$R/seqs") - uniq))
dropped=$(cat "$S/producer/dropped")
[ "$uniq" = $produced ] && [ "$first" = 0 ] && [ "$last" = $((produced - 1)) ] && [ "$dropped" = 0 ] &&
	[ ! -s "$R/decode.err" ] &&
	tap_ok "$produced records produced, seqs 0..$last across the files, none missing, none dropped ($dups written twice)" ||
	tap_fail "every record in the files, seqs contiguous" \
		"produced $produced, distinct seqs $uniq ($first..$last), dropped $dropped: $(head -3 "$R/decode.err")"
rmmod nvme_hmb_trace && tap_ok "rmmod nvme_hmb_trace" || tap_fail "rmmod nvme_hmb_trace"
hmb_dmesg_check
tap_done
