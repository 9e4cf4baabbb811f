// SPDX-License-Identifier: GPL-2.0
/*
 * trigparse.c - the --trigger expression language (docs/agent.md,
 * "Triggers"), kept small so that it reads like a filter:
 *
 *   expr     := [opcode ':'] cond
 *   cond     := metric '>' value | 'reset' | EVENT
 *   metric   := 'host_total' | 'fw_total' | POINT '_to_' POINT
 *   POINT    := host_submit | fw_fetch | fw_media_start | fw_media_end
 *             | fw_xfer_done | fw_cqe_posted | host_complete
 *   value    := NUMBER unit | 'p' NUMBER ['@' NUMBER unit]
 *   unit     := ns | us | ms | s
 *   opcode   := read | write | flush | 0..255
 *   EVENT    := a dictionary event, or a background group (its begin and
 *               point events)
 *
 * Spaces are allowed between the parts.  An error names the column where
 * the expression stops making sense, since a user fixes it there.
 */
#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trigger.h"

static const char *const point_names[HMB_TP_COUNT] = {
	[HMB_TP_SUBMIT] = "host_submit",
	[HMB_PH_FETCH] = "fw_fetch",
	[HMB_PH_MEDIA_START] = "fw_media_start",
	[HMB_PH_MEDIA_END] = "fw_media_end",
	[HMB_PH_XFER_DONE] = "fw_xfer_done",
	[HMB_PH_CQE_POSTED] = "fw_cqe_posted",
	[HMB_TP_COMPLETE] = "host_complete",
};

const char *trig_point_name(unsigned int p)
{
	return p < HMB_TP_COUNT ? point_names[p] : "?";
}

struct cur {
	const char *s0, *p;
	char *why;
	size_t whylen;
	int col;		/* where it went wrong, 0 while it has not */
};

__attribute__((format(printf, 3, 4)))
static int fail(struct cur *c, const char *at, const char *fmt, ...)
{
	va_list ap;

	if (c->col)
		return -1;
	c->col = (int)(at - c->s0) + 1;
	va_start(ap, fmt);
	vsnprintf(c->why, c->whylen, fmt, ap);
	va_end(ap);
	return -1;
}

static void skip_ws(struct cur *c)
{
	while (*c->p == ' ' || *c->p == '\t')
		c->p++;
}

/* A word of [A-Za-z0-9_] at the cursor into @w; its length (0: none). */
static size_t word(struct cur *c, char *w, size_t n)
{
	size_t len = 0, cp;

	while (isalnum((unsigned char)c->p[len]) || c->p[len] == '_')
		len++;
	/* longer than any name: cut, it will match nothing */
	cp = len < n ? len : n - 1;
	memcpy(w, c->p, cp);
	w[cp] = 0;
	return len;
}

/*
 * A firmware point may also go without its "fw_", as the reports name the
 * phases (fw_fetch_to_cqe_posted, the records' "cqe_posted"): what a user
 * copies from an output must arm.
 */
static int point_of(const char *s, size_t len)
{
	for (int i = 0; i < HMB_TP_COUNT; i++) {
		const char *n = point_names[i];

		if (strlen(n) == len && !strncmp(s, n, len))
			return i;
		if (!strncmp(n, "fw_", 3) && strlen(n + 3) == len &&
		    !strncmp(s, n + 3, len))
			return i;
	}
	return -1;
}

/* @w (at @at) as a latency: its two points, or a usage error. */
static int metric(struct cur *c, const char *w, const char *at,
		  struct trig_spec *t)
{
	const char *sep;

	if (!strcmp(w, "host_total") || !strcmp(w, "fw_total")) {
		t->from = w[0] == 'h' ? HMB_TP_SUBMIT : HMB_PH_FETCH;
		t->to = w[0] == 'h' ? HMB_TP_COMPLETE : HMB_PH_CQE_POSTED;
		return 0;
	}
	for (sep = strstr(w, "_to_"); sep; sep = strstr(sep + 1, "_to_")) {
		int a = point_of(w, (size_t)(sep - w));
		int b = point_of(sep + 4, strlen(sep + 4));

		if (a < 0 || b < 0)
			continue;
		if (a >= b)
			return fail(c, at, "'%s' runs backwards: %s comes after %s in a command's life",
				    w, point_names[a], point_names[b]);
		t->from = (unsigned int)a;
		t->to = (unsigned int)b;
		return 0;
	}
	return fail(c, at, "unknown latency '%s' (host_total, fw_total, or POINT_to_POINT of host_submit, fw_fetch, fw_media_start, fw_media_end, fw_xfer_done, fw_cqe_posted, host_complete; fw_ may be left out)",
		    w);
}

/* A number with an optional fraction at the cursor, or a usage error. */
static int number(struct cur *c, double *v)
{
	const char *q = c->p;
	double x = 0, scale = 1;

	if (!isdigit((unsigned char)*q))
		return fail(c, q, "a number is expected here");
	for (; isdigit((unsigned char)*q); q++)
		x = x * 10 + (*q - '0');
	if (*q == '.') {
		if (!isdigit((unsigned char)q[1]))
			return fail(c, q + 1, "a digit is expected after '.'");
		for (q++; isdigit((unsigned char)*q); q++) {
			scale /= 10;
			x += (*q - '0') * scale;
		}
	}
	c->p = q;
	*v = x;
	return 0;
}

/* NUMBER unit at the cursor, in nanoseconds, or a usage error. */
static int duration(struct cur *c, uint64_t *ns)
{
	static const struct { const char *u; double mul; } units[] = {
		{ "ns", 1 }, { "us", 1e3 }, { "ms", 1e6 }, { "s", 1e9 },
	};
	const char *at = c->p, *u;
	char w[8];
	double v;
	size_t len;

	if (number(c, &v))
		return -1;
	skip_ws(c);
	u = c->p;
	len = word(c, w, sizeof(w));
	if (!len)
		return fail(c, u, "a unit is needed after the number (ns, us, ms, s)");
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		if (strcmp(w, units[i].u))
			continue;
		v *= units[i].mul;
		if (v < 1 || v > 3600e9)
			return fail(c, at, "a duration from 1ns to 3600s is needed");
		*ns = (uint64_t)(v + 0.5);
		c->p += len;
		return 0;
	}
	return fail(c, u, "unknown unit '%.*s' (ns, us, ms, s)",
		    (int)strcspn(u, " \t"), u);
}

/* The value after '>': a duration, or a percentile [@ window]. */
static int value(struct cur *c, struct trig_spec *t, const char *mat)
{
	const char *at = c->p;
	uint64_t w;

	if (*c->p != 'p')
		return duration(c, &t->thresh_ns);
	c->p++;
	if (number(c, &t->pct))
		return -1;
	if (!(t->pct > 0 && t->pct < 100))
		return fail(c, at + 1, "a percentile is above 0 and below 100");
	if (t->from != HMB_TP_SUBMIT || t->to != HMB_TP_COMPLETE)
		return fail(c, mat, "percentiles are kept for host_total only (the programs' histogram of every command)");
	if (t->opc >= 0)
		return fail(c, c->s0, "a percentile is of every command's host_total: no opcode filter");
	t->window_s = TRIG_WINDOW_DEF_S;
	skip_ws(c);
	if (*c->p != '@')
		return 0;
	c->p++;
	skip_ws(c);
	at = c->p;
	if (duration(c, &w))
		return -1;
	if (w < 1000000000ULL || w > TRIG_WINDOW_MAX_S * 1000000000ULL ||
	    w % 1000000000ULL)
		return fail(c, at, "a percentile's window is whole seconds, 1s to %ds",
			    TRIG_WINDOW_MAX_S);
	t->window_s = (unsigned int)(w / 1000000000ULL);
	return 0;
}

/* The opcode filter @w (at @at) before ':'. */
static int opcode(struct cur *c, const char *w, const char *at,
		  struct trig_spec *t)
{
	static const char *const names[] = { "flush", "write", "read" };
	char *end;
	unsigned long v;

	snprintf(t->opc_name, sizeof(t->opc_name), "%.*s",
		 (int)sizeof(t->opc_name) - 1, w);
	for (int i = 0; i < 3; i++)
		if (!strcmp(w, names[i]))
			return t->opc = i, 0;
	v = strtoul(w, &end, 0);
	if (!isdigit((unsigned char)w[0]) || *end || v > 255)
		return fail(c, at, "unknown opcode '%s' (read, write, flush, 0-255)",
			    w);
	t->opc_name[0] = 0;
	t->opc = (int)v;
	return 0;
}

/* A dictionary event, or a background group's begin and point events. */
static int event(struct cur *c, const char *w, const char *at,
		 const struct hmb_dict *d, struct trig_spec *t)
{
	const struct hmb_dict_event *e = hmb_dict_by_name(d, w);

	t->kind = HMB_TK_EVENT;
	snprintf(t->name, sizeof(t->name), "%.*s", (int)sizeof(t->name) - 1,
		 w);
	if (e && e->phase != HMB_PHASE_NONE)
		return fail(c, at, "'%s' is a command phase, on every command: a latency condition says which are slow (e.g. %s_to_host_complete>1ms)",
			    w, trig_point_name(e->phase));
	if (e) {
		t->ops[t->nops++] = e->opcode;
		return 0;
	}
	for (size_t i = 0; i < hmb_dict_count(d); i++) {
		e = hmb_dict_event_at(d, i);
		if (strcmp(e->bg_group, w) || e->bg_edge == HMB_BG_END)
			continue;
		if (t->nops == TRIG_MAX_OPS)
			return fail(c, at, "group '%s' has more than %d events",
				    w, TRIG_MAX_OPS);
		t->ops[t->nops++] = e->opcode;
	}
	if (!t->nops)
		return fail(c, at, "the event dictionary has no event or background group '%s'",
			    w);
	return 0;
}

static int parse(struct cur *c, const struct hmb_dict *d, struct trig_spec *t)
{
	char w[64];
	const char *at, *opc_at = NULL;
	size_t len;

	skip_ws(c);
	at = c->p;
	len = word(c, w, sizeof(w));
	if (!len)
		return fail(c, at, *at ? "a latency, event name or 'reset' is expected" :
			    "empty trigger");
	c->p += len;
	skip_ws(c);
	if (*c->p == ':') {
		opc_at = at;
		if (opcode(c, w, at, t))
			return -1;
		c->p++;
		skip_ws(c);
		at = c->p;
		len = word(c, w, sizeof(w));
		if (!len)
			return fail(c, at, "a latency is expected after the opcode");
		c->p += len;
		skip_ws(c);
	}
	if (*c->p == '>') {
		const char *mat = at;

		t->kind = HMB_TK_LAT;
		if (metric(c, w, at, t))
			return -1;
		c->p++;
		skip_ws(c);
		if (value(c, t, mat))
			return -1;
	} else if (opc_at) {
		return fail(c, c->p, "'>' and a threshold are expected: an opcode filter applies to latencies only");
	} else if (!strcmp(w, "reset")) {
		t->kind = HMB_TK_RESET;
	} else if (point_of(w, len) >= 0 || !strcmp(w, "host_total") ||
		   !strcmp(w, "fw_total") || strstr(w, "_to_")) {
		if (metric(c, w, at, t))
			return -1;
		return fail(c, c->p, "'>' and a threshold are expected after '%s'",
			    w);
	} else if (event(c, w, at, d, t)) {
		return -1;
	}
	skip_ws(c);
	if (*c->p)
		return fail(c, c->p, "unexpected '%s'", c->p);
	return 0;
}

int trig_parse(const char *expr, const struct hmb_dict *dict,
	       struct trig_spec *t, char *why, size_t whylen)
{
	struct cur c = { .s0 = expr, .p = expr, .why = why,
			 .whylen = whylen };

	memset(t, 0, sizeof(*t));
	t->expr = expr;
	t->opc = -1;
	if (why && whylen)
		why[0] = 0;
	if (parse(&c, dict, t) && !c.col)
		fail(&c, c.p, "invalid trigger");
	return c.col;
}

void trig_to_bpf(const struct trig_spec *t, int opc, struct hmb_trig *b)
{
	memset(b, 0, sizeof(*b));
	b->kind = (__u8)t->kind;
	b->from = (__u8)t->from;
	b->to = (__u8)t->to;
	b->opc = (__s16)opc;
	b->thresh_ns = t->thresh_ns;
}

uint64_t trig_hist_pct_ns(const uint64_t *slots, double pct)
{
	uint64_t n = 0, cum = 0, rank;
	double lo, hi, f;

	for (int s = 0; s < HMB_HIST_SLOTS; s++)
		n += slots[s];
	/* the tail must hold a command at least: else no threshold yet */
	if (!n || (double)n * (100 - pct) < 100 - 1e-6)
		return 0;
	rank = (uint64_t)ceil((double)n * pct / 100 - 1e-6);
	if (rank < 1)
		rank = 1;
	for (int s = 0; s < HMB_HIST_SLOTS; s++) {
		if (cum + slots[s] < rank) {
			cum += slots[s];
			continue;
		}
		lo = (double)HMB_HIST_SLOT_LO(s);
		hi = s == HMB_HIST_SLOTS - 1 ? lo :
		     (double)HMB_HIST_SLOT_HI(s) + 1;
		/* linear within the slot: the log2 bucket bounds the error */
		f = (double)(rank - cum) / (double)slots[s];
		return (uint64_t)((lo + f * (hi - lo)) * 1000);
	}
	return 0;
}
