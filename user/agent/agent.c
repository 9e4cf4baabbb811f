// SPDX-License-Identifier: GPL-2.0
/*
 * hmb-trace-agent - live per-command NVMe latency, split into host and
 * firmware phases by joining nvme:nvme_setup_cmd / nvme:nvme_complete_rq
 * with the firmware records nvme-hmb-trace.ko's bridge emits as
 * hmb_trace:hmb_trace_record.  Host-only when the module or NVMe is
 * missing (block-layer fallback, like biolatency).  See docs/agent.md.
 */
#include <argp.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include <linux/types.h>
#include <bpf/libbpf.h>
#include <bpf/bpf.h>
#include <bpf/btf.h>

#include "hmbtrace.h"
#include "hmbtrace_dict.h"
#include "hmb_agent.h"
#include "hmb_agent.skel.h"
#include "analysis.h"
#include "sweep.h"

extern const char hmb_default_dict[], hmb_default_dict_end[];

enum mode { MODE_AUTO, MODE_NVME, MODE_BLOCK };

static struct env {
	char *disk;
	enum mode mode;
	bool json;
	char *output;
	uint64_t min_lat_us;
	unsigned int top_n;
	int opcode;
	char *dict_path;
	unsigned int grace_ms;
	bool per_command;
	bool verbose;
	long interval;
	long times;
	unsigned int ring_ctrl[HMB_MAX_RINGS];	/* instance + 1, 0 unset */
	bool ring_ctrl_set;
	unsigned int clock_window;
	unsigned int ringbuf_mb;
} env = {
	.mode = MODE_AUTO,
	.top_n = 5,
	.opcode = -1,
	.grace_ms = 1000,
	.interval = 99999999,
	.times = 99999999,
	.clock_window = 65536,
	.ringbuf_mb = 16,
};

const char *argp_program_version = "hmb-trace-agent " HMB_VERSION;
const char *argp_program_bug_address = "the nvme-hmb-trace issue tracker";
static const char doc[] =
"Live NVMe command latency split into host and firmware phases.\n"
"\n"
"Joins nvme:nvme_setup_cmd and nvme:nvme_complete_rq with the firmware\n"
"records of nvme-hmb-trace.ko (hmb_trace:hmb_trace_record, bridge on) by\n"
"controller, queue and full command id; estimates the firmware clock's\n"
"offset and drift from the matched commands. Without the module it shows\n"
"host-only latency from the NVMe tracepoints; without NVMe, from the block\n"
"layer (block_rq_issue -> block_rq_complete, as biolatency).\n"
"\n"
"USAGE: hmb-trace-agent [-d DEV] [-j] [-o FILE] [--min-latency USEC] [-v]\n"
"                       [interval] [count]\n"
"\n"
"EXAMPLES:\n"
"    hmb-trace-agent -d nvme0n1          # until Ctrl-C, then the report\n"
"    hmb-trace-agent -d nvme0n1 1 10     # ten 1-second reports\n"
"    hmb-trace-agent -d nvme0n1 -j -o agent.jsonl 5   # JSON lines to a file\n"
"    hmb-trace-agent --min-latency 500 -N 10  # top 10 commands >= 500 us\n"
"    hmb-trace-agent -d loop0 -m block 1 5   # host-only, block layer\n";

enum {
	OPT_MIN_LAT = 1000, OPT_DICT, OPT_RING_CTRL, OPT_GRACE, OPT_PER_CMD,
	OPT_CLOCK_WINDOW, OPT_RINGBUF,
};

static const struct argp_option opts[] = {
	{ "disk", 'd', "DEV", 0, "Trace this disk or controller only (nvme0n1, nvme0, loop0)", 0 },
	{ "mode", 'm', "MODE", 0, "auto (default), nvme or block", 0 },
	{ "json", 'j', NULL, 0, "JSON lines output", 0 },
	{ "output", 'o', "FILE", 0, "Write the output to FILE (default stdout)", 0 },
	{ "min-latency", OPT_MIN_LAT, "USEC", 0, "Top-N and per-command output only for commands at least this slow", 0 },
	{ "top", 'N', "N", 0, "Show the N slowest commands per interval (default 5, 0: none)", 0 },
	{ "opcode", 'c', "OPC", 0, "Only this NVMe opcode (read, write, flush or a number); block mode: REQ_OP number", 0 },
	{ "dict", OPT_DICT, "FILE", 0, "Event dictionary (default: the built-in share/hmb-events.dict)", 0 },
	{ "ring-ctrl", OPT_RING_CTRL, "RING=CTRL", 0, "Records of ring RING belong to controller nvmeCTRL (repeatable; default: every ring -> the -d controller, else nvme0)", 0 },
	{ "fw-grace", OPT_GRACE, "MS", 0, "Wait this long after completion for firmware records (default 1000)", 0 },
	{ "per-command", OPT_PER_CMD, NULL, 0, "Print every command (one line or JSON object each)", 0 },
	{ "clock-window", OPT_CLOCK_WINDOW, "N", 0, "Matched commands the clock estimate uses (default 65536)", 0 },
	{ "ringbuf-mb", OPT_RINGBUF, "MB", 0, "BPF ring buffer to user space, MiB, a power of two (default 16): what the agent may fall behind by", 0 },
	{ "verbose", 'v', NULL, 0, "Verbose: libbpf messages, every unmatched firmware record", 0 },
	{ NULL, 'h', NULL, OPTION_HIDDEN, "Show the full help", 0 },
	{},
};

static int parse_ulong(const char *s, unsigned long max, unsigned long *v)
{
	char *end;

	errno = 0;
	*v = strtoul(s, &end, 0);
	return (errno || !*s || *end || *v > max || *s == '-') ? -1 : 0;
}

static int pos_args;

static error_t parse_arg(int key, char *arg, struct argp_state *state)
{
	unsigned long v;

	switch (key) {
	case 'h':
		argp_state_help(state, stderr, ARGP_HELP_STD_HELP);
		break;
	case 'd':
		env.disk = arg;
		break;
	case 'm':
		if (!strcmp(arg, "auto"))
			env.mode = MODE_AUTO;
		else if (!strcmp(arg, "nvme"))
			env.mode = MODE_NVME;
		else if (!strcmp(arg, "block"))
			env.mode = MODE_BLOCK;
		else
			argp_error(state, "invalid mode '%s' (auto, nvme, block)", arg);
		break;
	case 'j':
		env.json = true;
		break;
	case 'o':
		env.output = arg;
		break;
	case OPT_MIN_LAT:
		if (parse_ulong(arg, 1000000000UL, &v))
			argp_error(state, "invalid --min-latency '%s' (microseconds)", arg);
		env.min_lat_us = v;
		break;
	case 'N':
		if (parse_ulong(arg, 1000, &v))
			argp_error(state, "invalid --top '%s' (0 to 1000)", arg);
		env.top_n = (unsigned int)v;
		break;
	case 'c':
		if (!strcmp(arg, "read"))
			env.opcode = 2;
		else if (!strcmp(arg, "write"))
			env.opcode = 1;
		else if (!strcmp(arg, "flush"))
			env.opcode = 0;
		else if (parse_ulong(arg, 255, &v))
			argp_error(state, "invalid opcode '%s' (read, write, flush, 0-255)", arg);
		else
			env.opcode = (int)v;
		break;
	case OPT_DICT:
		env.dict_path = arg;
		break;
	case OPT_RING_CTRL: {
		unsigned int r, c;
		char tail;

		if (sscanf(arg, "%u=%u%c", &r, &c, &tail) != 2 ||
		    r >= HMB_MAX_RINGS)
			argp_error(state, "invalid --ring-ctrl '%s' (RING=CTRL, RING < %d)",
				   arg, HMB_MAX_RINGS);
		env.ring_ctrl[r] = c + 1;
		env.ring_ctrl_set = true;
		break;
	}
	case OPT_GRACE:
		if (parse_ulong(arg, 600000, &v))
			argp_error(state, "invalid --fw-grace '%s' (milliseconds)", arg);
		env.grace_ms = (unsigned int)v;
		break;
	case OPT_PER_CMD:
		env.per_command = true;
		break;
	case OPT_CLOCK_WINDOW:
		if (parse_ulong(arg, 10000000, &v) || v < 64)
			argp_error(state, "invalid --clock-window '%s' (64 to 10000000)", arg);
		env.clock_window = (unsigned int)v;
		break;
	case OPT_RINGBUF:
		if (parse_ulong(arg, 1024, &v) || !v || (v & (v - 1)))
			argp_error(state, "invalid --ringbuf-mb '%s' (1 to 1024, a power of two)", arg);
		env.ringbuf_mb = (unsigned int)v;
		break;
	case 'v':
		env.verbose = true;
		break;
	case ARGP_KEY_ARG:
		if (parse_ulong(arg, INT_MAX, &v) || v == 0)
			argp_error(state, "invalid %s '%s' (a positive number)",
				   pos_args ? "count" : "interval", arg);
		if (pos_args == 0)
			env.interval = (long)v;
		else if (pos_args == 1)
			env.times = (long)v;
		else
			argp_error(state, "unexpected argument '%s'", arg);
		pos_args++;
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

static volatile sig_atomic_t exiting;
static void sig_handler(int sig)
{
	(void)sig;
	exiting = 1;
}

static int libbpf_print_fn(enum libbpf_print_level level, const char *fmt,
			   va_list args)
{
	if (level == LIBBPF_DEBUG && !env.verbose)
		return 0;
	return vfprintf(stderr, fmt, args);
}

/* ----------------------------------------------------------- probing */

static const char *tracefs(void)
{
	static const char *const dirs[] = { "/sys/kernel/tracing",
					    "/sys/kernel/debug/tracing" };
	static char found[64];
	char p[128];
	size_t i;

	if (found[0])
		return found;
	for (i = 0; i < 2; i++) {
		snprintf(p, sizeof(p), "%s/events", dirs[i]);
		if (!access(p, F_OK)) {
			snprintf(found, sizeof(found), "%s", dirs[i]);
			return found;
		}
	}
	return NULL;
}

static bool tp_exists(const char *cat, const char *ev)
{
	const char *t = tracefs();
	char p[256];

	if (!t)
		return false;
	snprintf(p, sizeof(p), "%s/events/%s/%s", t, cat, ev);
	return !access(p, F_OK);
}

/* Is there BTF for tracepoint @tp (vmlinux or module @mod)? */
static bool tp_btf_exists(const char *tp, const char *mod)
{
	struct btf *vmlinux, *m = NULL;
	char name[128], path[128];
	bool ok = false;

	vmlinux = btf__load_vmlinux_btf();
	if (!vmlinux)
		return false;
	snprintf(name, sizeof(name), "btf_trace_%s", tp);
	if (btf__find_by_name_kind(vmlinux, name, BTF_KIND_TYPEDEF) > 0)
		ok = true;
	if (!ok && mod) {
		snprintf(path, sizeof(path), "/sys/kernel/btf/%s", mod);
		m = btf__parse_split(path, vmlinux);
		if (m && btf__find_by_name_kind(m, name, BTF_KIND_TYPEDEF) > 0)
			ok = true;
	}
	btf__free(m);
	btf__free(vmlinux);
	return ok;
}

/* nvme0n1 / nvme0 -> controller instance 0 (and nsid for a namespace). */
static int resolve_nvme(const char *dev, int *ctrl, unsigned int *nsid)
{
	char p[PATH_MAX], link[PATH_MAX];
	unsigned int c, n;
	ssize_t len;
	FILE *f;

	*nsid = 0;
	if (!strncmp(dev, "/dev/", 5))
		dev += 5;
	if (sscanf(dev, "nvme%un%u", &c, &n) == 2) {
		/* the namespace's controller, as sysfs links it */
		snprintf(p, sizeof(p), "/sys/block/%s/device", dev);
		len = readlink(p, link, sizeof(link) - 1);
		if (len > 0) {
			const char *b;

			link[len] = 0;
			b = strrchr(link, '/');
			b = b ? b + 1 : link;
			sscanf(b, "nvme%u", &c);
		}
		snprintf(p, sizeof(p), "/sys/block/%s/nsid", dev);
		f = fopen(p, "r");
		if (f) {
			if (fscanf(f, "%u", &n) != 1)
				n = 0;
			fclose(f);
		}
		*ctrl = (int)c;
		*nsid = n;
		return 0;
	}
	if (sscanf(dev, "nvme%u", &c) == 1) {
		char tail[8];

		if (sscanf(dev, "nvme%u%7s", &c, tail) == 2)
			return -1;
		*ctrl = (int)c;
		return 0;
	}
	return -1;
}

static int block_devt(const char *dev, __u32 *devt)
{
	char p[PATH_MAX];
	unsigned int ma, mi;
	struct stat st;
	FILE *f;

	if (strchr(dev, '/') && !stat(dev, &st) && S_ISBLK(st.st_mode)) {
		ma = major(st.st_rdev);
		mi = minor(st.st_rdev);
	} else {
		snprintf(p, sizeof(p), "/sys/class/block/%s/dev", dev);
		f = fopen(p, "r");
		if (!f)
			return -1;
		if (fscanf(f, "%u:%u", &ma, &mi) != 2) {
			fclose(f);
			return -1;
		}
		fclose(f);
	}
	*devt = (ma << 20) | mi;
	return 0;
}

/* ----------------------------------------------------------- output */

static FILE *out;
static struct hmb_dict *dict;
static struct hmb_analysis an;
static struct hmb_agent *skel;
static int nr_cpus;
static const char *mode_name = "?";
static const char *missing_msg = "";
static bool fw_on;
static uint64_t counters_prev[HMB_C_COUNT];
/* Stale entries of the command-id index removed by the sweep (sweep.c). */
static struct hmb_sweep_ids ids_swept;

static const char *const counter_names[HMB_C_COUNT] = {
	[HMB_C_RB_FAIL] = "ringbuf_reserve_failed",
	[HMB_C_HOST_SUBMIT] = "host_submit",
	[HMB_C_HOST_COMPLETE] = "host_complete",
	[HMB_C_HOST_NO_SUBMIT] = "host_complete_without_submit",
	[HMB_C_ACTIVE_FULL] = "inflight_map_full",
	[HMB_C_DONE_FULL] = "waiting_map_full",
	[HMB_C_REUSE_FLUSH] = "flushed_by_cid_reuse",
	[HMB_C_FW_RECORDS] = "fw_records",
	[HMB_C_FW_READ_FAIL] = "fw_read_failed",
	[HMB_C_FW_UNKNOWN_OP] = "fw_unknown_opcode",
	[HMB_C_FW_SHORT] = "fw_short_payload",
	[HMB_C_FW_MARKER] = "fw_markers_or_unknown_flags",
	[HMB_C_FW_NO_CMD] = "fw_unmatched_no_command",
	[HMB_C_FW_DUP_PHASE] = "fw_unmatched_duplicate_phase",
	[HMB_C_FW_OUT_OF_WINDOW] = "fw_unmatched_outside_window",
	[HMB_C_FW_MATCHED] = "fw_matched",
	[HMB_C_FW_BG] = "fw_background",
	[HMB_C_FW_OTHER] = "fw_other_events",
	[HMB_C_FW_UNMAPPED_RING] = "fw_unmapped_ring",
	[HMB_C_CMD_EMITTED] = "cmd_events_sent",
	[HMB_C_CMD_FILTERED] = "cmd_filtered",
	[HMB_C_CMD_BELOW_MIN] = "cmd_below_min_latency",
	[HMB_C_ACTIVE_OVERWRITE] = "host_submit_while_in_flight",
	[HMB_C_FW_BY_ORDER] = "fw_matched_by_slba_or_order",
};

static const char *const bpf_hist_names[HMB_H_COUNT] = {
	[HMB_H_HOST_TOTAL] = "host_total",
	[HMB_H_FW_TOTAL] = "fw_fetch_to_cqe_posted",
	[HMB_H_FW_TO_MEDIA_START] = "fw_to_media_start",
	[HMB_H_FW_TO_MEDIA_END] = "fw_to_media_end",
	[HMB_H_FW_TO_XFER_DONE] = "fw_to_xfer_done",
	[HMB_H_FW_TO_CQE_POSTED] = "fw_to_cqe_posted",
};

static const char *const x_names[HMB_X_COUNT] = {
	[HMB_X_HOST_TOTAL] = "host_total",
	[HMB_X_SUBMIT_TO_FETCH] = "host_submit_to_fw_fetch",
	[HMB_X_FW_TOTAL] = "fw_fetch_to_cqe_posted",
	[HMB_X_CQE_TO_COMPLETE] = "fw_cqe_posted_to_host_complete",
};

/* Runs the kernel skipped because the program was already running on
 * that CPU (the per-program recursion guard): events lost before the
 * program saw them. */
static uint64_t recursion_misses(void)
{
	struct bpf_program *p;
	uint64_t sum = 0;

	bpf_object__for_each_program(p, skel->obj) {
		struct bpf_prog_info info;
		__u32 len = sizeof(info);
		int fd = bpf_program__fd(p);

		if (fd < 0)
			continue;
		memset(&info, 0, sizeof(info));
		if (!bpf_obj_get_info_by_fd(fd, &info, &len))
			sum += info.recursion_misses;
	}
	return sum;
}

static void read_counters(uint64_t *c)
{
	uint64_t *vals = calloc((size_t)nr_cpus, sizeof(*vals));
	int fd = bpf_map__fd(skel->maps.counters);
	__u32 i;
	int cpu;

	memset(c, 0, sizeof(uint64_t) * HMB_C_COUNT);
	if (!vals)
		return;
	for (i = 0; i < HMB_C_COUNT; i++) {
		if (bpf_map_lookup_elem(fd, &i, vals))
			continue;
		for (cpu = 0; cpu < nr_cpus; cpu++)
			c[i] += vals[cpu];
	}
	free(vals);
}

/* Sum the per-CPU histogram @id, then zero it (interval semantics). */
static void take_bpf_hist(__u32 id, struct hmb_log2_hist *h)
{
	size_t vsz = sizeof(struct hmb_log2_hist);
	int fd = bpf_map__fd(skel->maps.hists), cpu, s;
	char *vals = calloc((size_t)nr_cpus, vsz);

	memset(h, 0, sizeof(*h));
	if (!vals)
		return;
	if (!bpf_map_lookup_elem(fd, &id, vals)) {
		for (cpu = 0; cpu < nr_cpus; cpu++) {
			const struct hmb_log2_hist *p =
				(const void *)(vals + (size_t)cpu * vsz);

			for (s = 0; s < HMB_MAX_SLOTS; s++)
				h->slots[s] += p->slots[s];
		}
		memset(vals, 0, (size_t)nr_cpus * vsz);
		/*
		 * A sample added between the lookup and this update is lost
		 * from the interval; biolatency has the same window.
		 */
		bpf_map_update_elem(fd, &id, vals, BPF_ANY);
	}
	free(vals);
}

static const char *opc_name(const struct hmb_cmd_event *ev)
{
	static char buf[16];

	if (ev->st.flags & HMB_CF_BLOCK) {
		switch (ev->st.opc) {
		case 0: return "read";
		case 1: return "write";
		case 2: return "flush";
		case 3: return "discard";
		}
	} else {
		switch (ev->st.opc) {
		case 0: return "flush";
		case 1: return "write";
		case 2: return "read";
		}
	}
	snprintf(buf, sizeof(buf), "op%u", ev->st.opc);
	return buf;
}

static const char *match_name(enum hmb_match m)
{
	switch (m) {
	case HMB_M_HOST_ONLY: return "host-only";
	case HMB_M_MATCHED: return "matched";
	case HMB_M_PARTIAL: return "partial";
	case HMB_M_UNMATCHED: return "unmatched";
	}
	return "?";
}

struct bg_print_ctx {
	const struct hmb_cmd *c;
	bool json;
	int n;
};

static void bg_print(void *ctx, const char *group, uint64_t b, uint64_t e,
		     const struct hmb_bg_rec *r)
{
	struct bg_print_ctx *p = ctx;
	const struct hmb_dict_event *ev = hmb_dict_lookup(dict, r->opcode);
	uint64_t f0 = p->c->ev.st.fw_ts[HMB_PH_FETCH];
	char fields[160];

	hmb_dict_format(ev, r->payload, r->payload_len < HMB_BG_PAYLOAD ?
			r->payload_len : HMB_BG_PAYLOAD, fields, sizeof(fields));
	if (p->json) {
		fprintf(out, "%s{\"group\":\"%s\",\"event\":\"%s\",\"begin_rel_us\":%.1f,\"end_rel_us\":",
			p->n++ ? "," : "", group, ev ? ev->name : "?",
			((double)b - (double)f0) / 1e3);
		if (e)
			fprintf(out, "%.1f", ((double)e - (double)f0) / 1e3);
		else
			fprintf(out, "null");
		fprintf(out, ",\"fields\":\"%s\"}", fields);
		return;
	}
	if (r->edge == HMB_BG_POINT)
		fprintf(out, "        during: %s %s at %+.1f us (%s)\n", group,
			ev ? ev->name : "?", ((double)b - (double)f0) / 1e3,
			fields);
	else if (e)
		fprintf(out, "        during: %s window %+.1f .. %+.1f us from fetch (%s)\n",
			group, ((double)b - (double)f0) / 1e3,
			((double)e - (double)f0) / 1e3, fields);
	else
		fprintf(out, "        during: %s window from %+.1f us, still open (%s)\n",
			group, ((double)b - (double)f0) / 1e3, fields);
}

static double x_us(const struct hmb_cmd *c, int i)
{
	return c->x[i] < 0 ? -1 : (double)c->x[i] / 1e3;
}

static void print_cmd_text(const struct hmb_cmd *c, int rank)
{
	const struct hmb_cmd_state *st = &c->ev.st;
	int i;

	if (st->flags & HMB_CF_BLOCK)
		fprintf(out, "  %s%-3d dev %u:%u %-5s sector %llu bytes %u: total %.1f us\n",
			rank ? "#" : "", rank, st->dev >> 20, st->dev & 0xfffff,
			opc_name(&c->ev), (unsigned long long)st->slba, st->nlb,
			x_us(c, HMB_X_HOST_TOTAL));
	else
		fprintf(out, "  %s%-3d nvme%u q%u cid 0x%04x (gen %u tag %u) %-5s nsid %u slba %llu nlb %u [%s]: total %.1f us\n",
			rank ? "#" : "", rank, c->ev.ctrl, c->ev.qid, c->ev.cid,
			c->ev.cid >> 12, c->ev.cid & 0xfff, opc_name(&c->ev),
			st->nsid, (unsigned long long)st->slba, st->nlb,
			match_name(c->match), x_us(c, HMB_X_HOST_TOTAL));
	if (c->match != HMB_M_MATCHED && c->match != HMB_M_PARTIAL)
		return;
	if (c->placed)
		fprintf(out, "      = host submit->fw fetch %.1f + firmware %.1f + cqe posted->host complete %.1f us%s\n",
			x_us(c, HMB_X_SUBMIT_TO_FETCH), x_us(c, HMB_X_FW_TOTAL),
			x_us(c, HMB_X_CQE_TO_COMPLETE),
			c->in_window ? "" : c->in_window_err ?
			" (fw events at the edge of the host window, within the clock error)" :
			" (FW EVENTS OUTSIDE THE HOST WINDOW: clock estimate off or misattributed)");
	for (i = HMB_PH_FETCH; i < HMB_PH_COUNT; i++) {
		const struct hmb_dict_event *ev =
			hmb_dict_phase_event(dict, (enum hmb_phase)i);

		if (!(st->fw_mask & (1 << i)))
			continue;
		fprintf(out, "      fw %-16s seq %-10u %+9.1f us from fetch",
			ev ? ev->name : hmb_phase_name((enum hmb_phase)i),
			st->fw_seq[i],
			((double)st->fw_ts[i] - (double)st->fw_ts[HMB_PH_FETCH]) / 1e3);
		if (c->placed)
			fprintf(out, "   host %+9.1f us from submit",
				(hmb_clock_map(&an.clk, st->fw_ts[i], st->fw_seq[i]) -
				 (double)st->submit_ns) / 1e3);
		fputc('\n', out);
	}
	if (st->fw_mask & (1 << HMB_PH_FETCH)) {
		struct bg_print_ctx p = { .c = c };
		uint64_t t1 = st->fw_mask & (1 << HMB_PH_CQE_POSTED) ?
			st->fw_ts[HMB_PH_CQE_POSTED] : st->fw_ts[HMB_PH_FETCH];

		hmb_analysis_bg_overlap(&an, st->fw_ts[HMB_PH_FETCH], t1,
					bg_print, &p);
	}
}

static void print_cmd_json(const struct hmb_cmd *c)
{
	const struct hmb_cmd_state *st = &c->ev.st;
	int i, n = 0;

	fprintf(out, "{\"ctrl\":%u,\"qid\":%u,\"cid\":%u,\"opc\":\"%s\",\"nsid\":%u,\"slba\":%llu,\"nlb\":%u,\"dev\":\"%u:%u\",\"match\":\"%s\",\"flags\":%u,\"submit_ns\":%llu,\"complete_ns\":%llu",
		c->ev.ctrl, c->ev.qid, c->ev.cid, opc_name(&c->ev), st->nsid,
		(unsigned long long)st->slba, st->nlb, st->dev >> 20,
		st->dev & 0xfffff, match_name(c->match), st->flags,
		(unsigned long long)st->submit_ns,
		(unsigned long long)st->complete_ns);
	for (i = 0; i < HMB_X_COUNT; i++)
		if (c->x[i] >= 0)
			fprintf(out, ",\"%s_ns\":%lld", x_names[i],
				(long long)c->x[i]);
	if (c->placed)
		fprintf(out, ",\"in_window\":%s,\"in_window_err\":%s",
			c->in_window ? "true" : "false",
			c->in_window_err ? "true" : "false");
	fprintf(out, ",\"fw\":[");
	for (i = HMB_PH_FETCH; i < HMB_PH_COUNT; i++) {
		if (!(st->fw_mask & (1 << i)))
			continue;
		fprintf(out, "%s{\"phase\":\"%s\",\"seq\":%u,\"ts_ns\":%llu",
			n++ ? "," : "", hmb_phase_name((enum hmb_phase)i),
			st->fw_seq[i], (unsigned long long)st->fw_ts[i]);
		if (c->placed)
			fprintf(out, ",\"host_ns\":%.0f",
				hmb_clock_map(&an.clk, st->fw_ts[i],
					      st->fw_seq[i]));
		fputc('}', out);
	}
	fputc(']', out);
	if (st->fw_mask & (1 << HMB_PH_FETCH)) {
		struct bg_print_ctx p = { .c = c, .json = true };
		uint64_t t1 = st->fw_mask & (1 << HMB_PH_CQE_POSTED) ?
			st->fw_ts[HMB_PH_CQE_POSTED] : st->fw_ts[HMB_PH_FETCH];

		fprintf(out, ",\"background\":[");
		hmb_analysis_bg_overlap(&an, st->fw_ts[HMB_PH_FETCH], t1,
					bg_print, &p);
		fputc(']', out);
	}
	fputc('}', out);
}

static void print_clock(void)
{
	const struct hmb_clock *k = &an.clk;

	if (!fw_on)
		return;
	if (env.json) {
		fprintf(out, "\"clock\":{\"valid\":%s", k->valid ? "true" : "false");
		if (k->valid)
			fprintf(out, ",\"offset_ns\":%.0f,\"offset_err_ns\":%.0f,\"ref_fw_ns\":%.0f,\"drift_ppm\":%.3f,\"drift_err_ppm\":%.3f,\"consistent\":%s,\"points\":%zu,\"trimmed\":%zu",
				k->off_ns, k->off_err_ns, k->ref, k->drift * 1e6,
				k->drift_err < 0 ? -1 : k->drift_err * 1e6,
				k->consistent ? "true" : "false", k->used,
				k->trimmed);
		fprintf(out, ",\"steps\":%u,\"matched_seen\":%llu",
			k->steps, (unsigned long long)k->added);
		if (k->have_prev)
			fprintf(out, ",\"step_seq\":%u,\"step_fw_ns\":%lld,\"step_ns\":%.0f,\"step_err_ns\":%.0f,\"skipped_before_step\":%llu",
				k->step_seq, (long long)k->step_t, k->step_ns,
				k->step_err_ns,
				(unsigned long long)k->skipped_before_step);
		fputs("},", out);
		return;
	}
	if (!k->valid) {
		fprintf(out, "clock fw->host: no estimate yet (%llu matched commands, %u step(s))\n",
			(unsigned long long)k->added, k->steps);
		return;
	}
	fprintf(out, "clock fw->host: host = fw %+.3f us (±%.3f us) at fw %.6f s, drift ",
		k->off_ns / 1e3, k->off_err_ns / 1e3, k->ref / 1e9);
	if (k->drift_err < 0)
		fprintf(out, "not estimated (window too short)");
	else
		fprintf(out, "%+.3f ppm (±%.3f)", k->drift * 1e6,
			k->drift_err * 1e6);
	fprintf(out, "; %zu commands, %zu trimmed per side%s, %u step(s)\n",
		k->used, k->trimmed,
		k->consistent ? "" : ", INCONSISTENT bounds", k->steps);
	if (k->have_prev)
		fprintf(out, "clock step: %+.3f us (±%.3f) at firmware record seq %u (fw %.6f s); records before it keep the earlier estimate; %llu commands across it left out of the estimate\n",
			k->step_ns / 1e3, k->step_err_ns / 1e3, k->step_seq,
			(double)k->step_t / 1e9,
			(unsigned long long)k->skipped_before_step);
}

static void print_totals_json(const struct hmb_totals *t)
{
	fprintf(out, "{\"commands\":%llu,\"matched\":%llu,\"partial\":%llu,\"unmatched\":%llu,\"host_only\":%llu,\"placed\":%llu,\"in_window\":%llu,\"in_window_err\":%llu,\"outside_window\":%llu,\"reuse_flushed\":%llu,\"swept\":%llu,\"no_room\":%llu,\"no_complete\":%llu,\"below_min_latency\":%llu}",
		(unsigned long long)t->cmds, (unsigned long long)t->matched,
		(unsigned long long)t->partial, (unsigned long long)t->unmatched,
		(unsigned long long)t->host_only, (unsigned long long)t->placed,
		(unsigned long long)t->in_window,
		(unsigned long long)t->in_window_err,
		(unsigned long long)t->outside_window,
		(unsigned long long)t->reused, (unsigned long long)t->swept,
		(unsigned long long)t->no_room,
		(unsigned long long)t->no_complete,
		(unsigned long long)t->below_min);
}

static void print_report(const char *kind, bool final)
{
	const struct hmb_totals *t = final ? &an.tot : &an.iv;
	struct hmb_log2_hist bh[HMB_H_COUNT];
	static struct hmb_log2_hist bh_all[HMB_H_COUNT];
	uint64_t c[HMB_C_COUNT];
	const struct hmb_cmd *top = final ? an.top_all : an.top_iv;
	unsigned int ntop = final ? an.ntop_all : an.ntop_iv;
	char ts[32];
	time_t now = time(NULL);
	unsigned int i;
	uint64_t nio;
	int s;

	strftime(ts, sizeof(ts), "%H:%M:%S", localtime(&now));
	read_counters(c);
	for (i = 0; i < HMB_H_COUNT; i++) {
		if (final) {
			take_bpf_hist(i, &bh[i]);
			for (s = 0; s < HMB_MAX_SLOTS; s++)
				bh_all[i].slots[s] += bh[i].slots[s];
			bh[i] = bh_all[i];
		} else {
			take_bpf_hist(i, &bh[i]);
			for (s = 0; s < HMB_MAX_SLOTS; s++)
				bh_all[i].slots[s] += bh[i].slots[s];
		}
	}
	nio = hmb_hist_total(&bh[HMB_H_HOST_TOTAL]);
	if (env.json) {
		fprintf(out, "{\"type\":\"%s\",\"time\":\"%s\",\"mode\":\"%s\",\"completed\":%llu,\"totals\":",
			kind, ts, mode_name, (unsigned long long)nio);
		print_totals_json(t);
		fprintf(out, ",\"counters\":{");
		for (i = 0; i < HMB_C_COUNT; i++)
			fprintf(out, "%s\"%s\":%llu", i ? "," : "",
				counter_names[i], (unsigned long long)c[i]);
		fprintf(out, ",\"bpf_recursion_misses\":%llu,\"stale_ids_removed\":%lu,\"stale_ids_restored\":%lu},",
			(unsigned long long)recursion_misses(),
			ids_swept.removed, ids_swept.restored);
		print_clock();
		fprintf(out, "\"hists_us\":{");
		for (i = 0; i < HMB_H_COUNT; i++) {
			if (!fw_on && i != HMB_H_HOST_TOTAL)
				continue;
			fprintf(out, "%s\"%s\":", i ? "," : "", bpf_hist_names[i]);
			hmb_hist_json(out, &bh[i]);
		}
		if (fw_on) {
			for (i = HMB_X_SUBMIT_TO_FETCH; i < HMB_X_COUNT; i++) {
				if (i == HMB_X_FW_TOTAL)
					continue;
				fprintf(out, ",\"%s\":", x_names[i]);
				hmb_hist_json(out, final ? &an.xh[i] : &an.xh_iv[i]);
			}
		}
		fprintf(out, "},\"top\":[");
		for (i = 0; i < ntop; i++) {
			if (i)
				fputc(',', out);
			print_cmd_json(&top[i]);
		}
		fprintf(out, "]}\n");
		fflush(out);
		return;
	}
	fprintf(out, "\n%s %s [%s] completed %llu", ts, kind, mode_name,
		(unsigned long long)nio);
	if (fw_on)
		fprintf(out, ", reported %llu: matched %llu (%.2f%%) partial %llu unmatched %llu; fw events inside host window %llu/%llu (%llu within clock error, %llu outside)",
			(unsigned long long)t->cmds,
			(unsigned long long)t->matched,
			t->cmds ? 100.0 * (double)t->matched / (double)t->cmds : 0,
			(unsigned long long)t->partial,
			(unsigned long long)t->unmatched,
			(unsigned long long)t->in_window,
			(unsigned long long)t->placed,
			(unsigned long long)t->in_window_err,
			(unsigned long long)t->outside_window);
	fputc('\n', out);
	fprintf(out, "losses: ringbuf reservations failed %llu, in-flight map full %llu, waiting map full %llu, completions without submit %llu, cid reuse flushes %llu",
		(unsigned long long)c[HMB_C_RB_FAIL],
		(unsigned long long)c[HMB_C_ACTIVE_FULL],
		(unsigned long long)c[HMB_C_DONE_FULL],
		(unsigned long long)c[HMB_C_HOST_NO_SUBMIT],
		(unsigned long long)c[HMB_C_REUSE_FLUSH]);
	fprintf(out, ", submitted while in flight %llu, missed by the kernel's recursion guard %llu",
		(unsigned long long)c[HMB_C_ACTIVE_OVERWRITE],
		(unsigned long long)recursion_misses());
	if (fw_on)
		fprintf(out, "; stale command ids removed by the sweep %lu (%lu put back for a racing submission)",
			ids_swept.removed, ids_swept.restored);
	if (fw_on)
		fprintf(out, "\nfw records %llu: matched %llu (by slba or ring order %llu), background %llu, unmatched: no command %llu, duplicate phase %llu, outside window %llu, unknown opcode %llu, short %llu, unmapped ring %llu, read failed %llu; markers %llu",
			(unsigned long long)c[HMB_C_FW_RECORDS],
			(unsigned long long)c[HMB_C_FW_MATCHED],
			(unsigned long long)c[HMB_C_FW_BY_ORDER],
			(unsigned long long)c[HMB_C_FW_BG],
			(unsigned long long)c[HMB_C_FW_NO_CMD],
			(unsigned long long)c[HMB_C_FW_DUP_PHASE],
			(unsigned long long)c[HMB_C_FW_OUT_OF_WINDOW],
			(unsigned long long)c[HMB_C_FW_UNKNOWN_OP],
			(unsigned long long)c[HMB_C_FW_SHORT],
			(unsigned long long)c[HMB_C_FW_UNMAPPED_RING],
			(unsigned long long)c[HMB_C_FW_READ_FAIL],
			(unsigned long long)c[HMB_C_FW_MARKER]);
	fputc('\n', out);
	print_clock();
	hmb_hist_print(out, &bh[HMB_H_HOST_TOTAL],
		       "host: submit -> complete (BPF map)");
	if (fw_on) {
		for (i = HMB_H_FW_TOTAL; i < HMB_H_COUNT; i++) {
			char title[96];

			snprintf(title, sizeof(title), "firmware: %s (BPF map, fw clock)",
				 bpf_hist_names[i]);
			hmb_hist_print(out, &bh[i], title);
		}
		hmb_hist_print(out, final ? &an.xh[HMB_X_SUBMIT_TO_FETCH] :
			       &an.xh_iv[HMB_X_SUBMIT_TO_FETCH],
			       "host submit -> fw fetch (clock-mapped)");
		hmb_hist_print(out, final ? &an.xh[HMB_X_CQE_TO_COMPLETE] :
			       &an.xh_iv[HMB_X_CQE_TO_COMPLETE],
			       "fw cqe posted -> host complete (clock-mapped)");
	}
	if (ntop) {
		fprintf(out, "\n%u slowest commands%s:\n", ntop,
			final ? " of the run" : " of the interval");
		for (i = 0; i < ntop; i++)
			print_cmd_text(&top[i], (int)i + 1);
	}
	fflush(out);
}

/* ------------------------------------------------------ event handling */

static int handle_event(void *ctx, void *data, size_t len)
{
	const __u32 *type = data;

	(void)ctx;
	if (len < sizeof(*type))
		return 0;
	if (*type == HMB_EV_CMD && len >= sizeof(struct hmb_cmd_event)) {
		const struct hmb_cmd_event *ev = data;

		hmb_analysis_cmd(&an, ev);
		if (env.per_command) {
			struct hmb_cmd c = { .ev = *ev };
			uint64_t lat = ev->st.complete_ns - ev->st.submit_ns;

			if (lat >= env.min_lat_us * 1000) {
				/* the breakdown is in the report; here the raw event */
				for (int i = 0; i < HMB_X_COUNT; i++)
					c.x[i] = -1;
				c.x[HMB_X_HOST_TOTAL] = (int64_t)lat;
				c.match = ev->st.flags & HMB_CF_HOST_ONLY ?
					  HMB_M_HOST_ONLY : ev->st.fw_mask ?
					  HMB_M_PARTIAL : HMB_M_UNMATCHED;
				if ((ev->st.fw_mask & 0x22) == 0x22)
					c.match = HMB_M_MATCHED;
				if (env.json) {
					fprintf(out, "{\"type\":\"cmd\",\"cmd\":");
					print_cmd_json(&c);
					fprintf(out, "}\n");
				} else {
					print_cmd_text(&c, 0);
				}
			}
		}
	} else if (*type == HMB_EV_BG && len >= sizeof(struct hmb_bg_event)) {
		const struct hmb_bg_event *ev = data;
		const struct hmb_dict_event *d = hmb_dict_lookup(dict, ev->opcode);

		hmb_analysis_bg(&an, ev, d ? d->bg_group : "?");
	} else if (*type == HMB_EV_FW_UNMATCHED &&
		   len >= sizeof(struct hmb_fw_event)) {
		const struct hmb_fw_event *ev = data;
		const struct hmb_dict_event *d = hmb_dict_lookup(dict, ev->opcode);

		if (env.verbose)
			fprintf(stderr, "unmatched fw record: ring %u seq %u ts %llu opcode 0x%04x (%s) sqid %u cid 0x%04x: %s\n",
				ev->ring, ev->seq, (unsigned long long)ev->ts_ns,
				ev->opcode, d ? d->name : "not in dictionary",
				ev->sqid, ev->cid,
				ev->reason < HMB_C_COUNT ?
				counter_names[ev->reason] : "?");
	}
	return 0;
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/*
 * Commands completed longer than the grace period ago whose firmware
 * records never came (or all of them, at exit), and commands that never
 * completed: take them out of the maps and count them.
 */
static void sweep(bool all)
{
	struct hmb_wait_key key, next, *prev = NULL, *keys;
	size_t n = 0, cap = 65536 + 1024, i;
	uint64_t now = mono_ns(), grace = (uint64_t)env.grace_ms * 1000000;
	struct hmb_cmd_event ev;
	struct hmb_sweep_ids ids;
	int fd;

	if (!fw_on)
		return;
	keys = malloc(cap * sizeof(*keys));
	if (!keys)
		return;
	fd = bpf_map__fd(skel->maps.cmds);
	while (n < cap && !bpf_map_get_next_key(fd, prev, &next)) {
		struct hmb_cmd_state st;

		key = next;
		prev = &key;
		if (bpf_map_lookup_elem(fd, &key, &st))
			continue;
		if (st.complete_ns ? (all || st.complete_ns + grace < now) :
		    ((all && st.submit_ns + grace < now) ||
		     st.submit_ns + 30000000000ULL < now))
			keys[n++] = key;
	}
	for (i = 0; i < n; i++) {
		memset(&ev, 0, sizeof(ev));
		if (bpf_map_lookup_and_delete_elem(fd, &keys[i], &ev.st))
			continue;	/* reported meanwhile */
		ev.type = HMB_EV_CMD;
		ev.ctrl = keys[i].k.ctrl;
		ev.qid = keys[i].k.qid;
		ev.cid = keys[i].k.cid;
		/* the program moves kseq past it at the key's next use */
		ev.st.flags |= HMB_CF_SWEPT;
		if (!ev.st.complete_ns)
			ev.st.flags |= HMB_CF_NO_COMPLETE;
		if (!(ev.st.flags & HMB_CF_FILTERED))
			handle_event(NULL, &ev, sizeof(ev));
	}
	free(keys);
	/* The ids whose last commands were just taken: out of the index. */
	if (!hmb_sweep_stale_ids(bpf_map__fd(skel->maps.kseq), fd,
				 bpf_map__max_entries(skel->maps.kseq), &ids)) {
		ids_swept.removed += ids.removed;
		ids_swept.restored += ids.restored;
	}
}

/* Publish the clock estimate to the BPF window check, or withdraw it. */
static void publish_clock(void)
{
	uint64_t c[HMB_C_COUNT];
	uint64_t ow, rec;

	if (!fw_on)
		return;
	read_counters(c);
	ow = c[HMB_C_FW_OUT_OF_WINDOW] - counters_prev[HMB_C_FW_OUT_OF_WINDOW];
	/* those attached by slba or ring order had no window check */
	rec = c[HMB_C_FW_RECORDS] - counters_prev[HMB_C_FW_RECORDS] -
	      (c[HMB_C_FW_BY_ORDER] - counters_prev[HMB_C_FW_BY_ORDER]);
	memcpy(counters_prev, c, sizeof(c));
	if (skel->bss->clk.valid && rec >= 100 && ow * 5 > rec) {
		/*
		 * More than 20 % of the records fell outside their windows:
		 * the estimate is wrong (a clock step larger than the loose
		 * tolerance: then nearly all are).  A few refused records are
		 * normal: those of commands flushed by cid reuse.  Stop
		 * checking and learn the clock again.
		 */
		fprintf(stderr, "hmb-trace-agent: %llu of %llu firmware records outside their host windows: clock estimate withdrawn, re-learning\n",
			(unsigned long long)ow, (unsigned long long)rec);
		skel->bss->clk.valid = 0;
		hmb_clock_reset(&an.clk);
		return;
	}
	if (!an.clk.valid || !an.clk.consistent) {
		skel->bss->clk.valid = 0;
		return;
	}
	skel->bss->clk.off_ns = (__s64)an.clk.off_ns;
	skel->bss->clk.drift_ppb = (__s64)(an.clk.drift * 1e9);
	skel->bss->clk.ref_fw = (__u64)an.clk.ref;
	/*
	 * Tight: prefer the command whose window holds the record within the
	 * estimate's error; loose: accept a stale estimate (drift since the
	 * last solve) rather than lose the record.
	 */
	skel->bss->clk.tight_ns = 20000 + (__u64)(4 * an.clk.off_err_ns);
	skel->bss->clk.tol_ns = 5000000 + (__u64)(8 * an.clk.off_err_ns);
	__atomic_store_n(&skel->bss->clk.valid, 1, __ATOMIC_RELEASE);
}

/* ---------------------------------------------------------------- main */

static int load_dict(void)
{
	struct hmb_error err = { 0 };
	int rc;

	if (env.dict_path)
		rc = hmb_dict_load(&dict, env.dict_path, &err);
	else
		rc = hmb_dict_parse(&dict, hmb_default_dict,
				    (size_t)(hmb_default_dict_end - hmb_default_dict - 1),
				    "built-in hmb-events.dict", &err);
	if (rc)
		fprintf(stderr, "hmb-trace-agent: event dictionary: %s\n", err.msg);
	return rc;
}

static int fill_evdesc(void)
{
	int fd = bpf_map__fd(skel->maps.evdesc);
	size_t i;

	for (i = 0; i < hmb_dict_count(dict); i++) {
		const struct hmb_dict_event *e = hmb_dict_event_at(dict, i);
		struct hmb_evdesc d = {
			.phase = (__u8)e->phase,
			.bg_edge = (__u8)e->bg_edge,
			.sqid_off = (__u16)(e->key_off[HMB_KEY_SQID] < 0 ? 0 :
					    e->key_off[HMB_KEY_SQID]),
			.cid_off = (__u16)(e->key_off[HMB_KEY_CID] < 0 ? 0 :
					   e->key_off[HMB_KEY_CID]),
			.min_len = e->min_len,
			.slba_off = HMB_NO_OFF,
		};
		const struct hmb_dict_field *sf = hmb_dict_field(e, "slba");
		__u32 op = e->opcode;

		if (e->phase == HMB_PHASE_FETCH && sf && sf->size == 8)
			d.slba_off = sf->offset;

		if (bpf_map_update_elem(fd, &op, &d, BPF_ANY)) {
			fprintf(stderr, "hmb-trace-agent: cannot load event 0x%04x into the BPF map: %s\n",
				op, strerror(errno));
			return -1;
		}
	}
	return 0;
}

int main(int argc, char **argv)
{
	static const struct argp argp = { .options = opts, .parser = parse_arg,
					  .doc = doc };
	struct hmb_analysis_opts ao = { 0 };
	struct ring_buffer *rb = NULL;
	bool use_nvme = false, use_block = false, have_nvme, have_fw;
	bool nvme_btf = false, blk_btf = false;
	int ctrl = -1, err, i;
	unsigned int nsid = 0;
	__u32 devt = 0;
	uint64_t next_tick, next_sweep, next_report;
	long reports = 0;

	err = argp_parse(&argp, argc, argv, 0, NULL, NULL);
	if (err)
		return 2;
	libbpf_set_print(libbpf_print_fn);
	out = stdout;
	if (env.output) {
		out = fopen(env.output, "w");
		if (!out) {
			fprintf(stderr, "hmb-trace-agent: cannot create %s: %s\n",
				env.output, strerror(errno));
			return 1;
		}
	}
	if (load_dict())
		return 1;

	/* What is there? */
	have_nvme = tp_exists("nvme", "nvme_setup_cmd") &&
		    tp_exists("nvme", "nvme_complete_rq");
	have_fw = tp_exists("hmb_trace", "hmb_trace_record");
	if (env.disk && resolve_nvme(env.disk, &ctrl, &nsid) == 0) {
		if (env.mode == MODE_BLOCK) {
			if (block_devt(env.disk, &devt)) {
				fprintf(stderr, "hmb-trace-agent: no block device '%s'\n",
					env.disk);
				return 1;
			}
			use_block = true;
		} else {
			use_nvme = true;
		}
	} else if (env.disk) {
		if (env.mode == MODE_NVME) {
			fprintf(stderr, "hmb-trace-agent: '%s' is not an NVMe device (nvmeN or nvmeNnM)\n",
				env.disk);
			return 1;
		}
		if (block_devt(env.disk, &devt)) {
			fprintf(stderr, "hmb-trace-agent: no block device '%s' (/sys/class/block/%s/dev missing)\n",
				env.disk, env.disk);
			return 1;
		}
		use_block = true;
	} else {
		use_nvme = env.mode != MODE_BLOCK && have_nvme;
		use_block = !use_nvme;
	}
	if (use_nvme && !have_nvme) {
		if (env.mode == MODE_NVME || (env.disk && ctrl >= 0)) {
			fprintf(stderr, "hmb-trace-agent: NVMe tracepoints nvme:nvme_setup_cmd/nvme_complete_rq not found (%s): is the nvme driver loaded?\n",
				tracefs() ? tracefs() : "no tracefs mounted");
			return 1;
		}
	}
	if (use_nvme) {
		nvme_btf = tp_btf_exists("nvme_setup_cmd", "nvme_core") &&
			   tp_btf_exists("nvme_complete_rq", "nvme_core");
		fw_on = have_fw;
		if (!fw_on)
			missing_msg = "hmb_trace:hmb_trace_record not found (nvme-hmb-trace.ko not loaded, or its bridge is off): host-only latency from the NVMe tracepoints, no firmware phases";
		mode_name = fw_on ? "nvme+firmware" : "nvme host-only";
		if (ctrl < 0)
			ctrl = -1;
	} else {
		blk_btf = tp_btf_exists("block_rq_issue", NULL) &&
			  tp_btf_exists("block_rq_complete", NULL);
		mode_name = "block host-only";
		if (!have_nvme)
			missing_msg = "no NVMe tracepoints (nvme:nvme_setup_cmd: no NVMe driver on this kernel): host-only latency from the block layer (block_rq_issue -> block_rq_complete), no firmware phases";
		else
			missing_msg = "block mode: host-only latency from the block layer, no firmware phases";
	}
	if (*missing_msg)
		fprintf(stderr, "hmb-trace-agent: %s\n", missing_msg);

	nr_cpus = libbpf_num_possible_cpus();
	if (nr_cpus <= 0) {
		fprintf(stderr, "hmb-trace-agent: cannot count CPUs: %s\n",
			strerror(-nr_cpus));
		return 1;
	}
	skel = hmb_agent__open();
	if (!skel) {
		fprintf(stderr, "hmb-trace-agent: cannot open the BPF object: %s\n",
			strerror(errno));
		return 1;
	}
	skel->rodata->fw_enabled = fw_on;
	skel->rodata->emit_all = use_nvme || env.per_command;
	skel->rodata->targ_ctrl = use_nvme ? ctrl : -1;
	skel->rodata->targ_nsid = nsid;
	skel->rodata->targ_opc = env.opcode;
	skel->rodata->targ_dev = devt;
	skel->rodata->min_lat_ns = env.min_lat_us * 1000;
	err = bpf_map__set_max_entries(skel->maps.rb, env.ringbuf_mb << 20);
	if (err) {
		fprintf(stderr, "hmb-trace-agent: --ringbuf-mb %u: %s\n",
			env.ringbuf_mb, strerror(-err));
		hmb_agent__destroy(skel);
		return 1;
	}

	bpf_program__set_autoload(skel->progs.nvme_setup_btf, use_nvme && nvme_btf);
	bpf_program__set_autoload(skel->progs.nvme_complete_btf, use_nvme && nvme_btf);
	bpf_program__set_autoload(skel->progs.nvme_setup_raw, use_nvme && !nvme_btf);
	bpf_program__set_autoload(skel->progs.nvme_complete_raw, use_nvme && !nvme_btf);
	bpf_program__set_autoload(skel->progs.hmb_record, use_nvme && fw_on);
	bpf_program__set_autoload(skel->progs.blk_issue_btf, use_block && blk_btf);
	bpf_program__set_autoload(skel->progs.blk_complete_btf, use_block && blk_btf);
	bpf_program__set_autoload(skel->progs.blk_issue_raw, use_block && !blk_btf);
	bpf_program__set_autoload(skel->progs.blk_complete_raw, use_block && !blk_btf);
	bpf_program__set_autoload(skel->progs.hmb_test_drive, false);

	err = hmb_agent__load(skel);
	if (err) {
		fprintf(stderr, "hmb-trace-agent: cannot load the BPF programs (%s, %s): %s (run with -v for the verifier log)\n",
			mode_name, (use_nvme ? nvme_btf : blk_btf) ? "tp_btf" : "raw_tp",
			strerror(-err));
		goto cleanup;
	}
	if (fill_evdesc())
		goto cleanup;
	if (use_nvme) {
		int fd = bpf_map__fd(skel->maps.ring_ctrl);
		__u32 r, v;

		for (r = 0; r < HMB_MAX_RINGS; r++) {
			v = env.ring_ctrl_set ? env.ring_ctrl[r] :
			    (__u32)(ctrl >= 0 ? ctrl : 0) + 1;
			bpf_map_update_elem(fd, &r, &v, BPF_ANY);
		}
	}
	err = hmb_agent__attach(skel);
	if (err) {
		fprintf(stderr, "hmb-trace-agent: cannot attach the BPF programs: %s\n",
			strerror(-err));
		goto cleanup;
	}
	rb = ring_buffer__new(bpf_map__fd(skel->maps.rb), handle_event, NULL, NULL);
	if (!rb) {
		err = -errno;
		fprintf(stderr, "hmb-trace-agent: cannot open the BPF ring buffer: %s\n",
			strerror(errno));
		goto cleanup;
	}
	ao.top_n = env.top_n;
	ao.min_lat_ns = env.min_lat_us * 1000;
	ao.clock_window = env.clock_window;
	if (hmb_analysis_init(&an, &ao)) {
		fprintf(stderr, "hmb-trace-agent: out of memory\n");
		err = -ENOMEM;
		goto cleanup;
	}
	signal(SIGINT, sig_handler);
	signal(SIGTERM, sig_handler);

	if (env.json) {
		fprintf(out, "{\"type\":\"start\",\"mode\":\"%s\",\"attach\":\"%s\",\"firmware\":%s,\"missing\":\"%s\",\"ctrl\":%d,\"nsid\":%u,\"dev\":\"%u:%u\",\"interval_s\":%ld,\"dict_events\":%zu}\n",
			mode_name, (use_nvme ? nvme_btf : blk_btf) ? "tp_btf" : "raw_tp",
			fw_on ? "true" : "false", missing_msg, ctrl, nsid,
			devt >> 20, devt & 0xfffff, env.interval,
			hmb_dict_count(dict));
	} else {
		fprintf(out, "Tracing %s (%s", mode_name,
			(use_nvme ? nvme_btf : blk_btf) ? "tp_btf" : "raw_tp");
		if (use_nvme && ctrl >= 0)
			fprintf(out, ", nvme%d", ctrl);
		if (nsid)
			fprintf(out, " nsid %u", nsid);
		if (devt)
			fprintf(out, ", dev %u:%u", devt >> 20, devt & 0xfffff);
		if (fw_on) {
			fprintf(out, ", rings ->");
			for (i = 0; i < 4; i++)
				fprintf(out, " %d:nvme%d", i, env.ring_ctrl_set ?
					(int)env.ring_ctrl[i] - 1 :
					(ctrl >= 0 ? ctrl : 0));
			fprintf(out, " ...");
		}
		fprintf(out, ")... Hit Ctrl-C to end.\n");
	}
	fflush(out);

	next_tick = mono_ns() + 200000000ULL;
	next_sweep = mono_ns() + 250000000ULL;
	next_report = mono_ns() + (uint64_t)env.interval * 1000000000ULL;
	while (!exiting) {
		uint64_t now;

		err = ring_buffer__poll(rb, 100);
		if (err == -EINTR) {
			err = 0;
			break;
		}
		if (err < 0) {
			fprintf(stderr, "hmb-trace-agent: polling the ring buffer: %s\n",
				strerror(-err));
			break;
		}
		err = 0;
		now = mono_ns();
		if (now >= next_tick) {
			hmb_analysis_tick(&an);
			publish_clock();
			next_tick = now + 500000000ULL;
		}
		if (now >= next_sweep) {
			sweep(false);
			next_sweep = now + 250000000ULL;
		}
		if (now >= next_report) {
			hmb_analysis_tick(&an);
			print_report("interval", false);
			hmb_analysis_new_interval(&an);
			if (!use_nvme && env.top_n)
				skel->bss->emit_floor_ns = 0;
			next_report = now + (uint64_t)env.interval * 1000000000ULL;
			if (++reports >= env.times)
				break;
		}
		/* block mode: only the top-N candidates need to cross over */
		if (!use_nvme && !env.per_command && env.top_n &&
		    an.ntop_iv == env.top_n)
			skel->bss->emit_floor_ns =
				(uint64_t)an.top_iv[env.top_n - 1].x[HMB_X_HOST_TOTAL];
	}
	/* Drain: late firmware records get their grace period, then sweep. */
	if (fw_on) {
		uint64_t until = mono_ns() + (uint64_t)env.grace_ms * 1000000;

		while (mono_ns() < until && ring_buffer__poll(rb, 50) >= 0)
			;
	}
	ring_buffer__consume(rb);
	sweep(true);
	ring_buffer__consume(rb);
	hmb_analysis_flush(&an);
	print_report("summary", true);

cleanup:
	ring_buffer__free(rb);
	hmb_agent__destroy(skel);
	hmb_analysis_free(&an);
	hmb_dict_free(dict);
	if (out && out != stdout && fclose(out)) {
		fprintf(stderr, "hmb-trace-agent: writing %s: %s\n", env.output,
			strerror(errno));
		err = err ? err : -EIO;
	}
	return err ? 1 : 0;
}
