// SPDX-License-Identifier: GPL-2.0
/*
 * options.c - hmb-trace-agent's command line: --help, the options, their
 * checks and usage errors (exit 2).
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent.h"
#include "snap.h"

/* --------------------------------------------------------------- options */

static void usage(FILE *f)
{
	fprintf(f,
"Usage: " PROG " [-d DEV] [-m auto|nvme|block] [-j] [-o FILE]\n"
"                       [--min-latency USEC] [-N N] [-c OPC] [--per-command]\n"
"                       [--dict FILE] [--ring-ctrl RING=CTRL]... [--fw-grace MS]\n"
"                       [--clock-window N] [--ringbuf-mb MB] [-w FILE]\n"
"                       [--issue-stamp auto|kernel|bpf]\n"
"                       [--fw-event auto|batch|record]\n"
"                       [--pel DEV] [--export URL [--export-credentials FILE]\n"
"                       [--export-hostname NAME]\n"
"                       [--export-queue N] [--export-wait MS]]\n"
"                       [--pid PID] [--comm NAME] [--cgroup PATH]\n"
"                       [--trigger EXPR]... [-v]\n"
"                       [interval] [count]\n"
"\n"
"Live NVMe command latency split into host and firmware phases.\n"
"\n"
"Joins nvme:nvme_setup_cmd and nvme:nvme_complete_rq with the firmware\n"
"records of nvme-hmb-trace.ko (hmb_trace:hmb_trace_records, bridge on) by\n"
"controller, queue and full command id; estimates the firmware clock's\n"
"offset and drift from the matched commands. Without the module it shows\n"
"host-only latency from the NVMe tracepoints; without NVMe, from the block\n"
"layer (block_rq_issue -> block_rq_complete, as biolatency; where the kernel\n"
"stamps each request at issue, block_rq_complete alone).  Reports every\n"
"INTERVAL seconds, COUNT times (default: once, at Ctrl-C).\n"
"\n"
"Options:\n"
"  -d, --disk DEV         trace this disk or controller only (nvme0n1,\n"
"                         nvme0, loop0)\n"
"  -m, --mode MODE        auto (default), nvme or block\n"
"  -j, --json             JSON lines output\n"
"  -o, --output FILE      write the output to FILE (default stdout)\n"
"      --min-latency USEC top-N and per-command output only for commands at\n"
"                         least this slow\n"
"  -N, --top N            show the N slowest commands per interval (default\n"
"                         5, 0: none)\n"
"  -c, --opcode OPC       only this NVMe opcode (read, write, flush or a\n"
"                         number); block mode: REQ_OP number\n"
"      --pid PID          only commands issued by process PID\n"
"      --comm NAME        only commands issued by a task named NAME (its\n"
"                         comm, at most 15 characters)\n"
"      --cgroup PATH      only commands issued by tasks in the cgroup v2\n"
"                         directory PATH or below it (/sys/fs/cgroup/...)\n"
"                         Who issued a command is the task that dispatched\n"
"                         it (pid, tid, comm, cgroup id in the output): a\n"
"                         kworker when blk-mq dispatched it from one; the\n"
"                         filters run in BPF, and a command they exclude is\n"
"                         still joined with its records, counted, not shown\n"
"      --per-command      print every command (one line or JSON object each)\n"
"      --dict FILE        event dictionary (default: the built-in\n"
"                         share/hmb-events.dict)\n"
"      --ring-ctrl RING=CTRL  records of ring RING belong to controller\n"
"                         nvmeCTRL (repeatable, one controller per agent;\n"
"                         default: every ring -> the -d controller, else nvme0)\n"
"      --fw-grace MS      wait this long after completion for firmware records\n"
"                         (default 1000)\n"
"      --clock-window N   matched commands the clock estimate uses (default\n"
"                         65536)\n"
"      --ringbuf-mb MB    BPF ring buffer to user space, MiB, a power of two\n"
"                         (default 16): how far the agent may fall behind\n"
"  -w, --write FILE       also write every firmware record received to FILE,\n"
"                         a dump in the daemon's format with its sidecar\n"
"                         FILE.meta (ring R > 0: FILE.ringR), for\n"
"                         hmb-trace-analyze correlate/report/convert/stats\n"
"      --pel DEV          the controller's Persistent Event Log (/dev/nvmeN,\n"
"                         admin passthrough): read at start and after each\n"
"                         report, its new events placed on the host clock\n"
"                         with the commands around them (text lines after\n"
"                         the report, {\"type\":\"pel\"} JSON lines)\n"
"      --export URL       send the fleet store's rows while running (ClickHouse\n"
"                         HTTP URL, docs/fleet.md): every command, firmware\n"
"                         record and clock estimate, and the loss counters at\n"
"                         exit; rows the queue cannot hold while the store is\n"
"                         slow or down are dropped, counted, and sent as a\n"
"                         losses row once it is back\n"
"      --export-credentials FILE  the store's user and password (lines\n"
"                         user=NAME, password=SECRET; FILE readable by its\n"
"                         owner only); else from the URL, else\n"
"                         $CLICKHOUSE_USER and $CLICKHOUSE_PASSWORD\n"
"      --export-hostname NAME  host column (default: this host's name)\n"
"      --export-queue N   rows the export queue holds (default 65536)\n"
"      --export-wait MS   at exit, how long to keep trying to send what is\n"
"                         queued (default 10000)\n"
"      --issue-stamp HOW  block mode's start time: kernel (the request's own\n"
"                         issue stamp, io_start_time_ns: no program runs at\n"
"                         issue), bpf (a program at block_rq_issue, as\n"
"                         biolatency) or auto (default: kernel where the\n"
"                         kernel stamps every request of the disks traced\n"
"                         exactly at issue, else bpf; -v says why)\n"
"      --fw-event HOW     how the firmware records come: batch (one program\n"
"                         run per hmb_trace_records event, up to 64 records),\n"
"                         record (one run per hmb_trace_record) or auto\n"
"                         (default: batch where the module has it)\n"
"      --trigger EXPR     arm a trigger (repeatable, up to 8), evaluated in\n"
"                         BPF; one line per firing (docs/agent.md, Triggers):\n"
"                         [OPC:]LATENCY>DURATION  a phase over a threshold,\n"
"                           LATENCY host_total, fw_total or POINT_to_POINT\n"
"                           (host_submit, fw_fetch, fw_media_start,\n"
"                           fw_media_end, fw_xfer_done, fw_cqe_posted,\n"
"                           host_complete; fw_ may be left out),\n"
"                           DURATION 5ms (ns us ms s),\n"
"                           OPC read, write, flush or 0-255\n"
"                         host_total>pP[@Ns]  over the P percentile of the\n"
"                           last N seconds (default 10s)\n"
"                         EVENT  a dictionary event or background group\n"
"                           (gc, thermal, gc_start, ...)\n"
"                         reset  the controller stopped its ring (reset)\n"
"Flight recorder (docs/flight-recorder.md):\n"
"      --snapshot-dir DIR keep the last --pre seconds of firmware records and\n"
"                         host commands in memory; on a --trigger firing or\n"
"                         SIGUSR1, wait --post seconds and write them as\n"
"                         DIR/SNAP-<UTC time>-<reason>/: trace.bin (+ .meta),\n"
"                         host.jsonl, clock.json, trigger.json, snapshot.json\n"
"      --pre SECONDS      before the firing (default 2)\n"
"      --post SECONDS     after it (default 1)\n"
"      --window-mb N      memory for both, the oldest evicted first when\n"
"                         full (default 64, 1..16384)\n"
"      --max-snapshots N  write at most N (default 0: no limit)\n"
"      --holdoff SECONDS  at least this long between two (default 10);\n"
"                         a firing neither allows is suppressed: a line on\n"
"                         stderr, counted in the summary\n"
"  -v, --verbose          libbpf messages, every unmatched firmware record\n"
"  -h, -?, --help         this help\n"
"      --usage            the synopsis only\n"
"  -V, --version          the version\n"
"\n"
"Exit status: 0 after SIGINT/SIGTERM or COUNT reports, 1 on an error (one\n"
"line on stderr says what failed), 2 on bad usage.\n"
"\n"
"Examples:\n"
"    " PROG " -d nvme0n1          # until Ctrl-C, then the report\n"
"    " PROG " -d nvme0n1 1 10     # ten 1-second reports\n"
"    " PROG " -d nvme0n1 -j -o agent.jsonl 5   # JSON lines to a file\n"
"    " PROG " --min-latency 500 -N 10  # top 10 commands >= 500 us\n"
"    " PROG " -d loop0 -m block 1 5   # host-only, block layer\n"
"    " PROG " -d nvme0n1 --per-command --comm fio   # fio's commands only\n"
"    " PROG " -d nvme0n1 -j --cgroup /sys/fs/cgroup/system.slice/db.service\n"
"    " PROG " -d nvme0n1 -j -o agent.jsonl -w fw.bin   # and keep the records:\n"
"    hmb-trace-analyze correlate fw.bin agent.jsonl    # the same join, offline\n"
"    " PROG " -d nvme0n1 --export http://ch1:8123   # rows into the fleet store\n"
"    " PROG " -d nvme0n1 --trigger 'read:host_total>5ms' --trigger gc\n"
"    " PROG " -d nvme0n1 --trigger 'host_total>5ms' --snapshot-dir /var/tmp/hmb\n"
"    hmb-trace-analyze report /var/tmp/hmb/SNAP-*/trace.bin   # the bundle\n");
}

/* @arg as a number in [@min, @max] for option @what, or a usage error. */
static uint64_t num_arg(const char *arg, uint64_t min, uint64_t max,
			const char *what, const char *unit)
{
	uint64_t v;

	if (hmb_parse_u64(arg, 0, min, max, &v))
		hmb_usage_exit(PROG, NULL,
			       "invalid %s '%s' (%s)", what, arg, unit);
	return v;
}

static int opcode_arg(const char *arg)
{
	static const char *const names[] = { "flush", "write", "read" };

	for (int i = 0; i < 3; i++)
		if (!strcmp(arg, names[i]))
			return i;
	return (int)num_arg(arg, 0, 255, "opcode",
			    "read, write, flush, 0-255");
}

static void ring_ctrl_arg(struct env *e, const char *arg)
{
	const char *p;
	uint64_t r, c;

	if (hmb_strtou64(arg, &p, 10, &r) || *p != '=' ||
	    hmb_parse_u64(p + 1, HMB_NUM_DEC, 0, INT_MAX - 1, &c) ||
	    r >= HMB_MAX_RINGS)
		hmb_usage_exit(PROG, NULL,
			       "invalid --ring-ctrl '%s' (RING=CTRL, RING < %d)",
			       arg, HMB_MAX_RINGS);
	/* One clock estimate and one set of background windows per agent:
	 * the firmware records it joins come from one controller. */
	for (unsigned int i = 0; i < HMB_MAX_RINGS; i++)
		if (e->ring_ctrl[i] && e->ring_ctrl[i] != c + 1)
			hmb_usage_exit(PROG, NULL,
				       "--ring-ctrl '%s': ring %u already belongs to nvme%u; one agent estimates one firmware clock, so its rings belong to one controller (run one agent per controller, -d nvmeN)",
				       arg, i, e->ring_ctrl[i] - 1);
	e->ring_ctrl[r] = (unsigned int)c + 1;
	e->ring_ctrl_set = true;
}

/*
 * @arg as one of the three @words of option @what (their index: the
 * enum of each such option lists its values in this order), or a usage
 * error.
 */
static int word_arg(const char *arg, const char *what,
		    const char *const words[3])
{
	for (int i = 0; i < 3; i++)
		if (!strcmp(arg, words[i]))
			return i;
	hmb_usage_exit(PROG, NULL,
		       "invalid %s '%s' (%s, %s, %s)", what, arg, words[0],
		       words[1], words[2]);
}

enum {
	OPT_MIN_LAT = 1000, OPT_DICT, OPT_RING_CTRL, OPT_GRACE, OPT_PER_CMD,
	OPT_CLOCK_WINDOW, OPT_USAGE, OPT_RINGBUF, OPT_EXPORT, OPT_EXPORT_HOST,
	OPT_EXPORT_QUEUE, OPT_EXPORT_WAIT, OPT_ISSUE_STAMP, OPT_FW_EVENT,
	OPT_EXPORT_CRED, OPT_TRIGGER, OPT_SNAP_DIR, OPT_PRE, OPT_POST,
	OPT_WINDOW, OPT_MAX_SNAPS, OPT_HOLDOFF, OPT_PID, OPT_COMM, OPT_CGROUP,
	OPT_PEL,
};

static const struct option long_opts[] = {
	{ "disk", required_argument, NULL, 'd' },
	{ "mode", required_argument, NULL, 'm' },
	{ "json", no_argument, NULL, 'j' },
	{ "output", required_argument, NULL, 'o' },
	{ "min-latency", required_argument, NULL, OPT_MIN_LAT },
	{ "top", required_argument, NULL, 'N' },
	{ "opcode", required_argument, NULL, 'c' },
	{ "dict", required_argument, NULL, OPT_DICT },
	{ "ring-ctrl", required_argument, NULL, OPT_RING_CTRL },
	{ "fw-grace", required_argument, NULL, OPT_GRACE },
	{ "per-command", no_argument, NULL, OPT_PER_CMD },
	{ "clock-window", required_argument, NULL, OPT_CLOCK_WINDOW },
	{ "ringbuf-mb", required_argument, NULL, OPT_RINGBUF },
	{ "write", required_argument, NULL, 'w' },
	{ "export", required_argument, NULL, OPT_EXPORT },
	{ "pel", required_argument, NULL, OPT_PEL },
	{ "export-hostname", required_argument, NULL, OPT_EXPORT_HOST },
	{ "export-credentials", required_argument, NULL, OPT_EXPORT_CRED },
	{ "export-queue", required_argument, NULL, OPT_EXPORT_QUEUE },
	{ "export-wait", required_argument, NULL, OPT_EXPORT_WAIT },
	{ "issue-stamp", required_argument, NULL, OPT_ISSUE_STAMP },
	{ "fw-event", required_argument, NULL, OPT_FW_EVENT },
	{ "trigger", required_argument, NULL, OPT_TRIGGER },
	{ "snapshot-dir", required_argument, NULL, OPT_SNAP_DIR },
	{ "pre", required_argument, NULL, OPT_PRE },
	{ "post", required_argument, NULL, OPT_POST },
	{ "window-mb", required_argument, NULL, OPT_WINDOW },
	{ "max-snapshots", required_argument, NULL, OPT_MAX_SNAPS },
	{ "holdoff", required_argument, NULL, OPT_HOLDOFF },
	{ "pid", required_argument, NULL, OPT_PID },
	{ "comm", required_argument, NULL, OPT_COMM },
	{ "cgroup", required_argument, NULL, OPT_CGROUP },
	{ "verbose", no_argument, NULL, 'v' },
	{ "help", no_argument, NULL, 'h' },
	{ "usage", no_argument, NULL, OPT_USAGE },
	{ "version", no_argument, NULL, 'V' },
	{ NULL, 0, NULL, 0 }
};

/* @arg as seconds in [@min, 3600] for option @what, or a usage error. */
static double secs_arg(const char *arg, double min, const char *what)
{
	double v;

	if (hmb_parse_double(arg, min, 3600, &v) || (min == 0 && v < 0) ||
	    (min > 0 && v <= 0))
		hmb_usage_exit(PROG, NULL, "invalid %s '%s' (seconds, %s to 3600)",
			       what, arg, min > 0 ? "more than 0" : "0");
	return v;
}

/* A flight-recorder option given, for its check against --snapshot-dir. */
static const char *snap_only;

/* One option; false if it is none of ours. */
static bool option(struct env *e, int opt, const char *arg)
{
	switch (opt) {
	case 'd': e->disk = arg; break;
	case 'm':
		e->mode = (enum mode)word_arg(arg, "mode",
			(const char *const[3]){ "auto", "nvme", "block" });
		break;
	case 'j': e->json = true; break;
	case 'o': e->output = arg; break;
	case OPT_MIN_LAT:
		e->min_lat_us = num_arg(arg, 0, 1000000000, "--min-latency",
					"microseconds");
		break;
	case 'N':
		e->top_n = (unsigned int)num_arg(arg, 0, 1000, "--top",
						 "0 to 1000");
		break;
	case 'c': e->opcode = opcode_arg(arg); break;
	case OPT_DICT: e->dict_path = arg; break;
	case OPT_RING_CTRL: ring_ctrl_arg(e, arg); break;
	case OPT_GRACE:
		e->grace_ms = (unsigned int)num_arg(arg, 0, 600000,
						    "--fw-grace",
						    "milliseconds");
		break;
	case OPT_PER_CMD: e->per_command = true; break;
	case OPT_CLOCK_WINDOW:
		e->clock_window = (unsigned int)num_arg(arg, 64, 10000000,
							"--clock-window",
							"64 to 10000000");
		break;
	case OPT_RINGBUF:
		e->ringbuf_mb = (unsigned int)num_arg(arg, 1, 1024,
						      "--ringbuf-mb",
						      "1 to 1024, a power of two");
		if (e->ringbuf_mb & (e->ringbuf_mb - 1))
			hmb_usage_exit(PROG, NULL,
				       "invalid --ringbuf-mb '%s' (1 to 1024, a power of two)",
				       arg);
		break;
	case 'w':
		if (!*arg)
			hmb_usage_exit(PROG, NULL, "-w needs a file name");
		e->dump_path = arg;
		break;
	case OPT_EXPORT: e->export_url = arg; break;
	case OPT_PEL: e->pel_dev = arg; break;
	case OPT_EXPORT_HOST: e->export_host = arg; break;
	case OPT_EXPORT_CRED: e->export_credentials = arg; break;
	case OPT_EXPORT_QUEUE:
		e->export_queue = (size_t)num_arg(arg, 16, 16777216,
						  "--export-queue",
						  "16 to 16777216 rows");
		break;
	case OPT_EXPORT_WAIT:
		e->export_wait_ms = (unsigned int)num_arg(arg, 0, 3600000,
							  "--export-wait",
							  "milliseconds");
		break;
	case OPT_ISSUE_STAMP:
		e->issue_stamp = (enum issue_stamp)word_arg(arg,
			"--issue-stamp",
			(const char *const[3]){ "auto", "kernel", "bpf" });
		break;
	case OPT_FW_EVENT:
		e->fw_event = (enum fw_event)word_arg(arg, "--fw-event",
			(const char *const[3]){ "auto", "batch", "record" });
		break;
	case OPT_TRIGGER:
		if (e->ntrig == HMB_MAX_TRIGGERS)
			hmb_usage_exit(PROG, NULL,
				       "--trigger '%s': at most %d triggers",
				       arg, HMB_MAX_TRIGGERS);
		e->trig_expr[e->ntrig++] = arg;
		break;
	case OPT_SNAP_DIR:
		if (!*arg)
			hmb_usage_exit(PROG, NULL, "--snapshot-dir needs a directory");
		e->snap_dir = arg;
		break;
	case OPT_PRE:
		e->snap_pre_s = secs_arg(arg, 0.001, "--pre");
		snap_only = "--pre";
		break;
	case OPT_POST:
		e->snap_post_s = secs_arg(arg, 0, "--post");
		snap_only = "--post";
		break;
	case OPT_WINDOW:
		e->snap_window = (size_t)num_arg(arg, 1, SNAP_MAX_WINDOW_MB,
						 "--window-mb",
						 "MiB, 1 to 16384") << 20;
		snap_only = "--window-mb";
		break;
	case OPT_MAX_SNAPS:
		e->snap_max = num_arg(arg, 0, UINT32_MAX, "--max-snapshots",
				      "a count, 0: no limit");
		snap_only = "--max-snapshots";
		break;
	case OPT_HOLDOFF:
		e->snap_holdoff_s = (unsigned int)num_arg(arg, 0, 86400,
							  "--holdoff",
							  "seconds, 0 to 86400");
		snap_only = "--holdoff";
		break;
	case OPT_PID:
		/* the kernel's PID_MAX_LIMIT */
		e->who_pid = (uint32_t)num_arg(arg, 1, 4194304, "--pid",
					       "a process id, 1 to 4194304");
		break;
	case OPT_COMM:
		/* TASK_COMM_LEN: what the kernel keeps of a task's name */
		if (!*arg || strlen(arg) >= HMB_COMM_LEN)
			hmb_usage_exit(PROG, NULL,
				       "invalid --comm '%s' (a task name, 1 to %d characters)",
				       arg, HMB_COMM_LEN - 1);
		e->who_comm = arg;
		break;
	case OPT_CGROUP:
		if (e->who_cgroup_fd >= 0)
			close(e->who_cgroup_fd);
		e->who_cgroup_fd = open(arg, O_RDONLY | O_DIRECTORY |
					O_CLOEXEC);
		if (e->who_cgroup_fd < 0)
			hmb_usage_exit(PROG, NULL,
				       "invalid --cgroup '%s' (a cgroup v2 directory): %s",
				       arg, strerror(errno));
		e->who_cgroup = arg;
		break;
	case 'v': e->verbose = true; break;
	default: return false;
	}
	return true;
}

void parse_args(struct env *e, int argc, char **argv)
{
	int opt, pos;

	*e = (struct env){
		.mode = MODE_AUTO, .top_n = 5, .opcode = -1, .grace_ms = 1000,
		.interval = 99999999, .times = 99999999, .clock_window = 65536,
		.export_queue = 65536, .export_wait_ms = 10000,
		.ringbuf_mb = 16,
		.snap_pre_s = SNAP_DEF_PRE_S, .snap_post_s = SNAP_DEF_POST_S,
		.snap_window = (size_t)SNAP_DEF_WINDOW_MB << 20,
		.snap_holdoff_s = SNAP_DEF_HOLDOFF_S,
		.who_cgroup_fd = -1,
	};
	opterr = 0;
	while ((opt = getopt_long(argc, argv, ":d:m:jo:N:c:w:vhV", long_opts,
				  NULL)) != -1) {
		if (option(e, opt, optarg))
			continue;
		if (opt == '?' && strcmp(argv[optind - 1], "-?") == 0)
			opt = 'h';	/* -?: help, as argp took it */
		switch (opt) {
		case 'h':
		case OPT_USAGE:
			usage(stdout);
			exit(0);
		case 'V':
			printf(PROG " " AGENT_VERSION
			       " (nvme-hmb-trace, trace format v%d)\n",
			       HMB_TRACE_ABI_VERSION);
			exit(0);
		default:
			hmb_usage_getopt(PROG, NULL, opt, argv);
			exit(EXIT_USAGE);
		}
	}
	if (snap_only && !e->snap_dir)
		hmb_usage_exit(PROG, NULL, "%s needs --snapshot-dir DIR",
			       snap_only);
	for (pos = 0; optind < argc; pos++, optind++) {
		if (pos >= 2)
			hmb_usage_exit(PROG, NULL,
				       "unexpected argument '%s'",
				       argv[optind]);
		*(pos ? &e->times : &e->interval) =
			(long)num_arg(argv[optind], 1, INT_MAX,
				      pos ? "count" : "interval",
				      "a positive number");
	}
}
