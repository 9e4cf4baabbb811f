/* SPDX-License-Identifier: GPL-2.0 */
/*
 * daemon.h - shared pieces of hmb-trace-daemon: ring sources (source.c),
 * logging (log.c), options (opts.c), the output (output.c) and the state
 * of a run (daemon.c).
 */
#ifndef HMB_TRACE_DAEMON_H
#define HMB_TRACE_DAEMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <limits.h>
#include <time.h>
#include <sys/types.h>
#include <sys/uio.h>

#include <hmbtrace.h>
#include "hmbtrace_util.h"
#include "hmbtrace_window.h"

#define PROG "hmb-trace-daemon"

/* Exit status (documented in --help and docs/man/hmb-trace-daemon.md). */
enum {
	EXIT_OK = 0,
	EXIT_ERR = 1,		/* cannot open or map the source or output, ... */
	EXIT_USAGE = 2,
	EXIT_CORRUPT = 3,	/* ring corrupt: stopped at the last good record */
	EXIT_VERSION = 4,	/* ring header refused (version > 1, bad magic) */
	EXIT_GONE = 5,		/* device (or ring file) went away */
	EXIT_OUTPUT = 6,	/* stopped while output still failed; data kept in the ring */
	EXIT_NOT_DUMP = 7,	/* existing output not a dump: refused, nothing drained */
};

/* ------------------------------------------------------------- logging */

enum log_level { LOG_ERR, LOG_WARN, LOG_INFO, LOG_DEBUG };

extern int log_verbosity;	/* highest level printed */
extern bool log_json;

void log_msg(enum log_level lvl, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* -------------------------------------------------------------- source */

enum source_kind { SRC_RING_FILE, SRC_DEVICE };

struct source {
	enum source_kind kind;
	const char *path;
	int fd;				/* the device or the ring file */
	void *map;
	size_t map_len;
	uint32_t ring_size;
	uint32_t ring_id;		/* device only */
	char name[64];			/* device only: provider's ring name */
};

/*
 * Open and map the source.  Fills @err_exit with the exit status to use on
 * failure (EXIT_ERR, EXIT_VERSION), logs the reason and returns -1.
 */
int source_open(struct source *s, enum source_kind kind, const char *path,
		int *err_exit);
void source_close(struct source *s);
/* Publish hook for the consumer (ring file: store; device: ioctl). */
hmb_publish_fn source_publish_fn(const struct source *s);

/* -------------------------------------------------------------- the run */

#define DEFAULT_BATCH (256u << 10)
#define DEFAULT_IDLE_MAX_MS 10
#define DEFAULT_WATERMARK (64u << 10)
#define DEFAULT_MAX_DELAY_US 1000
#define BACKOFF_CAP_MS 1000

struct opts {
	enum source_kind kind;
	const char *source;
	const char *output;
	size_t batch;
	bool once;
	const char *stats_json;
	unsigned int idle_max_ms;
	double throttle;	/* bytes/s, 0 = none (testing aid) */
	bool no_recover;
	size_t watermark;	/* drain once this much is in the ring ... */
	unsigned int max_delay_us;	/* ... or its oldest byte waited this */
	unsigned int file_mode;	/* permission bits of files we create */
	enum { FSYNC_NONE, FSYNC_BATCH, FSYNC_INTERVAL } fsync;
	unsigned int fsync_interval_ms;
	bool copy;		/* --write-mode copy */
	/* flight recorder (window.c): 0 = off, else the signal */
	int snap_sig;
	const char *snap_name;	/* "SIGUSR1" */
	const char *snap_dir;	/* --snapshot-dir */
	size_t window;		/* --window-mb, in bytes */
	uint64_t max_snaps;	/* --max-snapshots, 0 = no limit */
	unsigned int holdoff_s;	/* --holdoff */
};

#define DEFAULT_WINDOW_MB 64
#define MAX_WINDOW_MB 16384
#define DEFAULT_HOLDOFF_S 10

/*
 * The flight recorder: the last --window-mb bytes of whole records
 * drained, in libhmbtrace's window (hmbtrace_window.h), and the snapshots
 * asked for.
 */
struct window {
	struct hmb_window rw;
	/* requests and what became of them */
	uint64_t requests, written, failed;
	uint64_t sup_holdoff, sup_max, sup_pending;
	double last_written;	/* hmb_now_s() when the last one written began */
	unsigned int pending;	/* requests read, not handled yet */
	pid_t child;		/* writing a snapshot, 0: none */
	double child_started;
	char child_tmp[4096];	/* its temporary directory */
};

struct stats {
	uint64_t records, markers, ignored, bytes, batches;
	uint64_t overflow_events, frozen_events, unknown_flag_events;
	uint64_t reinits, reopens;
	uint64_t output_errors, output_retries;
	uint64_t fsyncs;
	uint64_t ring_changed;	/* batches rewritten: ring changed under us */
	double t0;
};

struct daemon {
	struct opts o;
	struct source src;
	struct hmb_consumer *c;
	int sigfd;
	int out_fd;
	bool out_is_file;
	uint64_t out_size;		/* bytes in the current output file */
	dev_t out_dev;			/* the output file's identity, to tell */
	ino_t out_ino;			/* a rotated FILE at SIGHUP */
	uint64_t synced_size;		/* out_size at the last fdatasync */
	double last_sync;		/* when (hmb_now_s, monotonic) */
	uint8_t *buf;
	struct iovec iov[IOV_MAX];	/* spans of the ring (--write-mode spans) */
	bool copy_next;			/* read the next batch with a copy */
	uint32_t flags;			/* last ring flags seen */
	bool stop;			/* SIGINT/SIGTERM received */
	int stop_sig;
	bool reopen;			/* SIGHUP received */
	bool dev_err_backoff;		/* device poll reported POLLERR/PRI */
	uint64_t published;		/* last tail published */
	double hold_since;		/* below the watermark since (0: not) */
	struct stats st;
	struct window win;
	int exit_code;
	const char *exit_reason;
};

/* daemon.c */
/* Sleep @ms unless a signal is pending on the signalfd. */
void sleep_ms(struct daemon *d, double ms);
/* Take the pending signals (stop, reopen) into @d. */
void signals_read(struct daemon *d);

/* opts.c: the options into @o; --help exits 0, bad usage exits 2. */
void parse_opts(struct opts *o, int argc, char **argv);

/*
 * output.c: the dump file and its sidecar.  output_open() returns 0 or the
 * exit status for the failure it logged (EXIT_ERR, EXIT_NOT_DUMP).
 */
int output_open(struct daemon *d, bool reopen);
void output_close(struct daemon *d);
int output_sync(struct daemon *d);
void output_sync_due(struct daemon *d);
int output_cut(struct daemon *d, uint64_t size);
int output_write(struct daemon *d, struct iovec *iov, int n, size_t len);
/*
 * Write the @n buffers of @iov, @len bytes, as the dump DIR/trace.bin, synced, with its
 * sidecar (clocks of now, anchored at the dump's end) plus @lines.  0 or
 * -1 (logged; nothing is retried, the caller removes DIR).
 */
int output_snapshot(struct daemon *d, const char *dir, struct iovec *iov,
		    int n, size_t len, const char *lines);
#define SNAP_DUMP_NAME "trace.bin"

/* window.c: the flight recorder (--snapshot-on). */
int window_open(struct daemon *d);
void window_close(struct daemon *d);
/* Keep @len bytes of whole records, evicting the oldest records first. */
int window_add(struct daemon *d, const void *buf, size_t len);
/* The ring was re-initialised: the next record begins a new epoch. */
void window_epoch(struct daemon *d);
/*
 * Handle the pending requests: one snapshot at most, written by a child
 * process, the rest suppressed.
 */
void window_requests(struct daemon *d);
/* Count the snapshot being written once it is done (@block: wait for it). */
void window_reap(struct daemon *d, bool block);
void window_stats_json(const struct daemon *d, struct hmb_json *j);

#endif
