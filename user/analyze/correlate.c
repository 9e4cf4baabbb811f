// SPDX-License-Identifier: Apache-2.0
/*
 * correlate: the offline form of hmb-trace-agent's join, for a dump taken
 * by the classic daemon and host events recorded by the agent (host-only
 * mode is enough) or by perf script of the nvme tracepoints.  A front end
 * over libhmbtrace: the join (hmbtrace_join.h), the verdict on each
 * command and its printers (hmbtrace_cmd.h) are the library's, the ones
 * the live agent uses, so the two agree by construction.
 */
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "analyze.h"
#include "correlate.h"
#include "pelhost.h"

/* ---------------------------------------------------------------- text */

static const char *const placed_with[2] = {
	"their chunk's segment (the run's estimate saw more than one step or does not fit one line)",
	"the run's estimate (streamed as the agent does, record by record across a step)",
};

static void print_segments(FILE *f, const struct corr *c)
{
	const struct hmb_join_totals *t = hmb_join_totals(c->j);
	const struct hmb_cmd_stats *s = hmb_join_stats(c->j);
	const struct hmb_join_seg *g;
	size_t n = hmb_join_segments(c->j, &g);

	fprintf(f, "commands placed with: %s\n", placed_with[t->place_run]);
	fprintf(f, "clock segments: %zu (estimated per chunk of host time), offset steps between them: %u\n",
		n, t->segment_steps);
	for (size_t k = 0; t->segment_steps && k < n; k++) {
		fprintf(f, "  from host %.6f s: host = fw %+.3f us (±%.3f us), drift %+.3f ppm, %zu commands\n",
			(double)g[k].first_submit / 1e9, g[k].off_ns / 1e3,
			g[k].off_err_ns / 1e3, g[k].drift * 1e6, g[k].used);
		if (g[k].step_next)
			fprintf(f, "  clock step before firmware record seq %u\n",
				g[k].step_seq);
	}
	if (t->segment_steps || hmb_join_clock(c->j)->have_prev)
		fprintf(f, "commands the firmware was working on across a step (records mapped on both clocks): %llu\n",
			(unsigned long long)s->tot.across_step);
}

static void print_text(FILE *f, const struct corr *c,
		       const struct hmb_dict *dict)
{
	const struct hmb_join_totals *t = hmb_join_totals(c->j);
	const struct hmb_cmd_stats *s = hmb_join_stats(c->j);

	fprintf(f, "correlate: %s (%llu firmware commands, %llu records lost) with %s (%llu host commands, %s; nvme%u)\n",
		c->dump, (unsigned long long)t->fw_cmds,
		(unsigned long long)c->fw_lost, c->host.path,
		(unsigned long long)t->host_cmds,
		hostev_fmt_name(c->host.fmt), hmb_join_ctrl(c->j));
	fprintf(f, "host commands: %llu; ", (unsigned long long)s->tot.cmds);
	hmb_cmd_totals_print(f, &s->tot);
	if (t->other_ctrl)
		fprintf(f, "; %llu of other controllers",
			(unsigned long long)t->other_ctrl);
	fprintf(f, "\nfirmware commands not matched: %llu of %llu; host lines skipped: %llu block-layer, %llu incomplete, %llu completions without setup\n",
		(unsigned long long)t->fw_unmatched,
		(unsigned long long)t->fw_cmds,
		(unsigned long long)c->host.block,
		(unsigned long long)c->host.incomplete,
		(unsigned long long)c->host.unpaired);
	if (t->fw_refused || t->fw_split)
		fprintf(f, "pairings refused as outside the host window on the final clock: %llu; firmware commands cut at a loss: %llu\n",
			(unsigned long long)t->fw_refused,
			(unsigned long long)t->fw_split);
	hmb_clock_print(f, hmb_join_clock(c->j));
	print_segments(f, c);
	hmb_quant_print(f, s);
	for (int x = 0; x < HMB_X_COUNT; x++)
		hmb_hist_print(f, &s->xh[x], hmb_xphase_title(x));
	if (!s->ntop)
		return;
	fprintf(f, "\n%u slowest commands:\n", s->ntop);
	for (unsigned int i = 0; i < s->ntop; i++)
		hmb_cmd_print(f, &s->top[i], (int)i + 1, dict);
}

/* Reordering beyond the window: said on stderr, counted in the totals. */
static void print_late(const struct corr *c)
{
	const struct hmb_join_totals *t = hmb_join_totals(c->j);

	if (t->host_late || t->fw_late)
		fprintf(stderr, PROG ": %s: %llu host and %llu firmware commands came later than the join's window allows (--late-ms): judged, likely unmatched\n",
			c->host.path, (unsigned long long)t->host_late,
			(unsigned long long)t->fw_late);
}

/* ---------------------------------------------------------------- JSON */

static int cmd_line(void *ctx, const struct hmb_join *jn, size_t i,
		    const struct hmb_cmd *c)
{
	struct hmb_json *j = ctx;

	(void)jn;
	(void)i;
	hmb_json_obj(j);
	hmb_json_kv_str(j, "type", "cmd");
	hmb_json_key(j, "cmd");
	hmb_json_obj(j);
	hmb_cmd_json_members(j, c);
	hmb_json_end(j);
	hmb_json_end(j);
	hmb_json_nl(j);
	return j->ob->err;
}

static void final_totals(struct hmb_json *j, const struct corr *c)
{
	const struct hmb_join_totals *t = hmb_join_totals(c->j);

	hmb_json_key(j, "totals");
	hmb_json_obj(j);
	hmb_cmd_totals_json_members(j, &hmb_join_stats(c->j)->tot);
	hmb_json_kv_u64(j, "host_commands", t->host_cmds);
	hmb_json_kv_u64(j, "other_ctrl", t->other_ctrl);
	hmb_json_kv_u64(j, "fw_commands", t->fw_cmds);
	hmb_json_kv_u64(j, "fw_complete", t->fw_complete);
	hmb_json_kv_u64(j, "fw_unmatched", t->fw_unmatched);
	hmb_json_kv_u64(j, "fw_records_lost", c->fw_lost);
	hmb_json_kv_u64(j, "host_block_skipped", c->host.block);
	hmb_json_kv_u64(j, "host_incomplete", c->host.incomplete);
	hmb_json_kv_u64(j, "host_unpaired", c->host.unpaired);
	hmb_json_kv_u64(j, "windows", t->windows);
	hmb_json_kv_u64(j, "host_late", t->host_late);
	hmb_json_kv_u64(j, "fw_late", t->fw_late);
	hmb_json_kv_u64(j, "fw_refused", t->fw_refused);
	hmb_json_kv_u64(j, "fw_split", t->fw_split);
	hmb_json_end(j);
}

static void final_clock(struct hmb_json *j, const struct corr *c)
{
	const struct hmb_join_totals *t = hmb_join_totals(c->j);
	const struct hmb_join_seg *g;
	size_t n = hmb_join_segments(c->j, &g);

	hmb_json_key(j, "clock");
	hmb_json_obj(j);
	hmb_clock_json_members(j, hmb_join_clock(c->j));
	hmb_json_kv_u64(j, "segment_steps", t->segment_steps);
	hmb_json_kv_str(j, "placed_with", t->place_run ? "run" : "segments");
	hmb_json_key(j, "segments");
	hmb_json_arr(j);
	for (size_t k = 0; k < n; k++) {
		hmb_json_obj(j);
		hmb_json_kv_bool(j, "valid", g[k].valid);
		hmb_json_kv_u64(j, "first_submit_ns", g[k].first_submit);
		hmb_json_kv_dbl(j, "offset_ns", g[k].off_ns, 0);
		hmb_json_kv_dbl(j, "offset_err_ns", g[k].off_err_ns, 0);
		hmb_json_kv_dbl(j, "ref_fw_ns", g[k].ref, 0);
		hmb_json_kv_dbl(j, "drift_ppm", g[k].drift * 1e6, 3);
		hmb_json_kv_u64(j, "points", g[k].used);
		if (g[k].step_next)
			hmb_json_kv_u64(j, "step_to_next_at_seq", g[k].step_seq);
		hmb_json_end(j);
	}
	hmb_json_end_arr(j);
	hmb_json_end(j);
}

/* The log2 histogram of each phase, as the agent's summary has them. */
static void final_hists(struct hmb_json *j, const struct corr *c)
{
	const struct hmb_cmd_stats *s = hmb_join_stats(c->j);

	hmb_json_key(j, "hists_us");
	hmb_json_obj(j);
	for (int x = 0; x < HMB_X_COUNT; x++) {
		hmb_json_key_str(j, hmb_xphase_name((enum hmb_xphase)x));
		hmb_hist_json(j, &s->xh[x]);
	}
	hmb_json_end(j);
	hmb_json_key(j, "percentiles");
	hmb_quant_json(j, s);
}

/* The final line, after the "cmd" lines the join streamed through @j
 * (and the "pel" lines of --pel). */
static void print_final(struct hmb_json *j, const struct corr *c,
			const struct pelh *pel)
{
	if (j->ob->err)
		return;
	if (pel)
		pelh_json_lines(j, pel);
	hmb_json_obj(j);
	hmb_json_kv_str(j, "type", "final");
	hmb_json_kv_str(j, "host_format",
			c->host.fmt == HOST_FMT_AGENT ? "agent" : "perf");
	hmb_json_kv_u64(j, "ctrl", hmb_join_ctrl(c->j));
	final_totals(j, c);
	final_clock(j, c);
	final_hists(j, c);
	if (pel)
		pelh_json_totals(j, pel);
	hmb_json_end(j);
	hmb_json_nl(j);
}

void usage_correlate(FILE *f)
{
	fprintf(f,
"Usage: " PROG " correlate FW_DUMP HOST_EVENTS [OPTIONS]\n"
"\n"
"The offline form of hmb-trace-agent's join: line up the firmware records of\n"
"FW_DUMP (a dump from hmb-trace-daemon, or a ring image) with the host's\n"
"view of the same NVMe commands, and split each command's latency into\n"
"host submit -> firmware fetch -> firmware cqe_posted -> host completion.\n"
"The firmware clock is mapped to the host's by the estimate hmb-trace-agent\n"
"uses (offset and drift with an error bound, from the matched commands).\n"
"\n"
"HOST_EVENTS is either\n"
"  - the JSON lines of 'hmb-trace-agent -j --per-command' (host-only mode is\n"
"    enough: it needs ctrl, qid, cid, submit_ns and complete_ns), or\n"
"  - 'perf script' output of nvme:nvme_setup_cmd and nvme:nvme_complete_rq.\n"
"\n"
"Options:\n"
"  -f, --format FMT     text (default): summary, clock, log2 histograms and\n"
"                       the slowest commands; json: one {\"type\":\"cmd\"} line\n"
"                       per host command, then one {\"type\":\"final\"} line\n"
"                       (totals, clock, the log2 histogram of each phase)\n"
"  -j, --json           same as --format json\n"
"      --no-commands    json: the final line only, no line per command\n"
"      --ctrl N         the host controller (nvmeN) of the dump, when\n"
"                       HOST_EVENTS covers several\n"
"      --top N          slowest commands to show (text; default 10)\n"
"      --dict FILE      event dictionary (default: the shipped one)\n"
"      --window N       join N host commands at a time (default 65536; 0: the\n"
"                       whole input at once, memory growing with it)\n"
"      --late-ms MS     reordering a window absorbs, in host ms (default 100):\n"
"                       a command later than that is counted late, not lost\n"
"      --pel FILE       the drive's Persistent Event Log saved by 'pel --device\n"
"                       DEV --save FILE' (FILE.clock places it on the host\n"
"                       clock): each event with its host time and bound and\n"
"                       the commands it overlapped (text: a section in time\n"
"                       order; json: one {\"type\":\"pel\"} line per event\n"
"                       before the final line); events before the controller\n"
"                       clock's last reset or change are listed, not placed\n"
"  -o, --output PATH    write to PATH instead of stdout\n"
"  -h, --help           this help\n"
"\n"
"Examples:\n"
"  hmb-trace-agent -d nvme0n1 -j --per-command -o host.jsonl &\n"
"  hmb-trace-daemon --device /dev/nvme-hmb-trace0 -o fw.bin\n"
"  " PROG " correlate fw.bin host.jsonl\n"
"\n"
"  perf record -e nvme:nvme_setup_cmd -e nvme:nvme_complete_rq -a -- sleep 10\n"
"  perf script --ns > host.txt\n"
"  " PROG " correlate fw.bin host.txt --format json | jq 'select(.type==\"final\")'\n"
"  " PROG " correlate fw.bin host.jsonl -j --no-commands | jq .hists_us.host_total\n");
}

static const struct option corr_opts[] = {
	{ "format", required_argument, NULL, 'f' },
	{ "json", no_argument, NULL, 'j' },
	{ "no-commands", no_argument, NULL, 'N' },
	{ "ctrl", required_argument, NULL, 'C' },
	{ "top", required_argument, NULL, 'T' },
	{ "dict", required_argument, NULL, 'D' },
	{ "window", required_argument, NULL, 'W' },
	{ "late-ms", required_argument, NULL, 'L' },
	{ "pel", required_argument, NULL, 'P' },
	{ "output", required_argument, NULL, 'o' },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 }
};

/* --pel: every command to the log's events, then to the JSON line. */
struct pel_tap {
	struct pelh *pel;
	corr_cmd_fn fn;
	void *ctx;
};

static int pel_cmd(void *ctx, const struct hmb_join *jn, size_t i,
		   const struct hmb_cmd *c)
{
	struct pel_tap *t = ctx;

	if (c->h.ctrl == hmb_join_ctrl(jn))
		pelh_cmd(t->pel, c);
	return t->fn ? t->fn(t->ctx, jn, i, c) : 0;
}

int cmd_correlate(int argc, char **argv)
{
	const char *dict_path = NULL, *out_path = NULL, *pel_path = NULL;
	struct pelh pel;
	struct pel_tap tap = { 0 };
	corr_cmd_fn fn;
	void *fn_ctx;
	struct hmb_dict *dict = NULL;
	unsigned int top = 10;
	FILE *out = stdout;
	bool json = false, per_cmd = true;
	long ctrl = -1;
	struct corr_win win = { 0 };
	struct hmb_outbuf ob;
	struct hmb_json j;
	struct corr c;
	uint64_t v;
	int opt, rc;

	optind = 1;
	while ((opt = getopt_long(argc, argv, ":f:jo:h", corr_opts, NULL)) != -1) {
		switch (opt) {
		case 'f':
		case 'j':
			if (format_opt(opt, optarg, &json))
				return EXIT_USAGE;
			break;
		case 'N':
			per_cmd = false;
			break;
		case 'C':
			if (parse_ctrl(optarg, &ctrl))
				return EXIT_USAGE;
			break;
		case 'T':
			if (parse_count("top", optarg, 0, 100000, &v))
				return EXIT_USAGE;
			top = (unsigned int)v;
			break;
		case 'D':
			dict_path = optarg;
			break;
		case 'W':
			if (parse_count("window", optarg, 0, 1u << 30, &v))
				return EXIT_USAGE;
			win.cmds = v ? (size_t)v : SIZE_MAX;
			break;
		case 'L':
			if (parse_count("late-ms", optarg, 1, 3600000, &v))
				return EXIT_USAGE;
			win.late_ns = v * 1000000ull;
			break;
		case 'P':
			pel_path = optarg;
			break;
		case 'o':
			out_path = optarg;
			break;
		case 'h':
			usage_correlate(stdout);
			return 0;
		default:
			hmb_usage_getopt(PROG, usage_cmd, opt, argv);
			return EXIT_USAGE;
		}
	}
	if (!per_cmd && !json) {
		usagef("--no-commands is for --format json (the text summary has no line per command)");
		return EXIT_USAGE;
	}
	if (argc - optind != 2) {
		usagef("expected FW_DUMP and HOST_EVENTS");
		return EXIT_USAGE;
	}
	if (pel_path && pelh_load(&pel, pel_path))
		return EXIT_BADINPUT;
	if (dict_open(dict_path, &dict)) {
		if (pel_path)
			pelh_free(&pel);
		return EXIT_BADINPUT;
	}
	if (out_path && strcmp(out_path, "-") != 0) {
		out = fopen(out_path, "w");
		if (!out) {
			errorf("%s: cannot create: %s", out_path, strerror(errno));
			hmb_dict_free(dict);
			if (pel_path)
				pelh_free(&pel);
			return EXIT_BADINPUT;
		}
	}
	if (json && hmb_ob_open_file(&ob, out, "output", 1 << 16)) {
		errorf("out of memory");
		rc = EXIT_BADINPUT;
		goto out;
	}
	hmb_json_init(&j, &ob);
	/* JSON: every command written as the join hands it out */
	fn = json && per_cmd ? cmd_line : NULL;
	fn_ctx = &j;
	if (pel_path) {
		tap = (struct pel_tap){ .pel = &pel, .fn = fn, .ctx = &j };
		fn = pel_cmd;
		fn_ctx = &tap;
	}
	rc = corr_run(&c, argv[optind], argv[optind + 1], dict, ctrl, top,
		      &win, fn, fn_ctx);
	if (json) {
		if (!rc)
			print_final(&j, &c, pel_path ? &pel : NULL);
		/* a write error is reported below, from the stream */
		hmb_ob_close(&ob);
	} else if (!rc) {
		print_text(out, &c, dict);
		if (pel_path)
			pelh_print(out, &pel);
	}
	if (!rc)
		print_late(&c);
	if (fflush(out) || ferror(out)) {
		errorf("%s: write error: %s", out == stdout ? "<stdout>" : out_path,
		       strerror(errno));
		rc = rc ? rc : EXIT_BADINPUT;
	}
out:
	if (out != stdout && fclose(out) && !rc) {
		errorf("%s: write error: %s", out_path, strerror(errno));
		rc = EXIT_BADINPUT;
	}
	if (!rc)
		corr_free(&c);
	hmb_dict_free(dict);
	if (pel_path)
		pelh_free(&pel);
	return rc;
}
