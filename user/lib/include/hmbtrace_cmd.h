/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * hmbtrace_cmd.h - the command model of nvme-hmb-trace: one NVMe command
 * as the host and the firmware saw it, and the model's verdict on it
 * (match class, placement on the host clock, the per-phase breakdown),
 * with the totals, log2 histograms and slowest commands of a set of
 * commands and their text and JSON printers.
 *
 * Both joins produce these structs: hmb-trace-agent's live join
 * (hmbtrace_live.h, commands joined in BPF maps) and the offline join of
 * hmb-trace-analyze correlate (hmbtrace_join.h, a dump and the host's
 * events).  They judge every command with hmb_cmd_judge(), so the two
 * agree by construction on what "matched", "placed", "inside the host
 * window" and each phase's length mean.
 */
#ifndef HMBTRACE_CMD_H
#define HMBTRACE_CMD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "hmbtrace_clock.h"
#include "hmbtrace_dict.h"
#include "hmbtrace_hist.h"
#include "hmbtrace_quant.h"
#include "hmbtrace_util.h"

#ifdef __cplusplus
extern "C" {
#endif

/* -------------------------------------------------------------- histogram */

/* Latencies in microseconds, slots by hmbtrace_hist.h's rule. */
struct hmb_log2_hist {
	uint64_t slots[HMB_HIST_SLOTS];
};

void hmb_hist_add(struct hmb_log2_hist *h, uint64_t ns);
uint64_t hmb_hist_total(const struct hmb_log2_hist *h);
/* print_log2_hist style: a title line, then "usecs : count distribution". */
void hmb_hist_print(FILE *f, const struct hmb_log2_hist *h, const char *title);
/* [{"lo_us":0,"hi_us":1,"count":N},...] up to the last non-empty slot. */
void hmb_hist_json(struct hmb_json *j, const struct hmb_log2_hist *h);

/* ---------------------------------------------------------------- command */

/* How much of a command's firmware side was found. */
enum hmb_match {
	HMB_M_HOST_ONLY = 0,	/* no firmware side expected (no trace) */
	HMB_M_MATCHED,		/* its fetch and cqe_posted records */
	HMB_M_PARTIAL,		/* some of its records, not both of those */
	HMB_M_UNMATCHED,	/* firmware expected, none of its records */
	HMB_M_COUNT
};

/* "host-only", "matched", "partial", "unmatched" */
const char *hmb_match_name(enum hmb_match m);

/* The phases of a command's latency, in ns. */
enum hmb_xphase {
	HMB_X_HOST_TOTAL = 0,	/* host submit -> host complete */
	HMB_X_SUBMIT_TO_FETCH,	/* host submit -> fw fetch (clock-mapped) */
	HMB_X_FW_TOTAL,		/* fw fetch -> fw cqe_posted (fw clock) */
	HMB_X_CQE_TO_COMPLETE,	/* fw cqe_posted (mapped) -> host complete */
	HMB_X_COUNT
};

/* "host_total", "host_submit_to_fw_fetch", "fw_fetch_to_cqe_posted",
 * "fw_cqe_posted_to_host_complete": JSON keys (with "_ns"). */
const char *hmb_xphase_name(enum hmb_xphase x);
/* Histogram titles ("host submit -> fw fetch (clock-mapped)", ...). */
const char *hmb_xphase_title(enum hmb_xphase x);

/* struct hmb_host_cmd.flags: the agent's (hmb_agent.h HMB_CF_*) bits. */
#define HMB_CMD_F_FILTERED	(1U << 0)	/* tracked for the join only */
#define HMB_CMD_F_NO_ROOM	(1U << 1)	/* the agent's map was full */
#define HMB_CMD_F_REUSED	(1U << 2)	/* flushed by its id's reuse */
#define HMB_CMD_F_SWEPT		(1U << 3)	/* reported by the agent's sweep */
#define HMB_CMD_F_BLOCK		(1U << 4)	/* block-layer request, no ids */
#define HMB_CMD_F_HOST_ONLY	(1U << 5)	/* no firmware side expected */
#define HMB_CMD_F_NO_COMPLETE	(1U << 6)	/* never completed */

/* What the host saw of a command (host clock, CLOCK_MONOTONIC or perf's). */
struct hmb_host_cmd {
	uint64_t submit_ns;
	uint64_t complete_ns;	/* 0: not completed */
	uint64_t slba;
	uint32_t ctrl;		/* N of nvmeN */
	uint32_t nsid, nlb;	/* nlb: blocks, or bytes for block requests */
	uint32_t dev;		/* block requests: major << 20 | minor */
	uint32_t flags;		/* HMB_CMD_F_* */
	uint32_t line;		/* offline: the input line it came from */
	uint16_t qid, cid;	/* cid: the full 16-bit command id */
	/*
	 * completion status: NVMe commands the CQE's status field as the
	 * kernel's nvme_complete_rq tracepoint gives it (0: success); block
	 * requests the block layer's blk_status_t (0: BLK_STS_OK)
	 */
	uint16_t status;
	char opc[16];		/* "read", "write", ... */
	/*
	 * Who issued it, where the kernel knows it (the task that dispatched
	 * it: a kworker when blk-mq dispatched it from one): process and
	 * thread id, cgroup v2 id, command name; comm "" when not known.
	 */
	uint32_t pid, tid;
	uint64_t cgroup;
	char comm[16];
};

/* What the firmware's records say of it (firmware clock). */
struct hmb_fw_side {
	uint8_t mask;			/* bit per enum hmb_phase seen */
	uint64_t ts[HMB_PHASE_COUNT];	/* firmware ts_ns per phase */
	uint32_t seq[HMB_PHASE_COUNT];	/* record seq per phase */
};

/* One command and the model's verdict on it: the row every front end
 * prints and an exporter consumes. */
struct hmb_cmd {
	struct hmb_host_cmd h;
	struct hmb_fw_side fw;
	enum hmb_match match;
	bool placed;		/* mapped to the host clock */
	bool in_window;		/* every mapped record inside [submit, complete] */
	bool in_window_err;	/* ... inside it widened by the clock error */
	bool across_step;	/* its records lie on both sides of a clock step */
	int64_t x[HMB_X_COUNT];		/* enum hmb_xphase, -1 if unknown */
	double fw_host_ns[HMB_PHASE_COUNT];	/* placed: records' host times */
	/*
	 * Background groups (gc, thermal, ...) with a window open during the
	 * command's firmware span (hmb_cmd_fw_span): bit g for group name
	 * bg_groups[g].  Set by the join and the live model (0 and NULL
	 * elsewhere); bg_groups lives as long as the model that set it.
	 */
	uint16_t bg;
	const char (*bg_groups)[HMB_DICT_NAME_LEN];
	/*
	 * Placed: bit per phase whose record lies inside a clock step's
	 * bracket (hmb_clock_in_bracket): placed on the side the firmware
	 * times' jump says, which the evidence did not settle.
	 */
	uint8_t fw_in_bracket;
	/*
	 * The records its keys proposed that causality on the clock refused:
	 * outside its host window widened by the error bound.  The live model
	 * takes such records off a placed command one by one (the command is
	 * judged on what is left); the offline join refuses a firmware command
	 * as a whole and gives it here when the host command stays unmatched,
	 * or, for one never paired, the unused one of its keys nearest outside
	 * its window, within the join's widest proposal (200 us).
	 * Where a record lies that close to a window's edge, two estimates of
	 * the clock may disagree: this is the model's evidence for its verdict.
	 */
	struct hmb_fw_side refused;
};

/* Bits of struct hmb_cmd.bg: groups told apart per model. */
#define HMB_CMD_BG_GROUPS	16

/*
 * The firmware time a command's records span: its first phase's ts to its
 * last phase's (fetch to cqe_posted when it has both).  false when it has
 * no record.  A background window [b, e] (e == 0: still open) is in flight
 * at the command when b <= t1 and (e == 0 or e >= t0).
 */
bool hmb_cmd_fw_span(const struct hmb_cmd *c, uint64_t *t0, uint64_t *t1);

/*
 * How firmware times become host times for one command: the run's clock
 * estimate (hmb_cmd_clock_of) or a join's own (segments of the offline
 * join).  @side tells on which side of a clock step a record lies.
 */
struct hmb_cmd_clock {
	double (*map)(const void *ctx, uint64_t fw_ns, uint32_t seq);
	double (*err)(const void *ctx, uint32_t seq);
	int (*side)(const void *ctx, uint32_t seq);
	const void *ctx;
	/* optional: is the record's side of the step uncertain (a bracket)? */
	bool (*in_bracket)(const void *ctx, uint32_t seq);
};

/* The estimate @k as a struct hmb_cmd_clock (valid while @k lives). */
struct hmb_cmd_clock hmb_cmd_clock_of(const struct hmb_clock *k);

/* The match class of what was found (HMB_CMD_F_HOST_ONLY, fw.mask). */
enum hmb_match hmb_cmd_classify(const struct hmb_host_cmd *h,
				const struct hmb_fw_side *fw);

/*
 * The verdict on @c from its host and firmware sides: match class, host
 * total, firmware total (matched, on the firmware clock) and, with a
 * clock (NULL: not placed) for a completed command with records, the
 * records' host times, the mapped phases and whether the records lie in
 * the host window (plain, and widened by the clock's error bound).
 */
void hmb_cmd_judge(struct hmb_cmd *c, const struct hmb_cmd_clock *clk);

/* NVMe I/O opcode names: "flush", "write", "read", ... or "opc 0xNN". */
const char *hmb_nvme_opc_name(unsigned int opc, char *buf, size_t len);

/* ---------------------------------------------------------- sets of them */

struct hmb_cmd_totals {
	uint64_t cmds, matched, partial, unmatched, host_only;
	uint64_t placed, in_window, in_window_err, outside_window;
	uint64_t across_step;
	/* by the agent's flags */
	uint64_t reused, swept, no_room, no_complete;
	uint64_t below_min;	/* not among the slowest: below the floor */
};

/*
 * Totals, histograms of every phase and the slowest commands of a set.
 * The slowest @top_n (by host total, at least @min_lat_ns) are a heap
 * while commands come: hmb_cmd_stats_sort() puts them slowest first into
 * top[0..ntop) for reading (adding more after that is fine).
 */
struct hmb_cmd_stats {
	struct hmb_cmd_totals tot;
	struct hmb_log2_hist xh[HMB_X_COUNT];
	struct hmb_cmd *top;
	unsigned int ntop, top_n;
	bool sorted;
	uint64_t min_lat_ns;		/* the slowest list's floor */
	/* percentiles of every phase (exact up to HMB_QUANT_KEEP values) */
	struct hmb_quant xq[HMB_X_COUNT];
};

int hmb_cmd_stats_init(struct hmb_cmd_stats *s, unsigned int top_n,
		       uint64_t min_lat_ns);
void hmb_cmd_stats_free(struct hmb_cmd_stats *s);
/* Forget what was added (a new interval). */
void hmb_cmd_stats_clear(struct hmb_cmd_stats *s);
void hmb_cmd_stats_add(struct hmb_cmd_stats *s, const struct hmb_cmd *c);
/* top[0..ntop) slowest first. */
void hmb_cmd_stats_sort(struct hmb_cmd_stats *s);

/* The host total a command needs to enter a full slowest list; -1 while
 * it is not full. */
int64_t hmb_cmd_stats_floor(const struct hmb_cmd_stats *s);

/* ---------------------------------------------------------------- printers */

/*
 * "  host_total  p50 93.2  p90 ...  p99.9 ...  max ... us (exact, N)" a
 * phase, after a "percentiles" title; phases without values are left out.
 */
void hmb_quant_print(FILE *f, const struct hmb_cmd_stats *s);
/*
 * {"host_total":{"n":N,"exact":true,"p50_ns":...,"p90_ns":...,
 * "p99_ns":...,"p999_ns":...,"max_ns":...}, ...} (when not exact, each
 * level also has <level>_lo_ns and <level>_hi_ns, its bucket's bounds).
 */
void hmb_quant_json(struct hmb_json *j, const struct hmb_cmd_stats *s);

/*
 * One command, in text: "  #1   nvme0 q1 cid 0x1040 (gen 1 tag 64) read
 * nsid 1 slba 0 nlb 8 [matched]: total 93.2 us", its breakdown when
 * placed, and a line per firmware record (named from @dict, may be NULL).
 * @rank 0: no rank.
 */
void hmb_cmd_print(FILE *f, const struct hmb_cmd *c, int rank,
		   const struct hmb_dict *dict);
/*
 * Its members as JSON (inside an object the caller opened): ctrl, qid,
 * cid, opc, nsid, slba, nlb, dev, match, flags, submit_ns, complete_ns,
 * host_line (offline), the known phases as <name>_ns, in_window and
 * in_window_err when placed, and "fw":[{phase, seq, ts_ns, host_ns}...].
 */
void hmb_cmd_json_members(struct hmb_json *j, const struct hmb_cmd *c);

/* The totals' members as JSON (commands, matched, ..., below_min_latency). */
void hmb_cmd_totals_json_members(struct hmb_json *j,
				 const struct hmb_cmd_totals *t);
/* "matched N (P%) partial N unmatched N; fw events inside host window
 * A/B (C within clock error, D outside)" (no newline). */
void hmb_cmd_totals_print(FILE *f, const struct hmb_cmd_totals *t);

/* The clock estimate in text: one line, and one more for a step. */
void hmb_clock_print(FILE *f, const struct hmb_clock *k);
/* Its members as JSON: valid, offset_ns, offset_err_ns, ref_fw_ns,
 * drift_ppm, drift_err_ppm, consistent, converged, points, trimmed, steps,
 * matched_seen, and for a step step_seq, step_fw_ns, step_ns,
 * step_err_ns, skipped_before_step. */
void hmb_clock_json_members(struct hmb_json *j, const struct hmb_clock *k);

#ifdef __cplusplus
}
#endif
#endif /* HMBTRACE_CMD_H */
