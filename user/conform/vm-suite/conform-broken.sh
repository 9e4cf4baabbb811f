#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# conform-broken: hmb-trace-conform against the controller model made to
# break one producer rule at a time (the model's hmb-break, switched at
# run time with the vendor Set Features C1h, so one boot goes through
# them all; scripts/vm/README.md):
#   - the model as it should be with a 4096-byte ring, where the 216
#     bytes of each command's five records leave 32 bytes or more at
#     nearly every lap end: exit 0, no "not ok", wrap markers checked
#     (the ring size the no-wrap-marker variant is run with);
#   - for each variant: Get Features C1h says it is in force; the tool
#     exits 1; the rules it fails are exactly the one broken, none
#     other (TAP and the JSON verdict: that rule "fail" with its first
#     failure, every other rule "pass" or "not-exercised"); and the
#     model's account says it broke that rule (so the catch is of what
#     the variant did, not of something else);
#   - Set Features C1h refuses an unknown variant, back to none, and I/O
#     works afterwards.
# Which rules a variant's run reaches: a consumer error (a missing wrap
# marker) ends the stream, so the phases after it (overflow, the bad
# tail, the re-initialisation) are not reached, nor are they after a bad
# tail the controller used (the records it wrote over would blame other
# rules), nor the shutdown (the driver unbound and bound again) after
# either or after a reset that did not freeze the ring (no-frozen-reset);
# every other variant runs them all.  The variant stays across the
# shutdown, so each run's Get Features C1h still says it.
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
# brk: the variant in force (Get Features C1h, dword 0)
brk() {
	v=$(nvme get-feature "$C" -f 0xc1 < /dev/null 2>&1 | sed -n 's/.*value: *\(0x\)\{0,1\}\([0-9a-fA-F]*\).*/\2/p')
	[ -n "$v" ] && echo $((0x$v))
}
# acct_since BYTES: the account after its first BYTES bytes, flushed
acct_since() {
	vm-nvme-hmb clock "$C" 1 > /dev/null 2>&1	# Get Features C0h flushes it
	tail -c +$(($1 + 1)) "$ACCT"
}
# failed TAP: the ids of the rules that failed, space-separated
failed() {
	grep '^not ok' "$1" | sed 's/^not ok [0-9]* - \([^ ]*\).*/\1/' | tr '\n' ' '
}

# --- the control: the model as it should be, a ring where markers are due --------
[ "$(brk)" = 0 ] && tap_ok "Get Features C1h: 0, no rule broken at power-on" ||
	tap_fail "Get Features C1h 0 at power-on" "$(nvme get-feature "$C" -f 0xc1 2>&1)"
$P "$C" --yes --io-secs 1 --ring-size 4096 --json "$R/none.json" > "$R/none.tap" 2> "$R/none.err"
rc=$?
marks=$(grep '^ok [0-9]* - wrap-marker ' "$R/none.tap" | sed -n 's/.*(\([0-9]*\) checked)$/\1/p')
[ $rc = 0 ] && [ -z "$(failed "$R/none.tap")" ] && [ "${marks:-0}" -gt 0 ] &&
	tap_ok "none, ring 4096: exit 0, every rule holds, wrap-marker checked $marks times: $(tail -1 "$R/none.tap" | sed 's/^# //')" ||
	tap_fail "none, ring 4096: exit 0 and wrap markers checked" "rc $rc, failed: $(failed "$R/none.tap"), wrap-marker checked: ${marks:-none} $(cat "$R/none.err")"

# --- one variant at a time ----------------------------------------------------------
# NUMBER NAME RULE RING_SIZE
while read -r num name rule ring; do
	b0=$(stat -c %s "$ACCT")
	nvme set-feature "$C" -f 0xc1 -v "$num" < /dev/null > "$R/$name.set" 2>&1
	[ "$(brk)" = "$num" ] || {
		tap_fail "$name: Set Features C1h $num in force" "$(cat "$R/$name.set")"
		continue
	}
	$P "$C" --yes --io-secs 1 --ring-size "$ring" --json "$R/$name.json" < /dev/null > "$R/$name.tap" 2> "$R/$name.err"
	rc=$?
	bad=$(failed "$R/$name.tap")
	skip=$(grep '# SKIP' "$R/$name.tap" | sed 's/^ok [0-9]* - \([^ ]*\).*/\1/' | tr '\n' ' ' | sed 's/ $//')
	why=$(grep -A1 "^not ok [0-9]* - $rule " "$R/$name.tap" | tail -1 | sed 's/^# *//')
	[ $rc = 1 ] && [ "$bad" = "$rule " ] &&
		tap_ok "$name: exit 1, $rule the only rule failed (not reached: ${skip:-none}): $why" ||
		tap_fail "$name: exit 1 and $rule alone" "rc $rc, failed: '$bad' $(cat "$R/$name.err")"
	tr -d ' \n' < "$R/$name.json" > "$R/$name.flat"
	nfail=$(grep -o '"result":"fail"' "$R/$name.flat" | wc -l)
	grep -q '"verdict":"fail"' "$R/$name.flat" && [ "$nfail" = 1 ] &&
		grep -Eq "\"rule\":\"$rule\",\"section\":\"[^\"]*\",\"text\":\"[^\"]*\",\"result\":\"fail\",[^}]*\"first_failure\":\{" "$R/$name.flat" &&
		tap_ok "$name: the JSON verdict fails, $rule the one rule with result fail and its first failure" ||
		tap_fail "$name: the JSON verdict names $rule alone" "$nfail rules fail: $(grep -B2 -A12 "\"$rule\"" "$R/$name.json")"
	acct_since "$b0" > "$R/$name.acct"
	n=$(grep -c "\"ev\":\"break\",\"what\":\"$name\"" "$R/$name.acct")
	[ "$n" -gt 0 ] &&
		tap_ok "$name: the model's account says it broke the rule: $(grep "\"ev\":\"break\",\"what\":\"$name\"" "$R/$name.acct" | head -1)" ||
		tap_fail "$name: a break line in the model's account" "$(grep '"ev":"break' "$R/$name.acct" | head -3)"
done <<'EOF'
1 no-wrap-marker wrap-marker 4096
2 no-overflowed overflow-flag 16384
3 no-frozen-reset frozen-reset 16384
4 seq-gap seq-next 16384
5 short-payload dict-len 16384
6 use-bad-tail bad-tail 16384
7 no-frozen-shutdown frozen-shutdown 16384
EOF

# --- afterwards ----------------------------------------------------------------------
nvme set-feature "$C" -f 0xc1 -v 8 > "$R/set8.out" 2>&1 && rc=0 || rc=$?
[ $rc != 0 ] && [ "$(brk)" = 7 ] &&
	tap_ok "Set Features C1h 8 (no such variant) refused, the variant unchanged" ||
	tap_fail "Set Features C1h 8 refused" "rc $rc: $(cat "$R/set8.out"), now $(brk)"
nvme set-feature "$C" -f 0xc1 -v 0 > /dev/null 2>&1
[ "$(brk)" = 0 ] && tap_ok "back to 0: the model as it should be" ||
	tap_fail "Get Features C1h 0 after Set Features C1h 0" "$(brk)"
dd if=/dev/urandom of="$R/blk" bs=4096 count=64 2>/dev/null
dd if="$R/blk" of="$HMB_NVME_DEV" bs=4096 seek=4096 oflag=direct conv=fsync 2>/dev/null &&
	dd if="$HMB_NVME_DEV" of="$R/blk2" bs=4096 skip=4096 count=64 iflag=direct 2>/dev/null &&
	cmp -s "$R/blk" "$R/blk2" && tap_ok "I/O after the variants: 256 KiB written and read back" ||
	tap_fail "I/O after the variants"
tap_done
