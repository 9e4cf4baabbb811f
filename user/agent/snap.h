/* SPDX-License-Identifier: GPL-2.0 */
/*
 * snap.h - hmb-trace-agent's flight recorder (--snapshot-dir): the last
 * --pre seconds of firmware records and host commands in one bounded
 * window, and the bundles written from it on a trigger or
 * SIGUSR1 (docs/flight-recorder.md).  Nothing here knows BPF: the agent
 * feeds it, so a test can feed it the same way (tests/t_snap.c).
 */
#ifndef HMB_AGENT_SNAP_H
#define HMB_AGENT_SNAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "hmbtrace.h"
#include "hmbtrace_util.h"

#define SNAP_DEF_PRE_S		2
#define SNAP_DEF_POST_S		1
#define SNAP_DEF_WINDOW_MB	64	/* as the daemon's --window-mb */
#define SNAP_DEF_HOLDOFF_S	10	/* as the daemon's --holdoff */
#define SNAP_MAX_WINDOW_MB	16384
#define SNAP_DUMP_NAME		"trace.bin"

struct snap_opts {
	const char *dir;		/* --snapshot-dir */
	double pre_s, post_s;		/* --pre, --post */
	size_t window;			/* --window-mb, bytes */
	uint64_t max_snaps;		/* --max-snapshots, 0: no limit */
	unsigned int holdoff_s;		/* --holdoff */
	const char *prog;		/* for messages */
	/* The sidecar a dump of @ring starts with, as -w's (dump.c). */
	void (*sidecar)(unsigned int ring, struct hmb_sidecar *sc);
	/*
	 * A host entry given to snap_host() as its JSON line (no newline)
	 * into @ob, emptied: in the bundle's writer, so that only the
	 * commands a bundle holds are ever formatted.  A line that does not
	 * fit leaves @ob in error: counted (too_big), not written.
	 */
	void (*host_line)(struct hmb_outbuf *ob, const void *ent, size_t len);
};

int snap_init(const struct snap_opts *o);	/* 0, or -1 (said) */
bool snap_armed(void);
/*
 * How long a bundle waits past its window's end for both sides: the
 * agent judges commands at a tick (half a second) and HMB_LIVE_LAG
 * commands late, so at a low rate the host side may not catch up, nor
 * the firmware side while the firmware is idle.
 */
#define SNAP_CATCHUP_NS 2000000000ULL

/*
 * A firmware record of @ring, stamped @t_ns (CLOCK_MONOTONIC): its own
 * time mapped to the host clock, or when it arrived.
 */
void snap_fw(unsigned int ring, const struct hmb_record_hdr *h,
	     const void *payload, uint64_t t_ns);
/*
 * A host command, @len bytes as the caller keeps it (host_line() formats
 * it in the writer), stamped @t_ns with the command's completion
 * (CLOCK_MONOTONIC), not with when it came: the agent has a command once
 * it judged it, up to a tick and HMB_LIVE_LAG commands later, and the
 * window's two sides are to cover the same time.  A command done before
 * the window's start is not written.
 */
void snap_host(const void *ent, size_t len, uint64_t t_ns);
/*
 * A snapshot asked for (@reason "sigusr1" or "trigger<N>"), with what
 * fired it as one JSON object (@fired, may be NULL): taken --post seconds
 * later, or suppressed (a line on stderr, counted).
 */
void snap_request(const char *reason, const char *fired, uint64_t now_ns);
/*
 * A requested snapshot's --post is over and both sides have caught up:
 * each side that has had entries has one stamped at or past the window's
 * end (the request plus --post), or SNAP_CATCHUP_NS passed since that
 * end.  snap_take() it now.
 */
bool snap_due(uint64_t now_ns);
/* Write it (in a child) with @clock_json, the clock estimate now. */
void snap_take(uint64_t now_ns, const char *clock_json);
/* Drop what is older than --pre; reap a finished writer. */
void snap_tick(uint64_t now_ns);
/* At exit: a pending snapshot written, the writer waited for. */
void snap_finish(uint64_t now_ns, const char *clock_json);
void snap_report_text(FILE *f);
void snap_report_json(struct hmb_json *j);
void snap_free(void);

#endif /* HMB_AGENT_SNAP_H */
