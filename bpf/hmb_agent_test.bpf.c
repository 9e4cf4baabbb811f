// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * hmb_agent_test.bpf.c - hmb_agent.bpf.c's programs, maps and join core
 * plus the test driver: the object (hmb_agent_test.skel.h) that
 * user/agent/tests load, never the agent.  The driver runs with
 * BPF_PROG_TEST_RUN only; the build machine has neither NVMe nor the
 * module, so it feeds synthetic host and firmware events through the
 * same join core the attached programs run.
 */
#include "hmb_agent.bpf.c"

/*
 * bench_bpf_join's anchor, biolatency's work per I/O on a map like its
 * own "start": request -> issue time, 8 bytes a value (the agent's
 * blk_start also keeps who issued it).
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 10240);
	__type(key, __u64);
	__type(value, __u64);
} bio_start SEC(".maps");

/* At issue: the time, by request. */
static __always_inline void bio_issue(__u64 key)
{
	__u64 ts = bpf_ktime_get_ns();

	bpf_map_update_elem(&bio_start, &key, &ts, BPF_ANY);
}

/* At completion: its latency into the histogram, the entry deleted. */
static __always_inline void bio_done(__u64 key)
{
	__u64 *tsp = bpf_map_lookup_elem(&bio_start, &key);

	if (!tsp)
		return;
	hist_add(HMB_H_HOST_TOTAL, bpf_ktime_get_ns() - *tsp);
	bpf_map_delete_elem(&bio_start, &key);
}

/*
 * Test case 7: record @i of "batchbuf" one per run with its payload read
 * from the kernel (hmb_trace_record's way), the payload being its head
 * copy there (map memory: a kernel address).
 */
static __always_inline void test_kread(__u32 ring, __u32 i)
{
	struct hmb_batch_buf *bb;
	struct hmb_bridge_rec *r;
	struct hmb_ring_ref rr;
	__u32 zero = 0;

	bb = bpf_map_lookup_elem(&batchbuf, &zero);
	if (!bb)
		return;
	r = &bb->r[i & (HMB_BRIDGE_BATCH - 1)];
	count(HMB_C_FW_RECORDS);
	if (dump_records)
		raw_one(ring, &r->hdr, r->head);
	ring_ref(ring, &rr);
	count_fw(handle_fw(ring, &rr, &r->hdr, r->head, 0, 0, 0, false, 0,
			   NULL));
}

/*
 * The test driver (never attached; run with BPF_PROG_TEST_RUN by
 * user/agent/tests/t_bpf_join): feeds synthetic host and firmware events
 * through the same join core, since the build machine has neither NVMe
 * nor the module.  args[0]: 1 setup (ctrl, qid, cid, ts, opc, nsid,
 * slba), 2 complete (ctrl, qid, cid, ts, status), 3 firmware record (ring,
 * opcode, sqid, cid, ts, seq, payload_len, flags, slba, has the slba),
 * 4 block-mode issue (request key), 5 biolatency's completion work for
 * bench_bpf_join (request key; bio_done()), 6 a batch of records as
 * hmb_trace_records
 * hands them over (ring, count; the records already in "batchbuf", the
 * keys in their head, no payload), 7 one of those records with its
 * payload read from the kernel (ring, index; test_kread()), 8
 * biolatency's issue work for bench_bpf_join (request key; bio_issue()).
 */
SEC("raw_tp")
int hmb_test_drive(struct bpf_raw_tracepoint_args *ctx)
{
	struct hmb_cmd_key key = {};
	struct hmb_setup a = {};
	struct hmb_record_hdr h = {};
	struct hmb_ring_ref rr;

	switch (ctx->args[0]) {
	case 1:
		key.ctrl = ctx->args[1];
		key.qid = ctx->args[2];
		key.cid = ctx->args[3];
		a.submit_ns = ctx->args[4];
		a.opc = ctx->args[5];
		a.nsid = ctx->args[6];
		a.slba = ctx->args[7];
		join_setup(&key, &a, false);
		break;
	case 2:
		key.ctrl = ctx->args[1];
		key.qid = ctx->args[2];
		key.cid = ctx->args[3];
		join_complete(&key, ctx->args[4], ctx->args[5]);
		break;
	case 3:
		count(HMB_C_FW_RECORDS);
		h.magic = HMB_RECORD_MAGIC;
		h.opcode = ctx->args[2];
		h.ts_ns = ctx->args[5];
		h.seq = ctx->args[6];
		h.payload_len = ctx->args[7];
		h.flags = ctx->args[8];
		if (dump_records)	/* no payload: one that has is lost */
			raw_one(ctx->args[1], &h, NULL);
		ring_ref(ctx->args[1], &rr);
		count_fw(handle_fw(ctx->args[1], &rr, &h, NULL, 1, ctx->args[3],
				   ctx->args[4], ctx->args[10] != 0,
				   ctx->args[9], NULL));
		break;
	case 4:
		blk_issue_key(ctx->args[1], NULL);
		break;
	case 5:
		bio_done(ctx->args[1]);
		break;
	case 6:
		handle_batch(ctx->args[1], 0, ctx->args[2]);
		break;
	case 7:
		test_kread(ctx->args[1], ctx->args[2]);
		break;
	case 8:
		bio_issue(ctx->args[1]);
		break;
	}
	return 0;
}
