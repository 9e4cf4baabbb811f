// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * clock.c - the firmware -> host clock estimate (hmbtrace_clock.h), used by
 * hmb-trace-agent live and by hmb-trace-analyze correlate offline.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "hmbtrace_clock.h"
#include "hmbtrace_dict.h"

#define HMB_CLK_RECS	8192	/* recent records kept to place a step */
#define HMB_CLK_LOCAL	8192	/* commands each side measuring a step */

/* ----------------------------------------------------------------- clock */

int hmb_clock_init(struct hmb_clock *c, size_t cap)
{
	memset(c, 0, sizeof(*c));
	if (cap < 16)
		cap = 16;
	c->pts = calloc(cap, sizeof(*c->pts));
	c->recs_cap = HMB_CLK_RECS;
	c->brk_cap = HMB_CLK_RECS;
	c->recs = calloc(c->recs_cap, sizeof(*c->recs));
	c->brk = calloc(c->brk_cap, sizeof(*c->brk));
	c->pre = calloc(HMB_CLK_LOCAL, sizeof(*c->pre));
	c->post = calloc(HMB_CLK_LOCAL, sizeof(*c->post));
	c->late = calloc(HMB_CLK_LOCAL, sizeof(*c->late));
	if (!c->pts || !c->recs || !c->brk || !c->pre || !c->post ||
	    !c->late) {
		hmb_clock_free(c);
		return -1;
	}
	c->cap = cap;
	c->min_points = 32;
	return 0;
}

void hmb_clock_free(struct hmb_clock *c)
{
	free(c->pts);
	free(c->recs);
	free(c->brk);
	free(c->pre);
	free(c->post);
	free(c->late);
	c->pts = NULL;
	c->recs = c->brk = NULL;
	c->pre = c->post = c->late = NULL;
}

void hmb_clock_reset(struct hmb_clock *c)
{
	c->n = 0;
	c->first = 0;
	c->valid = false;
	c->streak = 0;
	c->have_prior = false;	/* only a detected step carries the drift */
}

double hmb_clock_offset_at(const struct hmb_clock *c, uint64_t fw_ns)
{
	return c->off_ns + c->drift * ((double)fw_ns - c->ref);
}

/* Record seqs wrap at 2^32: their order is serial-number arithmetic. */
static int32_t seq_diff(uint32_t a, uint32_t b)
{
	return (int32_t)(a - b);
}

bool hmb_clock_before_step(const struct hmb_clock *c, uint32_t seq)
{
	return c->have_prev && seq_diff(seq, c->step_seq) < 0;
}

bool hmb_clock_in_bracket(const struct hmb_clock *c, uint32_t seq)
{
	return c->have_prev && c->brk_on && seq_diff(seq, c->brk_lo) > 0 &&
	       seq_diff(seq, c->brk_hi) < 0;
}

double hmb_clock_map(const struct hmb_clock *c, uint64_t fw_ns, uint32_t seq)
{
	if (hmb_clock_before_step(c, seq))
		return (double)fw_ns + c->prev_off +
		       c->prev_drift * ((double)fw_ns - c->prev_ref);
	return (double)fw_ns + hmb_clock_offset_at(c, fw_ns);
}

double hmb_clock_err_at(const struct hmb_clock *c, uint32_t seq)
{
	return hmb_clock_before_step(c, seq) ? c->prev_err :
	       c->off_err_ns + c->drift_slack_ns;
}

bool hmb_clock_converged(const struct hmb_clock *c)
{
	double lim = fabs(c->drift) * HMB_CLOCK_CONVERGED_DRIFT;

	if (lim < HMB_CLOCK_DRIFT_FLOOR)
		lim = HMB_CLOCK_DRIFT_FLOOR;
	return c->valid && c->consistent && c->have_drift &&
	       c->drift_err >= 0 && c->drift_err <= lim;
}

static struct hmb_clk_pt *pt_at(struct hmb_clock *c, size_t i)
{
	return &c->pts[(c->first + i) % c->cap];
}

static bool refit_ok(struct hmb_clock *c, const struct hmb_clk_pt *p);

static int cmp_rec(const void *a, const void *b)
{
	int32_t d = seq_diff(((const struct hmb_clk_rec *)a)->seq,
			     ((const struct hmb_clk_rec *)b)->seq);

	return d < 0 ? -1 : d > 0;
}

/* Is record @seq between the records known old and known new? */
static bool in_brk(const struct hmb_clock *c, uint32_t seq)
{
	return seq_diff(seq, c->brk_lo) >= 0 && seq_diff(seq, c->brk_hi) <= 0;
}

static void brk_add(struct hmb_clock *c, uint32_t seq, int64_t ts,
		    unsigned int phase)
{
	if (c->brk_on && in_brk(c, seq) && c->brk_n < c->brk_cap) {
		c->brk[c->brk_n].seq = seq;
		c->brk[c->brk_n].phase = (uint8_t)phase;
		c->brk[c->brk_n].ts = ts;
		c->brk_n++;
	}
}

void hmb_clock_note_phase(struct hmb_clock *c, uint32_t seq, uint64_t fw_ns,
			  unsigned int phase)
{
	if (phase >= HMB_PHASE_COUNT)
		phase = HMB_CLK_PHASE_ANY;
	c->recs[c->recs_head].seq = seq;
	c->recs[c->recs_head].phase = (uint8_t)phase;
	c->recs[c->recs_head].ts = (int64_t)fw_ns;
	c->recs_head = (c->recs_head + 1) % c->recs_cap;
	if (c->recs_n < c->recs_cap)
		c->recs_n++;
	brk_add(c, seq, (int64_t)fw_ns, phase);
}

void hmb_clock_note(struct hmb_clock *c, uint32_t seq, uint64_t fw_ns)
{
	hmb_clock_note_phase(c, seq, fw_ns, HMB_CLK_PHASE_ANY);
}

/*
 * The gaps between records where there is no step: the firmware time from
 * one record to the next in seq order among the recent records, by kind
 * (the two records' phases; a kind of its own for all of them).
 */
#define GAP_KINDS	64	/* 8 x 8 phases, HMB_CLK_PHASE_ANY as 7 */
#define GAP_ALL		GAP_KINDS
#define GAP_MIN		16	/* gaps of a kind to judge a gap by them */

struct gaps {
	double *v;			/* each kind's gaps, sorted */
	size_t off[GAP_KINDS + 2];	/* kind k: v[off[k] .. off[k + 1]) */
};

static unsigned int gap_kind(unsigned int a, unsigned int b)
{
	return (a < 7 ? a : 7) * 8 + (b < 7 ? b : 7);
}

static int cmp_dbl(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static bool gaps_build(const struct hmb_clock *c, struct gaps *g)
{
	struct hmb_clk_rec *r = malloc((c->recs_n ? c->recs_n : 1) * sizeof(*r));
	size_t cnt[GAP_KINDS + 1] = { 0 }, at[GAP_KINDS + 1], i, n = 0;

	g->v = r && c->recs_n > 1 ?
	       malloc(2 * (c->recs_n - 1) * sizeof(*g->v)) : NULL;
	if (!g->v) {
		free(r);
		return false;
	}
	memcpy(r, c->recs, c->recs_n * sizeof(*r));
	qsort(r, c->recs_n, sizeof(*r), cmp_rec);
	for (i = 0; i < c->recs_n; i++)
		if (!n || r[i].seq != r[n - 1].seq)
			r[n++] = r[i];
	for (i = 1; i < n; i++)
		cnt[gap_kind(r[i - 1].phase, r[i].phase)]++;
	cnt[GAP_ALL] = n - 1;
	g->off[0] = 0;
	for (i = 0; i <= GAP_KINDS; i++) {
		g->off[i + 1] = g->off[i] + cnt[i];
		at[i] = g->off[i];
	}
	for (i = 1; i < n; i++) {
		double d = (double)(r[i].ts - r[i - 1].ts);

		g->v[at[gap_kind(r[i - 1].phase, r[i].phase)]++] = d;
		g->v[at[GAP_ALL]++] = d;
	}
	for (i = 0; i <= GAP_KINDS; i++)
		qsort(g->v + g->off[i], cnt[i], sizeof(*g->v), cmp_dbl);
	free(r);
	return n > 4 * GAP_MIN;
}

/* Gaps in sorted @v[0..n) below @x (or, with @le, at most @x). */
static size_t count_below(const double *v, size_t n, double x, bool le)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (le ? v[mid] <= x : v[mid] < x)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/*
 * How ordinary a gap of @x (give or take @e) is among the gaps of kind @k
 * (all of them when the kind has few): the smaller of its two tails, at
 * least 1 / (n + 1).
 */
static double gap_typ(const struct gaps *g, unsigned int k, double x, double e)
{
	const double *v;
	size_t n, le, ge;

	if (g->off[k + 1] - g->off[k] < GAP_MIN)
		k = GAP_ALL;
	v = g->v + g->off[k];
	n = g->off[k + 1] - g->off[k];
	le = count_below(v, n, x + e, true);
	ge = n - count_below(v, n, x - e, false);
	return (double)((le < ge ? le : ge) + 1) / (double)(n + 1);
}

/*
 * The step is between two of the records from the last known old to the
 * first known new, in seq order: where the firmware time jumps by the
 * step's size (ahead for a forward step, back for a backward one) plus
 * the gap the records would have had.  Before the size is measured: the
 * furthest jump.  Once it is, among the jumps of at least the size: the
 * one whose gap without the step (the jump less the size) is the most
 * ordinary for its kind of gap, against its gap as it stands — the
 * likelihood that the step is in it.  Under load those gaps are small and
 * this is the jump closest to the size; at a queue whose commands come in
 * bursts (the HMB model under TCG) the pauses between bursts can be as
 * long as the step, and the one that holds it is told by what is left of
 * it: a pause of the usual length, where a pause of the step's size alone
 * would leave one far shorter than any between bursts.  Without enough
 * gaps to go by: the jump closest to the size.
 */
static void locate_step(struct hmb_clock *c)
{
	size_t i, n = 0, best = 0;
	double want = c->step_known ? fabs(c->step_ns) : 0, tol, e, score = 0;
	double close = 0;
	struct gaps g = { 0 };
	bool by_gaps;

	c->brk_used = c->brk_n;
	c->step_seq = c->brk_hi;
	if (c->brk_n < 2)
		return;
	qsort(c->brk, c->brk_n, sizeof(*c->brk), cmp_rec);
	for (i = 0; i < c->brk_n; i++) {	/* a record noted twice counts once */
		if (!n || c->brk[i].seq != c->brk[n - 1].seq)
			c->brk[n++] = c->brk[i];
		else if (c->brk[n - 1].phase == HMB_CLK_PHASE_ANY)
			c->brk[n - 1].phase = c->brk[i].phase;
	}
	c->brk_n = c->brk_used = n;
	e = c->step_err_ns + c->off_err_ns;
	if (e < 5000)
		e = 5000;
	tol = 4 * e;
	by_gaps = want && gaps_build(c, &g);
	for (int pass = 0; pass < 2 && !best; pass++)
		for (i = 1; i < n; i++) {
			double d = (double)(c->brk[i].ts - c->brk[i - 1].ts);
			double dd = c->brk_fwd ? d : -d, sc, cl;

			if (pass == 0) {
				if (!want || dd < want - tol)
					continue;
				cl = fabs(dd - want);
				sc = -cl;
				if (by_gaps) {
					unsigned int k = gap_kind(c->brk[i - 1].phase,
								  c->brk[i].phase);

					sc = gap_typ(&g, k, c->brk_fwd ? d - want : d + want, e) /
					     gap_typ(&g, k, d, 0);
				}
			} else {
				sc = dd;
				cl = 0;
			}
			if (!best || sc > score || (sc == score && cl < close)) {
				score = sc;
				close = cl;
				best = i;
			}
		}
	free(g.v);
	if (best) {
		c->step_seq = c->brk[best].seq;
		c->step_t = c->brk[best].ts;
	}
}

/* Bounds of host - fw of a point, detrended to the estimate's ref. */
static double lo_d(const struct hmb_clock *c, const struct hmb_clk_pt *q)
{
	return (double)q->lo - c->drift * ((double)q->t - c->ref);
}

static double hi_d(const struct hmb_clock *c, const struct hmb_clk_pt *q)
{
	return (double)q->hi - c->drift * ((double)q->tc - c->ref);
}

#define STEP_LOOK_BACK	1024	/* window points searched for the step */
#define STEP_MIN_USED	512	/* an estimate on fewer sees no step */
#define STEP_SLACK_NS	2000.0

/*
 * The streak [streak_start, n) and @p contradict the estimate: between
 * which two records did the clock step?  A forward step (firmware time
 * jumped ahead: host - fw fell) shows in the completions: a cqe_posted
 * record whose bound hi lies below the estimate is on the new clock.  The
 * lowest hi of those bounds the new offset from above, so a fetch whose lo
 * lies above it is on the old clock.  (A backward step: the same with lo
 * and hi, fetch and cqe_posted, exchanged.)  The step lies between the
 * last record known old and the first known new; locate_step finds it
 * among the records in between, now and again as more of them arrive.
 */
static void find_step(struct hmb_clock *c, const struct hmb_clk_pt *p,
		      bool fwd, double tol)
{
	size_t from = c->streak_start > STEP_LOOK_BACK ?
		      c->streak_start - STEP_LOOK_BACK : 0;
	size_t np = c->n - from + 1, i;
	double bound = fwd ? INFINITY : -INFINITY;
	bool have_post = false, have_pre = false;
	uint32_t min_post = p->sf, max_pre = 0;

	for (i = 0; i < np; i++) {
		const struct hmb_clk_pt *q = i + from < c->n ?
			pt_at(c, i + from) : p;
		double pred = hmb_clock_offset_at(c, (uint64_t)q->t);
		uint32_t s = fwd ? q->sc : q->sf;

		if (i + from < c->streak_start)
			continue;
		if (fwd ? (double)q->hi < pred - tol : (double)q->lo > pred + tol) {
			if (!have_post || seq_diff(s, min_post) < 0)
				min_post = s;
			have_post = true;
			if (fwd && hi_d(c, q) < bound)
				bound = hi_d(c, q);
			if (!fwd && lo_d(c, q) > bound)
				bound = lo_d(c, q);
		}
	}
	for (i = 0; have_post && i < np; i++) {
		const struct hmb_clk_pt *q = i + from < c->n ?
			pt_at(c, i + from) : p;
		uint32_t s = fwd ? q->sf : q->sc;

		if (seq_diff(s, min_post) >= 0)
			continue;
		if (fwd ? lo_d(c, q) > bound + STEP_SLACK_NS :
			  hi_d(c, q) < bound - STEP_SLACK_NS) {
			if (!have_pre || seq_diff(s, max_pre) > 0)
				max_pre = s;
			have_pre = true;
		}
	}
	c->brk_on = true;
	c->brk_fwd = fwd;
	c->brk_hi = min_post;
	/* nothing known old: as far back as the recent records go */
	c->brk_lo = have_pre ? max_pre : min_post - (uint32_t)(1u << 24);
	c->brk_n = 0;
	c->step_t = p->t;
	for (i = 0; i < c->recs_n; i++)
		brk_add(c, c->recs[i].seq, c->recs[i].ts, c->recs[i].phase);
	for (i = 0; i < np; i++) {
		const struct hmb_clk_pt *q = i + from < c->n ?
			pt_at(c, i + from) : p;

		brk_add(c, q->sf, q->t, HMB_PHASE_FETCH);
		brk_add(c, q->sc, q->tc, HMB_PHASE_CQE_POSTED);
	}
	locate_step(c);
}

void hmb_clock_add(struct hmb_clock *c, uint64_t submit, uint64_t complete,
		   uint64_t fw_fetch, uint64_t fw_cqe, uint32_t seq_fetch,
		   uint32_t seq_cqe)
{
	struct hmb_clk_pt p = {
		.t = (int64_t)fw_fetch,
		.lo = (int64_t)submit - (int64_t)fw_fetch,
		.hi = (int64_t)complete - (int64_t)fw_cqe,
		.tc = (int64_t)fw_cqe,
		.sf = seq_fetch,
		.sc = seq_cqe,
	};

	c->added++;
	brk_add(c, seq_fetch, p.t, HMB_PHASE_FETCH);
	brk_add(c, seq_cqe, p.tc, HMB_PHASE_CQE_POSTED);
	if (c->have_prev) {
		/*
		 * A command with a record before the last step (one that
		 * straddles it, or finished late) fits neither clock.  Long
		 * after the step none can come any more: forget it, before
		 * the seqs wrap round.
		 */
		if (hmb_clock_before_step(c, seq_fetch)) {
			c->skipped_before_step++;
			if (c->late_n < HMB_CLK_LOCAL)
				c->late[c->late_n++] = p;
			return;
		}
		if (seq_diff(seq_fetch, c->step_seq) > (1 << 28))
			c->have_prev = false;
	}
	/*
	 * Only an estimate whose window agrees, on enough commands, can be
	 * contradicted by a step: one that does not (the agent attached
	 * while commands were in flight, and the join paired some with
	 * their predecessors' records, a queue's worth in a row) is
	 * converging, and so is one that agrees only on what shedding left
	 * of such pairs (a few dozen, all of one stale lag); dropping its
	 * older commands, not a step, is what brings it back.
	 */
	if (c->valid && c->consistent && c->used >= STEP_MIN_USED) {
		double pred = hmb_clock_offset_at(c, fw_fetch);
		double tol = 4 * c->off_err_ns;

		if (tol < 20000)
			tol = 20000;
		if (p.lo > pred + tol || p.hi < pred - tol) {
			if (c->streak++ == 0)
				c->streak_start = c->n;
			if (c->streak >= 8 && !refit_ok(c, &p)) {
				/*
				 * Eight commands in a row contradict the
				 * estimate by far more than its error, and no
				 * line fits them together with the window:
				 * the firmware clock stepped.  Find the
				 * record it stepped at; keep only the
				 * commands wholly after it (and the drift,
				 * which a step does not change).
				 */
				size_t keep = 0, i;

				c->pre_n = c->streak_start < HMB_CLK_LOCAL ?
					   c->streak_start : HMB_CLK_LOCAL;
				for (i = 0; i < c->pre_n; i++)
					c->pre[i] = *pt_at(c, c->streak_start -
							     c->pre_n + i);
				c->step_known = false;
				c->late_n = 0;
				find_step(c, &p, p.hi < pred - tol, tol);
				c->have_prev = true;
				c->have_prior = c->have_drift &&
						c->drift_err > 0;
				c->prior_err = c->drift_err;
				c->prev_off = c->off_ns;
				c->prev_drift = c->drift;
				c->prev_ref = c->ref;
				c->prev_err = c->off_err_ns;
				c->post_n = 0;
				for (i = c->streak_start; i < c->n; i++) {
					struct hmb_clk_pt q = *pt_at(c, i);

					if (hmb_clock_before_step(c, q.sf)) {
						c->skipped_before_step++;
					} else {
						c->pts[keep++] = q;
						if (c->post_n < HMB_CLK_LOCAL)
							c->post[c->post_n++] = q;
					}
				}
				c->first = 0;
				c->n = keep;
				c->valid = false;
				c->steps++;
				c->streak = 0;
				if (hmb_clock_before_step(c, p.sf)) {
					c->skipped_before_step++;
					return;
				}
			} else if (c->streak >= 8) {
				c->streak = 0;	/* drift, now in the estimate */
			}
		} else {
			c->streak = 0;
		}
	}
	if (c->have_prev && c->post_n < HMB_CLK_LOCAL)
		c->post[c->post_n++] = p;
	if (c->n == c->cap) {
		c->first = (c->first + 1) % c->cap;
		c->n--;
		if (c->streak && c->streak_start)
			c->streak_start--;
	}
	*pt_at(c, c->n) = p;
	c->n++;
}

static void swap_d(double *a, double *b)
{
	double t = *a;

	*a = *b;
	*b = t;
}

/* k-th smallest (0-based) of v[0..n), reordering v. */
static double kth_smallest(double *v, size_t n, size_t k)
{
	size_t lo = 0, hi = n - 1;

	while (lo < hi) {
		double pivot = v[lo + (hi - lo) / 2];
		size_t i = lo, j = hi;

		while (i <= j) {
			while (v[i] < pivot)
				i++;
			while (v[j] > pivot)
				j--;
			if (i <= j) {
				swap_d(&v[i], &v[j]);
				i++;
				if (j == 0)
					break;
				j--;
			}
		}
		if (k <= j)
			hi = j;
		else if (k >= i)
			lo = i;
		else
			break;
	}
	return v[k];
}

static int cmp_pt(const void *a, const void *b)
{
	const struct hmb_clk_pt *x = a, *y = b;

	return x->t < y->t ? -1 : x->t > y->t;
}

/*
 * Intersection of the detrended intervals of @p[0..n) at time @tc: the
 * (trim+1)-th largest lower bound and the (trim+1)-th smallest upper bound.
 * The trim starts at 0.05 % of the points and doubles, up to 1 % (one
 * point in a window of 32 to 199: else a single misattributed command in a
 * short window, a streamed join's or the first after attach, would widen
 * its estimate's bound until it fits), while the bounds contradict each
 * other: a few misattributed commands (or commands the host saw out of
 * order) must not move the estimate.  Returns the trim.
 */
static size_t intersect(const struct hmb_clk_pt *p, size_t n, double b,
			double tc, double *tmp, double *L, double *U)
{
	size_t i, trim = n / 2000;
	size_t max_trim = n >= 32 && n < 200 ? 1 : n / 100;

	for (;;) {
		for (i = 0; i < n; i++)
			tmp[i] = (double)p[i].lo - b * ((double)p[i].t - tc);
		*L = kth_smallest(tmp, n, n - 1 - trim);
		for (i = 0; i < n; i++)
			tmp[i] = (double)p[i].hi - b * ((double)p[i].t - tc);
		*U = kth_smallest(tmp, n, trim);
		if (*L <= *U || trim >= max_trim)
			return trim;
		trim = trim ? trim * 2 : 1;
		if (trim > max_trim)
			trim = max_trim;
	}
}

static double mean_t(const struct hmb_clk_pt *p, size_t n)
{
	double s = 0;
	size_t i;

	for (i = 0; i < n; i++)
		s += (double)(p[i].t - p[0].t);
	return (double)p[0].t + s / (double)n;
}

static void measure_step(struct hmb_clock *c);
static bool refine_brk(struct hmb_clock *c);

/*
 * The window's drift @b (bound c->drift_err) and the one from before the
 * last step, weighted by the inverse squares of their bounds: right after
 * a step the window spans a second or so and its drift is several times
 * less sure than the one before (agent-e2e under TCG: -175 ppm from 1.3 s
 * after the step where 5 s before it gave -186).  Once the window's bound
 * is under a third of the prior's (the prior weighs under 10 %), the
 * window alone decides from then on, so that a drift that really changes
 * is followed.
 */
static void combine_prior(struct hmb_clock *c, double *b)
{
	double wn, wp;

	if (!c->have_prior || !(c->drift_err > 0))
		return;
	if (3 * c->drift_err < c->prior_err) {
		c->have_prior = false;
		return;
	}
	wn = 1 / (c->drift_err * c->drift_err);
	wp = 1 / (c->prior_err * c->prior_err);
	*b = (*b * wn + c->prev_drift * wp) / (wn + wp);
	c->drift_err = 1 / sqrt(wn + wp);
}

static bool solve_once(struct hmb_clock *c)
{
	struct hmb_clk_pt *p;
	double *tmp, b = 0, L, U, ta, tb;
	size_t i, n = c->n, na;
	int it;

	if (n < c->min_points) {
		c->valid = false;
		return false;
	}
	p = malloc(n * sizeof(*p));
	tmp = malloc(n * sizeof(*tmp));
	if (!p || !tmp) {
		free(p);
		free(tmp);
		return c->valid;
	}
	for (i = 0; i < n; i++)
		p[i] = *pt_at(c, i);
	qsort(p, n, sizeof(*p), cmp_pt);
	na = n / 2;
	ta = mean_t(p, na);
	tb = mean_t(p + na, n - na);
	/*
	 * Drift only from a window long enough to show it: at first 100 ms
	 * and 64 commands; once there is one, 1 s and 512 commands, and
	 * until then the last one stays (a step leaves the drift alone, and
	 * the short window right after a step would give a wild one).
	 */
	b = c->have_drift ? c->drift : 0;
	if (!c->have_drift)
		c->drift_err = -1;
	if (c->have_drift ? (tb - ta >= 500e6 && n >= 512) :
			    (tb - ta >= 50e6 && n >= 64)) {
		double wa = 0, wb = 0;

		for (it = 0; it < 6; it++) {
			double La, Ua, Lb, Ub;

			/*
			 * Each half's midpoint estimates the offset at its
			 * mean time whatever b is; b only detrends the
			 * points inside a half, which narrows its interval.
			 */
			intersect(p, na, b, ta, tmp, &La, &Ua);
			intersect(p + na, n - na, b, tb, tmp, &Lb, &Ub);
			b = ((Lb + Ub) / 2 - (La + Ua) / 2) / (tb - ta);
			wa = fabs(Ua - La);
			wb = fabs(Ub - Lb);
		}
		c->drift_err = (wa / 2 + wb / 2) / (tb - ta);
		c->have_drift = true;
		combine_prior(c, &b);
	}
	c->ref = (double)p[n / 2].t;
	c->trimmed = intersect(p, n, b, c->ref, tmp, &L, &U);
	c->drift = b;
	c->off_ns = (L + U) / 2;
	c->off_err_ns = fabs(U - L) / 2;
	/*
	 * Without a drift the intersection bounds the offset at ref only if
	 * the clocks run at one rate; they may not, by as much as an
	 * oscillator's tolerance, so the bound covers what that drift
	 * moves the offset across the window (hmb_clock_err_at; the step
	 * search keeps the intersection's own bound).
	 */
	c->drift_slack_ns = (c->drift_err < 0 ? HMB_CLOCK_DRIFT_MAX :
						c->drift_err) *
			    fmax(c->ref - (double)p[0].t,
				 (double)p[n - 1].t - c->ref);
	c->consistent = L <= U;
	c->used = n;
	c->valid = true;
	free(p);
	free(tmp);
	if (c->have_prev) {
		double was = c->step_ns;

		measure_step(c);
		/* more of the records around it, or a better idea of its size */
		if (c->brk_on && (refine_brk(c) || c->brk_n != c->brk_used ||
				  fabs(c->step_ns - was) > 1000)) {
			locate_step(c);
			measure_step(c);
		}
	}
	return true;
}

/*
 * Live (shed_old): a window whose bounds contradict each other beyond
 * what the trim absorbs, with no step being placed, holds commands the
 * join paired wrongly (the agent attached while commands were in flight)
 * or a clock that moved: the newest commands decide, so the older half
 * goes, until the rest agrees or is too short to say (then not
 * consistent: still converging).
 */
bool hmb_clock_solve(struct hmb_clock *c)
{
	bool ok = solve_once(c), redrift = true;

	while (c->shed_old && ok && !c->consistent && !c->have_prev &&
	       !c->brk_on && c->n >= 2 * c->min_points) {
		size_t k = c->n / 2;

		if (c->have_drift && redrift) {
			redrift = false;
			/*
			 * First the drift: one from a window that held wrong
			 * pairs, or too short, tilts a longer one out of
			 * agreement; this window gives its own.
			 */
			c->have_drift = false;
			ok = solve_once(c);
			continue;
		}
		c->first = (c->first + k) % c->cap;
		c->n -= k;
		c->streak = 0;
		c->shed += k;
		ok = solve_once(c);
	}
	return ok;
}

/*
 * The step's size at its firmware time: the offset of the first commands
 * after it minus that of the last ones before it, both with the current
 * drift (the same kind of load on both sides, so the bias of each
 * offset, from the unequal host latencies before fetch and after
 * cqe_posted, cancels); the whole estimates when either side is short.
 */
static bool local_off(const struct hmb_clock *c, const struct hmb_clk_pt *q,
		      size_t n, bool before, double *off, double *err)
{
	double *tmp, L, U;
	struct hmb_clk_pt *v;
	size_t i, m = 0;

	v = malloc((n ? n : 1) * sizeof(*v));
	tmp = malloc((n ? n : 1) * sizeof(*tmp));
	if (!v || !tmp) {
		free(v);
		free(tmp);
		return false;
	}
	/* only commands wholly on their side of the step */
	for (i = 0; i < n; i++)
		if (before ? seq_diff(q[i].sc, c->step_seq) < 0 :
			     seq_diff(q[i].sf, c->step_seq) >= 0)
			v[m++] = q[i];
	if (m >= 32) {
		double far = 0;

		intersect(v, m, c->drift, (double)c->step_t, tmp, &L, &U);
		*off = (L + U) / 2;
		/*
		 * The intersection bounds the offset only for the drift it
		 * detrends with; the drift's own uncertainty moves each point
		 * in proportion to its distance from the step (a side spans
		 * up to HMB_CLK_LOCAL commands: half a second at QD32).
		 */
		for (i = 0; i < m; i++)
			far = fmax(far, fabs((double)v[i].t - (double)c->step_t));
		*err = fabs(U - L) / 2 +
		       (c->drift_err < 0 ? HMB_CLOCK_DRIFT_MAX : c->drift_err) * far;
	}
	free(v);
	free(tmp);
	return m >= 32;
}

static void measure_step(struct hmb_clock *c)
{
	double a, ea, b, eb;

	if (local_off(c, c->pre, c->pre_n, true, &a, &ea) &&
	    local_off(c, c->post, c->post_n, false, &b, &eb)) {
		c->step_ns = b - a;
		c->step_err_ns = ea + eb;
	} else {
		c->step_ns = hmb_clock_offset_at(c, (uint64_t)c->step_t) -
			     (c->prev_off + c->prev_drift *
			      ((double)c->step_t - c->prev_ref));
		c->step_err_ns = c->off_err_ns + c->prev_err;
	}
	c->step_known = true;
}

/*
 * With both estimates known, every command around the step says more:
 * for a forward step, a fetch whose bound lies above the new offset is on
 * the old clock and a cqe_posted whose bound lies below the old offset is
 * on the new one (backward: the other way round).  Narrow the bracket of
 * the step's record to the last such old and first such new record, among
 * the commands kept from both sides of the step and those left out after
 * it.  Returns whether it narrowed.
 */
static void brk_narrow(struct hmb_clock *c, uint32_t seq, bool old, bool *moved)
{
	if (!in_brk(c, seq))
		return;
	if (old && seq != c->brk_hi && seq_diff(seq, c->brk_lo) > 0) {
		c->brk_lo = seq;
		*moved = true;
	} else if (!old && seq != c->brk_lo && seq_diff(seq, c->brk_hi) < 0) {
		c->brk_hi = seq;
		*moved = true;
	}
}

static bool refine_brk(struct hmb_clock *c)
{
	const struct hmb_clk_pt *set[3] = { c->pre, c->post, c->late };
	const size_t nset[3] = { c->pre_n, c->post_n, c->late_n };
	double tol = 4 * (c->off_err_ns + c->prev_err);
	bool moved = false;
	size_t i, k, n;

	if (tol < 20000)
		tol = 20000;
	for (k = 0; k < 3; k++)
		for (i = 0; i < nset[k]; i++) {
			const struct hmb_clk_pt *q = &set[k][i];
			double oldo = c->prev_off + c->prev_drift *
				      ((double)q->t - c->prev_ref);
			double newo = hmb_clock_offset_at(c, (uint64_t)q->t);

			if (c->brk_fwd) {
				if ((double)q->lo > newo + tol)
					brk_narrow(c, q->sf, true, &moved);
				if ((double)q->hi < oldo - tol)
					brk_narrow(c, q->sc, false, &moved);
			} else {
				if ((double)q->lo > oldo + tol)
					brk_narrow(c, q->sf, false, &moved);
				if ((double)q->hi < newo - tol)
					brk_narrow(c, q->sc, true, &moved);
			}
		}
	if (!moved)
		return false;
	for (i = n = 0; i < c->brk_n; i++)	/* what is left in the bracket */
		if (in_brk(c, c->brk[i].seq))
			c->brk[n++] = c->brk[i];
	c->brk_n = n;
	return true;
}

/*
 * After a streak of contradicting commands: does the whole window, the new
 * point included, still fit one line (a drift the estimate had not caught
 * up with)?  Then it is no step.
 */
static bool refit_ok(struct hmb_clock *c, const struct hmb_clk_pt *p)
{
	struct hmb_clock tmp = *c;
	bool ok;

	tmp.pts = malloc((c->n + 1) * sizeof(*tmp.pts));
	if (!tmp.pts)
		return false;
	for (size_t i = 0; i < c->n; i++)
		tmp.pts[i] = *pt_at(c, i);
	tmp.pts[c->n] = *p;
	tmp.n = c->n + 1;
	tmp.first = 0;
	tmp.cap = c->n + 1;
	tmp.have_drift = false;	/* fit the drift afresh */
	tmp.have_prior = false;
	tmp.brk_on = false;	/* leave the step's records alone */
	tmp.have_prev = false;
	ok = hmb_clock_solve(&tmp) && tmp.consistent &&
	     tmp.trimmed <= tmp.n / 2000 + 1;
	free(tmp.pts);
	return ok;
}
