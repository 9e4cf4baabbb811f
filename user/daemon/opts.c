// SPDX-License-Identifier: GPL-2.0
/*
 * opts.c - hmb-trace-daemon's usage and options (getopt_long, numbers by
 * libhmbtrace's parser).
 */
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "daemon.h"
#include "hmbtrace_util.h"

static void usage(FILE *f)
{
	fprintf(f,
"Usage: " PROG " (--device DEV | --ring-file PATH) -o FILE [OPTIONS]\n"
"       " PROG " (--device DEV | --ring-file PATH) --snapshot-on SIGUSR1\n"
"                        --snapshot-dir DIR [OPTIONS]\n"
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
"      --no-output-check    append to an existing FILE unchecked: neither\n"
"                           refused nor cut back (see below)\n"
"      --throttle BYTES/S   limit the drain rate by holding each batch's tail\n"
"                           back (testing: makes the ring overflow, widens\n"
"                           the write-to-publish window)\n"
"Flight recorder (instead of -o: records kept in memory, written on demand):\n"
"      --snapshot-on SIG    SIGUSR1 or SIGUSR2: on it, write the window as\n"
"                           DIR/SNAP-<UTC time>-<sig>/trace.bin (a dump)\n"
"                           and trace.bin.meta, and carry on draining\n"
"      --snapshot-dir DIR   where snapshots go (required with --snapshot-on)\n"
"      --window-mb N        keep the last N MiB of whole records, the oldest\n"
"                           evicted first (default 64, 1..16384)\n"
"      --max-snapshots N    write at most N snapshots (default 0: no limit)\n"
"      --holdoff SECONDS    at least this long between two snapshots\n"
"                           (default 10; 0: none)\n"
"                           A request neither allows is suppressed: logged\n"
"                           and counted (--stats-json)\n"
"Logging (stderr):\n"
"  -q, --quiet              warnings and errors only\n"
"  -v, --verbose            debug messages\n"
"      --log-format text|json  one JSON object per line with json\n"
"  -h, --help               this help\n"
"  -V, --version            print the version and exit\n"
"\n"
"An existing FILE is appended to.  It is scanned first: a record torn by a\n"
"daemon killed mid-write (it is still in the ring), or zero bytes after the\n"
"last whole record, are cut off; a FILE that is not a dump up to a record\n"
"boundary is refused (exit 7) and the ring left as it is.  Its FILE.meta\n"
"keeps its epoch lines and first clock anchors and gets one restart= line.\n"
"FILE, FILE.meta and FILE.meta.tmp are never opened through a symbolic\n"
"link; a FIFO, socket or directory there is refused (-o - for a pipe).\n"
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
"  SIG of --snapshot-on  drain the ring, then write a snapshot\n"
"\n"
"Exit status:\n"
"  0 stopped by a signal, or --once done     1 error (open, map, output)\n"
"  2 usage                                   3 ring corrupt: its cursors, or\n"
"  4 ring header refused (version > 1)         a record (the good prefix was\n"
"                                              written and published)\n"
"  5 device (or ring file) went away         6 stopped while the output was\n"
"  7 existing FILE not a dump: refused,        failing; data left in the ring\n"
"    nothing drained\n"
"\n"
"Examples:\n"
"  " PROG " --device /dev/nvme-hmb-trace0 -o /var/log/hmb/trace.bin\n"
"  " PROG " --ring-file /dev/shm/hmb0 -o trace.bin --stats-json stats.json\n"
"  " PROG " -r /dev/shm/hmb0 -o - --once | hmb-trace-analyze stats -\n"
"  kill -HUP $(pidof " PROG ")   # after moving trace.bin away\n"
"  " PROG " -d /dev/nvme-hmb-trace0 --snapshot-on SIGUSR1 --snapshot-dir /var/log/hmb\n");
}

/* --snapshot-on: SIGUSR1 or SIGUSR2, with or without "SIG", any case. */
static void parse_snap_sig(struct opts *o, const char *s)
{
	const char *n = strncasecmp(s, "SIG", 3) ? s : s + 3;

	if (!strcasecmp(n, "USR1")) {
		o->snap_sig = SIGUSR1;
		o->snap_name = "SIGUSR1";
	} else if (!strcasecmp(n, "USR2")) {
		o->snap_sig = SIGUSR2;
		o->snap_name = "SIGUSR2";
	} else {
		hmb_usage_exit(PROG, NULL, "--snapshot-on must be SIGUSR1 or SIGUSR2, not '%s'", s);
	}
}

/* The flight recorder's options against the rest. */
static void check_snap_opts(const struct opts *o, const char *fr_only)
{
	if (!o->snap_sig) {
		if (fr_only)
			hmb_usage_exit(PROG, NULL, "%s needs --snapshot-on", fr_only);
		if (!o->output)
			hmb_usage_exit(PROG, NULL, "-o FILE is required");
		return;
	}
	if (o->output)
		hmb_usage_exit(PROG, NULL, "-o and --snapshot-on exclude each other: a flight recorder writes snapshots only");
	if (o->once)
		hmb_usage_exit(PROG, NULL, "--once and --snapshot-on exclude each other");
	if (!o->snap_dir)
		hmb_usage_exit(PROG, NULL, "--snapshot-on needs --snapshot-dir DIR");
	if (o->batch > o->window)
		hmb_usage_exit(PROG, NULL, "--batch-bytes must not exceed --window-mb");
}

/* A count or size option (k, M, G suffixes), or a usage error. */
static uint64_t parse_num(const char *s, const char *what)
{
	uint64_t v;

	if (hmb_parse_u64(s, HMB_NUM_SIZE, 0, UINT64_MAX, &v))
		hmb_usage_exit(PROG, NULL, "bad %s '%s'", what, s);
	return v;
}

enum { O_ONCE = 256, O_STATS_JSON, O_LOG_FORMAT, O_IDLE_MAX, O_THROTTLE,
       O_NO_RECOVER, O_WATERMARK, O_MAX_DELAY, O_FILE_MODE, OPT_FSYNC,
       OPT_FSYNC_INTERVAL, O_WRITE_MODE, O_SNAP_ON, O_SNAP_DIR, O_WINDOW,
       O_MAX_SNAPS, O_HOLDOFF };

static const struct option long_opts[] = {
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
	{ "snapshot-on", required_argument, NULL, O_SNAP_ON },
	{ "snapshot-dir", required_argument, NULL, O_SNAP_DIR },
	{ "window-mb", required_argument, NULL, O_WINDOW },
	{ "max-snapshots", required_argument, NULL, O_MAX_SNAPS },
	{ "holdoff", required_argument, NULL, O_HOLDOFF },
	{ "quiet", no_argument, NULL, 'q' },
	{ "verbose", no_argument, NULL, 'v' },
	{ "log-format", required_argument, NULL, O_LOG_FORMAT },
	{ "help", no_argument, NULL, 'h' },
	{ "version", no_argument, NULL, 'V' },
	{ NULL, 0, NULL, 0 },
};

void parse_opts(struct opts *o, int argc, char **argv)
{
	const char *fr_only = NULL;
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
	o->window = (size_t)DEFAULT_WINDOW_MB << 20;
	o->holdoff_s = DEFAULT_HOLDOFF_S;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":d:r:o:b:qvhV", long_opts, NULL)) != -1) {
		switch (c) {
		case 'd': o->kind = SRC_DEVICE; o->source = optarg; nsrc++; break;
		case 'r': o->kind = SRC_RING_FILE; o->source = optarg; nsrc++; break;
		case 'o': o->output = optarg; break;
		case 'b':
			v = parse_num(optarg, "batch size");
			if (v < HMB_RECORD_MAX_SIZE || v > (1u << 30))
				hmb_usage_exit(PROG, NULL, "--batch-bytes must be between %d and 1G",
					       HMB_RECORD_MAX_SIZE);
			o->batch = (size_t)v;
			break;
		case O_ONCE: o->once = true; break;
		case O_STATS_JSON: o->stats_json = optarg; break;
		case O_IDLE_MAX:
			v = parse_num(optarg, "idle sleep");
			if (v < 1 || v > 1000)
				hmb_usage_exit(PROG, NULL, "--idle-max-ms must be 1..1000");
			o->idle_max_ms = (unsigned int)v;
			break;
		case O_NO_RECOVER: o->no_recover = true; break;
		case O_WATERMARK:
			v = parse_num(optarg, "watermark");
			if (v > (1u << 30))
				hmb_usage_exit(PROG, NULL, "--watermark must be at most 1G");
			o->watermark = (size_t)v;
			break;
		case O_MAX_DELAY:
			v = parse_num(optarg, "delay");
			if (v < 1 || v > 60000000)
				hmb_usage_exit(PROG, NULL, "--max-delay-us must be 1..60000000 (60 s)");
			o->max_delay_us = (unsigned int)v;
			break;
		case O_FILE_MODE: {
			const char *end;
			uint64_t m;

			if (hmb_strtou64(optarg, &end, 8, &m) || *end ||
			    m > 0777)
				hmb_usage_exit(PROG, NULL, "--file-mode must be octal permission bits, 0..0777 (e.g. 0640), not '%s'",
					       optarg);
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
				hmb_usage_exit(PROG, NULL, "--fsync must be none, batch or interval, not '%s'",
					       optarg);
			}
			break;
		case OPT_FSYNC_INTERVAL:
			v = parse_num(optarg, "fsync interval");
			if (v < 1 || v > 3600000)
				hmb_usage_exit(PROG, NULL, "--fsync-interval-ms must be 1..3600000 (1 h)");
			o->fsync_interval_ms = (unsigned int)v;
			break;
		case O_WRITE_MODE:
			if (!strcmp(optarg, "copy")) {
				o->copy = true;
			} else if (!strcmp(optarg, "spans")) {
				o->copy = false;
			} else {
				hmb_usage_exit(PROG, NULL, "--write-mode must be spans or copy, not '%s'",
					       optarg);
			}
			break;
		case O_SNAP_ON: parse_snap_sig(o, optarg); break;
		case O_SNAP_DIR:
			if (!*optarg)
				hmb_usage_exit(PROG, NULL, "--snapshot-dir must not be empty");
			o->snap_dir = optarg;
			fr_only = "--snapshot-dir";
			break;
		case O_WINDOW:
			if (hmb_parse_u64(optarg, HMB_NUM_DEC, 1, MAX_WINDOW_MB, &v))
				hmb_usage_exit(PROG, NULL, "--window-mb must be a number of MiB, 1..%d, not '%s'",
					       MAX_WINDOW_MB, optarg);
			o->window = (size_t)v << 20;
			fr_only = "--window-mb";
			break;
		case O_MAX_SNAPS:
			if (hmb_parse_u64(optarg, HMB_NUM_DEC, 0, UINT32_MAX, &v))
				hmb_usage_exit(PROG, NULL, "--max-snapshots must be a count (0: no limit), not '%s'",
					       optarg);
			o->max_snaps = v;
			fr_only = "--max-snapshots";
			break;
		case O_HOLDOFF:
			if (hmb_parse_u64(optarg, HMB_NUM_DEC, 0, 86400, &v))
				hmb_usage_exit(PROG, NULL, "--holdoff must be 0..86400 seconds, not '%s'",
					       optarg);
			o->holdoff_s = (unsigned int)v;
			fr_only = "--holdoff";
			break;
		case O_THROTTLE: o->throttle = (double)parse_num(optarg, "throttle"); break;
		case 'q': log_verbosity = LOG_WARN; break;
		case 'v': log_verbosity = LOG_DEBUG; break;
		case O_LOG_FORMAT:
			if (!strcmp(optarg, "json")) {
				log_json = true;
			} else if (strcmp(optarg, "text")) {
				hmb_usage_exit(PROG, NULL, "--log-format must be text or json");
			}
			break;
		case 'h': usage(stdout); exit(EXIT_OK);
		case 'V': printf("hmb-trace-daemon %s\n", HMB_VERSION); exit(EXIT_OK);
		default:
			hmb_usage_getopt(PROG, NULL, c, argv);
			exit(EXIT_USAGE);
		}
	}
	if (optind < argc)
		hmb_usage_exit(PROG, NULL, "unexpected argument '%s'", argv[optind]);
	if (nsrc != 1)
		hmb_usage_exit(PROG, NULL, "give exactly one of --device DEV or --ring-file PATH");
	check_snap_opts(o, fr_only);
}
