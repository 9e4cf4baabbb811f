# SPDX-License-Identifier: GPL-2.0
# attach-verdict.awk: hmb-attach.sh's verdict on one attach, busybox awk
# in the guest:
#   cat clock-pre.jsonl clock-post.jsonl |
#     awk -v clk=SUMMARY-CLOCK -v bt=TRUE-DRIFT-PPM -f attach-verdict.awk
# Every clock read says host - fw lay within half its round trip; carried
# to the estimate's ref_fw_ns with the true drift they bracket the truth.
# Prints "VERDICT off ... err ... drift ... truth [lo, hi] ...": converged,
# converging (invalid, inconsistent or bounds still wide), no-truth, or
# wrong (outside its own bound, or converged but off the truth).
function num(s, k,    r) { if (!match(s, "\"" k "\":-?[0-9.]+")) return ""
	r = substr(s, RSTART, RLENGTH); sub(/.*:/, "", r); return r }
/"status":0/ { n++; m = num($0, "mono_ns"); f = num($0, "fw_ns"); t = num($0, "rtt_ns")
	if (ref == "") { ref = num(clk, "ref_fw_ns"); lo = -1e30; hi = 1e30 }
	if (ref == "") next
	o = m - f + bt * 1e-6 * (ref - f)
	if (o - t / 2 > lo) lo = o - t / 2
	if (o + t / 2 < hi) hi = o + t / 2 }
END {
	valid = clk ~ /"valid":true/; cons = clk ~ /"consistent":true/
	conv = clk ~ /"converged":true/; dee = num(clk, "drift_err_ppm")
	off = num(clk, "offset_ns") + 0
	err = num(clk, "offset_err_ns") + num(clk, "offset_err_drift_ns")
	d = num(clk, "drift_ppm") + 0; de = d - bt; if (de < 0) de = -de
	dist = off < lo ? lo - off : (off > hi ? off - hi : 0)
	if (!valid || !cons) verdict = "converging"
	else if (ref == "" || lo > hi) verdict = "no-truth"
	else if (dist > err) verdict = "wrong"	# outside its own bound
	else if (!conv) verdict = "converging"	# honest, bounds still wide
	else if (dist <= 20000 && de <= 0.1 * (bt < 0 ? -bt : bt)) verdict = "converged"
	else verdict = "wrong"
	printf "%s off %s err %.0f drift %s +- %s truth [%.0f, %.0f] %.0f ns off it, drift error %.3f ppm\n",
		verdict, off, err, d, dee, lo, hi, dist, de }
