# SPDX-License-Identifier: GPL-2.0
# kmod-records.awk: the check of kmod.sh over the hmb_trace_record lines
# of one run (trace_pipe or perf script), busybox awk in the guest:
#   awk -v want=N -v nopay=0|1 -f kmod-records.awk FILE
# prints "LINES DISTINCT DUP OUT BAD[ seq S: GOT != WANT;...]": every seq
# 0..N-1 exactly once, and (nopay=0) the payload bytes as produced: byte
# i is (seq + i) mod 256 (the first 16 are printed by the event's format;
# perf script prints the whole array).
/hmb_trace_record:/ {
	s = -1; l = -1
	for (f = 1; f <= NF; f++) {
		if ($f ~ /^seq=/) s = substr($f, 5) + 0
		if ($f ~ /^payload_len=/) l = substr($f, 13) + 0
	}
	lines++
	if (s < 0 || s >= want) { out++; next }
	if (!seen[s]++) distinct++
	else dup++
	if (nopay) next
	p = $0; sub(/.*payload=/, "", p); gsub(/[ ,]|ARRAY\[|\]/, "", p)
	n = l > 16 ? 16 : l; e = ""
	for (i = 0; i < n; i++) e = e sprintf("%02x", (s + i) % 256)
	if (substr(p, 1, 2 * n) != e) { bad++; if (bad < 3) msg = msg " seq " s ": " p " != " e ";" }
}
END { printf "%d %d %d %d %d%s\n", lines, distinct, dup, out, bad, msg }
