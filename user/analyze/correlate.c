// SPDX-License-Identifier: Apache-2.0
/*
 * correlate: the offline form of hmb-trace-agent's join, for a dump taken
 * by the classic daemon and host events recorded by the agent (host-only
 * mode is enough) or by perf script of the nvme tracepoints.
 *
 * The firmware commands come from the dump (fwmodel: phase events joined
 * by sqid/cid); the host commands from hostev.  The two clocks are unknown
 * to each other (ts_ns is the firmware's own), and command ids are reused,
 * so the join runs in three passes:
 *  1. a coarse offset: for a sample of host commands, the differences
 *     submit - fetch to every firmware command with the same (queue, cid)
 *     and, when both sides know it, the same slba; the densest 100 us
 *     window of those differences is the offset (wrong pairs scatter);
 *  2. each host command takes the closest unused firmware command with its
 *     keys whose fetch, shifted by that offset, lies in its host window
 *     (widened by 200 us); the matched commands feed libhmbtrace's clock
 *     estimate (hmbtrace_clock.h, the agent's own), which adds drift;
 *  3. the same join again with the estimate, widened only by its error
 *     (at least 20 us, as the agent does), and the estimate redone on it.
 * The passes run per chunk of host time (at least CHUNK_NS and CHUNK_MIN
 * commands), each chunk with its own estimate, so a firmware clock step
 * costs no matches: the commands a chunk's estimate does not explain go
 * through the passes again and get a second estimate (a segment).
 * Then every command gets the agent's breakdown: host total, host submit
 * -> fw fetch, fw fetch -> cqe_posted, fw cqe_posted -> host complete,
 * with the clock of its own segment.
 */
#include <errno.h>
#include <math.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analyze.h"
#include "correlate.h"
#include "formats.h"
#include "fwmodel.h"

#define COARSE_WIN	100000	/* ns */
#define PASS2_TOL	200000	/* ns */
#define MIN_TOL		20000	/* ns */
#define MAX_CANDS	(4u << 20)
#define CHUNK_NS	250000000ull	/* host ns */
#define CHUNK_MIN	2000		/* host commands */

const char *const corr_x_names[CX_COUNT] = {
	[CX_HOST_TOTAL] = "host_total",
	[CX_SUBMIT_TO_FETCH] = "host_submit_to_fw_fetch",
	[CX_FW_TOTAL] = "fw_fetch_to_cqe_posted",
	[CX_CQE_TO_COMPLETE] = "fw_cqe_posted_to_host_complete",
};

const char *corr_match_name(enum corr_match m)
{
	return m == CM_MATCHED ? "matched" : m == CM_PARTIAL ? "partial" :
	       "unmatched";
}

/* ------------------------------------------------- firmware commands */

struct fwload {
	struct corr *c;
	bool oom;
};

static void on_end(void *ctx, const struct fwm_cmd *m, enum fwm_end why)
{
	struct fwload *l = ctx;
	struct corr *c = l->c;
	struct fw_cmd *f;

	(void)why;
	if (c->nfw == c->capfw) {
		size_t cap = c->capfw ? c->capfw * 2 : 4096;
		struct fw_cmd *v = realloc(c->fw, cap * sizeof(*v));

		if (!v) {
			l->oom = true;
			return;
		}
		c->fw = v;
		c->capfw = cap;
	}
	f = &c->fw[c->nfw++];
	memset(f, 0, sizeof(*f));
	f->first = m->first_ts;
	f->last = m->last_ts;
	f->first_seq = m->first_seq;
	f->last_seq = m->last_seq;
	memcpy(f->ts, m->ts, sizeof(f->ts));
	memcpy(f->seq, m->seq, sizeof(f->seq));
	f->sqid = m->sqid;
	f->cid = m->cid;
	f->mask = m->mask;
	f->host = -1;
	if (m->mask & (1u << HMB_PHASE_FETCH)) {
		/* fwmodel reads slba from the fetch when the dictionary has it */
		f->slba = m->slba;
		f->have_slba = hmb_dict_phase_event(c->dict, HMB_PHASE_FETCH) &&
			hmb_dict_field(hmb_dict_phase_event(c->dict,
							    HMB_PHASE_FETCH),
				       "slba");
	}
	if ((m->mask & (1u << HMB_PHASE_FETCH)) &&
	    (m->mask & (1u << HMB_PHASE_CQE_POSTED)))
		c->fw_complete++;
}

static int load_fw(struct corr *c, const char *path)
{
	struct input_opts iopts = { .max_gaps = 0 };
	struct fwm_ops ops = { .cmd_end = on_end };
	struct hmb_error err = { 0 };
	struct fwload l = { .c = c };
	struct hmb_record rec;
	struct fwmodel m;
	struct input in;
	int rc;

	if (input_open(&in, path, &iopts))
		return EXIT_BADINPUT;
	if (fwm_init(&m, c->dict, &ops, &l)) {
		input_close(&in);
		errorf("out of memory");
		return EXIT_BADINPUT;
	}
	while ((rc = input_next(&in, &rec, &err)) > 0 && !l.oom)
		fwm_add(&m, &rec);
	fwm_finish(&m);
	c->fw_lost = in.acct->lost;
	if (rc < 0)
		input_report(&in, &err);
	input_close(&in);
	if (l.oom) {
		errorf("out of memory");
		return EXIT_BADINPUT;
	}
	return rc < 0 ? EXIT_BADINPUT : 0;
}

/* --------------------------------------------------------- sorting */

static int cmp_fw(const void *a, const void *b)
{
	const struct fw_cmd *x = a, *y = b;
	uint32_t kx = (uint32_t)x->sqid << 16 | x->cid;
	uint32_t ky = (uint32_t)y->sqid << 16 | y->cid;

	if (kx != ky)
		return kx < ky ? -1 : 1;
	return x->first < y->first ? -1 : x->first > y->first;
}

static int cmp_host(const void *a, const void *b)
{
	const struct host_cmd *x = a, *y = b;
	uint32_t kx = (uint32_t)x->qid << 16 | x->cid;
	uint32_t ky = (uint32_t)y->qid << 16 | y->cid;

	if (kx != ky)
		return kx < ky ? -1 : 1;
	return x->submit_ns < y->submit_ns ? -1 : x->submit_ns > y->submit_ns;
}

static int cmp_submit(const void *a, const void *b, void *ctx)
{
	const struct corr *c = ctx;
	uint64_t x = c->host.v[*(const size_t *)a].submit_ns;
	uint64_t y = c->host.v[*(const size_t *)b].submit_ns;

	return x < y ? -1 : x > y;
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return x < y ? -1 : x > y;
}

/* First firmware command with key @key (sqid << 16 | cid). */
static size_t fw_lower(const struct corr *c, uint32_t key)
{
	size_t lo = 0, hi = c->nfw;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		uint32_t k = (uint32_t)c->fw[mid].sqid << 16 | c->fw[mid].cid;

		if (k < key)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static bool same_key(const struct fw_cmd *f, const struct host_cmd *h)
{
	return f->sqid == h->qid && f->cid == h->cid;
}

static bool slba_ok(const struct fw_cmd *f, const struct host_cmd *h)
{
	return !f->have_slba || f->slba == h->slba;
}

/* ---------------------------------------------------------- passes */

/* Coarse offset of the host commands @set[0..n) (unmatched fw only). */
static int coarse_offset(struct corr *c, const size_t *set, size_t ns)
{
	size_t stride = ns / 512 + 1, n = 0, best = 0, bi = 0;
	int64_t *cand = malloc(MAX_CANDS * sizeof(*cand));

	if (!cand) {
		errorf("out of memory");
		return -1;
	}
	for (size_t s = 0; s < ns && n < MAX_CANDS; s += stride) {
		const struct host_cmd *h = &c->host.v[set[s]];

		for (size_t j = fw_lower(c, (uint32_t)h->qid << 16 | h->cid);
		     j < c->nfw && same_key(&c->fw[j], h) && n < MAX_CANDS; j++)
			if (slba_ok(&c->fw[j], h) && c->fw[j].host < 0)
				cand[n++] = (int64_t)h->submit_ns -
					    (int64_t)c->fw[j].first;
	}
	if (!n) {
		free(cand);
		return 1;
	}
	qsort(cand, n, sizeof(*cand), cmp_i64);
	/* densest window of COARSE_WIN */
	for (size_t i = 0, j = 0; i < n; i++) {
		while (cand[i] - cand[j] > COARSE_WIN)
			j++;
		if (i - j + 1 > best) {
			best = i - j + 1;
			bi = j;
		}
	}
	c->coarse_off = (double)cand[bi + best / 2];
	free(cand);
	return 0;
}

static double seg_map(const struct corr_seg *g, uint64_t fw)
{
	return (double)fw + g->off_ns + g->drift * ((double)fw - g->ref);
}

/* Record seqs wrap at 2^32: their order is serial-number arithmetic. */
static int32_t seq_diff(uint32_t a, uint32_t b)
{
	return (int32_t)(a - b);
}

/*
 * The clock of record @seq of a command of segment @g: its own, or the
 * neighbour's when the record lies on the other side of a step between
 * them (a command the firmware was working on when its clock stepped).
 */
static const struct corr_seg *seg_across(const struct corr *c,
					 const struct corr_seg *g, uint32_t seq)
{
	size_t k = (size_t)(g - c->segs);

	if (k >= c->nseg)	/* not one of c->segs */
		return g;
	if (g->step_next && k + 1 < c->nseg && c->segs[k + 1].valid &&
	    seq_diff(seq, g->step_seq) >= 0)
		return &c->segs[k + 1];
	if (k > 0 && c->segs[k - 1].step_next && c->segs[k - 1].valid &&
	    seq_diff(seq, c->segs[k - 1].step_seq) < 0)
		return &c->segs[k - 1];
	return g;
}

/* The error bound for a command of segment @k (and its step neighbours). */
static double seg_err(const struct corr *c, int32_t k)
{
	double e = c->segs[k].off_err_ns;

	if (c->segs[k].step_next && (size_t)k + 1 < c->nseg &&
	    c->segs[k + 1].off_err_ns > e)
		e = c->segs[k + 1].off_err_ns;
	if (k > 0 && c->segs[k - 1].step_next && c->segs[k - 1].off_err_ns > e)
		e = c->segs[k - 1].off_err_ns;
	return e;
}

/*
 * How a join maps firmware times to host time: by the coarse offset, by
 * one segment's clock, by two segments' clocks on either side of a step
 * at a record, or by the run's estimate (which knows its step by record).
 */
struct mapper {
	const struct corr_seg *g;	/* NULL: the coarse offset */
	const struct corr_seg *g2;	/* the clock from record step_seq on */
	uint32_t step_seq;
	const struct hmb_clock *k;	/* the run's estimate instead */
	bool split;			/* k: records inside its step's bracket
					 * may be on either clock */
	double tol;			/* window widening, at least */
};

/* Host time of @ts on the run estimate's clock before or after its step. */
static double run_map(const struct hmb_clock *k, uint64_t ts, bool old)
{
	if (old)
		return (double)ts + k->prev_off +
		       k->prev_drift * ((double)ts - k->prev_ref);
	return (double)ts + hmb_clock_offset_at(k, ts);
}

static bool in_step_bracket(const struct hmb_clock *k, uint32_t seq)
{
	return k->brk_on && seq_diff(seq, k->brk_lo) >= 0 &&
	       seq_diff(seq, k->brk_hi) <= 0;
}

/*
 * Does @f fit @h with its first and last records each on the clock the
 * step leaves them, or, inside the step's bracket (where the record the
 * clock stepped at is not certain), on either (in seq order: old before
 * new)?  The fit whose fetch is closest to the submit: *d, or false.
 */
static bool fits_split(const struct hmb_clock *k, const struct fw_cmd *f,
		       const struct host_cmd *h, double tol, double *d)
{
	bool a0 = in_step_bracket(k, f->first_seq);
	bool a1 = in_step_bracket(k, f->last_seq);
	bool o0 = hmb_clock_before_step(k, f->first_seq);
	bool o1 = hmb_clock_before_step(k, f->last_seq);
	bool found = false;

	for (int opt = 0; opt < 3; opt++) {
		bool old0 = opt < 2, old1 = opt < 1;
		double m0, m1;

		if ((!a0 && old0 != o0) || (!a1 && old1 != o1))
			continue;
		m0 = run_map(k, f->first, old0);
		m1 = run_map(k, f->last, old1);
		if (m0 < (double)h->submit_ns - tol ||
		    m1 > (double)h->complete_ns + tol)
			continue;
		if (!found || fabs(m0 - (double)h->submit_ns) < *d)
			*d = fabs(m0 - (double)h->submit_ns);
		found = true;
	}
	return found;
}

static double map_at(const struct corr *c, const struct mapper *mp,
		     uint64_t ts, uint32_t seq, double *tol)
{
	*tol = mp->tol;
	if (mp->k) {
		double t = 4 * hmb_clock_err_at(mp->k, seq);

		if (t > *tol)
			*tol = t;
		return hmb_clock_map(mp->k, ts, seq);
	}
	if (mp->g2 && seq_diff(seq, mp->step_seq) >= 0)
		return seg_map(mp->g2, ts);
	return mp->g ? seg_map(mp->g, ts) : (double)ts + c->coarse_off;
}

/*
 * The unused firmware command with @h's keys whose records, mapped by
 * @mp, lie in @h's host window (widened by the tolerance) and whose fetch
 * is closest to the submit; -1 if none.
 */
static long closest_fw(const struct corr *c, const struct host_cmd *h,
		       const struct mapper *mp)
{
	double best = 0;
	long bj = -1;

	for (size_t j = fw_lower(c, (uint32_t)h->qid << 16 | h->cid);
	     j < c->nfw && same_key(&c->fw[j], h); j++) {
		const struct fw_cmd *f = &c->fw[j];
		double m0, m1, t0, t1, d = 0;

		if (f->host >= 0 || !slba_ok(f, h))
			continue;
		if (mp->split) {
			double e = mp->k->off_err_ns > mp->k->prev_err ?
				   mp->k->off_err_ns : mp->k->prev_err;

			if (!fits_split(mp->k, f, h, 4 * e > mp->tol ? 4 * e :
					mp->tol, &d))
				continue;
			if (bj < 0 || d < best) {
				best = d;
				bj = (long)j;
			}
			continue;
		}
		m0 = map_at(c, mp, f->first, f->first_seq, &t0);
		/* one clock: the candidates come in firmware time order */
		if (!mp->k && !mp->g2 && m0 > (double)h->complete_ns + t0)
			break;
		m1 = map_at(c, mp, f->last, f->last_seq, &t1);
		if (m0 < (double)h->submit_ns - t0 ||
		    m1 > (double)h->complete_ns + t1)
			continue;
		d = fabs(m0 - (double)h->submit_ns);
		if (bj < 0 || d < best) {
			best = d;
			bj = (long)j;
		}
	}
	return bj;
}

static void pair_up(struct corr *c, size_t i, long j)
{
	c->hc[i].fw = (int32_t)j;
	c->fw[j].host = (int32_t)i;
}

/*
 * Join the host commands @set[0..n) with the closest fitting unused
 * firmware command: mapped by @g (else shifted by the coarse offset),
 * within the host window widened by @tol ns.
 */
static void join(struct corr *c, const size_t *set, size_t ns,
		 const struct corr_seg *g, double tol)
{
	const struct mapper mp = { .g = g, .tol = tol };

	for (size_t s = 0; s < ns; s++) {
		long j;

		if (c->hc[set[s]].fw >= 0)
			continue;
		j = closest_fw(c, &c->host.v[set[s]], &mp);
		if (j >= 0)
			pair_up(c, set[s], j);
	}
}

static void unjoin(struct corr *c, const size_t *set, size_t ns)
{
	for (size_t s = 0; s < ns; s++) {
		struct corr_cmd *r = &c->hc[set[s]];

		if (r->fw >= 0)
			c->fw[r->fw].host = -1;
		r->fw = -1;
	}
}

static bool fw_whole(const struct fw_cmd *f)
{
	return (f->mask & (1u << HMB_PHASE_FETCH)) &&
	       (f->mask & (1u << HMB_PHASE_CQE_POSTED));
}

/*
 * The clock estimate of the matched commands among @set (time order), in
 * a fresh estimator (reset keeps the drift and the pre-step estimate, which
 * belong to another chunk here).  @stream: solve as
 * the commands come, as the agent does, so that the estimator finds a
 * clock step and starts again after it (with every record noted, so the
 * step is placed at its record).  On allocation failure *k is not valid.
 */
static void estimate(struct corr *c, struct hmb_clock *k, const size_t *set,
		     size_t ns, bool stream)
{
	size_t added = 0;

	hmb_clock_free(k);
	if (hmb_clock_init(k, ns + 16)) {
		memset(k, 0, sizeof(*k));
		return;
	}
	for (size_t s = 0; s < ns; s++) {
		size_t i = set[s];
		const struct corr_cmd *r = &c->hc[i];
		const struct fw_cmd *f;

		if (r->fw < 0)
			continue;
		f = &c->fw[r->fw];
		if (stream)
			for (int p = HMB_PHASE_FETCH; p < HMB_PHASE_COUNT; p++)
				if (f->mask & (1u << p))
					hmb_clock_note(k, f->seq[p], f->ts[p]);
		if (!fw_whole(f))
			continue;
		hmb_clock_add(k, c->host.v[i].submit_ns,
			      c->host.v[i].complete_ns,
			      f->ts[HMB_PHASE_FETCH],
			      f->ts[HMB_PHASE_CQE_POSTED],
			      f->seq[HMB_PHASE_FETCH],
			      f->seq[HMB_PHASE_CQE_POSTED]);
		if (stream && ++added % 1000 == 0)
			hmb_clock_solve(k);
	}
	hmb_clock_solve(k);
}

static int add_seg(struct corr *c, const struct hmb_clock *k,
		   const size_t *set, size_t ns)
{
	struct corr_seg *g;

	if (c->nseg == c->capseg) {
		size_t cap = c->capseg ? c->capseg * 2 : 16;
		struct corr_seg *v = realloc(c->segs, cap * sizeof(*v));

		if (!v)
			return -1;
		c->segs = v;
		c->capseg = cap;
	}
	g = &c->segs[c->nseg];
	memset(g, 0, sizeof(*g));
	g->valid = k->valid;
	if (k->valid) {
		g->off_ns = k->off_ns;
		g->drift = k->drift;
		g->ref = k->ref;
		g->off_err_ns = k->off_err_ns;
		g->used = k->used;
	} else {
		g->off_ns = c->coarse_off;
		g->off_err_ns = COARSE_WIN;
	}
	g->first_submit = UINT64_MAX;
	for (size_t s = 0; s < ns; s++)
		if (c->hc[set[s]].fw >= 0) {
			c->seg_of[set[s]] = (int32_t)c->nseg;
			if (c->host.v[set[s]].submit_ns < g->first_submit)
				g->first_submit = c->host.v[set[s]].submit_ns;
		}
	c->nseg++;
	return 0;
}

/*
 * The passes on one chunk: coarse offset, wide join, estimate, tight join,
 * estimate; then again for what is left unmatched (a clock step), at most
 * four times.  @set is in time order and is reordered: matched first.
 */
static int chunk(struct corr *c, size_t *set, size_t ns, struct hmb_clock *k)
{
	for (int round = 0; round < 4 && ns; round++) {
		size_t m = 0;
		int rc = coarse_offset(c, set, ns);

		if (rc)
			return rc < 0 ? -1 : 0;
		join(c, set, ns, NULL, PASS2_TOL);
		estimate(c, k, set, ns, false);
		for (int pass = 0; pass < 2 && k->valid; pass++) {
			struct corr_seg g = {
				.off_ns = k->off_ns, .drift = k->drift,
				.ref = k->ref,
			};
			double tol = 4 * k->off_err_ns;

			unjoin(c, set, ns);
			join(c, set, ns, &g, tol > MIN_TOL ? tol : MIN_TOL);
			estimate(c, k, set, ns, false);
		}
		/* matched to the front (stable, keeps time order) */
		for (size_t s = 0; s < ns; s++)
			if (c->hc[set[s]].fw >= 0)
				m++;
		if (!m)
			return 0;
		{
			size_t *tmp = malloc(ns * sizeof(*tmp)), a = 0, b = m;

			if (!tmp)
				return -1;
			for (size_t s = 0; s < ns; s++)
				tmp[c->hc[set[s]].fw >= 0 ? a++ : b++] = set[s];
			memcpy(set, tmp, ns * sizeof(*set));
			free(tmp);
		}
		if (add_seg(c, k, set, m))
			return -1;
		set += m;
		ns -= m;
		if (ns < 32)	/* too few for a clock of their own */
			return 0;
	}
	return 0;
}

static int cmp_seg(const void *a, const void *b)
{
	const struct corr_seg *x = a, *y = b;

	return x->first_submit < y->first_submit ? -1 :
	       x->first_submit > y->first_submit;
}

static void breakdown(struct corr *c)
{

	c->matched = c->partial = c->unmatched = 0;
	c->in_window = c->in_window_err = c->outside = c->other_ctrl = 0;
	c->across_step = 0;
	for (size_t i = 0; i < c->host.n; i++) {
		const struct host_cmd *h = &c->host.v[i];
		struct corr_cmd *r = &c->hc[i];
		const struct fw_cmd *f;

		for (int k = 0; k < CX_COUNT; k++)
			r->x[k] = -1;
		r->in_window = r->in_window_err = false;
		r->x[CX_HOST_TOTAL] = (int64_t)(h->complete_ns - h->submit_ns);
		if (h->ctrl != c->ctrl) {
			c->other_ctrl++;
			r->match = CM_UNMATCHED;
			continue;
		}
		if (r->fw < 0) {
			r->match = CM_UNMATCHED;
			c->unmatched++;
			continue;
		}
		f = &c->fw[r->fw];
		r->match = fw_whole(f) ? CM_MATCHED : CM_PARTIAL;
		if (r->match == CM_MATCHED) {
			c->matched++;
			r->x[CX_FW_TOTAL] = (int64_t)(f->ts[HMB_PHASE_CQE_POSTED] -
						      f->ts[HMB_PHASE_FETCH]);
		} else {
			c->partial++;
		}
		if (!corr_placed(c, i))
			continue;
		if (c->seg_of[i] >= 0 ?
		    seg_across(c, &c->segs[c->seg_of[i]], f->first_seq) !=
		    seg_across(c, &c->segs[c->seg_of[i]], f->last_seq) :
		    hmb_clock_before_step(&c->clk, f->first_seq) !=
		    hmb_clock_before_step(&c->clk, f->last_seq))
			c->across_step++;
		if (f->mask & (1u << HMB_PHASE_FETCH))
			r->x[CX_SUBMIT_TO_FETCH] = (int64_t)
				(corr_map(c, i, f->ts[HMB_PHASE_FETCH],
					  f->seq[HMB_PHASE_FETCH]) -
				 (double)h->submit_ns);
		if (f->mask & (1u << HMB_PHASE_CQE_POSTED))
			r->x[CX_CQE_TO_COMPLETE] = (int64_t)
				((double)h->complete_ns -
				 corr_map(c, i, f->ts[HMB_PHASE_CQE_POSTED],
					  f->seq[HMB_PHASE_CQE_POSTED]));
		{
			double m0 = corr_map(c, i, f->first, f->first_seq);
			double m1 = corr_map(c, i, f->last, f->last_seq);
			double err = c->seg_of[i] >= 0 ?
				seg_err(c, c->seg_of[i]) : c->clk.off_err_ns;

			r->in_window = m0 >= (double)h->submit_ns &&
				       m1 <= (double)h->complete_ns;
			r->in_window_err = m0 >= (double)h->submit_ns - err &&
					   m1 <= (double)h->complete_ns + err;
		}
		if (r->in_window)
			c->in_window++;
		else if (r->in_window_err)
			c->in_window_err++;
		else
			c->outside++;
	}
	c->fw_unmatched = 0;
	for (size_t j = 0; j < c->nfw; j++)
		if (c->fw[j].host < 0)
			c->fw_unmatched++;
}

/* The segment clock of host command @i, or NULL for the global one. */
static const struct corr_seg *seg_for(const struct corr *c, size_t i)
{
	int32_t g = c->seg_of ? c->seg_of[i] : -1;

	if (c->place_run)
		return NULL;

	return g >= 0 && c->segs[g].valid ? &c->segs[g] : NULL;
}

bool corr_placed(const struct corr *c, size_t i)
{
	return seg_for(c, i) || c->clk.valid;
}

double corr_map(const struct corr *c, size_t i, uint64_t fw, uint32_t seq)
{
	const struct corr_seg *g = seg_for(c, i);

	if (g)
		g = seg_across(c, g, seq);
	return g ? seg_map(g, fw) : hmb_clock_map(&c->clk, fw, seq);
}

double corr_unmap(const struct corr *c, size_t i, uint64_t h)
{
	const struct corr_seg *g = seg_for(c, i);
	double off = g ? g->off_ns : c->clk.off_ns;
	double drift = g ? g->drift : c->clk.drift;
	double ref = g ? g->ref : c->clk.ref;

	/* host = fw + off + drift * (fw - ref)  =>  solve for fw */
	return ((double)h - off + drift * ref) / (1.0 + drift);
}

/* A firmware record of a matched command near a step, for step_boundary. */
struct step_ev {
	uint32_t seq;
	int64_t ts;
	int side;		/* -1: fits the old clock only, 1: new only */
};

static int cmp_step_ev(const void *a, const void *b)
{
	int32_t d = seq_diff(((const struct step_ev *)a)->seq,
			     ((const struct step_ev *)b)->seq);

	return d < 0 ? -1 : d > 0;
}

static double seg_tol(const struct corr_seg *g)
{
	return 4 * g->off_err_ns > MIN_TOL ? 4 * g->off_err_ns : MIN_TOL;
}

/*
 * The firmware clock stepped between segments @k and @k+1: at which
 * record?  Every record of their matched commands is tried on both clocks
 * against its command's host window; the step is the seq that leaves the
 * most records that fit only the old clock before it and only the new one
 * after it.  Of the seqs that do equally well (the records between fit
 * both or neither), the one where the firmware times jump furthest, ahead
 * for a forward step or back for a backward one.  Records are numbered in
 * the order the firmware wrote them, so one seq divides the two clocks
 * even when a backward step repeats firmware times.
 */
static int step_boundary(struct corr *c, size_t k)
{
	struct corr_seg *a = &c->segs[k], *b = &c->segs[k + 1];
	double ta = seg_tol(a), tb = seg_tol(b), t = b->ref;
	bool fwd = (b->off_ns + b->drift * (t - b->ref)) <
		   (a->off_ns + a->drift * (t - a->ref));
	struct step_ev *ev;
	size_t n = 0, cap = 0, best = 0, i;
	long score = 0, top = 0, sc0;
	size_t i1, i2 = 0;
	uint32_t lo, hi, step;
	double jump = 0;

	for (size_t h = 0; h < c->host.n; h++)
		if ((c->seg_of[h] == (int32_t)k || c->seg_of[h] == (int32_t)k + 1) &&
		    c->hc[h].fw >= 0)
			cap += HMB_PHASE_COUNT;
	if (!cap)
		return 0;
	ev = malloc(cap * sizeof(*ev));
	if (!ev)
		return -1;
	for (size_t h = 0; h < c->host.n; h++) {
		const struct host_cmd *hc = &c->host.v[h];
		const struct fw_cmd *f;

		if ((c->seg_of[h] != (int32_t)k && c->seg_of[h] != (int32_t)k + 1) ||
		    c->hc[h].fw < 0)
			continue;
		f = &c->fw[c->hc[h].fw];
		for (int p = HMB_PHASE_FETCH; p < HMB_PHASE_COUNT; p++) {
			double ma, mb;
			bool ina, inb;

			if (!(f->mask & (1u << p)))
				continue;
			ma = seg_map(a, f->ts[p]);
			mb = seg_map(b, f->ts[p]);
			ina = ma >= (double)hc->submit_ns - ta &&
			      ma <= (double)hc->complete_ns + ta;
			inb = mb >= (double)hc->submit_ns - tb &&
			      mb <= (double)hc->complete_ns + tb;
			ev[n].seq = f->seq[p];
			ev[n].ts = (int64_t)f->ts[p];
			ev[n].side = ina && !inb ? -1 : inb && !ina ? 1 : 0;
			n++;
		}
	}
	if (!n) {
		free(ev);
		return 0;
	}
	qsort(ev, n, sizeof(*ev), cmp_step_ev);
	/*
	 * score(i), a step before ev[i]: old-only records before it plus
	 * new-only ones from it on.  The positions with the best score span
	 * [i1, i2]: the step lies after ev[i1 - 1] and at or before ev[i2].
	 */
	for (i = 0; i < n; i++)
		score += ev[i].side > 0;
	sc0 = score;
	top = score;
	for (i = 1; i <= n; i++) {
		score += (ev[i - 1].side < 0) - (ev[i - 1].side > 0);
		if (score > top)
			top = score;
	}
	i1 = n + 1;
	for (i = 0, score = sc0; i <= n; i++) {
		if (i > 0)
			score += (ev[i - 1].side < 0) - (ev[i - 1].side > 0);
		if (score != top)
			continue;
		if (i1 == n + 1)
			i1 = i;
		i2 = i;
	}
	lo = i1 > 0 ? ev[i1 - 1].seq : ev[0].seq - (1u << 24);
	hi = i2 < n ? ev[i2].seq : ev[n - 1].seq + (1u << 24);
	step = i1 < n ? ev[i1].seq : ev[n - 1].seq + 1;
	free(ev);
	/*
	 * Between them, every record of the dump (of commands matched or
	 * not): the step is where their firmware times jump furthest.
	 */
	n = 0;
	cap = 0;
	ev = NULL;
	for (size_t j = 0; j < c->nfw; j++) {
		const struct fw_cmd *f = &c->fw[j];

		if (seq_diff(f->last_seq, lo) < 0 || seq_diff(f->first_seq, hi) > 0)
			continue;
		for (int p = HMB_PHASE_FETCH; p < HMB_PHASE_COUNT; p++) {
			if (!(f->mask & (1u << p)) || seq_diff(f->seq[p], lo) < 0 ||
			    seq_diff(f->seq[p], hi) > 0)
				continue;
			if (n == cap) {
				size_t nc = cap ? cap * 2 : 256;
				struct step_ev *v = realloc(ev, nc * sizeof(*v));

				if (!v) {
					free(ev);
					return -1;
				}
				ev = v;
				cap = nc;
			}
			ev[n].seq = f->seq[p];
			ev[n].ts = (int64_t)f->ts[p];
			ev[n].side = 0;
			n++;
		}
	}
	if (n >= 2) {
		qsort(ev, n, sizeof(*ev), cmp_step_ev);
		for (i = 1; i < n; i++) {
			double d = (double)(ev[i].ts - ev[i - 1].ts);

			if (!fwd)
				d = -d;
			if (!best || d > jump) {
				jump = d;
				best = i;
			}
		}
		step = ev[best].seq;
	}
	free(ev);
	a->step_next = true;
	a->step_seq = step;
	return 0;
}

/*
 * Host commands still unmatched, tried with @mp; those joined take segment
 * @before (first record before @mp's step) or @after.
 */
static size_t join_left(struct corr *c, const struct mapper *mp,
			int32_t before, int32_t after)
{
	size_t joined = 0;

	for (size_t i = 0; i < c->host.n; i++) {
		long j;

		if (c->hc[i].fw >= 0 || c->host.v[i].ctrl != c->ctrl)
			continue;
		j = closest_fw(c, &c->host.v[i], mp);
		if (j < 0)
			continue;
		pair_up(c, i, j);
		c->seg_of[i] = mp->g2 && seq_diff(c->fw[j].first_seq,
						  mp->step_seq) >= 0 ?
			       after : before;
		joined++;
	}
	return joined;
}

/*
 * Host commands still unmatched next to a step between two segments: try
 * their firmware commands with the records before the step on the old
 * clock and the rest on the new one (a command the firmware was working
 * on when its clock stepped fits neither clock alone).
 */
static void join_across(struct corr *c)
{
	for (size_t k = 0; k + 1 < c->nseg; k++) {
		const struct corr_seg *a = &c->segs[k], *b = &c->segs[k + 1];
		const struct mapper mp = {
			.g = a, .g2 = b, .step_seq = a->step_seq,
			.tol = seg_tol(a) > seg_tol(b) ? seg_tol(a) : seg_tol(b),
		};

		if (a->step_next && a->valid && b->valid)
			join_left(c, &mp, (int32_t)k, (int32_t)k + 1);
	}
}

/*
 * Host commands still unmatched when the run's own estimate (streamed
 * like the agent's, so it found the step and the record it happened at)
 * knows a step: try them with every record mapped on its own side of it,
 * as the live agent places them.  They keep no segment: the run's
 * estimate maps them.
 */
static size_t join_stepped(struct corr *c)
{
	const struct mapper mp = { .k = &c->clk, .split = true, .tol = MIN_TOL };

	if (c->clk.valid && c->clk.have_prev)
		return join_left(c, &mp, -1, -1);
	return 0;
}

/*
 * The run's estimate, made as the agent makes it: the matched commands
 * streamed through the estimator in time order, solved every 1000, so
 * that it finds a clock step; then every record of the dump, matched or
 * not, to place the step at its record.
 */
static int run_estimate(struct corr *c)
{
	size_t *set = malloc((c->host.n ? c->host.n : 1) * sizeof(*set));
	size_t n = 0;

	if (!set)
		return -1;
	for (size_t o = 0; o < c->host.n; o++)
		if (c->hc[c->order[o]].fw >= 0)
			set[n++] = c->order[o];
	estimate(c, &c->clk, set, n, true);
	free(set);
	if (c->clk.have_prev) {
		for (size_t j = 0; j < c->nfw; j++)
			for (int p = HMB_PHASE_FETCH; p < HMB_PHASE_COUNT; p++)
				if (c->fw[j].mask & (1u << p))
					hmb_clock_note(&c->clk, c->fw[j].seq[p],
						       c->fw[j].ts[p]);
		hmb_clock_solve(&c->clk);
	}
	return 0;
}

int corr_run(struct corr *c, const char *dump, const char *host,
	     const struct hmb_dict *dict, long ctrl)
{
	int rc;

	memset(c, 0, sizeof(*c));
	c->dict = dict;
	if (hmb_clock_init(&c->clk, 1)) {
		errorf("out of memory");
		return EXIT_BADINPUT;
	}
	rc = load_fw(c, dump);
	if (!rc)
		rc = hostev_load(&c->host, host);
	if (rc)
		goto fail;
	if (ctrl >= 0) {
		c->ctrl = (uint32_t)ctrl;
	} else if (c->host.nctrl == 1) {
		c->ctrl = c->host.ctrls[0];
	} else {
		errorf("%s: commands of %u controllers; say which one the dump belongs to with --ctrl N (nvmeN)",
		       host, c->host.nctrl);
		rc = EXIT_USAGE;
		goto fail;
	}
	/* the clock window holds every matched command */
	hmb_clock_free(&c->clk);
	if (hmb_clock_init(&c->clk, c->host.n + 16)) {
		errorf("out of memory");
		rc = EXIT_BADINPUT;
		goto fail;
	}
	c->hc = calloc(c->host.n ? c->host.n : 1, sizeof(*c->hc));
	if (!c->hc) {
		errorf("out of memory");
		rc = EXIT_BADINPUT;
		goto fail;
	}
	qsort(c->fw, c->nfw, sizeof(*c->fw), cmp_fw);
	qsort(c->host.v, c->host.n, sizeof(*c->host.v), cmp_host);
	c->order = malloc((c->host.n ? c->host.n : 1) * sizeof(*c->order));
	if (!c->order) {
		errorf("out of memory");
		rc = EXIT_BADINPUT;
		goto fail;
	}
	for (size_t i = 0; i < c->host.n; i++)
		c->order[i] = i;
	qsort_r(c->order, c->host.n, sizeof(*c->order), cmp_submit, c);
	c->seg_of = malloc((c->host.n ? c->host.n : 1) * sizeof(*c->seg_of));
	if (!c->seg_of) {
		errorf("out of memory");
		rc = EXIT_BADINPUT;
		goto fail;
	}
	for (size_t i = 0; i < c->host.n; i++) {
		c->hc[i].fw = -1;
		c->seg_of[i] = -1;
	}
	{
		/* this controller's commands in time order, cut into chunks */
		size_t *set = malloc((c->host.n ? c->host.n : 1) * sizeof(*set));
		size_t n = 0, pos = 0;
		struct hmb_clock k;

		if (!set || hmb_clock_init(&k, c->host.n + 16)) {
			free(set);
			errorf("out of memory");
			rc = EXIT_BADINPUT;
			goto fail;
		}
		for (size_t o = 0; o < c->host.n; o++)
			if (c->host.v[c->order[o]].ctrl == c->ctrl)
				set[n++] = c->order[o];
		while (pos < n && !rc) {
			size_t end = pos;
			uint64_t t0 = c->host.v[set[pos]].submit_ns;

			while (end < n && (end - pos < CHUNK_MIN ||
					   c->host.v[set[end]].submit_ns - t0 < CHUNK_NS))
				end++;
			/* a short tail joins this chunk */
			if (n - end < CHUNK_MIN)
				end = n;
			if (chunk(c, set + pos, end - pos, &k))
				rc = EXIT_BADINPUT;
			pos = end;
		}
		hmb_clock_free(&k);
		if (rc) {
			free(set);
			errorf("out of memory");
			goto fail;
		}
		free(set);
		if (run_estimate(c)) {
			errorf("out of memory");
			rc = EXIT_BADINPUT;
			goto fail;
		}
	}
	/* segments in time order; count the offset jumps between them */
	{
		int32_t *map = malloc((c->nseg ? c->nseg : 1) * sizeof(*map));
		struct corr_seg *old = malloc((c->nseg ? c->nseg : 1) * sizeof(*old));

		if (!map || !old) {
			free(map);
			free(old);
			errorf("out of memory");
			rc = EXIT_BADINPUT;
			goto fail;
		}
		memcpy(old, c->segs, c->nseg * sizeof(*old));
		qsort(c->segs, c->nseg, sizeof(*c->segs), cmp_seg);
		for (size_t a = 0; a < c->nseg; a++)
			for (size_t b = 0; b < c->nseg; b++)
				if (memcmp(&old[a], &c->segs[b], sizeof(*old)) == 0)
					map[a] = (int32_t)b;
		for (size_t i = 0; i < c->host.n; i++)
			if (c->seg_of[i] >= 0)
				c->seg_of[i] = map[c->seg_of[i]];
		free(map);
		free(old);
		for (size_t g = 1; g < c->nseg; g++) {
			const struct corr_seg *a = &c->segs[g - 1], *b = &c->segs[g];
			double t = b->ref, jump;

			if (!a->valid || !b->valid)
				continue;
			/*
			 * At both segments' reference times: a step shows at
			 * each, a short segment's poor drift only far from
			 * its own.
			 */
			jump = fabs(seg_map(b, (uint64_t)t) - seg_map(a, (uint64_t)t));
			t = a->ref;
			if (fabs(seg_map(b, (uint64_t)t) - seg_map(a, (uint64_t)t)) < jump)
				jump = fabs(seg_map(b, (uint64_t)t) -
					    seg_map(a, (uint64_t)t));
			if (jump > 4 * (a->off_err_ns + b->off_err_ns) + MIN_TOL) {
				c->steps++;
				if (step_boundary(c, g - 1)) {
					rc = EXIT_BADINPUT;
					errorf("out of memory");
					goto fail;
				}
			}
		}
		join_across(c);
		/*
		 * Commands next to the step that no segment explained: with
		 * the run's estimate, and if it took any, the estimate again
		 * with them (they say best where the step is).
		 */
		if (join_stepped(c) && run_estimate(c)) {
			errorf("out of memory");
			rc = EXIT_BADINPUT;
			goto fail;
		}
		/*
		 * Placement: the run's estimate, streamed as the agent does
		 * (it follows one step, record by record), unless it saw more
		 * than one step or no single line fits the run; then each
		 * command's chunk segment.
		 */
		c->place_run = c->clk.valid && c->clk.consistent &&
			       c->clk.steps <= 1;
	}
	rc = 0;
	breakdown(c);
	return 0;
fail:
	corr_free(c);
	return rc;
}

void corr_free(struct corr *c)
{
	hmb_clock_free(&c->clk);
	hostev_free(&c->host);
	free(c->fw);
	free(c->hc);
	free(c->order);
	free(c->segs);
	free(c->seg_of);
	c->segs = NULL;
	c->seg_of = NULL;
	c->fw = NULL;
	c->hc = NULL;
	c->order = NULL;
}

/* ---------------------------------------------------------- output */

static void log2_hist(FILE *f, const struct corr *c, int x, const char *title)
{
	uint64_t slot[40] = { 0 }, max = 0, n = 0;
	int hi = -1;

	for (size_t i = 0; i < c->host.n; i++) {
		int64_t v = c->hc[i].x[x];
		uint64_t us;
		int s = 0;

		if (v < 0 || (x != CX_HOST_TOTAL && c->hc[i].match == CM_UNMATCHED))
			continue;
		us = (uint64_t)v / 1000;
		while (us > 0 && s < 39) {
			us >>= 1;
			s++;
		}
		slot[s]++;
		n++;
		if (s > hi)
			hi = s;
	}
	fprintf(f, "\n%s (%llu commands)\n", title, (unsigned long long)n);
	if (!n)
		return;
	for (int s = 0; s <= hi; s++)
		if (slot[s] > max)
			max = slot[s];
	fprintf(f, "%24s : %-10s |%-40s|\n", "usecs", "count", "distribution");
	for (int s = 0; s <= hi; s++) {
		unsigned long long lo = s ? 1ull << (s - 1) : 0;
		unsigned long long up = s ? (1ull << s) - 1 : 0;
		int w = (int)(40 * slot[s] / max);
		char range[48];

		snprintf(range, sizeof(range), "%llu -> %llu", lo, up);
		fprintf(f, "%24s : %-10llu |%-*.*s%*s|\n", range,
			(unsigned long long)slot[s], w, w,
			"****************************************", 40 - w, "");
	}
}

static void print_clock_text(FILE *f, const struct corr *c)
{
	const struct hmb_clock *k = &c->clk;

	if (!k->valid) {
		fprintf(f, "clock fw->host: no estimate (%llu matched commands; %zu needed)\n",
			(unsigned long long)k->added, k->min_points);
		return;
	}
	fprintf(f, "clock fw->host: host = fw %+.3f us (±%.3f us) at fw %.6f s, drift ",
		k->off_ns / 1e3, k->off_err_ns / 1e3, k->ref / 1e9);
	if (k->drift_err < 0)
		fprintf(f, "not estimated (matched span under 100 ms)");
	else
		fprintf(f, "%+.3f ppm (±%.3f)", k->drift * 1e6,
			k->drift_err * 1e6);
	fprintf(f, "; %zu commands, %zu trimmed per side%s\n",
		k->used, k->trimmed, k->consistent ? "" : ", INCONSISTENT bounds");
	if (k->have_prev)
		fprintf(f, "clock step: %+.3f us at firmware record seq %u (fw %.6f s); records before it on the earlier estimate\n",
			k->step_ns / 1e3, k->step_seq, (double)k->step_t / 1e9);
	fprintf(f, "commands placed with: %s\n", c->place_run ?
		"the run's estimate (streamed as the agent does, record by record across a step)" :
		"their chunk's segment (the run's estimate saw more than one step or does not fit one line)");
	fprintf(f, "clock segments: %zu (estimated per chunk of host time), offset steps between them: %u\n",
		c->nseg, c->steps);
	for (size_t g = 0; c->steps && g < c->nseg; g++) {
		fprintf(f, "  from host %.6f s: host = fw %+.3f us (±%.3f us), drift %+.3f ppm, %zu commands\n",
			(double)c->segs[g].first_submit / 1e9,
			c->segs[g].off_ns / 1e3, c->segs[g].off_err_ns / 1e3,
			c->segs[g].drift * 1e6, c->segs[g].used);
		if (c->segs[g].step_next)
			fprintf(f, "  clock step before firmware record seq %u\n",
				c->segs[g].step_seq);
	}
	if (c->steps || k->have_prev)
		fprintf(f, "commands the firmware was working on across a step (records mapped on both clocks): %llu\n",
			(unsigned long long)c->across_step);
}

static void print_cmd_json(FILE *f, const struct corr *c, size_t i)
{
	const struct host_cmd *h = &c->host.v[i];
	const struct corr_cmd *r = &c->hc[i];
	int n = 0;

	fprintf(f, "{\"type\":\"cmd\",\"cmd\":{\"ctrl\":%u,\"qid\":%u,\"cid\":%u,\"opc\":\"%s\",\"nsid\":%u,\"slba\":%llu,\"nlb\":%u,\"match\":\"%s\",\"submit_ns\":%llu,\"complete_ns\":%llu,\"host_line\":%u",
		h->ctrl, h->qid, h->cid, h->opc, h->nsid,
		(unsigned long long)h->slba, h->nlb, corr_match_name(r->match),
		(unsigned long long)h->submit_ns,
		(unsigned long long)h->complete_ns, h->line);
	for (int k = 0; k < CX_COUNT; k++)
		if (r->x[k] >= 0)
			fprintf(f, ",\"%s_ns\":%lld", corr_x_names[k],
				(long long)r->x[k]);
	if (r->fw >= 0 && corr_placed(c, i))
		fprintf(f, ",\"in_window\":%s,\"in_window_err\":%s",
			r->in_window ? "true" : "false",
			r->in_window_err ? "true" : "false");
	fprintf(f, ",\"fw\":[");
	if (r->fw >= 0) {
		const struct fw_cmd *w = &c->fw[r->fw];

		for (int p = HMB_PHASE_FETCH; p < HMB_PHASE_COUNT; p++) {
			if (!(w->mask & (1u << p)))
				continue;
			fprintf(f, "%s{\"phase\":\"%s\",\"seq\":%u,\"ts_ns\":%llu",
				n++ ? "," : "", hmb_phase_name(p), w->seq[p],
				(unsigned long long)w->ts[p]);
			if (corr_placed(c, i))
				fprintf(f, ",\"host_ns\":%.0f",
					corr_map(c, i, w->ts[p], w->seq[p]));
			fputc('}', f);
		}
	}
	fprintf(f, "]}}\n");
}

static void print_final_json(FILE *f, const struct corr *c)
{
	const struct hmb_clock *k = &c->clk;

	fprintf(f, "{\"type\":\"final\",\"host_format\":\"%s\",\"ctrl\":%u,"
		"\"totals\":{\"host_commands\":%zu,\"matched\":%llu,\"partial\":%llu,"
		"\"unmatched\":%llu,\"other_ctrl\":%llu,\"fw_commands\":%zu,"
		"\"fw_complete\":%llu,\"fw_unmatched\":%llu,\"fw_records_lost\":%llu,"
		"\"in_window\":%llu,\"in_window_err\":%llu,\"outside_window\":%llu,"
		"\"host_block_skipped\":%llu,\"host_incomplete\":%llu,"
		"\"host_unpaired\":%llu,\"across_step\":%llu},",
		c->host.fmt == HOST_FMT_AGENT ? "agent" : "perf", c->ctrl,
		c->host.n, (unsigned long long)c->matched,
		(unsigned long long)c->partial, (unsigned long long)c->unmatched,
		(unsigned long long)c->other_ctrl, c->nfw,
		(unsigned long long)c->fw_complete,
		(unsigned long long)c->fw_unmatched,
		(unsigned long long)c->fw_lost,
		(unsigned long long)c->in_window,
		(unsigned long long)c->in_window_err,
		(unsigned long long)c->outside,
		(unsigned long long)c->host.block,
		(unsigned long long)c->host.incomplete,
		(unsigned long long)c->host.unpaired,
		(unsigned long long)c->across_step);
	fprintf(f, "\"clock\":{\"valid\":%s", k->valid ? "true" : "false");
	if (k->valid)
		fprintf(f, ",\"offset_ns\":%.0f,\"offset_err_ns\":%.0f,\"ref_fw_ns\":%.0f,\"drift_ppm\":%.3f,\"drift_err_ppm\":%.3f,\"consistent\":%s,\"points\":%zu,\"trimmed\":%zu",
			k->off_ns, k->off_err_ns, k->ref, k->drift * 1e6,
			k->drift_err < 0 ? -1 : k->drift_err * 1e6,
			k->consistent ? "true" : "false", k->used, k->trimmed);
	fprintf(f, ",\"steps\":%u,\"matched_seen\":%llu",
		c->steps, (unsigned long long)k->added);
	if (k->have_prev)
		fprintf(f, ",\"run_steps\":%u,\"step_seq\":%u,\"step_fw_ns\":%lld,\"step_ns\":%.0f",
			k->steps, k->step_seq, (long long)k->step_t, k->step_ns);
	fprintf(f, ",\"placed_with\":\"%s\",\"segments\":[",
		c->place_run ? "run" : "segments");
	for (size_t g = 0; g < c->nseg; g++) {
		const struct corr_seg *s = &c->segs[g];

		fprintf(f, "%s{\"valid\":%s,\"first_submit_ns\":%llu,\"offset_ns\":%.0f,\"offset_err_ns\":%.0f,\"ref_fw_ns\":%.0f,\"drift_ppm\":%.3f,\"points\":%zu",
			g ? "," : "", s->valid ? "true" : "false",
			(unsigned long long)s->first_submit, s->off_ns,
			s->off_err_ns, s->ref, s->drift * 1e6, s->used);
		if (s->step_next)
			fprintf(f, ",\"step_to_next_at_seq\":%u", s->step_seq);
		fputc('}', f);
	}
	fprintf(f, "]}}\n");
}

static int cmp_slow(const void *a, const void *b, void *ctx)
{
	const struct corr *c = ctx;
	int64_t x = c->hc[*(const size_t *)a].x[CX_HOST_TOTAL];
	int64_t y = c->hc[*(const size_t *)b].x[CX_HOST_TOTAL];

	return x < y ? 1 : x > y ? -1 : 0;
}

static void print_text(FILE *f, const struct corr *c, const char *dump,
		       unsigned int top)
{
	uint64_t n = c->host.n - c->other_ctrl;
	size_t *idx;

	fprintf(f, "correlate: %s (%zu firmware commands, %llu records lost) with %s (%zu host commands, %s; nvme%u)\n",
		dump, c->nfw, (unsigned long long)c->fw_lost, c->host.path,
		c->host.n, hostev_fmt_name(c->host.fmt), c->ctrl);
	fprintf(f, "host commands: %llu; matched %llu (%.2f%%), partial %llu, unmatched %llu",
		(unsigned long long)n, (unsigned long long)c->matched,
		n ? 100.0 * (double)c->matched / (double)n : 0.0,
		(unsigned long long)c->partial,
		(unsigned long long)c->unmatched);
	if (c->other_ctrl)
		fprintf(f, "; %llu of other controllers",
			(unsigned long long)c->other_ctrl);
	fprintf(f, "\nfirmware commands not matched: %llu of %zu; host lines skipped: %llu block-layer, %llu incomplete, %llu completions without setup\n",
		(unsigned long long)c->fw_unmatched, c->nfw,
		(unsigned long long)c->host.block,
		(unsigned long long)c->host.incomplete,
		(unsigned long long)c->host.unpaired);
	print_clock_text(f, c);
	if (c->clk.valid)
		fprintf(f, "fw events inside the host window: %llu of %llu (%llu within the clock error, %llu outside)\n",
			(unsigned long long)c->in_window,
			(unsigned long long)(c->matched + c->partial),
			(unsigned long long)c->in_window_err,
			(unsigned long long)c->outside);
	log2_hist(f, c, CX_HOST_TOTAL, "host: submit -> complete");
	log2_hist(f, c, CX_SUBMIT_TO_FETCH, "host submit -> fw fetch (clock-mapped)");
	log2_hist(f, c, CX_FW_TOTAL, "firmware: fetch -> cqe_posted (fw clock)");
	log2_hist(f, c, CX_CQE_TO_COMPLETE, "fw cqe_posted -> host complete (clock-mapped)");
	if (!top || !c->host.n)
		return;
	idx = malloc(c->host.n * sizeof(*idx));
	if (!idx)
		return;
	for (size_t i = 0; i < c->host.n; i++)
		idx[i] = i;
	qsort_r(idx, c->host.n, sizeof(*idx), cmp_slow, (void *)c);
	fprintf(f, "\n%u slowest commands:\n", top < c->host.n ? top : (unsigned int)c->host.n);
	for (size_t t = 0; t < top && t < c->host.n; t++) {
		const struct host_cmd *h = &c->host.v[idx[t]];
		const struct corr_cmd *r = &c->hc[idx[t]];

		fprintf(f, "  #%-3zu nvme%u q%u cid 0x%04x %-5s slba %llu [%s]: total %.1f us\n",
			t + 1, h->ctrl, h->qid, h->cid, h->opc,
			(unsigned long long)h->slba, corr_match_name(r->match),
			(double)r->x[CX_HOST_TOTAL] / 1e3);
		if (r->fw < 0)
			continue;
		if (c->clk.valid && r->x[CX_SUBMIT_TO_FETCH] >= 0 &&
		    r->x[CX_FW_TOTAL] >= 0 && r->x[CX_CQE_TO_COMPLETE] >= 0)
			fprintf(f, "      = host submit->fw fetch %.1f + firmware %.1f + cqe posted->host complete %.1f us%s\n",
				(double)r->x[CX_SUBMIT_TO_FETCH] / 1e3,
				(double)r->x[CX_FW_TOTAL] / 1e3,
				(double)r->x[CX_CQE_TO_COMPLETE] / 1e3,
				r->in_window ? "" : r->in_window_err ?
				" (at the edge of the host window, within the clock error)" :
				" (FW EVENTS OUTSIDE THE HOST WINDOW)");
		for (int p = HMB_PHASE_FETCH; p < HMB_PHASE_COUNT; p++) {
			const struct fw_cmd *w = &c->fw[r->fw];
			const struct hmb_dict_event *ev;

			if (!(w->mask & (1u << p)))
				continue;
			ev = hmb_dict_phase_event(c->dict, p);
			fprintf(f, "      fw %-16s seq %-10u %+9.1f us from fetch",
				ev ? ev->name : hmb_phase_name(p), w->seq[p],
				((double)w->ts[p] - (double)w->first) / 1e3);
			if (corr_placed(c, idx[t]))
				fprintf(f, "   host %+9.1f us from submit",
					(corr_map(c, idx[t], w->ts[p],
						  w->seq[p]) -
					 (double)h->submit_ns) / 1e3);
			fputc('\n', f);
		}
	}
	free(idx);
}

void usage_correlate(FILE *f)
{
	fprintf(f,
"Usage: " PROG " correlate FW_DUMP HOST_EVENTS [OPTIONS]\n"
"\n"
"The offline form of hmb-trace-agent's join: line up the firmware records of\n"
"FW_DUMP (a dump from hmb-trace-daemon, or a ring image) with the host's\n"
"view of the same NVMe commands, and split each command's latency into\n"
"host submit -> firmware fetch -> firmware cqe_posted -> host completion.\n"
"The firmware clock is mapped to the host's by the estimate hmb-trace-agent\n"
"uses (offset and drift with an error bound, from the matched commands).\n"
"\n"
"HOST_EVENTS is either\n"
"  - the JSON lines of 'hmb-trace-agent -j --per-command' (host-only mode is\n"
"    enough: it needs ctrl, qid, cid, submit_ns and complete_ns), or\n"
"  - 'perf script' output of nvme:nvme_setup_cmd and nvme:nvme_complete_rq.\n"
"\n"
"Options:\n"
"  -f, --format FMT     text (default): summary, clock, log2 histograms and\n"
"                       the slowest commands; json: one {\"type\":\"cmd\"} line\n"
"                       per host command, then one {\"type\":\"final\"} line\n"
"  -j, --json           same as --format json\n"
"      --ctrl N         the host controller (nvmeN) of the dump, when\n"
"                       HOST_EVENTS covers several\n"
"      --top N          slowest commands to show (text; default 10)\n"
"      --dict FILE      event dictionary (default: the shipped one)\n"
"  -o, --output PATH    write to PATH instead of stdout\n"
"  -h, --help           this help\n"
"\n"
"Examples:\n"
"  hmb-trace-agent -d nvme0n1 -j --per-command -o host.jsonl &\n"
"  hmb-trace-daemon --device /dev/nvme-hmb-trace0 -o fw.bin\n"
"  " PROG " correlate fw.bin host.jsonl\n"
"\n"
"  perf record -e nvme:nvme_setup_cmd -e nvme:nvme_complete_rq -a -- sleep 10\n"
"  perf script --ns > host.txt\n"
"  " PROG " correlate fw.bin host.txt --format json | jq 'select(.type==\"final\")'\n");
}

static const struct option corr_opts[] = {
	{ "format", required_argument, NULL, 'f' },
	{ "json", no_argument, NULL, 'j' },
	{ "ctrl", required_argument, NULL, 'C' },
	{ "top", required_argument, NULL, 'T' },
	{ "dict", required_argument, NULL, 'D' },
	{ "output", required_argument, NULL, 'o' },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 }
};

int cmd_correlate(int argc, char **argv)
{
	const char *dict_path = NULL, *out_path = NULL;
	struct hmb_dict *dict = NULL;
	unsigned int top = 10;
	FILE *out = stdout;
	bool json = false;
	long ctrl = -1;
	struct corr c;
	uint64_t v;
	int opt, rc;

	optind = 1;
	while ((opt = getopt_long(argc, argv, "f:jo:h", corr_opts, NULL)) != -1) {
		switch (opt) {
		case 'f':
			if (parse_text_json(optarg, &json))
				return EXIT_USAGE;
			break;
		case 'j':
			json = true;
			break;
		case 'C':
			if (parse_ctrl(optarg, &ctrl))
				return EXIT_USAGE;
			break;
		case 'T':
			if (parse_u64(optarg, &v) || v > 100000) {
				errorf("--top: '%s' is not a count in 0..100000", optarg);
				return EXIT_USAGE;
			}
			top = (unsigned int)v;
			break;
		case 'D':
			dict_path = optarg;
			break;
		case 'o':
			out_path = optarg;
			break;
		case 'h':
			usage_correlate(stdout);
			return 0;
		default:
			usage_correlate(stderr);
			return EXIT_USAGE;
		}
	}
	if (argc - optind != 2) {
		errorf("correlate: expected FW_DUMP and HOST_EVENTS (try '" PROG " correlate --help')");
		return EXIT_USAGE;
	}
	if (dict_open(dict_path, &dict))
		return EXIT_BADINPUT;
	rc = corr_run(&c, argv[optind], argv[optind + 1], dict, ctrl);
	if (rc) {
		hmb_dict_free(dict);
		return rc;
	}
	if (out_path && strcmp(out_path, "-") != 0) {
		out = fopen(out_path, "w");
		if (!out) {
			errorf("%s: cannot create: %s", out_path, strerror(errno));
			corr_free(&c);
			hmb_dict_free(dict);
			return EXIT_BADINPUT;
		}
	}
	if (json) {
		for (size_t i = 0; i < c.host.n; i++)
			print_cmd_json(out, &c, i);
		print_final_json(out, &c);
	} else {
		print_text(out, &c, argv[optind], top);
	}
	if (fflush(out) || ferror(out)) {
		errorf("%s: write error: %s", out == stdout ? "<stdout>" : out_path,
		       strerror(errno));
		rc = EXIT_BADINPUT;
	}
	if (out != stdout && fclose(out) && !rc) {
		errorf("%s: write error: %s", out_path, strerror(errno));
		rc = EXIT_BADINPUT;
	}
	corr_free(&c);
	hmb_dict_free(dict);
	return rc;
}
