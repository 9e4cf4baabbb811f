/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * hmbtrace_ch.h - the fleet store's client (docs/fleet.md): ClickHouse over
 * its HTTP interface (libcurl) and the batched, exactly-once row sinks
 * that hmb-trace-analyze export and hmb-trace-agent --export write
 * through.  Built into libhmbtrace when libcurl is there; link -lcurl.
 *
 * The HTTP client:
 * Queries (small answers) and RowBinary inserts, one connection kept alive,
 * every failure classified as retryable (the server or the network may come
 * back) or permanent (the request itself is wrong), with the server's own
 * message ("Code: 60, ... Table hmb.x doesn't exist") kept for the error
 * line.  Retrying is the caller's business (export.c): only it knows
 * whether a failed insert may already have been committed.
 *
 * The sinks: rows for one table of the fleet store, sent in
 * batches (RowBinary), each batch retried with backoff until the store has
 * it exactly once.
 *
 * Idempotence (docs/fleet.md): every row of a table carries the export's
 * identity (day, host, trace_id) and a row id that grows strictly in the
 * order the rows are made.  Batches are committed in order and each is
 * atomic (one host -> one shard, one day -> one partition, fewer rows than
 * max_insert_block_size -> one part), so what the store holds of an export
 * is always a prefix of its rows.  At open the sink asks how many rows of
 * this export the store has and the highest row id; rows up to that id are
 * counted as present and not sent, after checking that they are exactly as
 * many as the store holds.  A batch whose insert failed in a way that may
 * have reached the server is not re-sent before the store has been asked
 * whether it was committed.
 */
#ifndef HMBTRACE_CH_H
#define HMBTRACE_CH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

#define HMB_CH_ERR_LEN 512

enum hmb_ch_status {
	HMB_CH_OK = 0,
	HMB_CH_RETRY = 1,		/* network error, server down, overloaded */
	HMB_CH_FATAL = 2,		/* bad URL, unknown table, bad data, ... */
};

struct hmb_ch_conn;

struct hmb_ch_opts {
	long timeout_s;		/* whole request; 0: 60 */
	long connect_timeout_s;	/* 0: 5 */
	/* a credentials file: "user=" and "password=" lines, mode 0600 */
	const char *credentials;
};

/*
 * @url: http:// or https:// base URL of a server (its query parameters are
 * kept and extended).  The user and the password are each taken from the
 * first that has it of: @o->credentials, the URL ("http://U:P@host" or
 * "?user=U&password=P"; taken out of the URL), $CLICKHOUSE_USER and
 * $CLICKHOUSE_PASSWORD; they are sent as the X-ClickHouse-User and
 * X-ClickHouse-Key headers.  Fails (HMB_CH_FATAL, message in @err) on a URL
 * libcurl or this client cannot use, or a credentials file that is not a
 * regular file readable by its owner only.  No message holds the password.
 */
int hmb_ch_open(struct hmb_ch_conn **out, const char *url, const struct hmb_ch_opts *o,
	    char err[HMB_CH_ERR_LEN]);
void hmb_ch_close(struct hmb_ch_conn *c);

/*
 * Run @sql (a SELECT with a small answer).  The answer, NUL-terminated, is
 * in *@ans (owned by @c, valid until the next call).  Returns enum
 * hmb_ch_status; on failure @err says what and where.
 */
int hmb_ch_query(struct hmb_ch_conn *c, const char *sql, const char **ans,
	     char err[HMB_CH_ERR_LEN]);

/*
 * INSERT INTO @table (@cols) FORMAT RowBinary with @body, synchronous
 * through Distributed tables (insert_distributed_sync=1).  @query_id names
 * the insert: the server refuses a second query with the same id while the
 * first still runs, so a retry cannot overtake an attempt the client gave
 * up on.  *@sent is true if the request may have reached the server (a
 * retry must first find out whether it was committed).
 */
int hmb_ch_insert(struct hmb_ch_conn *c, const char *table, const char *cols,
	      const char *query_id, const void *body, size_t len, bool *sent,
	      char err[HMB_CH_ERR_LEN]);

/* The server as scheme://host:port, without credentials. */
const char *hmb_ch_url(const struct hmb_ch_conn *c);

/* ------------------------------------------------------------ sinks */



/* Shared by the sinks of one export. */
struct hmb_ch_export {
	struct hmb_ch_conn *conn;
	const char *database;
	const char *where;	/* "day = ... AND host = ... AND trace_id = ..." */
	uint64_t trace_id;
	uint64_t batch_rows;	/* flush at this many rows */
	size_t batch_bytes;	/* or this many bytes */
	unsigned int retries;	/* attempts after the first, per request */
	unsigned int backoff_ms;	/* first wait; doubles up to 5 s */
	bool quiet;		/* no call of @on_retry */
	/* each retry, with a line saying why (the library never prints) */
	void (*on_retry)(void *ctx, const char *msg);
	void *retry_ctx;
	uint64_t retried;	/* retries made, all sinks */
	bool stop;		/* a sink failed: the others only count */
	/* set from another thread: the retry under way gives up (exit) */
	int cancel;
	char err[HMB_CH_ERR_LEN];	/* the error that stopped the export */
};

struct hmb_ch_sink {
	struct hmb_ch_export *x;
	const char *name;	/* "fw_records" */
	char table[160];	/* "db.fw_records" (the Distributed table) */
	const char *cols;	/* column list, in RowBinary order */
	const char *id_col;	/* the row id column */
	uint8_t *buf;
	size_t len, cap;
	uint64_t n;		/* rows in buf */
	uint64_t first_id, last_id;
	/* what the store held at open */
	uint64_t srv_count, srv_max;
	bool resume_checked;
	/* counts */
	uint64_t rows;		/* rows made */
	uint64_t present;	/* rows found in the store, not sent */
	uint64_t sent;		/* rows inserted */
	uint64_t batches;
	uint64_t expect;	/* rows of this export the store holds */
	bool failed;		/* stopped: further rows are only counted */
	uint64_t unsent;	/* rows made but not in the store */
	bool verified;
};

/* Largest single row a sink accepts (fw_records: header, names, payload). */
#define HMB_CH_ROW_MAX (4096 + 2048)

/* Ask the store what it has of this export.  0 or -1 (x->err set). */
int hmb_ch_sink_open(struct hmb_ch_sink *s, struct hmb_ch_export *x, const char *name,
		 const char *cols, const char *id_col);
/*
 * Before encoding a row with id @id (at most HMB_CH_ROW_MAX bytes): returns 1
 * if the row is to be encoded into s->buf now, 0 if the store already has
 * it or the sink has failed (the row is counted), -1 on an error (the
 * store holds rows this export does not make; x->err set).
 */
int hmb_ch_sink_admit(struct hmb_ch_sink *s, uint64_t id);
/*
 * After the row is encoded: it joins the batch.  A full batch is sent by
 * the next hmb_ch_sink_admit(), whose verdict reports a failure to send.
 */
void hmb_ch_sink_commit_row(struct hmb_ch_sink *s);
/* Send what is buffered now (a live exporter's periodic flush).  0 or -1. */
int hmb_ch_sink_flush(struct hmb_ch_sink *s);
/* Send what is left, then check the store holds every row.  0 or -1. */
int hmb_ch_sink_finish(struct hmb_ch_sink *s);
void hmb_ch_sink_free(struct hmb_ch_sink *s);

/* --------------------------------------------------- RowBinary encoding */

static inline void hmb_rb_u8(struct hmb_ch_sink *s, uint8_t v)
{
	s->buf[s->len++] = v;
}

static inline void hmb_rb_u16(struct hmb_ch_sink *s, uint16_t v)
{
	memcpy(s->buf + s->len, &v, 2);	/* little-endian host (hmbtrace.h) */
	s->len += 2;
}

static inline void hmb_rb_u32(struct hmb_ch_sink *s, uint32_t v)
{
	memcpy(s->buf + s->len, &v, 4);
	s->len += 4;
}

static inline void hmb_rb_u64(struct hmb_ch_sink *s, uint64_t v)
{
	memcpy(s->buf + s->len, &v, 8);
	s->len += 8;
}

static inline void hmb_rb_f64(struct hmb_ch_sink *s, double v)
{
	memcpy(s->buf + s->len, &v, 8);
	s->len += 8;
}

/* String: LEB128 length, then the bytes. */
static inline void hmb_rb_bytes(struct hmb_ch_sink *s, const void *p, size_t n)
{
	size_t v = n;

	do {
		uint8_t b = v & 0x7f;

		v >>= 7;
		s->buf[s->len++] = v ? (b | 0x80) : b;
	} while (v);
	memcpy(s->buf + s->len, p, n);
	s->len += n;
}

static inline void hmb_rb_str(struct hmb_ch_sink *s, const char *str)
{
	hmb_rb_bytes(s, str, strlen(str));
}

/* ------------------------------------------------------ rows (chrows.c) */

struct hmb_cmd;

/* The export's identity and the drive, common to its rows. */
struct hmb_ch_ident {
	uint16_t day;		/* days since 1970-01-01 (the partition) */
	const char *host;
	uint64_t trace_id;
	const char *serial, *model, *fw_rev;	/* commands rows; NULL = "" */
};

/* Column lists in RowBinary order of the rows below. */
extern const char hmb_ch_commands_cols[];
extern const char hmb_ch_losses_cols[];
extern const char hmb_ch_fw_records_cols[];
extern const char hmb_ch_clock_cols[];

struct hmb_record_hdr;

/*
 * One fw_records row: the record's header and @hdr->payload_len bytes of
 * @payload (at most HMB_RECORD_MAX_PAYLOAD; the caller has checked it), row id
 * @rec_off (the dump offset offline, the record's ordinal live), the
 * ring's name and epoch, and @host_ns, its firmware time on the host's
 * wall clock (0: not mapped).  Returns what hmb_ch_sink_admit() returns.
 */
int hmb_ch_row_record(struct hmb_ch_sink *s, const struct hmb_ch_ident *k,
		      const char *ring, uint64_t rec_off, uint32_t epoch,
		      uint64_t host_ns, const struct hmb_record_hdr *hdr,
		      const void *payload);

/* One clock row (docs/fleet.md: kind host_open, estimate or step). */
struct hmb_ch_clock {
	uint64_t id;
	const char *ring, *kind;
	uint64_t fw_ns, host_ns, monotonic_ns, boottime_ns;
	double offset_ns, drift_ppm, err_ns, drift_err_ppm;
};
int hmb_ch_row_clock(struct hmb_ch_sink *s, const struct hmb_ch_ident *k,
		     const struct hmb_ch_clock *c);

/*
 * One commands row: @c as the command model judged it, host times (the
 * host's CLOCK_MONOTONIC) moved to the wall clock by @wall_off, firmware
 * phases as mapped host times (0 when absent or not placed), the offset
 * the mapping used and @clock_err, its bound.  Returns what
 * hmb_ch_sink_admit() returns (1: encoded).
 */
int hmb_ch_row_command(struct hmb_ch_sink *s, const struct hmb_ch_ident *k,
		       uint64_t cmd_id, const struct hmb_cmd *c,
		       int64_t wall_off, double clock_err);

/* One losses row. */
struct hmb_ch_loss {
	uint64_t id;
	const char *ring, *layer, *counter, *detail;
	uint64_t count, fw_from, fw_to, host_from, host_to;
	uint32_t seq_first, seq_last;
};
int hmb_ch_row_loss(struct hmb_ch_sink *s, const struct hmb_ch_ident *k,
		    const struct hmb_ch_loss *l);

#ifdef __cplusplus
}
#endif
#endif /* HMBTRACE_CH_H */
