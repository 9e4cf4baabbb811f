// SPDX-License-Identifier: Apache-2.0
/*
 * hmb-fwsim - SSD firmware trace simulator.
 *
 * Produces synthetic trace records into a file-backed HMB trace ring (for
 * example /dev/shm/NAME) by the v1 producer rules, through libhmbtrace's
 * producer only, so that hmb-trace-daemon can drain it exactly as it drains
 * the device.  Fault modes exercise the consumer's error paths.  At exit it
 * says what it produced and dropped, so tests can compare with what arrived.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <time.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include <hmbtrace.h>
#include <hmbtrace_util.h>
#include "gen.h"
#include "qemutrace.h"

#define PROG "hmb-fwsim"
#define MAX_DROP_RANGES 64
#define LOG_BUF_SIZE (1u << 20)
#define FREEZE_MIN_S 0.5	/* FROZEN stays visible at least this long */

enum { EXIT_OK = 0, EXIT_ERR = 1, EXIT_USAGE = 2, EXIT_STALLED = 3 };

struct opts {
	const char *ring_file;
	uint64_t ring_size;
	uint64_t count;		/* 0: unlimited (until --duration or signal) */
	double duration;
	double rate;		/* records/s, 0 = unthrottled */
	const char *payload;
	const char *opcodes;
	unsigned int cpus;
	uint64_t burst;
	uint64_t seed;
	bool mode_wait;
	uint64_t freeze_after;	/* 0: never */
	bool reinit;
	double freeze_hold;
	bool corrupt;
	uint32_t corrupt_seq;
	bool version2;
	bool attach;
	bool init_only;
	bool have_first_seq;
	uint32_t first_seq;
	uint64_t start_cursor;	/* head = tail at init (tests near 2^64) */
	const char *log;
	bool json;
	bool wait_drained;
	double wait_timeout;
	bool quiet;
	struct qt_opts qt;	/* --from-qemu-trace and its options */
};

struct drop_range {
	uint32_t first, last;
};

struct sim {
	struct opts o;
	struct gen gen;
	struct hmb_producer p;
	uint8_t *map;
	size_t map_len;
	int log_fd;
	uint8_t *log_buf;
	size_t log_len;
	uint64_t log_off;	/* bytes of the log already written + buffered */
	/* accounting over the whole run (all epochs) */
	uint64_t created;	/* seq numbers used: produced + dropped */
	uint64_t produced, bytes, dropped, markers, implicit_wraps;
	uint64_t first_seq, last_seq;
	bool any_seq;
	struct drop_range drops[MAX_DROP_RANGES];
	unsigned int ndrops;
	uint64_t drop_ranges;
	uint64_t trailing_drops;	/* drops after the last written record */
	uint64_t wait_events;	/* times the producer had to wait (wait mode) */
	bool frozen;
	uint64_t reinits;
	uint64_t unread_at_reinit;
	bool corrupted;
	uint64_t corrupt_cursor, corrupt_file_off, corrupt_log_off;
	uint64_t ts_last, ts_calls;	/* firmware clock */
	bool stalled;
	bool drained;
	bool interrupted;
	double elapsed;
};

static volatile sig_atomic_t stop_signal;

static void on_signal(int sig)
{
	stop_signal = sig;
}

static void die(int code, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, PROG ": ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(code);
}

static void sleep_s(double s)
{
	struct timespec ts;

	if (s <= 0)
		return;
	ts.tv_sec = (time_t)s;
	ts.tv_nsec = (long)((s - ts.tv_sec) * 1e9);
	nanosleep(&ts, NULL);
}

static void usage(FILE *f)
{
	fprintf(f,
"Usage: " PROG " --ring-file PATH [OPTIONS]\n"
"\n"
"Simulate SSD firmware writing trace records into a file-backed HMB trace\n"
"ring (v1 format) so that hmb-trace-daemon can drain it.\n"
"\n"
"Ring:\n"
"  -r, --ring-file PATH     ring file to create (or attach to); e.g. /dev/shm/hmb0\n"
"  -s, --ring-size BYTES    record area size, a power of two (default 4M;\n"
"                           suffixes K, M, G)\n"
"      --attach             produce into an existing ring without re-initialising\n"
"      --init-only          create and initialise the ring, then exit\n"
"      --first-seq S        seq of the first record (default 0)\n"
"      --start-cursor C     head and tail of the new ring start at byte\n"
"                           counter C (a multiple of 8), e.g. 2^64 - 4096 to\n"
"                           test the consumers' cursor arithmetic (default 0)\n"
"Load:\n"
"  -n, --count N            records to create (produced + dropped); 0 = no limit\n"
"  -d, --duration SECS      stop after SECS seconds\n"
"  -R, --rate R             records per second (default 0 = unthrottled)\n"
"  -b, --burst N            records emitted back to back before head is\n"
"                           published and the rate is checked (default 1)\n"
"  -p, --payload DIST       fixed:N | uniform:A-B | mix:AxW,BxW,... (payload\n"
"                           bytes x weight; default mix:16x40,64x40,512x15,4064x5)\n"
"      --opcodes MIX        OP[:W],... opcode mix (default 1:40,2:40,3:10,4:10)\n"
"      --cpus N             firmware cores, cpu ids 0..N-1 (default 4)\n"
"      --seed S             seed; payload, length, opcode and cpu of a record are\n"
"                           a function of (seed, seq) (default 1)\n"
"  -m, --mode drop|wait     ring full: drop the record and set OVERFLOWED\n"
"                           (firmware rule, default) or wait for space\n"
"      --wait-timeout SECS  give up when the consumer makes no room for SECS\n"
"                           (wait mode and --wait-drained; default 30)\n"
"      --wait-drained       at the end, wait until the consumer has read all\n"
"Faults:\n"
"      --freeze-after N     after N records set FROZEN and stop producing\n"
"      --reinit-after-freeze  then re-initialise the ring (head = tail = 0,\n"
"                           FROZEN cleared last, seq restarts) and carry on\n"
"      --freeze-hold SECS   wait up to SECS for the consumer to drain before\n"
"                           re-initialising (default 2)\n"
"      --corrupt-seq S      overwrite the magic of record S after writing it\n"
"      --version2           write a version-2 ring header\n"
"%s"
"Output:\n"
"      --log FILE           write every record written to the ring, wrap\n"
"                           markers included, as a dump file (what a\n"
"                           lossless consumer must deliver, byte for byte;\n"
"                           also with --from-qemu-trace)\n"
"      --json               final report as JSON on stdout (default: text)\n"
"  -q, --quiet              no report\n"
"  -h, --help               this help\n"
"  -V, --version            print the version and exit\n"
"\n"
"Examples:\n"
"  " PROG " -r /dev/shm/hmb0 -n 1000000 -p mix:64x90,512x10 --json\n"
"  " PROG " -r /dev/shm/hmb0 --init-only && hmb-trace-daemon --ring-file /dev/shm/hmb0 -o t.bin &\n"
"  " PROG " -r /dev/shm/hmb0 --attach -n 10000000 --mode wait --wait-drained --log sim.bin\n"
"  " PROG " -r /dev/shm/hmb0 -R 200000 -d 10 -p uniform:0-4064 --cpus 8\n"
"  " PROG " -r /dev/shm/hmb0 -n 5000 --corrupt-seq 4000\n"
"  " PROG " -r /dev/shm/hmb0 --from-qemu-trace - --clock-drift 50 --bg-rate 20 --cmd-log fw.log\n"
"\n"
"Exit status: 0 done, 1 error, 2 usage, 3 consumer stalled (wait mode or\n"
"--wait-drained timed out).\n", qt_usage());
}

/* A count or size option (k, M, G suffixes), or a usage error. */
static uint64_t parse_size(const char *s, const char *what)
{
	uint64_t v;

	if (hmb_parse_u64(s, HMB_NUM_SIZE, 0, UINT64_MAX, &v))
		hmb_usage_exit(PROG, NULL, "bad %s '%s'", what, s);
	return v;
}

/* A non-negative number option, or a usage error. */
static double parse_double(const char *s, const char *what)
{
	double v;

	if (hmb_parse_double(s, 0, 1e300, &v))
		hmb_usage_exit(PROG, NULL, "bad %s '%s'", what, s);
	return v;
}

enum {
	O_ATTACH = 256, O_INIT_ONLY, O_FIRST_SEQ, O_OPCODES, O_CPUS, O_SEED,
	O_WAIT_TIMEOUT, O_WAIT_DRAINED, O_FREEZE_AFTER, O_REINIT, O_FREEZE_HOLD,
	O_CORRUPT_SEQ, O_VERSION2, O_LOG, O_JSON, O_START_CURSOR,
};

static const struct option long_opts[] = {
	{ "ring-file", required_argument, NULL, 'r' },
	{ "ring-size", required_argument, NULL, 's' },
	{ "attach", no_argument, NULL, O_ATTACH },
	{ "init-only", no_argument, NULL, O_INIT_ONLY },
	{ "first-seq", required_argument, NULL, O_FIRST_SEQ },
	{ "start-cursor", required_argument, NULL, O_START_CURSOR },
	{ "count", required_argument, NULL, 'n' },
	{ "duration", required_argument, NULL, 'd' },
	{ "rate", required_argument, NULL, 'R' },
	{ "burst", required_argument, NULL, 'b' },
	{ "payload", required_argument, NULL, 'p' },
	{ "opcodes", required_argument, NULL, O_OPCODES },
	{ "cpus", required_argument, NULL, O_CPUS },
	{ "seed", required_argument, NULL, O_SEED },
	{ "mode", required_argument, NULL, 'm' },
	{ "wait-timeout", required_argument, NULL, O_WAIT_TIMEOUT },
	{ "wait-drained", no_argument, NULL, O_WAIT_DRAINED },
	{ "freeze-after", required_argument, NULL, O_FREEZE_AFTER },
	{ "reinit-after-freeze", no_argument, NULL, O_REINIT },
	{ "freeze-hold", required_argument, NULL, O_FREEZE_HOLD },
	{ "corrupt-seq", required_argument, NULL, O_CORRUPT_SEQ },
	{ "version2", no_argument, NULL, O_VERSION2 },
	{ "log", required_argument, NULL, O_LOG },
	{ "json", no_argument, NULL, O_JSON },
	{ "quiet", no_argument, NULL, 'q' },
	{ "help", no_argument, NULL, 'h' },
	{ "version", no_argument, NULL, 'V' },
	QT_LONG_OPTIONS,
	{ NULL, 0, NULL, 0 },
};

static void parse_opts(struct sim *s, int argc, char **argv)
{
	struct opts *o = &s->o;
	char msg[256];
	uint64_t v;
	int c;

	qt_defaults(&o->qt);
	o->ring_size = 4u << 20;
	o->payload = "mix:16x40,64x40,512x15,4064x5";
	o->opcodes = "1:40,2:40,3:10,4:10";
	o->cpus = 4;
	o->burst = 1;
	o->seed = 1;
	o->freeze_hold = 2;
	o->wait_timeout = 30;
	opterr = 0;

	while ((c = getopt_long(argc, argv, ":r:s:n:d:R:b:p:m:qhV", long_opts,
				NULL)) != -1) {
		switch (c) {
		case 'r': o->ring_file = optarg; break;
		case 's': o->ring_size = parse_size(optarg, "ring size"); break;
		case O_ATTACH: o->attach = true; break;
		case O_INIT_ONLY: o->init_only = true; break;
		case O_FIRST_SEQ:
			v = parse_size(optarg, "first seq");
			if (v > UINT32_MAX)
				hmb_usage_exit(PROG, NULL,
					       "--first-seq must fit in 32 bits");
			o->first_seq = (uint32_t)v;
			o->have_first_seq = true;
			break;
		case O_START_CURSOR:
			o->start_cursor = parse_size(optarg, "start cursor");
			if (o->start_cursor & (HMB_RECORD_ALIGN - 1))
				hmb_usage_exit(PROG, NULL,
					       "--start-cursor must be a multiple of 8");
			break;
		case 'n': o->count = parse_size(optarg, "count"); break;
		case 'd': o->duration = parse_double(optarg, "duration"); break;
		case 'R': o->rate = parse_double(optarg, "rate"); break;
		case 'b':
			o->burst = parse_size(optarg, "burst");
			if (!o->burst)
				hmb_usage_exit(PROG, NULL,
					       "--burst must be at least 1");
			break;
		case 'p': o->payload = optarg; break;
		case O_OPCODES: o->opcodes = optarg; break;
		case O_CPUS:
			v = parse_size(optarg, "cpu count");
			if (v < 1 || v > 256)
				hmb_usage_exit(PROG, NULL,
					       "--cpus must be 1..256");
			o->cpus = (unsigned int)v;
			break;
		case O_SEED: o->seed = parse_size(optarg, "seed"); break;
		case 'm':
			if (!strcmp(optarg, "drop"))
				o->mode_wait = false;
			else if (!strcmp(optarg, "wait"))
				o->mode_wait = true;
			else
				hmb_usage_exit(PROG, NULL,
					       "--mode must be drop or wait, not '%s'",
					       optarg);
			break;
		case O_WAIT_TIMEOUT:
			o->wait_timeout = parse_double(optarg, "wait timeout");
			break;
		case O_WAIT_DRAINED: o->wait_drained = true; break;
		case O_FREEZE_AFTER:
			o->freeze_after = parse_size(optarg, "freeze count");
			if (!o->freeze_after)
				hmb_usage_exit(PROG, NULL,
					       "--freeze-after must be at least 1");
			break;
		case O_REINIT: o->reinit = true; break;
		case O_FREEZE_HOLD:
			o->freeze_hold = parse_double(optarg, "freeze hold");
			break;
		case O_CORRUPT_SEQ:
			v = parse_size(optarg, "corrupt seq");
			if (v > UINT32_MAX)
				hmb_usage_exit(PROG, NULL,
					       "--corrupt-seq must fit in 32 bits");
			o->corrupt = true;
			o->corrupt_seq = (uint32_t)v;
			break;
		case O_VERSION2: o->version2 = true; break;
		case O_LOG: o->log = optarg; break;
		case O_JSON: o->json = true; break;
		case 'q': o->quiet = true; break;
		case QT_OPT_FIRST ... QT_OPT_LAST:
			if (qt_opt(&o->qt, c, optarg, msg, sizeof(msg)))
				hmb_usage_exit(PROG, NULL, "%s", msg);
			break;
		case 'h': usage(stdout); exit(EXIT_OK);
		case 'V': printf("hmb-fwsim %s\n", HMB_VERSION); exit(EXIT_OK);
		default:
			hmb_usage_getopt(PROG, NULL, c, argv);
			exit(EXIT_USAGE);
		}
	}
	if (optind < argc)
		hmb_usage_exit(PROG, NULL,
			       "unexpected argument '%s'", argv[optind]);
	if (!o->ring_file)
		hmb_usage_exit(PROG, NULL, "--ring-file is required");
	if (o->ring_size < HMB_RING_MIN_SIZE || o->ring_size > HMB_RING_MAX_SIZE ||
	    (o->ring_size & (o->ring_size - 1)))
		hmb_usage_exit(PROG, NULL,
			       "--ring-size %" PRIu64 " is not a power of two in %u..%u",
			       o->ring_size, HMB_RING_MIN_SIZE,
			       HMB_RING_MAX_SIZE);
	if (o->reinit && !o->freeze_after)
		hmb_usage_exit(PROG, NULL,
			       "--reinit-after-freeze needs --freeze-after N");
	if (o->attach && (o->init_only || o->version2))
		hmb_usage_exit(PROG, NULL,
			       "--attach cannot be combined with --init-only or --version2");
	if (gen_parse_payload(&s->gen.payload, o->payload, msg, sizeof(msg)))
		hmb_usage_exit(PROG, NULL, "--payload: %s", msg);
	if (gen_parse_opcodes(&s->gen.opcodes, o->opcodes, msg, sizeof(msg)))
		hmb_usage_exit(PROG, NULL, "--opcodes: %s", msg);
	s->gen.cpus = o->cpus;
}

/* ------------------------------------------------------------- ring file */

static void ring_map(struct sim *s)
{
	struct opts *o = &s->o;
	struct hmb_error err;
	struct stat st;
	size_t len;
	int fd;

	if (o->attach) {
		fd = open(o->ring_file, O_RDWR | O_CLOEXEC);
		if (fd < 0)
			die(EXIT_ERR, "cannot open ring file %s: %s", o->ring_file,
			    strerror(errno));
		if (fstat(fd, &st))
			die(EXIT_ERR, "%s: fstat: %s", o->ring_file, strerror(errno));
		if ((uint64_t)st.st_size < HMB_RING_HDR_SIZE)
			die(EXIT_ERR, "%s: %lld bytes, too short for a ring header",
			    o->ring_file, (long long)st.st_size);
		len = (size_t)st.st_size;
	} else {
		len = HMB_RECORD_AREA_OFF + o->ring_size;
		fd = open(o->ring_file, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
		if (fd < 0)
			die(EXIT_ERR, "cannot create ring file %s: %s", o->ring_file,
			    strerror(errno));
		/* Start from zeroes so that no stale record survives. */
		if (ftruncate(fd, 0) || ftruncate(fd, (off_t)len))
			die(EXIT_ERR, "%s: cannot size to %zu bytes: %s", o->ring_file,
			    len, strerror(errno));
	}
	s->map = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (s->map == MAP_FAILED)
		die(EXIT_ERR, "%s: mmap of %zu bytes: %s", o->ring_file, len,
		    strerror(errno));
	close(fd);
	s->map_len = len;

	if (!o->attach) {
		if (hmb_producer_init(&s->p, s->map, len, (uint32_t)o->ring_size,
				      o->first_seq, &err))
			die(EXIT_ERR, "%s: producer init: %s", o->ring_file, err.msg);
		if (o->version2)
			((volatile struct hmb_ring_hdr *)s->map)->version = 2;
		if (o->start_cursor) {
			volatile struct hmb_ring_hdr *h = (volatile struct hmb_ring_hdr *)s->map;

			/* Cursors are byte counters modulo 2^64: start anywhere. */
			s->p.head = s->p.tail_cache = o->start_cursor;
			h->tail = o->start_cursor;
			__atomic_store_n(&h->head, o->start_cursor, __ATOMIC_RELEASE);
		}
		return;
	}

	/* Attach: take the cursors from the header as they are. */
	if (hmb_ring_hdr_check((const struct hmb_ring_hdr *)s->map, len, &err))
		die(EXIT_ERR, "%s: cannot attach: %s", o->ring_file, err.msg);
	{
		volatile struct hmb_ring_hdr *h = (volatile struct hmb_ring_hdr *)s->map;

		memset(&s->p, 0, sizeof(s->p));
		s->p.hdr = h;
		s->p.area = s->map + HMB_RECORD_AREA_OFF;
		s->p.ring_size = h->ring_size;
		s->p.head = __atomic_load_n(&h->head, __ATOMIC_ACQUIRE);
		s->p.tail_cache = __atomic_load_n(&h->tail, __ATOMIC_ACQUIRE);
		s->p.next_seq = o->first_seq;
		s->p.first_seq = o->first_seq;
		if (s->p.head - s->p.tail_cache > s->p.ring_size)
			die(EXIT_ERR, "%s: cannot attach: head %" PRIu64 " tail %" PRIu64
			    " are more than ring_size apart", o->ring_file,
			    s->p.head, s->p.tail_cache);
		o->ring_size = s->p.ring_size;
	}
}

static uint64_t ring_tail(struct sim *s)
{
	return __atomic_load_n(&s->p.hdr->tail, __ATOMIC_ACQUIRE);
}

/* ------------------------------------------------------------------- log */

static void log_flush(struct sim *s)
{
	size_t off = 0;
	ssize_t n;

	while (off < s->log_len) {
		n = write(s->log_fd, s->log_buf + off, s->log_len - off);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			die(EXIT_ERR, "cannot write log %s: %s", s->o.log, strerror(errno));
		}
		off += (size_t)n;
	}
	s->log_len = 0;
}

/* Append the bytes at ring cursor @cur, @len long, to the log. */
static void log_ring_bytes(struct sim *s, uint64_t cur, uint32_t len)
{
	uint32_t off = (uint32_t)(cur & (s->p.ring_size - 1));

	if (s->log_len + len > LOG_BUF_SIZE)
		log_flush(s);
	memcpy(s->log_buf + s->log_len, s->p.area + off, len);
	s->log_len += len;
	s->log_off += len;
}

/* ------------------------------------------------------------ accounting */

static void note_seq(struct sim *s, uint32_t seq)
{
	if (!s->any_seq) {
		s->first_seq = seq;
		s->any_seq = true;
	}
	s->last_seq = seq;
}

static void note_drop(struct sim *s, uint32_t seq)
{
	struct drop_range *r = s->ndrops ? &s->drops[s->ndrops - 1] : NULL;

	s->dropped++;
	s->trailing_drops++;
	if (r && r->last + 1 == seq) {
		r->last = seq;
		return;
	}
	s->drop_ranges++;
	if (s->ndrops < MAX_DROP_RANGES) {
		s->drops[s->ndrops].first = seq;
		s->drops[s->ndrops].last = seq;
		s->ndrops++;
	}
}

/* Fold the producer's counters of the current epoch into the run totals. */
static void fold_counts(struct sim *s)
{
	s->produced += s->p.produced;
	s->bytes += s->p.bytes;
	s->markers += s->p.markers;
	s->implicit_wraps += s->p.implicit_wraps;
	s->p.produced = s->p.bytes = s->p.markers = s->p.implicit_wraps = 0;
	s->p.dropped = 0;
}

/* --------------------------------------------------------------- waiting */

struct backoff {
	unsigned int n;
};

static void backoff_wait(struct backoff *b)
{
	if (b->n < 64)
		__builtin_ia32_pause();
	else if (b->n < 128)
		sched_yield();
	else
		sleep_s(b->n < 256 ? 20e-6 : 200e-6);
	b->n++;
}

/* Wait until the consumer has read everything.  true if drained. */
static bool wait_drained(struct sim *s, double timeout)
{
	struct backoff b = { 0 };
	double deadline = hmb_now_s(CLOCK_MONOTONIC) + timeout;

	while (ring_tail(s) != s->p.head) {
		if (stop_signal || hmb_now_s(CLOCK_MONOTONIC) > deadline)
			return false;
		backoff_wait(&b);
	}
	return true;
}

/* -------------------------------------------------------------- faults */

static void freeze(struct sim *s)
{
	hmb_producer_publish(&s->p);
	hmb_producer_set_flags(&s->p, HMB_RING_FLAG_FROZEN, 0);
	s->frozen = true;
}

/*
 * Re-initialise a frozen ring as firmware does after a controller reset
 * (hmb_producer_reinit: FROZEN set, header rewritten with head = tail = 0,
 * FROZEN cleared last).  Records the consumer has not read by then are
 * gone; their bytes are reported.
 */
static void reinit_ring(struct sim *s)
{
	s->unread_at_reinit += s->p.head - ring_tail(s);
	hmb_producer_reinit(&s->p, s->o.first_seq);
	s->frozen = false;
	s->reinits++;
}

/* ----------------------------------------------------------------- run */

/* Log a wrap marker the producer wrote at @old_head, if it wrote one. */
static void log_marker(struct sim *s, uint64_t old_head, uint64_t old_markers)
{
	if (s->o.log && s->p.markers != old_markers)
		log_ring_bytes(s, old_head, HMB_RECORD_HDR_SIZE);
}

/* Emit the next record; returns false when production must stop. */
static bool emit_one(struct sim *s, uint8_t *pbuf, int defer)
{
	struct gen_rec gr;
	struct hmb_event ev;
	uint32_t seq = s->p.next_seq;
	uint64_t old_head, old_markers;
	uint64_t rec_cur;
	uint32_t recsz;
	struct backoff b = { 0 };
	double deadline = 0;
	int r;

	gen_record(&s->gen, seq, pbuf, &gr);
	/*
	 * Firmware clock: strictly increasing.  Unthrottled, reading the clock
	 * for every record would cost more than producing it, so it is read
	 * every 64 records and advanced by 1 ns in between.
	 */
	if (s->o.rate || (s->ts_calls++ & 63) == 0) {
		uint64_t t = hmb_now_ns(CLOCK_MONOTONIC);

		s->ts_last = t > s->ts_last ? t : s->ts_last + 1;
	} else {
		s->ts_last++;
	}
	ev.ts_ns = s->ts_last;
	ev.opcode = gr.opcode;
	ev.cpu = gr.cpu;
	ev.flags = 0;
	ev.payload_len = gr.payload_len;
	ev.payload = gr.payload;
	recsz = HMB_RECORD_SIZE(gr.payload_len);
	if (s->o.corrupt && seq == s->o.corrupt_seq)
		defer = HMB_EMIT_DEFER;	/* corrupt before head shows it */

	for (;;) {
		old_head = s->p.head;
		old_markers = s->p.markers;
		r = hmb_producer_emit(&s->p, &ev,
				      (s->o.mode_wait ? HMB_EMIT_TRY : HMB_EMIT_DROP) | defer);
		/* A marker may be written even when no record fits yet. */
		log_marker(s, old_head, old_markers);
		if (r != HMB_EMIT_FULL)
			break;
		/* Wait mode: make what is written visible and wait for room. */
		if (b.n == 0) {
			hmb_producer_publish(&s->p);
			s->wait_events++;
			deadline = hmb_now_s(CLOCK_MONOTONIC) +
				   s->o.wait_timeout;
		}
		if (stop_signal)
			return false;
		if ((b.n & 63) == 63 && hmb_now_s(CLOCK_MONOTONIC) > deadline) {
			s->stalled = true;
			return false;
		}
		backoff_wait(&b);
	}
	if (r < 0)
		die(EXIT_ERR, "producer refused record seq %" PRIu32 " (payload %u): %s",
		    seq, gr.payload_len, hmb_strerror(r));
	s->created++;
	note_seq(s, seq);
	if (r == HMB_EMIT_DROPPED) {
		note_drop(s, seq);
		return true;
	}
	s->trailing_drops = 0;
	rec_cur = s->p.head - recsz;
	if (s->o.corrupt && seq == s->o.corrupt_seq) {
		uint32_t off = (uint32_t)(rec_cur & (s->p.ring_size - 1));
		uint32_t bad = 0xdeadbeef;

		/* Before head is published, so the consumer sees it bad. */
		memcpy(s->p.area + off, &bad, sizeof(bad));
		s->corrupted = true;
		s->corrupt_cursor = rec_cur;
		s->corrupt_file_off = HMB_RECORD_AREA_OFF + off;
		s->corrupt_log_off = s->log_off;
		hmb_producer_publish(&s->p);
	}
	if (s->o.log)
		log_ring_bytes(s, rec_cur, recsz);
	return true;
}

static void run(struct sim *s)
{
	struct opts *o = &s->o;
	uint8_t *pbuf = malloc(HMB_RECORD_MAX_PAYLOAD);
	double t0 = hmb_now_s(CLOCK_MONOTONIC), t;
	double deadline = o->duration ? t0 + o->duration : 0;
	uint64_t n = 0, in_burst = 0;
	int defer = o->burst > 1 ? HMB_EMIT_DEFER : 0;

	if (!pbuf)
		die(EXIT_ERR, "out of memory");
	for (;;) {
		if (stop_signal) {
			s->interrupted = true;
			break;
		}
		if (o->freeze_after && s->created == o->freeze_after && !s->reinits &&
		    !s->frozen) {
			freeze(s);
			if (!o->reinit)
				break;
			/*
			 * Give the consumer the chance to read what is there,
			 * and keep FROZEN visible long enough for a consumer
			 * polling with back-off to notice it.
			 */
			t = hmb_now_s(CLOCK_MONOTONIC);
			wait_drained(s, o->freeze_hold);
			if (hmb_now_s(CLOCK_MONOTONIC) - t < FREEZE_MIN_S)
				sleep_s(FREEZE_MIN_S -
					(hmb_now_s(CLOCK_MONOTONIC) - t));
			reinit_ring(s);
		}
		if (o->count && s->created >= o->count)
			break;
		if (!emit_one(s, pbuf, defer))
			break;
		n++;
		if (++in_burst < o->burst)
			continue;
		in_burst = 0;
		if (defer)
			hmb_producer_publish(&s->p);
		if (deadline || o->rate) {
			t = hmb_now_s(CLOCK_MONOTONIC);
			if (deadline && t >= deadline)
				break;
			if (o->rate) {
				double due = t0 + n / o->rate;

				if (due > t)
					sleep_s(due - t);
			}
		}
	}
	if (defer && !s->frozen)
		hmb_producer_publish(&s->p);
	if (stop_signal)
		s->interrupted = true;
	if (o->wait_drained && !s->stalled && !s->interrupted) {
		s->drained = wait_drained(s, o->wait_timeout);
		if (!s->drained && !stop_signal)
			s->stalled = true;
	}
	s->elapsed = hmb_now_s(CLOCK_MONOTONIC) - t0;
	fold_counts(s);
	free(pbuf);
}

/* --------------------------------------------------------------- report */

static void json_drops(struct hmb_json *j, const struct sim *s)
{
	hmb_json_kv_u64(j, "drop_ranges", s->drop_ranges);
	hmb_json_key(j, "drops");
	hmb_json_arr(j);
	for (unsigned int i = 0; i < s->ndrops; i++) {
		hmb_json_arr(j);
		hmb_json_u64(j, s->drops[i].first);
		hmb_json_u64(j, s->drops[i].last);
		hmb_json_end_arr(j);
	}
	hmb_json_end_arr(j);
	hmb_json_kv_bool(j, "drops_truncated", s->drop_ranges > s->ndrops);
	hmb_json_kv_u64(j, "trailing_drops", s->trailing_drops);
}

/* --json: what was produced, as one JSON object. */
static void report_json(const struct sim *s, FILE *f, double rate,
			uint64_t head, uint64_t tail)
{
	struct hmb_outbuf ob;
	struct hmb_json j;

	if (hmb_ob_open_file(&ob, f, "<stdout>", 4096))
		die(1, "out of memory");
	hmb_json_init(&j, &ob);
	hmb_json_obj(&j);
	hmb_json_kv_str(&j, "ring_file", s->o.ring_file);
	hmb_json_kv_u64(&j, "ring_size", s->o.ring_size);
	hmb_json_kv_u64(&j, "seed", s->o.seed);
	hmb_json_kv_u64(&j, "created", s->created);
	hmb_json_kv_u64(&j, "produced", s->produced);
	hmb_json_kv_u64(&j, "bytes", s->bytes);
	hmb_json_kv_u64(&j, "dropped", s->dropped);
	hmb_json_kv_u64(&j, "markers", s->markers);
	hmb_json_kv_u64(&j, "implicit_wraps", s->implicit_wraps);
	hmb_json_kv_u64(&j, "log_bytes", s->log_off);
	hmb_json_key(&j, "first_seq");
	if (s->any_seq)
		hmb_json_u64(&j, s->first_seq);
	else
		hmb_json_null(&j);
	hmb_json_key(&j, "last_seq");
	if (s->any_seq)
		hmb_json_u64(&j, s->last_seq);
	else
		hmb_json_null(&j);
	json_drops(&j, s);
	hmb_json_kv_u64(&j, "wait_events", s->wait_events);
	hmb_json_kv_bool(&j, "frozen", s->frozen);
	hmb_json_kv_u64(&j, "reinits", s->reinits);
	hmb_json_kv_u64(&j, "unread_at_reinit_bytes", s->unread_at_reinit);
	if (s->corrupted) {
		hmb_json_key(&j, "corrupt");
		hmb_json_obj(&j);
		hmb_json_kv_u64(&j, "seq", s->o.corrupt_seq);
		hmb_json_kv_u64(&j, "cursor", s->corrupt_cursor);
		hmb_json_kv_u64(&j, "file_offset", s->corrupt_file_off);
		hmb_json_kv_u64(&j, "log_offset", s->corrupt_log_off);
		hmb_json_end(&j);
	}
	hmb_json_kv_u64(&j, "head", head);
	hmb_json_kv_u64(&j, "tail", tail);
	hmb_json_kv_bool(&j, "drained", head == tail);
	hmb_json_kv_bool(&j, "stalled", s->stalled);
	hmb_json_kv_bool(&j, "interrupted", s->interrupted);
	hmb_json_kv_dbl(&j, "elapsed_s", s->elapsed, 6);
	hmb_json_kv_dbl(&j, "rate_rps", rate, 1);
	hmb_json_kv_dbl(&j, "rate_bps", s->elapsed > 0 ? s->bytes / s->elapsed :
			0, 1);
	hmb_json_end(&j);
	hmb_json_nl(&j);
	hmb_ob_close(&ob);
}

static void report(struct sim *s)
{
	FILE *f = stdout;
	double rate = s->elapsed > 0 ? s->created / s->elapsed : 0;
	uint64_t head = s->p.head, tail = ring_tail(s);
	unsigned int i;

	if (s->o.quiet)
		return;
	if (s->o.json) {
		report_json(s, f, rate, head, tail);
		return;
	}
	fprintf(f, "ring      %s (%" PRIu64 " bytes), seed %" PRIu64 "\n",
		s->o.ring_file, s->o.ring_size, s->o.seed);
	fprintf(f, "records   %" PRIu64 " created, %" PRIu64 " written (%" PRIu64
		" bytes), %" PRIu64 " dropped by overflow\n",
		s->created, s->produced, s->bytes, s->dropped);
	if (s->any_seq)
		fprintf(f, "seq       %" PRIu64 "..%" PRIu64 "%s\n", s->first_seq,
			s->last_seq, s->reinits ? " (last epoch)" : "");
	if (s->dropped) {
		fprintf(f, "drops     %" PRIu64 " ranges:", s->drop_ranges);
		for (i = 0; i < s->ndrops && i < 8; i++)
			fprintf(f, " %" PRIu32 "-%" PRIu32, s->drops[i].first,
				s->drops[i].last);
		fprintf(f, "%s\n", s->drop_ranges > 8 ? " ..." : "");
		if (s->trailing_drops)
			fprintf(f, "          %" PRIu64 " of them after the last record written "
				"(no later record shows that gap)\n", s->trailing_drops);
	}
	fprintf(f, "wraps     %" PRIu64 " markers, %" PRIu64 " implicit\n",
		s->markers, s->implicit_wraps);
	if (s->frozen || s->reinits)
		fprintf(f, "faults    %s, %" PRIu64 " re-initialisations, %" PRIu64
			" unread bytes discarded\n", s->frozen ? "ring left FROZEN" :
			"frozen", s->reinits, s->unread_at_reinit);
	if (s->corrupted)
		fprintf(f, "corrupt   seq %" PRIu32 " at cursor %" PRIu64
			" (file offset %" PRIu64 ")\n", s->o.corrupt_seq,
			s->corrupt_cursor, s->corrupt_file_off);
	fprintf(f, "ring      head %" PRIu64 ", tail %" PRIu64 "%s%s\n", head, tail,
		head == tail ? " (drained)" : "",
		s->stalled ? ", consumer stalled" : "");
	fprintf(f, "time      %.3f s, %.0f records/s, %.1f MB/s%s\n", s->elapsed,
		rate, s->elapsed > 0 ? s->bytes / s->elapsed / 1e6 : 0,
		s->interrupted ? " (interrupted)" : "");
}

int main(int argc, char **argv)
{
	static struct sim sim;
	struct sim *s = &sim;
	struct sigaction sa;

	parse_opts(s, argc, argv);
	gen_init(&s->gen, s->o.seed);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);

	ring_map(s);
	if (s->o.init_only)
		return EXIT_OK;
	if (s->o.qt.input) {
		s->o.qt.dump = s->o.log;
		return qt_main(&s->p, &s->o.qt, &stop_signal, stdout);
	}
	if (s->o.log) {
		s->log_fd = open(s->o.log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC,
				 0644);
		if (s->log_fd < 0)
			die(EXIT_ERR, "cannot create log %s: %s", s->o.log,
			    strerror(errno));
		s->log_buf = malloc(LOG_BUF_SIZE);
		if (!s->log_buf)
			die(EXIT_ERR, "out of memory");
	}
	run(s);
	if (s->o.log) {
		log_flush(s);
		if (close(s->log_fd))
			die(EXIT_ERR, "cannot write log %s: %s", s->o.log, strerror(errno));
	}
	report(s);
	if (s->stalled) {
		fprintf(stderr, PROG ": consumer made no progress for %.1f s "
			"(head %" PRIu64 ", tail %" PRIu64 ")\n", s->o.wait_timeout,
			s->p.head, ring_tail(s));
		return EXIT_STALLED;
	}
	munmap(s->map, s->map_len);
	return EXIT_OK;
}
