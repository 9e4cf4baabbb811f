// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * chttp: ClickHouse's HTTP interface through libcurl (see chttp.h).
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include <curl/curl.h>

#include "hmbtrace_ch.h"
#include "hmbtrace_util.h"
#include "chpriv.h"

/* Answers kept: queries return a line, errors a message. */
#define HMB_CH_ANS_MAX (1u << 20)
/* A credentials file holds two short lines. */
#define CRED_FILE_MAX (64u << 10)
#define CRED_MAX 1024

struct hmb_ch_conn {
	CURL *curl;		/* the options; each request runs a copy */
	CURLSH *share;		/* the copies' connections, kept alive */
	CURLU *base;		/* the URL as given (its query kept) */
	struct curl_slist *hdrs;
	char display[256];	/* scheme://host:port, no credentials */
	char *ans;
	size_t ans_len, ans_cap;
	bool ans_cut;
	long timeout_s, connect_timeout_s;
};

static bool curl_ready;

/* Messages are cut to HMB_CH_ERR_LEN: a cut message is still the message. */
__attribute__((format(printf, 2, 3)))
static void errf(char err[HMB_CH_ERR_LEN], const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, HMB_CH_ERR_LEN, fmt, ap);
	va_end(ap);
}

static size_t on_data(char *p, size_t size, size_t n, void *ctx)
{
	struct hmb_ch_conn *c = ctx;
	size_t len = size * n, room;

	if (c->ans_len + len + 1 > c->ans_cap && c->ans_cap < HMB_CH_ANS_MAX) {
		size_t cap = c->ans_cap;
		char *b;

		while (cap < c->ans_len + len + 1 && cap < HMB_CH_ANS_MAX)
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

/*
 * @url for a message: the password of its user information ("u:P@host")
 * and the value of every "password=" parameter replaced by "***".  Works
 * on any text, a URL libcurl refuses included.
 */
static void redact(const char *url, char *out, size_t cap)
{
	const char *auth = strstr(url, "://"), *end, *at = NULL, *p;
	size_t n = 0;

	auth = auth ? auth + 3 : url;
	end = auth + strcspn(auth, "/?#");
	for (p = auth; p < end; p++)
		if (*p == '@')
			at = p;
	for (p = url; *p && n + 4 < cap; ) {
		if (at && p > auth && p[-1] == ':' && p <= at &&
		    !memchr(auth, ':', (size_t)(p - 1 - auth))) {
			/* the first ':' of the user information */
			memcpy(out + n, "***", 3);
			n += 3;
			p = at;
			continue;
		}
		if (p > end && strncmp(p, "password=", 9) == 0 &&
		    (p[-1] == '?' || p[-1] == '&') && n + 12 < cap) {
			memcpy(out + n, "password=***", 12);
			n += 12;
			p += 9 + strcspn(p + 9, "&#");
			continue;
		}
		out[n++] = *p++;
	}
	out[n] = 0;
}

/* %XX and '+' decoded, in place. */
static void form_decode(char *s)
{
	char *w = s;

	for (; *s; s++) {
		unsigned int v;

		if (*s == '%' && sscanf(s + 1, "%2x", &v) == 1 &&
		    isxdigit((unsigned char)s[1]) &&
		    isxdigit((unsigned char)s[2])) {
			*w++ = (char)v;
			s += 2;
		} else {
			*w++ = *s == '+' ? ' ' : *s;
		}
	}
	*w = 0;
}

struct creds {
	char user[CRED_MAX], password[CRED_MAX];
	bool have_user, have_password;
	bool too_long;
};

static void cred_set(struct creds *c, char *dst, bool *have, const char *v)
{
	if (strlen(v) >= CRED_MAX)
		c->too_long = true;
	snprintf(dst, CRED_MAX, "%s", v);
	*have = true;
}

/*
 * The URL's own credentials ("user:password@host", "?user=&password="),
 * taken out of @u: they go in headers, never in the request line.
 */
static int url_creds(CURLU *u, struct creds *c, char err[HMB_CH_ERR_LEN],
		     const char *shown)
{
	char *v = NULL, *q = NULL, *kept, *tok, *save = NULL;
	size_t k = 0;

	if (!curl_url_get(u, CURLUPART_USER, &v, CURLU_URLDECODE) && v) {
		cred_set(c, c->user, &c->have_user, v);
		curl_free(v);
		curl_url_set(u, CURLUPART_USER, NULL, 0);
	}
	v = NULL;
	if (!curl_url_get(u, CURLUPART_PASSWORD, &v, CURLU_URLDECODE) && v) {
		cred_set(c, c->password, &c->have_password, v);
		curl_free(v);
		curl_url_set(u, CURLUPART_PASSWORD, NULL, 0);
	}
	if (curl_url_get(u, CURLUPART_QUERY, &q, 0) || !q)
		return 0;
	kept = malloc(strlen(q) + 1);
	if (!kept) {
		curl_free(q);
		errf(err, "out of memory");
		return -1;
	}
	for (tok = strtok_r(q, "&", &save); tok; tok = strtok_r(NULL, "&", &save)) {
		bool is_user = !strncmp(tok, "user=", 5);

		if (is_user || !strncmp(tok, "password=", 9)) {
			char *val = tok + (is_user ? 5 : 9);

			form_decode(val);
			if (is_user)
				cred_set(c, c->user, &c->have_user, val);
			else
				cred_set(c, c->password, &c->have_password, val);
			continue;
		}
		k += (size_t)sprintf(kept + k, "%s%s", k ? "&" : "", tok);
	}
	explicit_bzero(q, strlen(q));
	curl_free(q);
	kept[k] = 0;
	if (curl_url_set(u, CURLUPART_QUERY, k ? kept : NULL, 0)) {
		free(kept);
		errf(err, "'%s': bad URL query", shown);
		return -1;
	}
	free(kept);
	return 0;
}

/*
 * A credentials file (docs/fleet.md): "user=NAME" and "password=SECRET"
 * lines (the value is the rest of the line), '#' comments, blank lines.
 * Refused unless a regular file only its owner may read: it holds a
 * password.  Opened without blocking, so a FIFO is refused, not waited on.
 */
static int file_creds(const char *path, struct creds *c,
		      char err[HMB_CH_ERR_LEN])
{
	char *buf, *line, *next;
	struct stat st;
	ssize_t got;
	unsigned int no = 0;
	int fd, rc = 0;

	fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd < 0) {
		errf(err, "%s: cannot open the credentials file: %s", path,
		     strerror(errno));
		return -1;
	}
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) ||
	    (uint64_t)st.st_size > CRED_FILE_MAX) {
		errf(err, "%s: the credentials file is not a regular file of at most %u bytes",
		     path, CRED_FILE_MAX);
		close(fd);
		return -1;
	}
	if (st.st_mode & (S_IRWXG | S_IRWXO)) {
		errf(err, "%s: the credentials file is open to group or others (mode %04o); refused, it holds a password: chmod 600 %s",
		     path, (unsigned int)(st.st_mode & 07777), path);
		close(fd);
		return -1;
	}
	buf = calloc(1, (size_t)st.st_size + 1);
	if (!buf) {
		close(fd);
		errf(err, "out of memory");
		return -1;
	}
	got = read(fd, buf, (size_t)st.st_size);
	close(fd);
	if (got < 0) {
		errf(err, "%s: cannot read the credentials file: %s", path,
		     strerror(errno));
		free(buf);
		return -1;
	}
	buf[got] = 0;
	for (line = buf; line && !rc; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = 0;
		no++;
		if (*line && line[strlen(line) - 1] == '\r')
			line[strlen(line) - 1] = 0;
		if (!*line || *line == '#')
			continue;
		/* the line is never shown: it may be the password */
		if (!strncmp(line, "user=", 5)) {
			cred_set(c, c->user, &c->have_user, line + 5);
		} else if (!strncmp(line, "password=", 9)) {
			cred_set(c, c->password, &c->have_password, line + 9);
		} else {
			errf(err, "%s:%u: not a user= or password= line", path,
			     no);
			rc = -1;
		}
	}
	explicit_bzero(buf, (size_t)got);
	free(buf);
	return rc;
}

/*
 * Who connects: each of user and password from the first that has it of
 * the credentials file, the URL, $CLICKHOUSE_USER / $CLICKHOUSE_PASSWORD
 * (docs/fleet.md).  Sent as ClickHouse's X-ClickHouse-User/-Key headers.
 */
static int set_creds(struct hmb_ch_conn *c, const char *file,
		     char err[HMB_CH_ERR_LEN], const char *shown)
{
	struct creds url = { 0 }, f = { 0 }, *pick[2] = { &f, &url };
	const char *eu = getenv("CLICKHOUSE_USER");
	const char *ep = getenv("CLICKHOUSE_PASSWORD");
	const char *user = NULL, *pw = NULL;
	char hdr[CRED_MAX + 32];
	int rc = -1;

	if (url_creds(c->base, &url, err, shown))
		goto out;
	if (file && file_creds(file, &f, err))
		goto out;
	for (int i = 0; i < 2; i++) {
		if (!user && pick[i]->have_user)
			user = pick[i]->user;
		if (!pw && pick[i]->have_password)
			pw = pick[i]->password;
	}
	if (!user && eu)
		user = eu;
	if (!pw && ep)
		pw = ep;
	if (url.too_long || f.too_long || (user && strlen(user) >= CRED_MAX) ||
	    (pw && strlen(pw) >= CRED_MAX)) {
		errf(err, "the ClickHouse user or password is longer than %d bytes",
		     CRED_MAX - 1);
		goto out;
	}
	if ((user && strpbrk(user, "\r\n")) || (pw && strpbrk(pw, "\r\n"))) {
		errf(err, "the ClickHouse user or password holds a line break");
		goto out;
	}
	if (!user && pw)
		user = "default";
	rc = 0;
	if (user) {
		snprintf(hdr, sizeof(hdr), "X-ClickHouse-User: %.*s",
			 CRED_MAX - 1, user);
		c->hdrs = curl_slist_append(c->hdrs, hdr);
	}
	if (pw) {
		snprintf(hdr, sizeof(hdr), "X-ClickHouse-Key: %.*s",
			 CRED_MAX - 1, pw);
		c->hdrs = curl_slist_append(c->hdrs, hdr);
		explicit_bzero(hdr, sizeof(hdr));
	}
	if (!c->hdrs) {
		errf(err, "out of memory");
		rc = -1;
	}
out:
	explicit_bzero(&url, sizeof(url));
	explicit_bzero(&f, sizeof(f));
	return rc;
}

int hmb_ch_open(struct hmb_ch_conn **out, const char *url, const struct hmb_ch_opts *o,
	    char err[HMB_CH_ERR_LEN])
{
	struct hmb_ch_conn *c;
	char *host = NULL, *port = NULL, *scheme = NULL;
	char shown[HMB_CH_ERR_LEN / 2];
	CURLUcode uc;

	*out = NULL;
	/* No message shows a password (the URL may hold one). */
	redact(url, shown, sizeof(shown));
	if (strncmp(url, "http://", 7) && strncmp(url, "https://", 8)) {
		errf(err,
			 "'%s': not an http:// or https:// URL of a ClickHouse server",
			 shown);
		return HMB_CH_FATAL;
	}
	if (!curl_ready) {
		if (curl_global_init(CURL_GLOBAL_DEFAULT)) {
			errf(err, "libcurl failed to initialise");
			return HMB_CH_FATAL;
		}
		curl_ready = true;
	}
	c = calloc(1, sizeof(*c));
	if (!c)
		goto nomem;
	c->ans_cap = 4096;
	c->ans = malloc(c->ans_cap);
	c->curl = curl_easy_init();
	c->share = curl_share_init();
	c->base = curl_url();
	if (!c->ans || !c->curl || !c->share || !c->base ||
	    curl_share_setopt(c->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_CONNECT))
		goto nomem;
	c->ans[0] = 0;
	uc = curl_url_set(c->base, CURLUPART_URL, url, 0);
	if (uc) {
		errf(err, "'%s': bad URL: %s", shown,
			 curl_url_strerror(uc));
		hmb_ch_close(c);
		return HMB_CH_FATAL;
	}
	if (curl_url_get(c->base, CURLUPART_HOST, &host, 0) || !host || !*host) {
		errf(err, "'%s': bad URL: no host", shown);
		curl_free(host);
		hmb_ch_close(c);
		return HMB_CH_FATAL;
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
	if (set_creds(c, o ? o->credentials : NULL, err, shown)) {
		hmb_ch_close(c);
		return HMB_CH_FATAL;
	}
	curl_easy_setopt(c->curl, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c->curl, CURLOPT_HTTPHEADER, c->hdrs);
	curl_easy_setopt(c->curl, CURLOPT_WRITEFUNCTION, on_data);
	curl_easy_setopt(c->curl, CURLOPT_WRITEDATA, c);
	curl_easy_setopt(c->curl, CURLOPT_TIMEOUT, c->timeout_s);
	curl_easy_setopt(c->curl, CURLOPT_CONNECTTIMEOUT, c->connect_timeout_s);
	curl_easy_setopt(c->curl, CURLOPT_TCP_KEEPALIVE, 1L);
	curl_easy_setopt(c->curl, CURLOPT_PROTOCOLS_STR, "http,https");
	*out = c;
	return HMB_CH_OK;
nomem:
	errf(err, "out of memory");
	hmb_ch_close(c);
	return HMB_CH_FATAL;
}

void hmb_ch_close(struct hmb_ch_conn *c)
{
	if (!c)
		return;
	if (c->curl)
		curl_easy_cleanup(c->curl);
	if (c->share)
		curl_share_cleanup(c->share);
	curl_url_cleanup(c->base);
	curl_slist_free_all(c->hdrs);
	free(c->ans);
	free(c);
}

void *hmb__ch_curl(struct hmb_ch_conn *c)
{
	return c->curl;
}

const char *hmb_ch_url(const struct hmb_ch_conn *c)
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
/* The error code of a ClickHouse answer "Code: N, ...", or -1. */
static long hmb_ch_code(const char *ans)
{
	const char *e;
	uint64_t v;

	if (strncmp(ans, "Code: ", 6) || hmb_strtou64(ans + 6, &e, 10, &v) ||
	    v > 1000000)
		return -1;
	return (long)v;
}

static void flatten(const char *in, char *out, size_t cap)
{
	const char *p = in, *dt = strstr(in, "e.displayText() = ");
	char raw[HMB_CH_ERR_LEN];
	size_t n = 0, k;
	long code = hmb_ch_code(in);

	if (code >= 0 && dt) {
		const char *colon = strstr(dt, ": ");

		n = (size_t)snprintf(out, cap, "Code %ld: ", code);
		p = colon ? colon + 2 : dt + 18;
	}
	for (k = 0; *p && k + 1 < sizeof(raw); p++) {
		if (strncmp(p, ", e.what() = ", 13) == 0)
			break;
		if (*p == '\n' || *p == '\r' || *p == '\t') {
			if (k && raw[k - 1] != ' ')
				raw[k++] = ' ';
			continue;
		}
		raw[k++] = *p;
	}
	while (k && raw[k - 1] == ' ')
		k--;
	raw[k] = 0;
	/* the server's words end up on a terminal: nothing in them acts */
	if (n < cap)
		hmb_text_esc(out + n, cap - n, raw);
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
static int request(struct hmb_ch_conn *c, const char *const *params,
		   const void *body, size_t len, bool fresh, bool *sent,
		   char err[HMB_CH_ERR_LEN], const char *what)
{
	CURLU *u = curl_url_dup(c->base);
	CURL *h;
	char *url = NULL, msg[HMB_CH_ERR_LEN];
	CURLcode rc;
	long status = 0, code = -1;

	*sent = false;
	if (!u) {
		errf(err, "out of memory");
		return HMB_CH_FATAL;
	}
	for (; *params; params++) {
		if (curl_url_set(u, CURLUPART_QUERY, *params,
				 CURLU_APPENDQUERY | CURLU_URLENCODE)) {
			curl_url_cleanup(u);
			errf(err, "%s: cannot build the request URL",
				 c->display);
			return HMB_CH_FATAL;
		}
	}
	if (curl_url_get(u, CURLUPART_URL, &url, 0)) {
		curl_url_cleanup(u);
		errf(err, "%s: cannot build the request URL",
			 c->display);
		return HMB_CH_FATAL;
	}
	curl_url_cleanup(u);
	c->ans_len = 0;
	c->ans_cut = false;
	c->ans[0] = 0;
	/*
	 * A handle of its own for each request: libcurl 7.88 (Debian 12)
	 * keeps a pointer to the last header of the previous answer in a
	 * reused handle, and a next answer whose first header line is a
	 * folded continuation reads it after it was freed (fuzz_chttp,
	 * curl's fix 11103 in 8.1.0).  The share keeps the connection.
	 */
	h = curl_easy_duphandle(c->curl);
	if (!h) {
		curl_free(url);
		errf(err, "out of memory");
		return HMB_CH_FATAL;
	}
	curl_easy_setopt(h, CURLOPT_SHARE, c->share);
	curl_easy_setopt(h, CURLOPT_URL, url);
	/*
	 * libcurl sends a request again by itself when a reused connection
	 * turns out dead before any answer: harmless for a query, a second
	 * copy of the batch for an insert the server committed before the
	 * connection broke.  An insert gets a connection of its own.
	 */
	curl_easy_setopt(h, CURLOPT_FRESH_CONNECT, fresh ? 1L : 0L);
	curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
	curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
	rc = curl_easy_perform(h);
	curl_free(url);
	curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
	curl_easy_cleanup(h);
	if (rc != CURLE_OK) {
		bool retry = curl_retryable(rc, sent);

		errf(err, "%s: %s: %s", c->display, what,
			 curl_easy_strerror(rc));
		return retry ? HMB_CH_RETRY : HMB_CH_FATAL;
	}
	*sent = true;
	if (status == 200)
		return HMB_CH_OK;
	flatten(c->ans, msg, sizeof(msg));
	code = hmb_ch_code(c->ans);
	errf(err, "%s: %s: HTTP %ld: %s", c->display, what,
		 status, msg[0] ? msg : "(no message)");
	if (code >= 0)
		return code_retryable(code) ? HMB_CH_RETRY : HMB_CH_FATAL;
	/* Not ClickHouse speaking (a proxy, a restarting server). */
	return status == 502 || status == 503 || status == 504 ?
	       HMB_CH_RETRY : HMB_CH_FATAL;
}

int hmb_ch_query(struct hmb_ch_conn *c, const char *sql, const char **ans,
	     char err[HMB_CH_ERR_LEN])
{
	const char *params[] = { NULL };
	bool sent;
	int rc;

	rc = request(c, params, sql, strlen(sql), false, &sent, err, "query");
	if (rc == HMB_CH_OK && c->ans_cut) {
		errf(err, "%s: query: answer over %u bytes",
			 c->display, HMB_CH_ANS_MAX);
		return HMB_CH_FATAL;
	}
	*ans = c->ans;
	return rc;
}

int hmb_ch_insert(struct hmb_ch_conn *c, const char *table, const char *cols,
	      const char *query_id, const void *body, size_t len, bool *sent,
	      char err[HMB_CH_ERR_LEN])
{
	char q[1024], qid[160], what[200];
	const char *params[] = { q, "insert_distributed_sync=1", qid, NULL };

	if ((size_t)snprintf(q, sizeof(q), "query=INSERT INTO %s (%s) FORMAT RowBinary",
			     table, cols) >= sizeof(q) ||
	    (size_t)snprintf(qid, sizeof(qid), "query_id=%s", query_id) >= sizeof(qid)) {
		errf(err, "insert into %s: request too long", table);
		return HMB_CH_FATAL;
	}
	snprintf(what, sizeof(what), "insert into %s", table);
	return request(c, params, body, len, true, sent, err, what);
}
