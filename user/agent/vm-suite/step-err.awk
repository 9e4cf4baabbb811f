# SPDX-License-Identifier: GPL-2.0
# step-err.awk: agent-e2e.sh's step size from the whole-window interval
# estimates, for comparison with the agent's own, busybox awk in the guest:
#   awk -v step=NS -v at=SECONDS -v dr=PPM -f step-err.awk clock-intervals.txt
# Input lines "offset err ref_fw_ns drift steps"; the last estimate before
# the step and the last after it, both extrapolated to the step's firmware
# time.  Prints the error in ns against STEP, or n/a.
{ o[NR] = $1; r[NR] = $3; d[NR] = $4; s[NR] = $5 }
END {
	tf = 1e9 + at * 1e9 * (1 + dr * 1e-6)	# fw time of the step
	for (i = 1; i <= NR; i++) { if (s[i] == 0) b = i; if (s[i] >= 1 && !a) a = i }
	if (!a || !b) { print "n/a"; exit }
	a = NR	# the last estimate after the step
	ob = o[b] + d[b] * 1e-6 * (tf - r[b])
	oa = o[a] + d[a] * 1e-6 * (tf + step - r[a])
	diff = (ob - oa) - step	# host = fw + off: a +step fw clock lowers off
	if (diff < 0) diff = -diff
	printf "%.0f\n", diff
}
