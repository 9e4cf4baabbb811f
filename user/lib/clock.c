// SPDX-License-Identifier: Apache-2.0
/*
 * clock.c - the firmware -> host clock estimate (hmbtrace_clock.h), used by
 * hmb-trace-agent live and by hmb-trace-analyze correlate offline.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "hmbtrace_clock.h"

/* ----------------------------------------------------------------- clock */

int hmb_clock_init(struct hmb_clock *c, size_t cap)
{
	memset(c, 0, sizeof(*c));
	if (cap < 16)
		cap = 16;
	c->pts = calloc(cap, sizeof(*c->pts));
	if (!c->pts)
		return -1;
	c->cap = cap;
	c->min_points = 32;
	return 0;
}

void hmb_clock_free(struct hmb_clock *c)
{
	free(c->pts);
	c->pts = NULL;
}

void hmb_clock_reset(struct hmb_clock *c)
{
	c->n = 0;
	c->first = 0;
	c->valid = false;
	c->streak = 0;
}

double hmb_clock_offset_at(const struct hmb_clock *c, uint64_t fw_ns)
{
	return c->off_ns + c->drift * ((double)fw_ns - c->ref);
}

static bool before_step(const struct hmb_clock *c, uint64_t fw_ns)
{
	return c->have_prev && (int64_t)fw_ns < c->step_t;
}

double hmb_clock_map(const struct hmb_clock *c, uint64_t fw_ns)
{
	if (before_step(c, fw_ns))
		return (double)fw_ns + c->prev_off +
		       c->prev_drift * ((double)fw_ns - c->prev_ref);
	return (double)fw_ns + hmb_clock_offset_at(c, fw_ns);
}

double hmb_clock_err_at(const struct hmb_clock *c, uint64_t fw_ns)
{
	return before_step(c, fw_ns) ? c->prev_err : c->off_err_ns;
}

static struct hmb_clk_pt *pt_at(struct hmb_clock *c, size_t i)
{
	return &c->pts[(c->first + i) % c->cap];
}

static bool refit_ok(struct hmb_clock *c, const struct hmb_clk_pt *p);

void hmb_clock_add(struct hmb_clock *c, uint64_t submit, uint64_t complete,
		   uint64_t fw_fetch, uint64_t fw_cqe)
{
	struct hmb_clk_pt p = {
		.t = (int64_t)fw_fetch,
		.lo = (int64_t)submit - (int64_t)fw_fetch,
		.hi = (int64_t)complete - (int64_t)fw_cqe,
	};

	c->added++;
	if (c->valid) {
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
				 * the firmware clock stepped.  Keep only them
				 * (and the drift, which a step does not
				 * change).
				 */
				size_t keep = c->n - c->streak_start;
				size_t i;

				c->have_prev = true;
				c->prev_off = c->off_ns;
				c->prev_drift = c->drift;
				c->prev_ref = c->ref;
				c->prev_err = c->off_err_ns;
				c->step_t = pt_at(c, c->streak_start)->t;
				for (i = 0; i < keep; i++)
					c->pts[i] = *pt_at(c, c->streak_start + i);
				c->first = 0;
				c->n = keep;
				c->valid = false;
				c->steps++;
				c->streak = 0;
			} else if (c->streak >= 8) {
				c->streak = 0;	/* drift, now in the estimate */
			}
		} else {
			c->streak = 0;
		}
	}
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
 * The trim starts at 0.05 % of the points and doubles, up to 1 %, while the
 * bounds contradict each other: a few misattributed commands (or commands
 * the host saw out of order) must not move the estimate.  Returns the trim.
 */
static size_t intersect(const struct hmb_clk_pt *p, size_t n, double b,
			double tc, double *tmp, double *L, double *U)
{
	size_t i, trim = n / 2000, max_trim = n / 100;

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

bool hmb_clock_solve(struct hmb_clock *c)
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
	}
	c->ref = (double)p[n / 2].t;
	c->trimmed = intersect(p, n, b, c->ref, tmp, &L, &U);
	c->drift = b;
	c->off_ns = (L + U) / 2;
	c->off_err_ns = fabs(U - L) / 2;
	c->consistent = L <= U;
	c->used = n;
	c->valid = true;
	free(p);
	free(tmp);
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
	ok = hmb_clock_solve(&tmp) && tmp.consistent &&
	     tmp.trimmed <= tmp.n / 2000 + 1;
	free(tmp.pts);
	return ok;
}
