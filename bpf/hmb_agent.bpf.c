// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * hmb_agent.bpf.c - join NVMe commands seen by the host with the firmware
 * records of the same commands, in the kernel.
 *
 * Host side: nvme:nvme_setup_cmd and nvme:nvme_complete_rq (tp_btf, or
 * raw_tp where BTF for them is missing; the agent picks at load time).
 * Firmware side: hmb_trace:hmb_trace_record, emitted by nvme-hmb-trace.ko's
 * bridge for every record it drains (raw_tp: the module has no BTF; its
 * TP_PROTO is (u32 ring_id, const struct hmb_record_hdr *hdr,
 * const void *payload)).
 *
 * The join key is (controller instance, queue id, full 16-bit command id):
 * the host puts a 4-bit generation counter into the top of the command id
 * and the firmware sees the whole id, so a tag's next use has another key.
 * Records arrive after the bridge drains a batch, often after the host has
 * completed the command: a completed command waits in "done" until its
 * cqe_posted record arrives or the agent sweeps it after a grace period.
 * The same full id comes round again 16 uses of a tag later, which under
 * load is often before the bridge has delivered the predecessor's records
 * (seen in the VM: 983 reuses in 6626 commands, some 6 ms apart).  So up
 * to HMB_MAX_WAIT completed commands wait per key, in "done" under (key, n)
 * with n counting the key's completions ("kseq" keeps which n may still
 * wait; one more flushes the oldest, counted), and a record goes to the
 * oldest command of its key that has not had that phase yet: the ring
 * delivers a command's records before its successor's.  While the agent publishes a clock
 * estimate, the command must also contain the record's mapped time in its
 * host window (a tight tolerance first, then a loose one), which keeps a
 * successor's record off a predecessor whose own record was lost.  Two
 * things settle a candidate before any window: a fetch record names its
 * LBA, so it goes to the oldest read or write of its key that lacks a
 * fetch and has that slba; and a later phase goes to the oldest command of
 * its key that has its fetch but neither that phase nor its completion
 * record, while no record was lost since that command was submitted (lost
 * = a seq gap of its ring): the ring delivers a command's records before
 * its successor's.  So a clock estimate that is off (a firmware clock step
 * not yet recognised) cannot give a predecessor's records to a successor
 * whose window happens to hold them.
 *
 * Fallback without NVMe: block:block_rq_issue/block_rq_complete, host-only
 * (the same points and arithmetic as libbpf-tools' biolatency).
 *
 * Nothing is dropped silently: every lost or unmatched event bumps one of
 * the counters in hmb_agent.h.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include <linux/nvme_hmb_trace.h>
#include "hmb_agent.h"
#include "nvme_core.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* Options, set by the agent before load. */
const volatile bool fw_enabled = false;	/* hmb_trace_record attached */
const volatile bool emit_all = false;	/* send every command (NVMe mode) */
const volatile __s32 targ_ctrl = -1;	/* controller instance filter */
const volatile __u32 targ_nsid = 0;	/* namespace filter, 0 = any */
const volatile __s32 targ_opc = -1;	/* NVMe opcode (or REQ_OP) filter */
const volatile __u32 targ_dev = 0;	/* block mode: dev_t filter, 0 = any */
const volatile __u64 min_lat_ns = 0;	/* report only commands this slow */
const volatile bool dump_records = false;	/* -w: every record to "rawrb" */

/* Written by the agent while running. */
struct hmb_clk clk = {};
__u64 emit_floor_ns = 0;	/* block mode: top-N floor of this interval */

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 16 << 20);	/* the agent's --ringbuf-mb sets it */
} rb SEC(".maps");

/*
 * -w: raw records, apart from "rb" so that a burst of records never costs
 * the join an event.  The agent shrinks it to one page without -w.
 */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 8 << 20);
} rawrb SEC(".maps");

/* -w: the record being copied out (too large for the BPF stack). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct hmb_raw_event);
} rawbuf SEC(".maps");

/* -w: records of each ring not handed over (the dump's sidecar says). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, HMB_MAX_RINGS);
	__type(key, __u32);
	__type(value, __u64);
} dump_lost SEC(".maps");

/*
 * Every command from submission to report, under (key, n).  One map, so
 * that no command is ever copied from one map to another while the bridge
 * attaches a record to it on another CPU.
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, struct hmb_wait_key);
	__type(value, struct hmb_cmd_state);
} cmds SEC(".maps");

/*
 * Per full command id, which n of it may still wait in "cmds".  The
 * agent's sweep deletes entries whose commands it swept (from user space,
 * while programs may hold a pointer to the entry): not preallocated, so a
 * deleted entry is freed after an RCU grace period, never reused under a
 * program that still writes it.
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 262144);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct hmb_cmd_key);
	__type(value, struct hmb_kseq);
} kseq SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, __u32);
	__type(value, struct hmb_evdesc);
} evdesc SEC(".maps");

/* ring id -> the next seq expected (gaps are lost records). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, HMB_MAX_RINGS);
	__type(key, __u32);
	__type(value, struct hmb_ring_seq);
} ring_seq SEC(".maps");

/* controller instance -> seq gaps seen on its ring(s) */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 256);
	__type(key, __u32);
	__type(value, __u32);
} ctrl_gaps SEC(".maps");

/* ring id -> controller instance + 1 (0: no controller). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, HMB_MAX_RINGS);
	__type(key, __u32);
	__type(value, __u32);
} ring_ctrl SEC(".maps");

struct hmb_hist {
	__u64 slots[HMB_MAX_SLOTS];
};

/* Per-CPU, summed by the agent: no shared cache line on the hot path. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, HMB_H_COUNT);
	__type(key, __u32);
	__type(value, struct hmb_hist);
} hists SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, HMB_C_COUNT);
	__type(key, __u32);
	__type(value, __u64);
} counters SEC(".maps");

/* Block mode: request -> issue time (what biolatency keeps). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 10240);
	__type(key, __u64);
	__type(value, __u64);
} blk_start SEC(".maps");

/* A zeroed state to insert from (too large for the BPF stack twice). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct hmb_cmd_state);
} scratch SEC(".maps");

static __always_inline void count(__u32 idx)
{
	__u64 *c = bpf_map_lookup_elem(&counters, &idx);

	if (c)
		__sync_fetch_and_add(c, 1);
}

static __always_inline void hist_add(__u32 id, __u64 delta_ns)
{
	struct hmb_hist *h = bpf_map_lookup_elem(&hists, &id);
	__u64 us = delta_ns / 1000;
	__u32 slot = HMB_HIST_SLOT(us);	/* hmbtrace_hist.h: biolatency's */

	if (!h || slot >= HMB_MAX_SLOTS)	/* never: for the verifier */
		return;
	__sync_fetch_and_add(&h->slots[slot], 1);
}

/* ---------------------------------------------------------------- NVMe */

static __always_inline int nvme_key(struct request *req, void *cmd,
				    struct hmb_cmd_key *key)
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
	ctrl = BPF_CORE_READ(nr, ctrl);
	if (!ctrl)
		return -1;
	key->ctrl = BPF_CORE_READ(ctrl, instance);
	/* nvme_req_qid(): 0 for the admin queue, hctx->queue_num + 1 else. */
	queuedata = BPF_CORE_READ(req, q, queuedata);
	key->qid = queuedata ? BPF_CORE_READ(req, mq_hctx, queue_num) + 1 : 0;
	if (!cmd)
		cmd = BPF_CORE_READ(nr, cmd);
	if (bpf_probe_read_kernel(&cid, sizeof(cid), cmd + NVME_CMD_CID_OFF))
		return -1;
	key->cid = cid;
	return 0;
}

static __always_inline void emit_cmd(const struct hmb_cmd_key *key,
				     const struct hmb_cmd_state *st)
{
	struct hmb_cmd_event *e;

	if (st->flags & HMB_CF_FILTERED) {
		count(HMB_C_CMD_FILTERED);
		return;
	}
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
	bpf_ringbuf_submit(e, 0);
	count(HMB_C_CMD_EMITTED);
}

/* Move ks->first past the commands of @key already reported. */
static __always_inline void kseq_advance(struct hmb_cmd_key *key,
					 struct hmb_kseq *ks)
{
	struct hmb_wait_key wk = { .k = *key };

#pragma unroll
	for (int i = 0; i < HMB_MAX_WAIT; i++) {
		if (ks->first == ks->next)
			break;
		wk.n = ks->first;
		if (bpf_map_lookup_elem(&cmds, &wk))
			break;
		ks->first++;
	}
}

/* Report command (@key, @n) and forget it. */
static __always_inline void finish(struct hmb_cmd_key *key, __u32 n,
				   struct hmb_cmd_state *st)
{
	struct hmb_wait_key wk = { .k = *key, .n = n };
	struct hmb_kseq *ks;

	emit_cmd(key, st);
	bpf_map_delete_elem(&cmds, &wk);
	ks = bpf_map_lookup_elem(&kseq, key);
	if (ks) {
		kseq_advance(key, ks);
		if (ks->first == ks->next)
			bpf_map_delete_elem(&kseq, key);
	}
}

/* Join core: a command was submitted (also driven by the test program). */
static __always_inline __u32 gaps_of(__u32 ctrl)
{
	__u32 *g = bpf_map_lookup_elem(&ctrl_gaps, &ctrl);

	return g ? *g : 0;
}

static __always_inline void join_setup(struct hmb_cmd_key *key,
				       struct hmb_cmd_state *st)
{
	struct hmb_wait_key wk = { .k = *key };
	struct hmb_cmd_state *old;
	struct hmb_kseq *ks;

	if ((targ_nsid && st->nsid != targ_nsid) ||
	    (targ_opc >= 0 && st->opc != (__u8)targ_opc))
		st->flags |= HMB_CF_FILTERED;
	if (!fw_enabled)
		st->flags |= HMB_CF_HOST_ONLY;
	st->gaps0 = gaps_of(key->ctrl);
	count(HMB_C_HOST_SUBMIT);
	ks = bpf_map_lookup_elem(&kseq, key);
	if (!ks) {
		struct hmb_kseq z = {};

		bpf_map_update_elem(&kseq, key, &z, BPF_NOEXIST);
		ks = bpf_map_lookup_elem(&kseq, key);
		if (!ks) {
			/* no room to index a new command id: not tracked */
			count(HMB_C_DONE_FULL);
			return;
		}
	}
	kseq_advance(key, ks);
	if (ks->next != ks->first) {
		/* The newest of this key never completed: report it. */
		wk.n = ks->next - 1;
		old = bpf_map_lookup_elem(&cmds, &wk);
		if (old && !old->complete_ns) {
			old->flags |= HMB_CF_NO_COMPLETE;
			emit_cmd(key, old);
			bpf_map_delete_elem(&cmds, &wk);
			count(HMB_C_ACTIVE_OVERWRITE);
		}
	}
	if (ks->next - ks->first >= HMB_MAX_WAIT) {
		/* Too many uses of this id waiting: the oldest gives up. */
		wk.n = ks->first;
		old = bpf_map_lookup_elem(&cmds, &wk);
		if (old) {
			old->flags |= HMB_CF_REUSED;
			emit_cmd(key, old);
			bpf_map_delete_elem(&cmds, &wk);
			count(HMB_C_REUSE_FLUSH);
		}
		ks->first++;
	}
	wk.n = ks->next;
	if (bpf_map_update_elem(&cmds, &wk, st, BPF_NOEXIST)) {
		count(HMB_C_ACTIVE_FULL);
		return;
	}
	ks->next++;
}

static __always_inline int handle_setup(struct request *req, void *cmd)
{
	struct hmb_cmd_state *st;
	struct hmb_cmd_key key = {};
	__u32 zero = 0;
	__u8 opc = 0;

	if (!cmd || nvme_key(req, cmd, &key))
		return 0;
	if (targ_ctrl >= 0 && key.ctrl != (__u32)targ_ctrl)
		return 0;	/* another controller: not ours at all */
	st = bpf_map_lookup_elem(&scratch, &zero);
	if (!st)
		return 0;
	__builtin_memset(st, 0, sizeof(*st));
	st->submit_ns = bpf_ktime_get_ns();
	bpf_probe_read_kernel(&opc, 1, cmd + NVME_CMD_OPCODE_OFF);
	bpf_probe_read_kernel(&st->nsid, 4, cmd + NVME_CMD_NSID_OFF);
	st->opc = opc;
	if (opc == 0x01 || opc == 0x02) {	/* write, read */
		__u16 nlb = 0;

		bpf_probe_read_kernel(&st->slba, 8, cmd + NVME_CMD_SLBA_OFF);
		bpf_probe_read_kernel(&nlb, 2, cmd + NVME_CMD_NLB_OFF);
		st->nlb = (__u32)nlb + 1;
	}
	join_setup(&key, st);
	return 0;
}

/* Join core: the host completed a command. */
static __always_inline void join_complete(struct hmb_cmd_key *key,
					  __u64 now, __u16 status)
{
	struct hmb_wait_key wk = { .k = *key };
	struct hmb_cmd_state *st = NULL;
	struct hmb_kseq *ks;
	__u32 old;

	count(HMB_C_HOST_COMPLETE);
	ks = bpf_map_lookup_elem(&kseq, key);
	if (ks && ks->next != ks->first) {
		/* the one in flight is the newest submission of the key */
		wk.n = ks->next - 1;
		st = bpf_map_lookup_elem(&cmds, &wk);
	}
	if (!st || st->complete_ns) {
		count(HMB_C_HOST_NO_SUBMIT);
		return;
	}
	st->status = status;
	st->complete_ns = now;
	if (!(st->flags & HMB_CF_FILTERED))
		hist_add(HMB_H_HOST_TOTAL, now - st->submit_ns);
	/* Whoever sets the second of the two bits reports the command. */
	old = __sync_fetch_and_or(&st->sync, HMB_SYNC_HOST);
	if (!fw_enabled || (old & HMB_SYNC_FW))
		finish(key, wk.n, st);
}

static __always_inline int handle_complete(struct request *req)
{
	struct hmb_cmd_key key = {};
	struct nvme_request___hmb *nr;
	__u64 now = bpf_ktime_get_ns();

	if (nvme_key(req, NULL, &key))
		return 0;
	if (targ_ctrl >= 0 && key.ctrl != (__u32)targ_ctrl)
		return 0;
	nr = (void *)((__u64)req + bpf_core_type_size(struct request));
	join_complete(&key, now, BPF_CORE_READ(nr, status));
	return 0;
}

SEC("tp_btf/nvme_setup_cmd")
int BPF_PROG(nvme_setup_btf, struct request *req, void *cmd)
{
	return handle_setup(req, cmd);
}

SEC("raw_tp/nvme_setup_cmd")
int BPF_PROG(nvme_setup_raw, struct request *req, void *cmd)
{
	return handle_setup(req, cmd);
}

SEC("tp_btf/nvme_complete_rq")
int BPF_PROG(nvme_complete_btf, struct request *req)
{
	return handle_complete(req);
}

SEC("raw_tp/nvme_complete_rq")
int BPF_PROG(nvme_complete_raw, struct request *req)
{
	return handle_complete(req);
}

/* ------------------------------------------------------------ firmware */

/* Firmware time -> host time with the agent's estimate (integer math). */
static __always_inline __s64 fw_to_host(__u64 fw)
{
	__s64 off = clk.off_ns, ppb = clk.drift_ppb;
	__u64 d, c, appb;
	bool neg_d = fw < clk.ref_fw, neg_p = ppb < 0;

	d = neg_d ? clk.ref_fw - fw : fw - clk.ref_fw;
	appb = neg_p ? -ppb : ppb;
	/* microsecond resolution of the correction is plenty for a window */
	c = (d / 1000) * appb / 1000000;
	return (__s64)fw + off + ((neg_d != neg_p) ? -(__s64)c : (__s64)c);
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

static __always_inline void fw_phase_hists(const struct hmb_cmd_state *st,
					   __u32 ph, __u64 ts)
{
	__u64 prev = 0;
	int have = 0;

	/* The latest earlier firmware event of this command precedes @ph. */
#pragma unroll
	for (int q = HMB_PH_FETCH; q < HMB_PH_COUNT; q++) {
		if (q == (int)ph || !(st->fw_mask & (1 << q)))
			continue;
		if (st->fw_ts[q] <= ts && (!have || st->fw_ts[q] > prev)) {
			prev = st->fw_ts[q];
			have = 1;
		}
	}
	if (have && ph >= HMB_PH_MEDIA_START && ph <= HMB_PH_CQE_POSTED)
		hist_add(HMB_H_FW_TO_MEDIA_START + ph - HMB_PH_MEDIA_START,
			 ts - prev);
	if (ph == HMB_PH_CQE_POSTED && (st->fw_mask & (1 << HMB_PH_FETCH)) &&
	    st->fw_ts[HMB_PH_FETCH] <= ts)
		hist_add(HMB_H_FW_TOTAL, ts - st->fw_ts[HMB_PH_FETCH]);
}

/* Can @st take a record of phase @ph at host time @host (tolerance @tol)? */
static __always_inline bool fits(const struct hmb_cmd_state *st, __u32 ph,
				 __s64 host, __u64 tol)
{
	if (!st || (st->fw_mask & (1 << ph)))
		return false;
	if (host < (__s64)st->submit_ns - (__s64)tol)
		return false;
	return !st->complete_ns || host <= (__s64)st->complete_ns + (__s64)tol;
}

/*
 * The oldest candidate for a record of phase @ph among the commands of the
 * key (n = first, first + 1, ...; the one in flight is the last).  Without
 * the clock (@noclk) the first without that phase; with it, the first
 * whose host window widened by @tol holds @host.  Sets *@any when some
 * candidate lacked the phase.  Written out: Linux 6.1's verifier refuses
 * some loop shapes that newer ones accept.
 */
static __always_inline int pick(struct hmb_wait_key *wk, __u32 first,
				__u32 nwait, __u32 ph, __s64 host, __u64 tol,
				bool noclk, int *any)
{
	struct hmb_cmd_state *st;
	int res = -1;

#define HMB_PICK(i)							\
	if (res < 0 && (i) < nwait) {					\
		wk->n = first + (i);					\
		st = bpf_map_lookup_elem(&cmds, wk);			\
		if (st && !(st->fw_mask & (1 << ph))) {			\
			*any = 1;					\
			if (noclk || fits(st, ph, host, tol))		\
				res = (i);				\
		}							\
	}
#define HMB_PICK8(b) HMB_PICK(b) HMB_PICK(b + 1) HMB_PICK(b + 2)	\
	HMB_PICK(b + 3) HMB_PICK(b + 4) HMB_PICK(b + 5) HMB_PICK(b + 6)	\
	HMB_PICK(b + 7)
	HMB_PICK8(0) HMB_PICK8(8) HMB_PICK8(16) HMB_PICK8(24)
#undef HMB_PICK8
#undef HMB_PICK
	_Static_assert(HMB_MAX_WAIT == 32, "HMB_PICK is written out for 32");
	return res;
}

/*
 * The candidate the record is known to belong to, before any window, or
 * -1.  A fetch with its slba (@has_slba): the oldest read or write lacking
 * a fetch with that slba.  Another phase: the oldest command that has its
 * fetch and lacks both that phase and its cqe_posted, if no record of its
 * controller's rings was lost since it was submitted (@gaps now).  A
 * bpf_loop() (the callback is verified once): written out like pick(), it
 * took the test program past the verifier's million instructions.
 */
struct hmb_ord_ctx {
	struct hmb_wait_key wk;
	__u64 slba;
	__u32 first;
	__u32 nwait;
	__u32 ph;
	__u32 gaps;
	__u32 has_slba;
	int res;
};

static long hmb_ord_step(__u32 i, void *data)
{
	struct hmb_ord_ctx *x = data;
	struct hmb_cmd_state *st;
	__u32 ph = x->ph & 7;

	if (i >= x->nwait)
		return 1;
	x->wk.n = x->first + i;
	st = bpf_map_lookup_elem(&cmds, &x->wk);
	if (!st || (st->fw_mask & (1 << ph)))
		return 0;
	if (ph == HMB_PH_FETCH) {
		if ((st->opc == 0x01 || st->opc == 0x02) && st->slba == x->slba) {
			x->res = i;
			return 1;
		}
		return 0;
	}
	if (st->fw_mask & (1 << HMB_PH_CQE_POSTED))
		return 0;
	/* the oldest still expecting records decides, one way or the other */
	if ((st->fw_mask & (1 << HMB_PH_FETCH)) && st->gaps0 == x->gaps)
		x->res = i;
	return 1;
}

static __always_inline int pick_known(const struct hmb_wait_key *wk,
				      __u32 first, __u32 nwait, __u32 ph,
				      bool has_slba, __u64 slba, __u32 gaps)
{
	struct hmb_ord_ctx x = { .wk = *wk, .first = first, .nwait = nwait,
				 .ph = ph, .slba = slba, .gaps = gaps,
				 .has_slba = has_slba, .res = -1 };

	if (ph == HMB_PH_FETCH && !has_slba)
		return -1;
	bpf_loop(HMB_MAX_WAIT, hmb_ord_step, &x, 0);
	return x.res;
}

/* Seq gaps of a ring are records lost: counted per controller. */
static __always_inline void note_seq(__u32 ring, __u32 seq)
{
	struct hmb_ring_seq *rs = bpf_map_lookup_elem(&ring_seq, &ring);
	__u32 *ctrlp, *g, ctrl, one = 1;

	if (!rs)
		return;
	if (rs->have && seq != rs->next) {
		ctrlp = bpf_map_lookup_elem(&ring_ctrl, &ring);
		if (ctrlp && *ctrlp) {
			ctrl = *ctrlp - 1;
			g = bpf_map_lookup_elem(&ctrl_gaps, &ctrl);
			if (g)
				__sync_fetch_and_add(g, 1);
			else
				bpf_map_update_elem(&ctrl_gaps, &ctrl, &one,
						    BPF_NOEXIST);
		}
	}
	rs->next = seq + 1;
	rs->have = 1;
}

/*
 * Join core: a firmware command event (phase @ph) for (ring, sqid, cid).
 * @h is the record header already copied out of the kernel.
 */
static __always_inline void join_fw(__u32 ring,
				    const struct hmb_record_hdr *h, __u32 ph,
				    __u16 sqid, __u16 cid, bool has_slba,
				    __u64 slba)
{
	struct hmb_cmd_key key = {};
	struct hmb_wait_key wk = {};
	struct hmb_cmd_state *st;
	struct hmb_kseq *ks;
	__u32 *ctrlp, first, nwait;
	int which = -1, any = 0;
	__s64 host;

	ctrlp = bpf_map_lookup_elem(&ring_ctrl, &ring);
	if (!ctrlp || !*ctrlp) {
		fw_unmatched(HMB_C_FW_UNMAPPED_RING, ring, h, sqid, cid, 0);
		return;
	}
	key.ctrl = *ctrlp - 1;
	key.qid = sqid;
	key.cid = cid;
	/* Candidates, oldest first; the one in flight is the newest. */
	wk.k = key;
	ks = bpf_map_lookup_elem(&kseq, &key);
	first = ks ? ks->first : 0;
	nwait = ks ? ks->next - ks->first : 0;
	if (nwait > HMB_MAX_WAIT)
		nwait = HMB_MAX_WAIT;
	if (!nwait) {
		fw_unmatched(HMB_C_FW_NO_CMD, ring, h, sqid, cid, key.ctrl);
		return;
	}
	which = pick_known(&wk, first, nwait, ph, has_slba, slba,
			   gaps_of(key.ctrl));
	if (which >= 0) {
		count(HMB_C_FW_BY_ORDER);
	} else if (clk.valid) {
		host = fw_to_host(h->ts_ns);
		which = pick(&wk, first, nwait, ph, host, clk.tight_ns, false,
			     &any);
		if (which < 0)
			which = pick(&wk, first, nwait, ph, host, clk.tol_ns,
				     false, &any);
	} else {
		which = pick(&wk, first, nwait, ph, 0, 0, true, &any);
	}
	if (which < 0) {
		fw_unmatched(any ? HMB_C_FW_OUT_OF_WINDOW : HMB_C_FW_DUP_PHASE,
			     ring, h, sqid, cid, key.ctrl);
		return;
	}
	wk.n = first + which;
	st = bpf_map_lookup_elem(&cmds, &wk);
	if (!st)
		return;
	if (!(st->flags & HMB_CF_FILTERED))
		fw_phase_hists(st, ph, h->ts_ns);
	st->fw_ts[ph] = h->ts_ns;
	st->fw_seq[ph] = h->seq;
	st->fw_mask |= 1 << ph;
	st->ring = ring;
	count(HMB_C_FW_MATCHED);
	if (ph == HMB_PH_CQE_POSTED) {
		/* Whoever sets the second of the two bits reports it. */
		__u32 old = __sync_fetch_and_or(&st->sync, HMB_SYNC_FW);

		if (old & HMB_SYNC_HOST)
			finish(&key, wk.n, st);
	}
}

/* -w: a record the agent could not hand over, counted per ring too. */
static __always_inline void dump_loss(__u32 ring)
{
	__u64 *c = bpf_map_lookup_elem(&dump_lost, &ring);

	count(HMB_C_DUMP_LOST);
	if (c)
		__sync_fetch_and_add(c, 1);
}

/*
 * -w: copy the record (header, then @payload, a kernel pointer; NULL from
 * the test program, which sends no payload) to user space.  The bridge
 * has checked payload_len; checked again for the verifier, and because
 * the ring is hostile input (docs/format.md).
 */
static __always_inline void dump_record(__u32 ring,
					const struct hmb_record_hdr *h,
					const void *payload)
{
	struct hmb_raw_event *e;
	__u32 zero = 0, n = h->payload_len;

	e = bpf_map_lookup_elem(&rawbuf, &zero);
	if (!e || n > HMB_RAW_REC_MAX - sizeof(*h)) {
		dump_loss(ring);
		return;
	}
	e->type = HMB_EV_RAW;
	e->ring = ring;
	__builtin_memcpy(e->rec, h, sizeof(*h));
	if (n && (!payload ||
		  bpf_probe_read_kernel(e->rec + sizeof(*h), n, payload))) {
		dump_loss(ring);
		return;
	}
	if (bpf_ringbuf_output(&rawrb, e, 8 + sizeof(*h) + n, 0)) {
		dump_loss(ring);
		return;
	}
	count(HMB_C_DUMP_SENT);
}

/*
 * Classify a record by the dictionary and pass it on.  @payload is a
 * kernel pointer (read with bpf_probe_read_kernel) or, from the test
 * program, NULL with the keys given in @tsqid/@tcid.
 */
static __always_inline void handle_fw(__u32 ring, struct hmb_record_hdr *h,
				      const void *payload, int test,
				      __u16 tsqid, __u16 tcid, bool tslba,
				      __u64 tslba_v)
{
	struct hmb_evdesc *d;
	__u16 sqid = tsqid, cid = tcid;
	bool has_slba = tslba;
	__u64 slba = tslba_v;
	__u32 op, ph;

	if (dump_records)
		dump_record(ring, h, test ? NULL : payload);
	if (h->flags & ~HMB_REC_FLAG_TRUNCATED) {
		count(HMB_C_FW_MARKER);	/* wrap marker or unknown flags: no event */
		return;
	}
	note_seq(ring, h->seq);
	op = h->opcode;
	d = bpf_map_lookup_elem(&evdesc, &op);
	if (!d) {
		fw_unmatched(HMB_C_FW_UNKNOWN_OP, ring, h, 0, 0, 0);
		return;
	}
	if (h->payload_len < d->min_len) {
		fw_unmatched(HMB_C_FW_SHORT, ring, h, 0, 0, 0);
		return;
	}
	if (d->bg_edge) {
		fw_bg(ring, h, payload, d->bg_edge);
		return;
	}
	ph = d->phase;
	if (ph < HMB_PH_FETCH || ph >= HMB_PH_COUNT) {
		count(HMB_C_FW_OTHER);
		return;
	}
	if (!test &&
	    (bpf_probe_read_kernel(&sqid, 2, payload + (d->sqid_off & 0xfff)) ||
	     bpf_probe_read_kernel(&cid, 2, payload + (d->cid_off & 0xfff)))) {
		count(HMB_C_FW_READ_FAIL);
		return;
	}
	if (!test && ph == HMB_PH_FETCH && d->slba_off != HMB_NO_OFF &&
	    h->payload_len >= (__u32)(d->slba_off & 0xfff) + 8)
		has_slba = !bpf_probe_read_kernel(&slba, 8, payload +
						  (d->slba_off & 0xfff));
	join_fw(ring, h, ph, sqid, cid, has_slba, slba);
}

SEC("raw_tp/hmb_trace_record")
int hmb_record(struct bpf_raw_tracepoint_args *ctx)
{
	struct hmb_record_hdr h;

	count(HMB_C_FW_RECORDS);
	if (bpf_probe_read_kernel(&h, sizeof(h), (const void *)ctx->args[1])) {
		count(HMB_C_FW_READ_FAIL);
		return 0;
	}
	handle_fw((__u32)ctx->args[0], &h, (const void *)ctx->args[2], 0, 0, 0,
		  false, 0);
	return 0;
}

/* Block mode: request @key was issued (also driven by the test program). */
static __always_inline void blk_issue_key(__u64 key)
{
	__u64 ts;

	count(HMB_C_HOST_SUBMIT);
	ts = bpf_ktime_get_ns();
	/* A full map loses the request: counted, its completion is not seen. */
	if (bpf_map_update_elem(&blk_start, &key, &ts, BPF_ANY))
		count(HMB_C_ACTIVE_FULL);
}

/*
 * Test driver (never attached; run with BPF_PROG_TEST_RUN by
 * user/agent/tests/t_bpf_join): feeds synthetic host and firmware events
 * through the same join core, since the build machine has neither NVMe
 * nor the module.  args[0]: 1 setup (ctrl, qid, cid, ts, opc, nsid,
 * slba), 2 complete (ctrl, qid, cid, ts, status), 3 firmware record (ring,
 * opcode, sqid, cid, ts, seq, payload_len, flags, slba, has the slba),
 * 4 block-mode issue (request key).
 */
SEC("raw_tp")
int hmb_test_drive(struct bpf_raw_tracepoint_args *ctx)
{
	struct hmb_cmd_key key = {};
	struct hmb_cmd_state *st;
	struct hmb_record_hdr h = {};
	__u32 zero = 0;

	switch (ctx->args[0]) {
	case 1:
		st = bpf_map_lookup_elem(&scratch, &zero);
		if (!st)
			return 0;
		__builtin_memset(st, 0, sizeof(*st));
		key.ctrl = ctx->args[1];
		key.qid = ctx->args[2];
		key.cid = ctx->args[3];
		st->submit_ns = ctx->args[4];
		st->opc = ctx->args[5];
		st->nsid = ctx->args[6];
		st->slba = ctx->args[7];
		join_setup(&key, st);
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
		handle_fw(ctx->args[1], &h, NULL, 1, ctx->args[3],
			  ctx->args[4], ctx->args[10] != 0, ctx->args[9]);
		break;
	case 4:
		blk_issue_key(ctx->args[1]);
		break;
	}
	return 0;
}

/* ------------------------------------------------- block-layer fallback */

static __always_inline __u32 rq_dev(struct request *rq)
{
	struct gendisk *disk = BPF_CORE_READ(rq, q, disk);

	if (!disk)
		return 0;
	return ((__u32)BPF_CORE_READ(disk, major) << 20) |
	       (__u32)BPF_CORE_READ(disk, first_minor);
}

static __always_inline int blk_issue(struct request *rq)
{
	if (targ_dev && rq_dev(rq) != targ_dev)
		return 0;
	blk_issue_key((__u64)rq);
	return 0;
}

static __always_inline int blk_complete(struct request *rq)
{
	__u64 key = (__u64)rq, *tsp, now, delta;
	struct hmb_cmd_event *e;
	__u32 op;

	tsp = bpf_map_lookup_elem(&blk_start, &key);
	if (!tsp)
		return 0;	/* issued before we started, or filtered */
	now = bpf_ktime_get_ns();
	delta = now - *tsp;
	count(HMB_C_HOST_COMPLETE);
	op = BPF_CORE_READ(rq, cmd_flags) & 0xff;
	if (targ_opc >= 0 && op != (__u32)targ_opc) {
		count(HMB_C_CMD_FILTERED);
		goto out;
	}
	hist_add(HMB_H_HOST_TOTAL, delta);
	if (!emit_all && (delta < min_lat_ns || delta < emit_floor_ns)) {
		count(HMB_C_CMD_BELOW_MIN);
		goto out;
	}
	e = bpf_ringbuf_reserve(&rb, sizeof(*e), 0);
	if (!e) {
		count(HMB_C_RB_FAIL);
		goto out;
	}
	__builtin_memset(e, 0, sizeof(*e));
	e->type = HMB_EV_CMD;
	e->st.submit_ns = *tsp;
	e->st.complete_ns = now;
	e->st.slba = BPF_CORE_READ(rq, __sector);
	e->st.nlb = BPF_CORE_READ(rq, __data_len);
	e->st.dev = rq_dev(rq);
	e->st.opc = op;
	e->st.flags = HMB_CF_BLOCK | HMB_CF_HOST_ONLY;
	bpf_ringbuf_submit(e, 0);
	count(HMB_C_CMD_EMITTED);
out:
	bpf_map_delete_elem(&blk_start, &key);
	return 0;
}

SEC("tp_btf/block_rq_issue")
int BPF_PROG(blk_issue_btf, struct request *rq)
{
	return blk_issue(rq);
}

SEC("raw_tp/block_rq_issue")
int BPF_PROG(blk_issue_raw, struct request *rq)
{
	return blk_issue(rq);
}

SEC("tp_btf/block_rq_complete")
int BPF_PROG(blk_complete_btf, struct request *rq, int error,
	     unsigned int nr_bytes)
{
	return blk_complete(rq);
}

SEC("raw_tp/block_rq_complete")
int BPF_PROG(blk_complete_raw, struct request *rq, int error,
	     unsigned int nr_bytes)
{
	return blk_complete(rq);
}
