/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * hmbtrace_live.h - the command model fed live: commands arrive one by one
 * with their host and firmware sides already joined (hmb-trace-agent joins
 * them in BPF maps), the firmware -> host clock estimate is learnt from
 * them as they come, and each command is judged (hmb_cmd_judge) once the
 * estimate can place it: with a lag of HMB_LIVE_LAG commands, so that a
 * clock step is found before the commands around it are placed with the
 * old estimate.  A placed command keeps only the records that lie inside
 * its host window widened by the estimate's error bound: the others are
 * taken off it (counted in fw_refused) before it is judged, so it is
 * matched or partial only inside its window, or unmatched.  Every judged
 * command goes to the caller's on_cmd (per-command output, an exporter)
 * and into the run's and the interval's struct hmb_cmd_stats.  Each
 * judged command carries the background groups with a window in flight
 * during its firmware span (struct hmb_cmd.bg,
 * group names in hmb_live.groups): the open window of each group and its
 * last HMB_LIVE_WIN closed ones are kept for that (an end without a begin
 * is a window from the start; a begin while one is open closes it).
 *
 * The caller ticks (hmb_live_tick) on its own schedule, the agent twice a
 * second; a caller that falls behind (a flood of commands keeps it from
 * its loop) is ticked all the same once the commands' completions moved
 * HMB_LIVE_TICK_NS on from the last tick: an estimate solved seconds of
 * commands ago would meet a step or the drift of those seconds
 * unprepared, and place them wrongly.  By host time, not by count: at a
 * high command rate a count would solve far more often than the caller.
 *
 * Memory is bounded: the clock's window, at most HMB_LIVE_PENDING commands
 * waiting for placement (more are judged unplaced at once, counted in
 * unplaced_early), and the last HMB_LIVE_BG background events.
 */
#ifndef HMBTRACE_LIVE_H
#define HMBTRACE_LIVE_H

#include "hmbtrace_cmd.h"

#ifdef __cplusplus
extern "C" {
#endif

#define HMB_LIVE_LAG		64
#define HMB_LIVE_PENDING	65536
#define HMB_LIVE_TICK_NS	1000000000ULL	/* host time between ticks */
#define HMB_LIVE_BG		4096
#define HMB_LIVE_BG_PAYLOAD	16
#define HMB_LIVE_GROUPS		16
#define HMB_LIVE_WIN		64	/* closed windows kept per group */

/* Why hmb_live_opts.on_clock is called. */
enum hmb_live_clock_why {
	HMB_LIVE_CLOCK_FIRST = 1,	/* the first estimate */
	HMB_LIVE_CLOCK_STEP,		/* a new offset step was found */
	HMB_LIVE_CLOCK_UPDATE,		/* the estimate was solved again */
};

struct hmb_live_opts {
	unsigned int top_n;		/* slowest commands kept per set */
	uint64_t min_lat_ns;		/* ... at least this slow */
	size_t clock_window;		/* matched commands in the estimate */
	size_t clock_min_points;	/* 0: the estimator's default */
	/* every command once judged, in the order judged (may be NULL) */
	void (*on_cmd)(void *ctx, const struct hmb_cmd *c);
	/*
	 * after each solve (hmb_live_tick, hmb_live_flush) that has an
	 * estimate, before the commands it places are judged: FIRST once,
	 * then STEP when clk.steps grew, else UPDATE (may be NULL)
	 */
	void (*on_clock)(void *ctx, const struct hmb_clock *k,
			 enum hmb_live_clock_why why);
	void *ctx;
};

/* A background event (gc, thermal windows) as the firmware recorded it. */
struct hmb_live_bg {
	uint64_t ts;			/* firmware time */
	uint16_t opcode;
	uint8_t edge;			/* enum hmb_bg_edge */
	uint8_t group;			/* index into hmb_live.groups */
	uint16_t payload_len;
	uint8_t payload[HMB_LIVE_BG_PAYLOAD];
};

/* A group's background windows, for struct hmb_cmd.bg. */
struct hmb_live_win {
	uint64_t b[HMB_LIVE_WIN], e[HMB_LIVE_WIN];	/* the last closed ones */
	uint64_t n;			/* closed so far (ring index n % WIN) */
	uint64_t open_b;		/* the open window's begin */
	bool open;
};

struct hmb_live {
	struct hmb_live_opts o;
	struct hmb_clock clk;
	struct hmb_cmd *pending;	/* waiting for the clock */
	size_t npending;
	uint64_t tick_host_ns;		/* latest completion at the last tick */
	uint64_t last_host_ns;		/* latest completion seen */
	uint64_t unplaced_early;	/* judged unplaced: pending was full */
	/*
	 * records taken off their command when judged: the estimate placed
	 * them outside its host window widened by the error bound
	 */
	uint64_t fw_refused;
	bool clk_told;			/* on_clock had the first estimate */
	unsigned int clk_steps_told;	/* ... and this many steps */
	struct hmb_cmd_stats run, iv;	/* the whole run, this interval */
	struct hmb_live_bg bg[HMB_LIVE_BG];	/* ring of the last ones */
	uint64_t nbg;
	char groups[HMB_LIVE_GROUPS][HMB_DICT_NAME_LEN];
	unsigned int ngroups;
	struct hmb_live_win win[HMB_LIVE_GROUPS];	/* per group */
};

int hmb_live_init(struct hmb_live *l, const struct hmb_live_opts *o);
void hmb_live_free(struct hmb_live *l);
/* One command: its host side and the firmware records joined to it. */
void hmb_live_cmd(struct hmb_live *l, const struct hmb_host_cmd *h,
		  const struct hmb_fw_side *fw);
/* One background event of dictionary group @group. */
void hmb_live_bg(struct hmb_live *l, uint64_t ts, uint16_t opcode,
		 enum hmb_bg_edge edge, const char *group, const void *payload,
		 size_t len);
/* Solve the clock and judge the waiting commands but the last LAG. */
void hmb_live_tick(struct hmb_live *l);
/* At the end: judge every waiting command (unplaced if no estimate). */
void hmb_live_flush(struct hmb_live *l);
/* Start a new interval (clears l->iv). */
void hmb_live_new_interval(struct hmb_live *l);

/*
 * Background windows overlapping firmware time [t0, t1]: @fn gets the
 * group, the begin time (0 if it began before what is kept), the end time
 * (0 if still open) and the begin event.  Returns how many.
 */
typedef void (*hmb_live_bg_fn)(void *ctx, const char *group, uint64_t begin,
			       uint64_t end, const struct hmb_live_bg *rec);
unsigned int hmb_live_bg_overlap(const struct hmb_live *l, uint64_t t0,
				 uint64_t t1, hmb_live_bg_fn fn, void *ctx);

#ifdef __cplusplus
}
#endif
#endif /* HMBTRACE_LIVE_H */
