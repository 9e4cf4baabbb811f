// SPDX-License-Identifier: Apache-2.0
/*
 * Host-side NVMe commands from agent JSON lines or perf script (hostev.h).
 * The JSON reader knows only what it needs: the members of the "cmd"
 * object of {"type":"cmd",...} lines; nested values are skipped whole.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyze.h"
#include "hostev.h"

const char *hostev_fmt_name(enum host_fmt f)
{
	return f == HOST_FMT_AGENT ? "hmb-trace-agent JSON lines" :
	       "perf script (nvme tracepoints)";
}

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

static void note_ctrl(struct host_events *he, uint32_t ctrl)
{
	for (uint32_t i = 0; i < he->nctrl; i++)
		if (he->ctrls[i] == ctrl)
			return;
	if (he->nctrl < 64)
		he->ctrls[he->nctrl++] = ctrl;
}

/* ------------------------------------------------------------ JSON */

static const char *ws(const char *p)
{
	while (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n')
		p++;
	return p;
}

/* Skip a JSON string starting at '"'; returns past it or NULL. */
static const char *skip_str(const char *p)
{
	for (p++; *p; p++) {
		if (*p == '\\' && p[1])
			p++;
		else if (*p == '"')
			return p + 1;
	}
	return NULL;
}

/* Skip any JSON value; returns past it or NULL. */
static const char *skip_val(const char *p)
{
	int depth = 0;

	p = ws(p);
	if (*p == '"')
		return skip_str(p);
	if (*p != '{' && *p != '[') {
		while (*p && *p != ',' && *p != '}' && *p != ']')
			p++;
		return p;
	}
	for (; *p; p++) {
		if (*p == '"') {
			p = skip_str(p);
			if (!p)
				return NULL;
			p--;
		} else if (*p == '{' || *p == '[') {
			depth++;
		} else if (*p == '}' || *p == ']') {
			if (--depth == 0)
				return p + 1;
		}
	}
	return NULL;
}

/*
 * Iterate the members of the object at @p ('{'): calls @fn with the key
 * (not NUL-terminated: @klen) and the value's start.  Returns past the
 * object, or NULL if it is malformed.
 */
typedef void (*member_fn)(void *ctx, const char *key, size_t klen,
			  const char *val);

static const char *members(const char *p, member_fn fn, void *ctx)
{
	p = ws(p);
	if (*p != '{')
		return NULL;
	p = ws(p + 1);
	if (*p == '}')
		return p + 1;
	for (;;) {
		const char *k, *e;

		if (*p != '"')
			return NULL;
		k = p + 1;
		e = skip_str(p);
		if (!e)
			return NULL;
		p = ws(e);
		if (*p != ':')
			return NULL;
		p = ws(p + 1);
		fn(ctx, k, (size_t)(e - 1 - k), p);
		p = skip_val(p);
		if (!p)
			return NULL;
		p = ws(p);
		if (*p == '}')
			return p + 1;
		if (*p != ',')
			return NULL;
		p = ws(p + 1);
	}
}

static bool key_is(const char *k, size_t n, const char *want)
{
	return strlen(want) == n && memcmp(k, want, n) == 0;
}

struct line_ctx {
	bool is_cmd;
	const char *cmd;	/* value of "cmd" */
};

static void top_member(void *ctx, const char *k, size_t n, const char *v)
{
	struct line_ctx *l = ctx;

	if (key_is(k, n, "type"))
		l->is_cmd = strncmp(v, "\"cmd\"", 5) == 0;
	else if (key_is(k, n, "cmd"))
		l->cmd = v;
}

struct cmd_ctx {
	struct hmb_host_cmd *c;
	unsigned int seen;	/* bits: which required members were found */
	uint64_t flags;
};

static uint64_t num(const char *v)
{
	return strtoull(v, NULL, 10);
}

static void cmd_member(void *ctx, const char *k, size_t n, const char *v)
{
	struct cmd_ctx *x = ctx;
	struct hmb_host_cmd *c = x->c;

	if (key_is(k, n, "ctrl")) {
		c->ctrl = (uint32_t)num(v);
		x->seen |= 1;
	} else if (key_is(k, n, "qid")) {
		c->qid = (uint16_t)num(v);
		x->seen |= 2;
	} else if (key_is(k, n, "cid")) {
		c->cid = (uint16_t)num(v);
		x->seen |= 4;
	} else if (key_is(k, n, "submit_ns")) {
		c->submit_ns = num(v);
		x->seen |= 8;
	} else if (key_is(k, n, "complete_ns")) {
		c->complete_ns = num(v);
		x->seen |= 16;
	} else if (key_is(k, n, "nsid")) {
		c->nsid = (uint32_t)num(v);
	} else if (key_is(k, n, "slba")) {
		c->slba = num(v);
	} else if (key_is(k, n, "nlb")) {
		c->nlb = (uint32_t)num(v);
	} else if (key_is(k, n, "flags")) {
		x->flags = num(v);
	} else if (key_is(k, n, "opc") && *v == '"') {
		const char *e = skip_str(v);
		size_t len = e ? (size_t)(e - v - 2) : 0;

		if (len >= sizeof(c->opc))
			len = sizeof(c->opc) - 1;
		memcpy(c->opc, v + 1, len);
		c->opc[len] = 0;
	}
}

static int agent_line(struct host_events *he, const char *line, uint32_t no)
{
	struct line_ctx l = { 0 };
	struct cmd_ctx x = { 0 };
	struct hmb_host_cmd tmp = { 0 };

	if (!members(line, top_member, &l)) {
		errorf("%s:%u: not a JSON object", he->path, no);
		return EXIT_BADINPUT;
	}
	if (!l.is_cmd || !l.cmd) {
		he->other++;
		return 0;
	}
	x.c = &tmp;
	if (!members(l.cmd, cmd_member, &x)) {
		errorf("%s:%u: malformed \"cmd\" object", he->path, no);
		return EXIT_BADINPUT;
	}
	if (x.flags & HMB_CMD_F_BLOCK) {
		he->block++;
		return 0;
	}
	if ((x.seen & 31) != 31) {
		errorf("%s:%u: \"cmd\" lacks ctrl, qid, cid, submit_ns or complete_ns",
		       he->path, no);
		return EXIT_BADINPUT;
	}
	if (!tmp.complete_ns || tmp.complete_ns < tmp.submit_ns) {
		he->incomplete++;
		return 0;
	}
	tmp.line = no;
	{
		struct hmb_host_cmd *c = push(he);

		if (!c) {
			errorf("out of memory");
			return EXIT_BADINPUT;
		}
		*c = tmp;
	}
	note_ctrl(he, tmp.ctrl);
	return 0;
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

static bool field_u64(const char *s, const char *name, uint64_t *v, int base)
{
	const char *p = strstr(s, name);
	char *end;

	if (!p)
		return false;
	p += strlen(name);
	errno = 0;
	*v = strtoull(p, &end, base);
	return end != p && !errno;
}

/* "1234.567890:" before the event name: seconds with 6 or 9 decimals. */
static bool perf_ts(const char *line, const char *ev, uint64_t *ns)
{
	const char *e = ev, *s, *dot = NULL;
	uint64_t sec = 0, frac = 0;
	int digits = 0;

	while (e > line && e[-1] == ' ')
		e--;
	if (e == line || e[-1] != ':')
		return false;
	e--;
	s = e;
	while (s > line && (isdigit((unsigned char)s[-1]) || s[-1] == '.'))
		s--;
	for (const char *p = s; p < e; p++) {
		if (*p == '.') {
			if (dot)
				return false;
			dot = p;
		} else if (!dot) {
			sec = sec * 10 + (uint64_t)(*p - '0');
		} else if (digits < 9) {
			frac = frac * 10 + (uint64_t)(*p - '0');
			digits++;
		}
	}
	if (!dot || !digits)
		return false;
	while (digits++ < 9)
		frac *= 10;
	*ns = sec * 1000000000ull + frac;
	return true;
}

static int perf_line(struct host_events *he, struct ptab *pt, const char *line,
		     uint32_t no)
{
	const char *setup = strstr(line, "nvme:nvme_setup_cmd:");
	const char *done = setup ? NULL : strstr(line, "nvme:nvme_complete_rq:");
	const char *ev = setup ? setup : done, *p;
	uint64_t ts, ctrl, qid, cid, key, v;

	if (!ev) {
		he->other++;
		return 0;
	}
	p = strstr(ev, ": nvme");
	if (!perf_ts(line, ev, &ts) || !p ||
	    !field_u64(p, ": nvme", &ctrl, 10) ||
	    !field_u64(p, "qid=", &qid, 10) ||
	    !field_u64(p, "cmdid=", &cid, 10) || qid > 0xffff || cid > 0xffff) {
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
		if (field_u64(p, "nsid=", &v, 10))
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
			if (field_u64(op, "slba=", &v, 10))
				c->slba = v;
			if (field_u64(op, "len=", &v, 10))
				c->nlb = (uint32_t)v;
		}
		note_ctrl(he, (uint32_t)ctrl);
	} else {
		long idx = ptab_take(pt, key);

		if (idx < 0) {
			he->unpaired++;
			return 0;
		}
		he->v[idx].complete_ns = ts;
		he->v[idx].line = no;
	}
	return 0;
}

int hostev_load(struct host_events *he, const char *path)
{
	struct ptab pt = { 0 };
	char *line = NULL;
	size_t cap = 0;
	ssize_t len;
	uint32_t no = 0;
	FILE *f;
	int rc = 0;

	memset(he, 0, sizeof(*he));
	he->path = path;
	f = strcmp(path, "-") ? fopen(path, "re") : stdin;
	if (!f) {
		errorf("%s: cannot open: %s", path, strerror(errno));
		return EXIT_BADINPUT;
	}
	while ((len = getline(&line, &cap, f)) >= 0) {
		const char *p = ws(line);

		no++;
		he->lines++;
		if (!*p)
			continue;
		if (!he->fmt)
			he->fmt = *p == '{' ? HOST_FMT_AGENT : HOST_FMT_PERF;
		rc = he->fmt == HOST_FMT_AGENT ? agent_line(he, p, no) :
						 perf_line(he, &pt, line, no);
		if (rc)
			break;
	}
	if (!rc && ferror(f)) {
		errorf("%s: read error: %s", path, strerror(errno));
		rc = EXIT_BADINPUT;
	}
	if (f != stdin)
		fclose(f);
	free(line);
	free(pt.t);
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
	if (!rc && !he->n) {
		errorf("%s: no NVMe commands found (want hmb-trace-agent -j --per-command output, or perf script of nvme:nvme_setup_cmd and nvme:nvme_complete_rq)",
		       path);
		rc = EXIT_BADINPUT;
	}
	if (rc)
		hostev_free(he);
	return rc;
}

void hostev_free(struct host_events *he)
{
	free(he->v);
	he->v = NULL;
	he->n = he->cap = 0;
}
