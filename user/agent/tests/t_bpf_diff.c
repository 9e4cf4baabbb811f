// SPDX-License-Identifier: GPL-2.0
/*
 * t_bpf_diff.c - the live join and the offline join, fed the same
 * randomized host and firmware events, must give every command the same
 * records and the same verdict.
 *
 * A seeded generator plays a multi-queue NVMe host (tags allocated
 * last-freed first, a 4-bit generation on top of the tag as Linux puts
 * it, so full ids come round every 16 uses of a tag) and a firmware
 * writing five records per command (fetch .. cqe_posted) on its own clock
 * (offset, drift, optionally a step forward or back), with records lost
 * (single and in bursts: seq gaps), host idle pauses, and a bridge that
 * hands the records over in seq order, late by a random lag, in batches
 * of up to 64 interleaved with the host's setup and completion events.
 *
 * (a) The live join: hmb_agent_test.bpf.c's test program through
 *     BPF_PROG_TEST_RUN (setup, complete, hmb_trace_records batches), the
 *     agent's sweep of commands whose records never came (1 s after
 *     completion, every 250 ms, on the generated host clock) and at the
 *     end.  It is given the true firmware -> host clock of each record
 *     (valid from the start, error 0, so tight 20 us and loose 5 ms as
 *     the agent publishes them): the two joins are compared on their
 *     rules, not on the live clock estimate.
 * (b) The offline join: the records written with libhmbtrace's dump
 *     writer, read back with its reader, the host commands in completion
 *     order (what the agent's JSON lines give correlate), both streamed
 *     through hmb_join_stream with correlate's window.
 *
 * Compared per command (qid, cid, submit_ns): its phase -> record seq and
 * its verdict (matched / partial / unmatched), and each join against the
 * generator's truth.  In the overrun scenario the bridge lags more than
 * HMB_MAX_WAIT uses of an id on purpose: the joins differ there by
 * design (the live one gives up the oldest uses), and each command is
 * held to the truth alone: no record not its own, and all of its own
 * unless it was given up.  HMB_DIFF_CMDS (commands per scenario),
 * HMB_DIFF_SEED and HMB_DIFF_ONLY (one scenario by name) change the run; HMB_DIFF_KEEP=DIR keeps each scenario's
 * dump and host events (agent JSON lines) for hmb-trace-analyze
 * correlate.  Needs root and BPF; SKIPs otherwise.  TAP.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <linux/types.h>
#include <bpf/libbpf.h>
#include <bpf/bpf.h>

#include "hmbtrace.h"
#include "hmbtrace_dict.h"
#include "hmbtrace_join.h"
#include "hmb_agent.h"
#include "hmb_agent_test.skel.h"
#include "evdesc.h"
#include "sweep.h"
#include "tap.h"

#define NPH		6	/* phases 1..5 (HMB_PH_*) */
#define ALL_PH		0x3e
#define MS		1000000ULL
#define US		1000ULL

/* ------------------------------------------------------------ generator */

struct rng {
	uint64_t s;
};

static uint64_t rnd(struct rng *r)
{
	/* splitmix64: deterministic on every libc */
	uint64_t z = (r->s += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* uniform in [lo, hi] */
static uint64_t uni(struct rng *r, uint64_t lo, uint64_t hi)
{
	return lo + rnd(r) % (hi - lo + 1);
}

static double frnd(struct rng *r)
{
	return (double)(rnd(r) >> 11) / 9007199254740992.0;
}

struct scen {
	const char *name;
	unsigned int nq, depth, workers;	/* queues; tags, busy ones a queue */
	double loss;		/* a record lost */
	double burst;		/* a burst of 2..40 records lost starts */
	uint64_t pause_ns;	/* longest host idle pause, 0: none */
	int64_t step_ns;	/* firmware clock step (+: jumps ahead) */
	double drift_ppm;
	uint64_t lag_ns;	/* longest bridge delivery lag */
	/*
	 * The lag passes HMB_MAX_WAIT uses of an id: BPF flushes the oldest
	 * (REUSED) or the sweep takes them (SWEPT) before their records
	 * come.  Those lose their records; the joins then differ by design,
	 * and what is held is that no other command is given a record not
	 * its own.
	 */
	bool overrun;
};

struct gcmd {
	uint64_t submit, complete, slba;
	uint32_t seq[NPH];	/* true seq of each phase's record */
	uint16_t qid, cid;
	uint8_t opc, lost;	/* lost: bit per phase whose record was lost */
};

struct grec {
	uint64_t occ;		/* host time the firmware wrote it */
	uint64_t ts;		/* firmware clock */
	uint32_t cmd;
	uint8_t ph, lost, seg;	/* seg: clock segment (1 after the step) */
};

/* host events in host time order */
struct hev {
	uint64_t t;
	uint32_t cmd;
	uint32_t done;		/* 0 setup, 1 completion */
};

struct clk_seg {
	double off, ref, d;	/* host = fw + off + d * (fw - ref) */
};

struct wl {
	struct gcmd *c;
	size_t n;
	struct grec *r;
	size_t nr, nlost;
	struct hev *h;
	size_t nh;
	struct clk_seg seg[2];
	uint64_t step_at;	/* host time of the step, 0: none */
	uint32_t first_seq;
	uint32_t step_seq;	/* first record on the new clock */
};

/* the worker heap: (time, worker), earliest first */
struct wev {
	uint64_t t;
	uint32_t w, cmd;	/* cmd: in flight (UINT32_MAX: to submit) */
};

static int wev_less(const struct wev *a, const struct wev *b)
{
	return a->t != b->t ? a->t < b->t : a->w < b->w;
}

static void heap_push(struct wev *h, size_t *n, struct wev e)
{
	size_t i = (*n)++;

	while (i) {
		size_t p = (i - 1) / 2;

		if (!wev_less(&e, &h[p]))
			break;
		h[i] = h[p];
		i = p;
	}
	h[i] = e;
}

static struct wev heap_pop(struct wev *h, size_t *n)
{
	struct wev top = h[0], e = h[--*n];
	size_t i = 0;

	for (;;) {
		size_t l = 2 * i + 1, m = i;

		if (l < *n && wev_less(&h[l], &e))
			m = l;
		if (l + 1 < *n && wev_less(&h[l + 1], m == i ? &e : &h[l]))
			m = l + 1;
		if (m == i)
			break;
		h[i] = h[m];
		i = m;
	}
	if (*n)
		h[i] = e;
	return top;
}

static int rec_cmp(const void *a, const void *b)
{
	const struct grec *x = a, *y = b;

	if (x->occ != y->occ)
		return x->occ < y->occ ? -1 : 1;
	if (x->cmd != y->cmd)
		return x->cmd < y->cmd ? -1 : 1;
	return (int)x->ph - (int)y->ph;
}

static uint64_t fw_of(const struct clk_seg *k, uint64_t host)
{
	return (uint64_t)(k->ref + ((double)host - k->ref - k->off) /
			  (1.0 + k->d) + 0.5);
}

#define T0	(20ULL * 1000000000ULL)	/* host clock at the start */

/* Pause windows [b, e): a submission falling into one waits for its end. */
struct pauses {
	uint64_t *b, *e;
	size_t n;
};

static uint64_t unpause(const struct pauses *p, uint64_t t, struct rng *r)
{
	size_t lo = 0, hi = p->n;

	while (lo < hi) {	/* first window ending after t */
		size_t mid = (lo + hi) / 2;

		if (p->e[mid] <= t)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < p->n && p->b[lo] <= t)
		return p->e[lo] + uni(r, 0, 20 * US);
	return t;
}

static int generate(struct wl *w, const struct scen *s, size_t n,
		    uint64_t seed)
{
	struct rng r = { seed };
	unsigned int nw = s->nq * s->workers;
	struct wev *heap = calloc(nw, sizeof(*heap));
	uint16_t *freet = calloc((size_t)s->nq * s->depth, sizeof(*freet));
	uint8_t *gen = calloc((size_t)s->nq * s->depth, 1);
	unsigned int *nfree = calloc(s->nq, sizeof(*nfree));
	struct pauses p = { 0 };
	size_t nheap = 0, made = 0, burst = 0, pend = 0;

	memset(w, 0, sizeof(*w));
	w->c = calloc(n, sizeof(*w->c));
	w->r = calloc(n * 5, sizeof(*w->r));
	w->h = calloc(n * 2, sizeof(*w->h));
	if (!heap || !freet || !gen || !nfree || !w->c || !w->r || !w->h)
		return -1;
	if (s->pause_ns) {
		/* an idle pause every 20-100 ms of host time */
		size_t cap = 1 + n / 200;
		uint64_t t = T0;

		p.b = calloc(cap, sizeof(*p.b));
		p.e = calloc(cap, sizeof(*p.e));
		if (!p.b || !p.e)
			return -1;
		for (p.n = 0; p.n < cap; p.n++) {
			t += uni(&r, 20 * MS, 100 * MS);
			p.b[p.n] = t;
			t += uni(&r, MS, s->pause_ns);
			p.e[p.n] = t;
		}
	}
	for (unsigned int q = 0; q < s->nq; q++) {
		/* the first tag to take last: a stack, the last freed on top */
		for (unsigned int k = 0; k < s->depth; k++)
			freet[q * s->depth + k] = (uint16_t)(s->depth - 1 - k);
		nfree[q] = s->depth;
	}
	for (unsigned int k = 0; k < nw && pend < n; k++, pend++)
		heap_push(heap, &nheap, (struct wev){
			.t = T0 + uni(&r, 0, 50 * US), .w = k,
			.cmd = UINT32_MAX });
	while (nheap) {
		struct wev e = heap_pop(heap, &nheap);
		unsigned int q = e.w / s->workers;

		if (e.cmd == UINT32_MAX) {
			struct gcmd *c = &w->c[made];
			uint64_t t = e.t, roll = uni(&r, 0, 99), ph[NPH];
			uint16_t tag = freet[q * s->depth + --nfree[q]];

			pend--;
			c->qid = (uint16_t)(q + 1);
			c->cid = (uint16_t)((gen[q * s->depth + tag]++ & 15) << 12 |
					    tag);
			c->opc = roll < 60 ? 2 : roll < 95 ? 1 : 0;
			c->slba = c->opc ? uni(&r, 0, 1ULL << 30) * 8 : 0;
			c->submit = t;
			ph[1] = t + uni(&r, 500, 20 * US);
			ph[2] = ph[1] + uni(&r, US, 8 * US);
			ph[3] = ph[2] + (c->opc == 2 ? uni(&r, 20 * US, 150 * US) :
					 c->opc == 1 ? uni(&r, 5 * US, 40 * US) :
					 uni(&r, 500, 3 * US));
			ph[4] = ph[3] + uni(&r, US, 10 * US);
			ph[5] = ph[4] + uni(&r, 300, 3 * US);
			c->complete = ph[5] + uni(&r, 2 * US, 25 * US);
			for (int k = 1; k < NPH; k++)
				w->r[w->nr++] = (struct grec){
					.occ = ph[k], .cmd = (uint32_t)made,
					.ph = (uint8_t)k };
			w->h[w->nh++] = (struct hev){ t, (uint32_t)made, 0 };
			heap_push(heap, &nheap, (struct wev){
				.t = c->complete, .w = e.w,
				.cmd = (uint32_t)made });
			made++;
		} else {
			uint64_t next = e.t + (uni(&r, 0, 99) ? uni(&r, 0, 60 * US) :
					       uni(&r, 100 * US, 2 * MS));

			freet[q * s->depth + nfree[q]++] =
				(uint16_t)(w->c[e.cmd].cid & 0xfff);
			w->h[w->nh++] = (struct hev){ e.t, e.cmd, 1 };
			if (made + pend < n && ++pend)
				heap_push(heap, &nheap, (struct wev){
					.t = unpause(&p, next, &r), .w = e.w,
					.cmd = UINT32_MAX });
		}
	}
	w->n = made;
	qsort(w->r, w->nr, sizeof(*w->r), rec_cmp);
	/* the firmware clock: an unrelated offset, drift, maybe a step */
	w->seg[0].off = (double)uni(&r, 3000, 9000) * MS;
	w->seg[0].d = s->drift_ppm * 1e-6;
	w->seg[0].ref = (double)(T0 - (uint64_t)w->seg[0].off);
	w->seg[1] = w->seg[0];
	if (s->step_ns) {
		w->step_at = w->c[made / 2].submit + 3 * US;
		w->seg[1].off = w->seg[0].off - (double)s->step_ns;
		w->seg[1].ref = w->seg[0].ref + (double)s->step_ns;
	}
	w->first_seq = (uint32_t)uni(&r, 0, 1000000);
	w->step_seq = UINT32_MAX;
	for (size_t k = 0; k < w->nr; k++) {
		struct grec *g = &w->r[k];

		g->seg = w->step_at && g->occ >= w->step_at;
		if (g->seg && w->step_seq == UINT32_MAX)
			w->step_seq = w->first_seq + (uint32_t)k;
		g->ts = fw_of(&w->seg[g->seg], g->occ);
		if (!burst && frnd(&r) < s->burst)
			burst = uni(&r, 2, 40);
		g->lost = burst || frnd(&r) < s->loss;
		if (burst)
			burst--;
		w->nlost += g->lost;
		w->c[g->cmd].seq[g->ph] = w->first_seq + (uint32_t)k;
		if (g->lost)
			w->c[g->cmd].lost |= (uint8_t)(1 << g->ph);
	}
	free(heap);
	free(freet);
	free(gen);
	free(nfree);
	free(p.b);
	free(p.e);
	return 0;
}

static void wl_free(struct wl *w)
{
	free(w->c);
	free(w->r);
	free(w->h);
	memset(w, 0, sizeof(*w));
}

/* A record's header and payload as the shipped dictionary lays them out. */
static void rec_of(const struct wl *w, size_t k, struct hmb_record_hdr *h,
		   uint8_t pl[24])
{
	const struct grec *g = &w->r[k];
	const struct gcmd *c = &w->c[g->cmd];

	memset(h, 0, sizeof(*h));
	memset(pl, 0, 24);
	h->magic = HMB_RECORD_MAGIC;
	h->seq = w->first_seq + (uint32_t)k;
	h->ts_ns = g->ts;
	h->opcode = (uint16_t)(0x100 + g->ph - 1);
	h->payload_len = g->ph == HMB_PH_FETCH ? 24 : 8;
	memcpy(pl, &c->qid, 2);
	memcpy(pl + 2, &c->cid, 2);
	if (g->ph == HMB_PH_FETCH) {
		uint32_t nsid = 1;
		uint16_t nlb = 7;

		memcpy(pl + 4, &nsid, 4);
		pl[8] = c->opc;
		memcpy(pl + 10, &nlb, 2);
		memcpy(pl + 16, &c->slba, 8);
	}
}

/* --------------------------------------------------- what each join said */

struct got {
	uint32_t seq[NPH];
	uint32_t flags;		/* BPF: HMB_CF_* */
	uint8_t mask, n;	/* n: times reported */
	uint8_t match;		/* enum hmb_match */
};

static struct got *gb, *go;	/* BPF's, offline's, per command */

/* (qid, cid, submit_ns) -> command, for the BPF's events */
static uint32_t *ktab;
static size_t kcap;

static size_t khash(uint16_t qid, uint16_t cid, uint64_t submit)
{
	uint64_t x = submit * 0x9e3779b97f4a7c15ULL ^
		     ((uint64_t)qid << 16 | cid) * 0xbf58476d1ce4e5b9ULL;

	return (size_t)(x >> 17) & (kcap - 1);
}

static const struct wl *cur;

static int ktab_build(const struct wl *w)
{
	for (kcap = 1024; kcap < 2 * w->n; kcap *= 2)
		;
	ktab = malloc(kcap * sizeof(*ktab));
	if (!ktab)
		return -1;
	memset(ktab, 0xff, kcap * sizeof(*ktab));
	for (size_t k = 0; k < w->n; k++) {
		const struct gcmd *c = &w->c[k];
		size_t i = khash(c->qid, c->cid, c->submit);

		while (ktab[i] != UINT32_MAX)
			i = (i + 1) & (kcap - 1);
		ktab[i] = (uint32_t)k;
	}
	return 0;
}

static uint32_t ktab_find(uint16_t qid, uint16_t cid, uint64_t submit)
{
	size_t i = khash(qid, cid, submit);

	for (; ktab[i] != UINT32_MAX; i = (i + 1) & (kcap - 1)) {
		const struct gcmd *c = &cur->c[ktab[i]];

		if (c->qid == qid && c->cid == cid && c->submit == submit)
			return ktab[i];
	}
	return UINT32_MAX;
}

/* --------------------------------------------------------- the BPF join */

static struct hmb_agent_test *skel;
static struct ring_buffer *rb;
static struct hmb_cmd_slot *slots;
static int prog_fd, nr_cpus, batch_fd;
static struct hmb_dict *dict;
static uint64_t bpf_unknown, bpf_unmatched_recs, nruns;
static uint8_t *bbuf;	/* "batchbuf"'s value, every CPU's copy */

static int on_event(void *ctx, void *data, size_t len)
{
	const struct hmb_cmd_event *e = data;
	uint32_t k;

	(void)ctx;
	if (len < sizeof(__u32))
		return 0;
	if (e->type == HMB_EV_FW_UNMATCHED) {
		bpf_unmatched_recs++;
		return 0;
	}
	if (e->type != HMB_EV_CMD || len < sizeof(*e))
		return 0;
	k = ktab_find(e->qid, e->cid, e->st.submit_ns);
	if (k == UINT32_MAX) {
		bpf_unknown++;
		return 0;
	}
	gb[k].n++;
	gb[k].mask = e->st.fw_mask & ALL_PH;
	gb[k].flags = e->st.flags;
	for (int p = 1; p < NPH; p++)
		gb[k].seq[p] = (e->st.fw_mask & (1 << p)) ? e->st.fw_seq[p] : 0;
	return 0;
}

static int drive(__u64 a0, __u64 a1, __u64 a2, __u64 a3, __u64 a4, __u64 a5,
		 __u64 a6, __u64 a7)
{
	__u64 args[11] = { a0, a1, a2, a3, a4, a5, a6, a7, 0, 0, 0 };
	LIBBPF_OPTS(bpf_test_run_opts, o, .ctx_in = args,
		    .ctx_size_in = sizeof(args));
	int err = bpf_prog_test_run_opts(prog_fd, &o);

	if (err)
		printf("# test_run: %s\n", strerror(errno));
	if (!(++nruns & 255))
		ring_buffer__consume(rb);
	return err;
}

static __u64 counter(__u32 idx)
{
	__u64 *v = calloc((size_t)nr_cpus, sizeof(*v)), sum = 0;

	if (v && !bpf_map_lookup_elem(bpf_map__fd(skel->maps.counters), &idx, v))
		for (int cpu = 0; cpu < nr_cpus; cpu++)
			sum += v[cpu];
	free(v);
	return sum;
}

static int libbpf_quiet(enum libbpf_print_level l, const char *f, va_list a)
{
	if (l == LIBBPF_DEBUG)
		return 0;
	return vfprintf(stderr, f, a);
}

static void unload(void)
{
	if (slots)
		hmb_cmds_unmap(slots);
	ring_buffer__free(rb);
	hmb_agent_test__destroy(skel);
	slots = NULL;
	rb = NULL;
	skel = NULL;
}

static int load(void)
{
	__u32 r = 0, one = 1, op;
	struct bpf_program *p;

	skel = hmb_agent_test__open();
	if (!skel)
		return -1;
	skel->rodata->fw_enabled = true;
	skel->rodata->emit_all = true;
	bpf_object__for_each_program(p, skel->obj)
		bpf_program__set_autoload(p, p == skel->progs.hmb_test_drive);
	if (hmb_agent_test__load(skel) ||
	    hmb_evdesc_load(bpf_map__fd(skel->maps.evdesc), dict, &op))
		return -1;
	/* ring 0 -> controller 0 */
	bpf_map_update_elem(bpf_map__fd(skel->maps.ring_ctrl), &r, &one, 0);
	prog_fd = bpf_program__fd(skel->progs.hmb_test_drive);
	batch_fd = bpf_map__fd(skel->maps.batchbuf);
	rb = ring_buffer__new(bpf_map__fd(skel->maps.rb), on_event, NULL, NULL);
	slots = hmb_cmds_map(bpf_map__fd(skel->maps.cmds));
	return rb && slots ? 0 : -1;
}

/*
 * The agent's sweep (mapsweep.c) on the generated host clock: commands
 * completed more than the grace (1 s) before @now, or all (@all).
 */
static void sweep_at(uint64_t now, bool all)
{
	struct hmb_cmd_event ev;

	ring_buffer__consume(rb);
	for (unsigned int i = 0; i < HMB_CMD_SLOTS; i++) {
		struct hmb_cmd_slot *s = &slots[i];
		__u64 tag = __atomic_load_n(&s->tag, __ATOMIC_ACQUIRE), cpl;

		if (!(tag & HMB_TAG_VALID) || (tag & HMB_TAG_BUSY))
			continue;
		cpl = __atomic_load_n(&s->st.complete_ns, __ATOMIC_RELAXED);
		if (!all && !(cpl && cpl + 1000 * MS < now))
			continue;
		if (!hmb_cmd_take(s, tag, &ev))
			continue;
		ev.st.flags |= HMB_CF_SWEPT;
		if (!ev.st.complete_ns)
			ev.st.flags |= HMB_CF_NO_COMPLETE;
		on_event(NULL, &ev, sizeof(ev));
	}
}

/* The true clock of segment @s, as the agent publishes an estimate. */
static void set_clock(const struct wl *w, int s)
{
	struct hmb_clk *b = &skel->bss->clk;

	b->off_ns = (__s64)w->seg[s].off;
	b->drift_ppb = (__s64)(w->seg[s].d * 1e9);
	b->ref_fw = (__u64)w->seg[s].ref;
	b->tight_ns = 20000;
	b->tol_ns = 5000000;
	__atomic_store_n(&b->valid, 1, __ATOMIC_RELEASE);
}

/* One batch of @n records in "bbuf" handed over (every CPU's copy). */
static void flush_batch(__u32 *n)
{
	size_t one = HMB_BRIDGE_BATCH * sizeof(struct hmb_bridge_rec);
	__u32 zero = 0;

	if (!*n)
		return;
	for (int cpu = 1; cpu < nr_cpus; cpu++)
		memcpy(bbuf + (size_t)cpu * one, bbuf,
		       *n * sizeof(struct hmb_bridge_rec));
	if (bpf_map_update_elem(batch_fd, &zero, bbuf, BPF_ANY))
		printf("# batchbuf: %s\n", strerror(errno));
	drive(6, 0, *n, 0, 0, 0, 0, 0);
	*n = 0;
}

/* Records [@from, @to) of the workload, lost ones left out, as batches. */
static void deliver(const struct wl *w, size_t from, size_t to, int *seg)
{
	struct hmb_bridge_rec *br = (void *)bbuf;
	__u32 n = 0;

	for (size_t k = from; k < to; k++) {
		struct hmb_bridge_rec *b;
		uint8_t pl[24];

		if (w->r[k].lost)
			continue;
		/* a batch never straddles the clock step */
		if (w->r[k].seg != *seg) {
			flush_batch(&n);
			*seg = w->r[k].seg;
			set_clock(w, *seg);
		}
		if (n == HMB_BRIDGE_BATCH)
			flush_batch(&n);
		b = &br[n++];
		memset(b, 0, sizeof(*b));
		rec_of(w, k, &b->hdr, pl);
		memcpy(b->head, pl, b->hdr.payload_len < 24 ?
		       b->hdr.payload_len : 24);
	}
	flush_batch(&n);
}

/*
 * The host events and the bridge's wake-ups merged in host time: a wake
 * hands over, in seq order, the records written at least a random lag
 * (up to @lag_ns; in an overrun scenario at least half of it) before it.
 */
static int run_bpf(const struct wl *w, const struct scen *s, uint64_t seed)
{
	struct rng r = { seed ^ 0x5bd1e995 };
	uint64_t wake = T0 + uni(&r, 50 * US, 500 * US), cutoff = 0;
	uint64_t next_sweep = T0 + 250 * MS;
	size_t hi = 0, ri = 0;
	int seg = 0;

	bbuf = calloc((size_t)nr_cpus, HMB_BRIDGE_BATCH *
		      sizeof(struct hmb_bridge_rec));
	if (!bbuf)
		return -1;
	set_clock(w, 0);
	while (hi < w->nh || ri < w->nr) {
		uint64_t now;

		if (hi < w->nh && w->h[hi].t < wake) {
			const struct hev *e = &w->h[hi++];
			const struct gcmd *c = &w->c[e->cmd];

			now = e->t;
			if (e->done)
				drive(2, 0, c->qid, c->cid, e->t, 0, 0, 0);
			else
				drive(1, 0, c->qid, c->cid, e->t, c->opc, 1,
				      c->slba);
		} else {
			size_t to = ri;
			/* overrun: a bridge that stays behind */
			uint64_t lag = uni(&r, s->overrun ? s->lag_ns / 2 : 0,
					   s->lag_ns);

			now = wake;
			if (wake - lag > cutoff)
				cutoff = wake - lag;
			if (hi == w->nh)
				cutoff = UINT64_MAX;
			while (to < w->nr && w->r[to].occ <= cutoff)
				to++;
			if (to > ri)
				deliver(w, ri, to, &seg);
			ri = to;
			wake += uni(&r, 50 * US, 500 * US);
		}
		if (now >= next_sweep) {
			sweep_at(now, false);
			next_sweep += 250 * MS;
		}
	}
	sweep_at(0, true);
	ring_buffer__consume(rb);
	free(bbuf);
	bbuf = NULL;
	return 0;
}

/* ----------------------------------------------------- the offline join */

struct osrc {
	const struct wl *w;
	struct hmb_reader *rd;
	size_t hi;
};

static int src_record(void *ctx, struct hmb_record *rec, bool *end)
{
	struct osrc *o = ctx;
	struct hmb_error err = { 0 };
	int rc;

	do {
		rc = hmb_reader_next(o->rd, rec, &err);
	} while (rc == 1 && rec->kind != HMB_KIND_DATA);
	if (rc < 0) {
		printf("# reading the dump back: %s\n", err.msg);
		return 1;
	}
	*end = rc == 0;
	return 0;
}

static void host_of(const struct wl *w, uint32_t k, struct hmb_host_cmd *h)
{
	const struct gcmd *c = &w->c[k];

	memset(h, 0, sizeof(*h));
	h->submit_ns = c->submit;
	h->complete_ns = c->complete;
	h->slba = c->slba;
	h->nsid = 1;
	h->nlb = c->opc ? 8 : 0;
	h->qid = c->qid;
	h->cid = c->cid;
	h->line = k + 1;
	hmb_nvme_opc_name(c->opc, h->opc, sizeof(h->opc));
}

/* the host commands in completion order, as the agent writes them */
static int src_host(void *ctx, struct hmb_host_cmd *h, bool *end)
{
	struct osrc *o = ctx;

	while (o->hi < o->w->nh && !o->w->h[o->hi].done)
		o->hi++;
	*end = o->hi == o->w->nh;
	if (!*end)
		host_of(o->w, o->w->h[o->hi++].cmd, h);
	return 0;
}

static int src_pick(void *ctx, const uint32_t *ctrls, unsigned int n,
		    uint32_t *ctrl)
{
	(void)ctx;
	(void)ctrls;
	(void)n;
	*ctrl = 0;
	return 0;
}

static uint64_t off_unknown;

static int src_cmd(void *ctx, const struct hmb_join *j, size_t i,
		   const struct hmb_cmd *c)
{
	uint32_t k = c->h.line - 1;

	(void)ctx;
	(void)j;
	(void)i;
	if (!c->h.line || k >= cur->n) {
		off_unknown++;
		return 0;
	}
	go[k].n++;
	go[k].mask = c->fw.mask & ALL_PH;
	go[k].match = (uint8_t)c->match;
	for (int p = 1; p < NPH; p++)
		go[k].seq[p] = (c->fw.mask & (1 << p)) ? c->fw.seq[p] : 0;
	return 0;
}

static const char *tmpdir(void)
{
	const char *t = getenv("TMPDIR");

	return t && *t ? t : "/tmp";
}

/* Write the dump (and, kept, the host's JSON lines), then join. */
static int run_offline(const struct wl *w, const char *name,
		       struct hmb_join_totals *tot)
{
	const char *keep = getenv("HMB_DIFF_KEEP");
	char dir[4096], path[4200];
	struct hmb_dump_writer *dw;
	struct hmb_error err = { 0 };
	struct hmb_sidecar sc;
	struct osrc o = { .w = w };
	const struct hmb_join_src src = {
		.record = src_record, .host = src_host, .pick_ctrl = src_pick,
		.cmd = src_cmd, .ctx = &o,
	};
	struct hmb_join *j;
	const char *e;
	int fd, rc;

	if (keep && *keep) {
		snprintf(dir, sizeof(dir), "%s", keep);
	} else {
		snprintf(dir, sizeof(dir), "%s/t_bpf_diff.XXXXXX", tmpdir());
		if (!mkdtemp(dir)) {
			printf("# mkdtemp %s: %s\n", dir, strerror(errno));
			return -1;
		}
	}
	memset(&sc, 0, sizeof(sc));
	sc.abi_version = HMB_TRACE_ABI_VERSION;
	sc.ring_size = 4194304;
	snprintf(sc.source, sizeof(sc.source), "t_bpf_diff");
	snprintf(path, sizeof(path), "%s/%s.bin", dir, name);
	if (hmb_dump_writer_open(&dw, path, &sc, 0, &err)) {
		printf("# %s\n", err.msg);
		return -1;
	}
	for (size_t k = 0; k < w->nr; k++) {
		struct hmb_record_hdr h;
		uint8_t pl[24];

		if (w->r[k].lost)
			continue;
		rec_of(w, k, &h, pl);
		if (hmb_dump_writer_add(dw, &h, pl, &err)) {
			printf("# %s\n", err.msg);
			hmb_dump_writer_close(dw, NULL, &err);
			return -1;
		}
	}
	if (hmb_dump_writer_close(dw, NULL, &err)) {
		printf("# %s\n", err.msg);
		return -1;
	}
	if (keep && *keep) {
		FILE *f;

		snprintf(path, sizeof(path), "%s/%s.jsonl", dir, name);
		f = fopen(path, "we");
		for (size_t i = 0; f && i < w->nh; i++) {
			struct hmb_host_cmd h;

			if (!w->h[i].done)
				continue;
			host_of(w, w->h[i].cmd, &h);
			fprintf(f, "{\"type\":\"cmd\",\"cmd\":{\"ctrl\":0,\"qid\":%u,\"cid\":%u,\"opc\":\"%s\",\"nsid\":1,\"slba\":%llu,\"nlb\":%u,\"submit_ns\":%llu,\"complete_ns\":%llu,\"status\":0,\"flags\":0}}\n",
				h.qid, h.cid, h.opc,
				(unsigned long long)h.slba, h.nlb,
				(unsigned long long)h.submit_ns,
				(unsigned long long)h.complete_ns);
		}
		if (!f || fclose(f))
			printf("# %s: cannot write\n", path);
		snprintf(path, sizeof(path), "%s/%s.bin", dir, name);
	}
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || hmb_reader_open(&o.rd, fd, path, &err)) {
		printf("# %s: %s\n", path, fd < 0 ? strerror(errno) : err.msg);
		if (fd >= 0)
			close(fd);
		return -1;
	}
	j = hmb_join_new(dict);
	if (j && (e = getenv("HMB_DIFF_WINDOW")) && *e)
		hmb_join_set_window(j, strtoull(e, NULL, 0) ?
				    strtoull(e, NULL, 0) : SIZE_MAX, 0);
	rc = j ? hmb_join_stream(j, &src, 10, &err) : HMB_E_NOMEM;
	if (rc)
		printf("# hmb_join_stream: %d %s\n", rc, err.msg);
	else
		*tot = *hmb_join_totals(j);
	hmb_join_free(j);
	hmb_reader_close(o.rd);
	close(fd);
	if (!(keep && *keep)) {
		unlink(path);
		snprintf(path, sizeof(path), "%s/%s.bin.meta", dir, name);
		unlink(path);
		rmdir(dir);
	}
	return rc ? -1 : 0;
}

/* ------------------------------------------------------------ comparing */

static uint8_t truth_mask(const struct gcmd *c)
{
	return (uint8_t)(ALL_PH & ~c->lost);
}

static bool same(const struct got *a, uint8_t mask, const uint32_t *seq)
{
	if (a->mask != mask)
		return false;
	for (int p = 1; p < NPH; p++)
		if ((mask & (1 << p)) && a->seq[p] != seq[p])
			return false;
	return true;
}

static bool got_same(const struct got *a, const struct got *b)
{
	return same(a, b->mask, b->seq);
}

static enum hmb_match verdict(uint8_t mask)
{
	struct hmb_host_cmd h = { 0 };
	struct hmb_fw_side f = { .mask = mask };

	return hmb_cmd_classify(&h, &f);
}

static void show(const struct wl *w, uint32_t k)
{
	const struct gcmd *c = &w->c[k];
	const struct got *b = &gb[k], *o = &go[k];

	printf("#   cmd %u q%u cid 0x%04x %s submit %llu complete %llu (%+.3f ms from the step) lost 0x%02x\n",
	       k, c->qid, c->cid, c->opc == 2 ? "read" : c->opc ? "write" :
	       "flush", (unsigned long long)c->submit,
	       (unsigned long long)c->complete,
	       w->step_at ? ((double)c->submit - (double)w->step_at) / 1e6 : 0.0,
	       c->lost);
	printf("#     truth  :");
	for (int p = 1; p < NPH; p++)
		printf(" %u%s", c->seq[p], c->lost & (1 << p) ? "(lost)" : "");
	/* the id's previous use: its lost records can mislead the other */
	for (uint32_t i = k; i-- > 0;)
		if (w->c[i].qid == c->qid && w->c[i].cid == c->cid) {
			printf(" (previous use: cmd %u, lost 0x%02x)", i,
			       w->c[i].lost);
			break;
		}
	printf("\n#     bpf    : n %u flags 0x%x mask 0x%02x", b->n, b->flags,
	       b->mask);
	for (int p = 1; p < NPH; p++)
		if (b->mask & (1 << p))
			printf(" %d:%u", p, b->seq[p]);
	printf("\n#     offline: n %u %s mask 0x%02x", o->n,
	       hmb_match_name((enum hmb_match)o->match), o->mask);
	for (int p = 1; p < NPH; p++)
		if (o->mask & (1 << p))
			printf(" %d:%u", p, o->seq[p]);
	printf("\n");
}

static uint64_t total_cmds;
static double total_bpf_s;

/* Is every record BPF gave command @k its own (a record that exists)? */
static bool only_own(const struct wl *w, size_t k)
{
	const struct gcmd *c = &w->c[k];

	for (int p = 1; p < NPH; p++)
		if ((gb[k].mask & (1 << p)) &&
		    ((c->lost & (1 << p)) || gb[k].seq[p] != c->seq[p]))
			return false;
	return true;
}

static void overrun_checks(const struct wl *w, const struct scen *s)
{
	uint64_t flushed = 0, reused = 0, wrong = 0, short_own = 0, shown = 0;

	for (size_t k = 0; k < w->n; k++) {
		bool fl = gb[k].flags & (HMB_CF_REUSED | HMB_CF_SWEPT);

		flushed += fl;
		reused += !!(gb[k].flags & HMB_CF_REUSED);
		if (!only_own(w, k)) {
			wrong++;
			if (shown++ < 4)
				show(w, (uint32_t)k);
		} else if (!fl && !same(&gb[k], truth_mask(&w->c[k]),
					w->c[k].seq)) {
			short_own++;
		}
	}
	ok(reused > 0,
	   "%s: the lag passed %d uses of an id: %llu commands given up before their records came (%llu of them flushed by the id's reuse)",
	   s->name, HMB_MAX_WAIT, (unsigned long long)flushed,
	   (unsigned long long)reused);
	ok(!wrong,
	   "%s: no command given a record that is not its own (%llu were)",
	   s->name, (unsigned long long)wrong);
	ok(!short_own,
	   "%s: every command not given up has all its own records (%llu have not)",
	   s->name, (unsigned long long)short_own);
}

static void scenario(const struct scen *s, size_t n, uint64_t seed)
{
	struct hmb_join_totals tot = { 0 };
	uint64_t once_b = 0, once_o = 0, vsame = 0, rsame = 0, limits;
	uint64_t cls[HMB_M_COUNT] = { 0 }, bflag[8] = { 0 };
	uint64_t b_true = 0, o_true = 0, only_b = 0, only_o = 0, neither = 0;
	uint64_t near_step = 0, shown = 0, swept = 0, reused = 0, waited = 0;
	uint64_t dfirst = UINT64_MAX, dlast = 0, ifirst = UINT64_MAX, ilast = 0;
	struct wl w;
	double t0, t1, t2;

	if (generate(&w, s, n, seed)) {
		ok(0, "%s: generate %zu commands", s->name, n);
		return;
	}
	cur = &w;
	gb = calloc(w.n, sizeof(*gb));
	go = calloc(w.n, sizeof(*go));
	bpf_unknown = bpf_unmatched_recs = off_unknown = 0;
	if (!gb || !go || ktab_build(&w) || load()) {
		ok(0, "%s: set up (%s)", s->name, strerror(errno));
		goto out;
	}
	t0 = hmb_now_s(CLOCK_MONOTONIC);
	run_bpf(&w, s, seed);
	t1 = hmb_now_s(CLOCK_MONOTONIC);
	if (run_offline(&w, s->name, &tot)) {
		ok(0, "%s: the offline join ran", s->name);
		goto out;
	}
	t2 = hmb_now_s(CLOCK_MONOTONIC);
	total_cmds += w.n;
	total_bpf_s += t1 - t0;
	diag("%s: seed %llu, %zu commands on %u queues (QD %u of %u tags), %zu records, %zu lost, step %+lld ns at seq %u, drift %+.0f ppm, lag <= %llu us",
	     s->name, (unsigned long long)seed, w.n, s->nq, s->workers,
	     s->depth, w.nr, w.nlost, (long long)s->step_ns,
	     w.step_at ? w.step_seq : 0, s->drift_ppm,
	     (unsigned long long)(s->lag_ns / US));
	diag("%s: BPF join %.1f s (%.0f commands/s, %llu program runs), offline join %.1f s (%llu windows, %u segment steps, %llu refused, %llu split, late %llu host %llu firmware)",
	     s->name, t1 - t0, (double)w.n / (t1 - t0),
	     (unsigned long long)nruns, t2 - t1,
	     (unsigned long long)tot.windows, tot.segment_steps,
	     (unsigned long long)tot.fw_refused,
	     (unsigned long long)tot.fw_split,
	     (unsigned long long)tot.host_late,
	     (unsigned long long)tot.fw_late);
	nruns = 0;
	for (size_t k = 0; k < w.n; k++) {
		const struct gcmd *c = &w.c[k];
		bool bt, ot;

		once_b += gb[k].n == 1;
		once_o += go[k].n == 1;
		swept += !!(gb[k].flags & HMB_CF_SWEPT);
		reused += !!(gb[k].flags & HMB_CF_REUSED);
		/* given up waiting: only for a cqe_posted that never came */
		waited += (gb[k].flags & (HMB_CF_SWEPT | HMB_CF_REUSED)) &&
			  (c->lost & (1 << HMB_PH_CQE_POSTED));
		for (int f = 0; f < 8; f++)
			bflag[f] += !!(gb[k].flags & (1u << f));
		bt = same(&gb[k], truth_mask(c), c->seq);
		ot = same(&go[k], truth_mask(c), c->seq);
		b_true += bt;
		o_true += ot;
		if (verdict(gb[k].mask) == (enum hmb_match)go[k].match) {
			vsame++;
			cls[go[k].match]++;
		}
		if (got_same(&gb[k], &go[k])) {
			rsame++;
			continue;
		}
		only_b += bt && !ot;
		only_o += ot && !bt;
		neither += !bt && !ot;
		if (w.step_at && c->submit + 50 * MS > w.step_at &&
		    c->submit < w.step_at + 50 * MS)
			near_step++;
		if (k < ifirst)
			ifirst = k;
		ilast = k;
		if (c->submit < dfirst)
			dfirst = c->submit;
		if (c->submit > dlast)
			dlast = c->submit;
		if (shown++ < 4)
			show(&w, (uint32_t)k);
	}
	if (s->overrun) {
		overrun_checks(&w, s);
		goto out;
	}
	limits = counter(HMB_C_ACTIVE_FULL) + counter(HMB_C_DONE_FULL) +
		 counter(HMB_C_RB_FAIL) + counter(HMB_C_ACTIVE_OVERWRITE) +
		 counter(HMB_C_HOST_NO_SUBMIT);
	ok(once_b == w.n && once_o == w.n && !bpf_unknown && !off_unknown,
	   "%s: each join reported each of the %zu commands once (BPF %llu, offline %llu; unknown %llu/%llu)",
	   s->name, w.n, (unsigned long long)once_b,
	   (unsigned long long)once_o, (unsigned long long)bpf_unknown,
	   (unsigned long long)off_unknown);
	ok(!limits && !bflag[1] && !bflag[6] &&
	   reused == counter(HMB_C_REUSE_FLUSH) && waited == swept + reused,
	   "%s: BPF within its maps (map full, ring buffer failure, overwrite, stray completion: %llu; NO_ROOM/NO_COMPLETE %llu/%llu); the %llu reported REUSED (%d uses of the id waiting) and %llu SWEPT all lack their cqe_posted record (%llu)",
	   s->name, (unsigned long long)limits, (unsigned long long)bflag[1],
	   (unsigned long long)bflag[6], (unsigned long long)reused,
	   HMB_MAX_WAIT, (unsigned long long)swept,
	   (unsigned long long)waited);
	ok(b_true == w.n,
	   "%s: BPF join with the true clock: every record of %llu of %zu commands on its own command",
	   s->name, (unsigned long long)b_true, w.n);
	if (vsame != w.n || rsame != w.n)
		diag("%s: of the %llu commands that differ (commands %llu to %llu, submitted %.3f to %.3f ms into the run of %.3f ms): BPF = truth %llu, offline = truth %llu, neither %llu, within 50 ms of the step %llu; BPF's unmatched records %llu",
		     s->name, (unsigned long long)(w.n - rsame),
		     (unsigned long long)ifirst, (unsigned long long)ilast,
		     (double)(dfirst - T0) / 1e6, (double)(dlast - T0) / 1e6,
		     (double)(w.c[w.n - 1].submit - T0) / 1e6,
		     (unsigned long long)only_b, (unsigned long long)only_o,
		     (unsigned long long)neither,
		     (unsigned long long)near_step,
		     (unsigned long long)bpf_unmatched_recs);
	ok(vsame == w.n,
	      "%s: same verdict for %llu of %zu commands (matched %llu, partial %llu, unmatched %llu)",
	      s->name, (unsigned long long)vsame, w.n,
	      (unsigned long long)cls[HMB_M_MATCHED],
	      (unsigned long long)cls[HMB_M_PARTIAL],
	      (unsigned long long)cls[HMB_M_UNMATCHED]);
	ok(rsame == w.n,
	      "%s: same phase -> record seq for %llu of %zu commands (offline = truth %llu)",
	      s->name, (unsigned long long)rsame, w.n,
	      (unsigned long long)o_true);
out:
	unload();
	free(ktab);
	ktab = NULL;
	free(gb);
	free(go);
	gb = go = NULL;
	wl_free(&w);
}

int main(int argc, char **argv)
{
	static const struct scen scens[] = {
		{ "base", 4, 64, 32, 0, 0, 0, 0, 20, 2 * MS, false },
		{ "loss", 4, 64, 32, 0.003, 0.0005, 0, 0, -30, 2 * MS, false },
		{ "pauses", 2, 32, 24, 0.001, 0, 200 * MS, 0, 50, 2 * MS, false },
		{ "step-ahead", 4, 64, 32, 0.001, 0, 0, 2 * (int64_t)MS, 40,
		  2 * MS, false },
		{ "step-back", 4, 64, 32, 0.001, 0, 0, -3 * (int64_t)MS, -60,
		  2 * MS, false },
		{ "late", 3, 64, 48, 0.001, 0.0002, 50 * MS, 0, 80, 20 * MS, false },
		{ "mixed", 8, 32, 20, 0.002, 0.0003, 30 * MS, 2 * (int64_t)MS,
		  -40, 5 * MS, false },
		/* every tag busy: a tag reused at each completion */
		{ "tight", 2, 32, 32, 0.001, 0.0002, 0, 0, 30, 5 * MS, false },
		/* QD1 on two tags, the bridge 80 to 160 ms behind */
		{ "overrun", 1, 2, 1, 0, 0, 0, 0, 30, 120 * MS, true },
	};
	struct hmb_error err = { 0 };
	const char *dpath = argc > 1 ? argv[1] : "../../share/hmb-events.dict";
	const char *e, *only;
	size_t n = 150000, nscen = 0;
	uint64_t seed = 27;

	if (geteuid() != 0) {
		printf("1..0 # SKIP needs root for BPF\n");
		return 0;
	}
	if ((e = getenv("HMB_DIFF_CMDS")) && *e)
		n = strtoull(e, NULL, 0);
	if ((e = getenv("HMB_DIFF_SEED")) && *e)
		seed = strtoull(e, NULL, 0);
	if (hmb_dict_load(&dict, dpath, &err)) {
		ok(0, "dictionary: %s", err.msg);
		return tap_done();
	}
	libbpf_set_print(libbpf_quiet);
	nr_cpus = libbpf_num_possible_cpus();
	if (load()) {
		printf("1..0 # SKIP cannot load the BPF test program: %s\n",
		       strerror(errno));
		return 0;
	}
	unload();
	only = getenv("HMB_DIFF_ONLY");
	for (size_t i = 0; i < sizeof(scens) / sizeof(scens[0]); i++)
		if (!only || !*only || !strcmp(only, scens[i].name)) {
			scenario(&scens[i], n, seed + i);
			nscen++;
		}
	diag("%llu commands, BPF join %.1f s (%.0f commands/s through BPF_PROG_TEST_RUN)",
	     (unsigned long long)total_cmds, total_bpf_s,
	     total_bpf_s > 0 ? (double)total_cmds / total_bpf_s : 0.0);
	ok(nscen && total_cmds >= nscen * n, "%llu commands compared in all",
	   (unsigned long long)total_cmds);
	hmb_dict_free(dict);
	return tap_done();
}
