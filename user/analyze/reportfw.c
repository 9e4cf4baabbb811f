// SPDX-License-Identifier: Apache-2.0
/*
 * report's page: the summary, then its firmware sections in order (the
 * timeline, events by opcode, latency by phase, the slowest commands, the
 * losses), the host section between them with --host, and the one script.
 */
#include <stdlib.h>
#include <time.h>

#include "report.h"

static void timeline(struct hmb_outbuf *ob, const struct rep *r)
{
	const int h = 180, left = 60, top = 10, ph = 130;
	const double pw = REP_W - left - 10;
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
		  "(bands below the axis), losses (red marks)%s.  Firmware "
		  "clock from %s s.</p>\n", rep_dur(r->width, b1, sizeof(b1)),
		  r->pel ? ", Persistent Event Log events (purple dashed "
		  "lines; the log's table below)" : "",
		  rep_fwts(r->t0, b2, sizeof(b2)));
	svg_open(ob, REP_W, h + 20 * (int)r->ngroups, "timeline");
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
			  rep_palette[(b->group + 2) % 8], r->groups[b->group],
			  rep_dur(b->t1 - b->t0, b1, sizeof(b1)));
	}
	rep_pel_marks(ob, r, left, top, pw, ph, span);
	for (unsigned int g = 0; g < r->ngroups; g++)
		hmb_ob_printf(ob, "<text x=\"4\" y=\"%d\" font-size=\"11\">%s</text>\n",
			  top + ph + 35 + 20 * g, r->groups[g]);
	hmb_ob_printf(ob, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#333\"/>\n",
		  left, top + ph, REP_W - 10, top + ph);
	for (int t = 0; t <= 4; t++) {
		double x = left + pw * t / 4;

		hmb_ob_printf(ob, "<text x=\"%.0f\" y=\"%d\" font-size=\"11\" text-anchor=\"%s\">+%s</text>\n",
			  x, top + ph + 14, t == 0 ? "start" : t == 4 ? "end" : "middle",
			  rep_dur(span * (uint64_t)t / 4, b1, sizeof(b1)));
	}
	hmb_ob_printf(ob, "<text x=\"4\" y=\"%d\" font-size=\"11\">%llu</text>\n",
		  top + 10, (unsigned long long)max);
	hmb_ob_lit(ob, "</svg>\n");
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
	svg_open(ob, REP_W, rowh * (int)n + 10, "events by opcode");
	n = 0;
	while (hmb_opcode_iter_next(&all, &op, &cnt)) {
		const struct hmb_dict_event *ev = hmb_dict_lookup(r->dict, op);
		double w = (REP_W - left - 120.0) * cnt / max;

		hmb_ob_reserve(ob, 512);
		hmb_ob_printf(ob, "<text x=\"4\" y=\"%d\" font-size=\"12\">0x%04x %s</text>"
			  "<rect x=\"%d\" y=\"%d\" width=\"%.1f\" height=\"%d\" fill=\"%s\"/>"
			  "<text x=\"%.1f\" y=\"%d\" font-size=\"12\">%llu</text>\n",
			  n * rowh + 14, op, ev ? ev->name : "(not in dictionary)",
			  left, n * rowh + 3, w > 1 ? w : 1, rowh - 4,
			  ev ? rep_palette[0] : "#bab0ac", left + w + 4,
			  n * rowh + 14, (unsigned long long)cnt);
		n++;
	}
	hmb_ob_lit(ob, "</svg>\n");
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
		svg_latency(ob, &r->total, "total: fetch -> cqe_posted");
		charts++;
	}
	for (int a = 0; a < HMB_PHASE_COUNT; a++)
		for (int b = 0; b < HMB_PHASE_COUNT; b++) {
			if (!r->step[a][b].n)
				continue;
			snprintf(title, sizeof(title), "%s -> %s",
				 hmb_phase_name(a), hmb_phase_name(b));
			svg_latency(ob, &r->step[a][b], title);
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
			  c->cid, rep_dur(r->top[i].total, b1, sizeof(b1)));
		for (int p = HMB_PHASE_FETCH; p < HMB_PHASE_COUNT; p++) {
			const struct hmb_dict_event *ev;

			if (!(c->mask & (1u << p)))
				continue;
			ev = hmb_dict_phase_event(r->dict, p);
			hmb_ob_reserve(ob, 512);
			hmb_ob_printf(ob, "%s +%s (cpu %u, seq %u) @%s<br>",
				  ev ? ev->name : hmb_phase_name(p),
				  rep_dur(c->ts[p] - f, b2, sizeof(b2)), c->ecpu[p],
				  c->seq[p], rep_fwts(c->ts[p], b3, sizeof(b3)));
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
				  rep_dur(b->t1 - b->t0, b1, sizeof(b1)),
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
			  rep_fwts(g->ts_before, b1, sizeof(b1)),
			  rep_fwts(g->ts_after, b2, sizeof(b2)),
			  (unsigned long long)g->offset);
	}
	hmb_ob_lit(ob, "</table>\n");
	if (in->gaps_omitted)
		hmb_ob_printf(ob, "<p>%llu more gaps not listed.</p>\n",
			  (unsigned long long)in->gaps_omitted);
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

void rep_html(struct hmb_outbuf *ob, struct rep *r, const struct input *in,
	      const struct hmb_fwmodel *m, const struct corr *corr)
{
	const struct hmb_acct *a = in->acct;
	char b1[40], b2[40], b3[40];
	time_t now = time(NULL);
	struct tm tm;

	gmtime_r(&now, &tm);
	hmb_ob_lit(ob, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n<title>HMB trace report: ");
	rep_esc(ob, in->name);
	hmb_ob_lit(ob, "</title>\n<style>");
	hmb_ob_puts(ob, css);
	hmb_ob_lit(ob, "</style></head><body>\n<h1>HMB firmware trace: ");
	rep_esc(ob, in->name);
	hmb_ob_lit(ob, "</h1>\n<table class=\"summary\">\n");
	hmb_ob_printf(ob, "<tr><td>records</td><td>%llu (%s)</td></tr>\n",
		  (unsigned long long)a->records,
		  hmb_reader_dialect(in->reader) == HMB_DIALECT_RING ?
		  "ring image" : "dump");
	if (a->records)
		hmb_ob_printf(ob, "<tr><td>firmware time</td><td>%s s .. %s s (%s)</td></tr>\n",
			  rep_fwts(a->first_ts_ns, b1, sizeof(b1)),
			  rep_fwts(a->last_ts_ns, b2, sizeof(b2)),
			  rep_dur(a->last_ts_ns - a->first_ts_ns, b3, sizeof(b3)));
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
		timeline(ob, r);
	opcodes(ob, r, a);
	latencies(ob, r);
	if (corr)
		rep_host_section(ob, corr);
	if (r->pel)
		rep_pel_section(ob, r);
	slowest(ob, r);
	losses(ob, in);
	hmb_ob_lit(ob, "<script>");
	hmb_ob_puts(ob, script);
	hmb_ob_lit(ob, "</script>\n</body></html>\n");
}
