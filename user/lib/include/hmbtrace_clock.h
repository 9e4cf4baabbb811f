/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * hmbtrace_clock.h - the firmware -> host clock estimate of nvme-hmb-trace
 * (two clocks), shared by hmb-trace-agent (live) and hmb-trace-analyze
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
	int64_t tc;		/* firmware time of cqe_posted */
	uint32_t sf, sc;	/* record seqs of fetch and cqe_posted */
};

/*
 * The largest rate difference assumed between the firmware's clock and the
 * host's while no drift is estimated (an oscillator's tolerance, with room):
 * it widens the error bound of an estimate from a short window.
 */
#define HMB_CLOCK_DRIFT_MAX	500e-6
/* hmb_clock_converged(): the drift's bound against the drift itself */
#define HMB_CLOCK_CONVERGED_DRIFT	0.1
/* ... or against this, for a drift near zero */
#define HMB_CLOCK_DRIFT_FLOOR	2e-6

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
	/* no drift yet: what HMB_CLOCK_DRIFT_MAX may move the offset over
	 * the window, added to off_err_ns by hmb_clock_err_at() */
	double drift_slack_ns;
	bool have_drift;	/* b was estimated (kept across a step) */
	/*
	 * The bound of the drift as it was at the last step (the drift itself
	 * is prev_drift below): a step does not change the drift, so the
	 * window after it (short at first) refines that one instead of
	 * replacing it, until its own bound is under a third of prior_err.
	 */
	bool have_prior;
	double prior_err;
	/*
	 * The estimate before the last step, for the records before it.  The
	 * step lies between two records: step_seq is the first record on the
	 * new clock (records are numbered in the order the firmware wrote
	 * them, so this holds for a step either way, even a backward one
	 * whose firmware times repeat earlier ones); step_t is its firmware
	 * time, step_ns the size of the step (new - old offset).
	 */
	bool have_prev;
	double prev_off, prev_drift, prev_ref, prev_err;
	uint32_t step_seq;
	int64_t step_t;
	double step_ns;
	double step_err_ns;	/* bound on the error of step_ns */
	bool step_known;	/* step_ns measured after the step */
	uint64_t skipped_before_step;	/* points with a record before it */
	/*
	 * The commands just before the step: the step's size is measured
	 * between them and the first ones after it, so that the two offsets
	 * come from the same kind of load and their biases cancel.
	 */
	struct hmb_clk_pt *pre, *post, *late;
	size_t pre_n, post_n, late_n;	/* late: skipped after the step */
	/*
	 * Finding the step's record: the firmware records of recent commands
	 * (hmb_clock_note, a ring), and those between the last record known
	 * to be on the old clock and the first known on the new one (brk,
	 * filled on as the commands in flight at the step complete; the step
	 * is searched again in it at each solve).
	 */
	struct hmb_clk_rec {
		uint32_t seq;
		uint8_t phase;	/* HMB_PHASE_*, or HMB_CLK_PHASE_ANY */
		int64_t ts;
	} *recs, *brk;
	size_t recs_cap, recs_n, recs_head, brk_cap, brk_n, brk_used;
	bool brk_on, brk_fwd;
	uint32_t brk_lo, brk_hi;	/* the seqs bracketing the step */
	size_t used;		/* points in the estimate */
	size_t trimmed;		/* extreme bounds ignored at each end */
	/* offset steps detected (the window restarts after a step) */
	unsigned int steps;
	unsigned int streak;	/* consecutive points contradicting it */
	size_t streak_start;	/* n at the first of them */
	uint64_t added, rejected_while_stepping;
	/*
	 * Live use: an inconsistent window sheds its older half (see
	 * hmb_clock_solve); shed counts the points dropped so.
	 */
	bool shed_old;
	uint64_t shed;
};

int hmb_clock_init(struct hmb_clock *c, size_t cap);
void hmb_clock_free(struct hmb_clock *c);
/* Forget every point (after the agent saw the estimate go wrong). */
void hmb_clock_reset(struct hmb_clock *c);
/*
 * One matched command: host submit/complete, firmware fetch/cqe_posted
 * times and the seqs of those two records.
 */
void hmb_clock_add(struct hmb_clock *c, uint64_t submit, uint64_t complete,
		   uint64_t fw_fetch, uint64_t fw_cqe, uint32_t seq_fetch,
		   uint32_t seq_cqe);
/*
 * A firmware record (seq, firmware time) of a command the caller joined,
 * any phase: it lets a clock step be placed between two records exactly.
 * Optional; without it the step is placed among the fetch and cqe_posted
 * records hmb_clock_add sees.
 */
void hmb_clock_note(struct hmb_clock *c, uint32_t seq, uint64_t fw_ns);
/*
 * The same with the record's phase (HMB_PHASE_*): the step is then placed
 * by how the gaps between records of the same kinds (the phases on either
 * side) run where there is no step (see clock.c, locate_step).
 */
#define HMB_CLK_PHASE_ANY	0xff
void hmb_clock_note_phase(struct hmb_clock *c, uint32_t seq, uint64_t fw_ns,
			  unsigned int phase);
/* Recompute the estimate from the window; returns c->valid. */
bool hmb_clock_solve(struct hmb_clock *c);
/*
 * Firmware time of record @seq -> host time (needs c->valid); records
 * before the last step use the estimate from before it.
 */
double hmb_clock_map(const struct hmb_clock *c, uint64_t fw_ns, uint32_t seq);
/* The error bound that applies to record @seq. */
double hmb_clock_err_at(const struct hmb_clock *c, uint32_t seq);
/*
 * Has the estimate converged: valid, consistent, and its drift measured
 * to within HMB_CLOCK_CONVERGED_DRIFT of itself (or HMB_CLOCK_DRIFT_FLOOR)?
 * A consistent estimate holds the truth within its bounds, but one from
 * a short window (what shedding leaves right after an attach) has bounds
 * too wide to be an answer; until they narrow it is still converging.
 */
bool hmb_clock_converged(const struct hmb_clock *c);
/* Is record @seq before the last step (on the previous clock)? */
bool hmb_clock_before_step(const struct hmb_clock *c, uint32_t seq);
/*
 * Is record @seq strictly inside the step's bracket: after the last record
 * the evidence (commands' host windows) puts on the old clock and before
 * the first it puts on the new one?  Such a record's side of the step was
 * chosen by where the firmware times jump, not by that evidence.
 */
bool hmb_clock_in_bracket(const struct hmb_clock *c, uint32_t seq);
/* Offset (host - fw) at firmware time @fw_ns. */
double hmb_clock_offset_at(const struct hmb_clock *c, uint64_t fw_ns);

#ifdef __cplusplus
}
#endif
#endif /* HMBTRACE_CLOCK_H */
