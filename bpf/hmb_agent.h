/* SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause) */
/*
 * hmb_agent.h - what hmb_agent.bpf.c and hmb-trace-agent share: map value
 * layouts, ring-buffer event layouts, counter and histogram indexes.
 * Included after vmlinux.h on the BPF side and after <linux/types.h> in
 * user space, so it uses only __u* types.
 */
#ifndef HMB_AGENT_H
#define HMB_AGENT_H

/* The bucket rule of the "hists" map is libhmbtrace's (one definition). */
#include "hmbtrace_hist.h"
#define HMB_MAX_SLOTS		HMB_HIST_SLOTS	/* log2 usec slots */
#define HMB_MAX_RINGS		64
/* Map "ctrl_gaps": one slot per controller instance, the last shared by the rest. */
#define HMB_MAX_CTRLS		256
#define HMB_BG_PAYLOAD		16

/* Command phases: the same numbering as enum hmb_phase (hmbtrace_dict.h). */
#define HMB_PH_NONE		0
#define HMB_PH_FETCH		1
#define HMB_PH_MEDIA_START	2
#define HMB_PH_MEDIA_END	3
#define HMB_PH_XFER_DONE	4
#define HMB_PH_CQE_POSTED	5
#define HMB_PH_COUNT		6

/*
 * The agent's histograms (microseconds, log2): the BPF map "hists" holds
 * HMB_H_HOST_TOTAL, the agent counts the firmware's from each command
 * reported (its firmware timestamps).
 */
enum hmb_hist_id {
	HMB_H_HOST_TOTAL = 0,	/* host: submit (setup/issue) -> completion */
	HMB_H_FW_TOTAL,		/* firmware: fetch -> cqe_posted */
	HMB_H_FW_TO_MEDIA_START,	/* previous firmware event -> media_start */
	HMB_H_FW_TO_MEDIA_END,	/* previous firmware event -> media_end */
	HMB_H_FW_TO_XFER_DONE,	/* previous firmware event -> xfer_done */
	HMB_H_FW_TO_CQE_POSTED,	/* previous firmware event -> cqe_posted */
	HMB_H_COUNT
};

/* Counters in the BPF map "counters" (array of __u64). */
enum hmb_counter {
	HMB_C_RB_FAIL = 0,	/* ring buffer reservation failed: event lost */
	HMB_C_HOST_SUBMIT,	/* commands/requests seen at submission */
	HMB_C_HOST_COMPLETE,	/* ... and at completion */
	HMB_C_HOST_NO_SUBMIT,	/* completion without a submission seen */
	HMB_C_ACTIVE_FULL,	/* in-flight map (cmds, blk_start) full: not tracked */
	HMB_C_DONE_FULL,	/* id outside the index (kseq): not tracked */
	HMB_C_REUSE_FLUSH,	/* HMB_MAX_WAIT commands of one full cid wait: oldest flushed */
	HMB_C_FW_RECORDS,	/* firmware records seen (either tracepoint) */
	HMB_C_FW_READ_FAIL,	/* could not read header/payload */
	HMB_C_FW_UNKNOWN_OP,	/* opcode not in the dictionary */
	HMB_C_FW_SHORT,		/* payload shorter than the dictionary says */
	HMB_C_FW_MARKER,	/* wrap markers / unknown flags (not events) */
	HMB_C_FW_NO_CMD,	/* command event with no command to join */
	HMB_C_FW_DUP_PHASE,	/* phase already seen for this command */
	HMB_C_FW_OUT_OF_WINDOW,	/* outside the command's host window */
	HMB_C_FW_MATCHED,	/* command events attached to a command */
	HMB_C_FW_BG,		/* background events forwarded */
	HMB_C_FW_OTHER,		/* dictionary events of neither kind */
	HMB_C_FW_UNMAPPED_RING,	/* ring without a controller mapping */
	HMB_C_CMD_EMITTED,	/* per-command events sent */
	HMB_C_CMD_FILTERED,	/* commands not reported (filters) */
	HMB_C_CMD_BELOW_MIN,	/* below --min-latency or the top-N floor: not sent */
	HMB_C_ACTIVE_OVERWRITE,	/* submitted again while in flight: lost completion */
	HMB_C_FW_BY_ORDER,	/* attached as slba or ring order proposed */
	HMB_C_DUMP_SENT,	/* -w: records handed to user space (map "rawrb") */
	HMB_C_DUMP_LOST,	/* -w: records not handed over (rawrb full, unreadable) */
	HMB_C_FW_REFUSED,	/* slba or ring order proposed a command whose
				 * window does not hold the record */
	HMB_C_COUNT
};

/* Map "evdesc": dictionary entry per opcode, filled by the agent. */
struct hmb_evdesc {
	__u8 phase;		/* HMB_PH_* or 0 */
	__u8 bg_edge;		/* enum hmb_bg_edge or 0 */
	__u16 sqid_off;
	__u16 cid_off;
	__u16 min_len;
	__u16 slba_off;		/* fetch: its u64 slba field, HMB_NO_OFF if none */
	__u16 known;		/* 1: the opcode is in the dictionary */
	__u16 keys_read;	/* HMB_KEYS_*: how the keys are read at once */
	__u16 trig;		/* bit per --trigger that fires on this event */
};
#define HMB_NO_OFF		0xffff
/*
 * struct hmb_evdesc.keys_read: where the fields sit so that one read of
 * the payload gets them (one kernel read instead of two or three per
 * record; the shipped dictionary's layout).
 */
#define HMB_KEYS_4		1	/* cid right after sqid: 4 bytes at sqid_off */
#define HMB_KEYS_16		2	/* and slba 8 after sqid: 16 bytes */
#define HMB_KEYS_24		4	/* or slba 16 after sqid: 24 (shipped) */

/* Key of the join: the controller instance, queue and full command id. */
struct hmb_cmd_key {
	__u32 ctrl;
	__u16 qid;
	__u16 cid;
};

/*
 * Commands per full command id: the n-th submission of a key is command
 * (key, n); "kseq" holds the range [first, next) of n that may still wait
 * in "cmds".
 */
#define HMB_MAX_WAIT		32

/*
 * Map "kseq": per full command id, the range [first, next) of n that may
 * still wait in "cmds"; an array indexed by the id itself
 * (hmb_kseq_index()): controller, queue, and the cid's two parts as Linux
 * makes it (nvme_cid(): the request's tag in the low 12 bits, unique among
 * the queue's commands in flight, a 4-bit generation above it, so a full
 * id comes back 16 uses of its tag later).  Nothing is inserted or taken
 * out: every id has its entry from the start, at a place no other id
 * shares, so no entry is ever reused under another CPU's pointer.  The
 * agent sizes it at load from the controllers it traces (their queues
 * and tags, user/agent/probe.c); a command outside it is not tracked,
 * counted as HMB_C_DONE_FULL.
 */
struct hmb_kseq {
	__u32 first;
	__u32 next;
};

/*
 * The shape of "kseq": controllers @ctrl0 .. @ctrl0 + @nctrl - 1, queues
 * 0 .. @nq - 1 of each, tags below 2^@tag_bits (at most 12).
 */
struct hmb_kseq_geom {
	__u32 ctrl0;
	__u32 nctrl;
	__u32 nq;
	__u32 tag_bits;
};

/* Entries of "kseq" with geometry @g. */
static inline __u64 hmb_kseq_entries(const struct hmb_kseq_geom *g)
{
	return ((__u64)g->nctrl * g->nq << 4) << g->tag_bits;
}

/* Key @k's entry in "kseq" of geometry @g, or -1 outside it. */
static inline __s64 hmb_kseq_index(const struct hmb_cmd_key *k,
				   __u32 ctrl0, __u32 nctrl, __u32 nq,
				   __u32 tag_bits)
{
	__u32 c = k->ctrl - ctrl0, tag = k->cid & 0xfff;

	if (c >= nctrl || k->qid >= nq || tag_bits > 12 || (tag >> tag_bits))
		return -1;
	return (__s64)((((__u64)c * nq + k->qid) << 4 | k->cid >> 12) <<
		       tag_bits | tag);
}

/* Map "ring_seq": the next seq expected from each ring. */
struct hmb_ring_seq {
	__u32 next;
	__u32 have;
};

/*
 * Who issued a command: the task current where the programs take it (NVMe:
 * nvme_setup_cmd, the request's dispatch; block mode: block_rq_issue), as
 * biosnoop does.  blk-mq dispatches from a kworker when the request was
 * queued (plugging, a busy queue, requeue): then the kworker is who the
 * kernel knows.  @comm[0] == 0: not known (block mode on the kernel's own
 * issue stamp, where no program runs at issue).
 */
#define HMB_COMM_LEN		16

struct hmb_who {
	__u32 tgid;		/* "pid": the process */
	__u32 tid;		/* the thread */
	__u64 cgid;		/* cgroup v2 id (bpf_get_current_cgroup_id) */
	char comm[HMB_COMM_LEN];
};

/* Flags of a command (struct hmb_cmd_state.flags, hmb_cmd_event.flags). */
#define HMB_CF_FILTERED		(1U << 0)	/* tracked for the join only */
#define HMB_CF_NO_ROOM		(1U << 1)	/* "done" map full */
#define HMB_CF_REUSED		(1U << 2)	/* flushed by a reused cid */
#define HMB_CF_SWEPT		(1U << 3)	/* emitted by the agent's sweep */
#define HMB_CF_BLOCK		(1U << 4)	/* block-layer request */
#define HMB_CF_HOST_ONLY	(1U << 5)	/* no firmware side expected */
#define HMB_CF_NO_COMPLETE	(1U << 6)	/* swept without a completion */

struct hmb_cmd_state {
	__u64 submit_ns;	/* host CLOCK_MONOTONIC (bpf_ktime_get_ns) */
	__u64 complete_ns;	/* 0 until completed */
	__u64 fw_ts[HMB_PH_COUNT];	/* firmware ts_ns per phase */
	__u32 fw_seq[HMB_PH_COUNT];	/* record seq per phase */
	__u64 slba;
	__u32 nsid;
	__u32 nlb;		/* blocks (1-based) or bytes for block mode */
	__u32 flags;
	__u32 ring;
	__u32 dev;		/* block mode: dev_t (major << 20 | minor) */
	__u16 status;
	__u8 opc;		/* NVMe opcode, or REQ_OP for block mode */
	__u8 fw_mask;		/* bit per phase seen */
	__u32 sync;		/* HMB_SYNC_*: who finished (atomic) */
	__u32 gaps0;		/* its controller's ring seq gaps at submission */
	struct hmb_who who;	/* the task that submitted it */
};

/*
 * struct hmb_cmd_state.sync: the side that sets the second of HOST and FW
 * reports the command; whoever sets DONE first (the program reporting it,
 * or the agent's sweep taking it out of "cmds") reports it and frees its
 * slot, so a command is reported once.
 */
#define HMB_SYNC_HOST		1U	/* host completion seen */
#define HMB_SYNC_FW		2U	/* cqe_posted record attached */
#define HMB_SYNC_DONE		4U	/* being reported */

/*
 * Map "cmds": an array of HMB_CMD_SLOTS slots, each holding one command
 * from submission until it is reported, updated in place (no insert, no
 * delete).  Command (key, n) sits in the first slot that was free when it
 * was submitted among hmb_slot_home(key) and the HMB_CMD_PROBE - 1 after
 * it (modulo the size); its tag names it.  The home does not depend on n:
 * a key's next use takes the slot its predecessor left, still warm in the
 * cache, and the HMB_MAX_WAIT commands a key may have waiting fit in its
 * probe run with room to spare.  A slot's tag is 0 while it is free,
 * hmb_slot_tag(key, n) while it holds that command, and that with
 * HMB_TAG_BUSY while its owner writes it (at submission, or while the
 * agent's sweep takes it out): a busy slot matches no lookup.  The program
 * and the agent (the array is mapped into its memory) change a tag only
 * by an atomic exchange or compare-and-swap.
 */
#define HMB_CMD_SLOTS		65536	/* a power of 2: the index is masked */
#define HMB_CMD_PROBE		(HMB_MAX_WAIT + 8)
#define HMB_TAG_VALID		(1ULL << 63)
#define HMB_TAG_BUSY		(1ULL << 62)

struct hmb_cmd_slot {
	__u64 tag;
	struct hmb_cmd_key k;	/* the command's key and n, for the sweep */
	__u32 n;
	__u32 pad;
	struct hmb_cmd_state st;
};

/*
 * The tag of command (@k, @n): the controller instance modulo 2^14 and n
 * modulo 2^16 are enough to tell apart the commands that can be in the
 * table at once (a key has at most HMB_MAX_WAIT; two controllers whose
 * instances differ by a multiple of 16384 would have to collide in the
 * same slots too).
 */
static inline __u64 hmb_slot_tag(const struct hmb_cmd_key *k, __u32 n)
{
	return HMB_TAG_VALID | (__u64)(k->ctrl & 0x3fff) << 48 |
	       (__u64)k->qid << 32 | (__u64)k->cid << 16 | (n & 0xffff);
}

/* Where the commands of key @k look first (an integer hash; mask it). */
static inline __u32 hmb_slot_home(const struct hmb_cmd_key *k)
{
	__u32 h = k->ctrl * 0x9e3779b1u ^
		  ((__u32)k->qid << 16 | k->cid) * 0x85ebca6bu;

	h ^= h >> 16;
	h *= 0x7feb352du;
	h ^= h >> 15;
	return h;
}

enum hmb_ev_type {
	HMB_EV_CMD = 1,		/* struct hmb_cmd_event */
	HMB_EV_BG,		/* struct hmb_bg_event */
	HMB_EV_FW_UNMATCHED,	/* struct hmb_fw_event: why in @reason */
	HMB_EV_RAW,		/* struct hmb_raw_event (map "rawrb", -w) */
	HMB_EV_TRIGGER,		/* struct hmb_trig_event */
};

struct hmb_cmd_event {
	__u32 type;		/* HMB_EV_CMD */
	__u32 ctrl;
	__u16 qid;
	__u16 cid;
	__u32 pad;
	struct hmb_cmd_state st;
};

struct hmb_bg_event {
	__u32 type;		/* HMB_EV_BG */
	__u32 ring;
	__u64 ts_ns;		/* firmware clock */
	__u64 host_ns;		/* when the agent's program saw it */
	__u32 seq;
	__u16 opcode;
	__u16 payload_len;
	__u8 edge;
	__u8 cpu;
	__u8 pad[6];
	__u8 payload[HMB_BG_PAYLOAD];
};

struct hmb_fw_event {
	__u32 type;		/* HMB_EV_FW_UNMATCHED */
	__u32 ring;
	__u64 ts_ns;
	__u64 host_ns;
	__u32 seq;
	__u16 opcode;
	__u16 sqid;
	__u16 cid;
	__u16 reason;		/* enum hmb_counter that counted it */
	__u32 ctrl;
};

/*
 * -w: the firmware records of one bridge batch (hmb_trace_records; one
 * record from hmb_trace_record), all of ring @ring, as a dump stream: each
 * record's header and payload as the bridge handed them over, padded to
 * HMB_RECORD_ALIGN (HMB_RECORD_SIZE(payload_len) bytes, zero padding), one
 * after the other, the way user space walks them (libhmbtrace's
 * hmb_buf_iter).  One event per batch, so that a batch costs one ring
 * buffer write, not one per record; a batch whose records pass
 * HMB_RAW_BATCH_MAX bytes goes as several.  Sent with bpf_ringbuf_output()
 * at its real length, 16 + @len bytes.  Only with the rodata option
 * dump_records set; else the map is one page.
 */
#define HMB_RAW_BATCH_MAX	16384	/* bytes of records an event carries */

struct hmb_raw_event {
	__u32 type;		/* HMB_EV_RAW */
	__u32 ring;
	__u32 nrec;		/* records in @rec */
	__u32 len;		/* bytes of them */
	__u8 rec[HMB_RAW_BATCH_MAX];
};

/*
 * Firmware -> host clock estimate published by the agent in .bss:
 * host = fw + off_ns + (fw - ref_fw) * drift_ppb / 1e9.  While @valid, a
 * firmware record goes to the command its slba or ring order proposes if
 * that one's host window widened by @tol_ns contains its mapped time (else
 * the proposal is refused, counted), otherwise to the oldest command of
 * its key whose window widened by @tight_ns contains it, else to the
 * oldest one within @tol_ns that more than its window ties to the
 * record (a read or write whose slba a fetch names; for a later phase,
 * one that has its fetch), else nowhere (counted).  @tight_ns is the
 * estimate's error bound with a margin, @tol_ns adds what the estimate
 * may have gone stale by since the agent published it.
 */
struct hmb_clk {
	__u64 valid;
	__s64 off_ns;
	__s64 drift_ppb;
	__u64 ref_fw;
	__u64 tol_ns;
	__u64 tight_ns;
};

/*
 * --trigger (docs/agent.md, "Triggers"): the conditions the programs
 * evaluate as commands are reported and records arrive, so that the agent
 * need not see every command to notice the one that matters.  The agent
 * sets the rodata bits trig_armed before load (0: no trigger code runs,
 * the verifier drops it) and the table "trig" in .bss (percentile
 * thresholds refreshed while running).
 */
#define HMB_MAX_TRIGGERS	8	/* bits of struct hmb_evdesc.trig */
#define HMB_TRIG_ARM_LAT	(1U << 0)	/* latency conditions */
#define HMB_TRIG_ARM_EV		(1U << 1)	/* firmware events (evdesc.trig) */
#define HMB_TRIG_ARM_RESET	(1U << 2)	/* the ring froze: controller reset */

enum hmb_trig_kind {
	HMB_TK_NONE = 0,
	HMB_TK_LAT,		/* time from point @from to @to over thresh_ns */
	HMB_TK_EVENT,		/* a firmware record of an opcode marked in evdesc */
	HMB_TK_RESET,		/* hmb_trace:hmb_trace_frozen on a ring */
};

/*
 * The points of a command a latency runs between: the host's submission,
 * the firmware phases (HMB_PH_*, firmware clock) and the host's completion.
 * Between a host point and a firmware one, the firmware time is mapped
 * with the clock estimate (struct hmb_clk), and nothing fires without one.
 */
#define HMB_TP_SUBMIT		0
#define HMB_TP_COMPLETE		HMB_PH_COUNT
#define HMB_TP_COUNT		(HMB_PH_COUNT + 1)

struct hmb_trig {
	__u8 kind;		/* enum hmb_trig_kind; 0: unused */
	__u8 from;		/* HMB_TP_* */
	__u8 to;
	__u8 pad;
	__s16 opc;		/* command opcode filter, -1: any */
	__u16 pad2;
	__u32 pad3;
	__u64 thresh_ns;	/* over this fires; 0: not armed yet */
};

/*
 * Firmware time @fw on the host clock with estimate @c, in integer math
 * (the programs' join and triggers, and the agent's sweep): microsecond
 * resolution of the drift correction is plenty for a window.
 */
static inline __s64 hmb_clk_fw_to_host(const struct hmb_clk *c, __u64 fw)
{
	__s64 ppb = c->drift_ppb;
	__u64 d, x, appb;
	int neg_d = fw < c->ref_fw, neg_p = ppb < 0;

	d = neg_d ? c->ref_fw - fw : fw - c->ref_fw;
	appb = neg_p ? -ppb : ppb;
	x = (d / 1000) * appb / 1000000;
	return (__s64)fw + c->off_ns + ((neg_d != neg_p) ? -(__s64)x : (__s64)x);
}

/*
 * The time of point @p (HMB_TP_*) of @st in *@t: on the host clock when
 * @host (a firmware time mapped with @c), else as it is; 0 when the
 * command lacks the point, or a firmware point needs @c and it is not
 * valid.
 */
static inline int hmb_trig_point(const struct hmb_cmd_state *st, __u32 p,
				 int host, const struct hmb_clk *c, __s64 *t)
{
	if (p == HMB_TP_SUBMIT) {
		*t = (__s64)st->submit_ns;
		return 1;
	}
	if (p == HMB_TP_COMPLETE) {
		*t = (__s64)st->complete_ns;
		return st->complete_ns != 0;
	}
	if (p < HMB_PH_FETCH || p >= HMB_PH_COUNT || !(st->fw_mask & (1 << p)))
		return 0;
	if (!host) {
		*t = (__s64)st->fw_ts[p];
		return 1;
	}
	if (!c->valid)
		return 0;
	*t = hmb_clk_fw_to_host(c, st->fw_ts[p]);
	return 1;
}

/*
 * Whether latency trigger @t fires on command @st (clock estimate @c):
 * its opcode, both points present, the time between them in *@v and
 * over the threshold (0: not armed yet).  One rule for the programs and
 * for the commands the agent's sweep reports.
 */
static inline int hmb_trig_lat_fires(const struct hmb_trig *t,
				     const struct hmb_cmd_state *st,
				     const struct hmb_clk *c, __u64 *v)
{
	__u32 from = t->from, to = t->to;
	int host = from == HMB_TP_SUBMIT || from == HMB_TP_COMPLETE ||
		   to == HMB_TP_SUBMIT || to == HMB_TP_COMPLETE;
	__s64 a, b;

	if (t->kind != HMB_TK_LAT || !t->thresh_ns ||
	    (t->opc >= 0 && st->opc != (__u8)t->opc))
		return 0;
	if (!hmb_trig_point(st, from, host, c, &a) ||
	    !hmb_trig_point(st, to, host, c, &b) || b <= a)
		return 0;
	*v = (__u64)(b - a);
	return *v > t->thresh_ns;
}

struct hmb_trig_event {
	__u32 type;		/* HMB_EV_TRIGGER */
	__u32 trig;		/* which: the index of its --trigger */
	__u64 host_ns;		/* when it fired (bpf_ktime_get_ns) */
	__u64 value_ns;		/* latency: what was measured */
	__u64 thresh_ns;	/* latency: the threshold it was over */
	__u32 ctrl;		/* latency: the command's key */
	__u16 qid;
	__u16 cid;
	__u32 ring;		/* event, reset: the ring */
	__u32 seq;		/* event: the record's seq */
	__u64 ts_ns;		/* event: the record's firmware time */
	__u16 opcode;		/* event: the record's opcode */
	__u16 pad[3];
	struct hmb_cmd_state st;	/* latency: the command */
};

#endif /* HMB_AGENT_H */
