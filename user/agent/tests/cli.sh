#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# cli.sh AGENT: option checks of hmb-trace-agent (TAP).  Bad values exit 2
# with a message naming the option; --ringbuf-mb sizes the BPF ring buffer
# the running agent really has (its map fd's /proc fdinfo).  Needs root for
# the last part (block mode: no NVMe or module needed).
set -u
agent=${1:?usage: cli.sh AGENT}
n=0
ok() { n=$((n + 1)); echo "ok $n - $*"; }
notok() { n=$((n + 1)); echo "not ok $n - $*"; }
check() { local d=$1; shift; if "$@"; then ok "$d"; else notok "$d"; fi; }
tmp=$(mktemp -d)
trap 'kill $apid 2>/dev/null; rm -rf "$tmp"' EXIT
apid=

for v in 0 3 2048 abc -4; do
	"$agent" --ringbuf-mb "$v" >/dev/null 2>"$tmp/err"
	rc=$?
	check "--ringbuf-mb $v: exit 2, bad usage ($rc)" [ "$rc" = 2 ]
	check "--ringbuf-mb $v: the error names the option" grep -q -- "--ringbuf-mb '$v'" "$tmp/err"
done
check "--help lists --ringbuf-mb" sh -c "'$agent' --help | grep -q -- --ringbuf-mb"

# One agent, one firmware clock: its rings belong to one controller.
"$agent" --ring-ctrl 0=0 --ring-ctrl 1=1 >/dev/null 2>"$tmp/err"
rc=$?
check "--ring-ctrl to two controllers: exit 2 ($rc)" [ "$rc" = 2 ]
check "--ring-ctrl to two controllers: the error says why" grep -q -- "--ring-ctrl '1=1': ring 0 already belongs to nvme0" "$tmp/err"
"$agent" --ring-ctrl 0=0 --ring-ctrl 1=0 --ring-ctrl 0=0 --help >/dev/null 2>"$tmp/err"
rc=$?
check "--ring-ctrl: several rings to one controller are accepted ($rc)" [ "$rc" = 0 ]

# A running agent's ring buffer has the size asked for.
"$agent" -m block --ringbuf-mb 2 1 3 >"$tmp/out" 2>"$tmp/agent.err" &
apid=$!
found=
for _ in $(seq 100); do
	# the agent's own fds: the ring buffer map is map_type 27
	# two: "rb" (the commands) and "rawrb" (-w's records: one page without -w)
	found=$(grep -l '^map_type:[[:space:]]*27$' /proc/$apid/fdinfo/* 2>/dev/null |
		xargs -r grep -h '^max_entries' | awk '{ print $2 }' | sort -n | tr '\n' ' ')
	[ "$(echo $found | wc -w)" = 2 ] && break
	kill -0 $apid 2>/dev/null || break
	sleep 0.1
done
check "the running agent's ring buffers: '$found' (2 MiB asked; -w's one page without -w)" [ "$found" = "$(getconf PAGESIZE) 2097152 " ]
wait $apid
rc=$?
check "block-mode agent with --ringbuf-mb 2 exits 0 ($rc)" [ "$rc" = 0 ] || cat "$tmp/agent.err" | sed 's/^/# /'
echo "1..$n"
