// SPDX-License-Identifier: Apache-2.0
/*
 * hmb-cmdgen - a simulated host's NVMe commands, both sides, with the
 * truth about them: the firmware's trace (a dump, written through
 * libhmbtrace's dump writer) and the host's view of the same commands
 * (hmb-trace-agent -j --per-command JSON lines, host-only), on a host
 * clock with a known offset and drift, some firmware records lost.
 *
 * The workload is tests/formats/fwgen.py's (the formats tests' Python
 * generator) made fast enough for millions of commands: commands on two
 * queues of depth 16 going through the phases of share/hmb-events.dict
 * (cmd_fetch .. cmd_cqe_posted), garbage-collection and thermal windows,
 * temperature points.  What it knows it wrote is printed as one JSON
 * object: the number of commands, per completion status, per issuing
 * task (pid, comm, cgroup: the agent's who) and per
 * background group (the commands whose surviving records span a window of
 * that group, windows as the firmware model reads them) the count and the
 * sum of their slba, the first submit time.  Nothing here reads records.
 */
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hmbtrace.h"
#include "hmbtrace_util.h"
#include "gen.h"

#define PROG "hmb-cmdgen"

enum {
	OP_FETCH = 0x100, OP_MSTART, OP_MEND, OP_XFER, OP_CQE,
	OP_GC_START = 0x200, OP_GC_END = 0x201,
	OP_TH_START = 0x210, OP_TH_END = 0x211, OP_TEMP = 0x220,
};

#define NPHASE	6		/* 1..5: fetch .. cqe_posted */
#define NQ	2		/* queues 1 and 2 */
#define QD	16
#define NO_CMD	UINT32_MAX

struct opts {
	uint64_t n, seed, status_every, gc_every;
	int64_t offset_ns;
	double drift_ppm;
	const char *dump, *host;
	bool sidecar;
	uint64_t realtime_ns, monotonic_ns;
};

struct cmd {
	uint64_t ph[NPHASE];	/* firmware time of each phase, 0: none */
	uint64_t slba;
	uint64_t submit, complete;	/* host clock */
	uint64_t t0, t1;	/* first and last surviving record, fw clock */
	uint16_t q, cid, status;
	uint8_t opc, nlb, cpu;
};

struct rec {
	uint64_t ts;
	uint32_t cmd;		/* index of the command or NO_CMD */
	uint32_t ord;		/* creation order: ties keep it */
	uint16_t opcode;
	uint8_t cpu, len;
	uint8_t pl[24];
};

struct win {
	uint64_t b, e;
};

struct rng {
	uint64_t s;
};

static uint64_t rnd(struct rng *r)
{
	r->s += 0x9e3779b97f4a7c15ULL;
	return gen_mix64(r->s);
}

/* Uniform in [lo, hi]. */
static uint64_t rnd_in(struct rng *r, uint64_t lo, uint64_t hi)
{
	return lo + rnd(r) % (hi - lo + 1);
}

static double rnd_unit(struct rng *r)
{
	return (double)(rnd(r) >> 11) / 9007199254740992.0;
}

static void die(const char *fmt, const char *arg)
{
	fprintf(stderr, PROG ": ");
	fprintf(stderr, fmt, arg);
	fputc('\n', stderr);
	exit(1);
}

static void *xcalloc(size_t n, size_t size)
{
	void *p = calloc(n, size);

	if (!p)
		die("out of memory (%s)", "workload");
	return p;
}

/* ------------------------------------------------------------ workload */

struct wl {
	struct cmd *cmds;
	struct rec *recs;
	size_t nrec, cap;
	bool *lost;		/* per record (in time order) */
	uint64_t nlost;
};

static struct rec *rec_add(struct wl *w, uint64_t ts, uint16_t op,
			   uint8_t cpu, uint32_t cmd)
{
	struct rec *r;

	if (w->nrec == w->cap) {
		w->cap = w->cap ? 2 * w->cap : 1 << 16;
		w->recs = realloc(w->recs, w->cap * sizeof(*w->recs));
		if (!w->recs)
			die("out of memory (%s)", "records");
	}
	r = &w->recs[w->nrec];
	memset(r, 0, sizeof(*r));
	r->ts = ts;
	r->opcode = op;
	r->cpu = cpu;
	r->cmd = cmd;
	r->ord = (uint32_t)w->nrec++;
	return r;
}

static void put16(uint8_t *p, uint16_t v)
{
	memcpy(p, &v, 2);
}

static void put32(uint8_t *p, uint32_t v)
{
	memcpy(p, &v, 4);
}

/* A command's records, with the dictionary's payload layouts. */
static void cmd_records(struct wl *w, struct rng *r, uint32_t i)
{
	const struct cmd *c = &w->cmds[i];

	for (int p = 1; p < NPHASE; p++) {
		uint8_t cpu = (p == 1 || p == 5) ? c->cpu : (uint8_t)rnd_in(r, 0, 3);
		struct rec *x;

		if (!c->ph[p])
			continue;
		x = rec_add(w, c->ph[p], (uint16_t)(OP_FETCH + p - 1), cpu, i);
		put16(x->pl, c->q);
		put16(x->pl + 2, c->cid);
		switch (p) {
		case 1:		/* sqid cid nsid opc . nlb .... slba */
			put32(x->pl + 4, 1);
			x->pl[8] = c->opc;
			put16(x->pl + 10, c->nlb);
			memcpy(x->pl + 16, &c->slba, 8);
			x->len = 24;
			break;
		case 2:		/* die */
			put16(x->pl + 4, (uint16_t)rnd_in(r, 0, 7));
			x->len = 6;
			break;
		case 3:		/* die status */
			put16(x->pl + 4, (uint16_t)rnd_in(r, 0, 7));
			x->len = 8;
			break;
		case 4:		/* bytes */
			put32(x->pl + 4, (uint32_t)(c->nlb + 1) * 512);
			x->len = 8;
			break;
		default:	/* status sqid */
			put16(x->pl + 6, c->q);
			x->len = 8;
			break;
		}
	}
}

/* The background records due after command @i (fired at @t). */
static void bg_records(struct wl *w, struct rng *r, const struct opts *o,
		       uint64_t i, uint64_t t)
{
	uint64_t ge = o->gc_every;
	struct rec *x;

	if (!ge)
		return;
	if (i % ge == ge / 2) {
		uint64_t gs = t + rnd_in(r, 0, 10000);

		x = rec_add(w, gs, OP_GC_START, 3, NO_CMD);
		put32(x->pl, (uint32_t)rnd_in(r, 0, 999));
		put32(x->pl + 4, (uint32_t)rnd_in(r, 0, 4095));
		x->len = 8;
		x = rec_add(w, gs + rnd_in(r, 20000, 150000), OP_GC_END, 3, NO_CMD);
		put32(x->pl, 7);
		put32(x->pl + 4, 99);
		x->len = 8;
	}
	if (i % (ge * 2) == 3) {
		x = rec_add(w, t + 10, OP_TEMP, 0, NO_CMD);
		put16(x->pl, (uint16_t)rnd_in(r, 0, 95) - 5);
		x->len = 2;
	}
	if (i % (ge * 3) == 7) {
		x = rec_add(w, t + 20, OP_TH_START, 0, NO_CMD);
		put16(x->pl, 85);
		x->pl[2] = 2;
		x->len = 3;
		x = rec_add(w, t + 300000, OP_TH_END, 0, NO_CMD);
		put16(x->pl, 70);
		x->len = 2;
	}
}

/* One command's firmware phases, on a queue with a free tag at @t. */
static void cmd_phases(struct cmd *c, struct rng *r, uint64_t t)
{
	static const uint8_t opcs[] = { 1, 2, 2, 2, 0 };
	uint64_t ts = t;

	c->opc = opcs[rnd_in(r, 0, 4)];
	c->nlb = (uint8_t)rnd_in(r, 0, 63);
	c->cpu = (uint8_t)rnd_in(r, 0, 3);
	c->slba = rnd(r) & 0xffffffffULL;
	c->ph[1] = t;
	if (c->opc != 0 || rnd_unit(r) < 0.5) {
		ts += rnd_in(r, 500, 5000);
		c->ph[2] = ts;
		ts += rnd_unit(r) > 0.03 ? rnd_in(r, 20000, 120000) :
			rnd_in(r, 500000, 2000000);
		c->ph[3] = ts;
	}
	ts += rnd_in(r, 1000, 8000);
	c->ph[4] = ts;
	ts += rnd_in(r, 300, 2000);
	c->ph[5] = ts;
}

/*
 * Queue tags: a FIFO of free tags per queue and the tags in flight with
 * the firmware time they complete; a command takes the oldest free tag of
 * a random queue, or waits for the first tag to complete.
 */
struct tags {
	uint8_t fifo[NQ][QD];
	unsigned int head[NQ], n[NQ];
	struct { uint64_t end; unsigned int q, tag; } busy[NQ * QD];
	unsigned int nbusy;
	uint8_t gen[NQ][QD];
};

static void tag_free(struct tags *tg, unsigned int b)
{
	unsigned int q = tg->busy[b].q;

	tg->fifo[q][(tg->head[q] + tg->n[q]++) % QD] = (uint8_t)tg->busy[b].tag;
	tg->busy[b] = tg->busy[--tg->nbusy];
}

/* The earliest tag in flight (by end, then queue and tag). */
static unsigned int tag_first(const struct tags *tg)
{
	unsigned int m = 0;

	for (unsigned int b = 1; b < tg->nbusy; b++) {
		const __typeof__(tg->busy[0]) *x = &tg->busy[b], *y = &tg->busy[m];

		if (x->end < y->end || (x->end == y->end &&
					(x->q < y->q || (x->q == y->q && x->tag < y->tag))))
			m = b;
	}
	return m;
}

/* A free tag of queue index *@q at *@t (both may move). */
static unsigned int tag_take(struct tags *tg, struct rng *r, uint64_t *t,
			     unsigned int *q)
{
	unsigned int tag;

	while (tg->nbusy) {
		unsigned int b = tag_first(tg);

		if (tg->busy[b].end > *t)
			break;
		tag_free(tg, b);
	}
	*q = (unsigned int)rnd_in(r, 0, NQ - 1);
	if (!tg->n[*q]) {
		unsigned int b = tag_first(tg);

		if (tg->busy[b].end > *t)
			*t = tg->busy[b].end;
		*q = tg->busy[b].q;
		tag_free(tg, b);
	}
	tag = tg->fifo[*q][tg->head[*q]];
	tg->head[*q] = (tg->head[*q] + 1) % QD;
	tg->n[*q]--;
	return tag;
}

static int rec_cmp(const void *a, const void *b)
{
	const struct rec *x = a, *y = b;

	if (x->ts != y->ts)
		return x->ts < y->ts ? -1 : 1;
	if (x->opcode != y->opcode)
		return x->opcode < y->opcode ? -1 : 1;
	return x->ord < y->ord ? -1 : x->ord > y->ord;
}

static void make_workload(struct wl *w, const struct opts *o)
{
	struct rng r = { o->seed * 0x2545f4914f6cdd1dULL };
	struct tags *tg = xcalloc(1, sizeof(*tg));
	uint64_t t = 5000000000ULL;

	for (unsigned int q = 0; q < NQ; q++) {
		for (unsigned int k = 0; k < QD; k++)
			tg->fifo[q][k] = (uint8_t)k;
		tg->n[q] = QD;
	}
	w->cmds = xcalloc(o->n, sizeof(*w->cmds));
	for (uint64_t i = 0; i < o->n; i++) {
		struct cmd *c = &w->cmds[i];
		unsigned int q, tag;

		t += rnd_in(&r, 200, 3000);
		tag = tag_take(tg, &r, &t, &q);
		c->q = (uint16_t)(q + 1);
		c->cid = (uint16_t)(tg->gen[q][tag] << 12 | tag);
		tg->gen[q][tag] = (tg->gen[q][tag] + 1) & 15;
		cmd_phases(c, &r, t);
		tg->busy[tg->nbusy].end = c->ph[5];
		tg->busy[tg->nbusy].q = q;
		tg->busy[tg->nbusy++].tag = tag;
		cmd_records(w, &r, (uint32_t)i);
		bg_records(w, &r, o, i, t);
	}
	free(tg);
	qsort(w->recs, w->nrec, sizeof(*w->recs), rec_cmp);
	/* records lost as a producer overflow loses them: 4 at a third, 2 at
	 * two thirds of the trace */
	w->lost = xcalloc(w->nrec ? w->nrec : 1, sizeof(*w->lost));
	if (w->nrec > 30) {
		for (size_t k = 0; k < 4; k++)
			w->lost[w->nrec / 3 + k] = true;
		for (size_t k = 0; k < 2; k++)
			w->lost[2 * w->nrec / 3 + k] = true;
		w->nlost = 6;
	}
}

/* ------------------------------------------------------------ host side */

static void host_side(struct wl *w, const struct opts *o)
{
	struct rng r = { (o->seed ^ 0x5bd1e995ULL) * 0x9e3779b97f4a7c15ULL };
	double ref = w->nrec ? (double)w->recs[0].ts : 0;

	for (uint64_t i = 0; i < o->n; i++) {
		struct cmd *c = &w->cmds[i];
		double f = (double)c->ph[1], e = (double)c->ph[5];

		c->submit = (uint64_t)(int64_t)(f + (double)o->offset_ns +
						o->drift_ppm * 1e-6 * (f - ref)) -
			rnd_in(&r, 2000, 15000);
		c->complete = (uint64_t)(int64_t)(e + (double)o->offset_ns +
						  o->drift_ppm * 1e-6 * (e - ref)) +
			rnd_in(&r, 3000, 20000);
		if (o->status_every && i % o->status_every == o->status_every / 3)
			c->status = c->opc == 2 ? 0x281 : 0x2;
	}
}

static const struct cmd *sort_base;

static int by_complete(const void *a, const void *b)
{
	const struct cmd *x = &sort_base[*(const uint32_t *)a];
	const struct cmd *y = &sort_base[*(const uint32_t *)b];

	if (x->complete != y->complete)
		return x->complete < y->complete ? -1 : 1;
	return *(const uint32_t *)a < *(const uint32_t *)b ? -1 : 1;
}

/*
 * Who issued command i (the agent's pid, tid, comm, cgroup): one of three
 * tasks, i % 3, its tid one of seven threads (pid + i % 7); the truth
 * counts each task's commands and their slba.
 */
#define WHO(i)	((i) % 3)
static const uint32_t who_pid[3] = { 4101, 4202, 88 };
static const char *const who_comm[3] = { "fio", "db-writer", "kworker/3:1H" };
static const uint64_t who_cgroup[3] = { 5321, 6400, 1 };

/* hmb-trace-agent -j --per-command, host-only: one "cmd" line per command
 * in completion order, an "interval" line after every 1000. */
static void write_host(const struct wl *w, const struct opts *o)
{
	static const char *const opc_name[] = { "flush", "write", "read" };
	uint32_t *ix = xcalloc(o->n ? o->n : 1, sizeof(*ix));
	FILE *f = fopen(o->host, "w");

	if (!f)
		die("%s: cannot create", o->host);
	for (uint64_t i = 0; i < o->n; i++)
		ix[i] = (uint32_t)i;
	sort_base = w->cmds;
	qsort(ix, o->n, sizeof(*ix), by_complete);
	for (uint64_t k = 0; k < o->n; k++) {
		const struct cmd *c = &w->cmds[ix[k]];

		fprintf(f, "{\"type\":\"cmd\",\"cmd\":{\"ctrl\":0,\"qid\":%u,\"cid\":%u,"
			"\"opc\":\"%s\",\"nsid\":1,\"slba\":%llu,\"nlb\":%u,"
			"\"dev\":\"259:0\",\"match\":\"host-only\",\"flags\":32,"
			"\"submit_ns\":%llu,\"complete_ns\":%llu,\"status\":%u,"
			"\"pid\":%u,\"tid\":%u,\"comm\":\"%s\",\"cgroup\":%llu,"
			"\"host_total_ns\":%llu,\"fw\":[]}}\n",
			c->q, c->cid, opc_name[c->opc], (unsigned long long)c->slba,
			c->nlb + 1u, (unsigned long long)c->submit,
			(unsigned long long)c->complete, c->status,
			who_pid[WHO(ix[k])], who_pid[WHO(ix[k])] + (ix[k] % 7),
			who_comm[WHO(ix[k])],
			(unsigned long long)who_cgroup[WHO(ix[k])],
			(unsigned long long)(c->complete - c->submit));
		if (k % 1000 == 999)
			fputs("{\"type\":\"interval\",\"time\":\"12:00:00\","
			      "\"top\":[{\"ctrl\":9,\"qid\":1,\"cid\":1}]}\n", f);
	}
	if (fflush(f) || ferror(f) || fclose(f))
		die("%s: write error", o->host);
	free(ix);
}

/* ------------------------------------------------------------ the dump */

static void write_dump(const struct wl *w, const struct opts *o)
{
	struct hmb_dump_writer *dw;
	struct hmb_error err = { 0 };
	struct hmb_sidecar sc;
	char meta[4096];
	uint32_t seq = 0;

	memset(&sc, 0, sizeof(sc));
	sc.abi_version = HMB_TRACE_ABI_VERSION;
	sc.ring_size = 4194304;
	snprintf(sc.source, sizeof(sc.source), "/dev/nvme-hmb-trace0");
	sc.realtime_ns = o->realtime_ns;
	sc.monotonic_ns = o->monotonic_ns;
	sc.boottime_ns = o->monotonic_ns + 100;
	if (hmb_dump_writer_open(&dw, o->dump, &sc, 0644, &err))
		die("%s", err.msg);
	for (size_t k = 0; k < w->nrec; k++, seq++) {
		const struct rec *r = &w->recs[k];
		struct hmb_record_hdr h = {
			.magic = HMB_RECORD_MAGIC, .seq = seq, .ts_ns = r->ts,
			.opcode = r->opcode, .cpu = r->cpu,
			.payload_len = r->len,
		};

		if (w->lost[k])
			continue;
		if (hmb_dump_writer_add(dw, &h, r->pl, &err))
			die("%s", err.msg);
	}
	if (hmb_dump_writer_close(dw, NULL, &err))
		die("%s", err.msg);
	snprintf(meta, sizeof(meta), "%s.meta", o->dump);
	if (!o->sidecar && unlink(meta))
		die("%s: cannot remove", meta);
}

/* ------------------------------------------------------------ the truth */

struct wins {
	struct win *w;
	size_t n, cap;
	uint64_t *emax;		/* running maximum of the ends, by begin */
};

static void win_add(struct wins *g, uint64_t b, uint64_t e)
{
	if (g->n == g->cap) {
		g->cap = g->cap ? 2 * g->cap : 256;
		g->w = realloc(g->w, g->cap * sizeof(*g->w));
		if (!g->w)
			die("out of memory (%s)", "windows");
	}
	g->w[g->n].b = b;
	g->w[g->n++].e = e;
}

static int win_cmp(const void *a, const void *b)
{
	const struct win *x = a, *y = b;

	if (x->b != y->b)
		return x->b < y->b ? -1 : 1;
	return x->e < y->e ? -1 : x->e > y->e;
}

/*
 * The windows of each group (0 gc, 1 thermal) as the firmware model reads
 * the surviving records: a begin while one is open closes it there, an
 * end without a begin opens at the first record, a begin without an end
 * lasts to the last record.  Also each command's first and last surviving
 * record.
 */
static void windows(struct wl *w, struct wins g[2])
{
	uint64_t open[2] = { 0, 0 }, first = 0, last = 0;
	bool is_open[2] = { false, false }, any = false;

	for (size_t k = 0; k < w->nrec; k++) {
		const struct rec *r = &w->recs[k];
		int grp = r->opcode == OP_GC_START || r->opcode == OP_GC_END ? 0 :
			r->opcode == OP_TH_START || r->opcode == OP_TH_END ? 1 : -1;

		if (w->lost[k])
			continue;
		if (!any)
			first = r->ts;
		any = true;
		last = r->ts;
		if (r->cmd != NO_CMD) {
			struct cmd *c = &w->cmds[r->cmd];

			if (!c->t0)
				c->t0 = r->ts;
			c->t1 = r->ts;
		}
		if (grp < 0)
			continue;
		if (r->opcode == OP_GC_START || r->opcode == OP_TH_START) {
			if (is_open[grp])
				win_add(&g[grp], open[grp], r->ts);
			open[grp] = r->ts;
			is_open[grp] = true;
		} else {
			win_add(&g[grp], is_open[grp] ? open[grp] : first, r->ts);
			is_open[grp] = false;
		}
	}
	for (int k = 0; k < 2; k++) {
		if (is_open[k])
			win_add(&g[k], open[k], last);
		qsort(g[k].w, g[k].n, sizeof(*g[k].w), win_cmp);
		g[k].emax = xcalloc(g[k].n + 1, sizeof(*g[k].emax));
		for (size_t i = 0; i < g[k].n; i++)
			g[k].emax[i] = i && g[k].emax[i - 1] > g[k].w[i].e ?
				g[k].emax[i - 1] : g[k].w[i].e;
	}
}

/* Is a window of @g in flight over [t0, t1]: begin <= t1 and end >= t0. */
static bool in_flight(const struct wins *g, uint64_t t0, uint64_t t1)
{
	size_t lo = 0, hi = g->n;	/* first window beginning after t1 */

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (g->w[mid].b <= t1)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo && g->emax[lo - 1] >= t0;
}

struct status_sum {
	uint16_t status;
	uint64_t n, slba;
};

static void print_truth(struct wl *w, const struct opts *o)
{
	static const char *const grp_name[2] = { "gc", "thermal" };
	struct wins g[2];
	uint64_t bg_n[2] = { 0, 0 }, bg_slba[2] = { 0, 0 };
	uint64_t first_submit = UINT64_MAX;
	struct status_sum st[3] = { { 0, 0, 0 }, { 0x2, 0, 0 }, { 0x281, 0, 0 } };
	uint64_t who_n[3] = { 0, 0, 0 }, who_slba[3] = { 0, 0, 0 };

	memset(g, 0, sizeof(g));
	windows(w, g);
	for (uint64_t i = 0; i < o->n; i++) {
		const struct cmd *c = &w->cmds[i];

		for (int k = 0; k < 3; k++)
			if (st[k].status == c->status) {
				st[k].n++;
				st[k].slba += c->slba;
			}
		who_n[WHO(i)]++;
		who_slba[WHO(i)] += c->slba;
		if (c->submit < first_submit)
			first_submit = c->submit;
		for (int k = 0; c->t0 && k < 2; k++)
			if (in_flight(&g[k], c->t0, c->t1)) {
				bg_n[k]++;
				bg_slba[k] += c->slba;
			}
	}
	printf("{\"commands\":%llu,\"records\":%zu,\"records_lost\":%llu,"
	       "\"first_submit_ns\":%llu,\"status\":[",
	       (unsigned long long)o->n, w->nrec, (unsigned long long)w->nlost,
	       (unsigned long long)(o->n ? first_submit : 0));
	for (int k = 0, sep = 0; k < 3; k++)
		if (st[k].n)
			printf("%s[%u,%llu,%llu]", sep++ ? "," : "", st[k].status,
			       (unsigned long long)st[k].n,
			       (unsigned long long)st[k].slba);
	printf("],\"who\":[");
	for (int k = 0; k < 3; k++)
		printf("%s[%u,\"%s\",%llu,%llu,%llu]", k ? "," : "",
		       who_pid[k], who_comm[k],
		       (unsigned long long)who_cgroup[k],
		       (unsigned long long)who_n[k],
		       (unsigned long long)who_slba[k]);
	printf("],\"bg\":{");
	for (int k = 0; k < 2; k++) {
		printf("%s\"%s\":{\"windows\":%zu,\"commands\":%llu,\"slba\":%llu}",
		       k ? "," : "", grp_name[k], g[k].n,
		       (unsigned long long)bg_n[k],
		       (unsigned long long)bg_slba[k]);
		free(g[k].w);
		free(g[k].emax);
	}
	printf("}}\n");
}

/* ------------------------------------------------------------ main */

static void usage(FILE *f)
{
	fprintf(f,
"Usage: " PROG " -n N --dump PATH --host PATH [OPTIONS]\n"
"\n"
"Simulate N NVMe commands of one host, both sides: the firmware's trace as a\n"
"dump (with its sidecar if --sidecar) and the host's view as the JSON lines of\n"
"'hmb-trace-agent -j --per-command' (host-only), on a host clock\n"
"host = fw + OFFSET + DRIFT * (fw - first record's fw time); 6 firmware\n"
"records lost (4 at a third of the trace, 2 at two thirds).  Prints what it\n"
"made as one JSON object: commands, records, records_lost, first_submit_ns,\n"
"status ([status, commands, sum of slba], ...), who ([pid, comm, cgroup,\n"
"commands, sum of slba] per issuing task, three) and bg (per group, gc and\n"
"thermal: windows, and the commands whose surviving records span one, with\n"
"the sum of their slba).\n"
"\n"
"Options:\n"
"  -n, --commands N         commands to make (required)\n"
"      --dump PATH          the firmware dump to write (required)\n"
"      --host PATH          the host's JSON lines to write (required)\n"
"      --seed S             seed (default 1)\n"
"      --offset-ns NS       host clock minus firmware clock (default 40 s)\n"
"      --drift-ppm PPM      host clock drift against the firmware's (default 35)\n"
"      --status-every K     every K-th command completes with an error status:\n"
"                           0x281 for reads, 0x2 else (default 101; 0: none)\n"
"      --gc-every K         a gc window every K commands, a thermal one every\n"
"                           3K (default 200; 0: none)\n"
"      --sidecar REAL:MONO  keep the dump's sidecar, with these realtime and\n"
"                           monotonic clocks at open (default: no sidecar)\n"
"  -h, --help               this help\n"
"\n"
"Example:\n"
"  " PROG " -n 500000 --seed 21 --dump a.bin --host a.jsonl > a.truth.json\n"
"  hmb-trace-analyze correlate a.bin a.jsonl\n"
"\n"
"Exit status: 0 done, 1 error, 2 usage.\n");
}

static void parse_u64(const char *s, const char *what, uint64_t max,
		      uint64_t *v)
{
	if (hmb_parse_u64(s, 0, 0, max, v))
		hmb_usage_exit(PROG, NULL, "%s: not a number in [0, %llu]: '%s'",
			       what, (unsigned long long)max, s);
}

static void parse_opts(struct opts *o, int argc, char **argv)
{
	static const struct option lo[] = {
		{ "commands", required_argument, NULL, 'n' },
		{ "dump", required_argument, NULL, 'D' },
		{ "host", required_argument, NULL, 'H' },
		{ "seed", required_argument, NULL, 'S' },
		{ "offset-ns", required_argument, NULL, 'O' },
		{ "drift-ppm", required_argument, NULL, 'P' },
		{ "status-every", required_argument, NULL, 'E' },
		{ "gc-every", required_argument, NULL, 'G' },
		{ "sidecar", required_argument, NULL, 'C' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	uint64_t v;
	char *colon;
	int opt;

	opterr = 0;
	while ((opt = getopt_long(argc, argv, ":n:h", lo, NULL)) != -1) {
		switch (opt) {
		case 'n':
			parse_u64(optarg, "--commands", 100000000, &o->n);
			break;
		case 'D':
			o->dump = optarg;
			break;
		case 'H':
			o->host = optarg;
			break;
		case 'S':
			parse_u64(optarg, "--seed", UINT64_MAX, &o->seed);
			break;
		case 'O':
			parse_u64(optarg, "--offset-ns", INT64_MAX / 2, &v);
			o->offset_ns = (int64_t)v;
			break;
		case 'P':
			if (hmb_parse_double(optarg, -1000, 1000, &o->drift_ppm))
				hmb_usage_exit(PROG, NULL,
					       "--drift-ppm: not a number in [-1000, 1000]: '%s'",
					       optarg);
			break;
		case 'E':
			parse_u64(optarg, "--status-every", UINT32_MAX,
				  &o->status_every);
			break;
		case 'G':
			parse_u64(optarg, "--gc-every", UINT32_MAX, &o->gc_every);
			break;
		case 'C':
			colon = strchr(optarg, ':');
			if (colon)
				*colon++ = 0;
			parse_u64(optarg, "--sidecar REAL", UINT64_MAX,
				  &o->realtime_ns);
			parse_u64(colon ? colon : "", "--sidecar MONO",
				  UINT64_MAX, &o->monotonic_ns);
			o->sidecar = true;
			break;
		case 'h':
			usage(stdout);
			exit(0);
		default:
			hmb_usage_getopt(PROG, NULL, opt, argv);
			exit(HMB_EXIT_USAGE);
		}
	}
	if (optind != argc)
		hmb_usage_exit(PROG, NULL, "unexpected argument '%s'",
			       argv[optind]);
	if (!o->n || !o->dump || !o->host)
		hmb_usage_exit(PROG, NULL,
			       "-n N (at least 1), --dump and --host are required");
}

int main(int argc, char **argv)
{
	struct opts o = {
		.seed = 1, .status_every = 101, .gc_every = 200,
		.offset_ns = 40000000000LL, .drift_ppm = 35.0,
	};
	struct wl w;

	parse_opts(&o, argc, argv);
	memset(&w, 0, sizeof(w));
	make_workload(&w, &o);
	host_side(&w, &o);
	write_dump(&w, &o);
	write_host(&w, &o);
	print_truth(&w, &o);
	free(w.cmds);
	free(w.recs);
	free(w.lost);
	if (fflush(stdout) || ferror(stdout)) {
		fprintf(stderr, PROG ": <stdout>: write error: %s\n",
			strerror(errno));
		return 1;
	}
	return 0;
}
