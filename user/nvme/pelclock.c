// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * pelclock.c - the Persistent Event Log on the host's clock (pel.h,
 * pel_hostmap): the one mapping of a controller timestamp to host
 * CLOCK_MONOTONIC, and the clock reading saved beside a log so that a log
 * read once can be placed later.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pel.h"

static const char *const unplaced[PEL_UNPLACED_COUNT] = {
	"placed", "no_clock", "before_epoch", "other_origin", "after_read",
	"before_boot",
};

const char *pel_unplaced_name(enum pel_unplaced r)
{
	return (unsigned int)r < PEL_UNPLACED_COUNT ? unplaced[r] : "?";
}

void pel_hostmap_init(struct pel_hostmap *m, const struct pel_clock *c,
		      const uint8_t *buf, const struct pel_header *h)
{
	uint64_t real_mid;

	memset(m, 0, sizeof(*m));
	m->epoch = -1;
	if (!c || c->mono_after_ns < c->mono_before_ns ||
	    c->after_ns < c->before_ns)
		return;
	m->valid = true;
	m->origin = c->ctrl.origin;
	m->ctrl_ms = c->ctrl.ms;
	m->mono_ns = c->mono_before_ns +
		     (c->mono_after_ns - c->mono_before_ns) / 2;
	m->err_ns = (c->mono_after_ns - c->mono_before_ns + 1) / 2 + 1000000;
	real_mid = c->before_ns + (c->after_ns - c->before_ns) / 2;
	m->real_off_ms = (int64_t)(real_mid / 1000000) - (int64_t)c->ctrl.ms;
	m->real_err_ms = (c->after_ns - c->before_ns) / 2000000 + 1;
	m->epoch = pel_clock_epoch(buf, h);
}

enum pel_unplaced pel_place(const struct pel_hostmap *m,
			    const struct pel_event *ev, uint64_t *mono_ns,
			    uint64_t *bound_ns)
{
	uint64_t age_ns;

	*mono_ns = 0;
	*bound_ns = 0;
	if (!m->valid)
		return PEL_NO_CLOCK;
	if (m->epoch < 0 || (long)ev->index < m->epoch)
		return PEL_BEFORE_EPOCH;
	if (ev->ts.origin != m->origin)
		return PEL_OTHER_ORIGIN;
	/* one ms either way is the two stamps' resolution */
	if (ev->ts.ms > m->ctrl_ms + 1)
		return PEL_AFTER_READ;
	age_ns = ev->ts.ms < m->ctrl_ms ? (m->ctrl_ms - ev->ts.ms) * 1000000u
					: 0;
	if (age_ns > m->mono_ns)
		return PEL_BEFORE_BOOT;
	*mono_ns = m->mono_ns - age_ns;
	*bound_ns = m->err_ns + age_ns / 1000000u * PEL_DRIFT_PPM;
	return PEL_PLACED;
}

/* pel_fields() into a short text (pel_fields_text). */
struct ftext {
	char *s;
	size_t cap, n;
};

static void ftext_field(const struct pel_field *f, void *arg)
{
	struct ftext *t = arg;
	int w = 0;

	if (t->n >= t->cap - 1 || f->idx > 0)
		return;		/* the first entry of a list is enough */
	switch (f->kind) {
	case PF_UINT:
		w = snprintf(t->s + t->n, t->cap - t->n, "%s%s=%" PRIu64,
			     t->n ? " " : "", f->name, f->u);
		break;
	case PF_STR:
		w = snprintf(t->s + t->n, t->cap - t->n, "%s%s=%.*s",
			     t->n ? " " : "", f->name, (int)f->len,
			     (const char *)f->p);
		break;
	default:
		return;		/* 128-bit counters, bytes: in `pel` */
	}
	if (w < 0 || (size_t)w >= t->cap - t->n) {
		t->n = t->cap - 1;	/* cut: say so */
		if (t->cap > 4)
			memcpy(t->s + t->cap - 4, "...", 4);
		return;
	}
	t->n += (size_t)w;
}

size_t pel_fields_text(const struct pel_event *ev, char *buf, size_t n)
{
	struct ftext t = { .s = buf, .cap = n };
	struct pel_err e;

	if (!n)
		return 0;
	buf[0] = 0;
	pel_fields(ev, ftext_field, &t, &e);	/* what fits */
	return t.n;
}

static int fail(struct pel_err *e, size_t line, const char *what,
		const char *path)
{
	e->off = line;
	snprintf(e->msg, sizeof(e->msg), "%.80s: %.60s", path, what);
	return -1;
}

static char *clock_path(const char *log_path)
{
	size_t n = strlen(log_path);
	char *p = malloc(n + sizeof(".clock"));

	if (p) {
		memcpy(p, log_path, n);
		memcpy(p + n, ".clock", sizeof(".clock"));
	}
	return p;
}

int pel_clock_save(const char *log_path, const struct pel_clock *c,
		   const char *device, struct pel_err *e)
{
	char *path = clock_path(log_path);
	FILE *f;
	int bad;

	if (!path)
		return fail(e, 0, "out of memory", log_path);
	f = fopen(path, "w");
	if (!f) {
		fail(e, 0, strerror(errno), path);
		free(path);
		return -1;
	}
	fprintf(f, "hmb_pel_clock=1\n");
	/* a device path with a newline would add a line: cut it there */
	fprintf(f, "device=%.*s\n", (int)strcspn(device ? device : "", "\n"),
		device ? device : "");
	fprintf(f, "ctrl_timestamp=%" PRIu64 "\n", c->ctrl.raw);
	fprintf(f, "realtime_before_ns=%" PRIu64 "\n", c->before_ns);
	fprintf(f, "realtime_after_ns=%" PRIu64 "\n", c->after_ns);
	fprintf(f, "monotonic_before_ns=%" PRIu64 "\n", c->mono_before_ns);
	fprintf(f, "monotonic_after_ns=%" PRIu64 "\n", c->mono_after_ns);
	fprintf(f, "boottime_ns=%" PRIu64 "\n", c->boot_ns);
	bad = ferror(f);
	if (fclose(f) || bad) {
		fail(e, 0, strerror(errno ? errno : EIO), path);
		free(path);
		return -1;
	}
	free(path);
	return 0;
}

/* The keys pel_clock_load() needs, each once. */
enum { K_TS, K_RB, K_RA, K_MB, K_MA, K_BOOT, K_COUNT };

int pel_clock_load(const char *log_path, struct pel_clock *c,
		   struct pel_err *e)
{
	static const char *const keys[K_COUNT] = {
		"ctrl_timestamp", "realtime_before_ns", "realtime_after_ns",
		"monotonic_before_ns", "monotonic_after_ns", "boottime_ns",
	};
	uint64_t v[K_COUNT] = { 0 };
	unsigned int seen = 0;
	char *path = clock_path(log_path), line[512];
	size_t n = 0;
	FILE *f;
	int rc = 0;

	memset(c, 0, sizeof(*c));
	if (!path)
		return fail(e, 0, "out of memory", log_path);
	f = fopen(path, "r");
	if (!f) {
		rc = errno == ENOENT ? 1 : fail(e, 0, strerror(errno), path);
		free(path);
		return rc;
	}
	while (!rc && fgets(line, sizeof(line), f)) {
		char *eq, *end;
		int k;

		n++;
		line[strcspn(line, "\n")] = 0;
		if (n == 1) {
			if (strcmp(line, "hmb_pel_clock=1"))
				rc = fail(e, n, "line 1 is not hmb_pel_clock=1",
					  path);
			continue;
		}
		eq = strchr(line, '=');
		if (!eq) {
			rc = fail(e, n, "a line without '='", path);
			break;
		}
		*eq = 0;
		for (k = 0; k < K_COUNT && strcmp(line, keys[k]); k++)
			;
		if (k == K_COUNT)
			continue;	/* device=, and keys of later versions */
		errno = 0;
		v[k] = strtoull(eq + 1, &end, 10);
		if (errno || end == eq + 1 || *end || eq[1] == '-')
			rc = fail(e, n, "not a number", path);
		else if (seen & 1u << k)
			rc = fail(e, n, "a key given twice", path);
		seen |= 1u << k;
	}
	if (!rc && ferror(f))
		rc = fail(e, n, strerror(errno ? errno : EIO), path);
	if (!rc && n == 0)
		rc = fail(e, 0, "empty", path);
	for (int k = 0; !rc && k < K_COUNT; k++)
		if (!(seen & 1u << k)) {
			char what[48];

			snprintf(what, sizeof(what), "no %s= line", keys[k]);
			rc = fail(e, n, what, path);
		}
	if (!rc && (v[K_RA] < v[K_RB] || v[K_MA] < v[K_MB]))
		rc = fail(e, n, "a clock's after is before its before", path);
	fclose(f);
	free(path);
	if (rc)
		return rc;
	c->ctrl.raw = v[K_TS];
	c->ctrl.ms = v[K_TS] & ((1ULL << 48) - 1);
	c->ctrl.synch = (v[K_TS] >> 48) & 1;
	c->ctrl.origin = (v[K_TS] >> 49) & 7;
	c->before_ns = v[K_RB];
	c->after_ns = v[K_RA];
	c->mono_before_ns = v[K_MB];
	c->mono_after_ns = v[K_MA];
	c->boot_ns = v[K_BOOT];
	return 0;
}
