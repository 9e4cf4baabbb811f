// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * hmb_agent_trig.bpf.h - --trigger: the conditions the agent arms,
 * evaluated where the join reports a command or meets a record, so that a
 * firing needs no command in user space (docs/agent.md, "Triggers").
 * Part of hmb_agent.bpf.c (one BPF object), which includes it last; not a
 * header of its own.  Nothing here runs unless the agent set trig_armed.
 */

/* ------------------------------------------------------------ triggers */

/*
 * A firing wakes the agent at once (HMB_TRIG_WAKE): the command events
 * around it wait in the ring for its poll (rb_wake_flags()), and a flag of 0
 * would wake it only if the ring were empty.
 */
#define HMB_TRIG_WAKE	BPF_RB_FORCE_WAKEUP

/* The ring buffer's event of trigger @i, zeroed but for type and trig. */
static __always_inline struct hmb_trig_event *trig_fire(__u32 i)
{
	struct hmb_trig_event *e;

	__sync_fetch_and_add(&trig_fired[i & (HMB_MAX_TRIGGERS - 1)], 1);
	e = bpf_ringbuf_reserve(&rb, sizeof(*e), 0);
	if (!e) {
		count(HMB_C_RB_FAIL);
		return NULL;
	}
	__builtin_memset(e, 0, sizeof(*e));
	e->type = HMB_EV_TRIGGER;
	e->trig = i;
	e->host_ns = bpf_ktime_get_ns();
	return e;
}

/*
 * Latency trigger @i on command (@ctrl, @qidcid), @st being reported
 * (hmb_trig_lat_fires(): the rule the agent's sweep applies too).
 */
static __always_inline void trig_lat(__u32 i, __u32 ctrl, __u32 qidcid,
				     const struct hmb_cmd_state *st)
{
	struct hmb_trig *t = &trig[i & (HMB_MAX_TRIGGERS - 1)];
	struct hmb_trig_event *e;
	__u64 v = 0;

	if (!hmb_trig_lat_fires(t, st, &clk, &v))
		return;
	e = trig_fire(i);
	if (!e)
		return;
	e->value_ns = v;
	e->thresh_ns = t->thresh_ns;
	e->ctrl = ctrl;
	e->qid = (__u16)(qidcid >> 16);
	e->cid = (__u16)qidcid;
	e->ring = st->ring;
	__builtin_memcpy(&e->st, st, sizeof(*st));
	bpf_ringbuf_submit(e, HMB_TRIG_WAKE);
}

/*
 * The latency triggers on command (@ctrl, @qidcid = qid << 16 | cid) being
 * reported.  A global function: verified once, not at each place that
 * reports a command.  The key comes as numbers: a pointer to it would make
 * the callers keep it on the stack, armed or not.
 */
__noinline int trig_cmd(__u32 ctrl, __u32 qidcid,
			const struct hmb_cmd_state *st)
{
	if (!st)
		return 0;
#pragma unroll
	for (__u32 i = 0; i < HMB_MAX_TRIGGERS; i++)
		trig_lat(i, ctrl, qidcid, st);
	return 0;
}

/* The event triggers (bits @bits) on a record of opcode @opcode. */
__noinline int trig_ev(__u32 ring, __u32 opcode, __u32 seq, __u64 ts_ns,
		       __u32 bits)
{
	struct hmb_trig_event *e;

#pragma unroll
	for (__u32 i = 0; i < HMB_MAX_TRIGGERS; i++) {
		if (!(bits & (1U << i)) || trig[i].kind != HMB_TK_EVENT)
			continue;
		e = trig_fire(i);
		if (!e)
			continue;
		e->ring = ring;
		e->seq = seq;
		e->ts_ns = ts_ns;
		e->opcode = (__u16)opcode;
		bpf_ringbuf_submit(e, HMB_TRIG_WAKE);
	}
	return 0;
}

/*
 * The controller stopped its ring (HMB_RING_FLAG_FROZEN: a reset or a
 * shutdown, docs/format.md): the reset triggers fire, for the rings of
 * the controller traced.
 */
static __always_inline void trig_reset(__u32 ring)
{
	struct hmb_trig_event *e;
	__u32 *ctrlp;

	if (!(trig_armed & HMB_TRIG_ARM_RESET))
		return;
	ctrlp = bpf_map_lookup_elem(&ring_ctrl, &ring);
	if (targ_ctrl >= 0 &&
	    (!ctrlp || !*ctrlp || *ctrlp - 1 != (__u32)targ_ctrl))
		return;
#pragma unroll
	for (__u32 i = 0; i < HMB_MAX_TRIGGERS; i++) {
		if (trig[i].kind != HMB_TK_RESET)
			continue;
		e = trig_fire(i);
		if (!e)
			continue;
		e->ring = ring;
		e->ctrl = ctrlp && *ctrlp ? *ctrlp - 1 : 0;
		bpf_ringbuf_submit(e, HMB_TRIG_WAKE);
	}
}

/* hmb_trace_frozen(ring_id, head, tail, flags): attached only when armed. */
SEC("raw_tp/hmb_trace_frozen")
int hmb_frozen(struct bpf_raw_tracepoint_args *ctx)
{
	trig_reset((__u32)ctx->args[0]);
	return 0;
}
