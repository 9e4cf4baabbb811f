// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * hmb_agent.bpf.c - join in the kernel the NVMe commands the host sees
 * (nvme_setup_cmd, nvme_complete_rq) with their firmware records from
 * nvme-hmb-trace.ko's bridge (docs/agent.md, "The join").  Rules:
 * - key (controller, queue, full 16-bit cid): the cid's generation bits
 *   tell a tag's reuses apart; up to HMB_MAX_WAIT commands per key wait
 *   in "cmds" for records that come after the completion, indexed by
 *   the key itself ("kseq": nothing inserted or deleted);
 * - a record goes to the oldest command of its key lacking its phase,
 *   as the ring delivers a command's records before its successor's;
 * - a fetch's LBA, or ring order while no seq gap was seen, proposes a
 *   command; with a clock estimate its host window must hold the record
 *   (else refused, counted, and the oldest whose window holds it takes it);
 * - without NVMe, block:block_rq_* as biolatency; nothing is dropped
 *   silently: every loss bumps a counter of hmb_agent.h.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include <linux/nvme_hmb_trace.h>
#include "hmb_agent.h"
#include "nvme_core.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* One load of a variable user space writes while the program runs. */
#define READ_ONCE(x)	(*(const volatile typeof(x) *)&(x))

/* Options, set by the agent before load. */
const volatile bool fw_enabled = false;	/* hmb_trace_record attached */
const volatile bool emit_all = false;	/* send every command (NVMe mode) */
const volatile __s32 targ_ctrl = -1;	/* controller instance filter */
const volatile __u32 targ_nsid = 0;	/* namespace filter, 0 = any */
const volatile __s32 targ_opc = -1;	/* NVMe opcode (or REQ_OP) filter */
const volatile __u32 targ_dev = 0;	/* block mode: dev_t filter, 0 = any */
const volatile __u64 min_lat_ns = 0;	/* report only commands this slow */
const volatile bool dump_records = false;	/* -w: every record to "rawrb" */
const volatile __u32 trig_armed = 0;	/* HMB_TRIG_ARM_*: --trigger kinds */
/*
 * --pid, --comm, --cgroup: who issued a command (struct hmb_who), taken
 * where it is submitted; a command they exclude is still joined (its
 * records must find it) and counted at emission, not sent.
 */
const volatile __u32 targ_tgid = 0;	/* --pid, 0 = any */
const volatile char targ_comm[HMB_COMM_LEN] = {};	/* --comm, "" = any */
const volatile bool targ_cgroup = false;	/* --cgroup: map "cgroup" */
/*
 * Block mode: the request's own issue stamp (io_start_time_ns, which
 * blk_mq_start_request sets right after block_rq_issue on a queue with
 * I/O statistics) is the start time, and no program runs at issue.
 */
const volatile bool blk_kernel_stamp = false;
/*
 * The shape of "kseq" (struct hmb_kseq_geom): the agent sets it and the
 * map's size from the controllers it traces.  The default, one controller
 * of 16 queues with 4096 tags, is the map's declared size (the tests').
 */
const volatile __u32 kseq_ctrl0 = 0;
const volatile __u32 kseq_nctrl = 1;
const volatile __u32 kseq_nq = 16;
const volatile __u32 kseq_tag_bits = 12;

/* Written by the agent while running. */
struct hmb_clk clk = {};
__u64 emit_floor_ns = 0;	/* block mode: top-N floor of this interval */
struct hmb_trig trig[HMB_MAX_TRIGGERS] = {};	/* --trigger, in its order */
/* Firings per trigger, each sent or not (the ring buffer may be full). */
__u64 trig_fired[HMB_MAX_TRIGGERS] = {};

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

/*
 * -w: the batch of records being gathered for one event (too large for
 * the BPF stack), and room past it for one more record, which the
 * verifier asks for: it cannot know that raw_add() never writes there.
 */
struct hmb_raw_buf {
	struct hmb_raw_event ev;
	__u8 slack[HMB_RECORD_MAX_SIZE + 8];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct hmb_raw_buf);
} rawbuf SEC(".maps");

/* -w: records of each ring not handed over (the dump's sidecar says). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, HMB_MAX_RINGS);
	__type(key, __u32);
	__type(value, __u64);
} dump_lost SEC(".maps");

/*
 * Every command from submission to report, in place in one slot (see
 * hmb_agent.h): no insert and no delete per command, and every lookup is
 * an array access the verifier inlines.  One slot per command, so that no
 * command is ever copied from one place to another while the bridge
 * attaches a record to it on another CPU.  Mapped into the agent, whose
 * sweep takes out the commands whose records never came.
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, HMB_CMD_SLOTS);
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, struct hmb_cmd_slot);
} cmds SEC(".maps");

/*
 * Per full command id, which n of it may still wait in "cmds": an array
 * indexed by the id (see hmb_agent.h), so a lookup is one inlined array
 * access and no entry is ever inserted, taken out or reused.
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 16 * 16 * 4096);	/* kseq_* above */
	__type(key, __u32);
	__type(value, struct hmb_kseq);
} kseq SEC(".maps");

/*
 * opcode -> how to read its records; an array (its lookup is inlined, one
 * per record), entries the agent did not fill have known == 0.
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 65536);
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

/*
 * controller instance -> seq gaps seen on its ring(s); an array (looked up
 * at every submission and record), instances from HMB_MAX_CTRLS - 1 on
 * share its last slot: a gap of one of them counts for all of them, which
 * only makes the ring-order match of their records more careful.
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, HMB_MAX_CTRLS);
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

/*
 * Per-CPU, summed by the agent: no shared cache line on the hot path.
 * Only HMB_H_HOST_TOTAL: the firmware's phases the agent counts from the
 * commands reported (user/agent/print.c, fw_phase_hists()).
 */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, HMB_H_FW_TOTAL);
	__type(key, __u32);
	__type(value, struct hmb_hist);
} hists SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, HMB_C_COUNT);
	__type(key, __u32);
	__type(value, __u64);
} counters SEC(".maps");

/*
 * hmb_trace_records: the bridge's batch, copied here in one kernel read
 * (one helper call a batch instead of one a record; too large for the
 * stack).  The test program's case 6 (hmb_agent_test.bpf.c) finds its
 * records put here.
 */
struct hmb_batch_buf {
	struct hmb_bridge_rec r[HMB_BRIDGE_BATCH];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct hmb_batch_buf);
} batchbuf SEC(".maps");

/* Block mode: request -> issue time (what biolatency keeps) and who. */
struct hmb_blk_start {
	__u64 ts;
	struct hmb_who who;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 10240);
	__type(key, __u64);
	__type(value, struct hmb_blk_start);
} blk_start SEC(".maps");

/* --cgroup PATH: the cgroup (v2) whose tasks' commands are reported. */
struct {
	__uint(type, BPF_MAP_TYPE_CGROUP_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} cgroup SEC(".maps");

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

/*
 * The slot of command (@ctrl, @qidcid = qid << 16 | cid, @n) in "cmds", or
 * -1.  A global function: verified once, not at each of the many places
 * that look a command up (pick() alone has 96).  A key's commands sit
 * from its home on in the order they took their slots, so a lookup
 * usually stops at the first or second; one that finds nothing walks
 * all HMB_CMD_PROBE.
 */
__noinline int cmd_slot_find(__u32 ctrl, __u32 qidcid, __u32 n)
{
	struct hmb_cmd_key k = { .ctrl = ctrl, .qid = qidcid >> 16,
				 .cid = (__u16)qidcid };
	__u64 tag = hmb_slot_tag(&k, n);
	__u32 h = hmb_slot_home(&k), i;
	struct hmb_cmd_slot *s;

#pragma unroll
	for (int p = 0; p < HMB_CMD_PROBE; p++) {
		i = (h + p) & (HMB_CMD_SLOTS - 1);
		s = bpf_map_lookup_elem(&cmds, &i);
		if (s && READ_ONCE(s->tag) == tag)
			return i;
	}
	return -1;
}

/* Command (@k, @n) in "cmds", or NULL. */
static __always_inline struct hmb_cmd_slot *
cmd_find(const struct hmb_cmd_key *k, __u32 n)
{
	int i = cmd_slot_find(k->ctrl, (__u32)k->qid << 16 | k->cid, n);
	__u32 idx;

	if (i < 0)
		return NULL;
	idx = (__u32)i & (HMB_CMD_SLOTS - 1);
	return bpf_map_lookup_elem(&cmds, &idx);
}

/*
 * cmd_find() that looks at the key's home slot inline first: where a
 * record's command usually is.
 */
static __always_inline struct hmb_cmd_slot *
cmd_find_home(const struct hmb_cmd_key *k, __u32 n)
{
	__u32 idx = hmb_slot_home(k) & (HMB_CMD_SLOTS - 1);
	struct hmb_cmd_slot *s = bpf_map_lookup_elem(&cmds, &idx);

	if (s && READ_ONCE(s->tag) == hmb_slot_tag(k, n))
		return s;
	return cmd_find(k, n);
}

/* Key @k's entry in "kseq", or NULL when the index has no room for it. */
static __always_inline struct hmb_kseq *kseq_find(const struct hmb_cmd_key *k)
{
	__s64 i = hmb_kseq_index(k, kseq_ctrl0, kseq_nctrl, kseq_nq,
				 kseq_tag_bits);
	__u32 idx = (__u32)i;

	if (i < 0)
		return NULL;
	return bpf_map_lookup_elem(&kseq, &idx);
}

/*
 * Who is current (struct hmb_who) into @w; whether --pid, --comm and
 * --cgroup let its commands be reported.  No map lookup; the cgroup test
 * (biosnoop's) only with --cgroup.  @btf (a constant, tp_btf programs):
 * the task's fields loaded directly, one helper call (the current task)
 * instead of three, each many times a load under emulation; the cgroup id
 * is bpf_get_current_cgroup_id()'s, task->cgroups->dfl_cgrp->kn->id, and
 * comm is NUL-padded as the kernel sets it (strscpy_pad()), as
 * bpf_get_current_comm() copies it.
 */
static __always_inline bool who_take(struct hmb_who *w, bool btf)
{
	__u64 c0, c1, t0, t1;

	if (btf) {
		struct task_struct *t = bpf_get_current_task_btf();

		w->tgid = t->tgid;
		w->tid = t->pid;
		w->cgid = t->cgroups->dfl_cgrp->kn->id;
		c0 = *(const __u64 *)&t->comm[0];
		c1 = *(const __u64 *)&t->comm[8];
		__builtin_memcpy(w->comm, &c0, 8);
		__builtin_memcpy(w->comm + 8, &c1, 8);
	} else {
		__u64 pt = bpf_get_current_pid_tgid();

		w->tgid = pt >> 32;
		w->tid = (__u32)pt;
		w->cgid = bpf_get_current_cgroup_id();
		__builtin_memset(w->comm, 0, sizeof(w->comm));
		bpf_get_current_comm(w->comm, sizeof(w->comm));
		__builtin_memcpy(&c0, w->comm, 8);
		__builtin_memcpy(&c1, w->comm + 8, 8);
	}
	if (targ_tgid && w->tgid != targ_tgid)
		return false;
	if (targ_comm[0]) {
		/* both NUL-padded: two 8-byte compares */
		t0 = *(const volatile __u64 *)&targ_comm[0];
		t1 = *(const volatile __u64 *)&targ_comm[8];
		if (c0 != t0 || c1 != t1)
			return false;
	}
	if (targ_cgroup && bpf_current_task_under_cgroup(&cgroup, 0) != 1)
		return false;
	return true;
}

/* hmb_agent_trig.bpf.h: global functions, verified once each. */
__noinline int trig_cmd(__u32 ctrl, __u32 qidcid,
			const struct hmb_cmd_state *st);
__noinline int trig_ev(__u32 ring, __u32 opcode, __u32 seq, __u64 ts_ns,
		       __u32 bits);

#include "hmb_agent_nvme.bpf.h"
#include "hmb_agent_fw.bpf.h"
#include "hmb_agent_blk.bpf.h"
#include "hmb_agent_trig.bpf.h"
