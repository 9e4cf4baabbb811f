#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# nvme-pel: the controller model's Persistent Event Log (log page 0Dh,
# scripts/vm/qemu/patches/0006-*) read from the guest with
# `hmb-trace-analyze pel --device` (establish, read, release) and with
# Debian's nvme-cli:
#   - Identify Controller says the log is supported (LPA bit 4, PELS);
#   - a controller reset (sysfs reset_controller: a power-on/reset event,
#     then Linux's own Set Features Timestamp as it initialises the
#     controller), a Set Features Timestamp of the suite's and the thermal
#     windows of a trace ring (hmb-bg-rate) are each one new event of its
#     type, and nothing else is: the count of thermal excursions equal to
#     the controller's account of its windows, their spacing equal to the
#     account's (the controller's clock), TNEV equal to the events decoded;
#   - the events on the host's clock: the suite's timestamp change at the
#     time it set, within the bound the tool states plus the two clocks'
#     drift since (1 ms a second allowed); the thermal excursions after
#     it and before the read, on the wall clock and on CLOCK_MONOTONIC
#     (against /proc/uptime, 10 ms, around them); the log saved with
#     --save and its FILE.clock decoded later place them the same;
#   - nvme-cli reads the same events (its raw bytes equal pel's but for
#     the header's timestamp, up to the last whole dword: nvme-cli 2.3
#     asks for TLL / 4 dwords, rounded down; its TNEV equal); once the
#     context is released, a read is a Command Sequence Error;
#   - a full log: 1700 timestamp changes more (40 bytes each) leave the
#     last 1625 (TLL 65512 of PELS' 64 KiB), the oldest dropped and
#     counted in the Generation Number.
# vm-timeout: 300
# vm-nvme-hmb: hmpre=2048, hmmin=8, hmmaxd=32, hmb-bg-rate=20, hmb-clock-drift-ppm=200, hmb-clock-offset=5000000000
# (the same properties as nvme-hmb-model and nvme-hmb-e2e: one boot can hold all three)
set -u
. "$HMB_REPO/scripts/vm/lib/tap.sh"
T=vm-nvme-hmb
C=$HMB_NVME_CTRL
R=$HMB_RESULTS
ACCT=$HMB_NVME_ACCOUNT
EV_THERMAL_START=528	# 0x0210, the trace engine's thermal window start

[ -n "${HMB_NVME_HMB:-}" ] && [ -c "$C" ] || {
	tap_fail "the HMB controller and $C" "HMB_NVME_HMB='${HMB_NVME_HMB:-}'"
	tap_done
}
B0=$(stat -c %s "$ACCT")
# hget KEY FILE: KEY's number in the header line (the first) of pel -j's FILE
hget() { head -1 "$2" | sed -n "s/.*\"$1\":\([-0-9a-z]*\).*/\1/p"; }
# events FILE FROM: "index type origin timestamp_ms host_time_ms" of each
# event at index FROM or later; fields of its type after them
events() {
	awk -v from="$2" '
	function num(k,   m) {
		if (!match($0, "\"" k "\":[-0-9a-z]+")) return "-"
		m = substr($0, RSTART, RLENGTH); sub(/.*:/, "", m); return m
	}
	/"kind":"event"/ && num("index") + 0 >= from {
		print num("index"), num("type"), num("timestamp_origin"), num("timestamp_ms"),
		      num("host_time_ms"), num("ctrl_id"), num("ctrl_timestamp_origin"),
		      num("prev_timestamp_origin"), num("ms_since_reset"), num("over_temp"),
		      num("threshold")
	}' "$1"
}
pel() {	# pel NAME: the log through hmb-trace-analyze, JSON and raw
	hmb-trace-analyze pel --device "$C" -j --save "$R/$1.bin" > "$R/$1.jsonl" 2> "$R/$1.err"
}

# --- Identify ----------------------------------------------------------------
nvme id-ctrl "$C" -o json > "$R/id-ctrl.json" 2> "$R/id-ctrl.err"
lpa=$(sed -n 's/.*"lpa" *: *\([0-9]*\).*/\1/p' "$R/id-ctrl.json")
pels=$(sed -n 's/.*"pels" *: *\([0-9]*\).*/\1/p' "$R/id-ctrl.json")
[ -n "$lpa" ] && [ $((lpa & 16)) = 16 ] && [ "${pels:-0}" -ge 1 ] &&
	tap_ok "Identify Controller: LPA $lpa (bit 4: Persistent Event Log), PELS $pels (64 KiB units)" ||
	tap_fail "LPA bit 4 and PELS >= 1" "lpa='$lpa' pels='$pels' $(cat "$R/id-ctrl.err")"

# --- the log before ---------------------------------------------------------
pel before
n0=$(hget tnev "$R/before.jsonl")
l0=$(grep -c '"kind":"event"' "$R/before.jsonl")
[ -n "$n0" ] && [ "$n0" -ge 1 ] && [ "$n0" = "$l0" ] &&
	[ "$(events "$R/before.jsonl" 0 | awk '$2 == 4' | wc -l)" -ge 1 ] &&
	tap_ok "before: TNEV $n0, as many events decoded, at least the power-on's" ||
	tap_fail "the log before: TNEV >= 1, a power-on/reset event" "$(cat "$R/before.err"; head -3 "$R/before.jsonl")"

# --- a controller reset, a timestamp change, thermal windows -----------------
echo 1 > "/sys/class/nvme/${C#/dev/}/reset_controller"
i=0
while [ "$(cat "/sys/class/nvme/${C#/dev/}/state")" != live ] && [ $i -lt 100 ]; do
	usleep 100000; i=$((i + 1))
done
# uptime_ms: CLOCK_BOOTTIME in ms (10 ms steps), CLOCK_MONOTONIC in a
# guest that never suspends
uptime_ms() { awk '{ split($1, a, "."); print a[1] * 1000 + a[2] * 10 }' /proc/uptime; }
up_set=$(uptime_ms)
$T timestamp "$C" > "$R/timestamp.json"
ts_set=$(sed -n 's/.*"ms":\([0-9]*\).*/\1/p' "$R/timestamp.json")
grep -q '"status":0,' "$R/timestamp.json" &&
	tap_ok "controller reset, then Set Features Timestamp $ts_set ms" ||
	tap_fail "Set Features Timestamp" "$(cat "$R/timestamp.json")"
$T ring "$C" --ring-size 65536 --seconds 4 --dump "$R/ring.bin" > "$R/ring.json" 2> "$R/ring.err" ||
	tap_diag "ring: $(cat "$R/ring.err")"
pel after
up_read=$(uptime_ms)
t_read=$(( ($(date +%s) + 1) * 1000 ))
$T clock "$C" 1 > /dev/null	# (flushes the account)
tail -c +$((B0 + 1)) "$ACCT" | grep "\"ev\":\"bg\",.*\"op\":$EV_THERMAL_START," > "$R/acct-thermal.jsonl"
nth=$(wc -l < "$R/acct-thermal.jsonl")

# --- the log after ----------------------------------------------------------
n1=$(hget tnev "$R/after.jsonl")
l1=$(grep -c '"kind":"event"' "$R/after.jsonl")
events "$R/after.jsonl" "$n0" > "$R/new.txt"
tap_diag "new events (index type origin ts host_ts ...): $(head -5 "$R/new.txt" | tr '\n' ';')"
[ "${n1:-0}" = "$l1" ] && [ "$n1" = $((n0 + 3 + nth)) ] && [ "$nth" -ge 1 ] &&
	tap_ok "after: TNEV $n1 = $n0 + reset + 2 timestamp changes + $nth thermal windows (the account's), as many decoded" ||
	tap_fail "TNEV = $n0 + 3 + $nth thermal windows, all decoded" "tnev=$n1 decoded=$l1 $(cat "$R/after.err")"
set -- $(sed -n 1p "$R/new.txt") - - - - - - - - - - -	# (padded: set -u)
[ "${2:-}" = 4 ] && [ "$3" = 0 ] && [ "$6" = "$(cat "/sys/class/nvme/${C#/dev/}/cntlid")" ] &&
	tap_ok "event $1: power-on/reset, controller $6, timestamp origin 0 ($4 ms since the reset)" ||
	tap_fail "the reset: a power-on/reset event, origin 0, this controller" "$(sed -n 1p "$R/new.txt")"
set -- $(sed -n 2p "$R/new.txt") - - - - - - - - - - -	# (padded: set -u)
[ "${2:-}" = 3 ] && [ "$3" = 1 ] && [ "$8" = 0 ] && [ "$9" -lt 10000 ] &&
	tap_ok "event $1: Linux set the Timestamp $9 ms after the reset (nvme_configure_timestamp)" ||
	tap_fail "Linux's timestamp change after the reset: type 3, from origin 0" "$(sed -n 2p "$R/new.txt")"
set -- $(sed -n 3p "$R/new.txt") - - - - - - - - - - -	# (padded: set -u)
hc_first=$(head -1 "$R/after.jsonl" | sed -n 's/.*"first_event":\([0-9]*\).*/\1/p')
bound=$(head -1 "$R/after.jsonl" | sed -n 's/.*"bound_ms":\([0-9]*\).*/\1/p')
[ "${2:-}" = 3 ] && [ "$3" = 1 ] && [ "$8" = 1 ] && [ "$9" -ge 0 ] &&
	[ $(( $4 - ts_set )) -ge 0 ] && [ $(( $4 - ts_set )) -le 1 ] &&
	tap_ok "event $1: timestamp change to $4 (set $ts_set), from Linux's (origin 1), $9 ms after the reset" ||
	tap_fail "the timestamp change: type 3, origin 1, the value set" "$(sed -n 3p "$R/new.txt") set=$ts_set"
case ${5:-x}${ts_set:-x} in *[!0-9]*) d=999999 ;; *) d=$(( $5 - ts_set )) ;; esac
drift=$(( (t_read - ts_set) / 1000 ))
[ "$hc_first" = "$1" ] && [ -n "$bound" ] && [ ${d#-} -le $((bound + 1 + drift)) ] &&
	tap_ok "on the host's clock: the present clock starts at event $1, whose host time is the time set $d ms off (bound $bound ms + $drift ms drift allowed)" ||
	tap_fail "host time of the timestamp change within the bound" "first_event=$hc_first bound=$bound drift=$drift host_time=$5 set=$ts_set"
sed -n '4,$p' "$R/new.txt" > "$R/new-thermal.txt"
bad=$(awk -v lo="$ts_set" -v hi="$t_read" '
	$2 != 13 || $3 != 1 || $11 != 65 || $10 < 5 || $10 > 14 || $5 < lo || $5 > hi || $4 < prev { print; next }
	{ prev = $4 }' "$R/new-thermal.txt")
[ -z "$bad" ] && [ "$(wc -l < "$R/new-thermal.txt")" = "$nth" ] &&
	tap_ok "$nth thermal excursions: threshold 65, 5-14 degrees over, in order, host times between the timestamp change and the read" ||
	tap_fail "thermal excursions: type 13, threshold 65, host times in [$ts_set, $t_read]" "$bad"
# The same on host CLOCK_MONOTONIC (the clock of dumps and correlate):
# between the suite's timestamp change and the read, each within its bound
# and /proc/uptime's 10 ms.
mono=$(awk -v from="$n0" -v lo="$up_set" -v hi="$up_read" '
	function num(k,   m) {
		if (!match($0, "\"" k "\":[-0-9a-z]+")) return "-"
		m = substr($0, RSTART, RLENGTH); sub(/.*:/, "", m); return m
	}
	/"kind":"event"/ && num("index") + 0 >= from && num("type") == 13 {
		n++; t = num("host_monotonic_ns") / 1e6; b = num("host_bound_ns") / 1e6
		if ($0 !~ /"host_place":"placed"/) bad++
		if (t + b < lo - 10 || t - b > hi + 10) bad++
	}
	END { print n + 0, bad + 0 }' "$R/after.jsonl")
hmb-trace-analyze pel "$R/after.bin" -j > "$R/after-saved.jsonl" 2> "$R/after-saved.err"
[ "${mono% *}" = "$nth" ] && [ "${mono#* }" = 0 ] && [ -s "$R/after.bin.clock" ] &&
	cmp -s "$R/after.jsonl" "$R/after-saved.jsonl" &&
	tap_ok "$nth thermal excursions on host CLOCK_MONOTONIC between the timestamp change ($up_set ms) and the read ($up_read ms); the saved log with its FILE.clock placed the same" ||
	tap_fail "thermal excursions on CLOCK_MONOTONIC in [$up_set, $up_read] ms; saved log = device read" \
		"events/outside: $mono of $nth; $(cat "$R/after-saved.err"); $(ls -l "$R/after.bin.clock" 2>&1)"
# Their spacing on the controller's clock against the account's virtual
# clock, both from the first: equal to the millisecond (truncation on each).
sed 's/.*"virt_ns":\([0-9]*\).*/\1/' "$R/acct-thermal.jsonl" > "$R/acct-virt.txt"
far=$(paste -d' ' "$R/new-thermal.txt" "$R/acct-virt.txt" | awk '
	NR == 1 { t0 = $4; v0 = $12 }
	{ d = ($4 - t0) - int(($12 - v0) / 1000000); if (d < -1 || d > 1) print NR, $4 - t0, ($12 - v0) / 1e6 }')
[ -z "$far" ] && [ "$nth" -ge 1 ] && [ "$(wc -l < "$R/new-thermal.txt")" = "$nth" ] &&
	tap_ok "the thermal excursions' spacing is the account's windows' to the millisecond ($nth windows)" ||
	tap_fail "thermal timestamps on the controller's clock" "$far"

# --- nvme-cli on the same log --------------------------------------------------
if command -v nvme > /dev/null; then
	nvme persistent-event-log "$C" --action=1 > /dev/null 2> "$R/nvme-1.err"
	nvme persistent-event-log "$C" --action=0 --raw-binary > "$R/nvme.bin" 2> "$R/nvme-0.err"
	nvme persistent-event-log "$C" --action=2 > /dev/null 2> "$R/nvme-2.err"
	nvme persistent-event-log "$C" --action=1 > /dev/null 2> "$R/nvme-j.err"
	nvme persistent-event-log "$C" --action=0 -o json > "$R/nvme.json" 2>> "$R/nvme-j.err"
	nvme persistent-event-log "$C" --action=2 > /dev/null 2>> "$R/nvme-j.err"
	ntn=$(sed -n 's/.*"total_num_of_events" *: *\([0-9]*\).*/\1/p' "$R/nvme.json")
	tll=$(hget tll "$R/after.jsonl")
	whole=$(( ${tll:-0} / 4 * 4 ))
	head -c 20 "$R/nvme.bin" > "$R/nvme-h.bin"; head -c 20 "$R/after.bin" > "$R/after-h.bin"
	head -c $whole "$R/nvme.bin" | tail -c +29 > "$R/nvme-t.bin"
	head -c $whole "$R/after.bin" | tail -c +29 > "$R/after-t.bin"
	[ "$whole" -gt 512 ] && cmp -s "$R/nvme-h.bin" "$R/after-h.bin" &&
		cmp -s "$R/nvme-t.bin" "$R/after-t.bin" &&
		[ "$ntn" = "$n1" ] &&
		tap_ok "nvme-cli: the same first $whole bytes but the header's timestamp, TNEV $ntn" ||
		tap_fail "nvme-cli reads the same log" "tnev '$ntn' vs $n1; $(cat "$R/nvme-0.err" "$R/nvme-j.err" | head -5); sizes $(stat -c %s "$R/nvme.bin" "$R/after.bin" | tr '\n' ' ')"
	# the context released: reading without one is a Command Sequence Error
	if nvme persistent-event-log "$C" --action=0 --raw-binary > /dev/null 2> "$R/nvme-noctx.err"; then
		tap_fail "a read without a context refused" "nvme-cli read it: $(cat "$R/nvme-noctx.err")"
	else
		grep -qi 'sequence' "$R/nvme-noctx.err" &&
			tap_ok "a read without a context (released): $(head -1 "$R/nvme-noctx.err")" ||
			tap_fail "a read without a context: Command Sequence Error" "$(cat "$R/nvme-noctx.err")"
	fi
elif [ "${CI:-}" = true ]; then
	tap_fail "nvme-cli in the guest" "no nvme in PATH"
else
	tap_skip "nvme-cli's reading" "no nvme in the guest"
fi

# --- a full log ---------------------------------------------------------------
MS=1000000000000
$T timestamp "$C" $MS 1700 > "$R/fill.json"
pel full
nf=$(hget tnev "$R/full.jsonl"); tf=$(hget tll "$R/full.jsonl"); gf=$(hget gen_number "$R/full.jsonl")
set -- $(events "$R/full.jsonl" 0 | sed -n 1p) - - - - - - - - - - -	# (padded: set -u)
first_type=$2 first_ts=$4
set -- $(events "$R/full.jsonl" 0 | sed -n '$p') - - - - - - - - - - -
case $first_ts$4 in *[!0-9]*) first_ts=0 last_ts=0 ;; *) last_ts=$4 ;; esac
grep -q '"status":0,.*"done":1700' "$R/fill.json" && [ "$nf" = 1625 ] && [ "$tf" = 65512 ] &&
	[ "$(grep -c '"kind":"event"' "$R/full.jsonl")" = 1625 ] &&
	[ "$gf" = $(( n1 + 1700 - 1625 )) ] && [ "$first_type" = 3 ] &&
	[ $(( first_ts - MS - 75 )) -ge 0 ] && [ $(( first_ts - MS - 75 )) -le 1 ] &&
	[ $(( last_ts - MS - 1699 )) -ge 0 ] && [ $(( last_ts - MS - 1699 )) -le 1 ] &&
	tap_ok "full: TNEV $nf, TLL $tf, Generation Number $gf (the events dropped), the oldest left the 76th change" ||
	tap_fail "full: TNEV 1625, TLL 65512, Generation Number $(( n1 + 75 )), the 76th to the 1700th change" \
		"$(cat "$R/fill.json" "$R/full.err"; head -1 "$R/full.jsonl") first $first_type $first_ts last $last_ts"

bad=$(dmesg | grep -E 'WARNING:|BUG:|Oops')
[ -z "$bad" ] && tap_ok "dmesg free of WARNING:, BUG: and Oops" || tap_fail "dmesg clean" "$bad"
tap_done
