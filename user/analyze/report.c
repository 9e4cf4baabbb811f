// SPDX-License-Identifier: Apache-2.0
/*
 * report: one self-contained HTML file (inline SVG and CSS, one small
 * inline script, nothing fetched from the network) that shows what a trace
 * holds: a timeline overview, events by opcode, command latency per phase
 * (histograms and CDFs), the slowest commands with their firmware events
 * and the background windows they overlapped, and the losses in time.
 *
 * One streaming pass over the input; memory is bounded (timeline buckets
 * merge as the trace grows, latency histograms are log-linear, the top-N
 * and the kept background windows and gaps are capped and what does not
 * fit is counted).
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "analyze.h"
#include "formats.h"
#include "hmbtrace_fwmodel.h"
#include "correlate.h"

#define OUTBUF_SIZE	(1u << 18)
#define NBUCKETS	400		/* timeline resolution */
#define MAX_TOP		100
#define MAX_BG		20000
#define MAX_GAPS	1000

/* ------------------------------------------------------------ histogram */

/*
 * The charts' values are libhmbtrace's percentiles (hmbtrace_quant.h):
 * its buckets draw them, and its percentiles are exact while it holds the
 * values, else within 1/32, said in the chart.
 */

/* ----------------------------------------------------------- collector */

struct topcmd {
	struct hmb_fwm_cmd c;
	uint64_t total;
};

struct bgwin {
	uint64_t t0, t1;
	uint8_t group;
	uint8_t flags;
};

struct rep {
	const struct hmb_dict *dict;
	/* timeline */
	bool have_t0;
	uint64_t t0, width;
	uint64_t tl_rec[NBUCKETS], tl_cmd[NBUCKETS], tl_lost[NBUCKETS];
	/* latency */
	struct hmb_quant step[HMB_PHASE_COUNT][HMB_PHASE_COUNT];
	struct hmb_quant total;		/* fetch -> cqe_posted */
	/* top-N slowest complete commands */
	struct topcmd top[MAX_TOP];
	unsigned int ntop, top_n;
	/* background windows */
	struct bgwin *bg;
	size_t nbg;
	uint64_t bg_omitted;
	char groups[HMB_FWM_MAX_GROUPS][HMB_DICT_NAME_LEN];
	unsigned int ngroups;
	uint64_t bg_points;
};

static void tl_fit(struct rep *r, uint64_t ts)
{
	if (!r->have_t0) {
		r->have_t0 = true;
		r->t0 = ts;
		r->width = 1000;	/* 1 us to start with */
	}
	while (ts >= r->t0 && (ts - r->t0) / r->width >= NBUCKETS) {
		for (unsigned int i = 0; i < NBUCKETS / 2; i++) {
			r->tl_rec[i] = r->tl_rec[2 * i] + r->tl_rec[2 * i + 1];
			r->tl_cmd[i] = r->tl_cmd[2 * i] + r->tl_cmd[2 * i + 1];
			r->tl_lost[i] = r->tl_lost[2 * i] + r->tl_lost[2 * i + 1];
		}
		memset(r->tl_rec + NBUCKETS / 2, 0, sizeof(r->tl_rec) / 2);
		memset(r->tl_cmd + NBUCKETS / 2, 0, sizeof(r->tl_cmd) / 2);
		memset(r->tl_lost + NBUCKETS / 2, 0, sizeof(r->tl_lost) / 2);
		r->width *= 2;
	}
}

static unsigned int tl_idx(const struct rep *r, uint64_t ts)
{
	return ts < r->t0 ? 0 : (unsigned int)((ts - r->t0) / r->width);
}

static void on_record(void *ctx, const struct hmb_record *rec,
		      const struct hmb_dict_event *ev)
{
	struct rep *r = ctx;

	tl_fit(r, rec->hdr.ts_ns);
	r->tl_rec[tl_idx(r, rec->hdr.ts_ns)]++;
	if (ev && ev->bg_edge == HMB_BG_POINT)
		r->bg_points++;
}

static void on_cmd_begin(void *ctx, const struct hmb_fwm_cmd *c)
{
	struct rep *r = ctx;

	tl_fit(r, c->first_ts);
	r->tl_cmd[tl_idx(r, c->first_ts)]++;
}

static void on_cmd_step(void *ctx, const struct hmb_fwm_cmd *c,
			enum hmb_phase from, uint64_t t0,
			enum hmb_phase to, uint64_t t1)
{
	struct rep *r = ctx;

	(void)c;
	hmb_quant_add(&r->step[from][to], t1 - t0);
}

static void on_cmd_end(void *ctx, const struct hmb_fwm_cmd *c, enum hmb_fwm_end why)
{
	struct rep *r = ctx;
	uint64_t total;
	unsigned int i, min = 0;

	if (why != HMB_FWM_END_COMPLETE || !(c->mask & (1u << HMB_PHASE_FETCH)) ||
	    c->ts[HMB_PHASE_CQE_POSTED] < c->ts[HMB_PHASE_FETCH])
		return;
	total = c->ts[HMB_PHASE_CQE_POSTED] - c->ts[HMB_PHASE_FETCH];
	hmb_quant_add(&r->total, total);
	if (r->ntop < r->top_n) {
		i = r->ntop++;
	} else {
		for (i = 1; i < r->ntop; i++)
			if (r->top[i].total < r->top[min].total)
				min = i;
		if (total <= r->top[min].total)
			return;
		i = min;
	}
	r->top[i].c = *c;
	r->top[i].total = total;
}

static void on_bg_window(void *ctx, const char *group, uint64_t t0,
			 uint64_t t1, unsigned int flags, uint8_t cpu)
{
	struct rep *r = ctx;
	unsigned int g;

	(void)cpu;
	for (g = 0; g < r->ngroups; g++)
		if (strcmp(r->groups[g], group) == 0)
			break;
	if (g == r->ngroups) {
		if (g == HMB_FWM_MAX_GROUPS)
			return;
		snprintf(r->groups[g], HMB_DICT_NAME_LEN, "%s", group);
		r->ngroups++;
	}
	if (r->nbg == MAX_BG) {
		r->bg_omitted++;
		return;
	}
	r->bg[r->nbg++] = (struct bgwin){ t0, t1, (uint8_t)g, (uint8_t)flags };
}

static const struct hmb_fwm_ops rep_ops = {
	.record = on_record,
	.cmd_begin = on_cmd_begin,
	.cmd_step = on_cmd_step,
	.cmd_end = on_cmd_end,
	.bg_window = on_bg_window,
};

/* -------------------------------------------------------------- output */

static void esc(struct hmb_outbuf *ob, const char *s)
{
	for (; *s; s++) {
		hmb_ob_reserve(ob, 8);
		switch (*s) {
		case '&':
			hmb_ob_lit(ob, "&amp;");
			break;
		case '<':
			hmb_ob_lit(ob, "&lt;");
			break;
		case '>':
			hmb_ob_lit(ob, "&gt;");
			break;
		case '"':
			hmb_ob_lit(ob, "&quot;");
			break;
		case '\'':
			hmb_ob_lit(ob, "&#39;");
			break;
		default:
			hmb_ob_putc(ob, *s);
		}
	}
}

static const char *dur(uint64_t ns, char *buf, size_t len)
{
	if (ns < 1000)
		snprintf(buf, len, "%llu ns", (unsigned long long)ns);
	else if (ns < 1000000)
		snprintf(buf, len, "%.1f µs", ns / 1e3);
	else if (ns < 1000000000)
		snprintf(buf, len, "%.2f ms", ns / 1e6);
	else
		snprintf(buf, len, "%.3f s", ns / 1e9);
	return buf;
}

/* Seconds.nanoseconds of the firmware clock. */
static const char *fwts(uint64_t ns, char *buf, size_t len)
{
	snprintf(buf, len, "%llu.%09llu", (unsigned long long)(ns / 1000000000),
		 (unsigned long long)(ns % 1000000000));
	return buf;
}

static const char *const palette[] = {
	"#4e79a7", "#f28e2b", "#59a14f", "#b07aa1", "#76b7b2", "#edc948",
	"#9c755f", "#bab0ac",
};

#define W 960

static void svg_open(struct hmb_outbuf *ob, int w, int h, const char *label)
{
	hmb_ob_printf(ob, "<svg class=\"chart\" xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" role=\"img\" aria-label=\"",
		  w, h, w, h);
	esc(ob, label);
	hmb_ob_lit(ob, "\">\n");
}

static void timeline(struct hmb_outbuf *ob, const struct rep *r,
		     const struct input *in)
{
	const int h = 180, left = 60, top = 10, ph = 130;
	const double pw = W - left - 10;
	uint64_t max = 1, span = (uint64_t)NBUCKETS * r->width;
	unsigned int used = 0;
	char b1[40], b2[40];

	for (unsigned int i = 0; i < NBUCKETS; i++) {
		if (r->tl_rec[i] > max)
			max = r->tl_rec[i];
		if (r->tl_rec[i] || r->tl_lost[i])
			used = i + 1;
	}
	if (!used)
		used = 1;
	span = (uint64_t)used * r->width;
	hmb_ob_printf(ob, "<h2 id=\"timeline\">Timeline</h2>\n<p>Records per %s "
		  "(bars), commands started (line), background windows "
		  "(bands below the axis), losses (red marks).  Firmware "
		  "clock from %s s.</p>\n", dur(r->width, b1, sizeof(b1)),
		  fwts(r->t0, b2, sizeof(b2)));
	svg_open(ob, W, h + 20 * (int)r->ngroups, "timeline");
	hmb_ob_printf(ob, "<rect x=\"%d\" y=\"%d\" width=\"%.0f\" height=\"%d\" fill=\"#f7f7f7\"/>\n",
		  left, top, pw, ph);
	for (unsigned int i = 0; i < used; i++) {
		double x = left + pw * i / used, bw = pw / used;
		double bh = (double)ph * r->tl_rec[i] / max;

		hmb_ob_reserve(ob, 512);
		if (r->tl_rec[i])
			hmb_ob_printf(ob, "<rect x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\" fill=\"#4e79a7\"><title>%llu records</title></rect>\n",
				  x, top + ph - bh, bw > 1.2 ? bw - 0.2 : bw,
				  bh, (unsigned long long)r->tl_rec[i]);
		if (r->tl_lost[i])
			hmb_ob_printf(ob, "<rect class=\"lost\" x=\"%.2f\" y=\"%d\" width=\"%.2f\" height=\"%d\" fill=\"#e15759\"><title>%llu records lost</title></rect>\n",
				  x, top, bw > 2 ? bw : 2, ph,
				  (unsigned long long)r->tl_lost[i]);
	}
	/* commands started, as a polyline scaled to its own maximum */
	{
		uint64_t cmax = 0;

		for (unsigned int i = 0; i < used; i++)
			if (r->tl_cmd[i] > cmax)
				cmax = r->tl_cmd[i];
		if (cmax) {
			hmb_ob_lit(ob, "<polyline fill=\"none\" stroke=\"#f28e2b\" stroke-width=\"1.5\" points=\"");
			for (unsigned int i = 0; i < used; i++) {
				hmb_ob_reserve(ob, 64);
				hmb_ob_printf(ob, "%.1f,%.1f ",
					  left + pw * (i + 0.5) / used,
					  top + ph - (double)ph * r->tl_cmd[i] / cmax);
			}
			hmb_ob_lit(ob, "\"/>\n");
		}
	}
	for (size_t i = 0; i < r->nbg; i++) {
		const struct bgwin *b = &r->bg[i];
		double x0 = left + pw * (double)(b->t0 - r->t0) / (double)span;
		double x1 = left + pw * (double)(b->t1 - r->t0) / (double)span;

		hmb_ob_reserve(ob, 512);
		hmb_ob_printf(ob, "<rect x=\"%.2f\" y=\"%d\" width=\"%.2f\" height=\"14\" fill=\"%s\"><title>%s %s</title></rect>\n",
			  x0, top + ph + 24 + 20 * b->group,
			  x1 - x0 > 1 ? x1 - x0 : 1,
			  palette[(b->group + 2) % 8], r->groups[b->group],
			  dur(b->t1 - b->t0, b1, sizeof(b1)));
	}
	for (unsigned int g = 0; g < r->ngroups; g++)
		hmb_ob_printf(ob, "<text x=\"4\" y=\"%d\" font-size=\"11\">%s</text>\n",
			  top + ph + 35 + 20 * g, r->groups[g]);
	hmb_ob_printf(ob, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#333\"/>\n",
		  left, top + ph, W - 10, top + ph);
	for (int t = 0; t <= 4; t++) {
		double x = left + pw * t / 4;

		hmb_ob_printf(ob, "<text x=\"%.0f\" y=\"%d\" font-size=\"11\" text-anchor=\"%s\">+%s</text>\n",
			  x, top + ph + 14, t == 0 ? "start" : t == 4 ? "end" : "middle",
			  dur(span * (uint64_t)t / 4, b1, sizeof(b1)));
	}
	hmb_ob_printf(ob, "<text x=\"4\" y=\"%d\" font-size=\"11\">%llu</text>\n",
		  top + 10, (unsigned long long)max);
	hmb_ob_lit(ob, "</svg>\n");
	(void)in;
}

static void opcodes(struct hmb_outbuf *ob, const struct rep *r,
		    const struct hmb_acct *a)
{
	uint64_t max = 1, cnt;
	unsigned int n = 0;
	const int rowh = 18, left = 230;
	struct hmb_opcode_iter it, all;
	uint16_t op;

	hmb_acct_opcodes(a, &it);
	all = it;	/* the same opcodes again, below */
	while (hmb_opcode_iter_next(&it, &op, &cnt)) {
		n++;
		if (cnt > max)
			max = cnt;
	}
	hmb_ob_lit(ob, "<h2 id=\"opcodes\">Events by opcode</h2>\n");
	if (!n) {
		hmb_ob_lit(ob, "<p>No records.</p>\n");
		return;
	}
	svg_open(ob, W, rowh * (int)n + 10, "events by opcode");
	n = 0;
	while (hmb_opcode_iter_next(&all, &op, &cnt)) {
		const struct hmb_dict_event *ev = hmb_dict_lookup(r->dict, op);
		double w = (W - left - 120.0) * cnt / max;

		hmb_ob_reserve(ob, 512);
		hmb_ob_printf(ob, "<text x=\"4\" y=\"%d\" font-size=\"12\">0x%04x %s</text>"
			  "<rect x=\"%d\" y=\"%d\" width=\"%.1f\" height=\"%d\" fill=\"%s\"/>"
			  "<text x=\"%.1f\" y=\"%d\" font-size=\"12\">%llu</text>\n",
			  n * rowh + 14, op, ev ? ev->name : "(not in dictionary)",
			  left, n * rowh + 3, w > 1 ? w : 1, rowh - 4,
			  ev ? palette[0] : "#bab0ac", left + w + 4,
			  n * rowh + 14, (unsigned long long)cnt);
		n++;
	}
	hmb_ob_lit(ob, "</svg>\n");
}

/* Position of bucket @i's lower bound on a log2 axis (in octaves). */
static double oct_pos(unsigned int i)
{
	uint64_t lo = hmb_quant_bucket_lo(i);

	return lo < 2 ? 0 : log2((double)lo);
}

/* Histogram by octave and CDF on a log axis, side by side. */
static void latency_chart(struct hmb_outbuf *ob, const struct hmb_quant *h,
			  const char *title)
{
	const int cw = 460, ch = 160, left = 45, top = 8, ph = 120;
	const double pw = cw - left - 10;
	unsigned int k0 = 63 - (unsigned int)__builtin_clzll(h->min | 1);
	unsigned int k1 = 63 - (unsigned int)__builtin_clzll(h->max | 1);
	uint64_t oct[64] = { 0 }, omax = 1, cum = 0;
	unsigned int nk = k1 - k0 + 1, lstep = (nk + 5) / 6;
	/* the values are sorted on the first percentile: a cache */
	struct hmb_quant *q = (struct hmb_quant *)h;
	struct hmb_quant_val pv;
	char b1[32], b2[32];
	bool exact = true;

	for (unsigned int i = 0; h->b && i < HMB_QUANT_BUCKETS; i++)
		if (h->b[i])
			oct[63 - __builtin_clzll(hmb_quant_bucket_lo(i) | 1)] +=
				h->b[i];
	for (unsigned int k = k0; k <= k1; k++)
		if (oct[k] > omax)
			omax = oct[k];
	hmb_ob_printf(ob, "<div class=\"lat\"><h3>");
	esc(ob, title);
	hmb_ob_printf(ob, "</h3><p class=\"small\">n=%llu, min %s",
		      (unsigned long long)h->n, dur(h->min, b1, sizeof(b1)));
	for (int i = 0; i < HMB_QUANT_NLEVELS; i++) {
		hmb_quant_at(q, hmb_quant_levels[i], &pv);
		exact = exact && pv.exact;
		hmb_ob_printf(ob, ", %s %s", hmb_quant_level_names[i],
			      dur(pv.v, b1, sizeof(b1)));
	}
	hmb_ob_printf(ob, ", max %s, mean %s%s</p>\n",
		      dur(h->max, b1, sizeof(b1)),
		      dur(h->sum / h->n, b2, sizeof(b2)),
		      exact ? "" : " (percentiles from buckets, within 3.2 %)");
	/* histogram */
	svg_open(ob, cw, ch, "histogram");
	for (unsigned int k = k0; k <= k1; k++) {
		double x = left + pw * (k - k0) / nk, bh = (double)ph * oct[k] / omax;

		hmb_ob_reserve(ob, 512);
		hmb_ob_printf(ob, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"#59a14f\"><title>%s..%s: %llu</title></rect>\n",
			  x + 1, top + ph - bh, pw / nk - 2, bh,
			  dur(1ull << k, b1, sizeof(b1)),
			  dur((2ull << k) - 1, b2, sizeof(b2)),
			  (unsigned long long)oct[k]);
		if ((k - k0) % lstep == 0)
			hmb_ob_printf(ob, "<text x=\"%.1f\" y=\"%d\" font-size=\"10\" text-anchor=\"middle\">%s</text>\n",
				  x + pw / nk / 2, top + ph + 13,
				  dur(1ull << k, b1, sizeof(b1)));
	}
	hmb_ob_printf(ob, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#333\"/>"
		  "<text x=\"2\" y=\"%d\" font-size=\"10\">%llu</text>"
		  "<text x=\"%d\" y=\"%d\" font-size=\"10\" text-anchor=\"middle\">count per octave</text></svg>\n",
		  left, top + ph, cw - 10, top + ph, top + 10,
		  (unsigned long long)omax, cw / 2, ch - 4);
	/* CDF: x = log2(latency) over [k0, k1 + 1), y = fraction */
	svg_open(ob, cw, ch, "CDF");
	hmb_ob_printf(ob, "<rect x=\"%d\" y=\"%d\" width=\"%.0f\" height=\"%d\" fill=\"#f7f7f7\"/>",
		  left, top, pw, ph);
	hmb_ob_lit(ob, "<polyline fill=\"none\" stroke=\"#4e79a7\" stroke-width=\"2\" points=\"");
	hmb_ob_printf(ob, "%d,%d ", left, top + ph);
	for (unsigned int i = 0; h->b && i < HMB_QUANT_BUCKETS; i++) {
		double x;

		if (!h->b[i])
			continue;
		cum += h->b[i];
		x = left + pw * (oct_pos(i + 1) - k0) / nk;
		hmb_ob_reserve(ob, 64);
		hmb_ob_printf(ob, "%.1f,%.1f ", x > left + pw ? left + pw : x,
			  top + ph - (double)ph * cum / h->n);
	}
	hmb_ob_lit(ob, "\"/>\n");
	for (int q = 0; q <= 4; q++)
		hmb_ob_printf(ob, "<text x=\"2\" y=\"%d\" font-size=\"10\">%d%%</text>",
			  top + ph - ph * q / 4 + 4, q * 25);
	for (unsigned int k = k0; k <= k1 + 1; k += lstep)
		hmb_ob_printf(ob, "<text x=\"%.1f\" y=\"%d\" font-size=\"10\" text-anchor=\"%s\">%s</text>\n",
			  left + pw * (k - k0) / nk, top + ph + 13,
			  k + lstep > k1 + 1 && k > k0 ? "end" : "middle",
			  dur(1ull << k, b1, sizeof(b1)));
	hmb_ob_printf(ob, "<text x=\"%d\" y=\"%d\" font-size=\"10\" text-anchor=\"middle\">cumulative fraction</text></svg></div>\n",
		  cw / 2, ch - 4);
}

static void latencies(struct hmb_outbuf *ob, const struct rep *r)
{
	char title[96];
	unsigned int charts = 0;

	hmb_ob_lit(ob, "<h2 id=\"latency\">Command latency by phase</h2>\n"
	       "<p>Firmware clock.  Each phase interval runs from one phase "
	       "event of a command to its next one; the total runs from fetch to "
	       "cqe_posted of complete commands.</p>\n<div class=\"grid\">\n");
	if (r->total.n) {
		latency_chart(ob, &r->total, "total: fetch -> cqe_posted");
		charts++;
	}
	for (int a = 0; a < HMB_PHASE_COUNT; a++)
		for (int b = 0; b < HMB_PHASE_COUNT; b++) {
			if (!r->step[a][b].n)
				continue;
			snprintf(title, sizeof(title), "%s -> %s",
				 hmb_phase_name(a), hmb_phase_name(b));
			latency_chart(ob, &r->step[a][b], title);
			charts++;
		}
	if (!charts)
		hmb_ob_lit(ob, "<p>No command phase events (none of the opcodes "
		       "marks a phase in the dictionary).</p>\n");
	hmb_ob_lit(ob, "</div>\n");
}

static int cmp_top(const void *x, const void *y)
{
	const struct topcmd *a = x, *b = y;

	return a->total < b->total ? 1 : a->total > b->total ? -1 : 0;
}

static void slowest(struct hmb_outbuf *ob, struct rep *r)
{
	char b1[32], b2[32], b3[40], nb[16];

	qsort(r->top, r->ntop, sizeof(r->top[0]), cmp_top);
	hmb_ob_printf(ob, "<h2 id=\"slowest\">Slowest commands</h2>\n<p>The %u "
		  "slowest complete commands, fetch to cqe_posted, with their "
		  "firmware events and the background windows they overlapped."
		  "</p>\n", r->ntop);
	if (!r->ntop)
		return;
	hmb_ob_lit(ob, "<table class=\"slow\"><tr><th>#</th><th>command</th><th>sqid</th><th>cid</th><th>firmware total</th><th>events (time after fetch, cpu, seq)</th><th>overlapping background</th></tr>\n");
	for (unsigned int i = 0; i < r->ntop; i++) {
		const struct hmb_fwm_cmd *c = &r->top[i].c;
		uint64_t f = c->ts[HMB_PHASE_FETCH], e = c->ts[HMB_PHASE_CQE_POSTED];
		unsigned int nov = 0;

		hmb_ob_reserve(ob, 1024);
		hmb_ob_printf(ob, "<tr><td>%u</td><td>%s</td><td>%u</td><td>0x%04x</td><td>%s</td><td>",
			  i + 1, hmb_fwm_cmd_name(c, nb, sizeof(nb)), c->sqid,
			  c->cid, dur(r->top[i].total, b1, sizeof(b1)));
		for (int p = HMB_PHASE_FETCH; p < HMB_PHASE_COUNT; p++) {
			const struct hmb_dict_event *ev;

			if (!(c->mask & (1u << p)))
				continue;
			ev = hmb_dict_phase_event(r->dict, p);
			hmb_ob_reserve(ob, 512);
			hmb_ob_printf(ob, "%s +%s (cpu %u, seq %u) @%s<br>",
				  ev ? ev->name : hmb_phase_name(p),
				  dur(c->ts[p] - f, b2, sizeof(b2)), c->ecpu[p],
				  c->seq[p], fwts(c->ts[p], b3, sizeof(b3)));
		}
		hmb_ob_lit(ob, "</td><td>");
		for (size_t k = 0; k < r->nbg; k++) {
			const struct bgwin *b = &r->bg[k];

			if (b->t1 < f || b->t0 > e)
				continue;
			if (++nov > 5)
				continue;
			hmb_ob_reserve(ob, 512);
			hmb_ob_printf(ob, "%s %s (from %s)<br>", r->groups[b->group],
				  dur(b->t1 - b->t0, b1, sizeof(b1)),
				  b->t0 < f ? "before fetch" : "during");
		}
		if (nov > 5)
			hmb_ob_printf(ob, "and %u more", nov - 5);
		else if (!nov)
			hmb_ob_lit(ob, "none");
		hmb_ob_lit(ob, "</td></tr>\n");
	}
	hmb_ob_lit(ob, "</table>\n");
}

static void losses(struct hmb_outbuf *ob, const struct input *in)
{
	const struct hmb_acct *a = in->acct;
	char b1[40], b2[40];

	hmb_ob_printf(ob, "<h2 id=\"losses\">Losses</h2>\n<p id=\"loss-summary\">%llu "
		  "record%s lost in %llu gap%s; %llu duplicate%s dropped; %llu "
		  "record%s ignored (unknown flags); %llu truncated by the "
		  "firmware.</p>\n",
		  (unsigned long long)a->lost, a->lost == 1 ? "" : "s",
		  (unsigned long long)a->gaps, a->gaps == 1 ? "" : "s",
		  (unsigned long long)a->duplicates, a->duplicates == 1 ? "" : "s",
		  (unsigned long long)a->ignored, a->ignored == 1 ? "" : "s",
		  (unsigned long long)a->truncated);
	if (!in->ngaps)
		return;
	hmb_ob_lit(ob, "<table class=\"gaps\"><tr><th>lost</th><th>seq</th><th>between ts (s)</th><th>and ts (s)</th><th>dump offset</th></tr>\n");
	for (size_t i = 0; i < in->ngaps; i++) {
		const struct hmb_gap *g = &in->gaps[i];

		hmb_ob_reserve(ob, 512);
		hmb_ob_printf(ob, "<tr><td>%llu</td><td>%u..%u</td><td>%s</td><td>%s</td><td>%llu</td></tr>\n",
			  (unsigned long long)g->count, g->first_seq, g->last_seq,
			  fwts(g->ts_before, b1, sizeof(b1)),
			  fwts(g->ts_after, b2, sizeof(b2)),
			  (unsigned long long)g->offset);
	}
	hmb_ob_lit(ob, "</table>\n");
	if (in->gaps_omitted)
		hmb_ob_printf(ob, "<p>%llu more gaps not listed.</p>\n",
			  (unsigned long long)in->gaps_omitted);
}

struct host_hists {
	struct hmb_quant h[HMB_X_COUNT];
};

static void host_hists_free(struct host_hists *hh)
{
	for (int x = 0; hh && x < HMB_X_COUNT; x++)
		hmb_quant_free(&hh->h[x]);
	free(hh);
}

/* corr_run's callback: every command of the joined controller, as it
 * comes out of the join. */
static int host_hist_add(void *ctx, const struct hmb_join *j, size_t i,
			 const struct hmb_cmd *c)
{
	struct host_hists *hh = ctx;

	(void)i;
	if (c->h.ctrl != hmb_join_ctrl(j))
		return 0;
	for (int x = 0; x < HMB_X_COUNT; x++)
		if (c->x[x] >= 0)
			hmb_quant_add(&hh->h[x], (uint64_t)c->x[x]);
	return 0;
}

static void host_clock(struct hmb_outbuf *ob, const struct hmb_clock *k,
		       const struct hmb_cmd_totals *t)
{
	char drift[64] = "not estimated (matched span too short)";

	if (!k->valid) {
		hmb_ob_lit(ob, "<p id=\"clock\" class=\"warn\">No clock estimate: too few matched commands.</p>\n");
		return;
	}
	if (k->drift_err >= 0)
		snprintf(drift, sizeof(drift), "%+.3f ppm (± %.3f)",
			 k->drift * 1e6, k->drift_err * 1e6);
	hmb_ob_printf(ob, "<p id=\"clock\">Clock: host = firmware %+.3f µs "
		      "(± %.3f µs) at firmware %.6f s; drift %s; from %zu "
		      "commands.  Firmware events inside their command's host "
		      "window: %llu of %llu placed, within the clock error: "
		      "%llu, outside: %llu.</p>\n", k->off_ns / 1e3,
		      k->off_err_ns / 1e3, k->ref / 1e9, drift, k->used,
		      (unsigned long long)t->in_window,
		      (unsigned long long)t->placed,
		      (unsigned long long)t->in_window_err,
		      (unsigned long long)t->outside_window);
}

static void host_slowest(struct hmb_outbuf *ob, const struct hmb_cmd_stats *s)
{
	char b[HMB_X_COUNT][32];

	hmb_ob_printf(ob, "<h3>Slowest host commands</h3>\n<table class=\"slow\" id=\"host-slow\"><tr><th>#</th><th>command</th><th>qid</th><th>cid</th><th>host total</th><th>submit -&gt; fetch</th><th>firmware</th><th>cqe -&gt; complete</th><th>match</th></tr>\n");
	for (unsigned int t = 0; t < s->ntop; t++) {
		const struct hmb_cmd *c = &s->top[t];

		for (int x = 0; x < HMB_X_COUNT; x++)
			if (c->x[x] >= 0)
				dur((uint64_t)c->x[x], b[x], sizeof(b[x]));
			else
				snprintf(b[x], sizeof(b[x]), "-");
		hmb_ob_printf(ob, "<tr><td>%u</td><td>", t + 1);
		esc(ob, c->h.opc[0] ? c->h.opc : "?");
		hmb_ob_printf(ob, "</td><td>%u</td><td>0x%04x</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td></tr>\n",
			      c->h.qid, c->h.cid, b[HMB_X_HOST_TOTAL],
			      b[HMB_X_SUBMIT_TO_FETCH], b[HMB_X_FW_TOTAL],
			      b[HMB_X_CQE_TO_COMPLETE],
			      hmb_match_name(c->match));
	}
	hmb_ob_lit(ob, "</table>\n");
}

/* The host's view: the join with HOST_EVENTS (libhmbtrace's, correlate's). */
static void host_section(struct hmb_outbuf *ob, const struct corr *c)
{
	const struct hmb_cmd_stats *s = hmb_join_stats(c->j);
	const struct hmb_cmd_totals *t = &s->tot;
	const struct host_hists *hh = c->priv;

	hmb_ob_lit(ob, "<h2 id=\"host\">Host and firmware</h2>\n<p id=\"host-summary\">");
	esc(ob, c->host.path);
	hmb_ob_printf(ob, " (%s, nvme%u): %llu host commands; <b>%llu matched</b> "
		      "(%.2f%%), %llu partial, %llu unmatched; %llu firmware "
		      "commands without a host command.</p>\n",
		      hostev_fmt_name(c->host.fmt), hmb_join_ctrl(c->j),
		      (unsigned long long)t->cmds,
		      (unsigned long long)t->matched,
		      t->cmds ? 100.0 * (double)t->matched / (double)t->cmds :
		      0.0, (unsigned long long)t->partial,
		      (unsigned long long)t->unmatched,
		      (unsigned long long)hmb_join_totals(c->j)->fw_unmatched);
	host_clock(ob, hmb_join_clock(c->j), t);
	hmb_ob_lit(ob, "<div class=\"grid\">\n");
	for (int x = 0; x < HMB_X_COUNT; x++)
		if (hh->h[x].n)
			latency_chart(ob, &hh->h[x], hmb_xphase_title(x));
	hmb_ob_lit(ob, "</div>\n");
	host_slowest(ob, s);
}

static const char css[] =
"body{font-family:sans-serif;margin:16px;color:#222;max-width:1000px}"
"h1{font-size:22px}h2{font-size:18px;border-bottom:1px solid #ccc;margin-top:28px}"
"h3{font-size:14px;margin:4px 0}.small{font-size:12px;color:#555;margin:2px 0}"
"table{border-collapse:collapse;font-size:12px}td,th{border:1px solid #ddd;padding:3px 6px;vertical-align:top;text-align:left}"
"th{background:#f0f0f0}.grid{display:flex;flex-wrap:wrap}.lat{margin:6px 10px 6px 0;width:460px}"
".summary td:first-child{font-weight:bold}.warn{color:#c00;font-weight:bold}"
"svg.chart{display:block}";

/*
 * The only script: it checks that every chart rendered and says so in a
 * status element (the test reads it back from the DOM).
 */
static const char script[] =
"(function(){var s=document.getElementById('render-status');"
"var c=document.querySelectorAll('svg.chart');var ok=0;"
"for(var i=0;i<c.length;i++){var b=c[i].getBBox();if(b.width>0&&b.height>0)ok++;}"
"s.setAttribute('data-charts',String(c.length));"
"s.setAttribute('data-ok',ok===c.length?'1':'0');"
"s.textContent=ok+' of '+c.length+' charts rendered';})();";

static void html(struct hmb_outbuf *ob, struct rep *r, const struct input *in,
		 const struct hmb_fwmodel *m, const struct corr *corr)
{
	const struct hmb_acct *a = in->acct;
	char b1[40], b2[40], b3[40];
	time_t now = time(NULL);
	struct tm tm;

	gmtime_r(&now, &tm);
	hmb_ob_lit(ob, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n<title>HMB trace report: ");
	esc(ob, in->name);
	hmb_ob_lit(ob, "</title>\n<style>");
	hmb_ob_puts(ob, css);
	hmb_ob_lit(ob, "</style></head><body>\n<h1>HMB firmware trace: ");
	esc(ob, in->name);
	hmb_ob_lit(ob, "</h1>\n<table class=\"summary\">\n");
	hmb_ob_printf(ob, "<tr><td>records</td><td>%llu (%s)</td></tr>\n",
		  (unsigned long long)a->records,
		  hmb_reader_dialect(in->reader) == HMB_DIALECT_RING ?
		  "ring image" : "dump");
	if (a->records)
		hmb_ob_printf(ob, "<tr><td>firmware time</td><td>%s s .. %s s (%s)</td></tr>\n",
			  fwts(a->first_ts_ns, b1, sizeof(b1)),
			  fwts(a->last_ts_ns, b2, sizeof(b2)),
			  dur(a->last_ts_ns - a->first_ts_ns, b3, sizeof(b3)));
	hmb_ob_printf(ob, "<tr><td>lost</td><td%s>%llu records in %llu gaps</td></tr>\n",
		  a->lost ? " class=\"warn\"" : "",
		  (unsigned long long)a->lost, (unsigned long long)a->gaps);
	hmb_ob_printf(ob, "<tr><td>commands</td><td>%llu (%llu complete, %llu "
		  "without fetch, %llu open at the end, %llu cid reused "
		  "before completion)</td></tr>\n",
		  (unsigned long long)m->st.cmds,
		  (unsigned long long)m->st.complete,
		  (unsigned long long)m->st.no_fetch,
		  (unsigned long long)m->st.eof_open,
		  (unsigned long long)m->st.reused);
	hmb_ob_printf(ob, "<tr><td>background</td><td>%llu windows, %llu points"
		  "%s</td></tr>\n", (unsigned long long)m->st.bg_windows,
		  (unsigned long long)r->bg_points,
		  r->bg_omitted ? " (some windows not kept for overlap)" : "");
	hmb_ob_printf(ob, "<tr><td>not in dictionary</td><td>%llu records</td></tr>\n",
		  (unsigned long long)m->st.unknown_opcode);
	hmb_ob_printf(ob, "<tr><td>generated</td><td>%04d-%02d-%02d %02d:%02d UTC by "
		  PROG " " HMB_ANALYZE_VERSION "</td></tr>\n</table>\n",
		  tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
		  tm.tm_min);
	hmb_ob_lit(ob, "<p class=\"small\" id=\"render-status\" data-ok=\"0\">charts not rendered (scripts disabled?)</p>\n");
	if (r->have_t0)
		timeline(ob, r, in);
	opcodes(ob, r, a);
	latencies(ob, r);
	if (corr)
		host_section(ob, corr);
	slowest(ob, r);
	losses(ob, in);
	hmb_ob_lit(ob, "<script>");
	hmb_ob_puts(ob, script);
	hmb_ob_lit(ob, "</script>\n</body></html>\n");
}

/* Set up (@init) or free every chart's values. */
static void rep_quants(struct rep *r, bool init)
{
	struct hmb_quant *q[HMB_PHASE_COUNT * HMB_PHASE_COUNT + 1];
	size_t n = 0;

	q[n++] = &r->total;
	for (int a = 0; a < HMB_PHASE_COUNT; a++)
		for (int b = 0; b < HMB_PHASE_COUNT; b++)
			q[n++] = &r->step[a][b];
	for (size_t i = 0; i < n; i++)
		if (init)
			hmb_quant_init(q[i], HMB_QUANT_KEEP);
		else
			hmb_quant_free(q[i]);
}

static int write_report(struct input *in, struct hmb_outbuf *ob,
			const struct hmb_dict *dict, unsigned int top_n,
			const struct corr *corr)
{
	struct hmb_error err = { 0 };
	struct hmb_record rec;
	struct hmb_fwmodel m;
	struct rep *r;
	uint64_t gaps_seen = 0;
	int rc;

	r = calloc(1, sizeof(*r));
	if (!r || hmb_fwm_init(&m, dict, &rep_ops, r)) {
		free(r);
		errorf("out of memory");
		return EXIT_BADINPUT;
	}
	r->bg = calloc(MAX_BG, sizeof(*r->bg));
	if (!r->bg) {
		hmb_fwm_finish(&m);
		free(r);
		errorf("out of memory");
		return EXIT_BADINPUT;
	}
	r->dict = dict;
	r->top_n = top_n;
	rep_quants(r, true);
	while ((rc = input_next(in, &rec, &err)) > 0) {
		if (in->acct->gaps != gaps_seen) {
			gaps_seen = in->acct->gaps;
			tl_fit(r, in->last_gap.ts_after);
			r->tl_lost[tl_idx(r, in->last_gap.ts_after)] +=
				in->last_gap.count;
		}
		hmb_fwm_add(&m, &rec);
	}
	hmb_fwm_finish(&m);
	if (rc < 0) {
		input_report(in, &err);
		rc = EXIT_BADINPUT;
	} else {
		html(ob, r, in, &m, corr);
		hmb_ob_flush(ob);
		if (ob->err) {
			errorf("%s: write error: %s", ob->name,
			       strerror(ob->err));
			rc = EXIT_BADINPUT;
		}
	}
	rep_quants(r, false);
	free(r->bg);
	free(r);
	return rc;
}

void usage_report(FILE *f)
{
	fprintf(f,
"Usage: " PROG " report FILE [--host HOST_EVENTS] -o REPORT.html [OPTIONS]\n"
"\n"
"Write one self-contained HTML page about FILE (a dump or ring image, or -\n"
"for stdin): summary, timeline overview (records, commands, background\n"
"windows, losses), events by opcode, command latency per phase (log2\n"
"histograms and CDFs), the slowest commands with their firmware events and\n"
"overlapping background windows, and every loss with its place in time.\n"
"With --host, also the host's view of the same commands (the join of\n"
"correlate): matched counts, the clock estimate, host/firmware latency\n"
"breakdown histograms and the slowest host commands.\n"
"Inline SVG and CSS only: it opens offline in any browser.\n"
"\n"
"Options:\n"
"  -o, --output PATH    the HTML file (- for stdout); required\n"
"      --host FILE      hmb-trace-agent -j --per-command output or perf script\n"
"                       of the nvme tracepoints (see correlate --help)\n"
"      --ctrl N         the host controller of FILE (see correlate --help)\n"
"      --dict FILE      event dictionary (default: the shipped one)\n"
"      --top N          slowest commands to list (default 20, at most %d)\n"
"      --meta PATH      read this sidecar instead of FILE.meta\n"
"      --no-meta        ignore FILE.meta\n"
"      --dup-window N   see decode --help\n"
"  -h, --help           this help\n"
"\n"
"Examples:\n"
"  " PROG " report trace.bin -o trace.html && xdg-open trace.html\n", MAX_TOP);
}

static const struct option report_opts[] = {
	{ "output", required_argument, NULL, 'o' },
	{ "dict", required_argument, NULL, 'D' },
	{ "top", required_argument, NULL, 'T' },
	{ "host", required_argument, NULL, 'H' },
	{ "ctrl", required_argument, NULL, 'C' },
	{ "help", no_argument, NULL, 'h' },
	INPUT_LONGOPTS,
	{ NULL, 0, NULL, 0 }
};

int cmd_report(int argc, char **argv)
{
	struct input_opts iopts = { .max_gaps = MAX_GAPS };
	const char *dict_path = NULL, *out = NULL, *host = NULL;
	struct hmb_dict *dict = NULL;
	struct corr corr;
	long ctrl = -1;
	unsigned int top_n = 20;
	struct hmb_outbuf ob;
	struct input in;
	uint64_t v;
	int opt, rc;

	optind = 1;
	while ((opt = getopt_long(argc, argv, ":o:h", report_opts, NULL)) != -1) {
		switch (opt) {
		case 'o':
			out = optarg;
			break;
		case 'D':
			dict_path = optarg;
			break;
		case 'T':
			if (parse_count("top", optarg, 0, MAX_TOP, &v))
				return EXIT_USAGE;
			top_n = (unsigned int)v;
			break;
		case 'H':
			host = optarg;
			break;
		case 'C':
			if (parse_ctrl(optarg, &ctrl))
				return EXIT_USAGE;
			break;
		case 'h':
			usage_report(stdout);
			return 0;
		default:
			if (input_opt_or_usage(&iopts, opt, optarg, argv))
				return EXIT_USAGE;
		}
	}
	if (argc - optind != 1 || !out) {
		usagef("expected FILE and -o REPORT.html");
		return EXIT_USAGE;
	}
	if (host && strcmp(argv[optind], "-") == 0) {
		usagef("--host reads FILE twice; give a file, not -");
		return EXIT_USAGE;
	}
	if (dict_open(dict_path, &dict))
		return EXIT_BADINPUT;
	if (host) {
		/* the histograms are bounded: the join streams into them */
		struct host_hists *hh = calloc(1, sizeof(*hh));

		for (int x = 0; hh && x < HMB_X_COUNT; x++)
			hmb_quant_init(&hh->h[x], HMB_QUANT_KEEP);

		rc = hh ? corr_run(&corr, argv[optind], host, dict, ctrl,
				   top_n, NULL, host_hist_add, hh) :
			  (errorf("out of memory"), EXIT_BADINPUT);
		if (rc) {
			host_hists_free(hh);
			hmb_dict_free(dict);
			return rc;
		}
		corr.priv = hh;
	}
	if (input_open(&in, argv[optind], &iopts)) {
		if (host)
			corr_free(&corr);
		hmb_dict_free(dict);
		return EXIT_BADINPUT;
	}
	rc = ob_create(&ob, out, OUTBUF_SIZE);
	if (!rc) {
		rc = write_report(&in, &ob, dict, top_n, host ? &corr : NULL);
		/* No half report: ob_finish renames only a whole one. */
		rc = ob_finish(&ob, rc);
	}
	input_close(&in);
	if (host) {
		host_hists_free(corr.priv);
		corr_free(&corr);
	}
	hmb_dict_free(dict);
	return rc;
}
