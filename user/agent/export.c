// SPDX-License-Identifier: GPL-2.0
/*
 * export.c - hmb-trace-agent --export URL: every command the command model
 * judges, as a row of the fleet store's commands table (docs/fleet.md),
 * while the agent runs.  The main loop (which drains the BPF ring buffers)
 * only copies the command into a bounded queue and never waits: when the
 * queue is full the row is dropped and counted.  A sender thread takes
 * rows from the queue and inserts them through libhmbtrace's sinks
 * (hmbtrace_ch.h: batched RowBinary, retried with backoff, exactly once);
 * while the store is unreachable it keeps retrying and the queue fills.
 * Once an insert succeeds again, the rows dropped since the last report
 * go into the losses table as one row (layer agent, counter
 * export_dropped, the wall-clock range of the drops).  Rows are numbered
 * as the sender takes them, so the store holds rows 0..N-1 with no hole;
 * every row made is in the store, dropped (counted, in losses) or counted
 * as not exported (the store refused, or it was still down at exit).
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "agent.h"
#include "hmbtrace_ch.h"

#define NS_PER_DAY (86400ull * 1000000000ull)
#define TAKE_MAX 4096

/* A queued row: the command and the clock bound when it was judged. */
struct xrow {
	struct hmb_cmd c;
	double clock_err;
};

struct xq {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct xrow *v;
	size_t cap, head, n;		/* ring of rows */
	bool stop;
	/* made by the main thread, under mu */
	uint64_t made, dropped;
	uint64_t drop_first_ns, drop_last_ns;	/* wall clock, unreported drops */
	uint64_t drop_unreported;
};

static struct {
	struct xq q;
	pthread_t th;
	bool running;
	struct hmb_ch_export x;
	struct hmb_ch_sink cmds, losses;
	struct hmb_ch_ident id;
	char host[256], where[1024];
	int64_t wall_off;
	uint64_t next_id, loss_id;
	uint64_t losses_rows;
	int rc;
} X;

static uint64_t clock_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* The main loop's side: never blocks on the store. */
void export_cmd(const struct hmb_cmd *c)
{
	struct xq *q = &X.q;

	if (!X.running)
		return;
	pthread_mutex_lock(&q->mu);
	q->made++;
	if (q->n == q->cap) {
		uint64_t now = clock_ns(CLOCK_REALTIME);

		q->dropped++;
		if (!q->drop_unreported++)
			q->drop_first_ns = now;
		q->drop_last_ns = now;
	} else {
		struct xrow *r = &q->v[(q->head + q->n) % q->cap];

		r->c = *c;
		r->clock_err = ag.live.clk.valid ? ag.live.clk.off_err_ns : 0;
		q->n++;
		pthread_cond_signal(&q->cv);
	}
	pthread_mutex_unlock(&q->mu);
}

static void on_retry(void *ctx, const char *msg)
{
	(void)ctx;
	if (ag.env.verbose)
		fprintf(stderr, PROG ": %s\n", msg);
}

/* Rows dropped since the last report, as one losses row. */
static int report_drops(void)
{
	struct xq *q = &X.q;
	struct hmb_ch_loss l = {
		.ring = "agent", .layer = "agent", .counter = "export_dropped",
		.detail = "commands rows dropped: the export queue was full (store slow or unreachable)",
	};

	pthread_mutex_lock(&q->mu);
	l.count = q->drop_unreported;
	l.host_from = q->drop_first_ns;
	l.host_to = q->drop_last_ns;
	q->drop_unreported = 0;
	pthread_mutex_unlock(&q->mu);
	if (!l.count)
		return 0;
	l.id = X.loss_id++;
	if (hmb_ch_row_loss(&X.losses, &X.id, &l) < 0 ||
	    hmb_ch_sink_flush(&X.losses)) {
		/* not in the store: counted back for the next report */
		pthread_mutex_lock(&q->mu);
		q->drop_unreported += l.count;
		pthread_mutex_unlock(&q->mu);
		return -1;
	}
	X.losses_rows++;
	return 0;
}

static void *sender(void *arg)
{
	struct xrow *batch = malloc(TAKE_MAX * sizeof(*batch));
	struct xq *q = &X.q;

	(void)arg;
	if (!batch || hmb_ch_sink_open(&X.cmds, &X.x, "commands",
				       hmb_ch_commands_cols, "cmd_id") ||
	    hmb_ch_sink_open(&X.losses, &X.x, "losses", hmb_ch_losses_cols,
			     "loss_id")) {
		X.rc = -1;
		/* rows keep coming: the sinks count them as not exported */
	}
	for (;;) {
		struct timespec until;
		size_t n = 0;
		bool stop;

		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_sec += 1;
		pthread_mutex_lock(&q->mu);
		while (!q->n && !q->stop &&
		       pthread_cond_timedwait(&q->cv, &q->mu, &until) == 0)
			;
		while (batch && q->n && n < TAKE_MAX) {
			batch[n++] = q->v[q->head];
			q->head = (q->head + 1) % q->cap;
			q->n--;
		}
		stop = q->stop && !q->n;
		pthread_mutex_unlock(&q->mu);
		for (size_t i = 0; i < n; i++)
			hmb_ch_row_command(&X.cmds, &X.id, X.next_id++,
					   &batch[i].c, X.wall_off,
					   batch[i].clock_err);
		/* what is buffered goes out at least once a second */
		if (!hmb_ch_sink_flush(&X.cmds))
			report_drops();
		if (stop)
			break;
	}
	if (hmb_ch_sink_finish(&X.cmds) || hmb_ch_sink_finish(&X.losses))
		X.rc = -1;
	free(batch);
	return NULL;
}

int export_start(void)
{
	struct hmb_ch_opts o = { .timeout_s = 30, .connect_timeout_s = 2 };
	char err[HMB_CH_ERR_LEN], qh[600];
	uint64_t real, mono;
	size_t j = 0;

	if (!ag.env.export_url)
		return 0;
	if (hmb_ch_open(&X.x.conn, ag.env.export_url, &o, err)) {
		fprintf(stderr, PROG ": --export: %s\n", err);
		return -1;
	}
	if (ag.env.export_host) {
		snprintf(X.host, sizeof(X.host), "%s", ag.env.export_host);
	} else if (gethostname(X.host, sizeof(X.host) - 1)) {
		fprintf(stderr, PROG ": --export: cannot read this host's name: %s (give --export-hostname)\n",
			strerror(errno));
		return -1;
	}
	real = clock_ns(CLOCK_REALTIME);
	mono = clock_ns(CLOCK_MONOTONIC);
	X.wall_off = (int64_t)(real - mono);
	/* one agent run: its host and the moment it started */
	X.id.trace_id = real ^ ((uint64_t)getpid() << 40);
	X.id.day = (uint16_t)(real / NS_PER_DAY);
	X.id.host = X.host;
	for (const char *p = X.host; *p && j + 2 < sizeof(qh); p++) {
		if (*p == '\'' || *p == '\\')
			qh[j++] = '\\';
		qh[j++] = *p;
	}
	qh[j] = 0;
	{
		time_t d = (time_t)(real / 1000000000ULL);
		struct tm tm;
		char day[16];

		gmtime_r(&d, &tm);
		strftime(day, sizeof(day), "%Y-%m-%d", &tm);
		snprintf(X.where, sizeof(X.where),
			 "day = toDate('%s') AND host = '%s' AND trace_id = %llu",
			 day, qh, (unsigned long long)X.id.trace_id);
	}
	X.x.database = "hmb";
	X.x.where = X.where;
	X.x.trace_id = X.id.trace_id;
	X.x.batch_rows = 65536;
	X.x.batch_bytes = 8u << 20;
	X.x.retries = 1000000000u;	/* until the store is back, or exit */
	X.x.backoff_ms = 100;
	X.x.on_retry = on_retry;
	X.q.cap = ag.env.export_queue;
	X.q.v = calloc(X.q.cap, sizeof(*X.q.v));
	if (!X.q.v) {
		fprintf(stderr, PROG ": --export: out of memory for a queue of %zu rows\n",
			X.q.cap);
		return -1;
	}
	pthread_mutex_init(&X.q.mu, NULL);
	pthread_cond_init(&X.q.cv, NULL);
	if (pthread_create(&X.th, NULL, sender, NULL)) {
		fprintf(stderr, PROG ": --export: cannot start the sender thread\n");
		return -1;
	}
	X.running = true;
	return 0;
}

/*
 * Stop: the sender sends what is queued and checks the store; after
 * @wait_ms it gives up its retries (the rest is counted, not exported).
 * 0, or -1 when some row did not reach the store.
 */
int export_stop(unsigned int wait_ms)
{
	struct timespec until;

	if (!X.running)
		return X.x.conn ? -1 : 0;
	pthread_mutex_lock(&X.q.mu);
	X.q.stop = true;
	pthread_cond_signal(&X.q.cv);
	pthread_mutex_unlock(&X.q.mu);
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += wait_ms / 1000;
	until.tv_nsec += (long)(wait_ms % 1000) * 1000000L;
	if (until.tv_nsec >= 1000000000L) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000L;
	}
	if (pthread_timedjoin_np(X.th, NULL, &until)) {
		__atomic_store_n(&X.x.cancel, 1, __ATOMIC_RELAXED);
		pthread_join(X.th, NULL);
	}
	X.running = false;
	if (X.x.err[0])
		fprintf(stderr, PROG ": --export: %s\n", X.x.err);
	if (X.q.dropped || X.cmds.unsent)
		fprintf(stderr, PROG ": --export: %llu of %llu commands rows not in the store (%llu dropped from the full queue, %llu not exported)\n",
			(unsigned long long)(X.q.dropped + X.cmds.unsent),
			(unsigned long long)X.q.made,
			(unsigned long long)X.q.dropped,
			(unsigned long long)X.cmds.unsent);
	return X.rc || X.x.err[0] || X.cmds.unsent || X.q.drop_unreported ?
		-1 : 0;
}

/* The summary's "export" object (after export_stop for final numbers). */
void export_json(struct hmb_json *j)
{
	char id[24];

	if (!ag.env.export_url)
		return;
	snprintf(id, sizeof(id), "0x%016llx", (unsigned long long)X.id.trace_id);
	pthread_mutex_lock(&X.q.mu);
	hmb_json_key(j, "export");
	hmb_json_obj(j);
	hmb_json_kv_str(j, "url", X.x.conn ? hmb_ch_url(X.x.conn) : "");
	hmb_json_kv_str(j, "host", X.host);
	hmb_json_kv_str(j, "trace_id", id);
	hmb_json_kv_u64(j, "rows", X.q.made);
	hmb_json_kv_u64(j, "dropped", X.q.dropped);
	hmb_json_kv_u64(j, "dropped_unreported", X.q.drop_unreported);
	hmb_json_kv_u64(j, "queued", X.q.n);
	hmb_json_kv_u64(j, "inserted", X.cmds.sent);
	hmb_json_kv_u64(j, "not_exported", X.cmds.unsent);
	hmb_json_kv_u64(j, "losses_rows", X.losses_rows);
	hmb_json_kv_u64(j, "retries", X.x.retried);
	hmb_json_key(j, "error");
	if (X.x.err[0])
		hmb_json_str(j, X.x.err);
	else
		hmb_json_null(j);
	hmb_json_end(j);
	pthread_mutex_unlock(&X.q.mu);
}

void export_free(void)
{
	hmb_ch_sink_free(&X.cmds);
	hmb_ch_sink_free(&X.losses);
	hmb_ch_close(X.x.conn);
	X.x.conn = NULL;
	free(X.q.v);
	X.q.v = NULL;
}
