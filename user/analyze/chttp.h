/* SPDX-License-Identifier: Apache-2.0 */
/*
 * chttp: a small ClickHouse client over its HTTP interface, on libcurl.
 * Queries (small answers) and RowBinary inserts, one connection kept alive,
 * every failure classified as retryable (the server or the network may come
 * back) or permanent (the request itself is wrong), with the server's own
 * message ("Code: 60, ... Table hmb.x doesn't exist") kept for the error
 * line.  Retrying is the caller's business (export.c): only it knows
 * whether a failed insert may already have been committed.
 */
#ifndef HMB_CHTTP_H
#define HMB_CHTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CH_ERR_LEN 512

enum ch_status {
	CH_OK = 0,
	CH_RETRY = 1,		/* network error, server down, overloaded */
	CH_FATAL = 2,		/* bad URL, unknown table, bad data, ... */
};

struct ch_conn;

struct ch_opts {
	long timeout_s;		/* whole request; 0: 60 */
	long connect_timeout_s;	/* 0: 5 */
};

/*
 * @url: http:// or https:// base URL of a server (query parameters such as
 * ?user=...&password=... are kept and extended).  Fails (CH_FATAL, message
 * in @err) on a URL libcurl or this client cannot use.
 */
int ch_open(struct ch_conn **out, const char *url, const struct ch_opts *o,
	    char err[CH_ERR_LEN]);
void ch_close(struct ch_conn *c);

/*
 * Run @sql (a SELECT with a small answer).  The answer, NUL-terminated, is
 * in *@ans (owned by @c, valid until the next call).  Returns enum
 * ch_status; on failure @err says what and where.
 */
int ch_query(struct ch_conn *c, const char *sql, const char **ans,
	     char err[CH_ERR_LEN]);

/*
 * INSERT INTO @table (@cols) FORMAT RowBinary with @body, synchronous
 * through Distributed tables (insert_distributed_sync=1).  @query_id names
 * the insert: the server refuses a second query with the same id while the
 * first still runs, so a retry cannot overtake an attempt the client gave
 * up on.  *@sent is true if the request may have reached the server (a
 * retry must first find out whether it was committed).
 */
int ch_insert(struct ch_conn *c, const char *table, const char *cols,
	      const char *query_id, const void *body, size_t len, bool *sent,
	      char err[CH_ERR_LEN]);

/* The URL as given, with any password in it replaced by "***". */
const char *ch_url(const struct ch_conn *c);

#endif /* HMB_CHTTP_H */
