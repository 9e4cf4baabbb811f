/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * hmbtrace_window.h - a flight recorder's window: the last N bytes of
 * whole records of a drained stream (the ring's or a dump's record
 * format), kept in memory, the oldest records evicted first and counted
 * by kind, never half a record.  Its memory is private anonymous memory,
 * so a process that forks to write a snapshot hands the child the window
 * as it is (copy-on-write) and carries on.  hmb-trace-daemon's
 * --snapshot-on keeps its records here (docs/flight-recorder.md).
 */
#ifndef HMBTRACE_WINDOW_H
#define HMBTRACE_WINDOW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "hmbtrace.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * A circular buffer: the byte at stream offset x is at map[x % size];
 * @tail and @head count the bytes of the stream added.  Read the counters,
 * change nothing but through the functions below.
 */
struct hmb_window {
	uint8_t *map;
	size_t size;
	uint64_t tail, head;
	/* evicted since the start, by kind; the last seq-bearing one's seq */
	uint64_t ev_records, ev_ignored, ev_markers, ev_bytes;
	bool ev_have_seq;
	uint32_t ev_last_seq;
	/* stream offsets where a new producer epoch begins (re-inits) */
	uint64_t *epochs;
	size_t n_epochs;
};

/* A window of @size bytes (> 0).  0, or HMB_E_NOMEM / HMB_E_IO in @err. */
int hmb_window_open(struct hmb_window *w, size_t size, struct hmb_error *err);
void hmb_window_close(struct hmb_window *w);

/*
 * Append @len (at most the window's size) bytes of whole, checked records,
 * evicting the oldest to make room.  0; or HMB_E_INVAL when the oldest
 * record does not parse (only checked records go in: a caller's bug), with
 * why in @err (an empty message: no record at all), and then the window
 * was emptied (counted in ev_bytes) before the bytes went in.
 */
int hmb_window_add(struct hmb_window *w, const void *buf, size_t len,
		   struct hmb_error *err);

/*
 * The records from now on belong to a new producer epoch (the ring was
 * re-initialised).  0; or 1 when the window already held
 * HMB_SIDECAR_MAX_EPOCHS epochs, whose oldest is then forgotten.
 */
int hmb_window_epoch(struct hmb_window *w);

/* What a window holds, by libhmbtrace's accounting (docs/format.md 10). */
struct hmb_window_sum {
	struct hmb_acct *acct;		/* hmb_acct_free() it */
	bool have_seq;
	uint32_t first_seq, last_seq;
};

/*
 * Walk the records held into @s (epochs included).  0; HMB_E_NOMEM (errno
 * set, nothing to free); or the walk's error in @err (a record runs past
 * the end: an empty message), nothing to free.
 */
int hmb_window_walk(const struct hmb_window *w, struct hmb_window_sum *s,
		    struct hmb_error *err);

/* The bytes held, oldest first, as 1 or 2 spans of @iov; returns how many. */
int hmb_window_spans(const struct hmb_window *w, struct iovec iov[2]);

#ifdef __cplusplus
}
#endif
#endif /* HMBTRACE_WINDOW_H */
