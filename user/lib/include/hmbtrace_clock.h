/* SPDX-License-Identifier: Apache-2.0 */
/*
 * hmbtrace_clock.h - the firmware -> host clock estimate of nvme-hmb-trace
 * (design D10), shared by hmb-trace-agent (live) and hmb-trace-analyze
 * correlate (offline) so both give the same estimate for the same commands.
 *
 * The agent's user-space analysis (user/agent/analysis.c) and the analyzer's
 * correlate both call it; it is the only implementation.
 */
#ifndef HMBTRACE_CLOCK_H
#define HMBTRACE_CLOCK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------- clock estimate */

/*
 * Every matched command bounds the offset between the clocks: the host
 * submitted it before the firmware fetched it, and the firmware posted its
 * completion before the host completed it.  With host = fw + a + b*(fw-ref):
 *     submit - fetch_fw  <=  a + b*(t - ref)  <=  complete - cqe_fw
 * The estimate intersects these intervals (a few extreme ones trimmed as
 * outliers), in two halves of the window to get the drift b.  The error
 * bound is half the width of the intersection: the true offset lies inside
 * it if the causal order holds.
 */
struct hmb_clk_pt {
	int64_t t;		/* firmware time of the fetch */
	int64_t lo, hi;		/* bounds of host - fw at t */
};

struct hmb_clock {
	/* window of recent points (ring) */
	struct hmb_clk_pt *pts;
	size_t cap, n, first;
	size_t min_points;	/* no estimate below this */
	/* result */
	bool valid;
	bool consistent;	/* the trimmed intervals intersect */
	double ref;		/* firmware time the offset refers to */
	double off_ns;		/* host - fw at ref */
	double drift;		/* b: host clock rate / fw clock rate - 1 */
	double off_err_ns;	/* half width of the intersection */
	double drift_err;	/* bound on |b - true b| from the halves */
	bool have_drift;	/* b was estimated (kept across a step) */
	/* the estimate before the last step, for firmware times before it */
	bool have_prev;
	double prev_off, prev_drift, prev_ref, prev_err;
	int64_t step_t;		/* firmware time of the first point after it */
	size_t used;		/* points in the estimate */
	size_t trimmed;		/* extreme bounds ignored at each end */
	/* offset steps detected (the window restarts after a step) */
	unsigned int steps;
	unsigned int streak;	/* consecutive points contradicting it */
	size_t streak_start;	/* n at the first of them */
	uint64_t added, rejected_while_stepping;
};

int hmb_clock_init(struct hmb_clock *c, size_t cap);
void hmb_clock_free(struct hmb_clock *c);
/* Forget every point (after the agent saw the estimate go wrong). */
void hmb_clock_reset(struct hmb_clock *c);
/* One matched command: host submit/complete, firmware fetch/cqe_posted. */
void hmb_clock_add(struct hmb_clock *c, uint64_t submit, uint64_t complete,
		   uint64_t fw_fetch, uint64_t fw_cqe);
/* Recompute the estimate from the window; returns c->valid. */
bool hmb_clock_solve(struct hmb_clock *c);
/* Firmware time -> host time (needs c->valid); times before the last
 * step use the estimate from before it. */
double hmb_clock_map(const struct hmb_clock *c, uint64_t fw_ns);
/* The error bound that applies at @fw_ns. */
double hmb_clock_err_at(const struct hmb_clock *c, uint64_t fw_ns);
/* Offset (host - fw) at firmware time @fw_ns. */
double hmb_clock_offset_at(const struct hmb_clock *c, uint64_t fw_ns);

#ifdef __cplusplus
}
#endif
#endif /* HMBTRACE_CLOCK_H */
