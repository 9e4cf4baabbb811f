/* SPDX-License-Identifier: Apache-2.0 */
/*
 * correlate: a dump and the host's events read into libhmbtrace's offline
 * join (hmbtrace_join.h), for the correlate command, report --host and
 * convert --to perfetto --host.  The join itself, the clock estimate and
 * the verdict on every command are the library's, the live agent's.
 */
#ifndef HMB_CORRELATE_H
#define HMB_CORRELATE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "hmbtrace_join.h"
#include "hostev.h"

struct corr {
	struct hmb_join *j;
	struct host_events host;	/* what was read (commands: in j) */
	const char *dump;
	uint64_t fw_lost;		/* records lost in the dump */
	void *priv;			/* the front end's, after corr_run */
};

/* The join's window (hmb_join_set_window); zeros: the library's default. */
struct corr_win {
	size_t cmds;
	uint64_t late_ns;
};

/* Each judged command as the join hands it out (hmb_join_src.cmd). */
typedef int (*corr_cmd_fn)(void *ctx, const struct hmb_join *j, size_t i,
			   const struct hmb_cmd *c);

/*
 * Stream the dump (through input.c, so its sidecar and losses count) and
 * the host events through the join a window at a time, joining the
 * commands of controller @ctrl (-1: the only one in the first window),
 * keeping the @top_n slowest, handing every command to @fn (may be NULL)
 * as its window is done.  Prints the one error line and returns
 * EXIT_BADINPUT or EXIT_USAGE (or @fn's non-zero) on failure (nothing to
 * free).
 */
int corr_run(struct corr *c, const char *dump, const char *host,
	     const struct hmb_dict *dict, long ctrl, unsigned int top_n,
	     const struct corr_win *win, corr_cmd_fn fn, void *ctx);
/* The same, @window_fn told after each window (hmb_join_src.window_done). */
int corr_run_src(struct corr *c, const char *dump, const char *host,
		 const struct hmb_dict *dict, long ctrl, unsigned int top_n,
		 const struct corr_win *win, corr_cmd_fn fn,
		 int (*window_fn)(void *ctx, uint32_t before, bool all),
		 void *ctx);
void corr_free(struct corr *c);

int cmd_correlate(int argc, char **argv);
void usage_correlate(FILE *f);

#endif /* HMB_CORRELATE_H */
