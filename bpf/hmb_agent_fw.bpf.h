// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * hmb_agent_fw.bpf.h - the firmware side of the join: hmb_trace:hmb_trace_record,
 * matching a record to its command, background windows and the -w copy.
 * Part of hmb_agent.bpf.c (one BPF object), which includes it after its
 * maps and helpers; not a header of its own.
 */

/* ------------------------------------------------------------ firmware */

/* Firmware time -> host time with the agent's estimate. */
static __always_inline __s64 fw_to_host(__u64 fw)
{
	return hmb_clk_fw_to_host(&clk, fw);
}

static __always_inline void fw_unmatched(__u32 reason, __u32 ring,
					 const struct hmb_record_hdr *h,
					 __u16 sqid, __u16 cid, __u32 ctrl)
{
	struct hmb_fw_event *e;

	count(reason);
	e = bpf_ringbuf_reserve(&rb, sizeof(*e), 0);
	if (!e) {
		count(HMB_C_RB_FAIL);
		return;
	}
	e->type = HMB_EV_FW_UNMATCHED;
	e->ring = ring;
	e->ts_ns = h->ts_ns;
	e->host_ns = bpf_ktime_get_ns();
	e->seq = h->seq;
	e->opcode = h->opcode;
	e->sqid = sqid;
	e->cid = cid;
	e->reason = reason;
	e->ctrl = ctrl;
	bpf_ringbuf_submit(e, 0);
}

static __always_inline void fw_bg(__u32 ring, const struct hmb_record_hdr *h,
				  const void *payload, __u8 edge)
{
	struct hmb_bg_event *e;
	__u32 n = h->payload_len;

	e = bpf_ringbuf_reserve(&rb, sizeof(*e), 0);
	if (!e) {
		count(HMB_C_RB_FAIL);
		return;
	}
	e->type = HMB_EV_BG;
	e->ring = ring;
	e->ts_ns = h->ts_ns;
	e->host_ns = bpf_ktime_get_ns();
	e->seq = h->seq;
	e->opcode = h->opcode;
	e->payload_len = h->payload_len;
	e->edge = edge;
	e->cpu = h->cpu;
	__builtin_memset(e->pad, 0, sizeof(e->pad));
	__builtin_memset(e->payload, 0, sizeof(e->payload));
	if (n > HMB_BG_PAYLOAD)
		n = HMB_BG_PAYLOAD;
	if (n && payload &&
	    bpf_probe_read_kernel(e->payload, n & (HMB_BG_PAYLOAD * 2 - 1),
				       payload))
		count(HMB_C_FW_READ_FAIL);
	bpf_ringbuf_submit(e, 0);
	count(HMB_C_FW_BG);
}

/* Does @st's host window widened by @tol hold host time @host? */
static __always_inline bool in_win(const struct hmb_cmd_state *st, __s64 host,
				   __u64 tol)
{
	if (host < (__s64)st->submit_ns - (__s64)tol)
		return false;
	return !st->complete_ns || host <= (__s64)st->complete_ns + (__s64)tol;
}

/*
 * Does a record's slba (@want: a fetch that names one) agree with @st?  A
 * read or write has its own; the host side keeps none for other commands
 * (their fetch records carry whatever the SQE's dwords hold).
 */
static __always_inline bool slba_agrees(const struct hmb_cmd_state *st,
					bool want, __u64 slba)
{
	return !want || (st->opc != 0x01 && st->opc != 0x02) ||
	       st->slba == slba;
}

/*
 * Does more than its window tie @st to a record of phase @ph: a read or
 * write whose slba the fetch names (@want_slba: slba_agrees() checks
 * it), or, for a later phase, a command that has its fetch?
 */
static __always_inline bool tied(const struct hmb_cmd_state *st, __u32 ph,
				 bool want_slba)
{
	if (ph == HMB_PH_FETCH)
		return want_slba && (st->opc == 0x01 || st->opc == 0x02);
	return st->fw_mask & (1 << HMB_PH_FETCH);
}

/* pick()'s tolerance without a clock: every window holds host time 0. */
#define HMB_NO_CLOCK_TOL	(1ULL << 62)

/*
 * The oldest candidate for a record of phase @ph among the commands of the
 * key (n = first, first + 1, ...; the one in flight is the last) that
 * lacks the phase, agrees with a fetch's slba (@want_slba, @slba), is
 * tied to the record by more than its window if @loose (a fetch: a read
 * or write whose slba it names; a later phase: one that has its fetch),
 * and whose host window widened by @tol holds @host (without the clock
 * @tol is HMB_NO_CLOCK_TOL: the oldest lacking the phase).  Sets *@any
 * when some candidate lacked the phase.  A bpf_loop() (the callback is
 * verified once): written out 32 times, with the slba check, it took the
 * test program past the verifier's million instructions.
 */
struct hmb_win_ctx {
	struct hmb_cmd_key key;
	__u64 slba;
	__u64 tol;
	__s64 host;
	__u32 first;
	__u32 nwait;
	__u32 ph;
	__u16 want_slba;
	__u16 loose;	/* 16 bits, as want_slba: the programs' combined
			 * stack has no room for another 8 bytes */
	int any;
	int res;
};

static long hmb_win_step(__u32 i, void *data)
{
	struct hmb_win_ctx *x = data;
	struct hmb_cmd_slot *s;
	struct hmb_cmd_state *st;
	__u32 ph = x->ph & 7;

	if (i >= x->nwait)
		return 1;
	s = cmd_find(&x->key, x->first + i);
	if (!s)
		return 0;
	st = &s->st;
	if (st->fw_mask & (1 << ph))
		return 0;
	x->any = 1;
	if ((x->loose && !tied(st, ph, x->want_slba)) ||
	    !slba_agrees(st, x->want_slba, x->slba) ||
	    !in_win(st, x->host, x->tol))
		return 0;
	x->res = i;
	return 1;
}

static __always_inline int pick(const struct hmb_cmd_key *key, __u32 first,
				__u32 nwait, __u32 ph, __s64 host, __u64 tol,
				bool want_slba, __u64 slba, bool loose,
				int *any)
{
	struct hmb_win_ctx x = { .key = *key, .slba = slba, .tol = tol,
				 .host = host, .first = first, .nwait = nwait,
				 .ph = ph, .want_slba = want_slba,
				 .loose = loose, .res = -1 };

	bpf_loop(HMB_MAX_WAIT, hmb_win_step, &x, 0);
	if (x.any)
		*any = 1;
	return x.res;
}

/*
 * The candidate that keys and ring order propose for the record, or -1
 * (join_fw() holds it to its window while there is a clock).  A fetch
 * with its slba (@has_slba): the oldest read or write lacking a fetch
 * with that slba.  Another phase: the oldest command that has its fetch
 * and lacks both that phase and its cqe_posted, if no record of its
 * controller's rings was lost since it was submitted (@gaps now).  A
 * bpf_loop() (the callback is verified once): written out like pick(), it
 * took the test program past the verifier's million instructions.
 */
struct hmb_ord_ctx {
	struct hmb_cmd_key key;
	__u64 slba;
	__u32 first;
	__u32 nwait;
	__u32 ph;
	__u32 gaps;
	__u32 has_slba;
	int res;
};

/* Candidate @i: 1 if it decides (x->res set if it is the one), 0 if not. */
static __always_inline long ord_step(__u32 i, struct hmb_ord_ctx *x,
				     struct hmb_cmd_slot **found, bool home)
{
	struct hmb_cmd_slot *s;
	struct hmb_cmd_state *st;
	__u32 ph = x->ph & 7;

	if (i >= x->nwait)
		return 1;
	s = home ? cmd_find_home(&x->key, x->first + i) :
		   cmd_find(&x->key, x->first + i);
	if (!s)
		return 0;
	st = &s->st;
	if (st->fw_mask & (1 << ph))
		return 0;
	if (ph == HMB_PH_FETCH) {
		if ((st->opc == 0x01 || st->opc == 0x02) && st->slba == x->slba) {
			x->res = i;
			*found = s;
			return 1;
		}
		return 0;
	}
	if (st->fw_mask & (1 << HMB_PH_CQE_POSTED))
		return 0;
	/* the oldest still expecting records decides, one way or the other */
	if ((st->fw_mask & (1 << HMB_PH_FETCH)) && st->gaps0 == x->gaps) {
		x->res = i;
		*found = s;
	}
	return 1;
}

static long hmb_ord_step(__u32 i, void *data)
{
	struct hmb_cmd_slot *found;

	/* from the second candidate on: the first was looked at inline */
	return ord_step(i + 1, data, &found, false);
}

/*
 * The oldest candidate decides most records: it is looked at here, and
 * its state handed back in *@found (NULL if another or none decides), the
 * others through bpf_loop().
 */
static __always_inline int pick_known(const struct hmb_cmd_key *key,
				      __u32 first, __u32 nwait, __u32 ph,
				      bool has_slba, __u64 slba, __u32 gaps,
				      struct hmb_cmd_slot **found)
{
	struct hmb_ord_ctx x = { .key = *key, .first = first, .nwait = nwait,
				 .ph = ph, .slba = slba, .gaps = gaps,
				 .has_slba = has_slba, .res = -1 };

	*found = NULL;
	if (ph == HMB_PH_FETCH && !has_slba)
		return -1;
	if (ord_step(0, &x, found, true))
		return x.res;
	bpf_loop(HMB_MAX_WAIT - 1, hmb_ord_step, &x, 0);
	return x.res;
}

/*
 * What all records of a ring share, looked up once a batch
 * (hmb_trace_records) instead of once a record: its controller instance
 * + 1 (0: none, "ring_ctrl"), its next seq ("ring_seq") and its
 * controller's count of seq gaps ("ctrl_gaps"); either pointer NULL when
 * there is none.
 */
struct hmb_ring_ref {
	struct hmb_ring_seq *rs;
	__u32 *gaps;
	__u32 ctrl1;
};

static __always_inline void ring_ref(__u32 ring, struct hmb_ring_ref *rr)
{
	__u32 *ctrlp = bpf_map_lookup_elem(&ring_ctrl, &ring);

	rr->rs = bpf_map_lookup_elem(&ring_seq, &ring);
	rr->ctrl1 = ctrlp ? *ctrlp : 0;
	rr->gaps = rr->ctrl1 ? gaps_slot(rr->ctrl1 - 1) : NULL;
}

/* Seq gaps of a ring are records lost: counted per controller. */
static __always_inline void note_seq(const struct hmb_ring_ref *rr, __u32 seq)
{
	struct hmb_ring_seq *rs = rr->rs;

	if (!rs)
		return;
	if (rs->have && seq != rs->next && rr->gaps)
		__sync_fetch_and_add(rr->gaps, 1);
	rs->next = seq + 1;
	rs->have = 1;
}

/* What join_fw() and handle_fw() leave to their caller to count. */
#define HMB_FW_MATCHED		1	/* HMB_C_FW_MATCHED */
#define HMB_FW_BY_ORDER		2	/* HMB_C_FW_BY_ORDER */

/*
 * Join core: a firmware command event (phase @ph) for (ring, sqid, cid).
 * @h is the record header already copied out of the kernel.  Returns
 * HMB_FW_* bits for the caller to count (a batch counts them once).
 */
static __always_inline int join_fw(__u32 ring, const struct hmb_ring_ref *rr,
				    const struct hmb_record_hdr *h, __u32 ph,
				    __u16 sqid, __u16 cid, bool has_slba,
				    __u64 slba)
{
	struct hmb_cmd_key key = {};
	struct hmb_cmd_slot *s = NULL;
	struct hmb_cmd_state *st;
	struct hmb_kseq *ks;
	__u32 first, nwait;
	int which = -1, any = 0, res = 0;
	__u64 tight = HMB_NO_CLOCK_TOL, tol = HMB_NO_CLOCK_TOL;
	__s64 host = 0;
	bool clock;

	if (!rr->ctrl1) {
		fw_unmatched(HMB_C_FW_UNMAPPED_RING, ring, h, sqid, cid, 0);
		return 0;
	}
	key.ctrl = rr->ctrl1 - 1;
	key.qid = sqid;
	key.cid = cid;
	/* Candidates, oldest first; the one in flight is the newest. */
	ks = kseq_find(&key);
	first = ks ? READ_ONCE(ks->first) : 0;
	/* next read after first: first never passes it */
	nwait = ks ? READ_ONCE(ks->next) - first : 0;
	if (nwait > HMB_MAX_WAIT)
		nwait = HMB_MAX_WAIT;
	if (!nwait) {
		fw_unmatched(HMB_C_FW_NO_CMD, ring, h, sqid, cid, key.ctrl);
		return 0;
	}
	which = pick_known(&key, first, nwait, ph, has_slba, slba,
			   rr->gaps ? *rr->gaps : 0, &s);
	if (which >= 0 && !s)
		s = cmd_find(&key, first + which);
	clock = READ_ONCE(clk.valid);
	if (clock) {
		host = fw_to_host(h->ts_ns);
		tight = clk.tight_ns;
		tol = clk.tol_ns;
		/*
		 * Causality decides, keys propose: the host submits before
		 * the controller fetches and completes after it posts, so
		 * the proposed command's window widened by the loose
		 * tolerance (the estimate's error and its staleness) must
		 * hold the record, else it is refused and the windows
		 * decide.
		 */
		if (which >= 0 && (!s || !in_win(&s->st, host, tol))) {
			count(HMB_C_FW_REFUSED);
			which = -1;
			s = NULL;
		}
	}
	if (which >= 0) {
		res = HMB_FW_BY_ORDER;
	} else {
		/*
		 * A tight tolerance first (with the clock), then the loose
		 * one, which allows for an estimate gone stale (a step not
		 * yet recognised), only for a command that more than its
		 * window ties to the record (tied()): a window alone,
		 * widened by milliseconds, holds the next use of the id, and
		 * a predecessor's record that came after it was reported
		 * would go there, and that one's own records on to the
		 * next, use after use.
		 */
		which = pick(&key, first, nwait, ph, host, tight, has_slba,
			     slba, false, &any);
		if (which < 0 && clock)
			which = pick(&key, first, nwait, ph, host, tol,
				     has_slba, slba, true, &any);
	}
	if (which < 0) {
		/* no clock: only a fetch naming another slba fails */
		fw_unmatched(!any ? HMB_C_FW_DUP_PHASE : clock ?
			     HMB_C_FW_OUT_OF_WINDOW : HMB_C_FW_NO_CMD,
			     ring, h, sqid, cid, key.ctrl);
		return 0;
	}
	if (!s)
		s = cmd_find(&key, first + which);
	if (!s)
		return 0;
	st = &s->st;
	st->fw_ts[ph] = h->ts_ns;
	st->fw_seq[ph] = h->seq;
	st->fw_mask |= 1 << ph;
	st->ring = ring;
	if (ph == HMB_PH_CQE_POSTED) {
		/* Whoever sets the second of the two bits reports it. */
		__u32 old = __sync_fetch_and_or(&st->sync, HMB_SYNC_FW);

		if (old & HMB_SYNC_HOST)
			finish(&key, s, ks);
	}
	return res | HMB_FW_MATCHED;
}

static __always_inline void count_add(__u32 idx, __u64 n)
{
	__u64 *c;

	if (!n)
		return;
	c = bpf_map_lookup_elem(&counters, &idx);
	if (c)
		__sync_fetch_and_add(c, n);
}

/* -w: @n records the agent could not hand over, counted per ring too. */
static __always_inline void dump_loss(__u32 ring, __u32 n)
{
	__u64 *c = bpf_map_lookup_elem(&dump_lost, &ring);

	count_add(HMB_C_DUMP_LOST, n);
	if (c)
		__sync_fetch_and_add(c, n);
}

#define HMB_RAW_EV_HDR	__builtin_offsetof(struct hmb_raw_event, rec)

/*
 * -w: this CPU's "rawbuf", emptied for a batch of ring @ring's records
 * (NULL: never, for a per-CPU array; raw_add() counts the records lost).
 */
static __always_inline struct hmb_raw_buf *raw_begin(__u32 ring)
{
	__u32 zero = 0;
	struct hmb_raw_buf *b = bpf_map_lookup_elem(&rawbuf, &zero);

	if (b) {
		b->ev.type = HMB_EV_RAW;
		b->ev.ring = ring;
		b->ev.nrec = 0;
		b->ev.len = 0;
	}
	return b;
}

/*
 * -w: the records gathered in @b to user space as one event, emptying it;
 * if rawrb has no room, each of them is counted lost.
 */
static __always_inline void raw_flush(struct hmb_raw_buf *b)
{
	__u32 len, n;

	if (!b || !b->ev.nrec)
		return;
	n = b->ev.nrec;
	len = b->ev.len;
	if (len > HMB_RAW_BATCH_MAX)	/* never: for the verifier */
		len = HMB_RAW_BATCH_MAX;
	/* waking the agent only as rb's events do (rb_wake_flags()) */
	if (bpf_ringbuf_output(&rawrb, &b->ev, HMB_RAW_EV_HDR + len,
			       rb_wake_flags(&rawrb, HMB_RAW_EV_HDR + len,
					     false)))
		dump_loss(b->ev.ring, n);
	else
		count_add(HMB_C_DUMP_SENT, n);
	b->ev.nrec = 0;
	b->ev.len = 0;
}

/*
 * -w: add the record (header @h, then @payload, a kernel pointer) to the
 * batch gathered in @b, as a dump stream does (header, payload, zero
 * padding), sending what @b holds first when the record does not fit.
 * A payload of at most HMB_BRIDGE_HEAD bytes is copied from @head, the
 * bridge's copy of it (struct hmb_bridge_rec.head; NULL: none), without
 * a kernel read: the read, a helper call, was most of a record's cost.
 * The bridge has checked payload_len; checked again for the verifier, and
 * because the ring is hostile input (docs/format.md).  A record whose
 * payload cannot be read (or, from the test program, that has none to
 * read) is lost alone.  Not inline: in a batch's bpf_loop() callback its
 * stack would take the test program's combined stack past 512 bytes.
 */
static __noinline void raw_add(struct hmb_raw_buf *b, __u32 ring,
				    const struct hmb_record_hdr *h,
				    const void *payload, const __u64 *head)
{
	__u32 n = h->payload_len, off;
	__u8 *p;

	if (!b || n > HMB_RECORD_MAX_PAYLOAD || (n && !payload)) {
		dump_loss(ring, 1);
		return;
	}
	off = b->ev.len;
	if (off + HMB_RECORD_SIZE(n) > HMB_RAW_BATCH_MAX) {
		raw_flush(b);
		off = 0;
	}
	/*
	 * Never true, never changing @off or @n: bounds for the verifier,
	 * which the checks above do not reach (kept by barrier_var() from
	 * the compiler, which knows them to be no-ops).
	 */
	barrier_var(off);
	barrier_var(n);
	if (off > HMB_RAW_BATCH_MAX - HMB_RECORD_HDR_SIZE) {
		dump_loss(ring, 1);
		return;
	}
	n &= HMB_RECORD_MAX_SIZE - 1;
	p = b->ev.rec + off;
	*(struct hmb_record_hdr *)p = *h;
	if (head && n <= HMB_BRIDGE_HEAD) {
		/* zero past payload_len there: the padding comes with it */
		__u64 *q = (__u64 *)(p + HMB_RECORD_HDR_SIZE);

		q[0] = head[0];
		q[1] = head[1];
		q[2] = head[2];
	} else {
		/* the padding: the payload's read writes over the first of these */
		*(__u64 *)(p + HMB_RECORD_HDR_SIZE + (n & ~7)) = 0;
		if (n && bpf_probe_read_kernel(p + HMB_RECORD_HDR_SIZE, n,
					       payload)) {
			dump_loss(ring, 1);
			return;
		}
	}
	b->ev.len = off + HMB_RECORD_SIZE(n);
	b->ev.nrec++;
}

/* -w: one record (hmb_trace_record's, the test program's) as a batch of one. */
static __always_inline void raw_one(__u32 ring, const struct hmb_record_hdr *h,
				    const void *payload)
{
	struct hmb_raw_buf *b = raw_begin(ring);

	raw_add(b, ring, h, payload, NULL);
	raw_flush(b);
}

/*
 * The 16 payload bytes at @off (at most 8) out of @w, the bridge's copy of
 * the payload's first HMB_BRIDGE_HEAD bytes (struct hmb_bridge_rec.head),
 * into @kb: shifts, not a load at a variable offset of the stack.
 */
static __always_inline void head_keys(const __u64 *w, __u32 off, __u64 *kb)
{
	__u64 a = w[0], b = w[1], c = w[2];
	__u32 sh;

	_Static_assert(HMB_BRIDGE_HEAD == 24, "head_keys() reads 3 words");
	if (off >= 8) {
		a = b;
		b = c;
		c = 0;
	}
	sh = (off & 7) * 8;
	if (sh) {
		kb[0] = a >> sh | b << (64 - sh);
		kb[1] = b >> sh | c << (64 - sh);
	} else {
		kb[0] = a;
		kb[1] = b;
	}
}

/*
 * The payload bytes from sqid on that a record of phase @ph and payload
 * length @len needs for its keys, where the dictionary's @d reads them at
 * once (HMB_KEYS_4): 4 (sqid, cid), or a fetch's 16 or 24 with its slba
 * (8 or 16 bytes after sqid) when the payload holds that.
 */
static __always_inline __u32 keys_span(const struct hmb_evdesc *d, __u32 ph,
				       __u32 len)
{
	__u32 off = d->sqid_off & 0xfff;

	if (ph != HMB_PH_FETCH)
		return 4;
	if ((d->keys_read & HMB_KEYS_16) && len >= off + 16)
		return 16;
	if ((d->keys_read & HMB_KEYS_24) && len >= off + 24)
		return 24;
	return 4;
}

/*
 * Does the bridge's copy of the payload's first HMB_BRIDGE_HEAD bytes hold
 * the @span bytes (keys_span()) from sqid on?  head_keys() takes sqid at
 * offsets up to 8.  (A fetch's slba 16 after a sqid at 1-8 lies past it:
 * the kernel read then.)
 */
static __always_inline bool head_holds(const struct hmb_evdesc *d, __u32 span)
{
	__u32 off = d->sqid_off & 0xfff;

	return off <= 8 && off + span <= HMB_BRIDGE_HEAD;
}

/*
 * Classify a record by the dictionary and pass it on.  @payload is a
 * kernel pointer (read with bpf_probe_read_kernel) or, from the test
 * program, NULL with the keys given in @tsqid/@tcid.  @head: the bridge's
 * copy of the payload's first HMB_BRIDGE_HEAD bytes (hmb_trace_records),
 * where the keys are read from when they sit there, or NULL.  Returns
 * join_fw()'s HMB_FW_* bits, 0 if it did not get there.
 */
static __always_inline int handle_fw(__u32 ring, const struct hmb_ring_ref *rr,
				     struct hmb_record_hdr *h,
				     const void *payload, int test,
				     __u16 tsqid, __u16 tcid, bool tslba,
				     __u64 tslba_v, const __u64 *head)
{
	struct hmb_evdesc *d;
	__u16 sqid = tsqid, cid = tcid;
	bool has_slba = tslba;
	__u64 slba = tslba_v;
	__u32 op, ph, span;

	if (h->flags & ~HMB_REC_FLAG_TRUNCATED) {
		count(HMB_C_FW_MARKER);	/* wrap marker or unknown flags: no event */
		return 0;
	}
	note_seq(rr, h->seq);
	op = h->opcode;
	d = bpf_map_lookup_elem(&evdesc, &op);
	if (!d || !d->known) {
		fw_unmatched(HMB_C_FW_UNKNOWN_OP, ring, h, 0, 0, 0);
		return 0;
	}
	if (h->payload_len < d->min_len) {
		fw_unmatched(HMB_C_FW_SHORT, ring, h, 0, 0, 0);
		return 0;
	}
	if ((trig_armed & HMB_TRIG_ARM_EV) && d->trig)
		trig_ev(ring, h->opcode, h->seq, h->ts_ns, d->trig);
	if (d->bg_edge) {
		fw_bg(ring, h, payload, d->bg_edge);
		return 0;
	}
	ph = d->phase;
	if (ph < HMB_PH_FETCH || ph >= HMB_PH_COUNT) {
		count(HMB_C_FW_OTHER);
		return 0;
	}
	span = keys_span(d, ph, h->payload_len);
	if (test) {
		/* the keys come from the test program's arguments */
	} else if ((d->keys_read & HMB_KEYS_4) && head &&
		   head_holds(d, span)) {
		/* in the bridge's copy: bytes past payload_len are zero there */
		__u32 off = d->sqid_off & 0xfff;
		__u64 kb[2];

		head_keys(head, off, kb);
		sqid = (__u16)kb[0];
		cid = (__u16)(kb[0] >> 16);
		if (span == 16) {
			slba = kb[1];
			has_slba = true;
		} else if (span == 24) {
			slba = head[2];	/* head_holds(): sqid at 0 */
			has_slba = true;
		}
	} else if (d->keys_read & HMB_KEYS_4) {
		/*
		 * sqid, cid (and a fetch's slba) in one kernel read; the
		 * dictionary's min_len covers sqid and cid, the slba is read
		 * only when the payload holds it.
		 */
		__u64 kb[3] = { 0, 0, 0 };

		if (bpf_probe_read_kernel(kb, span,
					  payload + (d->sqid_off & 0xfff))) {
			count(HMB_C_FW_READ_FAIL);
			return 0;
		}
		sqid = (__u16)kb[0];
		cid = (__u16)(kb[0] >> 16);
		if (span > 4) {
			slba = span == 16 ? kb[1] : kb[2];
			has_slba = true;
		}
	} else {
		if (bpf_probe_read_kernel(&sqid, 2, payload + (d->sqid_off & 0xfff)) ||
		    bpf_probe_read_kernel(&cid, 2, payload + (d->cid_off & 0xfff))) {
			count(HMB_C_FW_READ_FAIL);
			return 0;
		}
		if (ph == HMB_PH_FETCH && d->slba_off != HMB_NO_OFF &&
		    h->payload_len >= (__u32)(d->slba_off & 0xfff) + 8)
			has_slba = !bpf_probe_read_kernel(&slba, 8, payload +
							  (d->slba_off & 0xfff));
	}
	return join_fw(ring, rr, h, ph, sqid, cid, has_slba, slba);
}

/* Count what handle_fw() returned. */
static __always_inline void count_fw(int res)
{
	if (res & HMB_FW_MATCHED)
		count(HMB_C_FW_MATCHED);
	if (res & HMB_FW_BY_ORDER)
		count(HMB_C_FW_BY_ORDER);
}

/* One record per run: hmb_trace_record (where hmb_trace_records is not). */
SEC("raw_tp/hmb_trace_record")
int hmb_record(struct bpf_raw_tracepoint_args *ctx)
{
	struct hmb_record_hdr h;
	struct hmb_ring_ref rr;
	__u32 ring = (__u32)ctx->args[0];

	count(HMB_C_FW_RECORDS);
	if (bpf_probe_read_kernel(&h, sizeof(h), (const void *)ctx->args[1])) {
		count(HMB_C_FW_READ_FAIL);
		return 0;
	}
	if (dump_records)
		raw_one(ring, &h, (const void *)ctx->args[2]);
	ring_ref(ring, &rr);
	count_fw(handle_fw(ring, &rr, &h, (const void *)ctx->args[2],
			   0, 0, 0, false, 0, NULL));
	return 0;
}

/* A batch of the bridge's records being joined (hmb_trace_records). */
struct hmb_batch {
	struct hmb_batch_buf *bb;	/* the records, copied */
	struct hmb_raw_buf *raw;	/* -w: the records, gathered */
	struct hmb_ring_ref rr;		/* the ring's, looked up once */
	__u32 ring;
	__u32 matched;	/* counted once for the batch */
	__u32 by_order;
	__u32 test;	/* the test program's batch: payload in the head */
};

/*
 * One record of a batch.  A global function, verified once: newer
 * verifiers go through a bpf_loop() callback until its states converge,
 * and handle_fw() inline there took the test program past a million
 * instructions.
 */
__noinline int fw_batch_one(__u32 ring, __u32 ctrl1, struct hmb_bridge_rec *r,
			    struct hmb_ring_seq *rs, __u32 *gaps)
{
	struct hmb_ring_ref rr = { .rs = rs, .gaps = gaps, .ctrl1 = ctrl1 };

	if (!r)
		return 0;
	return handle_fw(ring, &rr, &r->hdr, (const void *)r->payload, 0, 0,
			 0, false, 0, (const __u64 *)r->head);
}

/* Record @i of the batch @data. */
static long hmb_batch_step(__u32 i, void *data)
{
	struct hmb_batch *b = data;
	struct hmb_batch_buf *bb = b->bb;
	struct hmb_bridge_rec *r;
	int res;

	if (!bb)
		return 1;
	r = &bb->r[i & (HMB_BRIDGE_BATCH - 1)];
	if (dump_records)
		raw_add(b->raw, b->ring, &r->hdr, b->test ? (const void *)r->head :
			(const void *)r->payload, (const __u64 *)r->head);
	res = fw_batch_one(b->ring, b->rr.ctrl1, r, b->rr.rs, b->rr.gaps);
	b->matched += !!(res & HMB_FW_MATCHED);
	b->by_order += !!(res & HMB_FW_BY_ORDER);
	return 0;
}

/*
 * Join @nr records of ring @ring (at kernel address @recs, or 0 for the
 * test program's, already in "batchbuf", each its payload's head copy
 * there, as test case 7's) in one program run.  With -w they also go to
 * user space as one event: gathered as they are joined (raw_add()), sent
 * once all are (raw_flush()).
 */
static __always_inline void handle_batch(__u32 ring, __u64 recs, __u32 nr)
{
	struct hmb_batch b = { .ring = ring, .test = !recs };
	__u32 zero = 0, sz;

	if (nr > HMB_BRIDGE_BATCH) {
		/* never from the bridge; what is beyond is not read: lost */
		count_add(HMB_C_FW_READ_FAIL, nr - HMB_BRIDGE_BATCH);
		nr = HMB_BRIDGE_BATCH;
	}
	count_add(HMB_C_FW_RECORDS, nr);
	b.bb = bpf_map_lookup_elem(&batchbuf, &zero);
	sz = nr * sizeof(struct hmb_bridge_rec);
	if (!b.bb || sz > sizeof(*b.bb) ||
	    (recs && bpf_probe_read_kernel(b.bb, sz, (const void *)recs))) {
		count_add(HMB_C_FW_READ_FAIL, nr);
		return;
	}
	ring_ref(ring, &b.rr);
	if (dump_records)
		b.raw = raw_begin(ring);
	bpf_loop(nr, hmb_batch_step, &b, 0);
	if (dump_records)
		raw_flush(b.raw);
	count_add(HMB_C_FW_MATCHED, b.matched);
	count_add(HMB_C_FW_BY_ORDER, b.by_order);
}

/* A batch per run: hmb_trace_records (the agent's choice where it is). */
SEC("raw_tp/hmb_trace_records")
int hmb_records(struct bpf_raw_tracepoint_args *ctx)
{
	if (ctx->args[1])
		handle_batch((__u32)ctx->args[0], ctx->args[1],
			     (__u32)ctx->args[2]);
	return 0;
}
