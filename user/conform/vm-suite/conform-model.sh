#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# conform-model: hmb-trace-conform against the VM bench's HMB-capable NVMe
# controller model (scripts/vm/qemu), with Debian's own nvme driver:
#   - without --yes it prints what it would write where (the descriptor
#     list, the slice, the ring size), exits 2, and the driver's HMB is
#     untouched (Get Features 0Dh before and after);
#   - with --yes every rule holds on the model: TAP without a "not ok",
#     every rule exercised but the two ends of a lap, of which one at
#     least (whether a lap ends with a wrap marker or an implicit skip
#     depends on the record sizes at its end), the JSON verdict
#     "pass"; the model's account names the check each malformed list hit
#     (so that each list had the one defect it was meant to);
#   - the shutdown (the driver unbound from the PCI function, CC.SHN):
#     the model's account has the freeze for it, the tool bound the
#     driver again;
#   - afterwards the driver has its HMB again (the tool's reset and
#     rebind) and I/O works.
#   - a dictionary that wants a longer cmd_fetch payload than the model
#     writes: exit 1, dict-len the only rule failed, and the JSON verdict
#     names it with the first record's seq and cursor; with --no-shutdown
#     frozen-shutdown is not exercised and the driver stays bound; so
#     too with the namespace in use (swap on a partition), the tool
#     naming it.
# The broken variants of the model (one rule broken each) are the suite
# conform-broken's: this one is the model as it should be.
# vm-timeout: 600
# vm-nvme-hmb: hmpre=2048, hmmin=8, hmmaxd=32, hmb-bg-rate=20, hmb-clock-drift-ppm=200, hmb-clock-offset=5000000000
set -u
. "$HMB_REPO/scripts/vm/lib/tap.sh"
P=hmb-trace-conform
C=$HMB_NVME_CTRL
R=$HMB_RESULTS
ACCT=$HMB_NVME_ACCOUNT

[ -n "${HMB_NVME_HMB:-}" ] && [ -c "$C" ] || {
	tap_fail "the HMB controller and $C" "HMB_NVME_HMB='${HMB_NVME_HMB:-}'"
	tap_done
}
B0=$(stat -c %s "$ACCT")
# acct_has TEXT: the account since this suite began holds TEXT
acct_has() {
	vm-nvme-hmb clock "$C" 1 > /dev/null 2>&1	# flushes the account
	tail -c +$((B0 + 1)) "$ACCT" | grep -q "$1"
}

# --- the plan: nothing written without --yes --------------------------------------
vm-nvme-hmb get "$C" > "$R/get-before.json"
$P "$C" > "$R/plan.out" 2> "$R/plan.err"
rc=$?
vm-nvme-hmb get "$C" > "$R/get-after.json"
[ $rc = 2 ] && grep -q 'descriptor list of 4 entries' "$R/plan.out" &&
	grep -q 'ring_size 16384' "$R/plan.out" && grep -q 'add --yes' "$R/plan.err" &&
	grep -q "unbind\$" "$R/plan.out" &&
	tap_ok "without --yes: the plan, exit 2: $(grep -o 'descriptor list of [^:]*' "$R/plan.out")" ||
	tap_fail "without --yes: the plan and exit 2" "rc $rc: $(cat "$R/plan.out" "$R/plan.err")"
cmp -s "$R/get-before.json" "$R/get-after.json" && grep -q '"ehm":1' "$R/get-after.json" &&
	tap_ok "without --yes the driver's HMB is untouched: $(cat "$R/get-after.json")" ||
	tap_fail "the driver's HMB untouched" "$(cat "$R/get-before.json" "$R/get-after.json")"

# --- the run ------------------------------------------------------------------------
$P "$C" --yes --io-secs 5 --json "$R/verdict.json" > "$R/conform.tap" 2> "$R/conform.err"
rc=$?
nok=$(grep -c '^not ok' "$R/conform.tap")
[ $rc = 0 ] && [ "$nok" = 0 ] && grep -q '^1\.\.45$' "$R/conform.tap" &&
	tap_ok "every rule holds on the model (exit 0, 45 rules): $(tail -1 "$R/conform.tap" | sed 's/^# //')" ||
	tap_fail "every rule holds on the model" "rc $rc, $nok not ok: $(grep -A1 '^not ok' "$R/conform.tap"; cat "$R/conform.err")"
# a lap ends with a wrap marker or with an implicit skip, as the record
# sizes fall: of those rules (wrap-marker and its marker-fields,
# wrap-implicit) a run must have exercised one kind, all the others
skipped=$(grep '# SKIP' "$R/conform.tap" | sed 's/^ok [0-9]* - \([^ ]*\).*/\1/')
skips=$(printf '%s\n' "$skipped" | grep -vx -e '' -e wrap-implicit -e wrap-marker -e marker-fields | tr '\n' ' ')
laps=$(printf '%s\n' "$skipped" | grep -cx -e wrap-implicit -e wrap-marker)
[ -z "$skips" ] && [ "$laps" -lt 2 ] &&
	tap_ok "every rule exercised, of the two ends of a lap $((2 - laps)) (wrap markers: $(grep -c '^ok [0-9]* - wrap-marker .*checked' "$R/conform.tap") lines, implicit skips: $(grep -c '^ok [0-9]* - wrap-implicit .*checked' "$R/conform.tap") lines)" ||
	tap_fail "every rule exercised, and a lap's end of one kind" "not exercised: $skips; lap ends not exercised: $laps of 2"
grep -Eq '"verdict": ?"pass"' "$R/verdict.json" && grep -Eq '"failures": ?0' "$R/verdict.json" &&
	tap_ok "JSON verdict pass, 0 failures" ||
	tap_fail "JSON verdict pass" "$(head -30 "$R/verdict.json")"
for why in "HMDLEC is 0" "exceeds HMMAXD" "BSIZE is 0" "the sum of the descriptors" \
	"below HMMIN" "reading the descriptor list failed" \
	"not aligned to the memory page size" "HMDLLA bits 3:0" \
	"the buffer wraps" "is not all guest RAM" "already enabled"; do
	acct_has "$why" && tap_ok "the model refused a list because '$why'" ||
		tap_fail "the account has a refusal '$why'" "$(tail -3 "$ACCT")"
done
acct_has '"ev":"bad_tail"' &&
	tap_ok "the model counted the tool's unaligned tail as bad and did not use it" ||
	tap_fail "a bad_tail line in the account" "$(tail -3 "$ACCT")"
n=$(tail -c +$((B0 + 1)) "$ACCT" | grep -c '"ev":"adopt"')
[ "$n" -ge 3 ] && tap_ok "the model adopted the tool's ring $n times (first, after the re-initialisation, after the reset)" ||
	tap_fail "three adoptions in the account" "$n"
acct_has '"ev":"freeze","why":"shutdown"' && grep -q '^# shutdown: .* live, ' "$R/conform.tap" &&
	tap_ok "the shutdown: the model froze the ring for it, $(sed -n 's/^# shutdown: //p' "$R/conform.tap")" ||
	tap_fail "a freeze for the shutdown in the account, the driver bound again" "$(grep -i shutdown "$R/conform.tap" "$R/conform.err"; grep '"ev":"freeze"' "$ACCT" | tail -3)"

# --- a failure as a firmware engineer gets it --------------------------------------
sed 's/^event 0x0100 cmd_fetch phase=fetch$/& len=64/' "$HMB_REPO/share/hmb-events.dict" > "$R/long.dict"
b1=$(stat -c %s "$ACCT")
$P "$C" --yes --io-secs 1 --no-shutdown --dict "$R/long.dict" --json "$R/fail.json" > "$R/fail.tap" 2> "$R/fail.err"
rc=$?
vm-nvme-hmb clock "$C" 1 > /dev/null 2>&1
grep -q '^ok [0-9]* - frozen-shutdown .*# SKIP' "$R/fail.tap" &&
	grep -q '^# frozen-shutdown not checked: --no-shutdown' "$R/fail.tap" &&
	! tail -c +$((b1 + 1)) "$ACCT" | grep -q '"why":"shutdown"' &&
	tap_ok "--no-shutdown: frozen-shutdown not exercised, no shutdown in the account" ||
	tap_fail "--no-shutdown leaves the driver bound" "$(grep -i shutdown "$R/fail.tap")"
bad=$(grep '^not ok' "$R/fail.tap" | sed 's/^not ok [0-9]* - \([^ ]*\).*/\1/' | tr '\n' ' ')
[ $rc = 1 ] && [ "$bad" = "dict-len " ] &&
	grep -A1 '^not ok.* dict-len ' "$R/fail.tap" | grep -q 'cmd_fetch (0x0100): payload_len [0-9]*, the dictionary needs 64' &&
	tap_ok "a payload shorter than the dictionary's: exit 1, dict-len alone: $(grep -A1 '^not ok' "$R/fail.tap" | tail -1 | sed 's/^# *//')" ||
	tap_fail "dict-len caught alone, exit 1" "rc $rc, failed: $bad $(cat "$R/fail.err")"
tr -d ' \n' < "$R/fail.json" > "$R/fail.flat"
grep -q '"verdict":"fail"' "$R/fail.flat" &&
	grep -Eq '"rule":"dict-len","section":"events.md"[^}]*"result":"fail"[^}]*"first_failure":\{"seq":[0-9]+,"cursor":[0-9]+,"ring_offset":[0-9]+,"message":"cmd_fetch' "$R/fail.flat" &&
	tap_ok "the JSON verdict: fail, dict-len with the record's seq, cursor and ring offset" ||
	tap_fail "the JSON verdict names dict-len and the record" "$(grep -A12 'dict-len' "$R/fail.json")"

# --- a namespace in use: the driver stays bound -----------------------------------
# swap on a partition of it past the blocks the tool reads and writes
# back (the first 2048): the namespace is then held (an exclusive open of
# it is refused) while writes to its other blocks still go through
b2=$(stat -c %s "$ACCT")
P1=${HMB_NVME_DEV}p1
if printf 'o\nn\np\n1\n4096\n+64M\nw\n' | fdisk "$HMB_NVME_DEV" > "$R/fdisk.out" 2>&1 &&
	for i in 1 2 3 4 5 6 7 8 9 10; do [ -b "$P1" ] && break; sleep 1; done &&
	mkswap "$P1" > "$R/mkswap.out" 2>&1 && swapon "$P1" 2>> "$R/mkswap.out"; then
	$P "$C" --yes --io-secs 1 --json "$R/busy.json" > "$R/busy.tap" 2> "$R/busy.err"
	rc=$?
	swapoff "$P1"
	vm-nvme-hmb clock "$C" 1 > /dev/null 2>&1
	[ $rc = 0 ] && grep -q '^ok [0-9]* - frozen-shutdown .*# SKIP' "$R/busy.tap" &&
		grep -q "^# frozen-shutdown not checked: $HMB_NVME_DEV is in use" "$R/busy.tap" &&
		! tail -c +$((b2 + 1)) "$ACCT" | grep -q '"why":"shutdown"' &&
		tap_ok "the namespace in use (swap on $P1): exit 0, frozen-shutdown not exercised, no shutdown: $(sed -n 's/^# frozen-shutdown not checked: //p' "$R/busy.tap")" ||
		tap_fail "the namespace in use keeps the driver bound" "rc $rc: $(grep -i -e shutdown -e '^not ok' -A1 "$R/busy.tap"; cat "$R/busy.err")"
else
	tap_fail "swap on a partition of $HMB_NVME_DEV" "$(cat "$R/fdisk.out" "$R/mkswap.out" 2>/dev/null | tail -5)"
fi

# --- afterwards -----------------------------------------------------------------------
vm-nvme-hmb get "$C" > "$R/get-end.json"
grep -q '"ehm":1' "$R/get-end.json" &&
	tap_ok "the driver has its HMB again: $(cat "$R/get-end.json")" ||
	tap_fail "the driver's HMB enabled after the run" "$(cat "$R/get-end.json")"
dd if=/dev/urandom of="$R/blk" bs=4096 count=64 2>/dev/null
dd if="$R/blk" of="$HMB_NVME_DEV" bs=4096 seek=4096 oflag=direct conv=fsync 2>/dev/null &&
	dd if="$HMB_NVME_DEV" of="$R/blk2" bs=4096 skip=4096 count=64 iflag=direct 2>/dev/null &&
	cmp -s "$R/blk" "$R/blk2" && tap_ok "I/O after the run: 256 KiB written and read back" ||
	tap_fail "I/O after the run"
tap_done
