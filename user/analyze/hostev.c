// SPDX-License-Identifier: Apache-2.0
/*
 * Host-side NVMe commands from agent JSON lines (read with json-c) or perf
 * script of the nvme tracepoints (hostev.h).  hostev_line() is the one
 * entry point for this untrusted text; hostev_load() reads a file through
 * it.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "analyze.h"
#include "hostev.h"

const char *hostev_fmt_name(enum host_fmt f)
{
	return f == HOST_FMT_AGENT ? "hmb-trace-agent JSON lines" :
	       "perf script (nvme tracepoints)";
}

/* A new command at the end of he->v, zeroed; NULL out of memory. */
static struct hmb_host_cmd *push(struct host_events *he)
{
	if (he->n == he->cap) {
		size_t cap = he->cap ? he->cap * 2 : 4096;
		struct hmb_host_cmd *v = realloc(he->v, cap * sizeof(*v));

		if (!v)
			return NULL;
		he->v = v;
		he->cap = cap;
	}
	memset(&he->v[he->n], 0, sizeof(he->v[0]));
	return &he->v[he->n++];
}

static int add(struct host_events *he, const struct hmb_host_cmd *c)
{
	struct hmb_host_cmd *n = push(he);

	if (!n) {
		errorf("out of memory");
		return EXIT_BADINPUT;
	}
	*n = *c;
	return 0;
}

/* ------------------------------------------------------------ JSON */

/*
 * The agent's JSON lines, read with json-c: {"type":"cmd","cmd":{...}}
 * lines are commands, every other object is skipped (counted as other).
 */

/* Member @key of @o as an unsigned integer: 1 found, 0 absent, -1 bad. */
static int get_uint(struct json_object *o, const char *key, uint64_t max,
		    uint64_t *v)
{
	struct json_object *m;

	if (!json_object_object_get_ex(o, key, &m))
		return 0;
	if (!json_object_is_type(m, json_type_int))
		return -1;
	/* json-c keeps integers above INT64_MAX as uint64 */
	if (json_object_get_int64(m) < 0 && json_object_get_uint64(m) == 0)
		return -1;
	*v = json_object_get_uint64(m);
	return *v <= max ? 1 : -1;
}

struct cmd_field {
	const char *key;
	uint64_t max;
	bool required;
};

static const struct cmd_field cmd_fields[] = {
	{ "ctrl", UINT32_MAX, true },
	{ "qid", UINT16_MAX, true },
	{ "cid", UINT16_MAX, true },
	{ "submit_ns", UINT64_MAX, true },
	{ "complete_ns", UINT64_MAX, true },
	{ "nsid", UINT32_MAX, false },
	{ "slba", UINT64_MAX, false },
	{ "nlb", UINT32_MAX, false },
	{ "flags", UINT64_MAX, false },
	{ "status", UINT16_MAX, false },
	{ "pid", UINT32_MAX, false },
	{ "tid", UINT32_MAX, false },
	{ "cgroup", UINT64_MAX, false },
};

#define NFIELDS (sizeof(cmd_fields) / sizeof(cmd_fields[0]))

/* The members of a "cmd" object into @c; 0 or EXIT_BADINPUT (said). */
static int cmd_members(struct host_events *he, struct json_object *o,
		       uint32_t no, struct hmb_host_cmd *c, uint64_t *flags)
{
	uint64_t v[NFIELDS] = { 0 };
	struct json_object *opc, *comm;

	for (size_t i = 0; i < NFIELDS; i++) {
		int rc = get_uint(o, cmd_fields[i].key, cmd_fields[i].max,
				  &v[i]);

		if (rc < 0) {
			errorf("%s:%u: \"%s\" is not a number in 0..%llu",
			       he->path, no, cmd_fields[i].key,
			       (unsigned long long)cmd_fields[i].max);
			return EXIT_BADINPUT;
		}
		if (!rc && cmd_fields[i].required) {
			errorf("%s:%u: \"cmd\" lacks ctrl, qid, cid, submit_ns or complete_ns",
			       he->path, no);
			return EXIT_BADINPUT;
		}
	}
	c->ctrl = (uint32_t)v[0];
	c->qid = (uint16_t)v[1];
	c->cid = (uint16_t)v[2];
	c->submit_ns = v[3];
	c->complete_ns = v[4];
	c->nsid = (uint32_t)v[5];
	c->slba = v[6];
	c->nlb = (uint32_t)v[7];
	*flags = v[8];
	c->status = (uint16_t)v[9];
	if (json_object_object_get_ex(o, "opc", &opc) &&
	    json_object_is_type(opc, json_type_string))
		snprintf(c->opc, sizeof(c->opc), "%s",
			 json_object_get_string(opc));
	/* who issued it (the agent's, where the kernel knew it) */
	if (json_object_object_get_ex(o, "comm", &comm) &&
	    json_object_is_type(comm, json_type_string)) {
		snprintf(c->comm, sizeof(c->comm), "%s",
			 json_object_get_string(comm));
		c->pid = (uint32_t)v[10];
		c->tid = (uint32_t)v[11];
		c->cgroup = v[12];
	}
	return 0;
}

/* The "cmd" object of a {"type":"cmd"} line, or NULL for another line. */
static struct json_object *cmd_object(struct json_object *top)
{
	struct json_object *type, *cmd;

	if (!json_object_object_get_ex(top, "type", &type) ||
	    !json_object_is_type(type, json_type_string) ||
	    strcmp(json_object_get_string(type), "cmd") ||
	    !json_object_object_get_ex(top, "cmd", &cmd))
		return NULL;
	return cmd;
}

static int agent_line(struct host_events *he, struct json_tokener *tok,
		      const char *line, size_t len, uint32_t no)
{
	struct hmb_host_cmd tmp = { 0 };
	struct json_object *top, *cmd;
	uint64_t flags = 0;
	int rc = 0;
	size_t end;

	json_tokener_reset(tok);
	top = len <= INT32_MAX ? json_tokener_parse_ex(tok, line, (int)len) :
	      NULL;
	end = top ? json_tokener_get_parse_end(tok) : 0;
	while (end < len && strchr(" \t\r\n", line[end]) && line[end])
		end++;
	if (!top || json_tokener_get_error(tok) != json_tokener_success ||
	    !json_object_is_type(top, json_type_object) || end < len) {
		errorf("%s:%u: not a JSON object%s%s", he->path, no,
		       top ? "" : ": ",
		       top ? "" : json_tokener_error_desc(
				json_tokener_get_error(tok)));
		json_object_put(top);
		return EXIT_BADINPUT;
	}
	cmd = cmd_object(top);
	if (!cmd) {
		he->other++;
	} else if (!json_object_is_type(cmd, json_type_object)) {
		errorf("%s:%u: malformed \"cmd\" object", he->path, no);
		rc = EXIT_BADINPUT;
	} else {
		rc = cmd_members(he, cmd, no, &tmp, &flags);
	}
	json_object_put(top);
	if (rc || !cmd)
		return rc;
	if (flags & HMB_CMD_F_BLOCK) {
		he->block++;
		return 0;
	}
	if (!tmp.complete_ns || tmp.complete_ns < tmp.submit_ns) {
		he->incomplete++;
		return 0;
	}
	tmp.line = no;
	return add(he, &tmp);
}

/* ------------------------------------------------------ perf script */

/* Pending setups, by (ctrl, qid, cid): open addressing, grows. */
struct pend {
	uint64_t key;		/* ctrl << 32 | qid << 16 | cid, +1 (0: free) */
	size_t idx;		/* index in he->v */
};

struct ptab {
	struct pend *t;
	size_t cap, n;
};

static size_t ph(uint64_t k, size_t cap)
{
	return (size_t)((k * 0x9E3779B97F4A7C15ull) >> 20) & (cap - 1);
}

static int ptab_put(struct ptab *p, uint64_t key, size_t idx)
{
	size_t i;

	if ((p->n + 1) * 2 > p->cap) {
		struct ptab q = { .cap = p->cap ? p->cap * 2 : 1024 };

		q.t = calloc(q.cap, sizeof(*q.t));
		if (!q.t)
			return -1;
		for (i = 0; i < p->cap; i++)
			if (p->t[i].key) {
				size_t j = ph(p->t[i].key, q.cap);

				while (q.t[j].key)
					j = (j + 1) & (q.cap - 1);
				q.t[j] = p->t[i];
				q.n++;
			}
		free(p->t);
		*p = q;
	}
	i = ph(key, p->cap);
	while (p->t[i].key && p->t[i].key != key)
		i = (i + 1) & (p->cap - 1);
	if (!p->t[i].key)
		p->n++;
	p->t[i].key = key;
	p->t[i].idx = idx;
	return 0;
}

/* Remove and return the entry for @key; -1 if none. */
static long ptab_take(struct ptab *p, uint64_t key)
{
	size_t i, j;
	long idx;

	if (!p->cap)
		return -1;
	i = ph(key, p->cap);
	while (p->t[i].key && p->t[i].key != key)
		i = (i + 1) & (p->cap - 1);
	if (!p->t[i].key)
		return -1;
	idx = (long)p->t[i].idx;
	p->t[i].key = 0;
	p->n--;
	/* re-insert the rest of the cluster */
	for (j = (i + 1) & (p->cap - 1); p->t[j].key; j = (j + 1) & (p->cap - 1)) {
		struct pend e = p->t[j];
		size_t k;

		p->t[j].key = 0;
		k = ph(e.key, p->cap);
		while (p->t[k].key)
			k = (k + 1) & (p->cap - 1);
		p->t[k] = e;
	}
	return idx;
}

/* The decimal number after the first @name in @s. */
static bool field_u64(const char *s, const char *name, uint64_t *v)
{
	const char *p = strstr(s, name), *e;

	return p && !hmb_strtou64(p + strlen(name), &e, 10, v);
}

/*
 * "1234.567890:" before the event name: seconds with up to 9 decimals
 * (more are cut).  A time past 2^64 - 1 ns is UINT64_MAX, for the caller
 * to refuse: it must not wrap to a small one.
 */
static bool perf_ts(const char *line, const char *ev, uint64_t *ns)
{
	const char *e = ev, *s, *dot, *end;
	uint64_t sec, frac;
	size_t digits;

	while (e > line && e[-1] == ' ')
		e--;
	if (e == line || e[-1] != ':')
		return false;
	e--;
	s = e;
	while (s > line && ((s[-1] >= '0' && s[-1] <= '9') || s[-1] == '.'))
		s--;
	dot = memchr(s, '.', (size_t)(e - s));
	if (!dot || hmb_strtou64(s, &end, 10, &sec) || end != dot)
		return false;
	/* digits beyond ns are cut, not read (they may not fit 64 bits) */
	digits = (size_t)(e - dot - 1);
	if (!digits || memchr(dot + 1, '.', digits))
		return false;
	frac = 0;
	for (size_t i = 0; i < 9; i++)
		frac = frac * 10 + (i < digits ? (uint64_t)(dot[1 + i] - '0') : 0);
	if (sec > (UINT64_MAX - frac) / 1000000000ull) {
		*ns = UINT64_MAX;	/* past 2^64 ns: the caller says so */
		return true;
	}
	*ns = sec * 1000000000ull + frac;
	return true;
}

/*
 * Who ran the nvme_setup_cmd event (the task that dispatched the command)
 * from perf script's columns before its time @ev_ts: "COMM TID [CPU]" by
 * default, "COMM PID/TID [CPU]" with -F comm,pid,tid,...; the CPU column
 * may be absent, the name may hold spaces.  Nothing set if they are not
 * there.
 */
static void perf_who(const char *line, const char *ev_ts,
		     struct hmb_host_cmd *c)
{
	const char *e = ev_ts, *id, *end;
	uint64_t a, b = 0;
	size_t n;

	/* back over the time to the columns before it */
	while (e > line && e[-1] == ' ')
		e--;
	while (e > line && e[-1] != ' ')
		e--;
	while (e > line && e[-1] == ' ')
		e--;
	if (e > line && e[-1] == ']') {
		while (e > line && e[-1] != '[')
			e--;
		if (e == line)
			return;
		e--;
		while (e > line && e[-1] == ' ')
			e--;
	}
	id = e;
	while (id > line && id[-1] != ' ')
		id--;
	if (hmb_strtou64(id, &end, 10, &a) || a > UINT32_MAX)
		return;
	if (*end == '/' && (hmb_strtou64(end + 1, &end, 10, &b) ||
			    b > UINT32_MAX))
		return;
	if (end != e)
		return;
	while (id > line && id[-1] == ' ')
		id--;
	while (*line == ' ')
		line++;
	if (id <= line)
		return;
	n = (size_t)(id - line) < sizeof(c->comm) - 1 ?
	    (size_t)(id - line) : sizeof(c->comm) - 1;
	memcpy(c->comm, line, n);
	c->comm[n] = 0;
	/* one number is perf's default tid column: the process not known */
	c->pid = b ? (uint32_t)a : 0;
	c->tid = b ? (uint32_t)b : (uint32_t)a;
}

static int perf_line(struct host_events *he, struct ptab *pt,
		     const char *line, uint32_t no)
{
	const char *setup = strstr(line, "nvme:nvme_setup_cmd:");
	const char *done = setup ? NULL : strstr(line, "nvme:nvme_complete_rq:");
	const char *ev = setup ? setup : done, *p;
	uint64_t ts, ctrl, qid, cid, key, v;
	bool have_ts;

	if (!ev) {
		he->other++;
		return 0;
	}
	p = strstr(ev, ": nvme");
	have_ts = perf_ts(line, ev, &ts);
	if (have_ts && ts == UINT64_MAX) {
		errorf("%s:%u: perf time past 18446744073.709551614 s (2^64 ns) in this nvme event",
		       he->path, no);
		return EXIT_BADINPUT;
	}
	if (!have_ts || !p ||
	    !field_u64(p, ": nvme", &ctrl) || ctrl > UINT32_MAX ||
	    !field_u64(p, "qid=", &qid) || !field_u64(p, "cmdid=", &cid) ||
	    qid > 0xffff || cid > 0xffff) {
		errorf("%s:%u: cannot read time, nvmeN, qid= and cmdid= of this nvme event",
		       he->path, no);
		return EXIT_BADINPUT;
	}
	key = (ctrl << 32 | qid << 16 | cid) + 1;
	if (setup) {
		struct hmb_host_cmd *c;
		long old = ptab_take(pt, key);
		const char *op = strstr(p, "cmd=(");

		if (old >= 0)	/* resubmitted before we saw it complete */
			he->v[old].complete_ns = 0;
		c = push(he);
		if (!c || ptab_put(pt, key, he->n - 1)) {
			errorf("out of memory");
			return EXIT_BADINPUT;
		}
		c->ctrl = (uint32_t)ctrl;
		c->qid = (uint16_t)qid;
		c->cid = (uint16_t)cid;
		c->submit_ns = ts;
		c->line = no;
		perf_who(line, setup, c);
		if (field_u64(p, "nsid=", &v))
			c->nsid = (uint32_t)v;
		if (op) {
			size_t n = 0;

			op += 5;
			if (strncmp(op, "nvme_cmd_", 9) == 0)
				op += 9;
			while (op[n] && op[n] != ' ' && op[n] != ',' &&
			       op[n] != ')' && n < sizeof(c->opc) - 1)
				n++;
			memcpy(c->opc, op, n);
			c->opc[n] = 0;
			if (field_u64(op, "slba=", &v))
				c->slba = v;
			if (field_u64(op, "len=", &v))
				c->nlb = (uint32_t)v;
		}
	} else {
		long idx = ptab_take(pt, key);

		if (idx < 0) {
			he->unpaired++;
			return 0;
		}
		he->v[idx].complete_ns = ts;
		he->v[idx].line = no;
		/* "status=%#x": 0x1a, or 0 */
		p = strstr(p, "status=");
		if (p) {
			const char *e;

			if (hmb_strtou64(p + 7, &e, 0, &v) || v > 0xffff) {
				errorf("%s:%u: cannot read status= of this nvme_complete_rq event",
				       he->path, no);
				return EXIT_BADINPUT;
			}
			he->v[idx].status = (uint16_t)v;
		}
	}
	return 0;
}

struct hostev_reader {
	struct host_events *he;
	struct json_tokener *tok;
	struct ptab pt;
	uint32_t no;
	char *buf;		/* the line, NUL-terminated */
	size_t cap;
	char *in;		/* hostev_read: what was read ahead */
	size_t in_len, in_pos;
};

#define HOSTEV_CHUNK (64u << 10)

struct hostev_reader *hostev_open(struct host_events *he, const char *path)
{
	struct hostev_reader *r = calloc(1, sizeof(*r));

	memset(he, 0, sizeof(*he));
	he->path = path;
	if (r) {
		r->he = he;
		r->tok = json_tokener_new();
	}
	if (!r || !r->tok) {
		free(r);
		errorf("out of memory");
		return NULL;
	}
	return r;
}

int hostev_line(struct hostev_reader *r, const char *text, size_t len)
{
	struct host_events *he = r->he;
	const char *p, *line;

	if (len > HOSTEV_LINE_MAX) {
		errorf("%s:%u: line longer than %u bytes (1 MiB): not a host event",
		       he->path, r->no + 1, HOSTEV_LINE_MAX);
		return EXIT_BADINPUT;
	}
	if (len >= r->cap) {
		char *b = realloc(r->buf, len + 1);

		if (!b) {
			errorf("out of memory");
			return EXIT_BADINPUT;
		}
		r->buf = b;
		r->cap = len + 1;
	}
	if (text != r->buf)	/* hostev_read's line is there already */
		memcpy(r->buf, text, len);
	r->buf[len] = 0;
	p = line = r->buf;
	r->no++;
	he->lines++;
	while (p < line + len && strchr(" \t\r\n", *p) && *p)
		p++;
	if (p == line + len || !*p)
		return 0;
	if (!he->fmt)
		he->fmt = *p == '{' ? HOST_FMT_AGENT : HOST_FMT_PERF;
	if (he->fmt == HOST_FMT_AGENT)
		return agent_line(he, r->tok, p, (size_t)(line + len - p),
				  r->no);
	return perf_line(he, &r->pt, line, r->no);
}

int hostev_read(struct hostev_reader *r, FILE *f, bool *eof)
{
	size_t n = 0;
	bool nl = false;

	*eof = false;
	if (!r->in) {
		r->in = malloc(HOSTEV_CHUNK);
		if (!r->in) {
			errorf("out of memory");
			return EXIT_BADINPUT;
		}
	}
	/* never more than HOSTEV_LINE_MAX of one line in memory */
	while (!nl) {
		const char *p, *e;
		size_t k;

		if (r->in_pos == r->in_len) {
			r->in_pos = 0;
			r->in_len = fread(r->in, 1, HOSTEV_CHUNK, f);
			if (!r->in_len)
				break;
		}
		p = r->in + r->in_pos;
		e = memchr(p, '\n', r->in_len - r->in_pos);
		k = e ? (size_t)(e - p) + 1 : r->in_len - r->in_pos;
		nl = e != NULL;
		r->in_pos += k;
		if (n + k > HOSTEV_LINE_MAX) {
			errorf("%s:%u: line longer than %u bytes (1 MiB): not a host event",
			       r->he->path, r->no + 1, HOSTEV_LINE_MAX);
			return EXIT_BADINPUT;
		}
		if (n + k + 1 > r->cap) {
			size_t cap = r->cap ? r->cap : 4096;
			char *b;

			while (cap < n + k + 1)
				cap *= 2;
			b = realloc(r->buf, cap);
			if (!b) {
				errorf("out of memory");
				return EXIT_BADINPUT;
			}
			r->buf = b;
			r->cap = cap;
		}
		memcpy(r->buf + n, p, k);
		n += k;
	}
	if (ferror(f)) {
		errorf("%s: read error: %s", r->he->path, strerror(errno));
		return EXIT_BADINPUT;
	}
	if (!n) {
		*eof = true;
		return 0;
	}
	return hostev_line(r, r->buf, n);
}

int hostev_close(struct hostev_reader *r, int rc)
{
	struct host_events *he = r->he;

	json_tokener_free(r->tok);
	free(r->pt.t);
	free(r->buf);
	free(r->in);
	free(r);
	if (!rc && he->fmt == HOST_FMT_PERF) {
		/* drop setups that never completed */
		size_t k = 0;

		for (size_t i = 0; i < he->n; i++) {
			if (he->v[i].complete_ns >= he->v[i].submit_ns &&
			    he->v[i].complete_ns)
				he->v[k++] = he->v[i];
			else
				he->incomplete++;
		}
		he->n = k;
	}
	if (!rc && !he->n && !he->taken) {
		errorf("%s: no NVMe commands found (want hmb-trace-agent -j --per-command output, or perf script of nvme:nvme_setup_cmd and nvme:nvme_complete_rq)",
		       he->path);
		rc = EXIT_BADINPUT;
	}
	if (rc)
		hostev_free(he);
	return rc;
}

int hostev_load(struct host_events *he, const char *path)
{
	struct hostev_reader *r = hostev_open(he, path);
	bool eof = false;
	FILE *f;
	int rc = 0;

	if (!r)
		return EXIT_BADINPUT;
	f = strcmp(path, "-") ? fopen(path, "re") : stdin;
	if (!f) {
		errorf("%s: cannot open: %s", path, strerror(errno));
		return hostev_close(r, EXIT_BADINPUT);
	}
	while (!rc && !eof)
		rc = hostev_read(r, f, &eof);
	if (f != stdin)
		fclose(f);
	return hostev_close(r, rc);
}

void hostev_free(struct host_events *he)
{
	free(he->v);
	he->v = NULL;
	he->n = he->cap = 0;
}
