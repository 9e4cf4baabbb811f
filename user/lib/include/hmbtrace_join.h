/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * hmbtrace_join.h - the offline join: the firmware commands of a dump
 * (rebuilt by the firmware command model, hmbtrace_fwmodel.h) lined up
 * with the host's view of the same NVMe commands, with the firmware ->
 * host clock estimate the live agent uses (hmbtrace_clock.h), and every
 * command judged by the command model (hmb_cmd_judge, hmbtrace_cmd.h) as
 * the agent judges it.  hmb-trace-analyze correlate, report --host and
 * convert --to perfetto --host are front ends over it; an exporter reads
 * its commands as a stream of struct hmb_cmd (hmb_join_stream, a window
 * at a time; or hmb_join_foreach after hmb_join_run).
 *
 * The two clocks are unknown to each other and command ids are reused,
 * so the join runs in passes, per chunk of host time:
 *  1. a coarse offset: for a sample of host commands, the differences
 *     submit - fetch to every firmware command with the same (queue, cid)
 *     and, when both sides know it, the same slba; the densest 100 us
 *     window of those differences is the offset (wrong pairs scatter);
 *  2. each host command takes the closest unused firmware command with its
 *     keys whose fetch, shifted by that offset, lies in its host window
 *     (widened by 200 us); the matched commands give a clock estimate
 *     with drift;
 *  3. the same join again with the estimate, widened only by its error
 *     (at least 20 us, as the agent's BPF join), and the estimate redone.
 * Each chunk gets its own estimate (a segment), and the commands it does
 * not explain (the firmware clock stepped inside the chunk) go through
 * the passes again.  Then the run's estimate is made as the agent makes
 * it (streamed, solved every 1000 commands, so it finds a clock step and
 * the record it happened at), the commands next to a step are joined with
 * their records on either side's clock, and every command is placed with
 * the run's estimate, or with its segment's when the run saw more than
 * one step or no single line fits it.
 *
 * hmb_join_run holds every firmware command (about 100 bytes) and every
 * host command (about 80 bytes) until the join is freed.  hmb_join_stream
 * bounds that: it pulls both inputs (each in time order, up to bounded
 * reordering) a window at a time -- the next window of host commands, and
 * the dump up to where its firmware commands, mapped with the last
 * window's clock, pass the window's last completion by the reordering
 * bound -- joins the window with the passes above, hands its commands out
 * judged, and frees them; only the firmware commands not yet joined that
 * a later host command may still claim (mapped no earlier than the
 * window's latest submit less the bound) stay for the next window.  The
 * commands the firmware model still holds open (a lost cqe_posted keeps
 * one open until its id's next use) are candidates of each window too;
 * one a host command going out claims leaves the model.  A
 * host command that arrives with its submit before that point, or a
 * firmware command mapped before it, is counted late (totals), and still
 * judged or counted unmatched: nothing is dropped silently.  Input that
 * fits one window gives hmb_join_run's answer exactly.
 *
 * Entry points for untrusted input: hmb_join_record (records, through
 * hmb_fwm_add), hmb_join_host (host commands as parsed) and the sources
 * of hmb_join_stream.
 */
#ifndef HMBTRACE_JOIN_H
#define HMBTRACE_JOIN_H

#include "hmbtrace_cmd.h"
#include "hmbtrace_fwmodel.h"

#ifdef __cplusplus
extern "C" {
#endif

struct hmb_join;

/* What only the offline join knows (the command totals are in stats). */
struct hmb_join_totals {
	uint64_t host_cmds;	/* host commands given */
	uint64_t other_ctrl;	/* ... of other controllers: not joined */
	uint64_t fw_cmds;	/* firmware commands in the dump */
	uint64_t fw_complete;	/* ... with fetch and cqe_posted */
	uint64_t fw_unmatched;	/* ... joined with no host command */
	unsigned int segment_steps;	/* offset steps between segments */
	bool place_run;		/* placed with the run's estimate, not the
				 * segments' (streamed: in every window) */
	/* hmb_join_stream only */
	uint64_t windows;	/* windows joined */
	uint64_t host_late;	/* host commands that came after their
				 * window was gone (judged, likely unmatched) */
	uint64_t fw_late;	/* firmware commands mapped before the part
				 * of the trace already joined */
	/* pairings undone: a record outside the host window (error bound
	 * included) on the clock that places the command */
	uint64_t fw_refused;
	/* firmware commands of one id merged across a loss, cut in two */
	uint64_t fw_split;
};

/* A stretch of host time with one offset and drift (host = fw + off +
 * drift * (fw - ref)). */
struct hmb_join_seg {
	double off_ns, drift, ref, off_err_ns;
	bool valid;
	uint64_t first_submit;	/* host time of its first command */
	size_t used;		/* commands in its estimate */
	bool step_next;		/* the clock steps before the next segment */
	uint32_t step_seq;	/* ... at this record: the first on its clock */
	/*
	 * What the drift's uncertainty (HMB_CLOCK_DRIFT_MAX while none is
	 * estimated) moves the offset across its commands: a record's error
	 * bound is off_err_ns plus this, as hmb_clock_err_at's.
	 */
	double drift_slack_ns;
};

/* A new join; @dict names the phase events (it must outlive the join). */
struct hmb_join *hmb_join_new(const struct hmb_dict *dict);
void hmb_join_free(struct hmb_join *j);
/*
 * The dump's data records, in stream order (hmb_reader_next after the
 * caller's accounting).  0, or HMB_E_NOMEM.
 */
int hmb_join_record(struct hmb_join *j, const struct hmb_record *rec);
/* One host command (complete, submit <= complete).  0, or HMB_E_NOMEM. */
int hmb_join_host(struct hmb_join *j, const struct hmb_host_cmd *h);
/* The distinct controllers of the host commands given (at most 64). */
unsigned int hmb_join_ctrls(const struct hmb_join *j, const uint32_t **ctrls);
/*
 * Join the commands of controller @ctrl (nvmeN) and judge every host
 * command; @top_n: the slowest ones kept in stats.  0, or HMB_E_NOMEM
 * (with @err filled).  Call once.
 */
int hmb_join_run(struct hmb_join *j, uint32_t ctrl, unsigned int top_n,
		 struct hmb_error *err);

/*
 * The streaming join's inputs and output.  @record and @host give the
 * next data record of the dump (in stream order, after the caller's
 * accounting) and the next host command (complete, submit <= complete; in
 * completion or submit order); each returns 0 with *end false and the
 * item, 0 with *end true at the end of its input, or non-zero to stop.
 * @pick_ctrl is called once, with the controllers of the first window,
 * to choose the one to join (0), or to stop (non-zero).  @cmd gets every
 * host command judged, in submit order within its window; during the
 * call, hmb_join_unmap and hmb_join_placed take its index @i.  Non-zero
 * stops.  @window_done (may be NULL) is told how far the records are done
 * with.
 */
struct hmb_join_src {
	int (*record)(void *ctx, struct hmb_record *rec, bool *end);
	int (*host)(void *ctx, struct hmb_host_cmd *h, bool *end);
	int (*pick_ctrl)(void *ctx, const uint32_t *ctrls, unsigned int n,
			 uint32_t *ctrl);
	int (*cmd)(void *ctx, const struct hmb_join *j, size_t i,
		   const struct hmb_cmd *c);
	/*
	 * Optional: after each window's commands went out.  No command
	 * handed out later has a firmware record with a seq before
	 * @before_seq (serial order), so a caller that binds host commands
	 * to records may write the records before it; @all: none later at
	 * all (the last window).  Non-zero stops.
	 */
	int (*window_done)(void *ctx, uint32_t before_seq, bool all);
	void *ctx;
};

#define HMB_JOIN_WINDOW		65536u		/* host commands */
#define HMB_JOIN_LATE_NS	100000000ull	/* 100 ms of host time */

/*
 * The window of hmb_join_stream (before it): @host_cmds host commands at
 * a time (0: HMB_JOIN_WINDOW; SIZE_MAX: the whole input, as
 * hmb_join_run), absorbing reordering of up to @late_ns of host time (0:
 * HMB_JOIN_LATE_NS) between the inputs and within each.
 */
void hmb_join_set_window(struct hmb_join *j, size_t host_cmds,
			 uint64_t late_ns);
/*
 * Join the two inputs a window at a time (see above), judging every host
 * command as hmb_join_run does, keeping the @top_n slowest in stats.
 * Memory stays within about 300 bytes per host command of a window plus
 * the firmware commands carried between windows.  0; the first non-zero
 * return of a callback; or HMB_E_NOMEM (with @err filled).  Call once,
 * instead of hmb_join_record, hmb_join_host and hmb_join_run.  After it,
 * the totals, stats, segments (of every window) and the clock (the last
 * window's) stay; the per-command functions do not.
 */
int hmb_join_stream(struct hmb_join *j, const struct hmb_join_src *src,
		    unsigned int top_n, struct hmb_error *err);

/* After hmb_join_run: */
size_t hmb_join_count(const struct hmb_join *j);	/* host commands */
/* The @i-th host command in submit order, judged. */
void hmb_join_cmd(const struct hmb_join *j, size_t i, struct hmb_cmd *out);
/*
 * Every host command in submit order, judged (commands of other
 * controllers as unmatched, not in stats).  Stops at the first non-zero
 * return of @fn and returns it.
 */
int hmb_join_foreach(const struct hmb_join *j,
		     int (*fn)(void *ctx, const struct hmb_cmd *c),
		     void *ctx);
/* Firmware time of host time @host_ns on the clock of command @i. */
double hmb_join_unmap(const struct hmb_join *j, size_t i, uint64_t host_ns);
/* Has command @i a clock (the run's or its segment's)? */
bool hmb_join_placed(const struct hmb_join *j, size_t i);
uint32_t hmb_join_ctrl(const struct hmb_join *j);
const struct hmb_clock *hmb_join_clock(const struct hmb_join *j);
/* Totals, histograms and slowest commands (sorted) of the controller's commands. */
const struct hmb_cmd_stats *hmb_join_stats(const struct hmb_join *j);
const struct hmb_join_totals *hmb_join_totals(const struct hmb_join *j);
size_t hmb_join_segments(const struct hmb_join *j,
			 const struct hmb_join_seg **segs);
/* The firmware model's counters (records, commands, evicted ...). */
const struct hmb_fwm_stats *hmb_join_fw_stats(const struct hmb_join *j);

#ifdef __cplusplus
}
#endif
#endif /* HMBTRACE_JOIN_H */
