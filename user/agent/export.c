// SPDX-License-Identifier: GPL-2.0
/*
 * export.c - hmb-trace-agent --export URL: the fleet store's rows
 * (docs/fleet.md) while the agent runs: every command the command model
 * judges (commands), every firmware record the BPF side hands over
 * (fw_records, through map "rawrb" as for -w), the host clocks at start
 * and each clock estimate (clock), and at exit every nonzero loss counter
 * of the BPF side and of the agent (losses).  The rows are encoded by
 * libhmbtrace's row writers (hmbtrace_ch.h), the same as the offline
 * export's.  The main loop (which drains the BPF ring buffers) only copies
 * a row into a bounded queue and never waits: when the queue is full the
 * row is dropped and counted.  A sender thread takes
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
/* fw_records and clock rows queued: bytes per row of --export-queue */
#define AUX_BYTES_PER_ROW 256

/* A queued row: the command and the clock bound when it was judged. */
struct xrow {
	struct hmb_cmd c;
	double clock_err;
};

/* A queued fw_records or clock row. */
struct xaux {
	bool is_clock;
	char ring[24];
	uint64_t host_ns;		/* record: mapped firmware time */
	struct hmb_ch_clock clk;	/* clock */
	struct hmb_record_hdr h;	/* record, then its payload */
	uint8_t payload[];
};

/* The tables whose rows the queue may drop. */
enum { D_CMDS, D_RECS, D_CLOCK, D_COUNT };

static const char *const drop_counter[D_COUNT] = {
	"export_dropped", "export_dropped_fw_records", "export_dropped_clock",
};

struct xdrops {
	uint64_t made, dropped;
	uint64_t first_ns, last_ns;	/* wall clock, unreported drops */
	uint64_t unreported;
};

struct xq {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct xrow *v;
	size_t cap, head, n;		/* ring of rows */
	struct xaux **a;		/* ring of fw_records and clock rows */
	size_t acap, ahead, an;
	size_t abytes, abytes_max;	/* their size, bounded */
	bool stop;
	/* made by the main thread, under mu */
	struct xdrops d[D_COUNT];
};

/* A loss counter the agent reports at exit, for the losses table. */
struct xcounter {
	const char *layer, *name, *ring;
	uint64_t count;
};

#define MAX_COUNTERS (HMB_C_COUNT + 4 + BRIDGE_C_COUNT * HMB_MAX_RINGS)

static struct {
	struct xq q;
	pthread_t th;
	bool running;
	struct hmb_ch_export x;
	struct hmb_ch_sink cmds, losses, recs, clock;
	struct hmb_ch_ident id;
	char host[256], where[1024];
	int64_t wall_off;
	uint64_t start_real;
	uint64_t next_id, loss_id, rec_id, clk_id;
	uint64_t losses_rows;
	struct xcounter ctr[MAX_COUNTERS];	/* set before stop */
	unsigned int nctr;
	int rc;
} X;

/* A row the full queue cannot take (under mu). */
static void drop(struct xdrops *d)
{
	uint64_t now = hmb_now_ns(CLOCK_REALTIME);

	d->dropped++;
	if (!d->unreported++)
		d->first_ns = now;
	d->last_ns = now;
}

/* Queue @a (@len bytes, malloc'd) or drop it, counted in table @t. */
static void push_aux(struct xaux *a, size_t len, int t)
{
	struct xq *q = &X.q;

	pthread_mutex_lock(&q->mu);
	q->d[t].made++;
	if (!a || q->an == q->acap || q->abytes + len > q->abytes_max) {
		drop(&q->d[t]);
		free(a);
	} else {
		q->a[(q->ahead + q->an) % q->acap] = a;
		q->an++;
		q->abytes += len;
		pthread_cond_signal(&q->cv);
	}
	pthread_mutex_unlock(&q->mu);
}

/*
 * A firmware record of ring @ring as the BPF side handed it over (the
 * caller checked the header against the event's length).  Its firmware
 * time goes onto the wall clock with the estimate of the moment (0
 * before the first one).
 */
void export_record(unsigned int ring, const struct hmb_record_hdr *h,
		   const void *payload)
{
	size_t len = sizeof(struct xaux) + h->payload_len;
	struct xaux *a;

	if (!X.running)
		return;
	a = malloc(len);
	if (a) {
		memset(a, 0, sizeof(*a));
		snprintf(a->ring, sizeof(a->ring), "nvme-hmb-trace%u", ring);
		if (ag.live.clk.valid) {
			struct hmb_cmd_clock k = hmb_cmd_clock_of(&ag.live.clk);
			double t = k.map(k.ctx, h->ts_ns, h->seq) +
				   (double)X.wall_off;

			a->host_ns = t > 0 ? (uint64_t)t : 0;
		}
		a->h = *h;
		memcpy(a->payload, payload, h->payload_len);
	}
	push_aux(a, len, D_RECS);
}

/* hmb_live's on_clock: each estimate (and step) as a clock row. */
void export_clock(const struct hmb_clock *k, bool step)
{
	struct xaux *a;

	if (!X.running || !k->valid)
		return;
	a = malloc(sizeof(*a));
	if (a) {
		memset(a, 0, sizeof(*a));
		a->is_clock = true;
		/* the agent's estimate covers every ring it joins */
		snprintf(a->ring, sizeof(a->ring), "agent");
		a->clk.kind = step ? "step" : "estimate";
		a->clk.fw_ns = k->ref > 0 ? (uint64_t)k->ref : 0;
		a->clk.monotonic_ns = (uint64_t)(k->ref + k->off_ns);
		a->clk.host_ns = (uint64_t)((int64_t)a->clk.monotonic_ns +
					    X.wall_off);
		a->clk.offset_ns = k->off_ns + (double)X.wall_off;
		a->clk.drift_ppm = k->drift * 1e6;
		a->clk.err_ns = k->off_err_ns;
		a->clk.drift_err_ppm = k->drift_err * 1e6;
	}
	push_aux(a, sizeof(*a), D_CLOCK);
}

/* The loss counters the agent reports at exit, before export_stop. */
void export_counter_ring(const char *layer, const char *name,
			 const char *ring, uint64_t count)
{
	if (X.running && count && X.nctr < MAX_COUNTERS)
		X.ctr[X.nctr++] = (struct xcounter){ layer, name, ring, count };
}

void export_counter(const char *layer, const char *name, uint64_t count)
{
	export_counter_ring(layer, name, "agent", count);
}

/* The main loop's side: never blocks on the store. */
void export_cmd(const struct hmb_cmd *c)
{
	struct xq *q = &X.q;

	if (!X.running)
		return;
	pthread_mutex_lock(&q->mu);
	q->d[D_CMDS].made++;
	if (q->n == q->cap) {
		drop(&q->d[D_CMDS]);
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

/* Rows dropped since the last report, as one losses row per table. */
static int report_drops(void)
{
	struct xq *q = &X.q;

	for (int t = 0; t < D_COUNT; t++) {
		struct hmb_ch_loss l = {
			.ring = "agent", .layer = "agent",
			.counter = drop_counter[t],
			.detail = "rows dropped: the export queue was full (store slow or unreachable)",
		};

		pthread_mutex_lock(&q->mu);
		l.count = q->d[t].unreported;
		l.host_from = q->d[t].first_ns;
		l.host_to = q->d[t].last_ns;
		q->d[t].unreported = 0;
		pthread_mutex_unlock(&q->mu);
		if (!l.count)
			continue;
		l.id = X.loss_id++;
		if (hmb_ch_row_loss(&X.losses, &X.id, &l) < 0 ||
		    hmb_ch_sink_flush(&X.losses)) {
			/* not in the store: counted back for the next report */
			pthread_mutex_lock(&q->mu);
			q->d[t].unreported += l.count;
			pthread_mutex_unlock(&q->mu);
			return -1;
		}
		X.losses_rows++;
	}
	return 0;
}

/* The agent's loss counters at exit, one row each, over the run. */
static void report_counters(void)
{
	uint64_t now = hmb_now_ns(CLOCK_REALTIME);

	for (unsigned int i = 0; i < X.nctr; i++) {
		struct hmb_ch_loss l = {
			.id = X.loss_id++, .ring = X.ctr[i].ring,
			.layer = X.ctr[i].layer, .counter = X.ctr[i].name,
			.count = X.ctr[i].count, .host_from = X.start_real,
			.host_to = now, .detail = "the agent's counter at exit",
		};

		if (hmb_ch_row_loss(&X.losses, &X.id, &l) > 0)
			X.losses_rows++;
	}
}

/* One queued fw_records or clock row into its sink. */
static void row_aux(const struct xaux *a)
{
	if (a->is_clock) {
		struct hmb_ch_clock c = a->clk;

		c.id = X.clk_id++;
		c.ring = a->ring;
		hmb_ch_row_clock(&X.clock, &X.id, &c);
	} else {
		hmb_ch_row_record(&X.recs, &X.id, a->ring, X.rec_id++, 0,
				  a->host_ns, &a->h, a->payload);
	}
}

/* The host clocks when the export started: the clock table's first row. */
static void row_host_open(void)
{
	struct hmb_ch_clock c = {
		.id = X.clk_id++, .ring = "agent", .kind = "host_open",
		.host_ns = X.start_real,
		.monotonic_ns = (uint64_t)((int64_t)X.start_real - X.wall_off),
		.boottime_ns = hmb_now_ns(CLOCK_BOOTTIME),
	};

	pthread_mutex_lock(&X.q.mu);
	X.q.d[D_CLOCK].made++;	/* written by the sender, never queued */
	pthread_mutex_unlock(&X.q.mu);
	hmb_ch_row_clock(&X.clock, &X.id, &c);
}

static void *sender(void *arg)
{
	struct xrow *batch = malloc(TAKE_MAX * sizeof(*batch));
	struct xaux **aux = malloc(TAKE_MAX * sizeof(*aux));
	struct xq *q = &X.q;

	(void)arg;
	if (!batch || !aux ||
	    hmb_ch_sink_open(&X.cmds, &X.x, "commands", hmb_ch_commands_cols,
			     "cmd_id") ||
	    hmb_ch_sink_open(&X.losses, &X.x, "losses", hmb_ch_losses_cols,
			     "loss_id") ||
	    hmb_ch_sink_open(&X.recs, &X.x, "fw_records",
			     hmb_ch_fw_records_cols, "rec_off") ||
	    hmb_ch_sink_open(&X.clock, &X.x, "clock", hmb_ch_clock_cols,
			     "clk_id")) {
		X.rc = -1;
		/* rows keep coming: the sinks count them as not exported */
	}
	row_host_open();
	for (;;) {
		struct timespec until;
		size_t n = 0, na = 0;
		bool stop;

		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_sec += 1;
		pthread_mutex_lock(&q->mu);
		while (!q->n && !q->an && !q->stop &&
		       pthread_cond_timedwait(&q->cv, &q->mu, &until) == 0)
			;
		while (batch && q->n && n < TAKE_MAX) {
			batch[n++] = q->v[q->head];
			q->head = (q->head + 1) % q->cap;
			q->n--;
		}
		while (aux && q->an && na < TAKE_MAX) {
			aux[na] = q->a[q->ahead];
			q->ahead = (q->ahead + 1) % q->acap;
			q->an--;
			q->abytes -= sizeof(struct xaux) +
				     (aux[na]->is_clock ? 0 :
				      aux[na]->h.payload_len);
			na++;
		}
		stop = q->stop && !q->n && !q->an;
		pthread_mutex_unlock(&q->mu);
		for (size_t i = 0; i < n; i++)
			hmb_ch_row_command(&X.cmds, &X.id, X.next_id++,
					   &batch[i].c, X.wall_off,
					   batch[i].clock_err);
		for (size_t i = 0; i < na; i++) {
			row_aux(aux[i]);
			free(aux[i]);
		}
		/* what is buffered goes out at least once a second */
		if (!hmb_ch_sink_flush(&X.cmds) &&
		    !hmb_ch_sink_flush(&X.recs) &&
		    !hmb_ch_sink_flush(&X.clock))
			report_drops();
		if (stop)
			break;
	}
	report_counters();
	if (hmb_ch_sink_finish(&X.cmds) || hmb_ch_sink_finish(&X.recs) ||
	    hmb_ch_sink_finish(&X.clock) || hmb_ch_sink_finish(&X.losses))
		X.rc = -1;
	free(batch);
	free(aux);
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
	o.credentials = ag.env.export_credentials;
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
	real = hmb_now_ns(CLOCK_REALTIME);
	mono = hmb_now_ns(CLOCK_MONOTONIC);
	X.wall_off = (int64_t)(real - mono);
	X.start_real = real;
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
	X.q.acap = ag.env.export_queue;
	X.q.a = calloc(X.q.acap, sizeof(*X.q.a));
	X.q.abytes_max = ag.env.export_queue * AUX_BYTES_PER_ROW;
	if (!X.q.v || !X.q.a) {
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
	for (int t = 0; t < D_COUNT; t++) {
		static const char *const tn[D_COUNT] = {
			"commands", "fw_records", "clock" };
		const struct hmb_ch_sink *s = t == D_CMDS ? &X.cmds :
					      t == D_RECS ? &X.recs : &X.clock;
		const struct xdrops *d = &X.q.d[t];

		if (d->dropped || s->unsent)
			fprintf(stderr, PROG ": --export: %llu of %llu %s rows not in the store (%llu dropped from the full queue, %llu not exported)\n",
				(unsigned long long)(d->dropped + s->unsent),
				(unsigned long long)d->made, tn[t],
				(unsigned long long)d->dropped,
				(unsigned long long)s->unsent);
	}
	if (X.losses.unsent)
		fprintf(stderr, PROG ": --export: %llu losses rows not exported\n",
			(unsigned long long)X.losses.unsent);
	return X.rc || X.x.err[0] || X.cmds.unsent || X.recs.unsent ||
	       X.clock.unsent || X.losses.unsent ||
	       X.q.d[D_CMDS].unreported || X.q.d[D_RECS].unreported ||
	       X.q.d[D_CLOCK].unreported ? -1 : 0;
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
	hmb_json_kv_u64(j, "rows", X.q.d[D_CMDS].made);
	hmb_json_kv_u64(j, "dropped", X.q.d[D_CMDS].dropped);
	hmb_json_kv_u64(j, "dropped_unreported", X.q.d[D_CMDS].unreported);
	hmb_json_kv_u64(j, "queued", X.q.n);
	hmb_json_kv_u64(j, "inserted", X.cmds.sent);
	hmb_json_kv_u64(j, "not_exported", X.cmds.unsent);
	hmb_json_key(j, "tables");
	hmb_json_obj(j);
	for (int t = 0; t < D_COUNT + 1; t++) {
		static const char *const tn[] = {
			"commands", "fw_records", "clock", "losses" };
		const struct hmb_ch_sink *s = t == D_CMDS ? &X.cmds :
					      t == D_RECS ? &X.recs :
					      t == D_CLOCK ? &X.clock : &X.losses;

		hmb_json_key_str(j, tn[t]);
		hmb_json_obj(j);
		hmb_json_kv_u64(j, "rows", t < D_COUNT ? X.q.d[t].made :
				s->rows);
		hmb_json_kv_u64(j, "dropped", t < D_COUNT ? X.q.d[t].dropped : 0);
		hmb_json_kv_u64(j, "inserted", s->sent);
		hmb_json_kv_u64(j, "not_exported", s->unsent);
		hmb_json_end(j);
	}
	hmb_json_end(j);
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
	hmb_ch_sink_free(&X.recs);
	hmb_ch_sink_free(&X.clock);
	while (X.q.a && X.q.an) {
		free(X.q.a[X.q.ahead]);
		X.q.ahead = (X.q.ahead + 1) % X.q.acap;
		X.q.an--;
	}
	free(X.q.a);
	X.q.a = NULL;
	hmb_ch_close(X.x.conn);
	X.x.conn = NULL;
	free(X.q.v);
	X.q.v = NULL;
}
