// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * joinseg.c - the clocks of the offline join (hmbtrace_join.h): a clock
 * estimate per chunk of host time (a segment), the offset steps between
 * segments placed at a firmware record, the commands the firmware was
 * working on across a step, the run's own estimate streamed as the agent
 * streams it, and where every command is placed.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "joinpriv.h"

double hmb__seg_map(const struct hmb_join_seg *g, uint64_t fw)
{
	return (double)fw + g->off_ns + g->drift * ((double)fw - g->ref);
}

/*
 * The clock of record @seq of a command of segment @g: its own, or the
 * neighbour's when the record lies on the other side of a step between
 * them (a command the firmware was working on when its clock stepped).
 */
static const struct hmb_join_seg *seg_across(const struct hmb_join *j,
					     const struct hmb_join_seg *g,
					     uint32_t seq)
{
	size_t k = (size_t)(g - j->segs);

	if (k >= j->nseg)	/* not one of j->segs */
		return g;
	if (g->step_next && k + 1 < j->nseg && j->segs[k + 1].valid &&
	    jseq_diff(seq, g->step_seq) >= 0)
		return &j->segs[k + 1];
	if (k > 0 && j->segs[k - 1].step_next && j->segs[k - 1].valid &&
	    jseq_diff(seq, j->segs[k - 1].step_seq) < 0)
		return &j->segs[k - 1];
	return g;
}

static double seg_bound(const struct hmb_join_seg *g)
{
	return g->off_err_ns + g->drift_slack_ns;
}

/*
 * The error bound for a record of a command of segment @k (and its step
 * neighbours): a segment too short for a drift of its own may be off by
 * what an oscillator's drift moves it across the segment.
 */
static double seg_err(const struct hmb_join *j, int32_t k)
{
	double e = seg_bound(&j->segs[k]);

	if (j->segs[k].step_next && (size_t)k + 1 < j->nseg &&
	    seg_bound(&j->segs[k + 1]) > e)
		e = seg_bound(&j->segs[k + 1]);
	if (k > 0 && j->segs[k - 1].step_next &&
	    seg_bound(&j->segs[k - 1]) > e)
		e = seg_bound(&j->segs[k - 1]);
	return e;
}

double hmb__seg_tol(const struct hmb_join_seg *g)
{
	return 4 * g->off_err_ns > JOIN_MIN_TOL ? 4 * g->off_err_ns :
	       JOIN_MIN_TOL;
}

/*
 * The clock estimate of the matched commands among @set (time order), in
 * a fresh estimator (a reset would keep the drift and the pre-step
 * estimate, which belong to another chunk here).  @stream: solve as the
 * commands come, as the agent does, so that the estimator finds a clock
 * step and starts again after it (with every record noted, so the step is
 * placed at its record).  On allocation failure *k is not valid.
 */
void hmb__join_estimate(struct hmb_join *j, struct hmb_clock *k,
			const size_t *set, size_t ns, bool stream)
{
	size_t added = 0;

	hmb_clock_free(k);
	if (hmb_clock_init(k, ns + 16)) {
		memset(k, 0, sizeof(*k));
		return;
	}
	for (size_t s = 0; s < ns; s++) {
		const struct hmb_host_cmd *h = &j->host[set[s]];
		const struct jfw *f;

		if (j->hj[set[s]].fw < 0)
			continue;
		f = &j->fw[j->hj[set[s]].fw];
		if (stream)
			for (int p = HMB_PHASE_FETCH; p < HMB_PHASE_COUNT; p++)
				if (f->mask & (1u << p))
					hmb_clock_note_phase(k, f->seq[p], f->ts[p],
							     (unsigned int)p);
		if (!jfw_whole(f))
			continue;
		hmb_clock_add(k, h->submit_ns, h->complete_ns,
			      f->ts[HMB_PHASE_FETCH],
			      f->ts[HMB_PHASE_CQE_POSTED],
			      f->seq[HMB_PHASE_FETCH],
			      f->seq[HMB_PHASE_CQE_POSTED]);
		if (stream && ++added % 1000 == 0)
			hmb_clock_solve(k);
	}
	hmb_clock_solve(k);
}

/* Segment @g's clock from the valid estimate @k. */
static void seg_clock(struct hmb_join_seg *g, const struct hmb_clock *k)
{
	g->off_ns = k->off_ns;
	g->drift = k->drift;
	g->ref = k->ref;
	g->off_err_ns = k->off_err_ns;
	g->drift_slack_ns = k->drift_slack_ns;
	g->used = k->used;
}

int hmb__join_add_seg(struct hmb_join *j, const struct hmb_clock *k,
		      const size_t *set, size_t ns)
{
	struct hmb_join_seg *g;

	if (j->nseg == j->capseg) {
		size_t cap = j->capseg ? j->capseg * 2 : 16;
		struct hmb_join_seg *v = realloc(j->segs, cap * sizeof(*v));

		if (!v)
			return -1;
		j->segs = v;
		j->capseg = cap;
	}
	g = &j->segs[j->nseg];
	memset(g, 0, sizeof(*g));
	g->valid = k->valid;
	if (k->valid) {
		seg_clock(g, k);
	} else {
		g->off_ns = j->coarse_off;
		g->off_err_ns = JOIN_COARSE_WIN;
	}
	g->first_submit = UINT64_MAX;
	for (size_t s = 0; s < ns; s++)
		if (j->hj[set[s]].fw >= 0) {
			j->hj[set[s]].seg = (int32_t)j->nseg;
			if (j->host[set[s]].submit_ns < g->first_submit)
				g->first_submit = j->host[set[s]].submit_ns;
		}
	j->nseg++;
	return 0;
}

/* ------------------------------------------------------------- the steps */

/* A firmware record of a matched command near a step. */
struct step_ev {
	uint32_t seq;
	int64_t ts;
	int side;		/* -1: fits the old clock only, 1: new only */
};

static int cmp_step_ev(const void *a, const void *b)
{
	int32_t d = jseq_diff(((const struct step_ev *)a)->seq,
			      ((const struct step_ev *)b)->seq);

	return d < 0 ? -1 : d > 0;
}

/* Does host time @m lie in @h's window widened by @tol? */
static bool in_win(const struct hmb_host_cmd *h, double m, double tol)
{
	return m >= (double)h->submit_ns - tol &&
	       m <= (double)h->complete_ns + tol;
}

/*
 * Every record of the matched commands of segments @k and @k+1, and on
 * which of their clocks it fits its command's host window: *@out (*@n
 * records, sorted by seq; NULL when there are none).  0, or -1 on
 * allocation failure.
 */
static int step_records(const struct hmb_join *j, size_t k,
			struct step_ev **out, size_t *n)
{
	const struct hmb_join_seg *a = &j->segs[k], *b = &j->segs[k + 1];
	double ta = hmb__seg_tol(a), tb = hmb__seg_tol(b);
	struct step_ev *ev;
	size_t cap = 0;

	*n = 0;
	*out = NULL;
	for (size_t h = 0; h < j->nhost; h++)
		if ((j->hj[h].seg == (int32_t)k ||
		     j->hj[h].seg == (int32_t)k + 1) && j->hj[h].fw >= 0)
			cap += HMB_PHASE_COUNT;
	if (!cap)
		return 0;
	ev = malloc(cap * sizeof(*ev));
	if (!ev)
		return -1;
	for (size_t h = 0; h < j->nhost; h++) {
		const struct jfw *f;

		if ((j->hj[h].seg != (int32_t)k &&
		     j->hj[h].seg != (int32_t)k + 1) || j->hj[h].fw < 0)
			continue;
		f = &j->fw[j->hj[h].fw];
		for (int p = HMB_PHASE_FETCH; p < HMB_PHASE_COUNT; p++) {
			bool ina, inb;

			if (!(f->mask & (1u << p)))
				continue;
			ina = in_win(&j->host[h], hmb__seg_map(a, f->ts[p]), ta);
			inb = in_win(&j->host[h], hmb__seg_map(b, f->ts[p]), tb);
			ev[*n].seq = f->seq[p];
			ev[*n].ts = (int64_t)f->ts[p];
			ev[*n].side = ina && !inb ? -1 : inb && !ina ? 1 : 0;
			(*n)++;
		}
	}
	qsort(ev, *n, sizeof(*ev), cmp_step_ev);
	*out = ev;
	return 0;
}

/*
 * The bracket of the step in @ev[0..n): score(i), a step before ev[i], is
 * the old-only records before it plus the new-only ones from it on; the
 * positions with the best score span [i1, i2], so the step lies after
 * ev[i1 - 1] and at or before ev[i2].  Sets *lo, *hi (seqs) and *step
 * (the first seq of the bracket).
 */
static void step_bracket(const struct step_ev *ev, size_t n, uint32_t *lo,
			 uint32_t *hi, uint32_t *step)
{
	long score = 0, top, sc0;
	size_t i, i1 = n + 1, i2 = 0;

	for (i = 0; i < n; i++)
		score += ev[i].side > 0;
	sc0 = top = score;
	for (i = 1; i <= n; i++) {
		score += (ev[i - 1].side < 0) - (ev[i - 1].side > 0);
		if (score > top)
			top = score;
	}
	for (i = 0, score = sc0; i <= n; i++) {
		if (i > 0)
			score += (ev[i - 1].side < 0) - (ev[i - 1].side > 0);
		if (score != top)
			continue;
		if (i1 == n + 1)
			i1 = i;
		i2 = i;
	}
	*lo = i1 > 0 ? ev[i1 - 1].seq : ev[0].seq - (1u << 24);
	*hi = i2 < n ? ev[i2].seq : ev[n - 1].seq + (1u << 24);
	*step = i1 < n ? ev[i1].seq : ev[n - 1].seq + 1;
}

/*
 * Between @lo and @hi, every record of the dump (of commands matched or
 * not): the step is where their firmware times jump furthest, ahead for a
 * forward step (@fwd) or back for a backward one.  *@step unchanged when
 * fewer than two records lie there.
 */
static int step_jump(const struct hmb_join *j, uint32_t lo, uint32_t hi,
		     bool fwd, uint32_t *step)
{
	struct step_ev *ev = NULL;
	size_t n = 0, cap = 0, best = 0;
	double jump = 0;

	for (size_t k = 0; k < j->nfw; k++) {
		const struct jfw *f = &j->fw[k];

		if (jseq_diff(f->last_seq, lo) < 0 ||
		    jseq_diff(f->first_seq, hi) > 0)
			continue;
		for (int p = HMB_PHASE_FETCH; p < HMB_PHASE_COUNT; p++) {
			if (!(f->mask & (1u << p)) ||
			    jseq_diff(f->seq[p], lo) < 0 ||
			    jseq_diff(f->seq[p], hi) > 0)
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
		for (size_t i = 1; i < n; i++) {
			double d = (double)(ev[i].ts - ev[i - 1].ts);

			if (!fwd)
				d = -d;
			if (!best || d > jump) {
				jump = d;
				best = i;
			}
		}
		*step = ev[best].seq;
	}
	free(ev);
	return 0;
}

/*
 * The firmware clock stepped between segments @k and @k+1: at which
 * record?  Every record of their matched commands is tried on both clocks
 * against its command's host window; the step is the seq that leaves the
 * most records that fit only the old clock before it and only the new one
 * after it.  Of the seqs that do equally well (the records between fit
 * both or neither), the one where the firmware times jump furthest.
 * Records are numbered in the order the firmware wrote them, so one seq
 * divides the two clocks even when a backward step repeats firmware times.
 */
static int step_boundary(struct hmb_join *j, size_t k)
{
	struct hmb_join_seg *a = &j->segs[k], *b = &j->segs[k + 1];
	double t = b->ref;
	bool fwd = (b->off_ns + b->drift * (t - b->ref)) <
		   (a->off_ns + a->drift * (t - a->ref));
	uint32_t lo, hi, step;
	struct step_ev *ev;
	size_t n;

	if (step_records(j, k, &ev, &n))
		return -1;
	if (!n) {
		free(ev);
		return 0;
	}
	step_bracket(ev, n, &lo, &hi, &step);
	free(ev);
	if (step_jump(j, lo, hi, fwd, &step))
		return -1;
	a->step_next = true;
	a->step_seq = step;
	return 0;
}

/*
 * Host commands still unmatched, tried with @mp; those joined take segment
 * @before (first record before @mp's step) or @after.
 */
static size_t join_left(struct hmb_join *j, const struct jmap *mp,
			int32_t before, int32_t after)
{
	size_t joined = 0;

	for (size_t i = 0; i < j->nhost; i++) {
		long f;

		if (j->hj[i].fw >= 0 || j->host[i].ctrl != j->ctrl)
			continue;
		f = hmb__join_closest(j, &j->host[i], mp);
		if (f < 0)
			continue;
		hmb__join_pair(j, i, f);
		j->hj[i].seg = mp->g2 && jseq_diff(j->fw[f].first_seq,
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
static void join_across(struct hmb_join *j)
{
	for (size_t k = 0; k + 1 < j->nseg; k++) {
		const struct hmb_join_seg *a = &j->segs[k], *b = &j->segs[k + 1];
		const struct jmap mp = {
			.g = a, .g2 = b, .step_seq = a->step_seq,
			.tol = fmax(hmb__seg_tol(a), hmb__seg_tol(b)),
		};

		if (a->step_next && a->valid && b->valid)
			join_left(j, &mp, (int32_t)k, (int32_t)k + 1);
	}
}

/*
 * Host commands still unmatched when the run's own estimate (streamed
 * like the agent's, so it found the step and the record it happened at)
 * knows a step: try them with every record mapped on its own side of it,
 * as the live agent places them.  They keep no segment: the run's
 * estimate maps them.
 */
static size_t join_stepped(struct hmb_join *j)
{
	const struct jmap mp = { .k = &j->clk, .split = true,
				 .tol = JOIN_MIN_TOL };

	if (j->clk.valid && j->clk.have_prev)
		return join_left(j, &mp, -1, -1);
	return 0;
}

/*
 * The run's estimate, made as the agent makes it: the matched commands
 * streamed through the estimator in time order, solved every 1000, so
 * that it finds a clock step; then every record of the dump, matched or
 * not, to place the step at its record.
 */
int hmb__join_run_estimate(struct hmb_join *j)
{
	size_t *set = malloc((j->nhost ? j->nhost : 1) * sizeof(*set));
	size_t n = 0;

	if (!set)
		return -1;
	for (size_t o = 0; o < j->nhost; o++)
		if (j->hj[j->order[o]].fw >= 0)
			set[n++] = j->order[o];
	hmb__join_estimate(j, &j->clk, set, n, true);
	free(set);
	if (!j->clk.pts)
		return -1;
	if (j->clk.have_prev) {
		for (size_t k = 0; k < j->nfw; k++)
			for (int p = HMB_PHASE_FETCH; p < HMB_PHASE_COUNT; p++)
				if (j->fw[k].mask & (1u << p))
					hmb_clock_note_phase(&j->clk,
							     j->fw[k].seq[p],
							     j->fw[k].ts[p],
							     (unsigned int)p);
		hmb_clock_solve(&j->clk);
	}
	return 0;
}

/*
 * The segments with a clock and commands, in time order from their first
 * command (which the drops above may have changed), their commands
 * renumbered.  A segment without a clock is no neighbour of the others:
 * a step lies between the clocks on either side of it.  Its commands keep
 * their pairings and are placed by the segment in force at their submit.
 */
static int order_segments(struct hmb_join *j)
{
	size_t n = j->nseg ? j->nseg : 1, kept = 0;
	int32_t *map = malloc(n * sizeof(*map));
	size_t *idx = malloc(n * sizeof(*idx));
	struct hmb_join_seg *old = malloc(n * sizeof(*old));

	if (!map || !idx || !old) {
		free(map);
		free(idx);
		free(old);
		return -1;
	}
	if (!j->nseg) {		/* no segment: j->segs is NULL */
		free(map);
		free(idx);
		free(old);
		return 0;
	}
	for (size_t g = 0; g < j->nseg; g++) {
		j->segs[g].first_submit = UINT64_MAX;
		map[g] = -1;
	}
	for (size_t i = 0; i < j->nhost; i++) {
		int32_t g = j->hj[i].seg;

		if (g >= 0 && j->hj[i].fw >= 0 &&
		    j->host[i].submit_ns < j->segs[g].first_submit)
			j->segs[g].first_submit = j->host[i].submit_ns;
	}
	for (size_t g = 0; g < j->nseg; g++)
		if (j->segs[g].valid && j->segs[g].first_submit != UINT64_MAX)
			idx[kept++] = g;
	memcpy(old, j->segs, j->nseg * sizeof(*old));
	/* insertion sort by first command: a handful of segments */
	for (size_t a = 1; a < kept; a++)
		for (size_t b = a; b > 0 && old[idx[b]].first_submit <
					old[idx[b - 1]].first_submit; b--) {
			size_t t = idx[b];

			idx[b] = idx[b - 1];
			idx[b - 1] = t;
		}
	for (size_t a = 0; a < kept; a++) {
		j->segs[a] = old[idx[a]];
		map[idx[a]] = (int32_t)a;
	}
	j->nseg = kept;
	for (size_t i = 0; i < j->nhost; i++)
		if (j->hj[i].seg >= 0)
			j->hj[i].seg = map[j->hj[i].seg];
	free(map);
	free(idx);
	free(old);
	return 0;
}

/*
 * How far the clocks of two neighbouring segments are apart, at both
 * their reference times: a step shows at each, a short segment's poor
 * drift only far from its own.
 */
static double seg_jump(const struct hmb_join_seg *a,
		       const struct hmb_join_seg *b)
{
	double t = b->ref, jump, d;

	jump = fabs(hmb__seg_map(b, (uint64_t)t) - hmb__seg_map(a, (uint64_t)t));
	t = a->ref;
	d = fabs(hmb__seg_map(b, (uint64_t)t) - hmb__seg_map(a, (uint64_t)t));
	return d < jump ? d : jump;
}

/*
 * Each valid segment's clock again from the commands it holds now: the
 * pairings reclocking undid had widened it (a segment whose points
 * contradict each other has a bound that wide), so that the next round
 * tells the two clocks apart where the first could not.
 */
static int reestimate_segments(struct hmb_join *j)
{
	size_t *set = malloc((j->nhost ? j->nhost : 1) * sizeof(*set));
	struct hmb_clock k;

	if (!set)
		return -1;
	memset(&k, 0, sizeof(k));
	for (size_t g = 0; g < j->nseg; g++) {
		struct hmb_join_seg *s = &j->segs[g];
		size_t ns = 0;

		if (!s->valid)
			continue;
		for (size_t i = 0; i < j->nhost; i++)
			if (j->hj[i].seg == (int32_t)g && j->hj[i].fw >= 0)
				set[ns++] = i;
		hmb__join_estimate(j, &k, set, ns, false);
		if (k.valid)	/* else too few left: its clock stands */
			seg_clock(s, &k);
	}
	hmb_clock_free(&k);
	free(set);
	return 0;
}

int hmb__join_segments(struct hmb_join *j)
{
	/* the run's estimate again without a segment of coincidences */
	if (hmb__join_drop_interleaved(j) && hmb__join_run_estimate(j))
		return -1;
	/*
	 * and without the pairings made on the other side's clock, round
	 * by round with the segments' clocks made again from what is left
	 */
	for (int round = 0; round < 4; round++) {
		if (!hmb__join_reclock(j))
			break;
		if (hmb__join_run_estimate(j) || reestimate_segments(j))
			return -1;
	}
	if (order_segments(j))
		return -1;
	for (size_t g = 1; g < j->nseg; g++) {
		const struct hmb_join_seg *a = &j->segs[g - 1], *b = &j->segs[g];

		if (!a->valid || !b->valid)
			continue;
		if (seg_jump(a, b) > 4 * (a->off_err_ns + b->off_err_ns) +
		    JOIN_MIN_TOL) {
			j->tot.segment_steps++;
			if (step_boundary(j, g - 1))
				return -1;
		}
	}
	join_across(j);
	/*
	 * Commands next to the step that no segment explained: with the
	 * run's estimate, and if it took any, the estimate again with them
	 * (they say best where the step is).
	 */
	if (join_stepped(j) && hmb__join_run_estimate(j))
		return -1;
	/*
	 * Placement: the run's estimate, streamed as the agent does (it
	 * follows one step, record by record), unless it saw more than one
	 * step or no single line fits the run; then each command's segment.
	 */
	hmb__join_choose_placement(j);
	return 0;
}

void hmb__join_choose_placement(struct hmb_join *j)
{
	j->tot.place_run = j->clk.valid && j->clk.consistent &&
			   j->clk.steps <= 1;
}

/* ------------------------------------------------------------- placement */

/*
 * The valid segment in force at host time @t: the last one begun by then,
 * else the first one.  NULL if there is none.
 */
static const struct hmb_join_seg *seg_near(const struct hmb_join *j,
					   uint64_t t)
{
	const struct hmb_join_seg *best = NULL;

	for (size_t k = 0; k < j->nseg; k++) {
		if (!j->segs[k].valid)
			continue;
		if (best && j->segs[k].first_submit > t)
			break;
		best = &j->segs[k];
	}
	return best;
}

/*
 * The segment clock of host command @i, or NULL for the run's: its own
 * segment's, else (a command no segment's estimate holds) the one in
 * force at its submit.
 */
static const struct hmb_join_seg *seg_for(const struct hmb_join *j, size_t i)
{
	int32_t g = j->hj ? j->hj[i].seg : -1;

	if (j->tot.place_run || !j->hj)
		return NULL;
	if (g >= 0 && j->segs[g].valid)
		return &j->segs[g];
	return seg_near(j, j->host[i].submit_ns);
}

bool hmb__join_placed(const struct hmb_join *j, size_t i)
{
	return seg_for(j, i) || j->clk.valid;
}

static double jclk_map(const void *ctx, uint64_t fw, uint32_t seq)
{
	const struct jclk *c = ctx;
	const struct hmb_join_seg *g = seg_for(c->j, c->i);

	if (g)
		return hmb__seg_map(seg_across(c->j, g, seq), fw);
	return hmb_clock_map(&c->j->clk, fw, seq);
}

static double jclk_err(const void *ctx, uint32_t seq)
{
	const struct jclk *c = ctx;
	const struct hmb_join_seg *g = seg_for(c->j, c->i);

	/* the segment that maps it: its own, or the one in force */
	if (g)
		return seg_err(c->j, (int32_t)(g - c->j->segs));
	return hmb_clock_err_at(&c->j->clk, seq);
}

static bool jclk_in_bracket(const void *ctx, uint32_t seq)
{
	const struct jclk *c = ctx;

	return !seg_for(c->j, c->i) && hmb_clock_in_bracket(&c->j->clk, seq);
}

static int jclk_side(const void *ctx, uint32_t seq)
{
	const struct jclk *c = ctx;
	const struct hmb_join_seg *g = seg_for(c->j, c->i);

	if (g)
		return (int)(seg_across(c->j, g, seq) - c->j->segs);
	return !hmb_clock_before_step(&c->j->clk, seq);
}

struct hmb_cmd_clock hmb__join_clock_of(const struct hmb_join *j, size_t i,
					struct jclk *ctx)
{
	struct hmb_cmd_clock k = {
		.map = jclk_map, .err = jclk_err, .side = jclk_side, .ctx = ctx,
		.in_bracket = jclk_in_bracket,
	};

	ctx->j = j;
	ctx->i = i;
	return k;
}

double hmb_join_unmap(const struct hmb_join *j, size_t i, uint64_t h)
{
	const struct hmb_join_seg *g = seg_for(j, j->order[i]);
	double off = g ? g->off_ns : j->clk.off_ns;
	double drift = g ? g->drift : j->clk.drift;
	double ref = g ? g->ref : j->clk.ref;

	/* host = fw + off + drift * (fw - ref)  =>  solve for fw */
	return ((double)h - off + drift * ref) / (1.0 + drift);
}

/* Every command judged; the controller's into stats, the totals. */
void hmb__join_place(struct hmb_join *j)
{
	struct hmb_cmd c;

	j->tot.host_cmds += j->nhost;
	for (size_t i = 0; i < j->nhost; i++) {
		hmb_join_cmd(j, i, &c);
		if (c.h.ctrl != j->ctrl)
			j->tot.other_ctrl++;
		else
			hmb_cmd_stats_add(&j->stats, &c);
	}
	if (j->streaming)	/* counted as they are retired */
		return;
	j->tot.fw_cmds = j->nfw;
	for (size_t k = 0; k < j->nfw; k++) {
		j->tot.fw_complete += jfw_whole(&j->fw[k]);
		j->tot.fw_unmatched += j->fw[k].host < 0;
	}
	hmb_cmd_stats_sort(&j->stats);
}
