/* SPDX-License-Identifier: Apache-2.0 */
/*
 * chsink: rows for one ClickHouse table of the fleet store, sent in
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
#ifndef HMB_CHSINK_H
#define HMB_CHSINK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "chttp.h"

/* Shared by the sinks of one export. */
struct ch_export {
	struct ch_conn *conn;
	const char *database;
	const char *where;	/* "day = ... AND host = ... AND trace_id = ..." */
	uint64_t trace_id;
	uint64_t batch_rows;	/* flush at this many rows */
	size_t batch_bytes;	/* or this many bytes */
	unsigned int retries;	/* attempts after the first, per request */
	unsigned int backoff_ms;	/* first wait; doubles up to 5 s */
	bool quiet;		/* no line per retry on stderr */
	uint64_t retried;	/* retries made, all sinks */
	bool stop;		/* a sink failed: the others only count */
	char err[CH_ERR_LEN];	/* the error that stopped the export */
};

struct ch_sink {
	struct ch_export *x;
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
#define CH_ROW_MAX (4096 + 2048)

/* Ask the store what it has of this export.  0 or -1 (x->err set). */
int ch_sink_open(struct ch_sink *s, struct ch_export *x, const char *name,
		 const char *cols, const char *id_col);
/*
 * Before encoding a row with id @id (at most CH_ROW_MAX bytes): returns 1
 * if the row is to be encoded into s->buf now, 0 if the store already has
 * it or the sink has failed (the row is counted), -1 on an error (the
 * store holds rows this export does not make; x->err set).
 */
int ch_sink_admit(struct ch_sink *s, uint64_t id);
/* After the row is encoded: a batch is sent when full.  0 or -1. */
int ch_sink_commit_row(struct ch_sink *s);
/* Send what is left, then check the store holds every row.  0 or -1. */
int ch_sink_finish(struct ch_sink *s);
void ch_sink_free(struct ch_sink *s);

/* --------------------------------------------------- RowBinary encoding */

static inline void rb_u8(struct ch_sink *s, uint8_t v)
{
	s->buf[s->len++] = v;
}

static inline void rb_u16(struct ch_sink *s, uint16_t v)
{
	memcpy(s->buf + s->len, &v, 2);	/* little-endian host (hmbtrace.h) */
	s->len += 2;
}

static inline void rb_u32(struct ch_sink *s, uint32_t v)
{
	memcpy(s->buf + s->len, &v, 4);
	s->len += 4;
}

static inline void rb_u64(struct ch_sink *s, uint64_t v)
{
	memcpy(s->buf + s->len, &v, 8);
	s->len += 8;
}

static inline void rb_f64(struct ch_sink *s, double v)
{
	memcpy(s->buf + s->len, &v, 8);
	s->len += 8;
}

/* String: LEB128 length, then the bytes. */
static inline void rb_bytes(struct ch_sink *s, const void *p, size_t n)
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

static inline void rb_str(struct ch_sink *s, const char *str)
{
	rb_bytes(s, str, strlen(str));
}

#endif /* HMB_CHSINK_H */
