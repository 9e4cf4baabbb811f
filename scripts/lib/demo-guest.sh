# SPDX-License-Identifier: Apache-2.0
# demo-guest.sh: what the guest halves of `make demo` share (busybox sh;
# source it after scripts/vm/lib/tap.sh): narration, the two agents, fio.
# scripts/demo-guest-hmb.sh (the HMB controller) and scripts/demo-guest.sh
# (hmb-fwsim through ivshmem) use it.
AGENT=$HMB_BIN/hmb-trace-agent
DEMO_T0=$(date +%s)

say() { echo "[guest +$(($(date +%s) - DEMO_T0))s] $*" >&2; }
die() { tap_fail "$1" "${2:-}"; say "FAILED: $1 ${2:-}"; tap_done; }

# demo_agents_start NAME [ARG...]: hmb-trace-agent twice on the NVMe disk,
# the report into NAME.txt and -j --per-command into NAME.jsonl (with the
# ARGs, e.g. the flight recorder's, given to that one only: it keeps every
# command already); waits until both are attached and the JSON one has the
# firmware records.
demo_agents_start() {
	DEMO_AGENT=$1
	shift
	"$AGENT" -d "${HMB_NVME_DEV#/dev/}" -N 5 -o "$HMB_RESULTS/$DEMO_AGENT.txt" \
		2>"$HMB_RESULTS/$DEMO_AGENT-text.err" &
	DEMO_TPID=$!
	"$AGENT" -d "${HMB_NVME_DEV#/dev/}" -j --per-command -N 5 "$@" \
		-o "$HMB_RESULTS/$DEMO_AGENT.jsonl" 2>"$HMB_RESULTS/$DEMO_AGENT.err" &
	DEMO_APID=$!
	_i=0
	while [ $_i -lt 300 ] && ! grep -q '"type":"start"' "$HMB_RESULTS/$DEMO_AGENT.jsonl" 2>/dev/null; do
		usleep 100000; _i=$((_i + 1))
	done
	# the text agent prints its banner when attached
	while [ $_i -lt 300 ] && [ ! -s "$HMB_RESULTS/$DEMO_AGENT.txt" ]; do usleep 100000; _i=$((_i + 1)); done
	grep -q '"mode":"nvme+firmware"' "$HMB_RESULTS/$DEMO_AGENT.jsonl" ||
		die "agent in nvme+firmware mode" "$(cat "$HMB_RESULTS/$DEMO_AGENT.err") $(head -1 "$HMB_RESULTS/$DEMO_AGENT.jsonl")"
	tap_ok "agent attached: $(head -1 "$HMB_RESULTS/$DEMO_AGENT.txt" 2>/dev/null | cut -c1-100)"
}

# demo_agents_stop: SIGINT (they wait for late firmware records, then report)
demo_agents_stop() {
	say "guest: stop the agents (SIGINT: they wait for late firmware records, then report)"
	sleep 2
	kill -INT $DEMO_TPID $DEMO_APID
	wait $DEMO_TPID; _trc=$?
	wait $DEMO_APID; _arc=$?
	[ $_trc = 0 ] && [ $_arc = 0 ] && tap_ok "agents exit 0 on SIGINT" ||
		tap_fail "agents exit 0" "text $_trc json $_arc: $(tail -3 "$HMB_RESULTS/$DEMO_AGENT-text.err" "$HMB_RESULTS/$DEMO_AGENT.err")"
}

# demo_fio NAME DEPTH ENGINE: fio randrw 4k for $SECS s into fio-NAME.txt
demo_fio() {
	say "guest: fio randrw 4k, queue depth $2 for ${SECS}s ($3)"
	fio --name="$1" --filename="$HMB_NVME_DEV" --direct=1 --ioengine="$3" \
		--iodepth="$2" --rw=randrw --bs=4k --size=64M --time_based --runtime="$SECS" \
		--output="$HMB_RESULTS/fio-$1.txt" 2>"$HMB_RESULTS/fio-$1.err" || return 1
	say "  $(grep -E '^ *(read|write):' "$HMB_RESULTS/fio-$1.txt" | sed 's/,.*//; s/^ *//' | tr '\n' ' ')"
}
