/* SPDX-License-Identifier: Apache-2.0 */
/*
 * correlate: the offline join of a firmware dump with host-side NVMe
 * commands (hostev.h), and the firmware -> host clock estimate of
 * libhmbtrace (hmbtrace_clock.h, the one hmb-trace-agent uses live).
 * Used by the correlate command and by convert --to perfetto --host and
 * report --host.
 */
#ifndef HMB_CORRELATE_H
#define HMB_CORRELATE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "hmbtrace_clock.h"
#include "hmbtrace_dict.h"
#include "hostev.h"

/* A firmware command as the dump shows it (from fwmodel). */
struct fw_cmd {
	uint64_t first, last;		/* firmware ts of first/last event */
	uint32_t first_seq, last_seq;	/* their records */
	uint64_t ts[HMB_PHASE_COUNT];
	uint64_t slba;
	uint32_t seq[HMB_PHASE_COUNT];
	uint16_t sqid, cid;
	uint8_t mask;			/* phases seen */
	bool have_slba;
	int32_t host;			/* index of the matched host command */
};

enum corr_match {
	CM_UNMATCHED = 0,	/* no firmware command found */
	CM_PARTIAL,		/* found, but fetch or cqe_posted missing */
	CM_MATCHED,		/* found with fetch and cqe_posted */
};

/* Derived phases, named as the agent names them. */
enum corr_x {
	CX_HOST_TOTAL = 0,	/* submit -> complete (host clock) */
	CX_SUBMIT_TO_FETCH,	/* host submit -> fw fetch (mapped) */
	CX_FW_TOTAL,		/* fetch -> cqe_posted (fw clock) */
	CX_CQE_TO_COMPLETE,	/* fw cqe_posted (mapped) -> host complete */
	CX_COUNT
};

struct corr_cmd {
	int32_t fw;		/* index into fw[], -1 if unmatched */
	enum corr_match match;
	bool in_window;		/* mapped fw events inside [submit, complete] */
	bool in_window_err;	/* ... inside it widened by the clock error */
	int64_t x[CX_COUNT];	/* -1 when unknown */
};

/*
 * A stretch of time with one offset and drift.  The dump is cut into
 * chunks of host time (at least CHUNK_NS and CHUNK_MIN commands); each
 * chunk gets its own estimate, and a second one for the commands the first
 * did not explain (the firmware clock stepped inside the chunk).
 */
struct corr_seg {
	double off_ns, drift, ref, off_err_ns;
	bool valid;
	uint64_t first_submit;	/* host time of its first command */
	size_t used;
	/*
	 * The firmware clock stepped between this segment and the next, at
	 * record step_seq: records from it on (of a command straddling the
	 * step) take the next segment's clock.
	 */
	bool step_next;
	uint32_t step_seq;
};

struct corr {
	const struct hmb_dict *dict;
	struct host_events host;	/* sorted by (qid, cid, submit) */
	struct corr_cmd *hc;		/* per host command */
	size_t *order;			/* host commands by submit time */
	struct fw_cmd *fw;		/* sorted by (sqid, cid, first) */
	size_t nfw, capfw;
	uint32_t ctrl;			/* host controller joined */
	struct hmb_clock clk;		/* over every matched command */
	double coarse_off;		/* host - fw from the first pass */
	struct corr_seg *segs;
	size_t nseg, capseg;
	int32_t *seg_of;		/* per host command, -1 if none */
	unsigned int steps;		/* segment boundaries with an offset jump */
	uint64_t across_step;		/* commands matched across a step */
	bool place_run;			/* placed with clk, not segments */
	/* totals */
	uint64_t matched, partial, unmatched, fw_unmatched, fw_complete;
	uint64_t other_ctrl;		/* host commands of other controllers */
	uint64_t in_window, in_window_err, outside;
	uint64_t fw_lost;		/* records lost in the dump */
};

/*
 * Read the dump (through input.c, so its sidecar and losses count) and the
 * host events, join them, estimate the clock.  @ctrl: the host controller
 * (nvmeN) the dump belongs to, or -1 for "the only one in the file".
 * Prints the one error line and returns non-zero on failure.
 */
int corr_run(struct corr *c, const char *dump, const char *host,
	     const struct hmb_dict *dict, long ctrl);
void corr_free(struct corr *c);
/*
 * Host time of firmware time @fw of record @seq for host command @i (its
 * segment's clock, or the neighbour's across a step).
 */
double corr_map(const struct corr *c, size_t i, uint64_t fw, uint32_t seq);
/* Firmware time of host time @h for host command @i (inverse). */
double corr_unmap(const struct corr *c, size_t i, uint64_t h);
/* Has host command @i a clock (its segment's or the global one)? */
bool corr_placed(const struct corr *c, size_t i);
const char *corr_match_name(enum corr_match m);
extern const char *const corr_x_names[CX_COUNT];

int cmd_correlate(int argc, char **argv);
void usage_correlate(FILE *f);

#endif /* HMB_CORRELATE_H */
