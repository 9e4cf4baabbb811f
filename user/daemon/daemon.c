// SPDX-License-Identifier: GPL-2.0
/*
 * hmb-trace-daemon - drain an HMB trace ring into a dump file.
 *
 * The consumer loop of the end-to-end flow: acquire head, copy whole
 * validated records out of the ring (libhmbtrace), write them verbatim to
 * the output (wrap markers included: format.md 12.1), and only then
 * publish the tail (9.4), once per batch.  Signals arrive through a
 * signalfd and are handled between batches, so every file holds whole
 * records and no record is lost or repeated across a reopen.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/uio.h>

#include "daemon.h"

#define DEFAULT_BATCH (256u << 10)
#define DEFAULT_IDLE_MAX_MS 10
#define DEFAULT_WATERMARK (64u << 10)
#define DEFAULT_MAX_DELAY_US 1000
#define BACKOFF_CAP_MS 1000

int log_verbosity = LOG_INFO;
bool log_json;

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
	double last_sync;		/* when (now_s) */
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
	int exit_code;
	const char *exit_reason;
};

/* ------------------------------------------------------------- logging */

static const char *const level_name[] = { "error", "warning", "info", "debug" };

void log_msg(enum log_level lvl, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	if ((int)lvl > log_verbosity)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (log_json) {
		struct timespec ts;
		char esc[2200], *e = esc;
		const char *m;

		clock_gettime(CLOCK_REALTIME, &ts);
		for (m = msg; *m && e < esc + sizeof(esc) - 8; m++) {
			if (*m == '"' || *m == '\\') {
				*e++ = '\\';
				*e++ = *m;
			} else if ((unsigned char)*m < 0x20) {
				e += sprintf(e, "\\u%04x", (unsigned char)*m);
			} else {
				*e++ = *m;
			}
		}
		*e = 0;
		fprintf(stderr, "{\"ts\":%lld.%06ld,\"prog\":\"" PROG "\",\"level\":\"%s\",\"msg\":\"%s\"}\n",
			(long long)ts.tv_sec, ts.tv_nsec / 1000, level_name[lvl], esc);
	} else {
		fprintf(stderr, PROG ": %s%s\n",
			lvl == LOG_ERR ? "error: " : lvl == LOG_WARN ? "warning: " : "",
			msg);
	}
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static uint64_t clock_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

/* ---------------------------------------------------------------- usage */

static void usage(FILE *f)
{
	fprintf(f,
"Usage: " PROG " (--device DEV | --ring-file PATH) -o FILE [OPTIONS]\n"
"\n"
"Drain an NVMe HMB trace ring into a dump file: every record verbatim, in\n"
"ring order, wrap markers included; the ring's tail is published only after\n"
"the bytes were written.  A sidecar FILE.meta describes each output.\n"
"\n"
"Source (one of):\n"
"  -d, --device DEV         trace device, e.g. /dev/nvme-hmb-trace0\n"
"  -r, --ring-file PATH     file-backed ring, e.g. /dev/shm/hmb0 (hmb-fwsim)\n"
"Output:\n"
"  -o, --output FILE        dump file, appended to ('-' = stdout, no sidecar)\n"
"  -b, --batch-bytes N      bytes copied and written per batch; the tail is\n"
"                           published once per batch (default 256K, min 4K)\n"
"      --once               drain what is in the ring now and exit\n"
"      --stats-json FILE    write the exit summary as JSON to FILE\n"
"      --idle-max-ms MS     longest sleep of a ring file's idle back-off\n"
"                           (default 10)\n"
"      --watermark BYTES    drain once the ring holds this much, or once\n"
"                           its oldest record waited --max-delay-us; fewer,\n"
"                           larger writes (default 64K; 0 = at once;\n"
"                           never more than a quarter of the ring)\n"
"      --max-delay-us US    longest a record waits below the watermark\n"
"                           (default 1000)\n"
"      --file-mode MODE     permission bits of the dump and sidecar files\n"
"                           the daemon creates, octal, exactly (the umask is\n"
"                           not applied; default 0600, like the device).\n"
"                           Existing files keep theirs\n"
"      --fsync POLICY       none (default): never fsync the dump; batch:\n"
"                           fdatasync it before each tail publication;\n"
"                           interval: fdatasync it every --fsync-interval-ms\n"
"                           while bytes are pending (see Durability below)\n"
"      --fsync-interval-ms MS  for --fsync interval (default 1000)\n"
"      --write-mode MODE    copy (default): copy each batch out of the ring,\n"
"                           check the copy, write it; spans: check each\n"
"                           record header in the ring, write the records\n"
"                           straight from the ring, check the headers again\n"
"                           (docs/format.md 9.5; not faster on the machines\n"
"                           measured, docs/benchmarks.md)\n"
"      --no-output-check    do not scan an existing FILE for a torn last\n"
"                           record before appending (see below)\n"
"      --throttle BYTES/S   limit the drain rate by holding each batch's tail\n"
"                           back (testing: makes the ring overflow, widens\n"
"                           the write-to-publish window)\n"
"Logging (stderr):\n"
"  -q, --quiet              warnings and errors only\n"
"  -v, --verbose            debug messages\n"
"      --log-format text|json  one JSON object per line with json\n"
"  -h, --help               this help\n"
"  -V, --version            print the version and exit\n"
"\n"
"An existing FILE is appended to.  It is scanned first: a record torn by a\n"
"daemon killed mid-write is cut off (it is still in the ring).  Its\n"
"FILE.meta keeps its epoch lines and first clock anchors and gets one\n"
"restart= line.  FILE, FILE.meta and FILE.meta.tmp are never opened\n"
"through a symbolic link.\n"
"\n"
"Durability (the tail is always published after the bytes were written):\n"
"  kill -9 of the daemon loses nothing, whatever --fsync says (the bytes\n"
"  are in the kernel); at most one batch is written twice.  After a power\n"
"  loss or an OS crash: none -- records published in the last ~30 s (the\n"
"  kernel's writeback delay) may be missing from FILE; batch -- every\n"
"  record whose tail was published is in FILE; interval -- records\n"
"  published more than MS (plus one fdatasync) before are in FILE.\n"
"  FILE.meta is always replaced atomically and fsync'ed with its directory.\n"
"\n"
"Signals:\n"
"  SIGINT, SIGTERM  finish the batch in hand (write, publish) and exit 0\n"
"  SIGHUP           reopen FILE after the batch in hand (logrotate) and\n"
"                   write a new FILE.meta; no record is lost or repeated\n"
"\n"
"Exit status:\n"
"  0 stopped by a signal, or --once done     1 error (open, map, output)\n"
"  2 usage                                   3 ring corrupt (the good prefix\n"
"  4 ring header refused (version > 1)         was written and published)\n"
"  5 device (or ring file) went away         6 stopped while the output was\n"
"                                              failing; data left in the ring\n"
"\n"
"Examples:\n"
"  " PROG " --device /dev/nvme-hmb-trace0 -o /var/log/hmb/trace.bin\n"
"  " PROG " --ring-file /dev/shm/hmb0 -o trace.bin --stats-json stats.json\n"
"  " PROG " -r /dev/shm/hmb0 -o - --once | hmb-trace-analyze stats -\n"
"  kill -HUP $(pidof " PROG ")   # after moving trace.bin away\n");
}

static uint64_t parse_num(const char *s, const char *what)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || end == s || *s == '-')
		goto bad;
	switch (*end) {
	case 'k': case 'K': v <<= 10; end++; break;
	case 'm': case 'M': v <<= 20; end++; break;
	case 'g': case 'G': v <<= 30; end++; break;
	default: break;
	}
	if (*end == 0)
		return v;
bad:
	log_msg(LOG_ERR, "bad %s '%s' (try --help)", what, s);
	exit(EXIT_USAGE);
}

enum { O_ONCE = 256, O_STATS_JSON, O_LOG_FORMAT, O_IDLE_MAX, O_THROTTLE,
       O_NO_RECOVER, O_WATERMARK, O_MAX_DELAY, O_FILE_MODE, OPT_FSYNC,
       OPT_FSYNC_INTERVAL, O_WRITE_MODE };

static void parse_opts(struct opts *o, int argc, char **argv)
{
	static const struct option lo[] = {
		{ "device", required_argument, NULL, 'd' },
		{ "ring-file", required_argument, NULL, 'r' },
		{ "output", required_argument, NULL, 'o' },
		{ "batch-bytes", required_argument, NULL, 'b' },
		{ "once", no_argument, NULL, O_ONCE },
		{ "stats-json", required_argument, NULL, O_STATS_JSON },
		{ "idle-max-ms", required_argument, NULL, O_IDLE_MAX },
		{ "throttle", required_argument, NULL, O_THROTTLE },
		{ "no-output-check", no_argument, NULL, O_NO_RECOVER },
		{ "watermark", required_argument, NULL, O_WATERMARK },
		{ "max-delay-us", required_argument, NULL, O_MAX_DELAY },
		{ "file-mode", required_argument, NULL, O_FILE_MODE },
		{ "fsync", required_argument, NULL, OPT_FSYNC },
		{ "fsync-interval-ms", required_argument, NULL, OPT_FSYNC_INTERVAL },
		{ "write-mode", required_argument, NULL, O_WRITE_MODE },
		{ "quiet", no_argument, NULL, 'q' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "log-format", required_argument, NULL, O_LOG_FORMAT },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	int c, nsrc = 0;
	uint64_t v;

	o->batch = DEFAULT_BATCH;
	o->idle_max_ms = DEFAULT_IDLE_MAX_MS;
	o->watermark = DEFAULT_WATERMARK;
	o->max_delay_us = DEFAULT_MAX_DELAY_US;
	o->file_mode = 0600;
	o->fsync = FSYNC_NONE;
	o->fsync_interval_ms = 1000;
	o->copy = true;
	while ((c = getopt_long(argc, argv, "d:r:o:b:qvhV", lo, NULL)) != -1) {
		switch (c) {
		case 'd': o->kind = SRC_DEVICE; o->source = optarg; nsrc++; break;
		case 'r': o->kind = SRC_RING_FILE; o->source = optarg; nsrc++; break;
		case 'o': o->output = optarg; break;
		case 'b':
			v = parse_num(optarg, "batch size");
			if (v < HMB_RECORD_MAX_SIZE || v > (1u << 30)) {
				log_msg(LOG_ERR, "--batch-bytes must be between %d and 1G",
					HMB_RECORD_MAX_SIZE);
				exit(EXIT_USAGE);
			}
			o->batch = (size_t)v;
			break;
		case O_ONCE: o->once = true; break;
		case O_STATS_JSON: o->stats_json = optarg; break;
		case O_IDLE_MAX:
			v = parse_num(optarg, "idle sleep");
			if (v < 1 || v > 1000) {
				log_msg(LOG_ERR, "--idle-max-ms must be 1..1000");
				exit(EXIT_USAGE);
			}
			o->idle_max_ms = (unsigned int)v;
			break;
		case O_NO_RECOVER: o->no_recover = true; break;
		case O_WATERMARK:
			v = parse_num(optarg, "watermark");
			if (v > (1u << 30)) {
				log_msg(LOG_ERR, "--watermark must be at most 1G");
				exit(EXIT_USAGE);
			}
			o->watermark = (size_t)v;
			break;
		case O_MAX_DELAY:
			v = parse_num(optarg, "delay");
			if (v < 1 || v > 60000000) {
				log_msg(LOG_ERR, "--max-delay-us must be 1..60000000 (60 s)");
				exit(EXIT_USAGE);
			}
			o->max_delay_us = (unsigned int)v;
			break;
		case O_FILE_MODE: {
			char *end;
			unsigned long m;

			errno = 0;
			m = strtoul(optarg, &end, 8);
			if (errno || end == optarg || *end || m > 0777) {
				log_msg(LOG_ERR, "--file-mode must be octal permission bits, 0..0777 (e.g. 0640), not '%s'",
					optarg);
				exit(EXIT_USAGE);
			}
			o->file_mode = (unsigned int)m;
			break;
		}
		case OPT_FSYNC:
			if (!strcmp(optarg, "none")) {
				o->fsync = FSYNC_NONE;
			} else if (!strcmp(optarg, "batch")) {
				o->fsync = FSYNC_BATCH;
			} else if (!strcmp(optarg, "interval")) {
				o->fsync = FSYNC_INTERVAL;
			} else {
				log_msg(LOG_ERR, "--fsync must be none, batch or interval, not '%s'",
					optarg);
				exit(EXIT_USAGE);
			}
			break;
		case OPT_FSYNC_INTERVAL:
			v = parse_num(optarg, "fsync interval");
			if (v < 1 || v > 3600000) {
				log_msg(LOG_ERR, "--fsync-interval-ms must be 1..3600000 (1 h)");
				exit(EXIT_USAGE);
			}
			o->fsync_interval_ms = (unsigned int)v;
			break;
		case O_WRITE_MODE:
			if (!strcmp(optarg, "copy")) {
				o->copy = true;
			} else if (!strcmp(optarg, "spans")) {
				o->copy = false;
			} else {
				log_msg(LOG_ERR, "--write-mode must be spans or copy, not '%s'",
					optarg);
				exit(EXIT_USAGE);
			}
			break;
		case O_THROTTLE: o->throttle = (double)parse_num(optarg, "throttle"); break;
		case 'q': log_verbosity = LOG_WARN; break;
		case 'v': log_verbosity = LOG_DEBUG; break;
		case O_LOG_FORMAT:
			if (!strcmp(optarg, "json")) {
				log_json = true;
			} else if (strcmp(optarg, "text")) {
				log_msg(LOG_ERR, "--log-format must be text or json");
				exit(EXIT_USAGE);
			}
			break;
		case 'h': usage(stdout); exit(EXIT_OK);
		case 'V': printf("hmb-trace-daemon %s\n", HMB_VERSION); exit(EXIT_OK);
		default: usage(stderr); exit(EXIT_USAGE);
		}
	}
	if (optind < argc) {
		log_msg(LOG_ERR, "unexpected argument '%s' (try --help)", argv[optind]);
		exit(EXIT_USAGE);
	}
	if (nsrc != 1) {
		log_msg(LOG_ERR, "give exactly one of --device DEV or --ring-file PATH (try --help)");
		exit(EXIT_USAGE);
	}
	if (!o->output) {
		log_msg(LOG_ERR, "-o FILE is required (try --help)");
		exit(EXIT_USAGE);
	}
}

/* --------------------------------------------------------------- output */

static void sidecar_path(const struct daemon *d, char *path, size_t len)
{
	snprintf(path, len, "%s.meta", d->o.output);
}

/*
 * Describe the output in FILE.meta (docs/format.md 12.4).  A new sidecar
 * gets the header with the host clocks of now (and anchor_offset when the
 * dump already held bytes: its start's clocks are unknown).  An existing
 * one is never rewritten from scratch: its epoch lines and first clock
 * anchors stay, and one restart= line records this start.  A sidecar that
 * cannot be parsed (or is newer than this daemon) is left alone and the
 * daemon refuses to start: appending records it cannot describe would
 * lose their meaning.
 */
static int write_sidecar(struct daemon *d)
{
	struct hmb_sidecar sc;
	struct hmb_error err;
	char path[4096];
	int rc;

	if (!d->out_is_file)
		return 0;
	sidecar_path(d, path, sizeof(path));
	/* A sidecar beside an empty dump describes nothing that is left. */
	if (d->out_size && (access(path, F_OK) == 0 || errno != ENOENT)) {
		struct hmb_sidecar_restart r;

		memset(&r, 0, sizeof(r));
		r.dump_offset = d->out_size;
		r.tail = hmb_consumer_cursor(d->c);
		r.ring_size = d->src.ring_size;
		r.realtime_ns = clock_ns(CLOCK_REALTIME);
		r.monotonic_ns = clock_ns(CLOCK_MONOTONIC);
		r.boottime_ns = clock_ns(CLOCK_BOOTTIME);
		snprintf(r.source, sizeof(r.source), "%s", d->src.path);
		rc = hmb_sidecar_append_restart(path, &r, &err);
		if (rc) {
			log_msg(LOG_ERR, "cannot record this start in the existing sidecar %s: %s (left as it was; move it away or fix it)",
				path, err.msg);
			return -1;
		}
		log_msg(LOG_DEBUG, "sidecar %s: restart at dump offset %" PRIu64 " recorded",
			path, d->out_size);
		return 0;
	}
	memset(&sc, 0, sizeof(sc));
	sc.abi_version = HMB_TRACE_ABI_VERSION;
	sc.ring_size = d->src.ring_size;
	snprintf(sc.source, sizeof(sc.source), "%s", d->src.path);
	sc.realtime_ns = clock_ns(CLOCK_REALTIME);
	sc.monotonic_ns = clock_ns(CLOCK_MONOTONIC);
	sc.boottime_ns = clock_ns(CLOCK_BOOTTIME);
	if (hmb_sidecar_create(path, &sc, d->out_size, d->o.file_mode, &err)) {
		log_msg(LOG_ERR, "cannot write sidecar %s: %s", path, err.msg);
		return -1;
	}
	return 0;
}

/*
 * A daemon killed in the middle of a write (kill -9) can leave a torn record
 * at the end of its output; the records of that batch are still in the
 * ring and will be written again.  Find the end of the last whole record
 * and cut the file back to it, so that appending keeps the dump valid.
 */
static void output_recover(struct daemon *d)
{
	struct hmb_reader *r;
	struct hmb_record rec;
	struct hmb_error err;
	uint64_t good = 0;
	int fd, rc;

	fd = open(d->o.output, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	rc = hmb_reader_open(&r, fd, d->o.output, &err);
	if (rc == 0) {
		if (hmb_reader_dialect(r) != HMB_DIALECT_DUMP) {
			log_msg(LOG_WARN, "output %s is a ring image, not a dump; appending anyway",
				d->o.output);
			rc = 1;
		} else {
			while ((rc = hmb_reader_next(r, &rec, &err)) == 1)
				good = rec.offset + rec.raw_len;
		}
		hmb_reader_close(r);
	}
	close(fd);
	if (rc == HMB_E_TRUNC_HDR || rc == HMB_E_TRUNC_PAYLOAD) {
		log_msg(LOG_WARN, "output %s ends with a torn record (%s); cutting it back from %" PRIu64
			" to %" PRIu64 " bytes (the record is still in the ring)",
			d->o.output, err.msg, d->out_size, good);
		if (ftruncate(d->out_fd, (off_t)good))
			log_msg(LOG_ERR, "cannot cut %s back: %s", d->o.output,
				strerror(errno));
		else
			d->out_size = good;
	} else if (rc < 0) {
		log_msg(LOG_WARN, "output %s is not a valid dump (%s); appending anyway",
			d->o.output, err.msg);
	}
}

/*
 * Open FILE for appending, never through a symbolic link (O_NOFOLLOW): a
 * new file is created with O_EXCL and given exactly --file-mode; an
 * existing one keeps its mode.  Sets *@created.
 */
static int open_output_file(struct daemon *d, bool *created)
{
	const int fl = O_WRONLY | O_APPEND | O_CLOEXEC | O_NOFOLLOW;
	int fd, tries;

	for (tries = 0; tries < 8; tries++) {
		fd = open(d->o.output, fl | O_CREAT | O_EXCL, d->o.file_mode);
		if (fd >= 0) {
			*created = true;
			if (fchmod(fd, d->o.file_mode))
				log_msg(LOG_WARN, "cannot set mode %04o on %s: %s",
					d->o.file_mode, d->o.output, strerror(errno));
			return fd;
		}
		if (errno != EEXIST)
			break;
		fd = open(d->o.output, fl);
		if (fd >= 0 || errno != ENOENT) {
			*created = false;
			return fd;
		}
		/* Removed between the two opens: try again. */
	}
	return -1;
}

static int output_open(struct daemon *d, bool reopen)
{
	bool created = false;
	struct stat st;

	if (!strcmp(d->o.output, "-")) {
		d->out_fd = STDOUT_FILENO;
		d->out_is_file = false;
		d->out_size = 0;
		return 0;
	}
	d->out_fd = open_output_file(d, &created);
	if (d->out_fd < 0) {
		log_msg(LOG_ERR, "cannot open output %s: %s%s", d->o.output,
			strerror(errno),
			errno == ELOOP ? " (it is a symbolic link; the daemon does not follow links for its output)" : "");
		return -1;
	}
	if (fstat(d->out_fd, &st)) {
		log_msg(LOG_ERR, "output %s: fstat: %s", d->o.output, strerror(errno));
		return -1;
	}
	d->out_is_file = S_ISREG(st.st_mode);
	d->out_size = d->out_is_file ? (uint64_t)st.st_size : 0;
	d->synced_size = d->out_size;
	d->last_sync = now_s();
	/* A new name in the directory survives a power loss only once the
	 * directory is synced. */
	if (created && d->o.fsync != FSYNC_NONE) {
		int rc = hmb_fsync_dir_of(d->o.output);

		if (rc)
			log_msg(LOG_WARN, "output %s: cannot sync its directory: %s",
				d->o.output, strerror(-rc));
	}
	if (d->out_size && !d->o.no_recover)
		output_recover(d);
	if (reopen && d->out_is_file && st.st_dev == d->out_dev &&
	    st.st_ino == d->out_ino) {
		/* SIGHUP, FILE not moved away: the same dump goes on. */
		return 0;
	}
	d->out_dev = st.st_dev;
	d->out_ino = st.st_ino;
	return write_sidecar(d);
}

/*
 * fdatasync the dump if bytes were written since the last one.  Returns 0,
 * or -1 on failure (logged; the tail is then not published under batch).
 */
static int output_sync(struct daemon *d)
{
	if (!d->out_is_file || d->out_size == d->synced_size)
		return 0;
	while (fdatasync(d->out_fd)) {
		if (errno == EINTR)
			continue;
		log_msg(LOG_ERR, "output %s: fdatasync: %s", d->o.output,
			strerror(errno));
		return -1;
	}
	d->st.fsyncs++;
	d->synced_size = d->out_size;
	d->last_sync = now_s();
	return 0;
}

/* --fsync interval: sync once the oldest unsynced byte waited long enough. */
static void output_sync_due(struct daemon *d)
{
	if (d->o.fsync == FSYNC_INTERVAL && d->out_size != d->synced_size &&
	    (now_s() - d->last_sync) * 1000 >= d->o.fsync_interval_ms)
		output_sync(d);
}

static void output_close(struct daemon *d)
{
	if (d->out_fd >= 0 && d->o.fsync != FSYNC_NONE)
		output_sync(d);
	if (d->out_fd >= 0 && d->out_fd != STDOUT_FILENO && close(d->out_fd))
		log_msg(LOG_WARN, "closing output %s: %s", d->o.output,
			strerror(errno));
	d->out_fd = -1;
}

/* ---------------------------------------------------------------- signals */

static int signals_setup(struct daemon *d)
{
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGHUP);
	if (sigprocmask(SIG_BLOCK, &set, NULL)) {
		log_msg(LOG_ERR, "sigprocmask: %s", strerror(errno));
		return -1;
	}
	signal(SIGPIPE, SIG_IGN);
	d->sigfd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
	if (d->sigfd < 0) {
		log_msg(LOG_ERR, "signalfd: %s", strerror(errno));
		return -1;
	}
	return 0;
}

/* Read pending signals into flags; never blocks. */
static void signals_read(struct daemon *d)
{
	struct signalfd_siginfo si;

	while (read(d->sigfd, &si, sizeof(si)) == sizeof(si)) {
		switch (si.ssi_signo) {
		case SIGHUP:
			d->reopen = true;
			break;
		default:
			if (!d->stop)
				log_msg(LOG_INFO, "%s: finishing the batch in hand",
					strsignal((int)si.ssi_signo));
			d->stop = true;
			d->stop_sig = (int)si.ssi_signo;
			break;
		}
	}
}

/* Sleep up to @ms milliseconds, waking early for a signal. */
static void sleep_ms(struct daemon *d, double ms)
{
	struct pollfd pfd = { .fd = d->sigfd, .events = POLLIN };
	struct timespec ts;

	ts.tv_sec = (time_t)(ms / 1000);
	ts.tv_nsec = (long)((ms - ts.tv_sec * 1000.0) * 1e6);
	if (ppoll(&pfd, 1, &ts, NULL) > 0)
		signals_read(d);
}

/* ---------------------------------------------------------- writing out */

static bool errno_retryable(int e)
{
	return e == ENOSPC || e == EIO || e == EDQUOT || e == EFBIG ||
	       e == EAGAIN || e == EINTR;
}

/* Cut FILE back to @size bytes (a record boundary). */
static int output_cut(struct daemon *d, uint64_t size)
{
	if (!d->out_is_file || d->out_size == size)
		return 0;
	if (ftruncate(d->out_fd, (off_t)size)) {
		log_msg(LOG_ERR, "output %s: cannot cut back to %" PRIu64 ": %s",
			d->o.output, size, strerror(errno));
		return -1;
	}
	d->out_size = size;
	return 0;
}

/*
 * Write the @n buffers of @iov (@len bytes in all) with writev(2).  Partial
 * writes are continued where they stopped; ENOSPC/EIO and friends are
 * retried with exponential back-off (1 ms to 1 s) for as long as it takes,
 * logged once per episode.  The tail is not touched here, so nothing
 * unwritten is ever published.  Returns 0, or -1 when the daemon was told
 * to stop while the output still failed or on an error that cannot get
 * better (the output was then cut back to the last record boundary it had
 * before this batch, so the batch stays in the ring), or -2 when the ring's
 * memory itself is gone (EFAULT reading the spans: device removed, ring
 * file truncated).  @iov is consumed.
 */
static int output_write(struct daemon *d, struct iovec *iov, int n, size_t len)
{
	uint64_t start_size = d->out_size;
	size_t done = 0;
	double delay_ms = 1, t_fail = 0;
	bool episode = false;
	int last_err = 0;
	ssize_t w;

	while (done < len) {
		w = writev(d->out_fd, iov, n > IOV_MAX ? IOV_MAX : n);
		if (w > 0) {
			done += (size_t)w;
			d->out_size += (uint64_t)w;
			/* Step over what was written, into a partial buffer. */
			while (n && (size_t)w >= iov->iov_len) {
				w -= (ssize_t)iov->iov_len;
				iov++;
				n--;
			}
			if (n && w) {
				iov->iov_base = (uint8_t *)iov->iov_base + w;
				iov->iov_len -= (size_t)w;
			}
			continue;
		}
		last_err = w < 0 ? errno : EIO;
		if (last_err == EINTR)
			continue;
		if (last_err == EFAULT) {
			log_msg(LOG_ERR, "%s %s gone: its memory is no longer there (EFAULT writing from the ring)",
				d->src.kind == SRC_DEVICE ? "device" : "ring file",
				d->src.path);
			output_cut(d, start_size);
			return -2;
		}
		if (!errno_retryable(last_err)) {
			log_msg(LOG_ERR, "output %s: %s; %zu bytes of this batch unwritten",
				d->o.output, strerror(last_err), len - done);
			goto give_up;
		}
		if (!episode) {
			episode = true;
			t_fail = now_s();
			d->st.output_errors++;
			log_msg(LOG_WARN, "output %s: %s; holding the ring tail at %" PRIu64
				", %zu bytes pending; retrying",
				d->o.output, strerror(last_err), d->published,
				len - done);
		}
		d->st.output_retries++;
		signals_read(d);
		if (d->stop) {
			log_msg(LOG_ERR, "output %s: still failing (%s) when told to stop; %zu bytes stay in the ring",
				d->o.output, strerror(last_err), len - done);
			goto give_up;
		}
		sleep_ms(d, delay_ms);
		delay_ms = delay_ms * 2 > BACKOFF_CAP_MS ? BACKOFF_CAP_MS : delay_ms * 2;
	}
	if (episode)
		log_msg(LOG_INFO, "output %s: writing again after %.1f s (%s)",
			d->o.output, now_s() - t_fail, strerror(last_err));
	return 0;

give_up:
	/* Leave the file at a record boundary; the batch is still in the ring. */
	output_cut(d, start_size);
	return -1;
}

/* ------------------------------------------------------------ the ring */

/* Log ring flag transitions, once each, and count them. */
static void check_flags(struct daemon *d)
{
	uint32_t f = hmb_consumer_flags(d->c), old = d->flags, ch = f ^ old;

	if (!ch)
		return;
	if (ch & HMB_RING_FLAG_OVERFLOWED) {
		d->st.overflow_events++;
		if (f & HMB_RING_FLAG_OVERFLOWED)
			log_msg(LOG_WARN, "ring overflow: the producer is dropping records (OVERFLOWED set, tail %" PRIu64 ", head %" PRIu64 ")",
				hmb_consumer_cursor(d->c), hmb_consumer_head(d->c));
		else
			log_msg(LOG_INFO, "ring overflow over (OVERFLOWED cleared)");
	}
	if (ch & HMB_RING_FLAG_FROZEN) {
		d->st.frozen_events++;
		if (f & HMB_RING_FLAG_FROZEN) {
			log_msg(LOG_WARN, "ring FROZEN: the producer stopped (controller reset or shutdown); draining what is left");
		} else {
			log_msg(LOG_INFO, "ring FROZEN cleared");
		}
	}
	if (ch & ~HMB_RING_FLAGS_KNOWN) {
		d->st.unknown_flag_events++;
		log_msg(LOG_WARN, "ring has unknown flag bits 0x%x (flags 0x%x); ignoring them",
			f & ~HMB_RING_FLAGS_KNOWN, f);
	}
	d->flags = f;
}

/*
 * Nothing to read: ask the consumer whether a frozen ring was re-initialised
 * (FROZEN set, header rewritten, FROZEN cleared).  If so, a new producer
 * epoch starts here: log it and note the output offset in the sidecar.
 * Returns 1 on a new epoch, 0 if not, -1 on a corrupt rewritten header.
 */
static int check_reinit(struct daemon *d)
{
	struct hmb_error err;
	int r;

	r = hmb_consumer_reinit(d->c, &err);
	if (r <= 0) {
		if (r < 0) {
			log_msg(LOG_ERR, "ring corrupt after re-initialisation: %s", err.msg);
			d->exit_code = EXIT_CORRUPT;
			d->exit_reason = "corrupt";
		}
		return r;
	}
	d->st.reinits++;
	d->published = hmb_consumer_cursor(d->c);
	check_flags(d);
	log_msg(LOG_WARN, "ring re-initialised (epoch %" PRIu64 "): carrying on from tail %" PRIu64
		" at output offset %" PRIu64, d->st.reinits, hmb_consumer_cursor(d->c),
		d->out_size);
	if (d->out_is_file) {
		char path[4096];

		snprintf(path, sizeof(path), "%s.meta", d->o.output);
		if (hmb_sidecar_append_epoch(path, d->out_size, &err))
			log_msg(LOG_WARN, "cannot note the new epoch in %s: %s", path,
				err.msg);
	}
	return 1;
}

/* Stop on a corrupt ring: the good prefix has been written and published. */
static void ring_corrupt(struct daemon *d, const struct hmb_error *err)
{
	log_msg(LOG_ERR, "ring corrupt: %s", err->msg);
	d->exit_code = EXIT_CORRUPT;
	d->exit_reason = "corrupt";
}

static int publish(struct daemon *d)
{
	struct hmb_error err;

	if (hmb_consumer_commit(d->c, &err) == 0) {
		d->published = hmb_consumer_cursor(d->c);
		return 0;
	}
	if (d->src.kind == SRC_DEVICE && (err.sys_errno == ENODEV || err.sys_errno == EIO)) {
		log_msg(LOG_ERR, "device %s gone: %s", d->src.path, err.msg);
		d->exit_code = EXIT_GONE;
		d->exit_reason = "device gone";
		return -1;
	}
	if (d->flags & HMB_RING_FLAG_FROZEN) {
		/* Ring re-initialised under us: the tail is the producer's now. */
		log_msg(LOG_DEBUG, "tail not published (ring being re-initialised): %s", err.msg);
		return 0;
	}
	log_msg(LOG_ERR, "cannot publish the tail: %s", err.msg);
	d->exit_code = EXIT_ERR;
	d->exit_reason = "publish failed";
	return -1;
}

static void throttle(struct daemon *d)
{
	double due = d->st.t0 + d->st.bytes / d->o.throttle, t = now_s();

	if (due > t)
		sleep_ms(d, (due - t) * 1000);
}

/*
 * Leave @avail bytes in the ring a little longer?  Below the watermark
 * (at most a quarter of the ring, so a burst cannot fill it meanwhile),
 * until the oldest of them waited --max-delay-us: fewer, larger writes
 * and tail updates for the same bytes.  Never when stopping, on --once,
 * or when the producer has set a flag (FROZEN, OVERFLOWED: drain now).
 */
static bool hold(struct daemon *d, uint64_t avail)
{
	size_t wm = d->o.watermark;
	double t;

	if (wm > d->src.ring_size / 4)
		wm = d->src.ring_size / 4;
	if (avail >= wm || d->stop || d->reopen || d->o.once ||
	    (hmb_consumer_flags(d->c) & (HMB_RING_FLAG_FROZEN |
					 HMB_RING_FLAG_OVERFLOWED))) {
		d->hold_since = 0;
		return false;
	}
	t = now_s();
	if (!d->hold_since)
		d->hold_since = t;
	if ((t - d->hold_since) * 1e6 < d->o.max_delay_us)
		return true;
	d->hold_since = 0;
	return false;
}

/* How long to sleep while hold() keeps bytes below the watermark. */
static double hold_sleep_ms(const struct daemon *d)
{
	double ms = d->o.max_delay_us / 4000.0;

	return ms < d->o.idle_max_ms ? ms : d->o.idle_max_ms;
}

/*
 * Drain what the ring holds now, batch by batch.  Returns 1 if anything was
 * read, 0 if the ring was empty, -1 to stop (exit_code set).
 */
static int drain(struct daemon *d)
{
	struct hmb_error err;
	uint64_t avail;
	size_t len;
	int r, got = 0;

	r = hmb_consumer_poll(d->c, &avail, &err);
	check_flags(d);
	if (r < 0) {
		ring_corrupt(d, &err);
		return -1;
	}
	if (!avail) {
		d->hold_since = 0;
		r = check_reinit(d);
		return r < 0 ? -1 : r;
	}
	if (hold(d, avail))
		return 2;
	for (;;) {
		struct hmb_consumer_counts n0, n1;
		bool spans = !d->o.copy && !d->copy_next;
		uint64_t start = d->out_size;
		struct iovec one;
		int niov = 0, w;

		hmb_consumer_counts(d->c, &n0);
		if (spans) {
			/* One copy: write the checked records from the ring. */
			r = hmb_consumer_spans(d->c, d->iov, IOV_MAX, d->o.batch,
					       &niov, &len, &err);
		} else {
			r = hmb_consumer_read(d->c, d->buf, d->o.batch, &len, &err);
			one = (struct iovec){ .iov_base = d->buf, .iov_len = len };
		}
		d->copy_next = false;
		if (len) {
			w = output_write(d, spans ? d->iov : &one, spans ? niov : 1,
					 len);
			if (w) {
				d->exit_code = w == -2 ? EXIT_GONE : EXIT_OUTPUT;
				d->exit_reason = w == -2 ? "ring gone" : "output failed";
				return -1;
			}
			if (spans) {
				struct hmb_error verr;

				if (hmb_consumer_verify(d->c, &verr)) {
					/*
					 * The device rewrote a header we had
					 * checked: what we wrote may not be
					 * what we checked.  Drop it and read
					 * the batch again from a private copy
					 * (format.md 9.5).
					 */
					d->st.ring_changed++;
					log_msg(LOG_WARN, "ring changed under the write: %s; writing that batch again from a checked copy",
						verr.msg);
					if (output_cut(d, start)) {
						d->exit_code = EXIT_OUTPUT;
						d->exit_reason = "output failed";
						return -1;
					}
					d->copy_next = true;
					continue;
				}
			}
			if (d->o.fsync == FSYNC_BATCH && output_sync(d)) {
				d->exit_code = EXIT_OUTPUT;
				d->exit_reason = "output failed";
				return -1;
			}
			hmb_consumer_counts(d->c, &n1);
			d->st.records += n1.records - n0.records;
			d->st.markers += n1.markers - n0.markers;
			d->st.ignored += n1.ignored - n0.ignored;
			d->st.bytes += len;
			d->st.batches++;
			got = 1;
			/* A throttled consumer holds its tail while it dawdles. */
			if (d->o.throttle)
				throttle(d);
			if (publish(d))
				return -1;
			output_sync_due(d);
		}
		if (r < 0) {
			ring_corrupt(d, &err);
			return -1;
		}
		if (!len)
			break;
		signals_read(d);
		if (d->stop || d->reopen)
			break;
	}
	return got;
}

static int reopen_output(struct daemon *d)
{
	d->reopen = false;
	if (!d->out_is_file && d->out_fd == STDOUT_FILENO) {
		log_msg(LOG_INFO, "SIGHUP: output is stdout, nothing to reopen");
		return 0;
	}
	output_close(d);
	if (output_open(d, true)) {
		d->exit_code = EXIT_ERR;
		d->exit_reason = "reopen failed";
		return -1;
	}
	d->st.reopens++;
	log_msg(LOG_INFO, "SIGHUP: reopened %s", d->o.output);
	return 0;
}

/*
 * Wait for data.  A ring file has no notification: spin briefly, then
 * sleep with a doubling back-off up to --idle-max-ms (near zero CPU when
 * idle).  The device wakes us with POLLIN; POLLPRI/POLLERR mean FROZEN or
 * trouble (flags are checked by the next drain), POLLHUP that it is gone.
 */
static int wait_data(struct daemon *d, unsigned int idle)
{
	struct pollfd pfd[2];
	double ms;
	int n;

	if (d->src.kind == SRC_DEVICE && !d->dev_err_backoff) {
		pfd[0].fd = d->sigfd;
		pfd[0].events = POLLIN;
		pfd[1].fd = d->src.fd;
		pfd[1].events = POLLIN | POLLPRI;
		n = poll(pfd, 2, d->o.fsync == FSYNC_INTERVAL &&
			 d->out_size != d->synced_size ?
			 (int)d->o.fsync_interval_ms : 1000);
		if (n < 0 && errno != EINTR) {
			log_msg(LOG_ERR, "poll %s: %s", d->src.path, strerror(errno));
			d->exit_code = EXIT_ERR;
			return -1;
		}
		if (n > 0 && (pfd[0].revents & POLLIN))
			signals_read(d);
		if (n > 0 && (pfd[1].revents & (POLLHUP | POLLNVAL))) {
			log_msg(LOG_ERR, "device %s gone (poll: %s)", d->src.path,
				pfd[1].revents & POLLHUP ? "POLLHUP" : "POLLNVAL");
			d->exit_code = EXIT_GONE;
			d->exit_reason = "device gone";
			return -1;
		}
		/* Level-triggered PRI/ERR: back off instead of spinning. */
		if (n > 0 && (pfd[1].revents & (POLLPRI | POLLERR)) &&
		    !(pfd[1].revents & POLLIN))
			d->dev_err_backoff = true;
		return 0;
	}
	if (idle < 16) {
		sched_yield();
		signals_read(d);
		return 0;
	}
	ms = 0.05 * (1u << (idle - 16 < 16 ? idle - 16 : 16));
	if (ms > d->o.idle_max_ms)
		ms = d->o.idle_max_ms;
	sleep_ms(d, ms);
	if (d->src.kind == SRC_DEVICE && idle > 32)
		d->dev_err_backoff = false;
	return 0;
}

/*
 * The ring's memory can vanish under us: the module zaps the mapping when
 * the device goes away, and a ring file can be truncated.  Any access then
 * raises SIGBUS; turn that into a clean "gone" exit instead of a crash.
 */
static sigjmp_buf bus_jmp;
static volatile sig_atomic_t bus_armed;
static const char *bus_lo, *bus_hi;

static void on_sigbus(int sig, siginfo_t *si, void *uc)
{
	(void)uc;
	if (bus_armed && (const char *)si->si_addr >= bus_lo &&
	    (const char *)si->si_addr < bus_hi) {
		bus_armed = 0;
		siglongjmp(bus_jmp, 1);
	}
	signal(sig, SIG_DFL);
	raise(sig);
}

static void sigbus_setup(struct daemon *d)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_sigbus;
	sa.sa_flags = SA_SIGINFO;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGBUS, &sa, NULL);
	bus_lo = d->src.map;
	bus_hi = bus_lo + d->src.map_len;
}

static int run(struct daemon *d)
{
	volatile unsigned int idle = 0;
	int r;

	if (sigsetjmp(bus_jmp, 1)) {
		log_msg(LOG_ERR, "%s %s gone: its memory is no longer there (SIGBUS reading the ring)",
			d->src.kind == SRC_DEVICE ? "device" : "ring file", d->src.path);
		d->exit_code = EXIT_GONE;
		d->exit_reason = "ring gone";
		return -1;
	}
	bus_armed = 1;
	for (;;) {
		r = drain(d);
		if (r < 0)
			return -1;
		output_sync_due(d);
		if (d->stop)
			return 0;
		if (d->reopen && reopen_output(d))
			return -1;
		/* --once: what the first look at head found, and no more. */
		if (d->o.once)
			return 0;
		if (r == 2) {
			/*
			 * Below the watermark: let it fill a little, but look
			 * again within --idle-max-ms so that a FROZEN or
			 * OVERFLOWED flag (drain now) is seen as promptly as
			 * when idle, whatever --max-delay-us says.
			 */
			sleep_ms(d, hold_sleep_ms(d));
			idle = 0;
			continue;
		}
		if (r > 0) {
			idle = 0;
			d->dev_err_backoff = false;
			continue;
		}
		if (wait_data(d, idle))
			return -1;
		idle = idle + 1;
		if (d->stop)
			return 0;
	}
}

/* -------------------------------------------------------------- summary */

static void summary(struct daemon *d)
{
	double el = now_s() - d->st.t0;
	struct stats *s = &d->st;
	FILE *f;

	log_msg(LOG_INFO, "summary: %" PRIu64 " records, %" PRIu64 " markers, %" PRIu64
		" ignored, %" PRIu64 " bytes in %" PRIu64 " batches, %.1f MB/s; "
		"flag events: %" PRIu64 " overflow, %" PRIu64 " frozen, %" PRIu64
		" unknown; %" PRIu64 " re-inits, %" PRIu64 " reopens, %" PRIu64
		" output errors (%" PRIu64 " retries); %.3f s; exit %d (%s)",
		s->records, s->markers, s->ignored, s->bytes, s->batches,
		el > 0 ? s->bytes / el / 1e6 : 0, s->overflow_events,
		s->frozen_events, s->unknown_flag_events, s->reinits, s->reopens,
		s->output_errors, s->output_retries, el, d->exit_code,
		d->exit_reason);
	if (!d->o.stats_json)
		return;
	{
		/* As the dump: never through a symbolic link, our mode. */
		int fd = open(d->o.stats_json, O_WRONLY | O_CREAT | O_TRUNC |
			      O_NOFOLLOW | O_CLOEXEC, d->o.file_mode);

		f = fd >= 0 ? fdopen(fd, "w") : NULL;
		if (fd >= 0 && !f)
			close(fd);
	}
	if (!f) {
		log_msg(LOG_ERR, "cannot write %s: %s", d->o.stats_json, strerror(errno));
		return;
	}
	fprintf(f, "{\"records\":%" PRIu64 ",\"markers\":%" PRIu64 ",\"ignored\":%" PRIu64
		",\"bytes\":%" PRIu64 ",\"batches\":%" PRIu64
		",\"overflow_events\":%" PRIu64 ",\"frozen_events\":%" PRIu64
		",\"unknown_flag_events\":%" PRIu64 ",\"reinits\":%" PRIu64
		",\"reopens\":%" PRIu64 ",\"output_errors\":%" PRIu64
		",\"output_retries\":%" PRIu64 ",\"fsyncs\":%" PRIu64
		",\"ring_changed\":%" PRIu64
		",\"tail\":%" PRIu64
		",\"elapsed_s\":%.6f,\"exit_code\":%d,\"exit_reason\":\"%s\"}\n",
		s->records, s->markers, s->ignored, s->bytes, s->batches,
		s->overflow_events, s->frozen_events, s->unknown_flag_events,
		s->reinits, s->reopens, s->output_errors, s->output_retries,
		s->fsyncs, s->ring_changed, d->c ? hmb_consumer_cursor(d->c) : 0,
		el, d->exit_code,
		d->exit_reason);
	if (fclose(f))
		log_msg(LOG_ERR, "cannot write %s: %s", d->o.stats_json, strerror(errno));
}

int main(int argc, char **argv)
{
	static struct daemon dd;
	struct daemon *d = &dd;
	struct hmb_error err;
	void *pub_ctx;
	int r, ex;

	d->out_fd = -1;
	d->sigfd = -1;
	d->exit_reason = "ok";
	parse_opts(&d->o, argc, argv);
	d->st.t0 = now_s();
	if (signals_setup(d))
		return EXIT_ERR;
	if (source_open(&d->src, d->o.kind, d->o.source, &ex))
		return ex;
	pub_ctx = d->src.kind == SRC_DEVICE ? (void *)&d->src : d->src.map;
	r = hmb_consumer_open(&d->c, d->src.map, d->src.map_len,
			      source_publish_fn(&d->src), pub_ctx, &err);
	if (r) {
		log_msg(LOG_ERR, "cannot attach to ring %s: %s", d->src.path, err.msg);
		source_close(&d->src);
		return r == HMB_E_RING_VERSION || r == HMB_E_RING_MAGIC ? EXIT_VERSION :
		       EXIT_ERR;
	}
	d->buf = malloc(d->o.batch);
	if (!d->buf) {
		log_msg(LOG_ERR, "cannot allocate a %zu-byte batch buffer", d->o.batch);
		return EXIT_ERR;
	}
	if (output_open(d, false))
		return EXIT_ERR;
	d->flags = 0;
	d->published = hmb_consumer_cursor(d->c);
	sigbus_setup(d);
	log_msg(LOG_INFO, "draining %s (ring %u bytes, tail %" PRIu64 ") into %s",
		d->src.path, d->src.ring_size, hmb_consumer_cursor(d->c),
		d->o.output);

	run(d);
	bus_armed = 0;
	if (d->stop && d->exit_code == EXIT_OK)
		d->exit_reason = d->stop_sig == SIGINT ? "SIGINT" : "SIGTERM";
	output_close(d);
	summary(d);
	hmb_consumer_close(d->c);
	source_close(&d->src);
	free(d->buf);
	return d->exit_code;
}
