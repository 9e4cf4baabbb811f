// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * t_join.c - the streaming join (hmb_join_stream, hmbtrace_join.h) gives
 * every command the records the whole-input join gives it, also a
 * command whose cqe_posted was lost, TAP.  Such a command stays open in
 * the firmware model until its id is used again, which may be windows
 * later or never; the window its host command goes out in must still
 * have it as a candidate.
 *
 * A hand-written run on one queue: 300 commands of 50 us every 100 us,
 * each with an id of its own, five records each, on a firmware clock
 * 400 ms behind the host's.  Command P loses its cqe_posted (its id never
 * comes back).  Commands A and B share an id: A loses its last three
 * records, B (20 ms long, in flight while A's window is joined) its
 * first two, so the model merges A's fetch and media_start with B's
 * records into one command, which the join must cut in two.  So are C
 * and D, one id again, merged the same way, but with one more record lost
 * between C's fetch and media_start: the cut belongs at the loss where
 * both parts fit, not at the first one.  Windows of 64 host commands,
 * which come in completion order.  Then, the whole input once more with
 * command E's records written 30 us before its submit: its keys propose
 * them, causality refuses them, and E stays unmatched with them as its
 * evidence (struct hmb_cmd.refused).  Last, streamed with E's records
 * 100 us early: a window of 64 commands must trim that one point, not
 * widen its clock's bound until E fits.
 */
#include <stdlib.h>
#include <string.h>

#include "hmbtrace_join.h"
#include "tap.h"

#ifndef HMB_TOP
#define HMB_TOP "../.."
#endif

#define NCMD	300
#define NREC	(5 * NCMD)
#define US	1000ull
#define T0	1000000000ull		/* host ns of the first submit */
#define OFF	400000000ull		/* host - firmware */
#define CMD_P	10
#define CMD_A	20
#define CMD_B	21
#define ID_AB	7
#define CMD_C	40
#define CMD_D	45
#define ID_CD	8
#define CMD_E	200
#define E_EARLY	30		/* us its records come before its submit */

struct rec {
	uint64_t ts;		/* firmware ns */
	uint16_t cid;
	uint8_t phase;		/* 1 fetch .. 5 cqe_posted */
	bool lost;
	uint32_t seq;
};

struct run {
	struct rec r[NREC];
	struct hmb_host_cmd h[NCMD];
	size_t nr, nh, ri, hi;
	/* per command (index by submit), what the join gave it */
	uint8_t mask[NCMD];
	uint32_t seq[NCMD][6];
	enum hmb_match match[NCMD];
	uint8_t refused[NCMD];
	uint32_t refused_seq[NCMD][6];
	unsigned int seen[NCMD];
	uint8_t pl[24];
};

static uint16_t cid_of(int i)
{
	if (i == CMD_A || i == CMD_B)
		return ID_AB;
	return i == CMD_C || i == CMD_D ? ID_CD : (uint16_t)(0x100 + i);
}

static int cmp_rec(const void *a, const void *b)
{
	const struct rec *x = a, *y = b;

	return x->ts < y->ts ? -1 : x->ts > y->ts;
}

static int cmp_complete(const void *a, const void *b)
{
	const struct hmb_host_cmd *x = a, *y = b;

	return x->complete_ns < y->complete_ns ? -1 :
	       x->complete_ns > y->complete_ns;
}

static void build(struct run *w, uint64_t e_early)
{
	/* phase offsets after the submit (us), and B's, 20 ms long */
	static const uint64_t at[6] = { 0, 5, 10, 30, 35, 40 };
	static const uint64_t at_b[6] = { 0, 5, 10, 1000, 19900, 19950 };

	memset(w, 0, sizeof(*w));
	for (int i = 0; i < NCMD; i++) {
		uint64_t sub = T0 + (uint64_t)i * 100 * US;
		uint64_t len = i == CMD_B ? 20000 * US : 50 * US;
		struct hmb_host_cmd *h = &w->h[w->nh++];

		h->submit_ns = sub;
		h->complete_ns = sub + len;
		h->qid = 1;
		h->cid = cid_of(i);
		h->nsid = 1;
		h->line = (uint32_t)i;	/* to find it again */
		for (int p = 1; p <= 5; p++) {
			struct rec *r = &w->r[w->nr++];

			r->ts = sub + (i == CMD_B ? at_b[p] : at[p]) * US - OFF -
				(i == CMD_E ? e_early * US : 0);
			r->cid = cid_of(i);
			r->phase = (uint8_t)p;
			r->lost = (i == CMD_P && p == 5) ||
				  (i == CMD_A && p >= 3) ||
				  (i == CMD_B && p <= 2) ||
				  (i == CMD_C && p >= 3) ||
				  (i == CMD_D && p <= 2);
		}
	}
	qsort(w->r, w->nr, sizeof(w->r[0]), cmp_rec);
	for (size_t k = 0, seq = 100; k < w->nr; k++) {
		w->r[k].seq = (uint32_t)seq++;
		/* a record lost right after C's fetch */
		if (w->r[k].cid == ID_CD && w->r[k].phase == 1 &&
		    w->r[k].ts + OFF < T0 + (uint64_t)CMD_D * 100 * US)
			seq++;
	}
	/* the agent writes a command at its completion */
	qsort(w->h, w->nh, sizeof(w->h[0]), cmp_complete);
}

static int src_record(void *ctx, struct hmb_record *out, bool *end)
{
	struct run *w = ctx;
	const struct rec *r;

	while (w->ri < w->nr && w->r[w->ri].lost)
		w->ri++;
	if (w->ri == w->nr) {
		*end = true;
		return 0;
	}
	r = &w->r[w->ri++];
	memset(out, 0, sizeof(*out));
	memset(w->pl, 0, sizeof(w->pl));
	w->pl[0] = 1;		/* sqid */
	w->pl[2] = (uint8_t)r->cid;
	w->pl[3] = (uint8_t)(r->cid >> 8);
	w->pl[8] = 2;		/* fetch's opc: read */
	out->hdr.magic = HMB_RECORD_MAGIC;
	out->hdr.seq = r->seq;
	out->hdr.ts_ns = r->ts;
	out->hdr.opcode = (uint16_t)(0x0100 + r->phase - 1);
	out->hdr.payload_len = sizeof(w->pl);
	out->payload = w->pl;
	*end = false;
	return 0;
}

static int src_host(void *ctx, struct hmb_host_cmd *h, bool *end)
{
	struct run *w = ctx;

	*end = w->hi == w->nh;
	if (!*end)
		*h = w->h[w->hi++];
	return 0;
}

static int src_pick(void *ctx, const uint32_t *ctrls, unsigned int n,
		    uint32_t *ctrl)
{
	(void)ctx;
	if (!n)
		return -1;
	*ctrl = ctrls[0];
	return 0;
}

static int src_cmd(void *ctx, const struct hmb_join *j, size_t i,
		   const struct hmb_cmd *c)
{
	struct run *w = ctx;
	uint32_t n = c->h.line;

	(void)j;
	(void)i;
	if (n >= NCMD)
		return -1;
	w->seen[n]++;
	w->mask[n] = c->fw.mask;
	w->match[n] = c->match;
	w->refused[n] = c->refused.mask;
	for (int p = 1; p <= 5; p++) {
		w->seq[n][p] = c->fw.mask & (1u << p) ? c->fw.seq[p] : 0;
		w->refused_seq[n][p] = c->refused.mask & (1u << p) ?
				       c->refused.seq[p] : 0;
	}
	return 0;
}

/* The true record seq of phase @p of command @i, 0 if lost. */
static uint32_t truth(const struct run *w, int i, int p)
{
	uint64_t sub = T0 + (uint64_t)i * 100 * US;
	uint64_t end = sub + (i == CMD_B ? 20000 : 50) * US;

	for (size_t k = 0; k < w->nr; k++) {
		const struct rec *r = &w->r[k];

		if (r->cid == cid_of(i) && r->phase == p && !r->lost &&
		    r->ts + OFF >= sub && r->ts + OFF <= end)
			return r->seq;
	}
	return 0;
}

static int join(const struct hmb_dict *d, struct run *w, size_t window,
		struct hmb_join_totals *tot)
{
	const struct hmb_join_src src = {
		.record = src_record, .host = src_host, .pick_ctrl = src_pick,
		.cmd = src_cmd, .ctx = w,
	};
	struct hmb_error err = { 0 };
	struct hmb_join *j = hmb_join_new(d);
	int rc;

	if (!j)
		return -1;
	/* 30 ms: B's submit, 20 ms before its completion, is not late */
	hmb_join_set_window(j, window, 30000 * US);
	rc = hmb_join_stream(j, &src, 0, &err);
	if (rc)
		diag("hmb_join_stream: %d %s", rc, err.msg);
	*tot = *hmb_join_totals(j);
	hmb_join_free(j);
	return rc;
}

int main(void)
{
	static struct run s, whole, e, e2;
	struct hmb_join_totals ts = { 0 }, tw = { 0 };
	struct hmb_error err = { 0 };
	struct hmb_dict *d;
	int wrong = -1, differ = -1, right = 0, once = 0, rs, rw;

	if (!ok(!hmb_dict_load(&d, HMB_TOP "/share/hmb-events.dict", &err),
		"shipped dictionary loads"))
		return tap_done();
	build(&s, 0);
	build(&whole, 0);
	build(&e, E_EARLY);
	build(&e2, 100);
	rs = join(d, &s, 64, &ts);
	rw = join(d, &whole, SIZE_MAX, &tw);
	ok(!rs && ts.windows > 3, "streamed: %llu windows",
	   (unsigned long long)ts.windows);
	ok(!rw && tw.windows == 1, "whole input: one window");
	for (int i = 0; i < NCMD; i++) {
		bool good = true;

		once += s.seen[i] == 1;
		for (int p = 1; p <= 5; p++)
			good = good && s.seq[i][p] == truth(&s, i, p);
		right += good;
		if (!good && wrong < 0)
			wrong = i;
		if (differ < 0 &&
		    (s.mask[i] != whole.mask[i] || s.match[i] != whole.match[i] ||
		     memcmp(s.seq[i], whole.seq[i], sizeof(s.seq[i]))))
			differ = i;
	}
	ok(once == NCMD, "each of the %d commands handed out once (%d)",
	   NCMD, once);
	ok(s.match[CMD_P] == HMB_M_PARTIAL && s.mask[CMD_P] == 0x1e,
	   "cqe_posted lost, id never used again: partial with its four "
	   "records (%s, mask 0x%02x)", hmb_match_name(s.match[CMD_P]),
	   s.mask[CMD_P]);
	ok(s.mask[CMD_A] == 0x06 && s.mask[CMD_B] == 0x38,
	   "A and B merged across a loss, in flight at A's window: cut "
	   "(A mask 0x%02x, B mask 0x%02x)", s.mask[CMD_A], s.mask[CMD_B]);
	ok(s.mask[CMD_C] == 0x06 && s.mask[CMD_D] == 0x38 &&
	   whole.mask[CMD_C] == 0x06 && whole.mask[CMD_D] == 0x38,
	   "C and D merged with two losses inside: cut where both parts fit "
	   "(C mask 0x%02x, D mask 0x%02x; whole input 0x%02x, 0x%02x)",
	   s.mask[CMD_C], s.mask[CMD_D], whole.mask[CMD_C],
	   whole.mask[CMD_D]);
	ok(right == NCMD, "every record on its own command: %d of %d (first "
	   "wrong: command %d)", right, NCMD, wrong);
	ok(differ < 0, "streamed = whole input for every command (first "
	   "differing: command %d)", differ);
	ok(ts.fw_unmatched == 0 && ts.fw_late == 0 && ts.host_late == 0,
	   "no firmware command left unmatched (%llu), nothing late",
	   (unsigned long long)ts.fw_unmatched);
	rw = join(d, &e, SIZE_MAX, &tw);
	wrong = 0;
	for (int p = 1; p <= 5; p++) {
		const struct rec *r = NULL;

		for (size_t k = 0; k < e.nr && !r; k++)
			if (e.r[k].cid == cid_of(CMD_E) && e.r[k].phase == p)
				r = &e.r[k];
		wrong += !r || e.refused_seq[CMD_E][p] != r->seq;
	}
	ok(!rw && e.match[CMD_E] == HMB_M_UNMATCHED && !e.mask[CMD_E] &&
	   e.refused[CMD_E] == 0x3e && !wrong && tw.fw_unmatched == 1,
	   "E's records %d us before its submit: refused, E unmatched with "
	   "them as its evidence (%s, refused mask 0x%02x, %d seqs wrong)",
	   E_EARLY, hmb_match_name(e.match[CMD_E]), e.refused[CMD_E], wrong);
	rs = join(d, &e2, 64, &ts);
	ok(!rs && e2.match[CMD_E] == HMB_M_UNMATCHED && !e2.mask[CMD_E],
	   "streamed, E's records 100 us early: E unmatched (%s, mask 0x%02x)",
	   hmb_match_name(e2.match[CMD_E]), e2.mask[CMD_E]);
	hmb_dict_free(d);
	return tap_done();
}
