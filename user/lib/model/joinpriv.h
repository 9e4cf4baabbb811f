/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * joinpriv.h - the offline join's state, shared by join.c (commands, the
 * candidate search and the passes) and joinseg.c (clocks: segments, steps,
 * the run's estimate, placement).  Not installed.
 */
#ifndef HMBTRACE_JOINPRIV_H
#define HMBTRACE_JOINPRIV_H

#include <string.h>

#include "hmbtrace_join.h"
#include "../format/internal.h"

#define JOIN_COARSE_WIN	100000		/* ns */
#define JOIN_COARSE_SPAN	20000000	/* ns: submit -> fetch at most */
#define JOIN_PASS2_TOL	200000		/* ns */
#define JOIN_MIN_TOL	20000		/* ns */
#define JOIN_MAX_CANDS	(4u << 20)
#define JOIN_CHUNK_NS	250000000ull	/* host ns */
#define JOIN_CHUNK_MIN	2000		/* host commands */
#define JOIN_MAX_CTRLS	64

/* A firmware command as the dump shows it (from the firmware model). */
struct jfw {
	uint64_t first, last;		/* firmware ts of first/last record */
	uint32_t first_seq, last_seq;	/* their seqs */
	uint64_t ts[HMB_PHASE_COUNT];
	uint64_t slba;
	uint32_t seq[HMB_PHASE_COUNT];
	uint16_t sqid, cid;
	uint8_t mask;			/* phases seen */
	bool have_slba;
	bool open;			/* a copy of a command the model still
					 * holds open (streamed) */
	int32_t host;			/* the host command joined, or -1 */
};

/* Per host command: what it was joined with. */
struct jhost {
	int32_t fw;		/* index into fw[], -1 if none */
	int32_t seg;		/* its segment, -1 if none */
	int32_t refused;	/* index into refused[] of the last firmware
				 * command causality refused it, -1 if none */
};

/*
 * How a join maps firmware times to host time: by the coarse offset, by
 * one segment's clock, by two segments' clocks on either side of a step
 * at a record, or by the run's estimate (which knows its step by record).
 */
struct jmap {
	const struct hmb_join_seg *g;	/* NULL: the coarse offset */
	const struct hmb_join_seg *g2;	/* the clock from record step_seq on */
	uint32_t step_seq;
	const struct hmb_clock *k;	/* the run's estimate instead */
	bool split;			/* k: records inside its step's bracket
					 * may be on either clock */
	double tol;			/* window widening, at least */
};

/* A background window of the dump (the firmware model's). */
struct jbg {
	uint64_t b, e;		/* firmware ts */
	uint64_t emax;		/* max e of its group's windows up to it */
	uint8_t g;		/* group: index into fwm.groups */
};

struct hmb_join {
	const struct hmb_dict *dict;
	struct hmb_fwmodel fwm;
	bool fwm_on, oom, ran;
	struct hmb_fwm_stats fwst;
	struct hmb_host_cmd *host;	/* sorted by (qid, cid, submit) in run */
	size_t nhost, caphost;
	uint32_t ctrls[JOIN_MAX_CTRLS];
	unsigned int nctrl;
	struct jhost *hj;		/* per host command */
	size_t *order;			/* host commands by submit time */
	struct jfw *fw;			/* sorted by (sqid, cid, first) */
	size_t nfw, capfw;
	uint32_t ctrl;			/* the controller joined */
	struct hmb_clock clk;		/* the run's estimate */
	double coarse_off;		/* host - fw from the first pass */
	struct hmb_join_seg *segs;
	size_t nseg, capseg;
	struct hmb_join_totals tot;
	struct hmb_cmd_stats stats;
	struct jbg *bg;			/* sorted by (g, b) in prepare */
	size_t nbg, capbg;
	size_t bg_first[HMB_FWM_MAX_GROUPS + 1];	/* group g: [first[g], first[g+1]) */
	/* hmb_join_stream: one window of host commands at a time */
	bool streaming, fw_end, have_cut, have_map, all_run;
	size_t win;			/* host commands per window */
	uint64_t late_ns;		/* reordering the window absorbs */
	double cut;			/* host ns: firmware commands mapped
					 * before it are retired */
	double map_off, map_drift, map_ref;	/* the last window's clock */
	uint64_t fw_max_first;		/* latest first ts of a fw command */
	bool fw_seen, rec_seen;
	uint32_t rec_next;		/* seq after the last record read */
	struct hmb_join_seg *segs_all;	/* the segments of past windows */
	size_t nall, capall;
	/* the first seq of each run of lost records (joincausal.c) */
	uint32_t *gaps;
	size_t ngap, capgap;
	uint32_t gap_next;		/* seq after the last record seen */
	bool gap_seen;
	/* what causality refused, per host command (jhost.refused) */
	struct hmb_fw_side *refused;
	size_t nrefused, caprefused;
};

/* @f's records as the command model holds them. */
static inline struct hmb_fw_side hmb__jfw_side(const struct jfw *f)
{
	struct hmb_fw_side s;

	s.mask = f->mask;
	memcpy(s.ts, f->ts, sizeof(s.ts));
	memcpy(s.seq, f->seq, sizeof(s.seq));
	return s;
}

/* Record seqs wrap at 2^32: their order is serial-number arithmetic. */
static inline int32_t jseq_diff(uint32_t a, uint32_t b)
{
	return (int32_t)(a - b);
}

static inline uint32_t hmb__jfw_key(const struct jfw *f)
{
	return (uint32_t)f->sqid << 16 | f->cid;
}

static inline uint32_t hmb__host_key(const struct hmb_host_cmd *h)
{
	return (uint32_t)h->qid << 16 | h->cid;
}

/* A fetch that names its LBA names its command's. */
static inline bool hmb__join_slba_ok(const struct jfw *f,
				     const struct hmb_host_cmd *h)
{
	return !f->have_slba || f->slba == h->slba;
}

static inline bool jfw_whole(const struct jfw *f)
{
	return (f->mask & (1u << HMB_PHASE_FETCH)) &&
	       (f->mask & (1u << HMB_PHASE_CQE_POSTED));
}

/* join.c */
HMB_HIDDEN long hmb__join_closest(const struct hmb_join *j,
				  const struct hmb_host_cmd *h,
				  const struct jmap *mp);
HMB_HIDDEN void hmb__join_pair(struct hmb_join *j, size_t i, long f);
HMB_HIDDEN int hmb__join_prepare(struct hmb_join *j);
HMB_HIDDEN int hmb__join_chunks(struct hmb_join *j);
HMB_HIDDEN size_t hmb__join_fw_lower(const struct hmb_join *j, uint32_t key);
HMB_HIDDEN int hmb__join_fw_room(struct hmb_join *j, size_t more);
HMB_HIDDEN void hmb__join_resort_fw(struct hmb_join *j);
HMB_HIDDEN void hmb__jfw_of(const struct hmb_join *j, struct jfw *f,
			    const struct hmb_fwm_cmd *m);

/* joincausal.c: every pairing held to causality under the final clocks */
HMB_HIDDEN int hmb__join_causal(struct hmb_join *j);
HMB_HIDDEN size_t hmb__join_drop_interleaved(struct hmb_join *j);
HMB_HIDDEN size_t hmb__join_reclock(struct hmb_join *j);
HMB_HIDDEN bool hmb__join_lost_between(const uint32_t *gaps, size_t n,
				       uint32_t a, uint32_t b);

/* joinstream.c: host time of firmware time @fw by the last window's clock */
HMB_HIDDEN double hmb__join_stream_map(const struct hmb_join *j, uint64_t fw);

/* joinseg.c */
HMB_HIDDEN double hmb__seg_map(const struct hmb_join_seg *g, uint64_t fw);
/* How far a record may lie outside its window on segment @g's clock. */
HMB_HIDDEN double hmb__seg_tol(const struct hmb_join_seg *g);
HMB_HIDDEN void hmb__join_estimate(struct hmb_join *j, struct hmb_clock *k,
				   const size_t *set, size_t ns, bool stream);
HMB_HIDDEN int hmb__join_add_seg(struct hmb_join *j, const struct hmb_clock *k,
				 const size_t *set, size_t ns);
HMB_HIDDEN int hmb__join_run_estimate(struct hmb_join *j);
HMB_HIDDEN int hmb__join_segments(struct hmb_join *j);
HMB_HIDDEN void hmb__join_choose_placement(struct hmb_join *j);
HMB_HIDDEN void hmb__join_place(struct hmb_join *j);
/* The clock of host command @i, for hmb_cmd_judge; @ctx holds it. */
struct jclk {
	const struct hmb_join *j;
	size_t i;
};

HMB_HIDDEN bool hmb__join_placed(const struct hmb_join *j, size_t i);
HMB_HIDDEN struct hmb_cmd_clock hmb__join_clock_of(const struct hmb_join *j,
						   size_t i, struct jclk *ctx);

#endif /* HMBTRACE_JOINPRIV_H */
