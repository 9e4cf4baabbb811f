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
 * fit is counted).  The page is written by reportfw.c and reporthost.c
 * (report.h).
 */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "formats.h"
#include "report.h"
#include "pelhost.h"

#define OUTBUF_SIZE	(1u << 18)
#define MAX_GAPS	1000

/* ----------------------------------------------------------- collector */

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

/* ------------------------------------------------------------ command */

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
			const struct corr *corr, const struct pelh *pel)
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
	r->pel = pel;
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
		rep_html(ob, r, in, &m, corr);
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
"      --pel PELFILE    with --host: the drive's Persistent Event Log saved by\n"
"                       'pel --device DEV --save PELFILE', placed on the host\n"
"                       clock (PELFILE.clock), then on the timeline by the\n"
"                       join's clock (purple marks), and a table of its events\n"
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
	{ "pel", required_argument, NULL, 'P' },
	{ "help", no_argument, NULL, 'h' },
	INPUT_LONGOPTS,
	{ NULL, 0, NULL, 0 }
};

/* --pel: each command to the log's events, then to the histograms. */
struct pel_tap {
	struct host_hists *hh;
	struct pelh *pel;
};

static int pel_cmd(void *ctx, const struct hmb_join *j, size_t i,
		   const struct hmb_cmd *c)
{
	struct pel_tap *t = ctx;

	if (c->h.ctrl == hmb_join_ctrl(j) && hmb_join_clock(j)->valid) {
		pelh_cmd(t->pel, c);
		pelh_fw_cmd(t->pel, j, i, c);
	}
	return host_hist_add(t->hh, j, i, c);
}

int cmd_report(int argc, char **argv)
{
	struct input_opts iopts = { .max_gaps = MAX_GAPS };
	const char *dict_path = NULL, *out = NULL, *host = NULL;
	const char *pel_path = NULL;
	struct pelh pel;
	struct pel_tap tap;
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
		case 'P':
			pel_path = optarg;
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
	if (pel_path && !host) {
		usagef("--pel needs --host: the join's clock places the log on the timeline");
		return EXIT_USAGE;
	}
	if (pel_path && pelh_load(&pel, pel_path))
		return EXIT_BADINPUT;
	if (dict_open(dict_path, &dict)) {
		if (pel_path)
			pelh_free(&pel);
		return EXIT_BADINPUT;
	}
	if (host) {
		/* the histograms are bounded: the join streams into them */
		struct host_hists *hh = host_hists_new();

		tap = (struct pel_tap){ .hh = hh, .pel = &pel };
		rc = !hh ? (errorf("out of memory"), EXIT_BADINPUT) :
		     pel_path ? corr_run(&corr, argv[optind], host, dict, ctrl,
					 top_n, NULL, pel_cmd, &tap) :
		     corr_run(&corr, argv[optind], host, dict, ctrl, top_n,
			      NULL, host_hist_add, hh);
		if (!rc && pel_path && pelh_fw_end(&pel))
			rc = (corr_free(&corr), errorf("out of memory"),
			      EXIT_BADINPUT);
		if (rc) {
			host_hists_free(hh);
			hmb_dict_free(dict);
			if (pel_path)
				pelh_free(&pel);
			return rc;
		}
		corr.priv = hh;
	}
	if (input_open(&in, argv[optind], &iopts)) {
		if (host)
			corr_free(&corr);
		hmb_dict_free(dict);
		if (pel_path)
			pelh_free(&pel);
		return EXIT_BADINPUT;
	}
	rc = ob_create(&ob, out, OUTBUF_SIZE);
	if (!rc) {
		rc = write_report(&in, &ob, dict, top_n, host ? &corr : NULL,
				  pel_path ? &pel : NULL);
		/* No half report: ob_finish renames only a whole one. */
		rc = ob_finish(&ob, rc);
	}
	input_close(&in);
	if (host) {
		host_hists_free(corr.priv);
		corr_free(&corr);
	}
	hmb_dict_free(dict);
	if (pel_path)
		pelh_free(&pel);
	return rc;
}
