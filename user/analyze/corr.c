// SPDX-License-Identifier: Apache-2.0
/*
 * corr.c - a dump and the host's events streamed into libhmbtrace's join
 * (correlate.h, hmb_join_stream): the dump through input.c (sidecar,
 * losses), the host events through hostev.c a line at a time, so that
 * memory stays bounded by the join's window, not by the trace.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "analyze.h"
#include "correlate.h"

struct corr_src {
	struct corr *c;
	struct input in;
	bool in_open;
	struct hostev_reader *r;	/* NULL once closed */
	FILE *f;
	size_t pos;			/* next of c->host.v to hand out */
	long want_ctrl;
	corr_cmd_fn fn;
	int (*window_fn)(void *ctx, uint32_t before, bool all);
	void *ctx;
};

static int src_record(void *ctx, struct hmb_record *rec, bool *end)
{
	struct corr_src *s = ctx;
	struct hmb_error err = { 0 };
	int rc = input_next(&s->in, rec, &err);

	if (rc < 0) {
		input_report(&s->in, &err);
		return EXIT_BADINPUT;
	}
	*end = rc == 0;
	if (*end)
		s->c->fw_lost = s->in.acct->lost;
	return 0;
}

/* The end of the host file: the reader's last word (perf: the pairing). */
static int host_close(struct corr_src *s, int rc)
{
	if (s->f && s->f != stdin)
		fclose(s->f);
	s->f = NULL;
	rc = hostev_close(s->r, rc);
	s->r = NULL;
	return rc;
}

static int src_host(void *ctx, struct hmb_host_cmd *h, bool *end)
{
	struct corr_src *s = ctx;
	struct host_events *he = &s->c->host;
	bool eof;
	int rc;

	/*
	 * Agent lines are whole commands: handed out as read.  perf script
	 * pairs a setup with a completion that may come much later: read to
	 * the end first (memory grows with the trace for perf input).
	 */
	while (s->r && (s->pos == he->n || he->fmt == HOST_FMT_PERF)) {
		if (s->pos == he->n) {
			he->taken += he->n;
			he->n = 0;
			s->pos = 0;
		}
		rc = hostev_read(s->r, s->f, &eof);
		if (rc)
			return host_close(s, rc);
		if (eof) {
			rc = host_close(s, 0);
			if (rc)
				return rc;
			break;
		}
	}
	*end = s->pos == he->n;
	if (!*end)
		*h = he->v[s->pos++];
	return 0;
}

static int src_pick(void *ctx, const uint32_t *ctrls, unsigned int n,
		    uint32_t *out)
{
	struct corr_src *s = ctx;

	if (s->want_ctrl >= 0) {
		*out = (uint32_t)s->want_ctrl;
		return 0;
	}
	if (n == 1) {
		*out = ctrls[0];
		return 0;
	}
	usagef("%s: commands of %u controllers; say which one the dump belongs to with --ctrl N (nvmeN)",
	       s->c->host.path, n);
	return EXIT_USAGE;
}

static int src_cmd(void *ctx, const struct hmb_join *j, size_t i,
		   const struct hmb_cmd *c)
{
	struct corr_src *s = ctx;

	return s->fn ? s->fn(s->ctx, j, i, c) : 0;
}

int corr_run(struct corr *c, const char *dump, const char *host,
	     const struct hmb_dict *dict, long ctrl, unsigned int top_n,
	     const struct corr_win *win, corr_cmd_fn fn, void *ctx)
{
	return corr_run_src(c, dump, host, dict, ctrl, top_n, win, fn, NULL,
			    ctx);
}

static int src_window(void *ctx, uint32_t before, bool all)
{
	struct corr_src *s = ctx;

	return s->window_fn ? s->window_fn(s->ctx, before, all) : 0;
}

int corr_run_src(struct corr *c, const char *dump, const char *host,
		 const struct hmb_dict *dict, long ctrl, unsigned int top_n,
		 const struct corr_win *win, corr_cmd_fn fn,
		 int (*window_fn)(void *ctx, uint32_t before, bool all),
		 void *ctx)
{
	struct input_opts iopts = { .max_gaps = 0 };
	struct corr_src s = { .c = c, .want_ctrl = ctrl, .fn = fn,
			      .window_fn = window_fn, .ctx = ctx };
	const struct hmb_join_src src = {
		.record = src_record, .host = src_host, .pick_ctrl = src_pick,
		.cmd = src_cmd, .window_done = src_window, .ctx = &s,
	};
	struct hmb_error err = { 0 };
	int rc;

	memset(c, 0, sizeof(*c));
	c->dump = dump;
	c->j = hmb_join_new(dict);
	if (!c->j) {
		errorf("out of memory");
		return EXIT_BADINPUT;
	}
	if (win)
		hmb_join_set_window(c->j, win->cmds, win->late_ns);
	if (input_open(&s.in, dump, &iopts)) {
		corr_free(c);
		return EXIT_BADINPUT;
	}
	s.r = hostev_open(&c->host, host);
	if (!s.r) {
		input_close(&s.in);
		corr_free(c);
		return EXIT_BADINPUT;
	}
	s.f = strcmp(host, "-") ? fopen(host, "re") : stdin;
	if (!s.f) {
		errorf("%s: cannot open: %s", host, strerror(errno));
		rc = host_close(&s, EXIT_BADINPUT);
	} else {
		rc = hmb_join_stream(c->j, &src, top_n, &err);
		if (rc == HMB_E_NOMEM) {
			errorf("%s", err.msg);
			rc = EXIT_BADINPUT;
		}
		if (s.r)
			host_close(&s, rc ? rc : EXIT_BADINPUT);
	}
	if (!rc && ctrl < 0) {
		const uint32_t *ctrls;
		unsigned int n = hmb_join_ctrls(c->j, &ctrls);

		/* the first window had one controller, a later one more */
		if (n > 1)
			fprintf(stderr, PROG ": %s: commands of %u controllers after the first window; nvme%u joined, the others counted as other_ctrl (say which with --ctrl N)\n",
				host, n, hmb_join_ctrl(c->j));
	}
	input_close(&s.in);
	if (rc)
		corr_free(c);
	return rc;
}

void corr_free(struct corr *c)
{
	hmb_join_free(c->j);
	c->j = NULL;
	hostev_free(&c->host);
}
