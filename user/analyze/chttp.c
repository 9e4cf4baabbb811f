// SPDX-License-Identifier: Apache-2.0
/*
 * chttp: ClickHouse's HTTP interface through libcurl (see chttp.h).
 */
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>

#include "chttp.h"

/* Answers kept: queries return a line, errors a message. */
#define CH_ANS_MAX (1u << 20)

struct ch_conn {
	CURL *curl;
	CURLU *base;		/* the URL as given (its query kept) */
	struct curl_slist *hdrs;
	char display[256];	/* scheme://host:port, no credentials */
	char *ans;
	size_t ans_len, ans_cap;
	bool ans_cut;
	long timeout_s, connect_timeout_s;
};

static bool curl_ready;

/* Messages are cut to CH_ERR_LEN: a cut message is still the message. */
__attribute__((format(printf, 2, 3)))
static void errf(char err[CH_ERR_LEN], const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, CH_ERR_LEN, fmt, ap);
	va_end(ap);
}

static size_t on_data(char *p, size_t size, size_t n, void *ctx)
{
	struct ch_conn *c = ctx;
	size_t len = size * n, room;

	if (c->ans_len + len + 1 > c->ans_cap && c->ans_cap < CH_ANS_MAX) {
		size_t cap = c->ans_cap;
		char *b;

		while (cap < c->ans_len + len + 1 && cap < CH_ANS_MAX)
			cap *= 2;
		b = realloc(c->ans, cap);
		if (b) {
			c->ans = b;
			c->ans_cap = cap;
		}
	}
	room = c->ans_cap - 1 - c->ans_len;
	if (len > room) {
		c->ans_cut = true;
		len = room;
	}
	memcpy(c->ans + c->ans_len, p, len);
	c->ans_len += len;
	c->ans[c->ans_len] = 0;
	return size * n;	/* the rest is dropped, not an error */
}

int ch_open(struct ch_conn **out, const char *url, const struct ch_opts *o,
	    char err[CH_ERR_LEN])
{
	struct ch_conn *c;
	char *host = NULL, *port = NULL, *scheme = NULL;
	CURLUcode uc;

	*out = NULL;
	if (strncmp(url, "http://", 7) && strncmp(url, "https://", 8)) {
		errf(err,
			 "'%s': not an http:// or https:// URL of a ClickHouse server",
			 url);
		return CH_FATAL;
	}
	if (!curl_ready) {
		if (curl_global_init(CURL_GLOBAL_DEFAULT)) {
			errf(err, "libcurl failed to initialise");
			return CH_FATAL;
		}
		curl_ready = true;
	}
	c = calloc(1, sizeof(*c));
	if (!c)
		goto nomem;
	c->ans_cap = 4096;
	c->ans = malloc(c->ans_cap);
	c->curl = curl_easy_init();
	c->base = curl_url();
	if (!c->ans || !c->curl || !c->base)
		goto nomem;
	c->ans[0] = 0;
	uc = curl_url_set(c->base, CURLUPART_URL, url, 0);
	if (uc) {
		errf(err, "'%s': bad URL: %s", url,
			 curl_url_strerror(uc));
		ch_close(c);
		return CH_FATAL;
	}
	if (curl_url_get(c->base, CURLUPART_HOST, &host, 0) || !host || !*host) {
		errf(err, "'%s': bad URL: no host", url);
		curl_free(host);
		ch_close(c);
		return CH_FATAL;
	}
	curl_url_get(c->base, CURLUPART_SCHEME, &scheme, 0);
	curl_url_get(c->base, CURLUPART_PORT, &port, CURLU_DEFAULT_PORT);
	snprintf(c->display, sizeof(c->display), "%s://%s:%s",
		 scheme ? scheme : "http", host, port ? port : "?");
	curl_free(scheme);
	curl_free(host);
	curl_free(port);

	c->timeout_s = o && o->timeout_s ? o->timeout_s : 60;
	c->connect_timeout_s = o && o->connect_timeout_s ?
			       o->connect_timeout_s : 5;
	/* No "Expect: 100-continue" wait before large bodies. */
	c->hdrs = curl_slist_append(NULL, "Expect:");
	if (!c->hdrs)
		goto nomem;
	curl_easy_setopt(c->curl, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c->curl, CURLOPT_HTTPHEADER, c->hdrs);
	curl_easy_setopt(c->curl, CURLOPT_WRITEFUNCTION, on_data);
	curl_easy_setopt(c->curl, CURLOPT_WRITEDATA, c);
	curl_easy_setopt(c->curl, CURLOPT_TIMEOUT, c->timeout_s);
	curl_easy_setopt(c->curl, CURLOPT_CONNECTTIMEOUT, c->connect_timeout_s);
	curl_easy_setopt(c->curl, CURLOPT_TCP_KEEPALIVE, 1L);
	curl_easy_setopt(c->curl, CURLOPT_PROTOCOLS_STR, "http,https");
	*out = c;
	return CH_OK;
nomem:
	errf(err, "out of memory");
	ch_close(c);
	return CH_FATAL;
}

void ch_close(struct ch_conn *c)
{
	if (!c)
		return;
	if (c->curl)
		curl_easy_cleanup(c->curl);
	curl_url_cleanup(c->base);
	curl_slist_free_all(c->hdrs);
	free(c->ans);
	free(c);
}

const char *ch_url(const struct ch_conn *c)
{
	return c->display;
}

/* ClickHouse error codes worth a retry: the cluster may heal. */
static bool code_retryable(long code)
{
	static const long codes[] = {
		159,	/* TIMEOUT_EXCEEDED */
		202,	/* TOO_MANY_SIMULTANEOUS_QUERIES */
		203,	/* NO_FREE_CONNECTION */
		209,	/* SOCKET_TIMEOUT */
		210,	/* NETWORK_ERROR: a shard is down */
		216,	/* QUERY_WITH_SAME_ID_IS_ALREADY_RUNNING */
		241,	/* MEMORY_LIMIT_EXCEEDED */
		242,	/* TABLE_IS_READ_ONLY */
		252,	/* TOO_MANY_PARTS */
		279,	/* ALL_CONNECTION_TRIES_FAILED */
		285,	/* TOO_FEW_LIVE_REPLICAS */
		319,	/* UNKNOWN_STATUS_OF_INSERT */
	};

	for (size_t i = 0; i < sizeof(codes) / sizeof(codes[0]); i++)
		if (codes[i] == code)
			return true;
	return false;
}

/*
 * The server's message on one line: "Code: 60, e.displayText() =
 * DB::Exception: X, e.what() = DB::Exception" -> "Code: 60: X".
 */
static void flatten(const char *in, char *out, size_t cap)
{
	const char *p = in, *dt = strstr(in, "e.displayText() = ");
	size_t n = 0;
	long code = -1;

	if (sscanf(in, "Code: %ld", &code) == 1 && dt) {
		const char *colon = strstr(dt, ": ");

		n = (size_t)snprintf(out, cap, "Code %ld: ", code);
		p = colon ? colon + 2 : dt + 18;
	}
	for (; *p && n + 1 < cap; p++) {
		if (strncmp(p, ", e.what() = ", 13) == 0)
			break;
		if (*p == '\n' || *p == '\r' || *p == '\t') {
			if (n && out[n - 1] != ' ')
				out[n++] = ' ';
			continue;
		}
		out[n++] = isprint((unsigned char)*p) ? *p : '?';
	}
	while (n && out[n - 1] == ' ')
		n--;
	out[n] = 0;
}

static bool curl_retryable(CURLcode rc, bool *sent)
{
	switch (rc) {
	case CURLE_COULDNT_RESOLVE_HOST:
	case CURLE_COULDNT_RESOLVE_PROXY:
	case CURLE_COULDNT_CONNECT:
		*sent = false;
		return true;
	case CURLE_OPERATION_TIMEDOUT:
	case CURLE_SEND_ERROR:
	case CURLE_RECV_ERROR:
	case CURLE_GOT_NOTHING:
	case CURLE_PARTIAL_FILE:
	case CURLE_HTTP2:
	case CURLE_HTTP2_STREAM:
		*sent = true;
		return true;
	default:
		*sent = true;
		return false;
	}
}

/*
 * POST @body (or @sql when @body is NULL) to the base URL plus the
 * parameters in @params (NULL-terminated "name=value" pairs, encoded here).
 */
static int request(struct ch_conn *c, const char *const *params,
		   const void *body, size_t len, bool fresh, bool *sent,
		   char err[CH_ERR_LEN], const char *what)
{
	CURLU *u = curl_url_dup(c->base);
	char *url = NULL, msg[CH_ERR_LEN];
	CURLcode rc;
	long status = 0, code = -1;

	*sent = false;
	if (!u) {
		errf(err, "out of memory");
		return CH_FATAL;
	}
	for (; *params; params++) {
		if (curl_url_set(u, CURLUPART_QUERY, *params,
				 CURLU_APPENDQUERY | CURLU_URLENCODE)) {
			curl_url_cleanup(u);
			errf(err, "%s: cannot build the request URL",
				 c->display);
			return CH_FATAL;
		}
	}
	if (curl_url_get(u, CURLUPART_URL, &url, 0)) {
		curl_url_cleanup(u);
		errf(err, "%s: cannot build the request URL",
			 c->display);
		return CH_FATAL;
	}
	curl_url_cleanup(u);
	c->ans_len = 0;
	c->ans_cut = false;
	c->ans[0] = 0;
	curl_easy_setopt(c->curl, CURLOPT_URL, url);
	/*
	 * libcurl sends a request again by itself when a reused connection
	 * turns out dead before any answer: harmless for a query, a second
	 * copy of the batch for an insert the server committed before the
	 * connection broke.  An insert gets a connection of its own.
	 */
	curl_easy_setopt(c->curl, CURLOPT_FRESH_CONNECT, fresh ? 1L : 0L);
	curl_easy_setopt(c->curl, CURLOPT_POSTFIELDS, body);
	curl_easy_setopt(c->curl, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
	rc = curl_easy_perform(c->curl);
	curl_free(url);
	if (rc != CURLE_OK) {
		bool retry = curl_retryable(rc, sent);

		errf(err, "%s: %s: %s", c->display, what,
			 curl_easy_strerror(rc));
		return retry ? CH_RETRY : CH_FATAL;
	}
	*sent = true;
	curl_easy_getinfo(c->curl, CURLINFO_RESPONSE_CODE, &status);
	if (status == 200)
		return CH_OK;
	flatten(c->ans, msg, sizeof(msg));
	sscanf(c->ans, "Code: %ld", &code);
	errf(err, "%s: %s: HTTP %ld: %s", c->display, what,
		 status, msg[0] ? msg : "(no message)");
	if (code >= 0)
		return code_retryable(code) ? CH_RETRY : CH_FATAL;
	/* Not ClickHouse speaking (a proxy, a restarting server). */
	return status == 502 || status == 503 || status == 504 ?
	       CH_RETRY : CH_FATAL;
}

int ch_query(struct ch_conn *c, const char *sql, const char **ans,
	     char err[CH_ERR_LEN])
{
	const char *params[] = { NULL };
	bool sent;
	int rc;

	rc = request(c, params, sql, strlen(sql), false, &sent, err, "query");
	if (rc == CH_OK && c->ans_cut) {
		errf(err, "%s: query: answer over %u bytes",
			 c->display, CH_ANS_MAX);
		return CH_FATAL;
	}
	*ans = c->ans;
	return rc;
}

int ch_insert(struct ch_conn *c, const char *table, const char *cols,
	      const char *query_id, const void *body, size_t len, bool *sent,
	      char err[CH_ERR_LEN])
{
	char q[1024], qid[160], what[200];
	const char *params[] = { q, "insert_distributed_sync=1", qid, NULL };

	if ((size_t)snprintf(q, sizeof(q), "query=INSERT INTO %s (%s) FORMAT RowBinary",
			     table, cols) >= sizeof(q) ||
	    (size_t)snprintf(qid, sizeof(qid), "query_id=%s", query_id) >= sizeof(qid)) {
		errf(err, "insert into %s: request too long", table);
		return CH_FATAL;
	}
	snprintf(what, sizeof(what), "insert into %s", table);
	return request(c, params, body, len, true, sent, err, what);
}
