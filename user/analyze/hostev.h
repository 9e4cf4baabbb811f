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

#include <stddef.h>
#include <stdint.h>

struct host_cmd {
	uint64_t submit_ns, complete_ns;
	uint64_t slba;
	uint32_t ctrl;		/* N of nvmeN */
	uint32_t nsid, nlb;
	uint32_t line;		/* where it was read (completion line) */
	uint16_t qid, cid;	/* cid: the full 16-bit command id */
	char opc[16];		/* "read", "write", ... as the source names it */
};

enum host_fmt { HOST_FMT_AGENT = 1, HOST_FMT_PERF };

struct host_events {
	const char *path;
	enum host_fmt fmt;
	struct host_cmd *v;
	size_t n, cap;
	/* what was read but is not a usable command, by reason */
	uint64_t lines;
	uint64_t block;		/* agent block-layer fallback: no NVMe ids */
	uint64_t incomplete;	/* no completion (or no submission) seen */
	uint64_t unpaired;	/* perf: a completion without its setup */
	uint64_t other;		/* lines that are not command events */
	uint32_t nctrl;		/* distinct controllers */
	uint32_t ctrls[64];
};

/* Read the whole file; prints the one error line and returns non-zero. */
int hostev_load(struct host_events *he, const char *path);
void hostev_free(struct host_events *he);
const char *hostev_fmt_name(enum host_fmt f);

#endif /* HMB_HOSTEV_H */
