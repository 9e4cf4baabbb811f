// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * join.c - the offline join (hmbtrace_join.h): the commands of both
 * sides, the candidate search and the passes per chunk of host time.  The
 * clocks (segments, steps, the run's estimate, placement) are joinseg.c's.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "joinpriv.h"

/* ------------------------------------------------------------ the input */

/* @f: the join's copy of the model's command @m. */
void hmb__jfw_of(const struct hmb_join *j, struct jfw *f,
		 const struct hmb_fwm_cmd *m)
{
	const struct hmb_dict_event *fetch;

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
		/* the model reads slba from the fetch when the dictionary has it */
		fetch = hmb_dict_phase_event(j->dict, HMB_PHASE_FETCH);
		f->slba = m->slba;
		f->have_slba = fetch && hmb_dict_field(fetch, "slba");
	}
}

static void on_fw_end(void *ctx, const struct hmb_fwm_cmd *m,
		      enum hmb_fwm_end why)
{
	struct hmb_join *j = ctx;

	(void)why;
	if (j->streaming) {
		/* reordering beyond the window: counted, still a candidate */
		if (j->have_cut && hmb__join_stream_map(j, m->first_ts) < j->cut)
			j->tot.fw_late++;
		if (!j->fw_seen || m->first_ts > j->fw_max_first)
			j->fw_max_first = m->first_ts;
		j->fw_seen = true;
	}
	if (hmb__join_fw_room(j, 1))
		return;
	hmb__jfw_of(j, &j->fw[j->nfw++], m);
}

static void on_fw_bg(void *ctx, const char *group, uint64_t t0, uint64_t t1,
		     unsigned int flags, uint8_t cpu)
{
	struct hmb_join *j = ctx;
	int g = -1;

	(void)flags;
	(void)cpu;
	for (unsigned int i = 0; i < j->fwm.ngroups; i++)
		if (!strcmp(j->fwm.groups[i], group))
			g = (int)i;
	if (g < 0)
		return;
	if (j->nbg == j->capbg) {
		size_t cap = j->capbg ? j->capbg * 2 : 256;
		struct jbg *v = realloc(j->bg, cap * sizeof(*v));

		if (!v) {
			j->oom = true;
			return;
		}
		j->bg = v;
		j->capbg = cap;
	}
	j->bg[j->nbg++] = (struct jbg){ .b = t0, .e = t1, .g = (uint8_t)g };
}

static const struct hmb_fwm_ops fw_ops = {
	.cmd_end = on_fw_end,
	.bg_window = on_fw_bg,
};

struct hmb_join *hmb_join_new(const struct hmb_dict *dict)
{
	struct hmb_join *j = calloc(1, sizeof(*j));

	if (!j)
		return NULL;
	j->dict = dict;
	if (hmb_fwm_init(&j->fwm, dict, &fw_ops, j)) {
		free(j);
		return NULL;
	}
	j->fwm_on = true;
	return j;
}

void hmb_join_free(struct hmb_join *j)
{
	if (!j)
		return;
	if (j->fwm_on)
		hmb_fwm_finish(&j->fwm);
	hmb_clock_free(&j->clk);
	hmb_cmd_stats_free(&j->stats);
	free(j->host);
	free(j->hj);
	free(j->order);
	free(j->fw);
	free(j->bg);
	free(j->segs);
	free(j->segs_all);
	free(j->refused);
	free(j->gaps);
	free(j);
}

/* Where records were lost: the seq after the last one seen, if skipped. */
static void note_gap(struct hmb_join *j, uint32_t seq)
{
	if (j->gap_seen && jseq_diff(seq, j->gap_next) > 0) {
		if (j->ngap == j->capgap) {
			size_t cap = j->capgap ? j->capgap * 2 : 64;
			uint32_t *v = realloc(j->gaps, cap * sizeof(*v));

			if (!v) {
				j->oom = true;
				return;
			}
			j->gaps = v;
			j->capgap = cap;
		}
		j->gaps[j->ngap++] = j->gap_next;
	}
	/* a repeated or earlier seq (a batch written twice) moves nothing */
	if (!j->gap_seen || jseq_diff(seq, j->gap_next) >= 0)
		j->gap_next = seq + 1;
	j->gap_seen = true;
}

int hmb_join_record(struct hmb_join *j, const struct hmb_record *rec)
{
	if (!j->fwm_on || j->oom)
		return HMB_E_NOMEM;
	note_gap(j, rec->hdr.seq);
	hmb_fwm_add(&j->fwm, rec);
	return j->oom ? HMB_E_NOMEM : 0;
}

int hmb_join_host(struct hmb_join *j, const struct hmb_host_cmd *h)
{
	unsigned int k;

	if (j->nhost == j->caphost) {
		size_t cap = j->caphost ? j->caphost * 2 : 4096;
		struct hmb_host_cmd *v = realloc(j->host, cap * sizeof(*v));

		if (!v)
			return HMB_E_NOMEM;
		j->host = v;
		j->caphost = cap;
	}
	j->host[j->nhost++] = *h;
	for (k = 0; k < j->nctrl && j->ctrls[k] != h->ctrl; k++)
		;
	if (k == j->nctrl && j->nctrl < JOIN_MAX_CTRLS)
		j->ctrls[j->nctrl++] = h->ctrl;
	return 0;
}

unsigned int hmb_join_ctrls(const struct hmb_join *j, const uint32_t **ctrls)
{
	*ctrls = j->ctrls;
	return j->nctrl;
}

/* -------------------------------------------------------------- sorting */


static int cmp_fw(const void *a, const void *b)
{
	const struct jfw *x = a, *y = b;

	if (hmb__jfw_key(x) != hmb__jfw_key(y))
		return hmb__jfw_key(x) < hmb__jfw_key(y) ? -1 : 1;
	return x->first < y->first ? -1 : x->first > y->first;
}

static int cmp_host(const void *a, const void *b)
{
	const struct hmb_host_cmd *x = a, *y = b;

	if (hmb__host_key(x) != hmb__host_key(y))
		return hmb__host_key(x) < hmb__host_key(y) ? -1 : 1;
	return x->submit_ns < y->submit_ns ? -1 : x->submit_ns > y->submit_ns;
}

static int cmp_submit(const void *a, const void *b, void *ctx)
{
	const struct hmb_join *j = ctx;
	uint64_t x = j->host[*(const size_t *)a].submit_ns;
	uint64_t y = j->host[*(const size_t *)b].submit_ns;

	return x < y ? -1 : x > y;
}

static int cmp_bg(const void *a, const void *b)
{
	const struct jbg *x = a, *y = b;

	if (x->g != y->g)
		return x->g < y->g ? -1 : 1;
	return x->b < y->b ? -1 : x->b > y->b;
}

/* The windows by group and begin, each with the latest end so far. */
static void index_bg(struct hmb_join *j)
{
	size_t i = 0;

	if (j->nbg)	/* no window: j->bg is NULL */
		qsort(j->bg, j->nbg, sizeof(*j->bg), cmp_bg);
	for (unsigned int g = 0; g <= HMB_FWM_MAX_GROUPS; g++) {
		uint64_t emax = 0;

		j->bg_first[g] = i;
		for (; i < j->nbg && j->bg[i].g == g; i++) {
			if (j->bg[i].e > emax)
				emax = j->bg[i].e;
			j->bg[i].emax = emax;
		}
	}
}

/* The groups with a window in flight during @c's firmware span: per
 * group, some window begun by the span's end and ended at its start or
 * later. */
static uint16_t bg_of(const struct hmb_join *j, const struct hmb_cmd *c)
{
	uint64_t t0, t1;
	uint16_t bits = 0;

	if (!j->nbg || !hmb_cmd_fw_span(c, &t0, &t1))
		return 0;
	for (unsigned int g = 0; g < HMB_FWM_MAX_GROUPS && g < HMB_CMD_BG_GROUPS; g++) {
		size_t lo = j->bg_first[g], hi = j->bg_first[g + 1];

		while (lo < hi) {	/* first window begun after t1 */
			size_t mid = lo + (hi - lo) / 2;

			if (j->bg[mid].b <= t1)
				lo = mid + 1;
			else
				hi = mid;
		}
		if (lo > j->bg_first[g] && j->bg[lo - 1].emax >= t0)
			bits |= (uint16_t)(1u << g);
	}
	return bits;
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return x < y ? -1 : x > y;
}

/* First firmware command with key @key (sqid << 16 | cid). */
size_t hmb__join_fw_lower(const struct hmb_join *j, uint32_t key)
{
	size_t lo = 0, hi = j->nfw;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (hmb__jfw_key(&j->fw[mid]) < key)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}


/* --------------------------------------------------------------- passes */

/* Coarse offset of the host commands @set[0..n) (unmatched fw only). */
static int coarse_offset(struct hmb_join *j, const size_t *set, size_t ns)
{
	size_t stride = ns / 512 + 1, n = 0, best = 0, bi = 0, sampled = 0;
	size_t span = 0;
	double spread;
	int64_t *cand = malloc(JOIN_MAX_CANDS * sizeof(*cand));

	if (!cand)
		return -1;
	for (size_t s = 0; s < ns && n < JOIN_MAX_CANDS; s += stride) {
		const struct hmb_host_cmd *h = &j->host[set[s]];

		sampled++;
		for (size_t k = hmb__join_fw_lower(j, hmb__host_key(h));
		     k < j->nfw && hmb__jfw_key(&j->fw[k]) == hmb__host_key(h) &&
		     n < JOIN_MAX_CANDS; k++)
			if (hmb__join_slba_ok(&j->fw[k], h) && j->fw[k].host < 0)
				cand[n++] = (int64_t)h->submit_ns -
					    (int64_t)j->fw[k].first;
	}
	if (!n) {
		free(cand);
		return 1;
	}
	qsort(cand, n, sizeof(*cand), cmp_i64);
	/*
	 * Densest window of JOIN_COARSE_WIN (the offset less the commonest
	 * submit -> fetch latency), and of JOIN_COARSE_SPAN (every latency
	 * queueing allows).
	 */
	for (size_t i = 0, k = 0, w = 0; i < n; i++) {
		while (cand[i] - cand[k] > JOIN_COARSE_WIN)
			k++;
		while (cand[i] - cand[w] > JOIN_COARSE_SPAN)
			w++;
		if (i - k + 1 > best) {
			best = i - k + 1;
			bi = k;
		}
		if (i - w + 1 > span)
			span = i - w + 1;
	}
	j->coarse_off = (double)cand[bi + best / 2];
	/*
	 * Commands whose firmware records do not exist (a paused trace, a
	 * host recorder started earlier) still have candidates: other uses
	 * of their ids, at random distances.  An offset is a clock when a
	 * quarter of the commands agree on it within the latencies queueing
	 * allows (at QD32 under TCG, submit -> fetch spreads over
	 * milliseconds: no 100 us window then holds a quarter), or when far
	 * more of them do than candidates spread evenly would put in any one
	 * window; else it is such a coincidence.
	 */
	spread = (double)n * JOIN_COARSE_WIN /
		 ((double)(cand[n - 1] - cand[0]) + JOIN_COARSE_WIN);
	free(cand);
	return best >= 2 && (span * 4 >= sampled || best >= 8 * spread) ?
	       0 : 1;
}

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
	return k->brk_on && jseq_diff(seq, k->brk_lo) >= 0 &&
	       jseq_diff(seq, k->brk_hi) <= 0;
}

/*
 * Does @f fit @h with its first and last records each on the clock the
 * step leaves them, or, inside the step's bracket (where the record the
 * clock stepped at is not certain), on either (in seq order: old before
 * new)?  The fit whose fetch is closest to the submit: *d, or false.
 */
static bool fits_split(const struct hmb_clock *k, const struct jfw *f,
		       const struct hmb_host_cmd *h, double tol, double *d)
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

static double map_at(const struct hmb_join *j, const struct jmap *mp,
		     uint64_t ts, uint32_t seq, double *tol)
{
	*tol = mp->tol;
	if (mp->k) {
		double t = 4 * hmb_clock_err_at(mp->k, seq);

		if (t > *tol)
			*tol = t;
		return hmb_clock_map(mp->k, ts, seq);
	}
	if (mp->g2 && jseq_diff(seq, mp->step_seq) >= 0)
		return hmb__seg_map(mp->g2, ts);
	return mp->g ? hmb__seg_map(mp->g, ts) : (double)ts + j->coarse_off;
}

/* How far @f lies from @h mapped by @mp (fetch to submit), or < 0 if it
 * does not fit @h's window. */
static double fit(const struct hmb_join *j, const struct jfw *f,
		  const struct hmb_host_cmd *h, const struct jmap *mp,
		  bool *past)
{
	double m0, m1, t0, t1, d = 0;

	*past = false;
	if (mp->split) {
		double e = mp->k->off_err_ns > mp->k->prev_err ?
			   mp->k->off_err_ns : mp->k->prev_err;

		return fits_split(mp->k, f, h, 4 * e > mp->tol ? 4 * e :
				  mp->tol, &d) ? d : -1;
	}
	m0 = map_at(j, mp, f->first, f->first_seq, &t0);
	/* one clock: the candidates come in firmware time order */
	if (!mp->k && !mp->g2 && m0 > (double)h->complete_ns + t0) {
		*past = true;
		return -1;
	}
	m1 = map_at(j, mp, f->last, f->last_seq, &t1);
	if (m0 < (double)h->submit_ns - t0 || m1 > (double)h->complete_ns + t1)
		return -1;
	return fabs(m0 - (double)h->submit_ns);
}

/*
 * The first firmware command with @h's keys that may fit @h under @mp.
 * On one clock (the coarse offset or one segment: increasing in firmware
 * time) the commands of a key are in firmware time order, and those whose
 * first record maps before the submit less the tolerance cannot fit: a
 * binary search skips them (fit() would refuse each).  Otherwise the
 * key's first.
 */
static size_t fw_first_fit(const struct hmb_join *j,
			   const struct hmb_host_cmd *h, const struct jmap *mp)
{
	size_t lo = hmb__join_fw_lower(j, hmb__host_key(h)), hi;
	double from = (double)h->submit_ns - mp->tol;

	if (mp->k || mp->g2 || mp->split || (mp->g && mp->g->drift <= -1))
		return lo;
	hi = hmb__join_fw_lower(j, hmb__host_key(h) + 1);
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		double m = mp->g ? hmb__seg_map(mp->g, j->fw[mid].first) :
			   (double)j->fw[mid].first + j->coarse_off;

		if (m < from)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/*
 * The unused firmware command with @h's keys whose records, mapped by
 * @mp, lie in @h's host window (widened by the tolerance) and whose fetch
 * is closest to the submit; -1 if none.
 */
long hmb__join_closest(const struct hmb_join *j, const struct hmb_host_cmd *h,
		       const struct jmap *mp)
{
	double best = 0;
	long bj = -1;

	for (size_t k = fw_first_fit(j, h, mp);
	     k < j->nfw && hmb__jfw_key(&j->fw[k]) == hmb__host_key(h); k++) {
		const struct jfw *f = &j->fw[k];
		bool past;
		double d;

		if (f->host >= 0 || !hmb__join_slba_ok(f, h))
			continue;
		d = fit(j, f, h, mp, &past);
		if (past)
			break;
		if (d >= 0 && (bj < 0 || d < best)) {
			best = d;
			bj = (long)k;
		}
	}
	return bj;
}

void hmb__join_pair(struct hmb_join *j, size_t i, long f)
{
	j->hj[i].fw = (int32_t)f;
	j->fw[f].host = (int32_t)i;
}

/* Room for @more firmware commands: 0, or -1 (j->oom set). */
int hmb__join_fw_room(struct hmb_join *j, size_t more)
{
	size_t cap = j->capfw ? j->capfw : 4096;
	struct jfw *v;

	if (j->nfw + more <= j->capfw)
		return 0;
	while (cap < j->nfw + more)
		cap *= 2;
	v = realloc(j->fw, cap * sizeof(*v));
	if (!v) {
		j->oom = true;
		return -1;
	}
	j->fw = v;
	j->capfw = cap;
	return 0;
}

/*
 * Join the host commands @set[0..n) with the closest fitting unused
 * firmware command: mapped by @g (else shifted by the coarse offset),
 * within the host window widened by @tol ns.
 */
static void join_set(struct hmb_join *j, const size_t *set, size_t ns,
		     const struct hmb_join_seg *g, double tol)
{
	const struct jmap mp = { .g = g, .tol = tol };

	for (size_t s = 0; s < ns; s++) {
		long f;

		if (j->hj[set[s]].fw >= 0)
			continue;
		f = hmb__join_closest(j, &j->host[set[s]], &mp);
		if (f >= 0)
			hmb__join_pair(j, set[s], f);
	}
}

static void unjoin(struct hmb_join *j, const size_t *set, size_t ns)
{
	for (size_t s = 0; s < ns; s++) {
		struct jhost *r = &j->hj[set[s]];

		if (r->fw >= 0)
			j->fw[r->fw].host = -1;
		r->fw = -1;
	}
}

/* The matched of @set to the front, in time order still: how many. */
static long matched_first(struct hmb_join *j, size_t *set, size_t ns)
{
	size_t m = 0, a = 0, b;
	size_t *tmp;

	for (size_t s = 0; s < ns; s++)
		m += j->hj[set[s]].fw >= 0;
	if (!m)
		return 0;
	tmp = malloc(ns * sizeof(*tmp));
	if (!tmp)
		return -1;
	b = m;
	for (size_t s = 0; s < ns; s++)
		tmp[j->hj[set[s]].fw >= 0 ? a++ : b++] = set[s];
	memcpy(set, tmp, ns * sizeof(*set));
	free(tmp);
	return (long)m;
}

/*
 * The passes on one chunk: coarse offset, wide join, estimate, tight join,
 * estimate; then again for what is left unmatched (a clock step), at most
 * four times.  @set is in time order and is reordered: matched first.
 */
static int chunk(struct hmb_join *j, size_t *set, size_t ns,
		 struct hmb_clock *k)
{
	for (int round = 0; round < 4 && ns; round++) {
		int rc = coarse_offset(j, set, ns);
		long m;

		if (rc)
			return rc < 0 ? -1 : 0;
		join_set(j, set, ns, NULL, JOIN_PASS2_TOL);
		hmb__join_estimate(j, k, set, ns, false);
		for (int pass = 0; pass < 2 && k->valid; pass++) {
			struct hmb_join_seg g = {
				.off_ns = k->off_ns, .drift = k->drift,
				.ref = k->ref,
			};
			double tol = 4 * k->off_err_ns;

			unjoin(j, set, ns);
			join_set(j, set, ns, &g, tol > JOIN_MIN_TOL ? tol :
				 JOIN_MIN_TOL);
			hmb__join_estimate(j, k, set, ns, false);
		}
		m = matched_first(j, set, ns);
		if (m <= 0)
			return (int)m;
		if (hmb__join_add_seg(j, k, set, (size_t)m))
			return -1;
		set += m;
		ns -= (size_t)m;
		if (ns < 32)	/* too few for a clock of their own */
			return 0;
	}
	return 0;
}

/* This controller's commands in time order, cut into chunks. */
int hmb__join_chunks(struct hmb_join *j)
{
	size_t *set = malloc((j->nhost ? j->nhost : 1) * sizeof(*set));
	size_t n = 0, pos = 0;
	struct hmb_clock k;
	int rc = 0;

	if (!set || hmb_clock_init(&k, j->nhost + 16)) {
		free(set);
		return -1;
	}
	for (size_t o = 0; o < j->nhost; o++)
		if (j->host[j->order[o]].ctrl == j->ctrl)
			set[n++] = j->order[o];
	while (pos < n && !rc) {
		size_t end = pos;
		uint64_t t0 = j->host[set[pos]].submit_ns;

		while (end < n && (end - pos < JOIN_CHUNK_MIN ||
				   j->host[set[end]].submit_ns - t0 <
				   JOIN_CHUNK_NS))
			end++;
		/* a short tail joins this chunk */
		if (n - end < JOIN_CHUNK_MIN)
			end = n;
		rc = chunk(j, set + pos, end - pos, &k);
		pos = end;
	}
	hmb_clock_free(&k);
	free(set);
	return rc;
}

/* The firmware commands sorted again (some were cut), pairings kept. */
void hmb__join_resort_fw(struct hmb_join *j)
{
	qsort(j->fw, j->nfw, sizeof(*j->fw), cmp_fw);
	for (size_t k = 0; k < j->nfw; k++)
		if (j->fw[k].host >= 0)
			j->hj[j->fw[k].host].fw = (int32_t)k;
}

/*
 * The firmware commands finished (streamed: at the end of the dump), both
 * sides sorted and indexed.
 */
int hmb__join_prepare(struct hmb_join *j)
{
	size_t n = j->nhost ? j->nhost : 1;

	if (j->fwm_on && (!j->streaming || j->fw_end)) {
		hmb_fwm_finish(&j->fwm);
		j->fwm_on = false;
	}
	j->fwst = j->fwm.st;
	if (j->oom)
		return -1;
	free(j->hj);
	free(j->order);
	hmb_clock_free(&j->clk);
	if (j->nfw)	/* no firmware command: j->fw is NULL */
		qsort(j->fw, j->nfw, sizeof(*j->fw), cmp_fw);
	index_bg(j);
	if (j->nhost)
		qsort(j->host, j->nhost, sizeof(*j->host), cmp_host);
	j->hj = malloc(n * sizeof(*j->hj));
	j->order = malloc(n * sizeof(*j->order));
	if (!j->hj || !j->order)
		return -1;
	for (size_t i = 0; i < j->nhost; i++) {
		j->order[i] = i;
		j->hj[i].fw = -1;
		j->hj[i].seg = -1;
		j->hj[i].refused = -1;
	}
	j->nrefused = 0;
	if (j->nhost)
		qsort_r(j->order, j->nhost, sizeof(*j->order), cmp_submit, j);
	/* the run's estimate holds every matched command */
	return hmb_clock_init(&j->clk, j->nhost + 16);
}

int hmb_join_run(struct hmb_join *j, uint32_t ctrl, unsigned int top_n,
		 struct hmb_error *err)
{
	if (j->ran)
		return hmb__err(err, HMB_E_INVAL, 0, 0, "join: run twice");
	j->ran = true;
	j->ctrl = ctrl;
	if (hmb_cmd_stats_init(&j->stats, top_n, 0) || hmb__join_prepare(j) ||
	    hmb__join_chunks(j) || hmb__join_run_estimate(j) ||
	    hmb__join_segments(j) || hmb__join_causal(j))
		return hmb__err(err, HMB_E_NOMEM, 0, 0,
				"join: out of memory (%zu host, %zu firmware commands)",
				j->nhost, j->nfw);
	hmb__join_place(j);
	return 0;
}

/* ----------------------------------------------------------- the result */

size_t hmb_join_count(const struct hmb_join *j)
{
	return j->nhost;
}

void hmb_join_cmd(const struct hmb_join *j, size_t i, struct hmb_cmd *out)
{
	size_t h = j->order[i];
	const struct jhost *r = &j->hj[h];
	struct jclk ctx;
	struct hmb_cmd_clock k;

	memset(out, 0, sizeof(*out));
	out->h = j->host[h];
	if (r->fw >= 0) {
		out->fw = hmb__jfw_side(&j->fw[r->fw]);
	} else if (r->refused >= 0) {
		out->refused = j->refused[r->refused];
	}
	k = hmb__join_clock_of(j, h, &ctx);
	hmb_cmd_judge(out, hmb__join_placed(j, h) ? &k : NULL);
	out->bg = bg_of(j, out);
	out->bg_groups = j->fwm.groups;
}

int hmb_join_foreach(const struct hmb_join *j,
		     int (*fn)(void *ctx, const struct hmb_cmd *c), void *ctx)
{
	struct hmb_cmd c;
	int rc;

	for (size_t i = 0; i < j->nhost; i++) {
		hmb_join_cmd(j, i, &c);
		rc = fn(ctx, &c);
		if (rc)
			return rc;
	}
	return 0;
}

bool hmb_join_placed(const struct hmb_join *j, size_t i)
{
	return hmb__join_placed(j, j->order[i]);
}

uint32_t hmb_join_ctrl(const struct hmb_join *j)
{
	return j->ctrl;
}

const struct hmb_clock *hmb_join_clock(const struct hmb_join *j)
{
	return &j->clk;
}

const struct hmb_cmd_stats *hmb_join_stats(const struct hmb_join *j)
{
	return &j->stats;
}

const struct hmb_join_totals *hmb_join_totals(const struct hmb_join *j)
{
	return &j->tot;
}

size_t hmb_join_segments(const struct hmb_join *j,
			 const struct hmb_join_seg **segs)
{
	*segs = j->segs;
	return j->nseg;
}

const struct hmb_fwm_stats *hmb_join_fw_stats(const struct hmb_join *j)
{
	return &j->fwst;
}
