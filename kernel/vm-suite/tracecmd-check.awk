# SPDX-License-Identifier: GPL-2.0
# tracecmd-check.awk: the check of tracecmd.sh over `trace-cmd report`
# (awk, not Python: the guest has busybox and no python3).
#   awk -f tracecmd-check.awk REPORT > check.txt 2> check.err
# prints "example ..." (one good command) and "commands N good N ..."
# on stdout, the first 5 wrong commands on stderr.
#
# One pass over the report, in its (time) order.  Host commands are keyed by
# (qid, cid) from nvme_setup_cmd until their nvme_complete_rq; block events
# by sector.  A firmware record of a phase belongs to the oldest command
# submitted with its (sqid, cid) that has no record of that phase yet.
# The fields come from the events' raw form (the nvme events' print
# helpers are not in libtraceevent, so trace-cmd prints
# "[FAILED TO PARSE]" and the fields): cdw10 bytes 0..7 are the SLBA,
# bytes 8..9 the 0-based block count; the fetch record's payload holds
# sqid (0..1), cid (2..3) and nlb (10..11), little-endian.
function hx(s,   v, k) { s = tolower(s); sub(/^0x/, "", s); v = 0; for (k = 1; k <= length(s); k++) v = v * 16 + index("0123456789abcdef", substr(s, k, 1)) - 1; return v }
function le(a, i, n,   v, k) { v = 0; for (k = n - 1; k >= 0; k--) v = v * 256 + hx(a[i + k]); return v }
function field(name,   i) { for (i = 1; i <= NF; i++) if (index($i, name "=") == 1) return substr($i, length(name) + 2); return "" }
{
	# "comm-pid [cpu] ts: event: fields": the first "] ts: event:"
	if (!match($0, /\] +[0-9]+\.[0-9]+: +[a-z_0-9]+:/)) next
	h = substr($0, RSTART + 1, RLENGTH - 2); sub(/^ +/, "", h)
	split(h, hv, /: +/); ts = hv[1] + 0; ev = hv[2]
}
ev == "block_rq_issue" {
	# 259,0 R 4096 () 1976 + 8 [fio]
	if (match($0, /\) [0-9]+ \+ [0-9]+/)) { split(substr($0, RSTART + 2, RLENGTH - 2), b, " "); bi[b[1]] = ts; bn[b[1]] = b[3] }
	host_ev++; last_host = ts; next
}
ev == "block_rq_complete" {
	if (match($0, /\) [0-9]+ \+ [0-9]+/)) { split(substr($0, RSTART + 2, RLENGTH - 2), b, " "); bc[b[1]] = ts }
	host_ev++; last_host = ts; next
}
ev == "nvme_setup_cmd" {
	q = field("qid"); c = field("cid"); op = field("opcode") + 0
	if (op != 1 && op != 2) next
	s = $0; sub(/.*cdw10=ARRAY\[/, "", s); sub(/\].*/, "", s); gsub(/ /, "", s); split(s, a, ",")
	n++; key[n] = q " " c; cur[q " " c] = n; setup[n] = ts
	kq[q " " c, ++kn[q " " c]] = n
	slba[n] = le(a, 1, 8); nlb[n] = le(a, 9, 2)
	host_ev++; last_host = ts; setup_last = ts
	if (prev == "fw") trans++
	prev = "host"; next
}
ev == "nvme_complete_rq" {
	k = field("qid") " " field("cid")
	if (k in cur) { m = cur[k]; if (!(m in comp)) comp[m] = ts }
	host_ev++; last_host = ts
	if (prev == "fw") trans++
	prev = "host"; next
}
ev == "hmb_trace_record" {
	fw++; fwtimes[fw] = ts; if (prev == "host") trans++
	prev = "fw"
	op = field("opcode"); sq = field("seq") + 0; fts = field("ts_ns") + 0
	p = $0; sub(/.*payload=/, "", p); np = split(p, a, " ")
	if (op !~ /^0x10[0-4]$/ || np < 4) { bg++; next }
	# A (qid, cid) is reused only after its command completed, and the
	# firmware reports each command in order: the records of a phase go to
	# the submissions of their (sqid, cid) in turn.
	k = le(a, 1, 2) " " le(a, 3, 2); ph = hx(op) - 256
	j = ++kp[k, ph]
	if (!((k, j) in kq)) { orphan++; next }
	m = kq[k, j]
	if (ph == 0) fnlb[m] = le(a, 11, 2)
	if ((m, ph) in fwts) { dup++; next }
	fwts[m, ph] = fts; fwseq[m, ph] = sq; fwat[m, ph] = ts; nfw[m]++
	next
}
END {
	for (i = 1; i <= fw; i++) if (fwtimes[i] < setup_last) early_fw++
	for (i = 1; i <= n; i++) {
		if (nfw[i] != 5) { nofw++; continue }
		if (!(i in comp)) { nocomp++; continue }
		sec = slba[i]
		if (!(sec in bi) || !(sec in bc)) { noblk++; continue }
		bad = ""
		if (bn[sec] != nlb[i] + 1) bad = bad " block-len"
		if (fnlb[i] != nlb[i]) bad = bad " fw-nlb"
		if (fwat[i, 0] < setup[i]) bad = bad " fw-before-submit"
		for (ph = 1; ph < 5; ph++) {
			if (fwseq[i, ph] <= fwseq[i, ph - 1]) bad = bad " seq-order"
			# Not before: QEMU stamps its trace lines to the
			# microsecond, so phases handled within one carry the
			# same firmware time (as a coarse firmware clock would);
			# 44 of 1200 commands one run, fetch = media start.
			if (fwts[i, ph] < fwts[i, ph - 1]) bad = bad " fw-time-order"
			if (fwat[i, ph] < fwat[i, ph - 1]) bad = bad " trace-order"
		}
		if (comp[i] < setup[i] || bc[sec] < comp[i] || bi[sec] > comp[i]) bad = bad " host-order"
		if (bad != "") { wrong++; if (nw++ < 5) print "wrong", i, key[i], bad > "/dev/stderr"; continue }
		good++
		if (!ex && i > n / 2) { ex = i; printf "example %s slba %d: block_rq_issue %.6f nvme_setup_cmd %.6f fw %.6f..%.6f (fw ts %.0f..%.0f) nvme_complete_rq %.6f block_rq_complete %.6f\n", key[i], slba[i], bi[sec], setup[i], fwat[i, 0], fwat[i, 4], fwts[i, 0], fwts[i, 4], comp[i], bc[sec] }
	}
	printf "commands %d good %d without-5-fw %d no-completion %d no-block %d wrong %d fw %d bg %d orphan %d dup %d fw-before-last-submit %d transitions %d\n", n, good, nofw + 0, nocomp + 0, noblk + 0, wrong + 0, fw, bg + 0, orphan + 0, dup + 0, early_fw + 0, trans + 0
}
