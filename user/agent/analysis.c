// SPDX-License-Identifier: GPL-2.0
/*
 * analysis.c - per-command breakdown, top-N, background windows and
 * histograms of hmb-trace-agent (see analysis.h); the clock estimate is
 * libhmbtrace's (hmbtrace_clock.h).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "analysis.h"

/* ------------------------------------------------------------ histograms */

void hmb_hist_add(struct hmb_log2_hist *h, uint64_t ns)
{
	uint64_t us = ns / 1000;
	unsigned int slot = 0;

	while (us > 1 && slot < HMB_MAX_SLOTS - 1) {
		us >>= 1;
		slot++;
	}
	h->slots[slot]++;
}

uint64_t hmb_hist_total(const struct hmb_log2_hist *h)
{
	uint64_t t = 0;
	int i;

	for (i = 0; i < HMB_MAX_SLOTS; i++)
		t += h->slots[i];
	return t;
}

void hmb_hist_print(FILE *f, const struct hmb_log2_hist *h, const char *title)
{
	uint64_t max = 0;
	int i, last = -1;

	for (i = 0; i < HMB_MAX_SLOTS; i++) {
		if (h->slots[i])
			last = i;
		if (h->slots[i] > max)
			max = h->slots[i];
	}
	fprintf(f, "\n%s\n", title);
	if (last < 0) {
		fprintf(f, "     (no samples)\n");
		return;
	}
	fprintf(f, "%*s%-*s : count    distribution\n", 5, "", 19, "usecs");
	for (i = 0; i <= last; i++) {
		uint64_t lo = i ? 1ULL << i : 0, hi = (1ULL << (i + 1)) - 1;
		int stars = max ? (int)(h->slots[i] * 40 / max) : 0;
		char bar[41];

		memset(bar, '*', (size_t)stars);
		memset(bar + stars, ' ', (size_t)(40 - stars));
		bar[40] = 0;
		fprintf(f, "%*llu -> %-*llu : %-8llu |%s|\n", 10,
			(unsigned long long)lo, 10, (unsigned long long)hi,
			(unsigned long long)h->slots[i], bar);
	}
}

void hmb_hist_json(FILE *f, const struct hmb_log2_hist *h)
{
	int i, last = -1;

	for (i = 0; i < HMB_MAX_SLOTS; i++)
		if (h->slots[i])
			last = i;
	fputc('[', f);
	for (i = 0; i <= last; i++)
		fprintf(f, "%s{\"lo_us\":%llu,\"hi_us\":%llu,\"count\":%llu}",
			i ? "," : "", (unsigned long long)(i ? 1ULL << i : 0),
			(unsigned long long)((1ULL << (i + 1)) - 1),
			(unsigned long long)h->slots[i]);
	fputc(']', f);
}

/* -------------------------------------------------------------- analysis */

int hmb_analysis_init(struct hmb_analysis *a, const struct hmb_analysis_opts *o)
{
	memset(a, 0, sizeof(*a));
	a->o = *o;
	if (hmb_clock_init(&a->clk, o->clock_window ? o->clock_window : 65536))
		return -1;
	if (o->clock_min_points)
		a->clk.min_points = o->clock_min_points;
	a->cap_pending = 65536;
	a->pending = calloc(a->cap_pending, sizeof(*a->pending));
	a->top_iv = calloc(o->top_n + 1, sizeof(*a->top_iv));
	a->top_all = calloc(o->top_n + 1, sizeof(*a->top_all));
	if (!a->pending || !a->top_iv || !a->top_all) {
		hmb_analysis_free(a);
		return -1;
	}
	return 0;
}

void hmb_analysis_free(struct hmb_analysis *a)
{
	hmb_clock_free(&a->clk);
	free(a->pending);
	free(a->top_iv);
	free(a->top_all);
	a->pending = NULL;
	a->top_iv = a->top_all = NULL;
}

static void top_insert(struct hmb_cmd *top, unsigned int *n, unsigned int max,
		       const struct hmb_cmd *c)
{
	unsigned int i;

	if (!max)
		return;
	if (*n == max && top[max - 1].x[HMB_X_HOST_TOTAL] >=
			 c->x[HMB_X_HOST_TOTAL])
		return;
	i = *n < max ? (*n)++ : max - 1;
	while (i > 0 && top[i - 1].x[HMB_X_HOST_TOTAL] <
			c->x[HMB_X_HOST_TOTAL]) {
		top[i] = top[i - 1];
		i--;
	}
	top[i] = *c;
}

static void add_tot(struct hmb_totals *t, const struct hmb_cmd *c)
{
	uint32_t fl = c->ev.st.flags;

	t->cmds++;
	switch (c->match) {
	case HMB_M_HOST_ONLY: t->host_only++; break;
	case HMB_M_MATCHED: t->matched++; break;
	case HMB_M_PARTIAL: t->partial++; break;
	case HMB_M_UNMATCHED: t->unmatched++; break;
	}
	if (c->placed) {
		t->placed++;
		if (c->in_window)
			t->in_window++;
		if (c->in_window_err)
			t->in_window_err++;
		else
			t->outside_window++;
	}
	t->reused += !!(fl & HMB_CF_REUSED);
	t->swept += !!(fl & HMB_CF_SWEPT);
	t->no_room += !!(fl & HMB_CF_NO_ROOM);
	t->no_complete += !!(fl & HMB_CF_NO_COMPLETE);
}

static void process(struct hmb_analysis *a, const struct hmb_cmd_event *ev,
		    enum hmb_match m)
{
	const struct hmb_cmd_state *st = &ev->st;
	struct hmb_cmd c = { .ev = *ev, .match = m };
	int i;

	for (i = 0; i < HMB_X_COUNT; i++)
		c.x[i] = -1;
	if (st->complete_ns && st->complete_ns >= st->submit_ns)
		c.x[HMB_X_HOST_TOTAL] = (int64_t)(st->complete_ns - st->submit_ns);
	if (m == HMB_M_MATCHED &&
	    st->fw_ts[HMB_PH_CQE_POSTED] >= st->fw_ts[HMB_PH_FETCH])
		c.x[HMB_X_FW_TOTAL] = (int64_t)(st->fw_ts[HMB_PH_CQE_POSTED] -
						st->fw_ts[HMB_PH_FETCH]);
	if ((m == HMB_M_MATCHED || m == HMB_M_PARTIAL) && a->clk.valid &&
	    st->complete_ns) {
		double lo = (double)st->submit_ns, hi = (double)st->complete_ns;
		bool in = true, in_err = true;

		c.placed = true;
		for (i = HMB_PH_FETCH; i < HMB_PH_COUNT; i++) {
			double h, err;

			if (!(st->fw_mask & (1 << i)))
				continue;
			/* by record: a command may straddle a clock step */
			h = hmb_clock_map(&a->clk, st->fw_ts[i], st->fw_seq[i]);
			err = hmb_clock_err_at(&a->clk, st->fw_seq[i]);
			if (h < lo || h > hi)
				in = false;
			if (h < lo - err || h > hi + err)
				in_err = false;
		}
		c.in_window = in;
		c.in_window_err = in_err;
		if (st->fw_mask & (1 << HMB_PH_FETCH)) {
			double d = hmb_clock_map(&a->clk, st->fw_ts[HMB_PH_FETCH],
						 st->fw_seq[HMB_PH_FETCH]) - lo;

			c.x[HMB_X_SUBMIT_TO_FETCH] = d < 0 ? -1 : (int64_t)d;
		}
		if (st->fw_mask & (1 << HMB_PH_CQE_POSTED)) {
			double d = hi - hmb_clock_map(&a->clk,
						     st->fw_ts[HMB_PH_CQE_POSTED],
						     st->fw_seq[HMB_PH_CQE_POSTED]);

			c.x[HMB_X_CQE_TO_COMPLETE] = d < 0 ? -1 : (int64_t)d;
		}
	}
	add_tot(&a->tot, &c);
	add_tot(&a->iv, &c);
	for (i = 0; i < HMB_X_COUNT; i++) {
		if (c.x[i] < 0)
			continue;
		hmb_hist_add(&a->xh[i], (uint64_t)c.x[i]);
		hmb_hist_add(&a->xh_iv[i], (uint64_t)c.x[i]);
	}
	if (c.x[HMB_X_HOST_TOTAL] >= 0 &&
	    (uint64_t)c.x[HMB_X_HOST_TOTAL] >= a->o.min_lat_ns) {
		top_insert(a->top_iv, &a->ntop_iv, a->o.top_n, &c);
		top_insert(a->top_all, &a->ntop_all, a->o.top_n, &c);
	} else if (c.x[HMB_X_HOST_TOTAL] >= 0) {
		a->tot.below_min++;
		a->iv.below_min++;
	}
}

static enum hmb_match classify(const struct hmb_cmd_event *ev)
{
	const struct hmb_cmd_state *st = &ev->st;
	unsigned int both = (1 << HMB_PH_FETCH) | (1 << HMB_PH_CQE_POSTED);

	if (st->flags & HMB_CF_HOST_ONLY)
		return HMB_M_HOST_ONLY;
	if ((st->fw_mask & both) == both)
		return HMB_M_MATCHED;
	return st->fw_mask ? HMB_M_PARTIAL : HMB_M_UNMATCHED;
}

void hmb_analysis_cmd(struct hmb_analysis *a, const struct hmb_cmd_event *ev)
{
	enum hmb_match m = classify(ev);
	const struct hmb_cmd_state *st = &ev->st;

	if (m == HMB_M_MATCHED || m == HMB_M_PARTIAL)
		for (int i = HMB_PH_FETCH; i < HMB_PH_COUNT; i++)
			if (st->fw_mask & (1 << i))
				hmb_clock_note(&a->clk, st->fw_seq[i],
					       st->fw_ts[i]);
	if (m == HMB_M_MATCHED && st->complete_ns)
		hmb_clock_add(&a->clk, st->submit_ns, st->complete_ns,
			      st->fw_ts[HMB_PH_FETCH],
			      st->fw_ts[HMB_PH_CQE_POSTED],
			      st->fw_seq[HMB_PH_FETCH],
			      st->fw_seq[HMB_PH_CQE_POSTED]);
	/*
	 * Commands with firmware times are placed on the host clock with a
	 * lag (HMB_PLACE_LAG commands, and not before the first estimate), so
	 * that a clock step is detected before the commands around it are
	 * judged with the old estimate.
	 */
	if ((m == HMB_M_MATCHED || m == HMB_M_PARTIAL) &&
	    a->npending < a->cap_pending) {
		a->pending[a->npending++] = *ev;
		return;
	}
	process(a, ev, m);
}

static void place(struct hmb_analysis *a, size_t keep)
{
	size_t i, n;

	if (!a->clk.valid || a->npending <= keep)
		return;
	n = a->npending - keep;
	for (i = 0; i < n; i++)
		process(a, &a->pending[i], classify(&a->pending[i]));
	memmove(a->pending, a->pending + n, keep * sizeof(*a->pending));
	a->npending = keep;
}

void hmb_analysis_tick(struct hmb_analysis *a)
{
	hmb_clock_solve(&a->clk);
	place(a, HMB_PLACE_LAG);
}

void hmb_analysis_flush(struct hmb_analysis *a)
{
	size_t i;

	hmb_clock_solve(&a->clk);
	if (a->clk.valid) {
		place(a, 0);
		return;
	}
	/* never an estimate: report them unplaced */
	for (i = 0; i < a->npending; i++)
		process(a, &a->pending[i], classify(&a->pending[i]));
	a->npending = 0;
}

void hmb_analysis_new_interval(struct hmb_analysis *a)
{
	memset(&a->iv, 0, sizeof(a->iv));
	memset(a->xh_iv, 0, sizeof(a->xh_iv));
	a->ntop_iv = 0;
}

void hmb_analysis_bg(struct hmb_analysis *a, const struct hmb_bg_event *ev,
		     const char *group)
{
	struct hmb_bg_rec *r = &a->bg[a->nbg % HMB_BG_KEEP];
	unsigned int g;

	for (g = 0; g < a->ngroups; g++)
		if (!strcmp(a->groups[g], group))
			break;
	if (g == a->ngroups && a->ngroups < 16)
		snprintf(a->groups[a->ngroups++], sizeof(a->groups[0]), "%s",
			 group);
	if (g >= 16)
		g = 15;
	memset(r, 0, sizeof(*r));
	r->ts = ev->ts_ns;
	r->opcode = ev->opcode;
	r->edge = ev->edge;
	r->group = (uint8_t)g;
	r->payload_len = ev->payload_len;
	memcpy(r->payload, ev->payload, sizeof(r->payload));
	a->nbg++;
}

unsigned int hmb_analysis_bg_overlap(const struct hmb_analysis *a,
				     uint64_t t0, uint64_t t1, hmb_bg_fn fn,
				     void *ctx)
{
	uint64_t first = a->nbg > HMB_BG_KEEP ? a->nbg - HMB_BG_KEEP : 0, i, j;
	unsigned int found = 0;

	for (i = first; i < a->nbg; i++) {
		const struct hmb_bg_rec *r = &a->bg[i % HMB_BG_KEEP];
		uint64_t end = 0;

		if (r->edge == 1 /* begin */) {
			for (j = i + 1; j < a->nbg; j++) {
				const struct hmb_bg_rec *e = &a->bg[j % HMB_BG_KEEP];

				if (e->group == r->group && e->edge == 2) {
					end = e->ts;
					break;
				}
			}
			if (r->ts <= t1 && (!end || end >= t0)) {
				fn(ctx, a->groups[r->group], r->ts, end, r);
				found++;
			}
		} else if (r->edge == 3 /* point */) {
			if (r->ts >= t0 && r->ts <= t1) {
				fn(ctx, a->groups[r->group], r->ts, r->ts, r);
				found++;
			}
		}
	}
	return found;
}
