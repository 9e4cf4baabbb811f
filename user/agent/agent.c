// SPDX-License-Identifier: GPL-2.0
/*
 * hmb-trace-agent - live per-command NVMe latency, split into host and
 * firmware phases by joining nvme:nvme_setup_cmd / nvme:nvme_complete_rq
 * with the firmware records nvme-hmb-trace.ko's bridge emits as
 * hmb_trace:hmb_trace_records (hmb_trace_record with an older module).  Host-only when the module or NVMe is
 * missing (block-layer fallback, like biolatency).  See docs/agent.md.
 *
 * The join itself runs in BPF (bpf/hmb_agent.bpf.c); every joined command
 * goes to libhmbtrace's command model (hmbtrace_live.h), which learns the
 * firmware clock, judges each command and keeps the totals, histograms and
 * slowest commands that print.c prints.
 */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <bpf/libbpf.h>
#include <bpf/bpf.h>

#include "agent.h"
#include "evdesc.h"
#include "fwhist.h"
#include "snap.h"
#include "trigger.h"
#include "hmb_agent.skel.h"

/* The BPF side's numbering and layouts are the command model's. */
_Static_assert(HMB_MAX_SLOTS == HMB_HIST_SLOTS &&
	       sizeof(((struct hmb_cmd_state *)0)->fw_ts) ==
	       sizeof(((struct hmb_fw_side *)0)->ts) &&
	       sizeof(((struct hmb_cmd_state *)0)->fw_seq) ==
	       sizeof(((struct hmb_fw_side *)0)->seq),
	       "BPF histogram and phase arrays are libhmbtrace's");
_Static_assert(HMB_PH_FETCH == HMB_PHASE_FETCH &&
	       HMB_PH_MEDIA_START == HMB_PHASE_MEDIA_START &&
	       HMB_PH_MEDIA_END == HMB_PHASE_MEDIA_END &&
	       HMB_PH_XFER_DONE == HMB_PHASE_XFER_DONE &&
	       HMB_PH_CQE_POSTED == HMB_PHASE_CQE_POSTED &&
	       HMB_PH_COUNT == HMB_PHASE_COUNT,
	       "BPF phases are enum hmb_phase");
_Static_assert(HMB_CF_FILTERED == HMB_CMD_F_FILTERED &&
	       HMB_CF_NO_ROOM == HMB_CMD_F_NO_ROOM &&
	       HMB_CF_REUSED == HMB_CMD_F_REUSED &&
	       HMB_CF_SWEPT == HMB_CMD_F_SWEPT &&
	       HMB_CF_BLOCK == HMB_CMD_F_BLOCK &&
	       HMB_CF_HOST_ONLY == HMB_CMD_F_HOST_ONLY &&
	       HMB_CF_NO_COMPLETE == HMB_CMD_F_NO_COMPLETE,
	       "BPF command flags are the command model's");

struct agent ag;


/* ------------------------------------------------------------ events */

static volatile sig_atomic_t exiting;
static volatile sig_atomic_t usr1;	/* SIGUSR1s not yet taken */

static void sig_handler(int sig)
{
	(void)sig;
	exiting = 1;
}

static void usr1_handler(int sig)
{
	(void)sig;
	__atomic_fetch_add(&usr1, 1, __ATOMIC_RELAXED);
}

/*
 * SIGUSR1 asks for a snapshot (--snapshot-dir); its default action would
 * kill the agent, so it is caught from the very start, before the agent
 * could take one, and taken (or said to be useless) in the loop.
 */
static void catch_usr1(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = usr1_handler;
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_RESTART;
	sigaction(SIGUSR1, &sa, NULL);
}

static struct hmb_outbuf snap_ob;	/* clock.json */

static const char *clock_json(void)
{
	snap_ob.err = 0;
	print_clock_json_to(&snap_ob);
	return snap_ob.err ? "{}\n" : snap_ob.buf;
}

/* The SIGUSR1s that came, the snapshot whose --post is over, --pre. */
static void snap_loop(uint64_t now)
{
	static bool said;
	/* taken and zeroed at once: one arriving meanwhile is not lost */
	sig_atomic_t n = __atomic_exchange_n(&usr1, 0, __ATOMIC_RELAXED);

	if (n) {
		if (!ag.env.snap_dir && !said) {
			fprintf(stderr, PROG ": SIGUSR1 ignored: no --snapshot-dir\n");
			said = true;
		}
		while (ag.env.snap_dir && n--)
			snap_request("sigusr1", "{\"type\":\"signal\",\"signal\":\"SIGUSR1\"}\n",
				     now);
	}
	if (!ag.env.snap_dir)
		return;
	snap_tick(now);
	/*
	 * Not before both sides have caught up with the window's end: the
	 * commands still waiting to be judged are not judged early for a
	 * bundle, which would take their placement's look past them away
	 * from the agent's own output.
	 */
	if (snap_due(now))
		snap_take(now, clock_json());
}

/*
 * snap_opts.host_line: a command of the window (on_cmd()) as its -j
 * --per-command line, in the bundle's writer.  Its background windows
 * are those the model holds then (the writer's copy of it, at the
 * snapshot), not at its judging: one still open then may have closed.
 */
static void snap_line(struct hmb_outbuf *ob, const void *ent, size_t len)
{
	struct hmb_cmd c;

	if (len != sizeof(c)) {
		ob->err = EINVAL;
		return;
	}
	memcpy(&c, ent, sizeof(c));	/* the window's bytes are unaligned */
	print_cmd_json_to(ob, &c);
}

static int start_snap(void)
{
	struct snap_opts o = {
		.dir = ag.env.snap_dir,
		.pre_s = ag.env.snap_pre_s,
		.post_s = ag.env.snap_post_s,
		.window = ag.env.snap_window,
		.max_snaps = ag.env.snap_max,
		.holdoff_s = ag.env.snap_holdoff_s,
		.prog = PROG,
		.sidecar = dump_sidecar,
		.host_line = snap_line,
	};

	if (!ag.env.snap_dir)
		return 0;
	if (hmb_ob_open(&snap_ob, -1, "snapshot", 1 << 16)) {
		fprintf(stderr, PROG ": out of memory\n");
		return -1;
	}
	return snap_init(&o);
}

static int libbpf_print_fn(enum libbpf_print_level level, const char *fmt,
			   va_list args)
{
	if (level == LIBBPF_DEBUG && !ag.env.verbose)
		return 0;
	return vfprintf(stderr, fmt, args);
}

static const char *block_op_name(unsigned int op, char *buf, size_t len)
{
	static const char *const names[] = { "read", "write", "flush",
					     "discard" };

	if (op < 4)
		return names[op];
	snprintf(buf, len, "op%u", op);
	return buf;
}

/* A command the BPF join reports, as the command model takes it. */
static void from_bpf(const struct hmb_cmd_event *ev, struct hmb_host_cmd *h,
		     struct hmb_fw_side *fw)
{
	const struct hmb_cmd_state *st = &ev->st;
	char buf[16];

	memset(h, 0, sizeof(*h));
	memset(fw, 0, sizeof(*fw));
	h->submit_ns = st->submit_ns;
	h->complete_ns = st->complete_ns;
	h->slba = st->slba;
	h->ctrl = ev->ctrl;
	h->nsid = st->nsid;
	h->nlb = st->nlb;
	h->dev = st->dev;
	h->flags = st->flags;
	h->qid = ev->qid;
	h->cid = ev->cid;
	h->status = st->status;
	snprintf(h->opc, sizeof(h->opc), "%s", st->flags & HMB_CF_BLOCK ?
		 block_op_name(st->opc, buf, sizeof(buf)) :
		 hmb_nvme_opc_name(st->opc, buf, sizeof(buf)));
	if (st->who.comm[0]) {
		h->pid = st->who.tgid;
		h->tid = st->who.tid;
		h->cgroup = st->who.cgid;
		/* the kernel's comm is NUL-terminated within its 16 bytes */
		memcpy(h->comm, st->who.comm, sizeof(h->comm));
		h->comm[sizeof(h->comm) - 1] = 0;
	}
	fw->mask = st->fw_mask;
	memcpy(fw->ts, st->fw_ts, sizeof(fw->ts));
	memcpy(fw->seq, st->fw_seq, sizeof(fw->seq));
}

static void fw_unmatched(const struct hmb_fw_event *ev)
{
	const struct hmb_dict_event *d = hmb_dict_lookup(ag.dict, ev->opcode);

	fprintf(stderr, "unmatched fw record: ring %u seq %u ts %llu opcode 0x%04x (%s) sqid %u cid 0x%04x: %s\n",
		ev->ring, ev->seq, (unsigned long long)ev->ts_ns, ev->opcode,
		d ? d->name : "not in dictionary", ev->sqid, ev->cid,
		ev->reason < HMB_C_COUNT ? counter_names[ev->reason] : "?");
}

int handle_event(void *ctx, void *data, size_t len)
{
	const __u32 *type = data;

	(void)ctx;
	if (len < sizeof(*type))
		return 0;
	if (*type == HMB_EV_CMD && len >= sizeof(struct hmb_cmd_event)) {
		struct hmb_host_cmd h;
		struct hmb_fw_side fw;

		from_bpf(data, &h, &fw);
		hmb_fw_phase_hists(&((const struct hmb_cmd_event *)data)->st,
				   ag.fw_hist_iv);
		hmb_live_cmd(&ag.live, &h, &fw);
	} else if (*type == HMB_EV_BG && len >= sizeof(struct hmb_bg_event)) {
		const struct hmb_bg_event *ev = data;
		const struct hmb_dict_event *d =
			hmb_dict_lookup(ag.dict, ev->opcode);

		hmb_live_bg(&ag.live, ev->ts_ns, ev->opcode, ev->edge,
			    d ? d->bg_group : "?", ev->payload,
			    ev->payload_len < HMB_BG_PAYLOAD ? ev->payload_len :
			    HMB_BG_PAYLOAD);
	} else if (*type == HMB_EV_TRIGGER &&
		   len >= sizeof(struct hmb_trig_event)) {
		trig_event(data);
	} else if (*type == HMB_EV_FW_UNMATCHED &&
		   len >= sizeof(struct hmb_fw_event) && ag.env.verbose) {
		fw_unmatched(data);
	}
	return 0;
}

/* Publish the clock estimate to the BPF window check, or withdraw it. */
static void publish_clock(void)
{
	const struct hmb_clock *k = &ag.live.clk;
	struct hmb_clk *b = &ag.skel->bss->clk;
	uint64_t c[HMB_C_COUNT], ow, rec;

	if (!ag.fw_on)
		return;
	read_counters(c);
	ow = c[HMB_C_FW_OUT_OF_WINDOW] - ag.counters_prev[HMB_C_FW_OUT_OF_WINDOW];
	/* while valid, even what slba or ring order proposes is checked */
	rec = c[HMB_C_FW_RECORDS] - ag.counters_prev[HMB_C_FW_RECORDS];
	memcpy(ag.counters_prev, c, sizeof(c));
	if (b->valid && rec >= 100 && ow * 5 > rec) {
		/*
		 * More than 20 % of the records fell outside their windows:
		 * the estimate is wrong (a clock step larger than the loose
		 * tolerance: then nearly all are).  A few refused records are
		 * normal: those of commands flushed by cid reuse.  Stop
		 * checking and learn the clock again.
		 */
		fprintf(stderr, PROG ": %llu of %llu firmware records outside their host windows: clock estimate withdrawn, re-learning\n",
			(unsigned long long)ow, (unsigned long long)rec);
		b->valid = 0;
		hmb_clock_reset(&ag.live.clk);
		return;
	}
	if (!k->valid || !k->consistent) {
		b->valid = 0;
		return;
	}
	b->off_ns = (__s64)k->off_ns;
	b->drift_ppb = (__s64)(k->drift * 1e9);
	b->ref_fw = (__u64)k->ref;
	/*
	 * Tight: prefer the command whose window holds the record within the
	 * estimate's error; loose: accept a stale estimate (drift since the
	 * last solve) rather than lose the record.
	 */
	b->tight_ns = 20000 + (__u64)(4 * k->off_err_ns);
	b->tol_ns = 5000000 + (__u64)(8 * k->off_err_ns);
	__atomic_store_n(&b->valid, 1, __ATOMIC_RELEASE);
}

/* ----------------------------------------------------------------- setup */

static int load_dict(void)
{
	struct hmb_error err = { 0 };
	const char *text;
	size_t len;
	int rc;

	if (ag.env.dict_path) {
		rc = hmb_dict_load(&ag.dict, ag.env.dict_path, &err);
	} else {
		text = hmb_dict_builtin(&len);
		rc = hmb_dict_parse(&ag.dict, text, len,
				    "built-in hmb-events.dict", &err);
	}
	if (rc)
		fprintf(stderr, PROG ": event dictionary: %s\n", err.msg);
	return rc;
}

static int fill_evdesc(void)
{
	__u32 op = 0;
	int err = hmb_evdesc_load(bpf_map__fd(ag.skel->maps.evdesc), ag.dict,
				  &op);

	if (err) {
		fprintf(stderr, PROG ": cannot load event 0x%04x into the BPF map: %s\n",
			op, strerror(-err));
		return -1;
	}
	return 0;
}

/* -d names an NVMe device: NVMe mode, or its block device in block mode. */
static int choose_disk_mode(bool *use_block)
{
	const struct env *e = &ag.env;

	if (resolve_nvme(e->disk, &ag.ctrl, &ag.nsid) == 0) {
		for (unsigned int r = 0; r < HMB_MAX_RINGS; r++) {
			if (!e->ring_ctrl[r] ||
			    e->ring_ctrl[r] == (unsigned int)ag.ctrl + 1)
				continue;
			fprintf(stderr, PROG ": --ring-ctrl gives ring %u to nvme%u, but -d %s is nvme%d: the agent joins only -d's commands, so those records would match nothing\n",
				r, e->ring_ctrl[r] - 1, e->disk, ag.ctrl);
			return -1;
		}
		if (e->mode != MODE_BLOCK) {
			ag.use_nvme = true;
			return 0;
		}
	} else if (e->mode == MODE_NVME) {
		fprintf(stderr, PROG ": '%s' is not an NVMe device (nvmeN or nvmeNnM)\n",
			e->disk);
		return -1;
	}
	if (block_devt(e->disk, &ag.devt)) {
		fprintf(stderr, PROG ": no block device '%s' (/sys/class/block/%s/dev missing)\n",
			e->disk, e->disk);
		return -1;
	}
	*use_block = true;
	return 0;
}

static bool who_filtered(void)
{
	return ag.env.who_pid || ag.env.who_comm || ag.env.who_cgroup;
}

/*
 * Block mode: the request's own issue stamp, or a program at
 * block_rq_issue (as biolatency), per --issue-stamp.
 */
static int choose_stamp(void)
{
	bool readable = false;
	const char *why = ag.env.issue_stamp == STAMP_BPF ? "--issue-stamp bpf" :
			  kernel_issue_stamp(ag.devt, &readable);

	/* who issued a request is known only to a program at issue */
	if (who_filtered() && ag.env.issue_stamp == STAMP_KERNEL) {
		fprintf(stderr, PROG ": --issue-stamp kernel: --pid, --comm and --cgroup need a program at block_rq_issue (--issue-stamp bpf)\n");
		return -1;
	}
	if (!why && who_filtered())
		why = "--pid, --comm or --cgroup";
	ag.stamp_why = why ? why : "the kernel stamps each request at issue";
	ag.kernel_stamp = !why;
	if (ag.env.issue_stamp == STAMP_KERNEL && why) {
		if (!readable) {
			fprintf(stderr, PROG ": --issue-stamp kernel: %s\n", why);
			return -1;
		}
		fprintf(stderr, PROG ": --issue-stamp kernel, although %s: latencies may start early, and requests without a stamp are counted, not measured\n",
			why);
		ag.stamp_why = "--issue-stamp kernel";
		ag.kernel_stamp = true;
	}
	if (ag.env.verbose)
		fprintf(stderr, PROG ": block mode, issue time from %s: %s\n",
			ag.kernel_stamp ? "the request's stamp" :
			"a program at block_rq_issue", ag.stamp_why);
	return 0;
}

/*
 * Which tracepoint brings the firmware records (--fw-event): the bridge's
 * batches where the module has them (one program run per up to 64
 * records), else one run per record.
 */
static int choose_fw_event(void)
{
	bool rec = tp_exists("hmb_trace", "hmb_trace_record");
	bool batch = rec && tp_exists("hmb_trace", "hmb_trace_records");

	ag.fw_on = rec;
	ag.fw_event = "";
	if (ag.env.fw_event == FWEV_BATCH && rec && !batch) {
		fprintf(stderr, PROG ": --fw-event batch: this nvme-hmb-trace.ko has no hmb_trace:hmb_trace_records (an older module); --fw-event auto or record takes hmb_trace_record\n");
		return -1;
	}
	if (rec)
		ag.fw_event = batch && ag.env.fw_event != FWEV_RECORD ?
			      "hmb_trace_records" : "hmb_trace_record";
	return 0;
}

/* NVMe (with or without firmware records) or the block layer, and why. */
static int pick_mode(bool *use_btf)
{
	bool have_nvme = tp_exists("nvme", "nvme_setup_cmd") &&
			 tp_exists("nvme", "nvme_complete_rq");
	bool use_block = false;

	ag.ctrl = -1;
	if (ag.env.disk) {
		if (choose_disk_mode(&use_block))
			return -1;
	} else {
		ag.use_nvme = ag.env.mode != MODE_BLOCK && have_nvme;
		use_block = !ag.use_nvme;
	}
	if (ag.use_nvme && !have_nvme &&
	    (ag.env.mode == MODE_NVME || (ag.env.disk && ag.ctrl >= 0))) {
		fprintf(stderr, PROG ": NVMe tracepoints nvme:nvme_setup_cmd/nvme_complete_rq not found (%s): is the nvme driver loaded?\n",
			tracefs() ? tracefs() : "no tracefs mounted");
		return -1;
	}
	ag.missing_msg = "";
	ag.fw_event = "";
	if (ag.use_nvme) {
		*use_btf = tp_btf_exists("nvme_setup_cmd", "nvme_core") &&
			   tp_btf_exists("nvme_complete_rq", "nvme_core");
		if (choose_fw_event())
			return -1;
		if (!ag.fw_on)
			ag.missing_msg = "hmb_trace:hmb_trace_record not found (nvme-hmb-trace.ko not loaded, or its bridge is off): host-only latency from the NVMe tracepoints, no firmware phases";
		ag.mode_name = ag.fw_on ? "nvme+firmware" : "nvme host-only";
	} else {
		*use_btf = tp_btf_exists("block_rq_issue", NULL) &&
			   tp_btf_exists("block_rq_complete", NULL);
		ag.mode_name = "block host-only";
		ag.missing_msg = !have_nvme ?
			"no NVMe tracepoints (nvme:nvme_setup_cmd: no NVMe driver on this kernel): host-only latency from the block layer (block_rq_issue -> block_rq_complete), no firmware phases" :
			"block mode: host-only latency from the block layer, no firmware phases";
		if (choose_stamp())
			return -1;
	}
	(void)use_block;
	ag.attach = *use_btf ? "tp_btf" : "raw_tp";
	if (*ag.missing_msg)
		fprintf(stderr, PROG ": %s\n", ag.missing_msg);
	return 0;
}

/* pick_mode(), then the kernel BTF it parsed freed before libbpf's own. */
static int choose_mode(bool *use_btf)
{
	int rc = pick_mode(use_btf);

	probe_btf_release();
	return rc;
}

static void set_autoload(bool btf)
{
	struct hmb_agent *s = ag.skel;
	bool nvme = ag.use_nvme, blk = !ag.use_nvme;

	bpf_program__set_autoload(s->progs.nvme_setup_btf, nvme && btf);
	bpf_program__set_autoload(s->progs.nvme_complete_btf, nvme && btf);
	bpf_program__set_autoload(s->progs.nvme_setup_raw, nvme && !btf);
	bpf_program__set_autoload(s->progs.nvme_complete_raw, nvme && !btf);
	bpf_program__set_autoload(s->progs.hmb_record, nvme && ag.fw_on &&
				  !strcmp(ag.fw_event, "hmb_trace_record"));
	bpf_program__set_autoload(s->progs.hmb_records, nvme && ag.fw_on &&
				  !strcmp(ag.fw_event, "hmb_trace_records"));
	bpf_program__set_autoload(s->progs.blk_issue_btf,
				  blk && btf && !ag.kernel_stamp);
	bpf_program__set_autoload(s->progs.blk_complete_btf, blk && btf);
	bpf_program__set_autoload(s->progs.blk_issue_raw,
				  blk && !btf && !ag.kernel_stamp);
	bpf_program__set_autoload(s->progs.blk_complete_raw, blk && !btf);
	bpf_program__set_autoload(s->progs.hmb_frozen, nvme && ag.fw_on &&
				  trig_reset_armed() &&
				  tp_exists("hmb_trace", "hmb_trace_frozen"));
}

unsigned int ring_ctrl_of(unsigned int ring)
{
	if (ag.env.ring_ctrl_set)
		return ag.env.ring_ctrl[ring];
	return (unsigned int)(ag.ctrl >= 0 ? ag.ctrl : 0) + 1;
}

static void map_rings(void)
{
	int fd = bpf_map__fd(ag.skel->maps.ring_ctrl);

	for (__u32 r = 0; r < HMB_MAX_RINGS; r++) {
		__u32 v = ring_ctrl_of(r);

		bpf_map_update_elem(fd, &r, &v, BPF_ANY);
	}
}

/*
 * The command-id index sized for the controllers traced: their queues and
 * tags (docs/agent.md, "The id index").  -1 (said) if it cannot be.
 */
static int size_kseq(void)
{
	struct hmb_kseq_geom g = { .nctrl = 1, .nq = 1 };
	__u64 n = 1;
	int err;

	/* block mode: one entry (an array cannot have none), never used */
	if (ag.use_nvme) {
		kseq_geometry(ag.ctrl, &g);
		n = hmb_kseq_entries(&g);
	}
	if (n > UINT32_MAX / sizeof(struct hmb_kseq)) {
		fprintf(stderr, PROG ": the command-id index for controllers nvme%u-nvme%u (%u queues, %u tags) would take %llu MiB\n",
			g.ctrl0, g.ctrl0 + g.nctrl - 1, g.nq, 1U << g.tag_bits,
			(unsigned long long)(n * sizeof(struct hmb_kseq) >> 20));
		return -1;
	}
	err = bpf_map__set_max_entries(ag.skel->maps.kseq, (__u32)n);
	if (err) {
		fprintf(stderr, PROG ": cannot size the BPF map kseq: %s\n",
			strerror(-err));
		return -1;
	}
	ag.skel->rodata->kseq_ctrl0 = g.ctrl0;
	ag.skel->rodata->kseq_nctrl = g.nctrl;
	ag.skel->rodata->kseq_nq = g.nq;
	ag.skel->rodata->kseq_tag_bits = g.tag_bits;
	if (ag.env.verbose && ag.use_nvme)
		fprintf(stderr, PROG ": command-id index: controllers nvme%u-nvme%u, %u queues, %u tags each: %llu entries (%llu KiB)\n",
			g.ctrl0, g.ctrl0 + g.nctrl - 1, g.nq, 1U << g.tag_bits,
			(unsigned long long)n,
			(unsigned long long)(n * sizeof(struct hmb_kseq) >> 10));
	return 0;
}

/* --cgroup: its directory into the programs' map "cgroup". */
static int who_cgroup(void)
{
	__u32 k = 0, fd = (__u32)ag.env.who_cgroup_fd;

	if (ag.env.who_cgroup_fd < 0)
		return 0;
	if (bpf_map_update_elem(bpf_map__fd(ag.skel->maps.cgroup), &k, &fd,
				BPF_ANY)) {
		fprintf(stderr, PROG ": --cgroup %s: not a cgroup v2 directory (%s)\n",
			ag.env.who_cgroup, strerror(errno));
		return -1;
	}
	return 0;
}

/* Open, configure, load and attach the BPF programs. */
static int load_bpf(bool btf)
{
	int err;

	ag.nr_cpus = libbpf_num_possible_cpus();
	if (ag.nr_cpus <= 0) {
		fprintf(stderr, PROG ": cannot count CPUs: %s\n",
			strerror(-ag.nr_cpus));
		return -1;
	}
	ag.skel = hmb_agent__open();
	if (!ag.skel) {
		fprintf(stderr, PROG ": cannot open the BPF object: %s\n",
			strerror(errno));
		return -1;
	}
	ag.skel->rodata->fw_enabled = ag.fw_on;
	/* --snapshot-dir: every command goes into the window; --pel: into
	 * the commands an event is shown with */
	ag.skel->rodata->emit_all = ag.use_nvme || ag.env.per_command ||
				    ag.env.export_url || ag.env.snap_dir ||
				    ag.env.pel_dev;
	ag.skel->rodata->targ_ctrl = ag.use_nvme ? ag.ctrl : -1;
	ag.skel->rodata->targ_nsid = ag.nsid;
	ag.skel->rodata->targ_opc = ag.env.opcode;
	ag.skel->rodata->targ_dev = ag.devt;
	ag.skel->rodata->min_lat_ns = ag.env.min_lat_us * 1000;
	ag.skel->rodata->blk_kernel_stamp = !ag.use_nvme && ag.kernel_stamp;
	ag.skel->rodata->trig_armed = trig_armed_bits();
	ag.skel->rodata->targ_tgid = ag.env.who_pid;
	if (ag.env.who_comm)	/* checked: fits with its NUL */
		memcpy((char *)ag.skel->rodata->targ_comm, ag.env.who_comm,
		       strlen(ag.env.who_comm));
	ag.skel->rodata->targ_cgroup = ag.env.who_cgroup_fd >= 0;
	err = bpf_map__set_max_entries(ag.skel->maps.rb,
				       ag.env.ringbuf_mb << 20);
	if (err) {
		fprintf(stderr, PROG ": --ringbuf-mb %u: %s\n",
			ag.env.ringbuf_mb, strerror(-err));
		return -1;
	}
	ag.skel->rodata->dump_records = (ag.env.dump_path ||
					 ag.env.export_url ||
					 ag.env.snap_dir) && ag.fw_on;
	/* without -w the raw records' ring buffer costs one page, not 8 MiB */
	if (!ag.skel->rodata->dump_records &&
	    bpf_map__set_max_entries(ag.skel->maps.rawrb,
				     (__u32)sysconf(_SC_PAGESIZE))) {
		fprintf(stderr, PROG ": cannot size the BPF map rawrb\n");
		return -1;
	}
	if (size_kseq())
		return -1;
	set_autoload(btf);
	err = hmb_agent__load(ag.skel);
	if (err) {
		fprintf(stderr, PROG ": cannot load the BPF programs (%s, %s): %s (run with -v for the verifier log)\n",
			ag.mode_name, ag.attach, strerror(-err));
		return -1;
	}
	if (fill_evdesc() || trig_start() || who_cgroup())
		return -1;
	if (ag.use_nvme) {
		map_rings();
		if (map_join_maps())
			return -1;
	}
	/*
	 * Block mode with --top 0 and no --min-latency, --per-command or
	 * --export: no command needs to cross the ring buffer (the report's
	 * histogram and counters are the program's), so none does.
	 */
	if (!ag.use_nvme && !ag.skel->rodata->emit_all && !ag.env.top_n &&
	    !ag.env.min_lat_us)
		ag.skel->bss->emit_floor_ns = UINT64_MAX;
	err = hmb_agent__attach(ag.skel);
	if (err) {
		fprintf(stderr, PROG ": cannot attach the BPF programs: %s\n",
			strerror(-err));
		return -1;
	}
	bridge_start();
	return 0;
}

static int open_output(void)
{
	ag.out = stdout;
	if (ag.env.output) {
		ag.out = fopen(ag.env.output, "w");
		if (!ag.out) {
			fprintf(stderr, PROG ": cannot create %s: %s\n",
				ag.env.output, strerror(errno));
			return -1;
		}
	}
	if (hmb_ob_open_file(&ag.ob, ag.out, ag.env.output ? ag.env.output :
			     "<stdout>", 1 << 16)) {
		fprintf(stderr, PROG ": out of memory\n");
		return -1;
	}
	hmb_json_init(&ag.j, &ag.ob);
	return 0;
}

/* hmb_live's on_clock: every estimate, for --export's clock table. */
static void on_clock(void *ctx, const struct hmb_clock *k,
		     enum hmb_live_clock_why why)
{
	(void)ctx;
	export_clock(k, why == HMB_LIVE_CLOCK_STEP);
}

/* hmb_live's on_cmd: every judged command. */
static void on_cmd(void *ctx, const struct hmb_cmd *c)
{
	print_cmd_line(ctx, c);
	export_cmd(c);
	agent_pel_cmd(c);
	/* kept as it is: formatted only if a bundle holds it */
	if (ag.env.snap_dir)
		snap_host(c, sizeof(*c), c->h.complete_ns ? c->h.complete_ns :
			  hmb_now_ns(CLOCK_MONOTONIC));
}

static int start_model(void)
{
	struct hmb_live_opts o = {
		.top_n = ag.env.top_n,
		.min_lat_ns = ag.env.min_lat_us * 1000,
		.clock_window = ag.env.clock_window,
		.on_cmd = on_cmd,
		.on_clock = on_clock,
	};

	if (hmb_live_init(&ag.live, &o)) {
		fprintf(stderr, PROG ": out of memory\n");
		return -1;
	}
	return 0;
}

/* ------------------------------------------------------------------ run */

/*
 * libbpf's consume goes on while records keep coming: with a producer as
 * fast as this consumer (a flood of I/O, a guest starved of CPU,
 * --snapshot-dir writing) it would not return to run_loop, its ticks,
 * sweeps, reports, snapshots and SIGINT, for as long as the flood lasts.
 * A callback's negative return stops it after that record (libbpf has
 * moved past it): -EINTR once exiting, -EAGAIN once RB_SLICE_NS have
 * passed since run_loop polled (looked at every RB_CHECK records).  Not
 * while draining, which must take every record.
 */
#define RB_SLICE_NS	100000000ULL
#define RB_CHECK	64
static unsigned int rb_count;
static uint64_t rb_deadline;
static bool rb_draining;

static int rb_yield(void)
{
	if (rb_draining)
		return 0;
	if (exiting)
		return -EINTR;
	if (++rb_count < RB_CHECK)
		return 0;
	rb_count = 0;
	return hmb_now_ns(CLOCK_MONOTONIC) >= rb_deadline ? -EAGAIN : 0;
}

static int rb_event(void *ctx, void *data, size_t len)
{
	handle_event(ctx, data, len);
	return rb_yield();
}

static int rb_record(void *ctx, void *data, size_t len)
{
	dump_record(ctx, data, len);
	return rb_yield();
}

/* Poll, tick, sweep and report until told to stop; 0 or -errno. */
static int run_loop(struct ring_buffer *rb)
{
	const struct env *e = &ag.env;
	uint64_t next_tick = hmb_now_ns(CLOCK_MONOTONIC) + 200000000ULL;
	uint64_t next_sweep = hmb_now_ns(CLOCK_MONOTONIC) + 250000000ULL;
	uint64_t next_report = hmb_now_ns(CLOCK_MONOTONIC) +
			       (uint64_t)e->interval * 1000000000ULL;
	long reports = 0;
	int err = 0;

	while (!exiting) {
		uint64_t now;
		int64_t floor;

		/*
		 * A command's event, or a raw record's (-w, --snapshot-dir),
		 * wakes this poll only when the data waiting passes a
		 * quarter, a half or three quarters of its ring
		 * (hmb_agent_nvme.bpf.h, rb_wake_flags()): what came without
		 * a wakeup is taken here, every 100 ms at the latest.
		 */
		rb_deadline = hmb_now_ns(CLOCK_MONOTONIC) + RB_SLICE_NS;
		err = ring_buffer__poll(rb, 100);
		if (err == -EINTR && exiting)
			return 0;
		if (err == -EINTR || err == -EAGAIN)
			err = 0;	/* SIGUSR1, or rb_yield() */
		if (err >= 0)
			err = ring_buffer__consume(rb);
		if (err == -EINTR && exiting)
			return 0;
		if (err == -EINTR || err == -EAGAIN)
			err = 0;
		if (err < 0) {
			fprintf(stderr, PROG ": polling the ring buffer: %s\n",
				strerror(-err));
			return err;
		}
		now = hmb_now_ns(CLOCK_MONOTONIC);
		snap_loop(now);
		if (now >= next_tick) {
			hmb_live_tick(&ag.live);
			publish_clock();
			trig_tick(now);
			next_tick = now + 500000000ULL;
		}
		if (now >= next_sweep) {
			sweep(false);
			next_sweep = now + 250000000ULL;
		}
		if (now >= next_report) {
			hmb_live_tick(&ag.live);
			print_report("interval", false);
			agent_pel_report();
			hmb_live_new_interval(&ag.live);
			if (!ag.use_nvme && e->top_n)
				ag.skel->bss->emit_floor_ns = 0;
			next_report = now + (uint64_t)e->interval * 1000000000ULL;
			if (++reports >= e->times)
				return 0;
		}
		/* block mode: only the top-N candidates need to cross over */
		floor = hmb_cmd_stats_floor(&ag.live.iv);
		if (!ag.use_nvme && !e->per_command && floor >= 0)
			ag.skel->bss->emit_floor_ns = (uint64_t)floor;
	}
	return 0;
}

/*
 * --export: the loss counters of the summary's "losses" line (and the
 * dump's) as losses rows: layer bpf for what the BPF side could not
 * track or hand over, agent for what the agent refused.
 */
static void export_counters(void)
{
	static const int bpf[] = {
		HMB_C_RB_FAIL, HMB_C_ACTIVE_FULL, HMB_C_DONE_FULL,
		HMB_C_HOST_NO_SUBMIT, HMB_C_REUSE_FLUSH,
		HMB_C_ACTIVE_OVERWRITE,
	};
	static const int fw[] = {
		HMB_C_FW_NO_CMD, HMB_C_FW_DUP_PHASE, HMB_C_FW_OUT_OF_WINDOW,
		HMB_C_FW_UNKNOWN_OP, HMB_C_FW_SHORT, HMB_C_FW_UNMAPPED_RING,
		HMB_C_FW_READ_FAIL, HMB_C_DUMP_LOST,
	};
	uint64_t c[HMB_C_COUNT];

	if (!ag.env.export_url)
		return;
	read_counters(c);
	for (size_t i = 0; i < sizeof(bpf) / sizeof(bpf[0]); i++)
		export_counter("bpf", counter_names[bpf[i]], c[bpf[i]]);
	export_counter("bpf", "bpf_recursion_misses", recursion_misses());
	for (size_t i = 0; ag.fw_on && i < sizeof(fw) / sizeof(fw[0]); i++)
		export_counter("bpf", counter_names[fw[i]], c[fw[i]]);
	bridge_export();
	export_counter("agent", "records_refused", ag.dump.refused);
	export_counter("agent", "ignored", ag.dump.export_ignored);
}

/*
 * Late firmware records get their grace period, then the sweep.  The
 * programs are detached before the last events are taken and the summary
 * read: its counters and histograms are then of the same events (a disk
 * I/O completing between the two reads, such as udev probing the disk
 * fio has just closed, counted one completion in host_complete and not in
 * host_total).
 */
static void drain(struct ring_buffer *rb)
{
	rb_draining = true;
	if (ag.fw_on) {
		uint64_t until = hmb_now_ns(CLOCK_MONOTONIC) +
				 (uint64_t)ag.env.grace_ms * 1000000;

		while (hmb_now_ns(CLOCK_MONOTONIC) < until &&
		       ring_buffer__poll(rb, 50) >= 0 &&
		       ring_buffer__consume(rb) >= 0)
			;
	}
	hmb_agent__detach(ag.skel);
	ring_buffer__consume(rb);
	sweep(true);
	ring_buffer__consume(rb);
	hmb_live_flush(&ag.live);
	export_counters();
	if (export_stop(ag.env.export_wait_ms))
		ag.export_failed = true;
	if (ag.env.snap_dir) {
		snap_loop(hmb_now_ns(CLOCK_MONOTONIC));
		snap_finish(hmb_now_ns(CLOCK_MONOTONIC), clock_json());
	}
	print_report("summary", true);
	agent_pel_report();
}

static int finish(int err)
{
	if (dump_close() && !err)
		err = -EIO;
	if (ag.export_failed && !err)
		err = -EIO;
	export_stop(0);
	export_free();
	agent_pel_close();
	unmap_join_maps();
	hmb_agent__destroy(ag.skel);
	hmb_live_free(&ag.live);
	hmb_dict_free(ag.dict);
	snap_free();
	if (snap_ob.buf)
		hmb_ob_close(&snap_ob);
	if (ag.out) {
		hmb_ob_close(&ag.ob);
		if (ag.out != stdout && fclose(ag.out)) {
			fprintf(stderr, PROG ": writing %s: %s\n",
				ag.env.output, strerror(errno));
			err = -EIO;
		}
	}
	return err ? EXIT_FAIL : 0;
}

int main(int argc, char **argv)
{
	struct ring_buffer *rb;
	bool btf = false;
	int err;

	catch_usr1();
	parse_args(&ag.env, argc, argv);
	libbpf_set_print(libbpf_print_fn);
	if (load_dict())
		return finish(-EINVAL);
	trig_compile();
	/* a --snapshot-dir that cannot be used: said before anything loads */
	if (start_snap())
		return finish(-EINVAL);
	if (open_output() || choose_mode(&btf) ||
	    dump_open() || load_bpf(btf))
		return finish(-EINVAL);
	rb = ring_buffer__new(bpf_map__fd(ag.skel->maps.rb), rb_event, NULL,
			      NULL);
	if (!rb || (ag.skel->rodata->dump_records &&
		    ring_buffer__add(rb, bpf_map__fd(ag.skel->maps.rawrb),
				     rb_record, NULL))) {
		err = -errno;
		fprintf(stderr, PROG ": cannot open the BPF ring buffers: %s\n",
			strerror(errno));
		ring_buffer__free(rb);
		return finish(err);
	}
	if (agent_pel_open()) {
		ring_buffer__free(rb);
		return finish(-EINVAL);
	}
	if (start_model() || export_start()) {
		ring_buffer__free(rb);
		return finish(-ENOMEM);
	}
	signal(SIGINT, sig_handler);
	signal(SIGTERM, sig_handler);
	print_start();
	err = run_loop(rb);
	drain(rb);
	ring_buffer__free(rb);
	return finish(err);
}
