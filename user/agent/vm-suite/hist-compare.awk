# SPDX-License-Identifier: GPL-2.0
# hist-compare.awk: agent-bench.sh's comparison of two latency histograms
# of the same I/Os, busybox awk in the guest:
#   awk -f hist-compare.awk SLOTS
# Input lines "a|b LO_US COUNT" (a: the agent, b: biolatency).  Prints
# "TOTAL_A TOTAL_B WORST TOL SLOTS...": WORST is how far either
# cumulative count falls behind the other's at the slot before, TOL the
# tolerance (0.5 % of a, at least 10).
{ c[$1 " " $2] += $3; k[$2] = 1; t[$1] += $3 }
END {
	n = 0
	for (x in k) s[++n] = x + 0
	for (i = 2; i <= n; i++)	# sort the slots
		for (j = i; j > 1 && s[j - 1] > s[j]; j--) { y = s[j]; s[j] = s[j - 1]; s[j - 1] = y }
	tol = t["a"] / 200; if (tol < 10) tol = 10
	ca = cb = pa = pb = worst = 0
	for (i = 1; i <= n; i++) {
		ca += c["a " s[i]]; cb += c["b " s[i]]
		if (pb - ca > worst) worst = pb - ca
		if (pa - cb > worst) worst = pa - cb
		pa = ca; pb = cb
		line = line " " s[i] ":" c["a " s[i]] "/" c["b " s[i]]
	}
	printf "%d %d %d %d%s\n", t["a"], t["b"], worst, tol, line
}
