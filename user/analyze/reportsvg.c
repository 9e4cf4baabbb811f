// SPDX-License-Identifier: Apache-2.0
/*
 * report's primitives: HTML escaping, the durations and timestamps every
 * section prints, the palette, an inline SVG chart, and the latency chart
 * pair (histogram by octave and CDF) of the firmware and host sections.
 */
#include <math.h>
#include <stdio.h>

#include "report.h"

void rep_esc(struct hmb_outbuf *ob, const char *s)
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

const char *rep_dur(uint64_t ns, char *buf, size_t len)
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
const char *rep_fwts(uint64_t ns, char *buf, size_t len)
{
	snprintf(buf, len, "%llu.%09llu", (unsigned long long)(ns / 1000000000),
		 (unsigned long long)(ns % 1000000000));
	return buf;
}

const char *const rep_palette[8] = {
	"#4e79a7", "#f28e2b", "#59a14f", "#b07aa1", "#76b7b2", "#edc948",
	"#9c755f", "#bab0ac",
};

void svg_open(struct hmb_outbuf *ob, int w, int h, const char *label)
{
	hmb_ob_printf(ob, "<svg class=\"chart\" xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" role=\"img\" aria-label=\"",
		  w, h, w, h);
	rep_esc(ob, label);
	hmb_ob_lit(ob, "\">\n");
}

/*
 * The charts' values are libhmbtrace's percentiles (hmbtrace_quant.h), the
 * shared log-linear histogram: its buckets draw them, and its percentiles
 * are exact while it holds the values, else within 1/32, said in the
 * chart.  The octaves drawn are its buckets summed by floor(log2(ns)), not
 * the slots of hmbtrace_hist.h: those count microseconds, 0 and 1 us in
 * one slot, so a firmware phase of a few hundred nanoseconds would fall in
 * slot 0 with everything under 2 us.
 */

/* Position of bucket @i's lower bound on a log2 axis (in octaves). */
static double oct_pos(unsigned int i)
{
	uint64_t lo = hmb_quant_bucket_lo(i);

	return lo < 2 ? 0 : log2((double)lo);
}

/* Histogram by octave and CDF on a log axis, side by side. */
void svg_latency(struct hmb_outbuf *ob, const struct hmb_quant *h,
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
	rep_esc(ob, title);
	hmb_ob_printf(ob, "</h3><p class=\"small\">n=%llu, min %s",
		      (unsigned long long)h->n, rep_dur(h->min, b1, sizeof(b1)));
	for (int i = 0; i < HMB_QUANT_NLEVELS; i++) {
		hmb_quant_at(q, hmb_quant_levels[i], &pv);
		exact = exact && pv.exact;
		hmb_ob_printf(ob, ", %s %s", hmb_quant_level_names[i],
			      rep_dur(pv.v, b1, sizeof(b1)));
	}
	hmb_ob_printf(ob, ", max %s, mean %s%s</p>\n",
		      rep_dur(h->max, b1, sizeof(b1)),
		      rep_dur(h->sum / h->n, b2, sizeof(b2)),
		      exact ? "" : " (percentiles from buckets, within 3.2 %)");
	/* histogram */
	svg_open(ob, cw, ch, "histogram");
	for (unsigned int k = k0; k <= k1; k++) {
		double x = left + pw * (k - k0) / nk, bh = (double)ph * oct[k] / omax;

		hmb_ob_reserve(ob, 512);
		hmb_ob_printf(ob, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"#59a14f\"><title>%s..%s: %llu</title></rect>\n",
			  x + 1, top + ph - bh, pw / nk - 2, bh,
			  rep_dur(1ull << k, b1, sizeof(b1)),
			  rep_dur((2ull << k) - 1, b2, sizeof(b2)),
			  (unsigned long long)oct[k]);
		if ((k - k0) % lstep == 0)
			hmb_ob_printf(ob, "<text x=\"%.1f\" y=\"%d\" font-size=\"10\" text-anchor=\"middle\">%s</text>\n",
				  x + pw / nk / 2, top + ph + 13,
				  rep_dur(1ull << k, b1, sizeof(b1)));
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
			  rep_dur(1ull << k, b1, sizeof(b1)));
	hmb_ob_printf(ob, "<text x=\"%d\" y=\"%d\" font-size=\"10\" text-anchor=\"middle\">cumulative fraction</text></svg></div>\n",
		  cw / 2, ch - 4);
}
