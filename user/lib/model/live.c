// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * live.c - the command model fed live (hmbtrace_live.h): the clock
 * estimate learnt as commands come, each command judged once it can be
 * placed, background windows for the slowest commands.
 */
#include <stdlib.h>
#include <string.h>

#include "hmbtrace_live.h"

int hmb_live_init(struct hmb_live *l, const struct hmb_live_opts *o)
{
	memset(l, 0, sizeof(*l));
	l->o = *o;
	if (hmb_clock_init(&l->clk, o->clock_window ? o->clock_window : 65536))
		return -1;
	if (o->clock_min_points)
		l->clk.min_points = o->clock_min_points;
	l->clk.shed_old = true;
	l->pending = calloc(HMB_LIVE_PENDING, sizeof(*l->pending));
	if (!l->pending || hmb_cmd_stats_init(&l->run, o->top_n, o->min_lat_ns) ||
	    hmb_cmd_stats_init(&l->iv, o->top_n, o->min_lat_ns)) {
		hmb_live_free(l);
		return -1;
	}
	return 0;
}

void hmb_live_free(struct hmb_live *l)
{
	hmb_clock_free(&l->clk);
	hmb_cmd_stats_free(&l->run);
	hmb_cmd_stats_free(&l->iv);
	free(l->pending);
	l->pending = NULL;
}

/* The groups with a window in flight during @c's firmware span. */
static uint16_t bg_of(const struct hmb_live *l, const struct hmb_cmd *c)
{
	uint64_t t0, t1;
	uint16_t bits = 0;

	if (!hmb_cmd_fw_span(c, &t0, &t1))
		return 0;
	for (unsigned int g = 0; g < l->ngroups && g < HMB_CMD_BG_GROUPS; g++) {
		const struct hmb_live_win *w = &l->win[g];
		uint64_t stop = w->n > HMB_LIVE_WIN ? w->n - HMB_LIVE_WIN : 0;

		if (w->open && w->open_b <= t1) {
			bits |= (uint16_t)(1u << g);
			continue;
		}
		/* a group's windows close in order: newest first, until one
		 * ended before the span */
		for (uint64_t i = w->n; i > stop; i--) {
			size_t k = (i - 1) % HMB_LIVE_WIN;

			if (w->e[k] < t0)
				break;
			if (w->b[k] <= t1) {
				bits |= (uint16_t)(1u << g);
				break;
			}
		}
	}
	return bits;
}

/*
 * Causality decides: the host submits before the controller fetches and
 * completes after it posts.  The records of placed @c that lie outside
 * its host window widened by the estimate's error bound for each (the
 * BPF join attached them by keys and order before it had an estimate, or
 * within its looser tolerance) are taken off it and counted; @c is judged
 * again on what is left, so no command is matched or partial outside its
 * window.
 */
static void refuse(struct hmb_live *l, struct hmb_cmd *c,
		   const struct hmb_cmd_clock *k)
{
	double lo = (double)c->h.submit_ns, hi = (double)c->h.complete_ns;

	for (int p = HMB_PHASE_FETCH; p < HMB_PHASE_COUNT; p++) {
		double m = c->fw_host_ns[p], err;

		if (!(c->fw.mask & (1u << p)))
			continue;
		err = k->err(k->ctx, c->fw.seq[p]);
		if (m >= lo - err && m <= hi + err)
			continue;
		c->refused.mask |= (uint8_t)(1u << p);
		c->refused.ts[p] = c->fw.ts[p];
		c->refused.seq[p] = c->fw.seq[p];
		c->fw.mask &= (uint8_t)~(1u << p);
		c->fw.ts[p] = 0;
		c->fw.seq[p] = 0;
		l->fw_refused++;
	}
	hmb_cmd_judge(c, k);
}

/* Judge @c with the estimate (if it has one) and account for it. */
static void judge(struct hmb_live *l, struct hmb_cmd *c)
{
	struct hmb_cmd_clock k = hmb_cmd_clock_of(&l->clk);

	hmb_cmd_judge(c, l->clk.valid ? &k : NULL);
	if (c->placed && !c->in_window_err)
		refuse(l, c, &k);
	c->bg = bg_of(l, c);
	c->bg_groups = l->groups;
	hmb_cmd_stats_add(&l->run, c);
	hmb_cmd_stats_add(&l->iv, c);
	if (l->o.on_cmd)
		l->o.on_cmd(l->o.ctx, c);
}

void hmb_live_cmd(struct hmb_live *l, const struct hmb_host_cmd *h,
		  const struct hmb_fw_side *fw)
{
	enum hmb_match m = hmb_cmd_classify(h, fw);
	struct hmb_cmd c;

	memset(&c, 0, sizeof(c));
	c.h = *h;
	c.fw = *fw;
	if (m == HMB_M_MATCHED || m == HMB_M_PARTIAL)
		for (int p = HMB_PHASE_FETCH; p < HMB_PHASE_COUNT; p++)
			if (fw->mask & (1u << p))
				hmb_clock_note_phase(&l->clk, fw->seq[p],
						     fw->ts[p], (unsigned int)p);
	if (m == HMB_M_MATCHED && h->complete_ns)
		hmb_clock_add(&l->clk, h->submit_ns, h->complete_ns,
			      fw->ts[HMB_PHASE_FETCH],
			      fw->ts[HMB_PHASE_CQE_POSTED],
			      fw->seq[HMB_PHASE_FETCH],
			      fw->seq[HMB_PHASE_CQE_POSTED]);
	/*
	 * Commands with firmware records wait for placement (HMB_LIVE_LAG
	 * commands, and not before the first estimate), so that a clock step
	 * is found before the commands around it are judged with the old
	 * estimate.
	 */
	if ((m == HMB_M_MATCHED || m == HMB_M_PARTIAL) &&
	    l->npending < HMB_LIVE_PENDING) {
		l->pending[l->npending++] = c;
	} else {
		if (m == HMB_M_MATCHED || m == HMB_M_PARTIAL)
			l->unplaced_early++;
		judge(l, &c);
	}
	if (h->complete_ns > l->last_host_ns)
		l->last_host_ns = h->complete_ns;
	if (!l->tick_host_ns)
		l->tick_host_ns = l->last_host_ns;
	else if (l->last_host_ns - l->tick_host_ns >= HMB_LIVE_TICK_NS)
		hmb_live_tick(l);
}

static void place(struct hmb_live *l, size_t keep)
{
	size_t n;

	if (!l->clk.valid || l->npending <= keep)
		return;
	n = l->npending - keep;
	for (size_t i = 0; i < n; i++)
		judge(l, &l->pending[i]);
	memmove(l->pending, l->pending + n, keep * sizeof(*l->pending));
	l->npending = keep;
}

/* Solve the clock and tell on_clock what came of it. */
static void solve(struct hmb_live *l)
{
	enum hmb_live_clock_why why = HMB_LIVE_CLOCK_UPDATE;

	hmb_clock_solve(&l->clk);
	if (!l->clk.valid)
		return;
	if (!l->clk_told)
		why = HMB_LIVE_CLOCK_FIRST;
	else if (l->clk.steps > l->clk_steps_told)
		why = HMB_LIVE_CLOCK_STEP;
	l->clk_told = true;
	l->clk_steps_told = l->clk.steps;
	if (l->o.on_clock)
		l->o.on_clock(l->o.ctx, &l->clk, why);
}

void hmb_live_tick(struct hmb_live *l)
{
	l->tick_host_ns = l->last_host_ns;
	solve(l);
	place(l, HMB_LIVE_LAG);
}

void hmb_live_flush(struct hmb_live *l)
{
	solve(l);
	if (l->clk.valid) {
		place(l, 0);
		return;
	}
	/* never an estimate: judged unplaced */
	for (size_t i = 0; i < l->npending; i++)
		judge(l, &l->pending[i]);
	l->npending = 0;
}

void hmb_live_new_interval(struct hmb_live *l)
{
	hmb_cmd_stats_clear(&l->iv);
}

static void win_close(struct hmb_live_win *w, uint64_t b, uint64_t e)
{
	w->b[w->n % HMB_LIVE_WIN] = b;
	w->e[w->n % HMB_LIVE_WIN] = e;
	w->n++;
}

/* The fwmodel's rule for windows (a begin while open closes the open one;
 * an end without a begin: a window from the start). */
static void win_edge(struct hmb_live_win *w, uint64_t ts, enum hmb_bg_edge edge)
{
	if (edge == HMB_BG_BEGIN) {
		if (w->open)
			win_close(w, w->open_b, ts);
		w->open = true;
		w->open_b = ts;
	} else if (edge == HMB_BG_END) {
		win_close(w, w->open ? w->open_b : 0, ts);
		w->open = false;
	}
}

void hmb_live_bg(struct hmb_live *l, uint64_t ts, uint16_t opcode,
		 enum hmb_bg_edge edge, const char *group, const void *payload,
		 size_t len)
{
	struct hmb_live_bg *r = &l->bg[l->nbg % HMB_LIVE_BG];
	unsigned int g;

	for (g = 0; g < l->ngroups; g++)
		if (!strcmp(l->groups[g], group))
			break;
	if (g == l->ngroups && l->ngroups < HMB_LIVE_GROUPS)
		snprintf(l->groups[l->ngroups++], sizeof(l->groups[0]), "%s",
			 group);
	if (g >= HMB_LIVE_GROUPS)
		g = HMB_LIVE_GROUPS - 1;
	win_edge(&l->win[g], ts, edge);
	memset(r, 0, sizeof(*r));
	r->ts = ts;
	r->opcode = opcode;
	r->edge = (uint8_t)edge;
	r->group = (uint8_t)g;
	if (len > HMB_LIVE_BG_PAYLOAD)
		len = HMB_LIVE_BG_PAYLOAD;
	r->payload_len = (uint16_t)len;
	if (len)
		memcpy(r->payload, payload, len);
	l->nbg++;
}

unsigned int hmb_live_bg_overlap(const struct hmb_live *l, uint64_t t0,
				 uint64_t t1, hmb_live_bg_fn fn, void *ctx)
{
	uint64_t first = l->nbg > HMB_LIVE_BG ? l->nbg - HMB_LIVE_BG : 0;
	unsigned int found = 0;

	for (uint64_t i = first; i < l->nbg; i++) {
		const struct hmb_live_bg *r = &l->bg[i % HMB_LIVE_BG];
		uint64_t end = 0;

		if (r->edge == HMB_BG_BEGIN) {
			for (uint64_t j = i + 1; j < l->nbg; j++) {
				const struct hmb_live_bg *e =
					&l->bg[j % HMB_LIVE_BG];

				if (e->group == r->group && e->edge == HMB_BG_END) {
					end = e->ts;
					break;
				}
			}
			if (r->ts <= t1 && (!end || end >= t0)) {
				fn(ctx, l->groups[r->group], r->ts, end, r);
				found++;
			}
		} else if (r->edge == HMB_BG_POINT) {
			if (r->ts >= t0 && r->ts <= t1) {
				fn(ctx, l->groups[r->group], r->ts, r->ts, r);
				found++;
			}
		}
	}
	return found;
}
