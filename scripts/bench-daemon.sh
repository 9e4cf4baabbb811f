#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# bench-daemon.sh: hmb-trace-daemon alone.
#
# A ring file of HMB_BENCH_RING (default 1G) in /dev/shm is filled once by
# hmb-fwsim for each record mix -- 64-byte records (-p fixed:32) and the
# simulator's default payload mix -- and then, for every output directory
# of HMB_BENCH_DIRS (default /dev/shm: tmpfs, and build/bench: the
# repository's filesystem, ext4 here), HMB_BENCH_ROUNDS rounds (default 5)
# of, interleaved:
#   daemon copy   hmb-trace-daemon --once --write-mode copy (the default)
#   daemon spans  hmb-trace-daemon --once --write-mode spans (one copy)
#   dd ring       dd if=RING of=DIR/x bs=256K: the same bytes, read and
#                 written by dd (a copy into dd's buffer, a copy out)
#   dd zero       dd if=/dev/zero of=DIR/x bs=256K, as many bytes: the
#                 issue's yardstick, writing only
# and then, per mix, the same number of rounds of the read side alone:
# the daemon (copy) draining into /dev/null against dd reading the ring
# file into /dev/null, interleaved.
# Before each daemon run the ring's tail is put back to where the fill
# left it, so every run drains the same records; every output is deleted
# after its run and the directory synced (not timed).  Wall and CPU time
# (user + system, wait4) per run (scripts/lib/bench.py); medians per
# command.
# "speed vs dd" is dd's median time over the daemon's: >= 0.8 is the goal,
# >= 1.0 the aim.  Writes a Markdown table into docs/benchmarks.md between
# the "bench-daemon" markers (HMB_BENCH_NO_DOC=1 leaves it alone).
. "$(dirname "$0")/lib/preamble.sh"
set -o pipefail
. "$top/scripts/lib/bench-doc.sh"
bin=$top/build/bin
sim=$bin/hmb-fwsim
daemon=$bin/hmb-trace-daemon
ringsz=${HMB_BENCH_RING:-1G}
dirs=${HMB_BENCH_DIRS:-/dev/shm $top/build/bench}
rounds=${HMB_BENCH_ROUNDS:-5}
[ -x "$sim" ] && [ -x "$daemon" ] || make -C "$top" all >&2

rings=()
outs=()
cleanup() { rm -rf "${rings[@]}" "${outs[@]}"; }
trap cleanup EXIT

# fill NAME DIST: a ring file filled by the simulator, at ring_of[NAME]
# (not a $(...) subshell: the cleanup must see every path in rings).
fill() {
	local r=/dev/shm/hmb-bench-daemon-$$-$1 bytes
	rings+=("$r")
	bytes=$(numfmt --from=iec "$ringsz")
	# as many records as fit (drop mode: the rest are dropped)
	"$sim" -r "$r" -s "$ringsz" -p "$2" -n $((bytes / 64 + 1000)) -q
	ring_of[$1]=$r
}
# hdr_u64 RING OFFSET: a u64 of the ring's header (16: head, 24: tail)
hdr_u64() { python3 "$bench_py" u64 "$1" "$2"; }
reset_tail() { printf '\0\0\0\0\0\0\0\0' | dd of="$1" bs=1 seek=24 count=8 conv=notrunc status=none; }

# timed OUTFILE CMD...: run CMD, append "wall_s cpu_s" to OUTFILE.
timed() {
	local out=$1 tf
	shift
	tf=$(mktemp)
	bench_run "$tf" "$@"
	awk -v w="$bench_wall_ns" -v c="$bench_cpu_ms" 'BEGIN { printf "%.6f %.3f\n", w / 1e9, c / 1000 }' >> "$out"
	rm -f "$tf"
}
median() { python3 "$bench_py" median --even-format '%.6f'; }

declare -A ring_of recs_of
fill 64 fixed:32
fill mix "mix:16x40,64x40,512x15,4064x5"
for k in 64 mix; do
	recs_of[$k]=$(hdr_u64 "${ring_of[$k]}" 16)
done
res=$(mktemp -d)
outs+=("$res")
for dir in $dirs; do
	mkdir -p "$dir"
	for k in 64 mix; do
		ring=${ring_of[$k]}
		bytes=$(stat -c %s "$ring")
		o=$dir/hmb-bench-daemon-$$.bin
		outs+=("$o" "$o.meta")
		key=$(echo "$dir" | tr / _)-$k
		for r in $(seq "$rounds"); do
			for c in copy spans ddring ddzero; do
				rm -f "$o" "$o.meta"
				case $c in
				copy|spans)
					reset_tail "$ring"
					timed "$res/$key-$c" "$daemon" -r "$ring" -o "$o" --once -q --write-mode "$c" 2>/dev/null ;;
				ddring)
					timed "$res/$key-$c" dd if="$ring" of="$o" bs=256K status=none ;;
				ddzero)
					timed "$res/$key-$c" dd if=/dev/zero of="$o" bs=256K count=$((bytes / 262144)) status=none ;;
				esac
				# the daemon must have drained every record
				if [ "$c" = copy ] || [ "$c" = spans ]; then
					[ "$(stat -c %s "$o")" = "${recs_of[$k]}" ] || {
						echo "bench-daemon: $c wrote $(stat -c %s "$o") bytes, the ring holds ${recs_of[$k]}" >&2
						exit 1
					}
				fi
				rm -f "$o" "$o.meta"
				sync -f "$dir" 2>/dev/null || sync
			done
		done
	done
done

# The read side alone: the daemon draining into /dev/null against dd
# reading the same ring file into /dev/null (nothing written), interleaved.
for k in 64 mix; do
	ring=${ring_of[$k]}
	for r in $(seq "$rounds"); do
		reset_tail "$ring"
		timed "$res/null-$k-daemon" "$daemon" -r "$ring" -o /dev/null --once -q 2>/dev/null
		[ "$(hdr_u64 "$ring" 24)" = "$(hdr_u64 "$ring" 16)" ] || {
			echo "bench-daemon: the daemon left records in the ring (tail != head)" >&2
			exit 1
		}
		timed "$res/null-$k-dd" dd if="$ring" of=/dev/null bs=256K status=none
	done
done
null_row() {	# null_row K
	local k=$1 wd cd wr cr name="64-byte records"
	[ "$k" = mix ] && name="default mix"
	wd=$(awk '{ print $1 }' "$res/null-$k-daemon" | median)
	cd=$(awk '{ print $2 }' "$res/null-$k-daemon" | median)
	wr=$(awk '{ print $1 }' "$res/null-$k-dd" | median)
	cr=$(awk '{ print $2 }' "$res/null-$k-dd" | median)
	awk -v n="$name" -v wd="$wd" -v cd="$cd" -v wr="$wr" -v cr="$cr" 'BEGIN {
		printf "| %s | %.3f s / %.2f s | %.3f s / %.2f s | %.2f / %.2f |\n", n, wd, cd, wr, cr,
			(wd > 0 ? wr / wd : 0), (cd > 0 ? cr / cd : 0) }'
}

fmt_row() {	# fmt_row DIR K
	local dir=$1 k=$2 key fs w c
	key=$(echo "$dir" | tr / _)-$k
	fs=$(df -T "$dir" | awk 'NR == 2 { print $2 }')
	declare -A W C
	for c in copy spans ddring ddzero; do
		W[$c]=$(awk '{ print $1 }' "$res/$key-$c" | median)
		C[$c]=$(awk '{ print $2 }' "$res/$key-$c" | median)
	done
	local name=${dir#$top/}
	local mixname="64-byte records"
	[ "$k" = mix ] && mixname="default mix"
	python3 - "$name ($fs)" "$mixname" "${W[copy]}" "${C[copy]}" "${W[spans]}" "${C[spans]}" \
		"${W[ddring]}" "${C[ddring]}" "${W[ddzero]}" "${C[ddzero]}" <<'EOF'
import sys
d, m, wc, cc, ws, cs, wr, cr, wz, cz = sys.argv[1:3] + [float(x) for x in sys.argv[3:]]
def r(a, b):
    return "%.2f" % (a / b) if b > 0 else "-"
print("| %s | %s | %.3f s / %.2f s | %.3f s / %.2f s | %.3f s / %.2f s | %.3f s / %.2f s | **%s** / %s | %s / %s | **%s** / %s | %s / %s |" % (
    d, m, wc, cc, ws, cs, wr, cr, wz, cz,
    r(wr, wc), r(cr, cc), r(wr, ws), r(cr, cs),
    r(wz, wc), r(cz, cc), r(wz, ws), r(cz, cs)))
EOF
}

{
	echo "<!-- bench-daemon:begin (generated by scripts/bench-daemon.sh) -->"
	echo "### hmb-trace-daemon alone: draining a pre-filled ring"
	echo
	echo "Measured $(date -u +%Y-%m-%d) by \`HMB_BENCH_RING=$ringsz HMB_BENCH_ROUNDS=$rounds scripts/bench-daemon.sh\` (or \`make bench\`; directories: HMB_BENCH_DIRS), $(nproc) CPUs ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')), load average at the end $(cut -d' ' -f1-3 /proc/loadavg)."
	echo "A $ringsz ring file in /dev/shm, filled once per mix by hmb-fwsim (64-byte records: ${recs_of[64]} bytes of records; default mix \`16x40,64x40,512x15,4064x5\`: ${recs_of[mix]} bytes), drained by \`hmb-trace-daemon --once\` into the directory; dd reads the same ring file (\"dd ring\": the same bytes) or /dev/zero (\"dd zero\", as many bytes), bs=256K, to the same directory.  The four commands interleaved, $rounds rounds, each output deleted and the directory synced between runs; medians of wall / CPU (user + system) time.  Speed vs dd = dd's time / the daemon's (goal >= 0.8, aim >= 1.0), on wall / on CPU time."
	echo
	echo "| output (fs) | records | daemon copy (default) | daemon spans | dd ring | dd zero | copy vs dd ring | spans vs dd ring | copy vs dd zero | spans vs dd zero |"
	echo "|---|---|---|---|---|---|---|---|---|---|"
	for dir in $dirs; do
		for k in 64 mix; do
			fmt_row "$dir" "$k"
		done
	done
	echo
	echo "The read side alone, the same rounds: drained into /dev/null (\`hmb-trace-daemon -r RING -o /dev/null --once\`) against \`dd if=RING of=/dev/null bs=256K\`, interleaved; medians of wall / CPU time."
	echo
	echo "| records | daemon -> /dev/null | dd ring -> /dev/null | daemon vs dd (wall / CPU) |"
	echo "|---|---|---|---|"
	null_row 64
	null_row mix
	echo "<!-- bench-daemon:end -->"
} | tee /dev/stderr | bench_doc bench-daemon
