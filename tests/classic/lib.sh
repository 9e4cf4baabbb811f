# SPDX-License-Identifier: Apache-2.0
# Shared helpers for the classic-path tests: TAP (scripts/lib/tap.sh), a
# scratch directory under /dev/shm that is removed at exit, and
# starting/stopping the daemon.
# Every process a test starts is killed at exit, whatever happened.
set -u
TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BIN=${HMB_BIN:-$TOP/build/bin}
TBIN=${HMB_TBIN:-$(dirname "$BIN")/tests/bin}
FWSIM=$BIN/hmb-fwsim
DAEMON=$BIN/hmb-trace-daemon
ANALYZE=$BIN/hmb-trace-analyze
DEDUP=$TBIN/hmb-dump-dedup
# 10 M records by default; CI runs the full size, developers may shrink it.
RECORDS=${HMB_TEST_RECORDS:-10000000}
# Mixed small sizes: ~120 bytes per record on average.
MIX=${HMB_TEST_MIX:-mix:0x10,8x20,24x30,64x25,200x10,800x5}

base=/dev/shm
[ -d "$base" ] && [ -w "$base" ] || base=${TMPDIR:-/tmp}
WORK=$(mktemp -d "$base/hmb-test.XXXXXX")
PIDS=()
. "$TOP/scripts/lib/tap.sh"

cleanup() {
	local p
	for p in "${PIDS[@]}"; do
		kill -KILL "$p" 2>/dev/null
	done
	wait 2>/dev/null
	[ -n "${CLEANUP_HOOK:-}" ] && eval "$CLEANUP_HOOK"
	rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# json FILE KEY: print a top-level value of a one-object JSON file.
json() {
	python3 -c 'import json,sys
v=json.load(open(sys.argv[1]))
for k in sys.argv[2].split("."):
    v=v[k] if not isinstance(v,list) else v[int(k)]
print(json.dumps(v) if isinstance(v,(dict,list)) else ("true" if v is True else "false" if v is False else v))' "$1" "$2"
}

# start_daemon NAME ARGS...: run the daemon in the background, stderr to
# $WORK/NAME.err; sets DPID.
start_daemon() {
	local name=$1
	shift
	"$DAEMON" "$@" 2>>"$WORK/$name.err" &
	DPID=$!
	PIDS+=("$DPID")
}

# wait_exit PID SECS: wait for PID (a child of this shell) to exit within
# SECS; sets RC to its status, or to "timeout" (and kills it).
wait_exit() {
	local pid=$1 secs=$2 i=0
	while kill -0 "$pid" 2>/dev/null; do
		if [ "$i" -ge $((secs * 20)) ]; then
			kill -KILL "$pid" 2>/dev/null
			wait "$pid" 2>/dev/null
			RC=timeout
			return
		fi
		sleep 0.05
		i=$((i + 1))
	done
	wait "$pid"
	RC=$?
}

have_analyzer() { [ -x "$ANALYZE" ]; }

# stats DUMP OUT: analyzer stats as JSON into OUT.
stats() { "$ANALYZE" stats "$1" --format json > "$2"; }
