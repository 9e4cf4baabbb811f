# SPDX-License-Identifier: Apache-2.0
# perf next to a guest suite's workload, armed before it starts (busybox sh;
# source it after tap.sh).  Under TCG `perf stat -a` or `perf record -a`
# takes 15-20 s to open its events, so a suite that starts perf in the
# background and its workload a second later measures only the tail: perf
# is started with its events disabled and a control fifo, enabled, and the
# suite goes on only once perf acknowledged (the events are armed).
#   perf_start OUT ERR stat|record ARGS...   e.g. perf_start "$R/p.out" "$R/p.err" record -e 'nvme:*' -a -o p.data
#   ... workload ...
#   perf_stop                                 SIGINT, wait; 0 if perf ended well
# One perf at a time per suite (file descriptors 8 and 9).
perf_start() {
	_po=$1 _pe=$2
	shift 2
	_pd=$(mktemp -d /tmp/perfctl.XXXXXX)
	mkfifo "$_pd/ctl" "$_pd/ack" || return 1
	perf "$@" -D -1 --control "fifo:$_pd/ctl,$_pd/ack" >"$_po" 2>"$_pe" &
	perf_pid=$!
	exec 8<>"$_pd/ctl" 9<>"$_pd/ack"
	echo enable >&8
	_ack=
	read -r -t "${HMB_PERF_START_TIMEOUT:-300}" _ack <&9
	[ "$_ack" = ack ] && return 0
	kill "$perf_pid" 2>/dev/null
	exec 8>&- 9>&-
	return 1
}

# perf_stop: perf -a ends on SIGINT with status 0, or 130 (128 + SIGINT)
# when it was recording; both are a clean end.
perf_stop() {
	kill -INT "$perf_pid"
	wait "$perf_pid"
	_prc=$?
	exec 8>&- 9>&-
	rm -rf "$_pd"
	[ $_prc = 0 ] || [ $_prc = 130 ]
}
