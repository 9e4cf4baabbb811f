// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * chsink: batched, retried, exactly-once inserts into one table of the
 * fleet store (see chsink.h for the rules).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "hmbtrace_ch.h"
#include "hmbtrace_util.h"

#define BACKOFF_MAX_MS 5000u

static void sleep_ms(unsigned int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts))
		;
}

/*
 * Wait before attempt @attempt (1-based retry count) after @why; returns
 * false when the retries are used up (x->err then says so).
 */
static bool backoff(struct hmb_ch_export *x, unsigned int attempt,
		    unsigned int *delay, const char *why)
{
	if (__atomic_load_n(&x->cancel, __ATOMIC_RELAXED)) {
		snprintf(x->err, sizeof(x->err), "%s (cancelled after %u attempt%s)",
			 why, attempt, attempt == 1 ? "" : "s");
		return false;
	}
	if (attempt > x->retries) {
		snprintf(x->err, sizeof(x->err), "%s (gave up after %u attempt%s)",
			 why, attempt, attempt == 1 ? "" : "s");
		return false;
	}
	x->retried++;
	if (!x->quiet && x->on_retry) {
		char msg[HMB_CH_ERR_LEN + 64];

		snprintf(msg, sizeof(msg), "export: %s; retry %u/%u in %u ms",
			 why, attempt, x->retries, *delay);
		x->on_retry(x->retry_ctx, msg);
	}
	sleep_ms(*delay);
	*delay = *delay * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : *delay * 2;
	return true;
}

/* One try of "how many rows of this export, highest id". */
static int state_once(struct hmb_ch_sink *s, uint64_t *count, uint64_t *max,
		      char err[HMB_CH_ERR_LEN])
{
	char sql[2048];
	const char *ans, *p;
	int rc;

	if ((size_t)snprintf(sql, sizeof(sql),
			     "SELECT count(), max(%s) FROM %s WHERE %s FORMAT TabSeparated",
			     s->id_col, s->table, s->x->where) >= sizeof(sql)) {
		snprintf(err, HMB_CH_ERR_LEN, "%s: query too long", s->table);
		return HMB_CH_FATAL;
	}
	rc = hmb_ch_query(s->x->conn, sql, &ans, err);
	if (rc != HMB_CH_OK)
		return rc;
	if (hmb_strtou64(ans, &p, 10, count) || *p != '\t' ||
	    hmb_strtou64(p + 1, &p, 10, max) || strcmp(p, "\n")) {
		char head[61], esc[4 * sizeof(head)];

		/* the first 60 bytes, escaped: the server's text is not ours */
		snprintf(head, sizeof(head), "%s", ans);
		snprintf(err, HMB_CH_ERR_LEN, "%s: unexpected answer to the row count of %s: '%s'",
			 hmb_ch_url(s->x->conn), s->table,
			 hmb_text_esc(esc, sizeof(esc), head));
		return HMB_CH_FATAL;
	}
	return HMB_CH_OK;
}

/* The same, retried.  0 or -1 (x->err set). */
static int state(struct hmb_ch_sink *s, uint64_t *count, uint64_t *max)
{
	unsigned int attempt = 0, delay = s->x->backoff_ms;
	char err[HMB_CH_ERR_LEN];

	for (;;) {
		int rc = state_once(s, count, max, err);

		if (rc == HMB_CH_OK)
			return 0;
		if (rc == HMB_CH_FATAL) {
			snprintf(s->x->err, sizeof(s->x->err), "%s", err);
			return -1;
		}
		if (!backoff(s->x, ++attempt, &delay, err))
			return -1;
	}
}

int hmb_ch_sink_open(struct hmb_ch_sink *s, struct hmb_ch_export *x, const char *name,
		 const char *cols, const char *id_col)
{
	memset(s, 0, sizeof(*s));
	s->x = x;
	s->name = name;
	s->cols = cols;
	s->id_col = id_col;
	snprintf(s->table, sizeof(s->table), "%s.%s", x->database, name);
	s->cap = x->batch_bytes + HMB_CH_ROW_MAX;
	s->buf = malloc(s->cap);
	if (!s->buf) {
		snprintf(x->err, sizeof(x->err), "out of memory");
		return -1;
	}
	/* After a failure the rows are still made and counted as not sent. */
	if (x->stop || state(s, &s->srv_count, &s->srv_max)) {
		s->failed = true;
		x->stop = true;
		return -1;
	}
	s->expect = s->srv_count;
	return 0;
}

void hmb_ch_sink_free(struct hmb_ch_sink *s)
{
	free(s->buf);
	s->buf = NULL;
}

static int check_resume(struct hmb_ch_sink *s)
{
	s->resume_checked = true;
	if (s->present == s->srv_count)
		return 0;
	snprintf(s->x->err, sizeof(s->x->err),
		 "%s holds %" PRIu64 " rows of this export (ids up to %" PRIu64
		 ") but the input makes %" PRIu64 " rows up to that id: the input is not the one exported before under trace_id 0x%016" PRIx64
		 ", or another export of it ran at the same time (nothing was sent; see --trace-id)",
		 s->table, s->srv_count, s->srv_max, s->present, s->x->trace_id);
	return -1;
}

/* Send the batch until the store has it once.  0 or -1 (x->err set). */
static int flush(struct hmb_ch_sink *s)
{
	struct hmb_ch_export *x = s->x;
	unsigned int attempt = 0, delay = x->backoff_ms;
	bool check = false;
	char qid[128], err[HMB_CH_ERR_LEN];

	if (!s->n)
		return 0;
	/* Deterministic: a retry of a batch still running is refused (216). */
	snprintf(qid, sizeof(qid), "hmb-%s-%016" PRIx64 "-%" PRIu64, s->name,
		 x->trace_id, s->first_id);
	for (;;) {
		bool sent = false;
		int rc;

		if (check) {
			uint64_t count, max;

			rc = state_once(s, &count, &max, err);
			if (rc == HMB_CH_OK) {
				if (count == s->expect + s->n && max == s->last_id)
					break;	/* the failed attempt committed */
				if (count != s->expect) {
					snprintf(x->err, sizeof(x->err),
						 "%s: after a failed insert the store holds %" PRIu64
						 " rows of this export, expected %" PRIu64 " or %" PRIu64
						 ": another export of the same trace is running?",
						 s->table, count, s->expect, s->expect + s->n);
					return -1;
				}
				check = false;
			}
		}
		if (!check) {
			rc = hmb_ch_insert(x->conn, s->table, s->cols, qid, s->buf,
				       s->len, &sent, err);
			if (rc == HMB_CH_OK)
				break;
			/* Until the store says otherwise, it may have it. */
			check = sent;
		}
		if (rc == HMB_CH_FATAL) {
			snprintf(x->err, sizeof(x->err), "%s", err);
			return -1;
		}
		if (!backoff(x, ++attempt, &delay, err))
			return -1;
	}
	s->expect += s->n;
	s->sent += s->n;
	s->batches++;
	s->n = 0;
	s->len = 0;
	return 0;
}

static void fail(struct hmb_ch_sink *s)
{
	s->failed = true;
	s->x->stop = true;
	s->unsent += s->n;
	s->n = 0;
	s->len = 0;
}

int hmb_ch_sink_admit(struct hmb_ch_sink *s, uint64_t id)
{
	s->rows++;
	if (s->x->stop && !s->failed)
		fail(s);
	if (s->failed) {
		s->unsent++;
		return 0;
	}
	if (s->srv_count && id <= s->srv_max) {
		s->present++;
		return 0;
	}
	if (!s->resume_checked && check_resume(s)) {
		fail(s);
		s->unsent++;
		return -1;
	}
	if (s->n && (s->n >= s->x->batch_rows || s->len >= s->x->batch_bytes)) {
		if (flush(s)) {
			fail(s);
			s->unsent++;
			return -1;
		}
	}
	if (!s->n)
		s->first_id = id;
	s->last_id = id;
	return 1;
}

int hmb_ch_sink_flush(struct hmb_ch_sink *s)
{
	if (s->x->stop && !s->failed)
		fail(s);
	if (s->failed)
		return -1;
	if (!s->resume_checked && s->n && check_resume(s)) {
		fail(s);
		return -1;
	}
	if (flush(s)) {
		fail(s);
		return -1;
	}
	return 0;
}

void hmb_ch_sink_commit_row(struct hmb_ch_sink *s)
{
	s->n++;
}

int hmb_ch_sink_finish(struct hmb_ch_sink *s)
{
	uint64_t count, max;

	if (s->x->stop && !s->failed)
		fail(s);
	if (s->failed)
		return -1;
	if (!s->resume_checked && check_resume(s)) {
		fail(s);
		return -1;
	}
	if (flush(s)) {
		fail(s);
		return -1;
	}
	if (state(s, &count, &max))
		return -1;
	if (count != s->expect || (count && max < s->last_id)) {
		snprintf(s->x->err, sizeof(s->x->err),
			 "%s: the store holds %" PRIu64 " rows of this export, %" PRIu64
			 " were expected: rows were lost or added behind the exporter's back",
			 s->table, count, s->expect);
		return -1;
	}
	s->verified = true;
	return 0;
}
