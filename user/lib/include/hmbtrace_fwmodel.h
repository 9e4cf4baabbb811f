/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * hmbtrace_fwmodel.h - the firmware command model: the firmware's view of
 * NVMe commands and background activity, rebuilt from a record stream
 * with the event dictionary.  The offline join (hmbtrace_join.h) takes its
 * commands from it; hmb-trace-analyze's converters and report stream
 * through it.  Its entry point for untrusted records is hmb_fwm_add().
 *
 * Records arrive in stream order.  Command-phase events are joined by their
 * (sqid, cid) keys into commands; a command is open from its first phase
 * event to its cqe_posted event.  Memory is bounded: at most 3/4 of
 * HMB_FWM_MAX_INFLIGHT commands are open at once (one more closes an open one
 * early, counted in st.evicted), so the model streams in constant memory
 * and time per record whatever the file size.
 */
#ifndef HMBTRACE_FWMODEL_H
#define HMBTRACE_FWMODEL_H

#include <stdbool.h>
#include <stdint.h>

#include "hmbtrace.h"
#include "hmbtrace_dict.h"

#ifdef __cplusplus
extern "C" {
#endif

#define HMB_FWM_MAX_INFLIGHT	65536	/* power of two: hash table size */
#define HMB_FWM_MAX_GROUPS	16

/* Why a command ended. */
enum hmb_fwm_end {
	HMB_FWM_END_COMPLETE = 0,	/* cqe_posted seen */
	HMB_FWM_END_REUSED,		/* same (sqid, cid) started again first */
	HMB_FWM_END_EOF,		/* still open at the end of the input */
	HMB_FWM_END_EVICTED,	/* in-flight table full */
};

struct hmb_fwm_cmd {
	uint64_t id;		/* running number, from 1, unique in the file */
	uint16_t sqid, cid;
	uint8_t cpu;		/* cpu of the first event */
	bool have_opc;		/* fetch carried an "opc" field */
	uint8_t opc;		/* NVMe opcode (fetch's "opc" field) */
	uint8_t mask;		/* bit per phase seen */
	enum hmb_phase last_phase;
	uint64_t first_ts, last_ts;
	uint32_t first_seq, last_seq;	/* records of first_ts, last_ts */
	uint64_t ts[HMB_PHASE_COUNT];	/* firmware ts per phase seen */
	uint32_t seq[HMB_PHASE_COUNT];
	uint8_t ecpu[HMB_PHASE_COUNT];
	uint32_t nsid, nlb;	/* from fetch when present (0 otherwise) */
	uint64_t slba;
	uint64_t gaps_at;	/* seq_gaps of the model at its last record */
	bool used;
};

/* A background window (bg=GROUP:begin .. GROUP:end). */
enum hmb_fwm_bg_flags {
	HMB_FWM_BG_NO_BEGIN = 1,	/* end without begin: starts at the first ts */
	HMB_FWM_BG_NO_END = 2,	/* begin without end (next begin, or EOF) */
};

struct hmb_fwm_ops {
	/* every data record, after the model saw it (@ev may be NULL) */
	void (*record)(void *ctx, const struct hmb_record *rec,
		       const struct hmb_dict_event *ev);
	/* a command opened (its first event) */
	void (*cmd_begin)(void *ctx, const struct hmb_fwm_cmd *c);
	/* phase interval [t0, t1] of @c ended by phase @to */
	void (*cmd_step)(void *ctx, const struct hmb_fwm_cmd *c,
			 enum hmb_phase from, uint64_t t0,
			 enum hmb_phase to, uint64_t t1);
	void (*cmd_end)(void *ctx, const struct hmb_fwm_cmd *c, enum hmb_fwm_end why);
	void (*bg_window)(void *ctx, const char *group, uint64_t t0,
			  uint64_t t1, unsigned int flags, uint8_t cpu);
};

struct hmb_fwm_stats {
	uint64_t records, unknown_opcode, short_payload;
	uint64_t cmds, complete, reused, eof_open, evicted;
	uint64_t no_fetch;	/* commands whose first event was not fetch */
	/*
	 * A phase event of an open command's last phase, taken as a replay
	 * of it: written twice, or no record lost since (with a seq gap
	 * since, it starts the id's next use instead, counted in reused).
	 */
	uint64_t dup_phase;
	uint64_t bg_events, bg_windows, bg_unpaired;
	/*
	 * A command's record earlier than its previous one (kept as written,
	 * no cmd_step for it), or a background window ending before it
	 * began (clamped to zero length).
	 */
	uint64_t backwards;
};

struct hmb_fwmodel {
	const struct hmb_dict *dict;
	const struct hmb_fwm_ops *ops;
	void *ctx;
	struct hmb_fwm_cmd *tab;	/* HMB_FWM_MAX_INFLIGHT slots, open addressing */
	uint32_t open;
	uint64_t next_id;
	uint64_t last_ts;	/* highest ts seen */
	uint64_t first_ts;
	bool have_ts;
	bool have_seq;
	uint32_t seq_next;	/* highest seq seen + 1 */
	uint64_t seq_gaps;	/* forward seq steps: records were lost there */
	char groups[HMB_FWM_MAX_GROUPS][HMB_DICT_NAME_LEN];
	unsigned int ngroups;
	bool bg_open[HMB_FWM_MAX_GROUPS];
	uint64_t bg_t0[HMB_FWM_MAX_GROUPS];
	uint8_t bg_cpu[HMB_FWM_MAX_GROUPS];
	struct hmb_fwm_stats st;
};

/* 0, or -1 out of memory. */
int hmb_fwm_init(struct hmb_fwmodel *m, const struct hmb_dict *d,
		 const struct hmb_fwm_ops *ops, void *ctx);
void hmb_fwm_add(struct hmb_fwmodel *m, const struct hmb_record *rec);
/* Close everything still open (EOF) and free the table. */
void hmb_fwm_finish(struct hmb_fwmodel *m);

/* hmb_nvme_opc_name() of its fetch's opcode; "cmd" without one. */
const char *hmb_fwm_cmd_name(const struct hmb_fwm_cmd *c, char *buf,
			     size_t len);
const char *hmb_fwm_end_name(enum hmb_fwm_end e);

#ifdef __cplusplus
}
#endif
#endif /* HMBTRACE_FWMODEL_H */
