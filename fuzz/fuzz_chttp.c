// SPDX-License-Identifier: Apache-2.0
/*
 * The ClickHouse client's reading of server answers (docs/fleet.md): the
 * input is what the server says, answer after answer, fed through
 * libcurl's HTTP parsing (status line, headers, chunked or
 * Content-Length bodies, early ends) and the client's own (chttp.c: the
 * status and "Code: N" classification, the message flattened and escaped;
 * chsink.c: the "count\tmax\n" row count, retries, the exactly-once
 * accounting).  libcurl connects to a Unix socket of the harness's
 * (abstract: nothing in the file system, no network) instead of the
 * server; when a connection is up (CURLOPT_PREREQFUNCTION, before the
 * request is sent) the harness accepts it and writes the next answer.
 * Each request has a connection of its own.
 *
 * Input: byte 0 steers the export (retries 0-3, rows 0-7, 1 or 2 rows a
 * batch), then the answers, separated by the line SEP; a request beyond
 * the last answer gets an empty one (the server closed).
 */
#include <errno.h>
#include <curl/curl.h>
#include <hmbtrace.h>
#include <hmbtrace_ch.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "../user/lib/fleet/chpriv.h"
#include "fuzz.h"

#define SEP "\n--next-answer--\n"
#define MAX_CONN 64
/* No escape ("\\xNN") ends in Q: a message holds it only if an answer did. */
#define PASSWORD "Qfz-Secret-9c1"

struct feed {
	const uint8_t *p;	/* the answers not yet given */
	size_t n;
	bool has_pw;		/* the input itself holds the password */
	int listener;
	int peers[MAX_CONN];
	unsigned int npeers;
	unsigned int retries_seen;
};

/* A message for a terminal: cut, not raw, never the password. */
static void check_msg(const struct feed *f, const char *m, size_t cap)
{
	size_t len = strnlen(m, cap);

	FZ_ASSERT(len < cap);
	for (size_t i = 0; i < len; i++)
		FZ_ASSERT((unsigned char)m[i] >= 0x20 && m[i] != 0x7f);
	if (!f->has_pw)
		FZ_ASSERT(!strstr(m, PASSWORD));
}

static void on_retry(void *ctx, const char *msg)
{
	struct feed *f = ctx;

	check_msg(f, msg, HMB_CH_ERR_LEN + 64);
	f->retries_seen++;
}

/* The connection libcurl just made: the next answer, then the end. */
static int connected(void *ctx, char *ip, char *local_ip, int port,
		     int local_port)
{
	struct feed *f = ctx;
	const uint8_t *end;
	size_t len;
	int fd;

	(void)ip;
	(void)local_ip;
	(void)port;
	(void)local_port;
	if (f->npeers == MAX_CONN)
		return CURL_PREREQFUNC_ABORT;
	fd = accept4(f->listener, NULL, NULL, SOCK_CLOEXEC);
	if (fd < 0)
		abort();
	end = memmem(f->p, f->n, SEP, strlen(SEP));
	len = end ? (size_t)(end - f->p) : f->n;
	/* at most 64 KiB: the socket buffer takes it before anyone reads */
	if (len && write(fd, f->p, len) != (ssize_t)len)
		abort();
	f->p += end ? len + strlen(SEP) : len;
	f->n -= end ? len + strlen(SEP) : len;
	shutdown(fd, SHUT_WR);
	f->peers[f->npeers++] = fd;
	return CURL_PREREQFUNC_OK;
}

/* An abstract Unix socket named after the process: one per fuzzer. */
static int listener(char *name, size_t cap)
{
	static int fd = -1;
	static char sun_name[64];
	struct sockaddr_un a = { .sun_family = AF_UNIX };

	if (fd < 0) {
		snprintf(sun_name, sizeof(sun_name), "hmb-fuzz-chttp-%d",
			 (int)getpid());
		/* a leading NUL: the abstract namespace */
		memcpy(a.sun_path + 1, sun_name, strlen(sun_name));
		fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd < 0 ||
		    bind(fd, (struct sockaddr *)&a, (socklen_t)(
			 offsetof(struct sockaddr_un, sun_path) + 1 +
			 strlen(sun_name))) ||
		    listen(fd, MAX_CONN))
			abort();
	}
	snprintf(name, cap, "%s", sun_name);
	return fd;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const struct hmb_ch_opts opts = { .timeout_s = 30 };
	struct feed f = { 0 };
	struct hmb_ch_export x = { 0 };
	struct hmb_ch_sink s;
	struct hmb_ch_conn *c;
	char err[HMB_CH_ERR_LEN], sock[64];
	unsigned int nrows;
	CURL *curl;
	uint8_t k;

	if (!size)
		return 0;
	k = data[0];
	f.p = data + 1;
	f.n = size - 1;
	f.has_pw = memmem(data, size, PASSWORD, strlen(PASSWORD)) != NULL;
	f.listener = listener(sock, sizeof(sock));
	if (hmb_ch_open(&c, "http://fz:" PASSWORD "@127.0.0.1:9/?database=hmb",
			&opts, err) != HMB_CH_OK)
		abort();
	curl = hmb__ch_curl(c);
	curl_easy_setopt(curl, CURLOPT_ABSTRACT_UNIX_SOCKET, sock);
	curl_easy_setopt(curl, CURLOPT_PREREQFUNCTION, connected);
	curl_easy_setopt(curl, CURLOPT_PREREQDATA, &f);
	/* one answer a connection: a reused one would find the last's end */
	curl_easy_setopt(curl, CURLOPT_FORBID_REUSE, 1L);
	x.conn = c;
	x.database = "hmb";
	x.where = "day = 1 AND host = 'h' AND trace_id = 7";
	x.trace_id = 7;
	x.batch_rows = (k & 0x20) ? 2 : 1;
	x.batch_bytes = 1u << 16;
	x.retries = k & 3;
	x.backoff_ms = 0;
	x.on_retry = on_retry;
	x.retry_ctx = &f;
	nrows = (k >> 2) & 7;

	if (hmb_ch_sink_open(&s, &x, "fw_records", "id", "id") == 0) {
		for (uint64_t id = 1; id <= nrows; id++) {
			int a = hmb_ch_sink_admit(&s, id);

			if (a == 1) {
				hmb_rb_u64(&s, id);
				hmb_ch_sink_commit_row(&s);
			}
			if ((k & 0x40) && id == 2)
				hmb_ch_sink_flush(&s);
		}
		hmb_ch_sink_finish(&s);
		/* every row made is in the store, found there, or counted lost */
		FZ_ASSERT(s.rows == nrows);
		FZ_ASSERT(s.n == 0);
		FZ_ASSERT(s.present + s.sent + s.unsent + s.n == s.rows);
		FZ_ASSERT(!s.verified || (!s.failed && !s.unsent &&
					  s.expect == s.srv_count + s.sent));
	}
	hmb_ch_sink_free(&s);
	check_msg(&f, x.err, sizeof(x.err));
	FZ_ASSERT(x.retried == f.retries_seen);
	hmb_ch_close(c);
	for (unsigned int i = 0; i < f.npeers; i++)
		close(f.peers[i]);
	return 0;
}
