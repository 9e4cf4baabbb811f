// SPDX-License-Identifier: Apache-2.0
/*
 * clock.c - the firmware -> host clock estimate (hmbtrace_clock.h).
 * Moved from user/agent/analysis.c (branch bpf), code unchanged.
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

double hmb_clock_map(const struct hmb_clock *c, uint64_t fw_ns)
{
	return (double)fw_ns + hmb_clock_offset_at(c, fw_ns);
}

static struct hmb_clk_pt *pt_at(struct hmb_clock *c, size_t i)
{
	return &c->pts[(c->first + i) % c->cap];
}

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
			if (c->streak >= 8) {
				/*
				 * Eight commands in a row contradict the
				 * estimate by far more than its error: the
				 * firmware clock stepped.  Keep only them.
				 */
				size_t keep = c->n - c->streak_start;
				size_t i;

				for (i = 0; i < keep; i++)
					c->pts[i] = *pt_at(c, c->streak_start + i);
				c->first = 0;
				c->n = keep;
				c->valid = false;
				c->steps++;
				c->streak = 0;
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
	c->drift_err = -1;
	/* Drift only from a window long enough to show it (100 ms). */
	if (tb - ta >= 50e6) {
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
