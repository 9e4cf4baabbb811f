/* SPDX-License-Identifier: GPL-2.0 */
/*
 * analysis.h - the user-space half of hmb-trace-agent's join: the firmware
 * -> host clock estimate (two clocks), per-command phase breakdown, background
 * windows, top-N, log2 histograms.  No libbpf here, so it can be unit tested
 * with synthetic events.
 */
#ifndef HMB_AGENT_ANALYSIS_H
#define HMB_AGENT_ANALYSIS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <linux/types.h>
#include "hmb_agent.h"

/* The firmware -> host clock estimate lives in libhmbtrace, shared
 * with hmb-trace-analyze correlate. */
#include "hmbtrace_clock.h"

/* ------------------------------------------------------------ histograms */

struct hmb_log2_hist {
	uint64_t slots[HMB_MAX_SLOTS];
};

void hmb_hist_add(struct hmb_log2_hist *h, uint64_t ns);
uint64_t hmb_hist_total(const struct hmb_log2_hist *h);
/* print_log2_hist style, "usecs" column. */
void hmb_hist_print(FILE *f, const struct hmb_log2_hist *h, const char *title);
void hmb_hist_json(FILE *f, const struct hmb_log2_hist *h);

/* ---------------------------------------------------- background windows */

#define HMB_BG_KEEP 4096

struct hmb_bg_rec {
	uint64_t ts;		/* firmware time */
	uint16_t opcode;
	uint8_t edge;
	uint8_t group;		/* index into analysis' group names */
	uint16_t payload_len;
	uint8_t payload[HMB_BG_PAYLOAD];
};

/* ------------------------------------------------------- per command */

enum hmb_match {
	HMB_M_HOST_ONLY = 0,	/* no firmware side expected */
	HMB_M_MATCHED,		/* fetch and cqe_posted both attached */
	HMB_M_PARTIAL,		/* some firmware events, not both */
	HMB_M_UNMATCHED,	/* firmware expected, none attached */
};

/* Derived phases (ns) of one command. */
enum hmb_xphase {
	HMB_X_HOST_TOTAL = 0,	/* submit -> complete (host clock) */
	HMB_X_SUBMIT_TO_FETCH,	/* host submit -> fw fetch (mapped) */
	HMB_X_FW_TOTAL,		/* fetch -> cqe_posted (fw clock) */
	HMB_X_CQE_TO_COMPLETE,	/* fw cqe_posted (mapped) -> host complete */
	HMB_X_COUNT
};

struct hmb_cmd {
	struct hmb_cmd_event ev;
	enum hmb_match match;
	bool placed;		/* clock estimate was valid when analysed */
	bool in_window;		/* fw events inside [submit, complete] */
	bool in_window_err;	/* ... within the estimate's error bound */
	int64_t x[HMB_X_COUNT];	/* -1 if unknown */
};

struct hmb_analysis_opts {
	unsigned int top_n;
	uint64_t min_lat_ns;
	size_t clock_window;	/* points */
	size_t clock_min_points;
};

struct hmb_analysis {
	struct hmb_analysis_opts o;
	struct hmb_clock clk;
	/* commands waiting for the first clock estimate */
	struct hmb_cmd_event *pending;
	size_t npending, cap_pending;
	/* totals (whole run) and this interval */
	struct hmb_totals {
		uint64_t cmds, matched, partial, unmatched, host_only;
		uint64_t placed, in_window, in_window_err, outside_window;
		uint64_t reused, swept, no_room, no_complete, below_min;
	} tot, iv;
	struct hmb_log2_hist xh[HMB_X_COUNT];	/* whole run */
	struct hmb_log2_hist xh_iv[HMB_X_COUNT];
	/* top-N slowest: of the interval and of the run */
	struct hmb_cmd *top_iv, *top_all;
	unsigned int ntop_iv, ntop_all;
	/* background events (ring of the last HMB_BG_KEEP) */
	struct hmb_bg_rec bg[HMB_BG_KEEP];
	uint64_t nbg;
	char groups[16][32];
	unsigned int ngroups;
};

int hmb_analysis_init(struct hmb_analysis *a, const struct hmb_analysis_opts *o);
void hmb_analysis_free(struct hmb_analysis *a);
/* One per-command event from the BPF ring buffer (or the sweep). */
void hmb_analysis_cmd(struct hmb_analysis *a, const struct hmb_cmd_event *ev);
/* One background event; @group names its dictionary group. */
void hmb_analysis_bg(struct hmb_analysis *a, const struct hmb_bg_event *ev,
		     const char *group);
/* Commands placed on the host clock lag this far behind the newest. */
#define HMB_PLACE_LAG 64
/* Re-solve the clock and place the commands waiting for it (but the last
 * HMB_PLACE_LAG). */
void hmb_analysis_tick(struct hmb_analysis *a);
/* At the end: place every waiting command (unplaced if no estimate). */
void hmb_analysis_flush(struct hmb_analysis *a);
/* Start a new interval (clears the interval totals, top-N, histograms). */
void hmb_analysis_new_interval(struct hmb_analysis *a);

/*
 * Background windows overlapping firmware time [t0, t1]: calls @fn for each
 * (group, begin ts or 0 if it began before what we kept, end ts or 0 if
 * still open) and the begin event.  Returns how many.
 */
typedef void (*hmb_bg_fn)(void *ctx, const char *group, uint64_t begin,
			  uint64_t end, const struct hmb_bg_rec *rec);
unsigned int hmb_analysis_bg_overlap(const struct hmb_analysis *a,
				     uint64_t t0, uint64_t t1, hmb_bg_fn fn,
				     void *ctx);

#endif /* HMB_AGENT_ANALYSIS_H */
