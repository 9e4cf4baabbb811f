// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * cmd.c - the command model (hmbtrace_cmd.h): the verdict on one command,
 * and the totals, histograms and slowest commands of a set of them.  The
 * printers are in cmdprint.c.
 */
#include <stdlib.h>
#include <string.h>

#include "hmbtrace_cmd.h"

/* -------------------------------------------------------------- histogram */

void hmb_hist_add(struct hmb_log2_hist *h, uint64_t ns)
{
	uint64_t us = ns / 1000;

	h->slots[HMB_HIST_SLOT(us)]++;
}

uint64_t hmb_hist_total(const struct hmb_log2_hist *h)
{
	uint64_t t = 0;

	for (int i = 0; i < HMB_HIST_SLOTS; i++)
		t += h->slots[i];
	return t;
}

/* ---------------------------------------------------------------- names */

const char *hmb_match_name(enum hmb_match m)
{
	switch (m) {
	case HMB_M_HOST_ONLY: return "host-only";
	case HMB_M_MATCHED: return "matched";
	case HMB_M_PARTIAL: return "partial";
	case HMB_M_UNMATCHED: return "unmatched";
	case HMB_M_COUNT: break;
	}
	return "?";
}

const char *hmb_xphase_name(enum hmb_xphase x)
{
	switch (x) {
	case HMB_X_HOST_TOTAL: return "host_total";
	case HMB_X_SUBMIT_TO_FETCH: return "host_submit_to_fw_fetch";
	case HMB_X_FW_TOTAL: return "fw_fetch_to_cqe_posted";
	case HMB_X_CQE_TO_COMPLETE: return "fw_cqe_posted_to_host_complete";
	case HMB_X_COUNT: break;
	}
	return "?";
}

const char *hmb_xphase_title(enum hmb_xphase x)
{
	switch (x) {
	case HMB_X_HOST_TOTAL: return "host: submit -> complete";
	case HMB_X_SUBMIT_TO_FETCH:
		return "host submit -> fw fetch (clock-mapped)";
	case HMB_X_FW_TOTAL: return "firmware: fetch -> cqe_posted (fw clock)";
	case HMB_X_CQE_TO_COMPLETE:
		return "fw cqe_posted -> host complete (clock-mapped)";
	case HMB_X_COUNT: break;
	}
	return "?";
}

const char *hmb_nvme_opc_name(unsigned int opc, char *buf, size_t len)
{
	switch (opc) {
	case 0x00: return "flush";
	case 0x01: return "write";
	case 0x02: return "read";
	case 0x04: return "write_uncor";
	case 0x05: return "compare";
	case 0x08: return "write_zeroes";
	case 0x09: return "dsm";
	}
	snprintf(buf, len, "opc 0x%02x", opc & 0xff);
	return buf;
}

/* ---------------------------------------------------------------- verdict */

static double clk_map(const void *ctx, uint64_t fw_ns, uint32_t seq)
{
	return hmb_clock_map(ctx, fw_ns, seq);
}

static double clk_err(const void *ctx, uint32_t seq)
{
	return hmb_clock_err_at(ctx, seq);
}

static int clk_side(const void *ctx, uint32_t seq)
{
	return !hmb_clock_before_step(ctx, seq);
}

static bool clk_in_bracket(const void *ctx, uint32_t seq)
{
	return hmb_clock_in_bracket(ctx, seq);
}

struct hmb_cmd_clock hmb_cmd_clock_of(const struct hmb_clock *k)
{
	struct hmb_cmd_clock c = {
		.map = clk_map, .err = clk_err, .side = clk_side, .ctx = k,
		.in_bracket = clk_in_bracket,
	};

	return c;
}

enum hmb_match hmb_cmd_classify(const struct hmb_host_cmd *h,
				const struct hmb_fw_side *fw)
{
	unsigned int both = (1u << HMB_PHASE_FETCH) |
			    (1u << HMB_PHASE_CQE_POSTED);

	if (h->flags & HMB_CMD_F_HOST_ONLY)
		return HMB_M_HOST_ONLY;
	if ((fw->mask & both) == both)
		return HMB_M_MATCHED;
	return fw->mask ? HMB_M_PARTIAL : HMB_M_UNMATCHED;
}

bool hmb_cmd_fw_span(const struct hmb_cmd *c, uint64_t *t0, uint64_t *t1)
{
	bool any = false;

	for (int p = HMB_PHASE_FETCH; p < HMB_PHASE_COUNT; p++) {
		uint64_t t = c->fw.ts[p];

		if (!(c->fw.mask & (1u << p)))
			continue;
		if (!any || t < *t0)
			*t0 = t;
		if (!any || t > *t1)
			*t1 = t;
		any = true;
	}
	return any;
}

/* Where the records of a placed command lie on the host clock. */
static void place(struct hmb_cmd *c, const struct hmb_cmd_clock *clk)
{
	const struct hmb_fw_side *fw = &c->fw;
	double lo = (double)c->h.submit_ns, hi = (double)c->h.complete_ns;
	int side0 = -1;

	c->placed = true;
	c->in_window = c->in_window_err = true;
	for (int p = HMB_PHASE_FETCH; p < HMB_PHASE_COUNT; p++) {
		double m, err;
		int side;

		if (!(fw->mask & (1u << p)))
			continue;
		/* record by record: a command may straddle a clock step */
		m = clk->map(clk->ctx, fw->ts[p], fw->seq[p]);
		err = clk->err(clk->ctx, fw->seq[p]);
		c->fw_host_ns[p] = m;
		if (m < lo || m > hi)
			c->in_window = false;
		if (m < lo - err || m > hi + err)
			c->in_window_err = false;
		if (clk->in_bracket && clk->in_bracket(clk->ctx, fw->seq[p]))
			c->fw_in_bracket |= (uint8_t)(1u << p);
		side = clk->side ? clk->side(clk->ctx, fw->seq[p]) : 0;
		if (side0 < 0)
			side0 = side;
		else if (side != side0)
			c->across_step = true;
	}
	/*
	 * From the mapped times truncated to whole ns, as every output and
	 * the fleet store's rows have them: a phase is then the difference
	 * of two times the user can read (and ClickHouse's quantiles of the
	 * rows are the same numbers).
	 */
	if (fw->mask & (1u << HMB_PHASE_FETCH)) {
		double d = (double)(int64_t)c->fw_host_ns[HMB_PHASE_FETCH] - lo;

		c->x[HMB_X_SUBMIT_TO_FETCH] = d < 0 ? -1 : (int64_t)d;
	}
	if (fw->mask & (1u << HMB_PHASE_CQE_POSTED)) {
		double d = hi -
			   (double)(int64_t)c->fw_host_ns[HMB_PHASE_CQE_POSTED];

		c->x[HMB_X_CQE_TO_COMPLETE] = d < 0 ? -1 : (int64_t)d;
	}
}

void hmb_cmd_judge(struct hmb_cmd *c, const struct hmb_cmd_clock *clk)
{
	const struct hmb_host_cmd *h = &c->h;
	const struct hmb_fw_side *fw = &c->fw;

	c->match = hmb_cmd_classify(h, fw);
	c->placed = c->in_window = c->in_window_err = c->across_step = false;
	c->fw_in_bracket = 0;
	for (int i = 0; i < HMB_X_COUNT; i++)
		c->x[i] = -1;
	memset(c->fw_host_ns, 0, sizeof(c->fw_host_ns));
	if (h->complete_ns && h->complete_ns >= h->submit_ns)
		c->x[HMB_X_HOST_TOTAL] = (int64_t)(h->complete_ns - h->submit_ns);
	if (c->match == HMB_M_MATCHED &&
	    fw->ts[HMB_PHASE_CQE_POSTED] >= fw->ts[HMB_PHASE_FETCH])
		c->x[HMB_X_FW_TOTAL] = (int64_t)(fw->ts[HMB_PHASE_CQE_POSTED] -
						 fw->ts[HMB_PHASE_FETCH]);
	if (clk && (c->match == HMB_M_MATCHED || c->match == HMB_M_PARTIAL) &&
	    c->x[HMB_X_HOST_TOTAL] >= 0)
		place(c, clk);
	/*
	 * Across a clock step the firmware times of one command are on two
	 * clocks: its firmware total is taken between the records' places
	 * on the host clock, each mapped on its own side of the step.
	 */
	if (c->across_step && c->match == HMB_M_MATCHED) {
		double d = c->fw_host_ns[HMB_PHASE_CQE_POSTED] -
			   c->fw_host_ns[HMB_PHASE_FETCH];

		c->x[HMB_X_FW_TOTAL] = d < 0 ? -1 : (int64_t)d;
	}
}

/* ------------------------------------------------------------------ sets */

int hmb_cmd_stats_init(struct hmb_cmd_stats *s, unsigned int top_n,
		       uint64_t min_lat_ns)
{
	memset(s, 0, sizeof(*s));
	s->top_n = top_n;
	s->min_lat_ns = min_lat_ns;
	for (int i = 0; i < HMB_X_COUNT; i++)
		hmb_quant_init(&s->xq[i], HMB_QUANT_KEEP);
	s->top = calloc(top_n + 1, sizeof(*s->top));
	return s->top ? 0 : -1;
}

void hmb_cmd_stats_free(struct hmb_cmd_stats *s)
{
	free(s->top);
	s->top = NULL;
	s->ntop = 0;
	for (int i = 0; i < HMB_X_COUNT; i++)
		hmb_quant_free(&s->xq[i]);
}

void hmb_cmd_stats_clear(struct hmb_cmd_stats *s)
{
	memset(&s->tot, 0, sizeof(s->tot));
	memset(s->xh, 0, sizeof(s->xh));
	for (int i = 0; i < HMB_X_COUNT; i++)
		hmb_quant_clear(&s->xq[i]);
	s->ntop = 0;
	s->sorted = false;
}

static int64_t total_of(const struct hmb_cmd *c)
{
	return c->x[HMB_X_HOST_TOTAL];
}

/* The slowest list is a min-heap on the host total while filling. */
static void sift_down(struct hmb_cmd *t, unsigned int n, unsigned int i)
{
	for (;;) {
		unsigned int l = 2 * i + 1, m = i;
		struct hmb_cmd tmp;

		if (l < n && total_of(&t[l]) < total_of(&t[m]))
			m = l;
		if (l + 1 < n && total_of(&t[l + 1]) < total_of(&t[m]))
			m = l + 1;
		if (m == i)
			return;
		tmp = t[i];
		t[i] = t[m];
		t[m] = tmp;
		i = m;
	}
}

static void sift_up(struct hmb_cmd *t, unsigned int i)
{
	while (i > 0 && total_of(&t[(i - 1) / 2]) > total_of(&t[i])) {
		struct hmb_cmd tmp = t[i];

		t[i] = t[(i - 1) / 2];
		t[(i - 1) / 2] = tmp;
		i = (i - 1) / 2;
	}
}

static void top_insert(struct hmb_cmd_stats *s, const struct hmb_cmd *c)
{
	if (!s->top_n)
		return;
	if (s->sorted) {	/* slowest first: make it a heap again */
		for (unsigned int i = s->ntop / 2; i-- > 0;)
			sift_down(s->top, s->ntop, i);
		s->sorted = false;
	}
	if (s->ntop < s->top_n) {
		s->top[s->ntop] = *c;
		sift_up(s->top, s->ntop++);
	} else if (total_of(c) > total_of(&s->top[0])) {
		s->top[0] = *c;
		sift_down(s->top, s->ntop, 0);
	}
}

static int cmp_slower(const void *a, const void *b)
{
	int64_t x = total_of(a), y = total_of(b);

	return x < y ? 1 : x > y ? -1 : 0;
}

void hmb_cmd_stats_sort(struct hmb_cmd_stats *s)
{
	if (!s->sorted)
		qsort(s->top, s->ntop, sizeof(*s->top), cmp_slower);
	s->sorted = true;
}

int64_t hmb_cmd_stats_floor(const struct hmb_cmd_stats *s)
{
	if (!s->top_n || s->ntop < s->top_n)
		return -1;
	return total_of(&s->top[s->sorted ? s->ntop - 1 : 0]);
}

static void totals_add(struct hmb_cmd_totals *t, const struct hmb_cmd *c)
{
	uint32_t fl = c->h.flags;

	t->cmds++;
	switch (c->match) {
	case HMB_M_HOST_ONLY: t->host_only++; break;
	case HMB_M_MATCHED: t->matched++; break;
	case HMB_M_PARTIAL: t->partial++; break;
	case HMB_M_UNMATCHED: t->unmatched++; break;
	case HMB_M_COUNT: break;
	}
	if (c->placed) {
		t->placed++;
		t->in_window += c->in_window;
		if (c->in_window_err)
			t->in_window_err++;
		else
			t->outside_window++;
	}
	t->across_step += c->across_step;
	t->reused += !!(fl & HMB_CMD_F_REUSED);
	t->swept += !!(fl & HMB_CMD_F_SWEPT);
	t->no_room += !!(fl & HMB_CMD_F_NO_ROOM);
	t->no_complete += !!(fl & HMB_CMD_F_NO_COMPLETE);
}

void hmb_cmd_stats_add(struct hmb_cmd_stats *s, const struct hmb_cmd *c)
{
	int64_t total = c->x[HMB_X_HOST_TOTAL];

	totals_add(&s->tot, c);
	for (int i = 0; i < HMB_X_COUNT; i++)
		if (c->x[i] >= 0) {
			hmb_hist_add(&s->xh[i], (uint64_t)c->x[i]);
			hmb_quant_add(&s->xq[i], (uint64_t)c->x[i]);
		}
	if (total < 0)
		return;
	if ((uint64_t)total >= s->min_lat_ns)
		top_insert(s, c);
	else
		s->tot.below_min++;
}
