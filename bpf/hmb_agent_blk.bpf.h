// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * hmb_agent_blk.bpf.h - the block-layer fallback (block_rq_issue ->
 * block_rq_complete, as biolatency; or, where the kernel stamps each
 * request's issue time itself, block_rq_complete alone).
 * Part of hmb_agent.bpf.c (one BPF object), which includes it after its
 * maps and helpers; not a header of its own.
 */

/* ------------------------------------------------- block-layer fallback */

/*
 * Block mode: request @key was issued by @who (also driven by the test
 * program of hmb_agent_test.bpf.c, without who).
 */
static __always_inline void blk_issue_key(__u64 key,
					  const struct hmb_who *who)
{
	struct hmb_blk_start v = {};

	count(HMB_C_HOST_SUBMIT);
	v.ts = bpf_ktime_get_ns();
	if (who)
		v.who = *who;
	/* A full map loses the request: counted, its completion is not seen. */
	if (bpf_map_update_elem(&blk_start, &key, &v, BPF_ANY))
		count(HMB_C_ACTIVE_FULL);
}

/*
 * @btf (a constant): @rq is a tp_btf argument, whose fields the program
 * loads directly (no helper call per field); raw_tp: BPF_CORE_READ.
 */
static __always_inline __u32 rq_dev(struct request *rq, bool btf)
{
	struct gendisk *disk;

	if (btf) {
		disk = rq->q->disk;
		if (!disk)
			return 0;
		return ((__u32)disk->major << 20) | (__u32)disk->first_minor;
	}
	disk = BPF_CORE_READ(rq, q, disk);
	if (!disk)
		return 0;
	return ((__u32)BPF_CORE_READ(disk, major) << 20) |
	       (__u32)BPF_CORE_READ(disk, first_minor);
}

static __always_inline __u32 rq_op(struct request *rq, bool btf)
{
	return (btf ? rq->cmd_flags : BPF_CORE_READ(rq, cmd_flags)) & 0xff;
}

static __always_inline int blk_issue(struct request *rq, bool btf)
{
	struct hmb_who who;

	/* 6.12's verifier may type a tracepoint argument as maybe NULL */
	if (!rq)
		return 0;
	if (targ_dev && rq_dev(rq, btf) != targ_dev)
		return 0;
	/* no join in block mode: a request they exclude is not tracked */
	if (!who_take(&who, btf)) {
		count(HMB_C_CMD_FILTERED);
		return 0;
	}
	blk_issue_key((__u64)rq, &who);
	return 0;
}

/*
 * The request's issue time as the kernel stamped it (ktime_get_ns in
 * blk_mq_start_request, on a queue with I/O statistics), 0 if it did not.
 */
static __always_inline __u64 rq_issue_stamp(struct request *rq, bool btf)
{
	return btf ? rq->io_start_time_ns : BPF_CORE_READ(rq, io_start_time_ns);
}

/* --trigger: the latency triggers on a request completing (host only). */
static __always_inline void blk_trig(struct request *rq, bool btf,
				     __u64 start, __u64 now, __u16 status,
				     const struct hmb_blk_start *v)
{
	struct hmb_cmd_state st = {};

	if (v)
		st.who = v->who;

	st.submit_ns = start;
	st.complete_ns = now;
	st.slba = btf ? rq->__sector : BPF_CORE_READ(rq, __sector);
	st.nlb = btf ? rq->__data_len : BPF_CORE_READ(rq, __data_len);
	st.dev = rq_dev(rq, btf);
	st.opc = rq_op(rq, btf);
	st.status = status;
	st.flags = HMB_CF_BLOCK | HMB_CF_HOST_ONLY;
	trig_cmd(0, 0, &st);
}

static __always_inline int blk_complete(struct request *rq, __u16 status,
					bool btf)
{
	__u64 key = (__u64)rq, start, now, delta;
	struct hmb_blk_start *tsp = NULL;
	struct hmb_cmd_event *e;
	__u32 op;

	if (blk_kernel_stamp) {
		if (!rq)
			return 0;
		if (targ_dev && rq_dev(rq, btf) != targ_dev)
			return 0;
		start = rq_issue_stamp(rq, btf);
		if (!start) {
			/* not issued, or its queue keeps no statistics */
			count(HMB_C_HOST_NO_SUBMIT);
			return 0;
		}
	} else {
		tsp = bpf_map_lookup_elem(&blk_start, &key);
		if (!tsp)
			return 0;	/* issued before we started, or filtered */
		start = tsp->ts;
	}
	now = bpf_ktime_get_ns();
	delta = now - start;
	count(HMB_C_HOST_COMPLETE);
	/* the request's operation only if filtered by it or sent */
	if (targ_opc >= 0) {
		op = rq_op(rq, btf);
		if (op != (__u32)targ_opc) {
			count(HMB_C_CMD_FILTERED);
			goto out;
		}
	}
	hist_add(HMB_H_HOST_TOTAL, delta);
	if (trig_armed & HMB_TRIG_ARM_LAT)
		blk_trig(rq, btf, start, now, status, tsp);
	if (!emit_all && (delta < min_lat_ns || delta < emit_floor_ns)) {
		count(HMB_C_CMD_BELOW_MIN);
		goto out;
	}
	if (targ_opc < 0)
		op = rq_op(rq, btf);
	e = bpf_ringbuf_reserve(&rb, sizeof(*e), 0);
	if (!e) {
		count(HMB_C_RB_FAIL);
		goto out;
	}
	__builtin_memset(e, 0, sizeof(*e));
	e->type = HMB_EV_CMD;
	e->st.submit_ns = start;
	e->st.complete_ns = now;
	e->st.slba = btf ? rq->__sector : BPF_CORE_READ(rq, __sector);
	e->st.nlb = btf ? rq->__data_len : BPF_CORE_READ(rq, __data_len);
	e->st.dev = rq_dev(rq, btf);
	e->st.opc = op;
	e->st.status = status;	/* blk_status_t: 0 is BLK_STS_OK */
	e->st.flags = HMB_CF_BLOCK | HMB_CF_HOST_ONLY;
	if (tsp)
		e->st.who = tsp->who;
	bpf_ringbuf_submit(e, 0);
	count(HMB_C_CMD_EMITTED);
out:
	if (tsp)
		bpf_map_delete_elem(&blk_start, &key);
	return 0;
}

SEC("tp_btf/block_rq_issue")
int BPF_PROG(blk_issue_btf, struct request *rq)
{
	return blk_issue(rq, true);
}

SEC("raw_tp/block_rq_issue")
int BPF_PROG(blk_issue_raw, struct request *rq)
{
	return blk_issue(rq, false);
}

SEC("tp_btf/block_rq_complete")
int BPF_PROG(blk_complete_btf, struct request *rq, int error,
	     unsigned int nr_bytes)
{
	return blk_complete(rq, (__u16)error, true);
}

SEC("raw_tp/block_rq_complete")
int BPF_PROG(blk_complete_raw, struct request *rq, int error,
	     unsigned int nr_bytes)
{
	return blk_complete(rq, (__u16)error, false);
}
