/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Host-side NVMe commands, read from what the host recorded: the JSON lines
 * of `hmb-trace-agent -j --per-command` ({"type":"cmd","cmd":{...}}) or the
 * output of `perf script` for the tracepoints nvme:nvme_setup_cmd and
 * nvme:nvme_complete_rq (setup and completion paired by controller, queue
 * and command id).  Times are the host's clock (CLOCK_MONOTONIC for the
 * agent, perf's clock for perf script), never the firmware's.
 */
#ifndef HMB_HOSTEV_H
#define HMB_HOSTEV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "hmbtrace_cmd.h"

enum host_fmt { HOST_FMT_AGENT = 1, HOST_FMT_PERF };

/* The longest line taken (an agent line is a few hundred bytes). */
#define HOSTEV_LINE_MAX (1u << 20)

struct host_events {
	const char *path;
	enum host_fmt fmt;
	struct hmb_host_cmd *v;	/* host commands, in file order */
	size_t n, cap;
	uint64_t taken;		/* commands handed out and cleared from v */
	/* what was read but is not a usable command, by reason */
	uint64_t lines;
	uint64_t block;		/* agent block-layer fallback: no NVMe ids */
	uint64_t incomplete;	/* no completion (or no submission) seen */
	uint64_t unpaired;	/* perf: a completion without its setup */
	uint64_t other;		/* lines that are not command events */
};

/* Read the whole file; prints the one error line and returns non-zero. */
int hostev_load(struct host_events *he, const char *path);

/*
 * The same, line by line: the entry point for untrusted host input (what
 * hostev_load does with a file).  hostev_open() starts reading into @he
 * (NULL: out of memory, said); hostev_line() takes one line of @len bytes
 * (its newline optional); hostev_close() ends it with the result so far
 * @rc and returns the result: 0, or EXIT_BADINPUT after the one error
 * line (then @he is freed).
 */
struct hostev_reader;
struct hostev_reader *hostev_open(struct host_events *he, const char *path);
int hostev_line(struct hostev_reader *r, const char *line, size_t len);
/*
 * The next line of @f into hostev_line(), read with at most
 * HOSTEV_LINE_MAX bytes of it in memory: 0 (*@eof set at the end of @f) or
 * EXIT_BADINPUT after the one error line (a longer line is one).
 */
int hostev_read(struct hostev_reader *r, FILE *f, bool *eof);
int hostev_close(struct hostev_reader *r, int rc);
void hostev_free(struct host_events *he);
const char *hostev_fmt_name(enum host_fmt f);

#endif /* HMB_HOSTEV_H */
