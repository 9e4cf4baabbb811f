# SPDX-License-Identifier: GPL-2.0
# window-cost.awk: one "cost CFG COMMANDS CPU_TICKS CHILD_TICKS BPF_NS" line
# of window-bench.sh from `bpftool prog show` read three times (its progs
# files: "id name run_time_ns run_cnt"): P0 before the agent started (its
# programs are those not in it), S0 before fio and the file read (after
# it); COMMANDS is its nvme_complete_rq program's runs between S0 and the
# end, BPF_NS all its programs' run time, the ticks from T0 and T1 ("utime+
# stime cutime+cstime" of /proc/PID/stat).
#   awk -v p0=FILE -v s0=FILE -v cfg=NAME -v t0="A B" -v t1="A B" -f window-cost.awk S1
BEGIN {
	while ((getline l < p0) > 0) { split(l, a, " "); old[a[1]] = 1 }
	while ((getline l < s0) > 0) { split(l, a, " "); rt[a[1]] = a[3]; rc[a[1]] = a[4] }
	split(t0, x, " "); split(t1, y, " ")
}
!($1 in old) && ($1 in rt) {
	ns += $3 - rt[$1]
	if ($2 ~ /^nvme_complete/) cmds += $4 - rc[$1]
}
# %.0f: busybox awk prints %d as a 32-bit int
END { printf "cost %s %.0f %.0f %.0f %.0f\n", cfg, cmds, y[1] - x[1], y[2] - x[2], ns }
