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
};

/*
 * Read the dump (through input.c, so its sidecar and losses count) and the
 * host events, join the commands of controller @ctrl (-1: the only one in
 * the file), keeping the @top_n slowest.  Prints the one error line and
 * returns EXIT_BADINPUT or EXIT_USAGE on failure (nothing to free).
 */
int corr_run(struct corr *c, const char *dump, const char *host,
	     const struct hmb_dict *dict, long ctrl, unsigned int top_n);
void corr_free(struct corr *c);

int cmd_correlate(int argc, char **argv);
void usage_correlate(FILE *f);

#endif /* HMB_CORRELATE_H */
