// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * joincausal.c - the offline join's last word on every pairing.  Keys and
 * the coarse offset propose; causality decides: a firmware command stays
 * with a host command only if each of its records, mapped by the clock
 * that places the command, lies inside the command's host window widened
 * by that clock's error bound (the host submits before the controller
 * fetches, the controller posts before the host completes).  A pairing
 * that fails is undone and counted, the run's estimate is made again
 * without it, and the host commands left unmatched get one search under
 * the final clocks.  Then a firmware command that fits nothing and has a
 * loss between two of its records is cut there: the firmware model merges
 * two commands of one id when the end of the first and the start of the
 * second were both lost.  Last, a host command still unmatched keeps the
 * nearest candidate its keys proposed as its evidence.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "joinpriv.h"

/*
 * Does @f fit host command @i on the clock that places @i?  *@d: how far
 * its first record lies from the submit.  A command that cannot be placed
 * (no clock, no completion) cannot be judged: *@judged false.
 */
static bool causal(const struct hmb_join *j, size_t i, const struct jfw *f,
		   double *d, bool *judged)
{
	struct hmb_cmd c;
	struct hmb_cmd_clock k;
	struct jclk ctx;

	*judged = false;
	if (!hmb__join_placed(j, i))
		return true;
	memset(&c, 0, sizeof(c));
	c.h = j->host[i];
	c.fw = hmb__jfw_side(f);
	k = hmb__join_clock_of(j, i, &ctx);
	hmb_cmd_judge(&c, &k);
	if (!c.placed)
		return true;
	*judged = true;
	for (int p = HMB_PHASE_FETCH; p < HMB_PHASE_COUNT; p++)
		if (f->mask & (1u << p)) {
			*d = fabs(c.fw_host_ns[p] - (double)c.h.submit_ns);
			break;
		}
	return c.in_window_err;
}

/* ------------------------------------------------- segments interleaved */

/* A segment's commands, by the seqs of their first records. */
struct span {
	int64_t lo, hi;		/* seqs, from a base */
	uint64_t tlo, thi;	/* firmware ts of those records */
	size_t n;
};

/* Do segments @g and @h disagree by more than their error bounds? */
static bool other_clock(const struct hmb_join *j, size_t g, size_t h)
{
	return fabs(j->segs[h].off_ns - j->segs[g].off_ns) >
	       4 * (j->segs[h].off_err_ns + j->segs[g].off_err_ns) +
	       JOIN_MIN_TOL;
}

/*
 * Does segment @g, whose seqs all lie on one side of larger segment @h's,
 * put its records on the other side of @h's in host time?  Seqs follow
 * the order the firmware wrote its records in, so host time cannot run
 * back between two segments, a step or not (each side on its own clock).
 */
static bool runs_back(const struct hmb_join *j, const struct span *sp,
		      size_t g, size_t h)
{
	double tol = 4 * (j->segs[g].off_err_ns + j->segs[h].off_err_ns) +
		     JOIN_MIN_TOL;

	if (sp[g].lo > sp[h].hi)
		return hmb__seg_map(&j->segs[g], sp[g].tlo) + tol <
		       hmb__seg_map(&j->segs[h], sp[h].thi);
	if (sp[g].hi < sp[h].lo)
		return hmb__seg_map(&j->segs[g], sp[g].thi) - tol >
		       hmb__seg_map(&j->segs[h], sp[h].tlo);
	return false;
}

/*
 * Is segment @g interleaved with larger segment @h: most of its commands
 * took records inside @h's seq range, and @h's own records lie dense
 * across its range?  A larger segment's range also spans its own few
 * coincidences: a clock step's earlier side, a minority of a window (the
 * streaming join's window that starts shortly before the step), lies
 * inside it with hardly a record of the larger segment among its own.
 */
static bool interleaved(const struct hmb_join *j, const struct span *sp,
			uint32_t base, size_t g, size_t h)
{
	size_t inside = 0, among = 0;

	if (!(sp[h].lo < sp[g].hi && sp[g].lo < sp[h].hi))
		return false;
	for (size_t i = 0; i < j->nhost; i++) {
		int32_t k = j->hj[i].seg;
		int64_t s;

		if (j->hj[i].fw < 0 || (k != (int32_t)g && k != (int32_t)h))
			continue;
		s = jseq_diff(j->fw[j->hj[i].fw].first_seq, base);
		if (k == (int32_t)g)
			inside += s > sp[h].lo && s < sp[h].hi;
		else
			among += s > sp[g].lo && s < sp[g].hi;
	}
	return 2 * inside > sp[g].n && 2 * among >= sp[g].n;
}

/*
 * Seqs number the records in the order the firmware wrote them, and one
 * clock holds from a step to the next: the records a segment's commands
 * were given lie in a seq range of their own, in host time after those of
 * lower seqs.  A segment that a larger one on another clock contradicts
 * (interleaved with it, or running back in host time against it) is a
 * coincidence of keys (ids recur with the host's tag order: commands the
 * firmware never traced, in a pause, line up with the records of other
 * ones), not a clock: its pairings are undone and it is no longer valid.
 * How many: the return.
 */
size_t hmb__join_drop_interleaved(struct hmb_join *j)
{
	size_t dropped = 0;
	uint32_t base = 0;
	bool have_base = false;
	struct span *sp;

	sp = calloc(j->nseg ? j->nseg : 1, sizeof(*sp));
	if (!sp)
		return 0;
	for (size_t i = 0; i < j->nhost; i++) {
		int32_t g = j->hj[i].seg;
		const struct jfw *f;
		int64_t s;

		if (g < 0 || j->hj[i].fw < 0)
			continue;
		f = &j->fw[j->hj[i].fw];
		if (!have_base) {
			base = f->first_seq;
			have_base = true;
		}
		s = jseq_diff(f->first_seq, base);
		if (!sp[g].n || s < sp[g].lo) {
			sp[g].lo = s;
			sp[g].tlo = f->first;
		}
		if (!sp[g].n || s > sp[g].hi) {
			sp[g].hi = s;
			sp[g].thi = f->first;
		}
		sp[g].n++;
	}
	for (size_t g = 0; g < j->nseg; g++) {
		bool drop = false;

		for (size_t h = 0; h < j->nseg && !drop; h++)
			drop = h != g && sp[h].n > 2 * sp[g].n &&
			       j->segs[h].valid && other_clock(j, g, h) &&
			       (interleaved(j, sp, base, g, h) ||
				runs_back(j, sp, g, h));
		if (!drop)
			continue;
		for (size_t i = 0; i < j->nhost; i++) {
			if (j->hj[i].seg != (int32_t)g)
				continue;
			if (j->hj[i].fw >= 0) {
				j->fw[j->hj[i].fw].host = -1;
				j->hj[i].fw = -1;
				dropped++;
			}
			j->hj[i].seg = -1;
		}
		j->segs[g].valid = false;
	}
	free(sp);
	j->tot.fw_refused += dropped;
	return dropped;
}

/* ------------------------------------------------ the clock at a seq */

/* A matched command of a valid segment, by the seq of its first record. */
struct seq_seg {
	int64_t seq;		/* from the first such command's */
	size_t i;		/* host command */
	int32_t g;		/* its segment */
};

static int cmp_seq_seg(const void *a, const void *b)
{
	const struct seq_seg *x = a, *y = b;

	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/*
 * Do segments @a and @b tell the same host time for firmware time @ts?
 * Within the tighter one's bound: a segment whose points contradict each
 * other (pairings made on another clock among them) has a bound wide
 * enough to hold any clock, and would hide the very step it straddles.
 */
static bool same_clock(const struct hmb_join *j, int32_t a, int32_t b,
		       uint64_t ts)
{
	const struct hmb_join_seg *x = &j->segs[a], *y = &j->segs[b];

	return a == b || fabs(hmb__seg_map(x, ts) - hmb__seg_map(y, ts)) <=
			 4 * fmin(x->off_err_ns, y->off_err_ns) + JOIN_MIN_TOL;
}

/* Do @f's records, mapped by segment @g, lie in @h's window? */
static bool fits_seg(const struct hmb_join_seg *g, const struct jfw *f,
		     const struct hmb_host_cmd *h)
{
	double tol = hmb__seg_tol(g);

	return hmb__seg_map(g, f->first) >= (double)h->submit_ns - tol &&
	       hmb__seg_map(g, f->last) <= (double)h->complete_ns + tol;
}

/*
 * The segment whose clock the commands written around @v[p] are on, if
 * nearly all of those that are not on @v[p]'s own clock agree on one and
 * they outnumber the others three to one; else -1.
 */
static int32_t clock_around(const struct hmb_join *j, const struct seq_seg *v,
			    size_t n, size_t p)
{
	enum { NEAR = 16 };
	uint64_t ts = j->fw[j->hj[v[p].i].fw].first;
	size_t lo = p > NEAR ? p - NEAR : 0, hi = p + NEAR < n ? p + NEAR : n - 1;
	size_t own = 0, other = 0, best = 0;
	int32_t m = -1;

	for (size_t q = lo; q <= hi; q++) {
		if (q == p)
			continue;
		if (same_clock(j, v[p].g, v[q].g, ts)) {
			own++;
			continue;
		}
		other++;
		if (m < 0)
			m = v[q].g;
		if (same_clock(j, m, v[q].g, ts))
			best++;
	}
	return other >= NEAR && best * 8 >= other * 7 && other >= 3 * own ?
	       m : -1;
}

/*
 * One clock holds at each record: the firmware writes its records in seq
 * order and steps its clock between two of them.  Rounds of one chunk may
 * find two clocks (a step inside the chunk), and the first round's clock,
 * over the whole chunk, also pairs commands from the other side of the
 * step whose ids recur about the step's size away: their records lie
 * among the other clock's.  Such a pairing is undone and counted, and the
 * command searched again on the clock its records' neighbours are on.
 * How many were undone: the return.
 */
size_t hmb__join_reclock(struct hmb_join *j)
{
	struct seq_seg *v;
	int32_t *to;
	size_t n = 0, undone = 0;
	uint32_t base = 0;

	v = malloc((j->nhost ? j->nhost : 1) * sizeof(*v));
	to = malloc((j->nhost ? j->nhost : 1) * sizeof(*to));
	if (!v || !to) {
		free(v);
		free(to);
		return 0;
	}
	for (size_t i = 0; i < j->nhost; i++) {
		int32_t g = j->hj[i].seg;

		to[i] = -1;
		if (g < 0 || j->hj[i].fw < 0 || !j->segs[g].valid)
			continue;
		if (!n)
			base = j->fw[j->hj[i].fw].first_seq;
		v[n].seq = jseq_diff(j->fw[j->hj[i].fw].first_seq, base);
		v[n].i = i;
		v[n].g = g;
		n++;
	}
	qsort(v, n, sizeof(*v), cmp_seq_seg);
	for (size_t p = 0; p < n; p++) {
		size_t i = v[p].i;
		int32_t m = clock_around(j, v, n, p);

		if (m >= 0 && !fits_seg(&j->segs[m], &j->fw[j->hj[i].fw],
					&j->host[i]))
			to[i] = m;
	}
	for (size_t i = 0; i < j->nhost; i++)
		if (to[i] >= 0) {
			j->fw[j->hj[i].fw].host = -1;
			j->hj[i].fw = -1;
			j->hj[i].seg = -1;
			undone++;
		}
	for (size_t o = 0; o < j->nhost && undone; o++) {
		size_t i = j->order[o];
		const struct jmap mp = { .g = to[i] >= 0 ? &j->segs[to[i]] : NULL,
					 .tol = JOIN_MIN_TOL };
		long f;

		if (to[i] < 0)
			continue;
		f = hmb__join_closest(j, &j->host[i], &mp);
		if (f >= 0 && fits_seg(mp.g, &j->fw[f], &j->host[i])) {
			hmb__join_pair(j, i, f);
			j->hj[i].seg = to[i];
		}
	}
	free(v);
	free(to);
	j->tot.fw_refused += undone;
	return undone;
}

/* How many of this controller's pairings the chosen clocks hold. */
static size_t held(const struct hmb_join *j)
{
	size_t n = 0;

	for (size_t i = 0; i < j->nhost; i++) {
		const struct jhost *r = &j->hj[i];
		bool judged;
		double d;

		if (r->fw >= 0 && j->host[i].ctrl == j->ctrl &&
		    causal(j, i, &j->fw[r->fw], &d, &judged))
			n++;
	}
	return n;
}

/*
 * The run's estimate places the commands unless the segments' clocks
 * hold more of the pairings: where the two disagree about a step's
 * record, the one that keeps causality for more commands has the
 * evidence, and refusing what only the other holds would undo right
 * pairings.
 */
static void choose_by_evidence(struct hmb_join *j)
{
	size_t run;

	if (!j->tot.place_run || !j->nseg)
		return;
	run = held(j);
	j->tot.place_run = false;
	if (held(j) <= run)
		j->tot.place_run = true;
}

/*
 * Keep what causality refused host command @i (@f's records), for its
 * output.  Without memory only that evidence is lost: the verdict stands.
 */
static void note_refused(struct hmb_join *j, size_t i, const struct jfw *f)
{
	if (j->hj[i].refused < 0) {
		if (j->nrefused == j->caprefused) {
			size_t cap = j->caprefused ? 2 * j->caprefused : 64;
			void *p = realloc(j->refused, cap * sizeof(*j->refused));

			if (!p)
				return;
			j->refused = p;
			j->caprefused = cap;
		}
		j->hj[i].refused = (int32_t)j->nrefused++;
	}
	j->refused[j->hj[i].refused] = hmb__jfw_side(f);
}

/* Undo every pairing of this controller that breaks causality. */
static size_t refuse(struct hmb_join *j)
{
	size_t n = 0;

	for (size_t i = 0; i < j->nhost; i++) {
		struct jhost *r = &j->hj[i];
		bool judged;
		double d;

		if (r->fw < 0 || j->host[i].ctrl != j->ctrl ||
		    causal(j, i, &j->fw[r->fw], &d, &judged))
			continue;
		note_refused(j, i, &j->fw[r->fw]);
		j->fw[r->fw].host = -1;
		r->fw = -1;
		r->seg = -1;
		n++;
	}
	j->tot.fw_refused += n;
	return n;
}

/* The unused firmware command of @i's keys that fits it best, or -1. */
static long best_fit(const struct hmb_join *j, size_t i)
{
	const struct hmb_host_cmd *h = &j->host[i];
	uint32_t key = hmb__host_key(h);
	double best = 0;
	long bk = -1;

	for (size_t k = hmb__join_fw_lower(j, key);
	     k < j->nfw && hmb__jfw_key(&j->fw[k]) == key; k++) {
		const struct jfw *f = &j->fw[k];
		bool judged;
		double d = 0;

		if (f->host >= 0 || !hmb__join_slba_ok(f, h) ||
		    !causal(j, i, f, &d, &judged) || !judged)
			continue;
		if (bk < 0 || d < best) {
			best = d;
			bk = (long)k;
		}
	}
	return bk;
}

/* The host commands left unmatched, each given its best causal fit. */
static size_t rejoin(struct hmb_join *j)
{
	size_t n = 0;

	for (size_t i = 0; i < j->nhost; i++) {
		long f;

		if (j->hj[i].fw >= 0 || j->host[i].ctrl != j->ctrl)
			continue;
		f = best_fit(j, i);
		if (f >= 0) {
			hmb__join_pair(j, i, f);
			n++;
		}
	}
	return n;
}

/* ------------------------------------------------ commands merged by loss */

/*
 * Is one of the losses @gaps[0..@n) strictly between seqs @a and @b (a
 * before b)?  The losses are the whole run's, not the window's, so a scan
 * of them per check grows with the trace: @gaps rises in seq order
 * (note_gap() only moves forward), and counted from @gaps[0] its seqs are
 * sorted, so the first loss after @a is a binary search away.  The seqs
 * strictly between are a cyclic range: in it lie that loss or, if the
 * range wraps past @gaps[0]'s seq, @gaps[0].  With @b not after @a, the
 * scan.
 */
bool hmb__join_lost_between(const uint32_t *gaps, size_t n, uint32_t a,
			    uint32_t b)
{
	uint32_t len = b - a - 1, from;
	size_t lo = 0, hi = n;

	if (jseq_diff(b, a) <= 0) {
		for (size_t g = 0; g < n; g++)
			if (jseq_diff(gaps[g], a) > 0 &&
			    jseq_diff(gaps[g], b) < 0)
				return true;
		return false;
	}
	if (!n)
		return false;
	from = a + 1 - gaps[0];
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (gaps[mid] - gaps[0] < from)
			lo = mid + 1;
		else
			hi = mid;
	}
	return (lo < n && gaps[lo] - a - 1 < len) || gaps[0] - a - 1 < len;
}

/* Was a record lost between seqs @a and @b (a before b)? */
static bool lost_between(const struct hmb_join *j, uint32_t a, uint32_t b)
{
	return hmb__join_lost_between(j->gaps, j->ngap, a, b);
}

/* The unmatched host command of this controller that @f fits best, or -1. */
static long fit_unmatched(const struct hmb_join *j, const struct jfw *f)
{
	uint32_t key = hmb__jfw_key(f);
	size_t lo = 0, hi = j->nhost;
	double best = 0;
	long bi = -1;

	while (lo < hi) {	/* host[] is sorted by (qid, cid, submit) */
		size_t mid = lo + (hi - lo) / 2;

		if (hmb__host_key(&j->host[mid]) < key)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (size_t i = lo; i < j->nhost && hmb__host_key(&j->host[i]) == key;
	     i++) {
		bool judged;
		double d = 0;

		if (j->hj[i].fw >= 0 || j->host[i].ctrl != j->ctrl ||
		    !hmb__join_slba_ok(f, &j->host[i]) ||
		    !causal(j, i, f, &d, &judged) || !judged)
			continue;
		if (bi < 0 || d < best) {
			best = d;
			bi = (long)i;
		}
	}
	return bi;
}

/* @f's records of the phases in @mask: a command of its own. */
static struct jfw jfw_part(const struct jfw *f, uint8_t mask)
{
	struct jfw p = *f;
	bool first = true;

	p.mask = mask;
	p.have_slba = f->have_slba && (mask & (1u << HMB_PHASE_FETCH));
	for (int q = HMB_PHASE_FETCH; q < HMB_PHASE_COUNT; q++) {
		if (!(mask & (1u << q))) {
			p.ts[q] = 0;
			p.seq[q] = 0;
			continue;
		}
		if (first) {
			p.first = f->ts[q];
			p.first_seq = f->seq[q];
			first = false;
		}
		p.last = f->ts[q];
		p.last_seq = f->seq[q];
	}
	return p;
}

/*
 * An unmatched firmware command whose records have a loss between two of
 * them, cut at such a loss: *@a and *@b, and the unmatched host commands
 * they fit, *@ha and *@hb (-1: none; the same one: only @a joins it).
 * Phases come in command order, so the records of the two commands it
 * merged are a prefix and a suffix; other records lost in between put
 * more than one loss inside it.  The cut is at the loss where each part
 * fits a host command of its own; else where the one part that fits one
 * gets the most records: the records that still fit the earlier use's
 * host window are its own, as are the ones that already fit the later
 * use's (its id comes round only once it completed).
 */
static bool cut(const struct hmb_join *j, const struct jfw *f, struct jfw *a,
		struct jfw *b, long *ha, long *hb)
{
	uint8_t pre = 0;
	int last = -1, most = 0;

	for (int q = HMB_PHASE_FETCH; q < HMB_PHASE_COUNT; q++) {
		if (!(f->mask & (1u << q)))
			continue;
		if (last >= 0 && lost_between(j, f->seq[last], f->seq[q])) {
			struct jfw pa = jfw_part(f, pre);
			struct jfw pb = jfw_part(f, (uint8_t)(f->mask & ~pre));
			long xa = fit_unmatched(j, &pa);
			long xb = fit_unmatched(j, &pb);
			int n = 0;

			if (xa >= 0 && xb >= 0 && xb != xa)
				n = HMB_PHASE_COUNT;	/* beats any one part */
			else if (xa >= 0)
				n = __builtin_popcount(pa.mask);
			else if (xb >= 0)
				n = __builtin_popcount(pb.mask);
			if (n > most) {
				most = n;
				*a = pa;
				*b = pb;
				*ha = xa;
				*hb = xb;
			}
		}
		pre |= (uint8_t)(1u << q);
		last = q;
	}
	return most > 0;
}

/* Every unmatched firmware command merged across a loss, cut. */
static int split_merged(struct hmb_join *j)
{
	size_t n0 = j->nfw;

	for (size_t k = 0; k < n0; k++) {
		struct jfw a, b;
		long ha, hb;

		if (j->fw[k].host >= 0 || !j->ngap ||
		    !cut(j, &j->fw[k], &a, &b, &ha, &hb))
			continue;
		if (hmb__join_fw_room(j, 1))
			return -1;
		j->fw[k] = a;
		j->fw[j->nfw] = b;
		if (ha >= 0)
			hmb__join_pair(j, (size_t)ha, (long)k);
		if (hb >= 0 && hb != ha)
			hmb__join_pair(j, (size_t)hb, (long)j->nfw);
		j->nfw++;
		j->tot.fw_split++;
	}
	if (j->nfw != n0)
		hmb__join_resort_fw(j);
	return 0;
}

/*
 * How far the records of @f lie outside host command @i's window widened
 * by the error bound, on the clock that places @i: 0 when inside.
 */
static double outside(const struct hmb_join *j, size_t i, const struct jfw *f)
{
	const struct hmb_host_cmd *h = &j->host[i];
	struct hmb_fw_side fw = hmb__jfw_side(f);
	struct hmb_cmd_clock k;
	struct jclk ctx;
	double most = 0;

	k = hmb__join_clock_of(j, i, &ctx);
	for (int p = HMB_PHASE_FETCH; p < HMB_PHASE_COUNT; p++) {
		double m, e;

		if (!(fw.mask & (1u << p)))
			continue;
		m = k.map(k.ctx, fw.ts[p], fw.seq[p]);
		e = k.err(k.ctx, fw.seq[p]);
		m = fmax((double)h->submit_ns - e - m,
			 m - (double)h->complete_ns - e);
		if (m > most)
			most = m;
	}
	return most;
}

/*
 * A host command left unmatched gets as its evidence the unused firmware
 * command of its keys that lies nearest outside its window, if within
 * JOIN_PASS2_TOL (the join's widest proposal): nothing was paired, so
 * nothing is counted, but the output says why.  Another estimate of the
 * clock (the live agent's) may disagree about a record that close to a
 * window's edge; this is what the two joins' comparisons leave out.
 */
static void note_near(struct hmb_join *j)
{
	for (size_t i = 0; i < j->nhost; i++) {
		const struct hmb_host_cmd *h = &j->host[i];
		uint32_t key = hmb__host_key(h);
		double best = 0;
		long bk = -1;

		if (j->hj[i].fw >= 0 || j->hj[i].refused >= 0 ||
		    h->ctrl != j->ctrl || !h->complete_ns ||
		    h->complete_ns < h->submit_ns || !hmb__join_placed(j, i))
			continue;
		for (size_t k = hmb__join_fw_lower(j, key);
		     k < j->nfw && hmb__jfw_key(&j->fw[k]) == key; k++) {
			const struct jfw *f = &j->fw[k];
			double d;

			if (f->host >= 0 || !hmb__join_slba_ok(f, h))
				continue;
			d = outside(j, i, f);
			if (d > 0 && d <= JOIN_PASS2_TOL && (bk < 0 || d < best)) {
				best = d;
				bk = (long)k;
			}
		}
		if (bk >= 0)
			note_refused(j, i, &j->fw[bk]);
	}
}

int hmb__join_causal(struct hmb_join *j)
{
	choose_by_evidence(j);
	for (int round = 0; round < 4; round++) {
		size_t refused = refuse(j);

		/* the estimate again without what was refused */
		if (refused) {
			if (hmb__join_run_estimate(j))
				return -1;
			hmb__join_choose_placement(j);
			choose_by_evidence(j);
		}
		if (!rejoin(j) && !refused)
			break;
	}
	/* the loop may end on its count: the invariant holds all the same */
	refuse(j);
	if (split_merged(j))
		return -1;
	note_near(j);
	return 0;
}
