/* SPDX-License-Identifier: GPL-2.0 */
/*
 * daemon.h - shared pieces of hmb-trace-daemon: ring sources, output,
 * logging.
 */
#ifndef HMB_TRACE_DAEMON_H
#define HMB_TRACE_DAEMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <hmbtrace.h>

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
	int fd;				/* device fd; -1 for a ring file */
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

#endif
