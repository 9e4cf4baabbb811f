# SPDX-License-Identifier: Apache-2.0
# Sourced by the scripts/bench-*.sh that run a VM suite once (bench-hmb.sh;
# bench-agent-vm.sh runs its suite in rounds itself), after bench-doc.sh
# and with $top set.
#
# bench_vm NAME SUITE ENVVAR SUITEFILE: build the tree, the module and the
# patched nvme driver, run the VM suite SUITE with ENVVAR=$secs; sets res
# (the suite's bench.txt; exits with "NAME: no FILE" when the suite left
# none) and props (the suite's "# vm-nvme-hmb:" properties, from SUITEFILE
# under $top).
bench_vm() {
	local name=$1 suite=$2 envvar=$3 suitefile=$4
	make -s -C "$top" all >&2
	make -s -C "$top/kernel" module nvme-patched >&2
	"$top/scripts/vm/vm-run" --env "$envvar=$secs" "$suite" >&2
	res=$top/build/vm/runs/$suite/results/$suite/bench.txt
	[ -f "$res" ] || { echo "$name: no $res" >&2; exit 1; }
	props=$(sed -n 's/^# vm-nvme-hmb: //p' "$top/$suitefile")
}
# get KEY: the value of KEY= in the suite's bench.txt
get() { sed -n "s/^$1=//p" "$res"; }
