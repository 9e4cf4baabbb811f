# SPDX-License-Identifier: GPL-2.0
# clock-truth.awk: hmb-agent.sh's clock truth from the controller's clock
# reads, busybox awk in the guest:
#   awk -v step=NS -v ref=REF_FW_NS -v m0=MONO -v f0=FW -v v0=VIRT \
#       -f clock-truth.awk clock1.jsonl
# The drift from the read before (m0, f0) and the best read after the
# step (the step taken out); the offset at ref bracketed by every read:
# each says host - fw lay within its round trip.  Prints
# "DRIFT_PPM LO HI GUEST_PPM READS BEST_RTT"; exits 1 without a read.
function num(k,    r) { if (!match($0, "\"" k "\":[0-9]+")) return ""
	r = substr($0, RSTART, RLENGTH); sub(/.*:/, "", r); return r + 0 }
/"status":0/ { n++; m[n] = num("mono_ns"); f[n] = num("fw_ns"); t[n] = num("rtt_ns"); v[n] = num("virt_ns")
	if (!best || t[n] < t[best]) best = n }
END {
	if (!n) exit 1
	bt = (m[best] - m0) / (f[best] - f0 - step) - 1		# true drift
	g = ((m[best] - m0) / (v[best] - v0) - 1) * 1e6		# guest clock vs virtual
	lo = -1e30; hi = 1e30
	for (i = 1; i <= n; i++) {
		o = m[i] - f[i] + bt * (ref - f[i])
		if (o - t[i] / 2 > lo) lo = o - t[i] / 2
		if (o + t[i] / 2 < hi) hi = o + t[i] / 2
	}
	printf "%.3f %.0f %.0f %.3f %d %.0f\n", bt * 1e6, lo, hi, g, n, t[best]
}
