/* SPDX-License-Identifier: Apache-2.0 */
/*
 * report's parts: the command and the one pass that collects what the page
 * shows (report.c), the HTML and SVG primitives (reportsvg.c), the page and
 * its firmware sections (reportfw.c), the host section (reporthost.c).
 */
#ifndef HMB_ANALYZE_REPORT_H
#define HMB_ANALYZE_REPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "analyze.h"
#include "correlate.h"
#include "hmbtrace_fwmodel.h"

#define NBUCKETS	400		/* timeline resolution */
#define MAX_TOP		100
#define MAX_BG		20000

/* ----------------------------------------------------------- collected */

struct topcmd {
	struct hmb_fwm_cmd c;
	uint64_t total;
};

struct bgwin {
	uint64_t t0, t1;
	uint8_t group;
	uint8_t flags;
};

/* What the pass over the firmware records collects (report.c). */
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
	/* --pel: the log, its events given firmware times by the join */
	const struct pelh *pel;
};

/* ------------------------------------------------- primitives (reportsvg.c) */

#define REP_W	960		/* the page's chart width */

/* The colours of the charts, 8 of them. */
extern const char *const rep_palette[8];

/* @s as HTML text or attribute value. */
void rep_esc(struct hmb_outbuf *ob, const char *s);
/* @ns as "12 ns", "3.4 µs", "5.67 ms" or "8.901 s", into @buf. */
const char *rep_dur(uint64_t ns, char *buf, size_t len);
/* Seconds.nanoseconds of the firmware clock, into @buf. */
const char *rep_fwts(uint64_t ns, char *buf, size_t len);
/* Open an inline <svg> chart of @w x @h named @label (closed by "</svg>"). */
void svg_open(struct hmb_outbuf *ob, int w, int h, const char *label);
/* Histogram by octave and CDF on a log axis, side by side, under @title. */
void svg_latency(struct hmb_outbuf *ob, const struct hmb_quant *h,
		 const char *title);

/* ---------------------------------------------------------------- sections */

/* The whole page (reportfw.c); @corr: with the host section, or NULL. */
void rep_html(struct hmb_outbuf *ob, struct rep *r, const struct input *in,
	      const struct hmb_fwmodel *m, const struct corr *corr);

/* The host section's histograms, filled as the join hands out commands
 * (reporthost.c); new returns NULL when out of memory. */
struct host_hists;
struct host_hists *host_hists_new(void);
void host_hists_free(struct host_hists *hh);
int host_hist_add(void *ctx, const struct hmb_join *j, size_t i,
		  const struct hmb_cmd *c);
/* The host's view: the join with HOST_EVENTS (c->priv: its host_hists). */
void rep_host_section(struct hmb_outbuf *ob, const struct corr *c);
/* --pel (reportpel.c): its marks on the timeline's plot (@left, @top,
 * @pw x @ph, @span ns from r->t0), and its section. */
struct pelh;
void rep_pel_marks(struct hmb_outbuf *ob, const struct rep *r, int left,
		   int top, double pw, int ph, uint64_t span);
void rep_pel_section(struct hmb_outbuf *ob, const struct rep *r);

#endif /* HMB_ANALYZE_REPORT_H */
