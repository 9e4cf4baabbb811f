// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * joinstream.c - the offline join a window at a time (hmb_join_stream,
 * hmbtrace_join.h): both inputs pulled until the next window of host
 * commands and the firmware commands that can match them are in, the
 * window joined by the passes of join.c and joinseg.c, its commands handed
 * out and freed, and the firmware commands a later host command may still
 * claim carried into the next window.  The commands the firmware model
 * still holds open are candidates of each window as well.  Memory is
 * bounded by the window, not by the trace.
 */
#include <stdlib.h>
#include <string.h>

#include "fwmpriv.h"
#include "joinpriv.h"

void hmb_join_set_window(struct hmb_join *j, size_t host_cmds,
			 uint64_t late_ns)
{
	j->win = host_cmds ? host_cmds : HMB_JOIN_WINDOW;
	j->late_ns = late_ns ? late_ns : HMB_JOIN_LATE_NS;
}

double hmb__join_stream_map(const struct hmb_join *j, uint64_t fw)
{
	return (double)fw + j->map_off +
	       j->map_drift * ((double)fw - j->map_ref);
}

/*
 * The next window: host commands until the window is full or their input
 * ends, then records until the firmware commands, mapped with the last
 * window's clock, pass the window's last completion by the reordering
 * bound (the first window, without a clock: until there are half a window
 * more firmware than host commands), or to the end of the dump once the
 * host input has ended.  0, HMB_E_NOMEM, or a source's non-zero return.
 */
static int fill(struct hmb_join *j, const struct hmb_join_src *s,
		bool *host_end)
{
	uint64_t last = 0;
	struct hmb_record rec;
	size_t nh;
	int rc = 0;

	while (!*host_end && j->nhost < j->win) {
		struct hmb_host_cmd h;

		rc = s->host(s->ctx, &h, host_end);
		if (rc || *host_end)
			break;
		if (j->have_cut && (double)h.submit_ns < j->cut)
			j->tot.host_late++;
		if (hmb_join_host(j, &h))
			return HMB_E_NOMEM;
	}
	if (rc)
		return rc;
	for (size_t i = 0; i < j->nhost; i++)
		if (j->host[i].complete_ns > last)
			last = j->host[i].complete_ns;
	nh = j->nhost;
	while (!j->fw_end) {
		bool end = false;

		if (!*host_end &&
		    (j->have_map ? j->fw_seen &&
		     hmb__join_stream_map(j, j->fw_max_first) >
		     (double)last + (double)j->late_ns :
		     j->nfw >= nh + j->win / 2))
			break;
		rc = s->record(s->ctx, &rec, &end);
		if (rc)
			return rc;
		if (end) {
			j->fw_end = true;
		} else {
			j->rec_next = rec.hdr.seq + 1;
			j->rec_seen = true;
			if (hmb_join_record(j, &rec))
				return HMB_E_NOMEM;
		}
	}
	return 0;
}

/*
 * The commands the model still holds open, as candidates of the window.
 * One whose cqe_posted was lost stays open until its id's next use,
 * which may come windows later or never: its host command would go out
 * unmatched, while the whole-input join (the model closed at the end of
 * the dump) pairs the two.  Copies, marked open: retire() takes those a
 * host command going out claimed out of the model, and drops the others
 * (the model goes on with them).  At the dump's end the model is closed
 * instead (hmb__join_prepare).
 */
static int add_open(struct hmb_join *j)
{
	if (!j->fwm_on || j->fw_end || !j->fwm.tab || !j->fwm.open)
		return 0;
	if (hmb__join_fw_room(j, j->fwm.open))
		return -1;
	for (size_t i = 0; i < HMB_FWM_MAX_INFLIGHT; i++)
		if (j->fwm.tab[i].used) {
			struct jfw *f = &j->fw[j->nfw++];

			hmb__jfw_of(j, f, &j->fwm.tab[i]);
			f->open = true;
		}
	return 0;
}

/*
 * The open commands (add_open) that host commands going out claimed, out
 * of the model: they become the join's own, and so do the other parts of
 * a command the model gives up whole (a merged one, cut by
 * joincausal.c).  j->fw is in key order; the kept host commands are
 * unjoined already.
 */
static void take_open(struct hmb_join *j)
{
	for (size_t a = 0, b; a < j->nfw; a = b) {
		uint32_t key = hmb__jfw_key(&j->fw[a]);
		uint8_t taken = 0;
		bool whole;

		for (b = a; b < j->nfw && hmb__jfw_key(&j->fw[b]) == key; b++)
			if (j->fw[b].open && j->fw[b].host >= 0)
				taken |= j->fw[b].mask;
		if (!taken)
			continue;
		whole = hmb__fwm_take(&j->fwm, (uint16_t)(key >> 16),
				      (uint16_t)key, taken);
		for (size_t k = a; k < b; k++)
			if (j->fw[k].open && (whole || j->fw[k].host >= 0))
				j->fw[k].open = false;
	}
}

/* Add the window's segments to the run's. */
static int keep_segments(struct hmb_join *j)
{
	if (j->nall + j->nseg > j->capall) {
		size_t cap = (j->nall + j->nseg) * 2;
		struct hmb_join_seg *v = realloc(j->segs_all, cap * sizeof(*v));

		if (!v)
			return -1;
		j->segs_all = v;
		j->capall = cap;
	}
	if (j->nseg)
		memcpy(j->segs_all + j->nall, j->segs,
		       j->nseg * sizeof(*j->segs));
	j->nall += j->nseg;
	j->nseg = 0;
	return 0;
}

static int cmp_size(const void *a, const void *b)
{
	size_t x = *(const size_t *)a, y = *(const size_t *)b;

	return x < y ? -1 : x > y;
}

/*
 * After a window whose first @n_out commands (in submit order) went out:
 * those host commands freed, the rest (the window's latest submits) kept
 * for the next window unjoined, so that it does not start cold and the
 * last window is never a handful of commands.  The firmware commands
 * counted and freed, except the unmatched ones (their partners unjoined
 * included) that a later host command may still claim: mapped at or
 * after the earliest kept submit (else the latest sent) less the bound.
 * At the end (@last) every one is counted.
 */
static void retire(struct hmb_join *j, size_t n_out, bool last)
{
	uint64_t from = 0;
	size_t k = 0, nk = j->nhost - n_out;

	for (size_t o = 0; o < n_out; o++)
		if (j->host[j->order[o]].submit_ns > from)
			from = j->host[j->order[o]].submit_ns;
	if (nk)
		from = j->host[j->order[n_out]].submit_ns;
	if (j->clk.valid) {
		j->map_off = j->clk.off_ns;
		j->map_drift = j->clk.drift;
		j->map_ref = j->clk.ref;
		j->have_map = true;
	} else if (j->nseg || j->nall) {
		/* the coarse offset of the window's last chunk */
		j->map_off = j->coarse_off;
		j->map_drift = 0;
		j->map_ref = 0;
		j->have_map = true;
	}
	j->cut = (double)from - (double)j->late_ns;
	j->have_cut = j->nhost > 0;
	/* the kept host commands to the front, unjoined */
	for (size_t o = n_out; o < j->nhost; o++) {
		const struct jhost *r = &j->hj[j->order[o]];

		if (r->fw >= 0)
			j->fw[r->fw].host = -1;
	}
	for (size_t o = n_out; o < j->nhost; o++)
		j->order[o - n_out] = j->order[o];
	/* host[] in place: ascending positions move down, in submit order */
	qsort(j->order, nk, sizeof(*j->order), cmp_size);
	for (size_t o = 0; o < nk; o++)
		j->host[o] = j->host[j->order[o]];
	j->nhost = nk;
	if (j->fwm_on)
		take_open(j);
	for (size_t i = 0; i < j->nfw; i++) {
		struct jfw *f = &j->fw[i];

		if (f->open)	/* still the model's */
			continue;
		if (!last && f->host < 0 && j->have_map &&
		    hmb__join_stream_map(j, f->first) >= j->cut) {
			j->fw[k++] = *f;
			continue;
		}
		j->tot.fw_cmds++;
		j->tot.fw_complete += jfw_whole(f);
		j->tot.fw_unmatched += f->host < 0;
	}
	j->nfw = k;
	j->all_run = j->all_run && j->tot.place_run;
}

static void seq_min(uint32_t *s, uint32_t seq)
{
	if (jseq_diff(seq, *s) < 0)
		*s = seq;
}

/*
 * The earliest record a later command may still be joined with: the
 * fetch of a firmware command carried over or still open in the model,
 * else the next record to read.
 */
static uint32_t records_done(const struct hmb_join *j)
{
	const uint8_t fetch = 1u << HMB_PHASE_FETCH;
	uint32_t s = j->rec_next;

	for (size_t i = 0; i < j->nfw; i++)
		if (j->fw[i].mask & fetch)
			seq_min(&s, j->fw[i].seq[HMB_PHASE_FETCH]);
	if (j->fwm_on && j->fwm.tab)
		for (size_t i = 0; i < HMB_FWM_MAX_INFLIGHT; i++)
			if (j->fwm.tab[i].used && (j->fwm.tab[i].mask & fetch))
				seq_min(&s, j->fwm.tab[i].seq[HMB_PHASE_FETCH]);
	return s;
}

/* The window's first @n commands in submit order: judged, counted, out. */
static int emit(struct hmb_join *j, const struct hmb_join_src *s, size_t n)
{
	struct hmb_cmd c;
	int rc;

	for (size_t i = 0; i < n; i++) {
		hmb_join_cmd(j, i, &c);
		j->tot.host_cmds++;
		if (c.h.ctrl != j->ctrl)
			j->tot.other_ctrl++;
		else
			hmb_cmd_stats_add(&j->stats, &c);
		rc = s->cmd(s->ctx, j, i, &c);
		if (rc)
			return rc;
	}
	return 0;
}


int hmb_join_stream(struct hmb_join *j, const struct hmb_join_src *s,
		    unsigned int top_n, struct hmb_error *err)
{
	bool host_end = false, first = true;
	size_t n_out;
	int rc;

	if (j->ran)
		return hmb__err(err, HMB_E_INVAL, 0, 0, "join: run twice");
	j->ran = true;
	j->streaming = true;
	j->all_run = true;
	if (!j->win)
		hmb_join_set_window(j, 0, 0);
	if (hmb_cmd_stats_init(&j->stats, top_n, 0))
		goto nomem;
	for (;;) {
		rc = fill(j, s, &host_end);
		if (rc == HMB_E_NOMEM)
			goto nomem;
		if (rc)
			return rc;
		if (first) {
			rc = s->pick_ctrl(s->ctx, j->ctrls, j->nctrl, &j->ctrl);
			if (rc)
				return rc;
			first = false;
		}
		/* the passes reorder the window's segments: a fresh list */
		j->nseg = 0;
		if (add_open(j) || hmb__join_prepare(j) || hmb__join_chunks(j) ||
		    hmb__join_run_estimate(j) || hmb__join_segments(j) ||
		    hmb__join_causal(j))
			goto nomem;
		/* the last eighth by submit waits for the next window */
		n_out = host_end ? j->nhost : j->nhost - j->nhost / 8;
		j->tot.windows++;
		rc = emit(j, s, n_out);
		if (rc)
			return rc;
		if (keep_segments(j))
			goto nomem;
		retire(j, n_out, host_end);
		if (s->window_done) {
			rc = s->window_done(s->ctx, records_done(j), host_end);
			if (rc)
				return rc;
		}
		if (host_end)
			break;
	}
	/* what stays: every window's segments, the last one's clock */
	free(j->segs);
	j->segs = j->segs_all;
	j->nseg = j->nall;
	j->capseg = j->capall;
	j->segs_all = NULL;
	j->nall = j->capall = 0;
	free(j->hj);
	free(j->order);
	j->hj = NULL;
	j->order = NULL;
	j->tot.place_run = j->all_run;
	hmb_cmd_stats_sort(&j->stats);
	return 0;
nomem:
	return hmb__err(err, HMB_E_NOMEM, 0, 0,
			"join: out of memory (window of %zu host, %zu firmware commands)",
			j->nhost, j->nfw);
}
