# SPDX-License-Identifier: Apache-2.0
"""What the fleet tests ask of the commands table on any engine (t03 on
clickhouse-server 18.16, t06 on chDB 26.x): each phase of correlate's
final line as an SQL expression over the rows, and the comparison of
correlate's percentiles with quantileExact's over the same rows."""

# phase -> (correlate's histogram, SQL expression, SQL condition)
PHASES = [
    ("host_total", "complete_ns - submit_ns",
     "complete_ns > 0 AND complete_ns >= submit_ns"),
    ("host_submit_to_fw_fetch", "fetch_ns - submit_ns",
     "fetch_ns > 0 AND fetch_ns >= submit_ns"),
    ("fw_fetch_to_cqe_posted", "cqe_ns - fetch_ns",
     "match_class = 'matched' AND fetch_ns > 0 AND cqe_ns >= fetch_ns"),
    ("fw_cqe_posted_to_host_complete", "complete_ns - cqe_ns",
     "cqe_ns > 0 AND complete_ns >= cqe_ns"),
]
LEVELS = [("p50", 0.5), ("p90", 0.9), ("p99", 0.99), ("p999", 0.999)]


def percentiles_sql(expr, where):
    """The query whose answer percentiles_bad() takes: quantileExact at
    each level, then max, as one TabSeparated line."""
    return ("SELECT %s, max(%s) FROM hmb.commands WHERE %s FORMAT "
            "TabSeparated" % (", ".join("quantileExact(%s)(%s)" % (lv, expr)
                                        for _, lv in LEVELS), expr, where))


def percentiles_bad(key, pc, answer):
    """correlate's percentiles pc of phase key (its final line's
    "percentiles" member) against the answer of percentiles_sql(): a
    list of what differs, empty when every one is quantileExact's (pc
    exact) or holds it within the bounds correlate states."""
    sql = dict(zip([nm for nm, _ in LEVELS] + ["max"],
                   (int(x) for x in answer.split("\t"))))
    # the firmware total is on the firmware clock, the rows' times on
    # the host's: the two differ by the drift (HMB_CLOCK_DRIFT_MAX)
    slack = 500e-6 if key == "fw_fetch_to_cqe_posted" else 0
    bad = []
    for nm, _ in LEVELS + [("max", 1)]:
        v = pc.get(nm + "_ns")
        lo = pc.get(nm + "_lo_ns", v) if not pc.get("exact") else v
        hi = pc.get(nm + "_hi_ns", v) if not pc.get("exact") else v
        if v is None or not (lo - slack * lo - 1 if slack else lo) <= \
                sql[nm] <= (hi + slack * hi + 1 if slack else hi):
            bad.append("%s: SQL %d, correlate %s [%s, %s]"
                       % (nm, sql[nm], v, lo, hi))
    return bad
