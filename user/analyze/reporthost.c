// SPDX-License-Identifier: Apache-2.0
/*
 * report --host: the host's view of the same commands, from the join of
 * correlate (libhmbtrace's): matched counts, the clock estimate, the
 * host/firmware breakdown histograms and the slowest host commands.
 */
#include <stdlib.h>

#include "report.h"

struct host_hists {
	struct hmb_quant h[HMB_X_COUNT];
};

struct host_hists *host_hists_new(void)
{
	struct host_hists *hh = calloc(1, sizeof(*hh));

	for (int x = 0; hh && x < HMB_X_COUNT; x++)
		hmb_quant_init(&hh->h[x], HMB_QUANT_KEEP);
	return hh;
}

void host_hists_free(struct host_hists *hh)
{
	for (int x = 0; hh && x < HMB_X_COUNT; x++)
		hmb_quant_free(&hh->h[x]);
	free(hh);
}

/* corr_run's callback: every command of the joined controller, as it
 * comes out of the join. */
int host_hist_add(void *ctx, const struct hmb_join *j, size_t i,
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
				rep_dur((uint64_t)c->x[x], b[x], sizeof(b[x]));
			else
				snprintf(b[x], sizeof(b[x]), "-");
		hmb_ob_printf(ob, "<tr><td>%u</td><td>", t + 1);
		rep_esc(ob, c->h.opc[0] ? c->h.opc : "?");
		hmb_ob_printf(ob, "</td><td>%u</td><td>0x%04x</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td></tr>\n",
			      c->h.qid, c->h.cid, b[HMB_X_HOST_TOTAL],
			      b[HMB_X_SUBMIT_TO_FETCH], b[HMB_X_FW_TOTAL],
			      b[HMB_X_CQE_TO_COMPLETE],
			      hmb_match_name(c->match));
	}
	hmb_ob_lit(ob, "</table>\n");
}

/* The host's view: the join with HOST_EVENTS (libhmbtrace's, correlate's). */
void rep_host_section(struct hmb_outbuf *ob, const struct corr *c)
{
	const struct hmb_cmd_stats *s = hmb_join_stats(c->j);
	const struct hmb_cmd_totals *t = &s->tot;
	const struct host_hists *hh = c->priv;

	hmb_ob_lit(ob, "<h2 id=\"host\">Host and firmware</h2>\n<p id=\"host-summary\">");
	rep_esc(ob, c->host.path);
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
			svg_latency(ob, &hh->h[x], hmb_xphase_title(x));
	hmb_ob_lit(ob, "</div>\n");
	host_slowest(ob, s);
}
