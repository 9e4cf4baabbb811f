// SPDX-License-Identifier: Apache-2.0
/*
 * report --pel: the drive's Persistent Event Log on the page -- a mark on
 * the timeline at each event's firmware time (pelhost.c placed it through
 * the join's clock) and a table of every event, placed or not.
 */
#include <inttypes.h>

#include "analyze.h"
#include "pelhost.h"
#include "report.h"

static const char *ev_name(const struct pelh_ev *x, char *buf, size_t n)
{
	if (x->name)
		return x->name;
	snprintf(buf, n, "type_%02x", x->type);
	return buf;
}

void rep_pel_marks(struct hmb_outbuf *ob, const struct rep *r, int left,
		   int top, double pw, int ph, uint64_t span)
{
	const struct pelh *p = r->pel;
	char nb[16];

	for (size_t k = 0; p && k < p->n_fw; k++) {
		const struct pelh_ev *x = &p->ev[p->fw_order[k]];
		double xp;

		if (x->fw_ns < r->t0 || x->fw_ns - r->t0 > span)
			continue;
		xp = left + pw * (double)(x->fw_ns - r->t0) / (double)span;
		hmb_ob_reserve(ob, 512);
		hmb_ob_printf(ob, "<g class=\"pel\"><line x1=\"%.2f\" y1=\"%d\" x2=\"%.2f\" y2=\"%d\" stroke=\"#8e44ad\" stroke-width=\"1.5\" stroke-dasharray=\"3,2\"/><path d=\"M%.2f %d l-4 -7 h8 z\" fill=\"#8e44ad\"/><title>PEL #%u %s",
			      xp, top, xp, top + ph, xp, top, x->index,
			      ev_name(x, nb, sizeof(nb)));
		if (x->fields[0]) {
			hmb_ob_lit(ob, " ");
			rep_esc(ob, x->fields);
		}
		hmb_ob_printf(ob, "; host %" PRIu64 ".%06" PRIu64 " s ±%.3f ms, %" PRIu64 " commands overlapped</title></g>\n",
			      x->mono_ns / 1000000000u,
			      x->mono_ns % 1000000000u / 1000,
			      (double)x->bound_ns / 1e6, x->n_cmds);
	}
}

void rep_pel_section(struct hmb_outbuf *ob, const struct rep *r)
{
	const struct pelh *p = r->pel;
	char nb[16], b1[40];

	hmb_ob_lit(ob, "<h2 id=\"pel\">Persistent Event Log</h2>\n<p id=\"pel-summary\">");
	rep_esc(ob, p->path);
	hmb_ob_printf(ob, ": %zu events, %zu placed on the host clock, %zu on "
		      "the firmware time line (purple marks on the timeline)",
		      p->n, p->nplaced, p->n_fw);
	if (!p->have_clock)
		hmb_ob_lit(ob, "; no clock reading (FILE.clock): no event has a host time");
	hmb_ob_lit(ob, ".</p>\n<table class=\"slow\" id=\"pel-events\"><tr><th>#</th><th>event</th><th>firmware time</th><th>host time</th><th>±</th><th>commands overlapped</th><th>fields</th><th>placed</th></tr>\n");
	for (size_t i = 0; i < p->n; i++) {
		const struct pelh_ev *x = &p->ev[i];

		hmb_ob_reserve(ob, 1024);
		hmb_ob_printf(ob, "<tr><td>%u</td><td>%s</td><td>", x->index,
			      ev_name(x, nb, sizeof(nb)));
		if (x->on_fw)
			hmb_ob_printf(ob, "%s s", rep_fwts(x->fw_ns, b1, sizeof(b1)));
		hmb_ob_lit(ob, "</td><td>");
		if (x->why == PEL_PLACED)
			hmb_ob_printf(ob, "%" PRIu64 ".%06" PRIu64 " s</td><td>%.3f ms</td><td>%" PRIu64,
				      x->mono_ns / 1000000000u,
				      x->mono_ns % 1000000000u / 1000,
				      (double)x->bound_ns / 1e6, x->n_cmds);
		else
			hmb_ob_lit(ob, "</td><td></td><td>");
		hmb_ob_lit(ob, "</td><td>");
		rep_esc(ob, x->fields);
		hmb_ob_printf(ob, "</td><td>%s</td></tr>\n",
			      pel_unplaced_name(x->why));
	}
	hmb_ob_lit(ob, "</table>\n");
}
