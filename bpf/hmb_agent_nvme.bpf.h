// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * hmb_agent_nvme.bpf.h - the host side of the join: nvme:nvme_setup_cmd and
 * nvme:nvme_complete_rq, the per-id wait lists (kseq) and reporting.
 * Part of hmb_agent.bpf.c (one BPF object), which includes it after its
 * maps and helpers; not a header of its own.
 */

/* ---------------------------------------------------------------- NVMe */

/* What the programs read of a request's struct nvme_request. */
struct hmb_nreq {
	void *cmd;
	struct nvme_ctrl___hmb *ctrl;
	__u16 status;
};

/*
 * @nr's cmd, status and ctrl in one kernel read (they sit in its first 40
 * bytes on the kernels of the matrix; CO-RE gives the offsets), else one
 * read each.  @cid (completion; NULL at setup): the command's id too,
 * taken from the same read when the command sits right after the request
 * (struct nvme_iod of nvme-pci, nvme-loop: the 8 bytes more hold it),
 * else read from the command.
 */
static __always_inline int nvme_nreq(struct nvme_request___hmb *nr,
				     struct hmb_nreq *o, __u16 *cid)
{
	__u32 oc = bpf_core_field_offset(struct nvme_request___hmb, cmd);
	__u32 os = bpf_core_field_offset(struct nvme_request___hmb, status);
	__u32 ok = bpf_core_field_offset(struct nvme_request___hmb, ctrl);
	__u32 sz = bpf_core_type_size(struct nvme_request___hmb);
	bool fits = ok + 8 <= sizeof(__u64[8]) && oc + 8 <= ok + 8 &&
		    os + 2 <= ok + 8 && !(ok & 7) && !(oc & 7) && !(os & 1);
	bool tail = false;
	__u64 buf[8];

	if (fits && cid && ok + 8 <= sz && !(sz & 7) &&
	    sz + 8 <= sizeof(buf) && !bpf_probe_read_kernel(buf, sz + 8, nr))
		tail = true;
	else if (fits && bpf_probe_read_kernel(buf, ok + 8, nr))
		return -1;
	if (fits) {
		__builtin_memcpy(&o->cmd, (__u8 *)buf + oc, 8);
		__builtin_memcpy(&o->ctrl, (__u8 *)buf + ok, 8);
		__builtin_memcpy(&o->status, (__u8 *)buf + os, 2);
	} else {
		o->cmd = BPF_CORE_READ(nr, cmd);
		o->ctrl = BPF_CORE_READ(nr, ctrl);
		o->status = BPF_CORE_READ(nr, status);
	}
	if (!cid)
		return 0;
	if (tail && o->cmd == (void *)((__u64)nr + sz)) {
		__builtin_memcpy(cid, (__u8 *)buf + sz + NVME_CMD_CID_OFF, 2);
		return 0;
	}
	return bpf_probe_read_kernel(cid, sizeof(*cid),
				     o->cmd + NVME_CMD_CID_OFF) ? -1 : 0;
}

/*
 * tp_btf: what the setup program needs of the command @cmd (a struct
 * nvme_command the verifier knows), loaded field by field at their wire
 * offsets into @sqe, instead of a kernel read of its first NVME_CMD_HEAD
 * bytes.  Volatile, so that no two loads merge into one across two
 * fields (the verifier checks each against the type: slba is cdw10 and
 * cdw11 of the common layout, the first of the union).
 */
static __always_inline void sqe_loads(const __u8 *cmd, __u8 *sqe)
{
	__u32 lo = *(const volatile __u32 *)(cmd + NVME_CMD_SLBA_OFF);
	__u32 hi = *(const volatile __u32 *)(cmd + NVME_CMD_SLBA_OFF + 4);
	__u64 slba = (__u64)hi << 32 | lo;
	__u16 v16;
	__u32 v32;

	sqe[NVME_CMD_OPCODE_OFF] =
		*(const volatile __u8 *)(cmd + NVME_CMD_OPCODE_OFF);
	v16 = *(const volatile __u16 *)(cmd + NVME_CMD_CID_OFF);
	__builtin_memcpy(sqe + NVME_CMD_CID_OFF, &v16, 2);
	v32 = *(const volatile __u32 *)(cmd + NVME_CMD_NSID_OFF);
	__builtin_memcpy(sqe + NVME_CMD_NSID_OFF, &v32, 4);
	__builtin_memcpy(sqe + NVME_CMD_SLBA_OFF, &slba, 8);
	v16 = *(const volatile __u16 *)(cmd + NVME_CMD_NLB_OFF);
	__builtin_memcpy(sqe + NVME_CMD_NLB_OFF, &v16, 2);
}

/*
 * The key of @req.  With @sqe (NVME_CMD_HEAD bytes), the head of the
 * command @cmd is copied there in one read (tp_btf: its fields loaded,
 * sqe_loads()), the command id taken from it.  @btf (a constant): @req
 * and @cmd are tp_btf arguments, whose fields the program loads
 * directly; the PDU after @req is not a field of it, read with a helper
 * either way (nvme_nreq(), whose result is left in @o).  At completion
 * (no @sqe) the command id is the command's, as nvme_nreq() finds it:
 * computed from the request's genctr and tag instead, it missed 975 of
 * 44263 completions on 6.1 (nvme_try_complete_req() bumps genctr on the
 * way to them).
 */
static __always_inline int nvme_key(struct request *req, void *cmd,
				    struct hmb_cmd_key *key, __u8 *sqe,
				    bool btf, struct hmb_nreq *o)
{
	struct nvme_request___hmb *nr;
	struct nvme_ctrl___hmb *ctrl;
	void *queuedata;
	__u16 cid = 0;

	/*
	 * 6.12's verifier types every tracepoint pointer argument as maybe
	 * NULL and refuses arithmetic on it before a check (6.1 does not).
	 */
	if (!req)
		return -1;
	/* nvme_req(req): the PDU right after struct request. */
	nr = (void *)((__u64)req + bpf_core_type_size(struct request));
	if (nvme_nreq(nr, o, sqe ? NULL : &cid))
		return -1;
	ctrl = o->ctrl;
	if (!ctrl)
		return -1;
	key->ctrl = BPF_CORE_READ(ctrl, instance);
	/* nvme_req_qid(): 0 for the admin queue, hctx->queue_num + 1 else. */
	if (btf) {
		queuedata = req->q->queuedata;
		key->qid = queuedata ? req->mq_hctx->queue_num + 1 : 0;
	} else {
		queuedata = BPF_CORE_READ(req, q, queuedata);
		key->qid = queuedata ?
			   BPF_CORE_READ(req, mq_hctx, queue_num) + 1 : 0;
	}
	if (sqe && btf) {
		sqe_loads(cmd, sqe);
		__builtin_memcpy(&cid, sqe + NVME_CMD_CID_OFF, sizeof(cid));
	} else if (sqe) {
		if (bpf_probe_read_kernel(sqe, NVME_CMD_HEAD, cmd))
			return -1;
		__builtin_memcpy(&cid, sqe + NVME_CMD_CID_OFF, sizeof(cid));
	}
	key->cid = cid;
	return 0;
}

/*
 * The flags to hand an event of @len bytes to ring buffer @map with
 * (@reserved: reserved there, so already in the data waiting; else about
 * to be written with bpf_ringbuf_output()): no wakeup of the agent, which
 * takes its rings at least every poll interval (user/agent/agent.c,
 * run_loop()), unless this event takes the data waiting past a quarter,
 * a half or three quarters of the ring.  A wakeup is an interrupt
 * (irq_work) raised on this CPU and taken inside the program, many times
 * the join's own cost: with the default flags it came with nearly every
 * event while the agent kept up.
 */
static __always_inline __u64 rb_wake_flags(void *map, __u64 len,
					   bool reserved)
{
	__u64 sz = (len + BPF_RINGBUF_HDR_SZ + 7) & ~7ULL;
	/* a power of two, as the ring's size */
	__u64 q = bpf_ringbuf_query(map, BPF_RB_RING_SIZE) / 4;
	__u64 end = bpf_ringbuf_query(map, BPF_RB_AVAIL_DATA) +
		    (reserved ? 0 : sz);

	return ((end - sz) & ~(q - 1)) != (end & ~(q - 1)) ?
	       BPF_RB_FORCE_WAKEUP : BPF_RB_NO_WAKEUP;
}

static __always_inline void emit_cmd(const struct hmb_cmd_key *key,
				     const struct hmb_cmd_state *st)
{
	struct hmb_cmd_event *e;

	if (st->flags & HMB_CF_FILTERED) {
		count(HMB_C_CMD_FILTERED);
		return;
	}
	if (trig_armed & HMB_TRIG_ARM_LAT)
		trig_cmd(key->ctrl, (__u32)key->qid << 16 | key->cid, st);
	e = bpf_ringbuf_reserve(&rb, sizeof(*e), 0);
	if (!e) {
		count(HMB_C_RB_FAIL);
		return;
	}
	e->type = HMB_EV_CMD;
	e->ctrl = key->ctrl;
	e->qid = key->qid;
	e->cid = key->cid;
	e->pad = 0;
	__builtin_memcpy(&e->st, st, sizeof(*st));
	bpf_ringbuf_submit(e, rb_wake_flags(&rb, sizeof(*e), true));
	count(HMB_C_CMD_EMITTED);
}

/*
 * Move ks->first past the commands of @key already reported.  Programs on
 * two CPUs may advance the same entry at once (a report on one, the id's
 * next submission on the other): each step is a compare-and-swap from the
 * value it checked, so first never passes next.  (A plain increment did:
 * both saw the same reported command and both stepped past it, first
 * went one beyond next, and from then on the id's commands were out of
 * its range for good, their records all counted as duplicate phases.)
 * @gone: a command just reported (not looked for: a lookup that finds
 * nothing walks the key's whole probe run), or ~0.
 */
static __always_inline void kseq_advance(struct hmb_cmd_key *key,
					 struct hmb_kseq *ks, __u32 gone)
{
	__u32 f;

#pragma unroll
	for (int i = 0; i < HMB_MAX_WAIT; i++) {
		f = READ_ONCE(ks->first);
		if (f == READ_ONCE(ks->next))
			break;
		if (f != gone && cmd_find(key, f))
			break;
		/* another CPU may have moved it meanwhile: look again */
		__sync_val_compare_and_swap(&ks->first, f, f + 1);
	}
}

/*
 * Report the command in slot @s and free the slot, unless the agent's
 * sweep is taking it out (it set HMB_SYNC_DONE first: then the sweep
 * reports it and frees the slot).
 */
static __always_inline void cmd_report(struct hmb_cmd_key *key,
				       struct hmb_cmd_slot *s)
{
	if (__sync_fetch_and_or(&s->st.sync, HMB_SYNC_DONE) & HMB_SYNC_DONE)
		return;
	emit_cmd(key, &s->st);
	__sync_lock_test_and_set(&s->tag, 0);
}

/*
 * Report the command in slot @s and forget it: the range of @key's index
 * entry @ks moves past the commands gone.
 */
static __always_inline void finish(struct hmb_cmd_key *key,
				   struct hmb_cmd_slot *s, struct hmb_kseq *ks)
{
	__u32 n = s->n;	/* before the slot is freed */

	cmd_report(key, s);
	if (ks)
		kseq_advance(key, ks, n);
}

/*
 * A free slot for command (@k, @n), claimed (its tag busy), or NULL when
 * the HMB_CMD_PROBE slots it may use are all taken.
 */
static __always_inline struct hmb_cmd_slot *
cmd_claim(const struct hmb_cmd_key *k, __u32 n)
{
	__u64 busy = hmb_slot_tag(k, n) | HMB_TAG_BUSY;
	__u32 h = hmb_slot_home(k), i;
	struct hmb_cmd_slot *s;

#pragma unroll
	for (int p = 0; p < HMB_CMD_PROBE; p++) {
		i = (h + p) & (HMB_CMD_SLOTS - 1);
		s = bpf_map_lookup_elem(&cmds, &i);
		if (s && !READ_ONCE(s->tag) &&
		    !__sync_val_compare_and_swap(&s->tag, 0, busy))
			return s;
	}
	return NULL;
}

static __always_inline __u32 *gaps_slot(__u32 ctrl)
{
	__u32 i = ctrl < HMB_MAX_CTRLS ? ctrl : HMB_MAX_CTRLS - 1;

	return bpf_map_lookup_elem(&ctrl_gaps, &i);
}

static __always_inline __u32 gaps_of(__u32 ctrl)
{
	__u32 *g = gaps_slot(ctrl);

	return g ? *g : 0;
}

/* What a submission brings: the command's state starts from it. */
struct hmb_setup {
	__u64 submit_ns;
	__u64 slba;
	__u32 nsid;
	__u32 nlb;
	__u8 opc;
};

/*
 * Join core: a command was submitted (also driven by the test program).
 * Its state is written in its slot once claimed (no copy from elsewhere).
 * @btf: a tp_btf program's (who_take()).
 */
static __always_inline void join_setup(struct hmb_cmd_key *key,
				       const struct hmb_setup *a, bool btf)
{
	struct hmb_cmd_slot *old, *s;
	struct hmb_kseq *ks;
	struct hmb_who who;
	__u32 f, n, flags = 0, gaps0;

	if ((targ_nsid && a->nsid != targ_nsid) ||
	    (targ_opc >= 0 && a->opc != (__u8)targ_opc) || !who_take(&who, btf))
		flags |= HMB_CF_FILTERED;
	if (!fw_enabled)
		flags |= HMB_CF_HOST_ONLY;
	gaps0 = gaps_of(key->ctrl);
	count(HMB_C_HOST_SUBMIT);
	ks = kseq_find(key);
	if (!ks) {
		/* a controller, queue or tag the agent did not size for */
		count(HMB_C_DONE_FULL);
		return;
	}
	kseq_advance(key, ks, ~0U);
	if (ks->next != ks->first) {
		/* The newest of this key never completed: report it. */
		old = cmd_find(key, ks->next - 1);
		if (old && !old->st.complete_ns) {
			old->st.flags |= HMB_CF_NO_COMPLETE;
			cmd_report(key, old);
			count(HMB_C_ACTIVE_OVERWRITE);
		}
	}
	f = READ_ONCE(ks->first);
	if (ks->next - f >= HMB_MAX_WAIT) {
		/* Too many uses of this id waiting: the oldest gives up. */
		old = cmd_find(key, f);
		if (old) {
			old->st.flags |= HMB_CF_REUSED;
			cmd_report(key, old);
			count(HMB_C_REUSE_FLUSH);
		}
		__sync_val_compare_and_swap(&ks->first, f, f + 1);
	}
	n = ks->next;
	s = cmd_claim(key, n);
	if (!s) {
		count(HMB_C_ACTIVE_FULL);
		return;
	}
	s->k = *key;
	s->n = n;
	__builtin_memset(&s->st, 0, sizeof(s->st));
	s->st.submit_ns = a->submit_ns;
	s->st.slba = a->slba;
	s->st.nsid = a->nsid;
	s->st.nlb = a->nlb;
	s->st.opc = a->opc;
	s->st.flags = flags;
	s->st.gaps0 = gaps0;
	s->st.who = who;
	/* published: lookups find it from here on */
	__sync_lock_test_and_set(&s->tag, hmb_slot_tag(key, n));
	__sync_fetch_and_add(&ks->next, 1);
}

static __always_inline int handle_setup(struct request *req, void *cmd,
					bool btf)
{
	struct hmb_cmd_key key = {};
	__u8 sqe[NVME_CMD_HEAD] __attribute__((aligned(8)));
	struct hmb_setup a = {};
	struct hmb_nreq o;
	__u8 opc;

	if (!cmd || nvme_key(req, cmd, &key, sqe, btf, &o))
		return 0;
	if (targ_ctrl >= 0 && key.ctrl != (__u32)targ_ctrl)
		return 0;	/* another controller: not ours at all */
	a.submit_ns = bpf_ktime_get_ns();
	opc = sqe[NVME_CMD_OPCODE_OFF];
	__builtin_memcpy(&a.nsid, sqe + NVME_CMD_NSID_OFF, 4);
	a.opc = opc;
	if (opc == 0x01 || opc == 0x02) {	/* write, read */
		__u16 nlb;

		__builtin_memcpy(&a.slba, sqe + NVME_CMD_SLBA_OFF, 8);
		__builtin_memcpy(&nlb, sqe + NVME_CMD_NLB_OFF, 2);
		a.nlb = (__u32)nlb + 1;
	}
	join_setup(&key, &a, btf);
	return 0;
}

/* Join core: the host completed a command. */
static __always_inline void join_complete(struct hmb_cmd_key *key,
					  __u64 now, __u16 status)
{
	struct hmb_cmd_slot *s = NULL;
	struct hmb_cmd_state *st;
	struct hmb_kseq *ks;
	__u32 old;

	count(HMB_C_HOST_COMPLETE);
	ks = kseq_find(key);
	if (ks && ks->next != ks->first)
		/* the one in flight is the newest submission of the key */
		s = cmd_find(key, ks->next - 1);
	if (!s || s->st.complete_ns) {
		count(HMB_C_HOST_NO_SUBMIT);
		return;
	}
	st = &s->st;
	st->status = status;
	st->complete_ns = now;
	if (!(st->flags & HMB_CF_FILTERED))
		hist_add(HMB_H_HOST_TOTAL, now - st->submit_ns);
	/* Whoever sets the second of the two bits reports the command. */
	old = __sync_fetch_and_or(&st->sync, HMB_SYNC_HOST);
	if (!fw_enabled || (old & HMB_SYNC_FW))
		finish(key, s, ks);
}

static __always_inline int handle_complete(struct request *req, bool btf)
{
	struct hmb_cmd_key key = {};
	__u64 now = bpf_ktime_get_ns();
	struct hmb_nreq o;

	if (nvme_key(req, NULL, &key, NULL, btf, &o))
		return 0;
	if (targ_ctrl >= 0 && key.ctrl != (__u32)targ_ctrl)
		return 0;
	join_complete(&key, now, o.status);
	return 0;
}

SEC("tp_btf/nvme_setup_cmd")
int BPF_PROG(nvme_setup_btf, struct request *req, void *cmd)
{
	return handle_setup(req, cmd, true);
}

SEC("raw_tp/nvme_setup_cmd")
int BPF_PROG(nvme_setup_raw, struct request *req, void *cmd)
{
	return handle_setup(req, cmd, false);
}

SEC("tp_btf/nvme_complete_rq")
int BPF_PROG(nvme_complete_btf, struct request *req)
{
	return handle_complete(req, true);
}

SEC("raw_tp/nvme_complete_rq")
int BPF_PROG(nvme_complete_raw, struct request *req)
{
	return handle_complete(req, false);
}
