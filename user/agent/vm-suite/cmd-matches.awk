# SPDX-License-Identifier: GPL-2.0
# cmd-matches.awk: the matches of a join, one line per host command that got
# firmware records: "QID CID SUBMIT_NS phase,seq phase,seq ..." (phases in
# the order printed, fetch first).  Reads the {"type":"cmd"} lines of
# `hmb-trace-agent -j --per-command` or of `hmb-trace-analyze correlate -j`
# (both print "cmd":{... "qid", "cid", "submit_ns", ... "fw":[{"phase","seq"
# ...}]}).  busybox awk, mawk and gawk.
function num(k,    r) {
	if (!match($0, "\"" k "\":[0-9]+"))
		return ""
	r = substr($0, RSTART, RLENGTH)
	sub(/.*:/, "", r)
	return r
}
/"type":"cmd"/ {
	i = index($0, "\"fw\":[")
	if (!i)
		next
	fw = substr($0, i + 6)
	fw = substr(fw, 1, index(fw, "]") - 1)
	out = ""
	while (match(fw, /"phase":"[a-z_]+","seq":[0-9]+/)) {
		m = substr(fw, RSTART, RLENGTH)
		fw = substr(fw, RSTART + RLENGTH)
		gsub(/"phase":"|"seq":|"/, "", m)
		out = out " " m
	}
	if (out != "")
		print num("qid"), num("cid"), num("submit_ns") out
}
