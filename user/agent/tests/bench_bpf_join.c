// SPDX-License-Identifier: GPL-2.0
/*
 * bench_bpf_join.c - the in-kernel join alone, natively: the BPF run time of
 * hmb_agent.bpf.c's join core per command submission, completion and
 * firmware record, against biolatency's work per I/O (a hash insert of
 * the 8-byte issue time at issue, in a map of its own as biolatency's
 * "start"; lookup, histogram and delete at completion) run through the
 * same test program in the same process, interleaved round by round.
 *
 * Driven with BPF_PROG_TEST_RUN of the object's test program (as
 * t_bpf_join), run time from kernel.bpf_stats_enabled (BPF_ENABLE_STATS):
 * the program's own time, not the system calls around it.  Each round
 * runs ROUND_CMDS commands of queue depth QD on one queue, the way the
 * guest sees them: a queue's tags submitted, the firmware records of the
 * first half delivered, every command completed, then the second half's
 * records (the bridge delivers a batch after the host completed most of
 * it).  Each command has five records (fetch with its slba, media start,
 * media end, transfer done, completion posted); every one must be
 * reported matched, or the run fails.
 *
 * With --batch the records go in as the agent takes them by default: up to
 * 64 a program run, as hmb_trace:hmb_trace_records hands them over (the
 * test program finds them in "batchbuf", where the real one first copies
 * the bridge's array with one kernel read: that read is not in this
 * figure).
 *
 * With --armed the programs run as the flight recorder arms them: the
 * latency triggers of ARMED_TRIGGERS evaluated at every command reported
 * (none fires: the commands here take 100 us), so that the armed cost
 * compares with the unarmed one run for run.
 *
 * With --dump (and --batch) every record also goes to user space, as with
 * -w or --snapshot-dir: a batch's records, each with its payload (the
 * test program's: its head copy in "batchbuf"), as one event of map
 * "rawrb", which is read as the agent reads it, round by round.
 *
 * Usage: bench_bpf_join DICT [ROUNDS] [--json] [--batch] [--armed] [--dump]   (root)
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <stdarg.h>
#include <stddef.h>

#include <linux/types.h>
#include <bpf/libbpf.h>
#include <bpf/bpf.h>

#include "hmbtrace.h"
#include "hmbtrace_dict.h"
#include "hmb_agent.h"
#include "hmb_agent_test.skel.h"
#include "evdesc.h"
#include "trigger.h"

#define QD		32
#define ROUND_CMDS	4096

static struct hmb_agent_test *skel;
static struct ring_buffer *rb;
static int prog_fd, nr_cpus, batched, armed, dump;

/* --armed: what docs/flight-recorder.md arms the agent with */
static const char *const armed_triggers[] = {
	"host_total>5ms", "fw_fetch_to_cqe_posted>2ms", "host_submit_to_fw_fetch>1ms",
};
static unsigned long long matched, other, raw_records;

static int on_event(void *ctx, void *data, size_t len)
{
	const struct hmb_cmd_event *c = data;

	(void)ctx;
	if (len >= sizeof(*c) && c->type == HMB_EV_CMD &&
	    c->st.fw_mask == 0x3e && !(c->st.flags & ~HMB_CF_HOST_ONLY))
		matched++;
	else
		other++;
	return 0;
}

/* --dump: a batch's records, as the agent's dump.c takes them */
static int on_raw(void *ctx, void *data, size_t len)
{
	const struct hmb_raw_event *e = data;
	struct hmb_buf_iter it;
	struct hmb_record rec;
	struct hmb_error err;

	(void)ctx;
	if (len < offsetof(struct hmb_raw_event, rec) || e->type != HMB_EV_RAW)
		return 0;
	hmb_buf_iter_init(&it, e->rec, e->len, 0);
	while (hmb_buf_iter_next(&it, &rec, &err) > 0)
		raw_records++;
	return 0;
}

static void drive(__u64 a0, __u64 a1, __u64 a2, __u64 a3, __u64 a4, __u64 a5,
		  __u64 a6, __u64 a7, __u64 a8, __u64 a9, __u64 a10)
{
	__u64 args[11] = { a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10 };
	LIBBPF_OPTS(bpf_test_run_opts, o, .ctx_in = args,
		    .ctx_size_in = sizeof(args));

	if (bpf_prog_test_run_opts(prog_fd, &o)) {
		fprintf(stderr, "bench_bpf_join: BPF_PROG_TEST_RUN: %s\n",
			strerror(errno));
		exit(1);
	}
}

static __u64 run_ns(void)
{
	struct bpf_prog_info info;
	__u32 len = sizeof(info);

	memset(&info, 0, sizeof(info));
	if (bpf_obj_get_info_by_fd(prog_fd, &info, &len)) {
		fprintf(stderr, "bench_bpf_join: prog info: %s\n", strerror(errno));
		exit(1);
	}
	return info.run_time_ns;
}

static int libbpf_quiet(enum libbpf_print_level l, const char *f, va_list a)
{
	if (l == LIBBPF_DEBUG)
		return 0;
	return vfprintf(stderr, f, a);
}

static int load(const struct hmb_dict *dict)
{
	struct bpf_program *p;
	__u32 r = 0, one = 1, op;

	skel = hmb_agent_test__open();
	if (!skel)
		return -1;
	/* as the agent in NVMe mode with the bridge on */
	skel->rodata->fw_enabled = true;
	skel->rodata->emit_all = true;
	if (armed)
		skel->rodata->trig_armed = HMB_TRIG_ARM_LAT;
	skel->rodata->dump_records = dump;
	bpf_object__for_each_program(p, skel->obj)
		bpf_program__set_autoload(p, p == skel->progs.hmb_test_drive);
	if (hmb_agent_test__load(skel))
		return -1;
	for (unsigned int i = 0; armed && i < sizeof(armed_triggers) / sizeof(armed_triggers[0]); i++) {
		struct trig_spec t;
		char why[256];

		if (trig_parse(armed_triggers[i], dict, &t, why, sizeof(why))) {
			fprintf(stderr, "bench_bpf_join: '%s': %s\n",
				armed_triggers[i], why);
			return -1;
		}
		trig_to_bpf(&t, t.opc, &skel->bss->trig[i]);
	}
	if (hmb_evdesc_load(bpf_map__fd(skel->maps.evdesc), dict, &op))
		return -1;
	bpf_map_update_elem(bpf_map__fd(skel->maps.ring_ctrl), &r, &one, 0);
	/*
	 * A clock estimate, as the agent publishes once it has one: every
	 * record's time is then mapped and held to its command's host
	 * window, as in the guest.  The records' firmware times lie inside
	 * their commands' windows with the offset 0.
	 */
	skel->bss->clk.off_ns = 0;
	skel->bss->clk.drift_ppb = 0;
	skel->bss->clk.ref_fw = 0;
	skel->bss->clk.tight_ns = 20000;
	skel->bss->clk.tol_ns = 5000000;
	skel->bss->clk.valid = 1;
	prog_fd = bpf_program__fd(skel->progs.hmb_test_drive);
	rb = ring_buffer__new(bpf_map__fd(skel->maps.rb), on_event, NULL, NULL);
	if (rb && dump &&
	    ring_buffer__add(rb, bpf_map__fd(skel->maps.rawrb), on_raw, NULL))
		return -1;
	return rb ? 0 : -1;
}

static int cmp_u64(const void *a, const void *b)
{
	__u64 x = *(const __u64 *)a, y = *(const __u64 *)b;

	return x < y ? -1 : x > y;
}

static __u64 median(__u64 *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_u64);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static __u32 seq;
static __u64 now_ns = 1000000000ULL;

/* Put @n records into every CPU's "batchbuf" and run them as one batch. */
static void run_batch(const struct hmb_bridge_rec *r, int n, __u64 *t_rec)
{
	static __u8 *v;
	size_t one = HMB_BRIDGE_BATCH * sizeof(*r);
	__u32 zero = 0;
	__u64 t0;

	if (!v)
		v = calloc((size_t)nr_cpus, one);
	if (!v)
		exit(1);
	for (int cpu = 0; cpu < nr_cpus; cpu++)
		memcpy(v + (size_t)cpu * one, r, (size_t)n * sizeof(*r));
	if (bpf_map_update_elem(bpf_map__fd(skel->maps.batchbuf), &zero, v, 0)) {
		fprintf(stderr, "bench_bpf_join: batchbuf: %s\n", strerror(errno));
		exit(1);
	}
	t0 = run_ns();
	drive(6, 0, (__u64)n, 0, 0, 0, 0, 0, 0, 0, 0);
	*t_rec += run_ns() - t0;
}

/* Records of commands [from, to) of the batch (tags t, ids ids[t]). */
static void records(const __u16 *ids, int from, int to, __u64 *t_rec)
{
	static const __u16 op[5] = { 0x100, 0x101, 0x102, 0x103, 0x104 };
	static const __u16 len[5] = { 24, 8, 8, 8, 8 };
	struct hmb_bridge_rec b[HMB_BRIDGE_BATCH];
	int nb = 0;
	__u64 t0 = run_ns();

	if (!batched) {
		for (int t = from; t < to; t++)
			for (int k = 0; k < 5; k++)
				drive(3, 0, op[k], 1, ids[t],
				      now_ns + t * 100 + k * 10, seq++, len[k],
				      0, k ? 0 : 0x1000 + (__u64)t, k == 0);
		*t_rec += run_ns() - t0;
		return;
	}
	for (int t = from; t < to; t++)
		for (int k = 0; k < 5; k++) {
			struct hmb_bridge_rec *r = &b[nb++];
			__u16 q = 1, id = ids[t];
			__u64 slba = 0x1000 + (__u64)t;

			memset(r, 0, sizeof(*r));
			r->hdr.magic = HMB_RECORD_MAGIC;
			r->hdr.seq = seq++;
			r->hdr.ts_ns = now_ns + t * 100 + k * 10;
			r->hdr.opcode = op[k];
			r->hdr.payload_len = len[k];
			memcpy(r->head, &q, 2);
			memcpy(r->head + 2, &id, 2);
			if (!k)	/* the shipped cmd_fetch's slba */
				memcpy(r->head + 16, &slba, 8);
			if (nb == HMB_BRIDGE_BATCH) {
				run_batch(b, nb, t_rec);
				nb = 0;
			}
		}
	if (nb)
		run_batch(b, nb, t_rec);
}

int main(int argc, char **argv)
{
	int rounds = argc > 2 && argv[2][0] != '-' ? atoi(argv[2]) : 7;
	int json = 0, fd;
	__u64 *set, *cpl, *rec, *bio, cmds = 0;
	double empty;
	__u16 gen[QD] = { 0 };
	struct hmb_dict *dict;
	struct hmb_error err;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--json"))
			json = 1;
		if (!strcmp(argv[i], "--batch"))
			batched = 1;
		if (!strcmp(argv[i], "--armed"))
			armed = 1;
		if (!strcmp(argv[i], "--dump"))
			dump = 1;
	}
	if (argc < 2 || !strcmp(argv[1], "--help") || rounds < 1) {
		fprintf(stderr,
			"usage: bench_bpf_join DICT [ROUNDS] [--json] [--batch] [--armed] [--dump]   (root)\n"
			"  the in-kernel join's BPF run time per submission, completion and\n"
			"  firmware record, against biolatency's work per I/O, natively;\n"
			"  --batch: the records up to 64 a run, as hmb_trace_records\n"
			"  --armed: three latency triggers armed, as the flight recorder\n"
			"  --dump (with --batch): every record to user space too, as -w\n");
		return argc < 2 ? 2 : 0;
	}
	if (hmb_dict_load(&dict, argv[1], &err)) {
		fprintf(stderr, "bench_bpf_join: %s: %s\n", argv[1], err.msg);
		return 1;
	}
	libbpf_set_print(libbpf_quiet);
	nr_cpus = libbpf_num_possible_cpus();
	fd = bpf_enable_stats(BPF_STATS_RUN_TIME);
	if (fd < 0) {
		fprintf(stderr, "bench_bpf_join: BPF_ENABLE_STATS: %s (root and BPF needed)\n",
			strerror(errno));
		return 1;
	}
	if (load(dict)) {
		fprintf(stderr, "bench_bpf_join: loading hmb_agent_test.bpf.o failed\n");
		return 1;
	}
	set = calloc((size_t)rounds, sizeof(*set));
	cpl = calloc((size_t)rounds, sizeof(*cpl));
	rec = calloc((size_t)rounds, sizeof(*rec));
	bio = calloc((size_t)rounds, sizeof(*bio));
	if (!set || !cpl || !rec || !bio)
		return 1;
	for (int r = -1; r < rounds; r++) {	/* round -1 warms up */
		__u64 ts = 0, tc = 0, tr = 0, tb = 0, t0;
		__u16 ids[QD];

		for (int b = 0; b < ROUND_CMDS / QD; b++) {
			for (int t = 0; t < QD; t++)
				ids[t] = (__u16)(t | (gen[t]++ & 0xf) << 12);
			t0 = run_ns();
			for (int t = 0; t < QD; t++)
				drive(1, 0, 1, ids[t], now_ns + t, 2, 1,
				      0x1000 + (__u64)t, 0, 0, 0);
			ts += run_ns() - t0;
			records(ids, 0, QD / 2, &tr);
			t0 = run_ns();
			for (int t = 0; t < QD; t++)
				drive(2, 0, 1, ids[t], now_ns + 100000 + t, 0,
				      0, 0, 0, 0, 0);
			tc += run_ns() - t0;
			records(ids, QD / 2, QD, &tr);
			now_ns += 1000000;
			/* biolatency's work for the same number of I/Os */
			t0 = run_ns();
			for (int t = 0; t < QD; t++)
				drive(8, 0xffff880000000000ULL + (__u64)t * 256,
				      0, 0, 0, 0, 0, 0, 0, 0, 0);
			for (int t = 0; t < QD; t++)
				drive(5, 0xffff880000000000ULL + (__u64)t * 256,
				      0, 0, 0, 0, 0, 0, 0, 0, 0);
			tb += run_ns() - t0;
			ring_buffer__consume(rb);
		}
		if (r < 0)
			continue;
		set[r] = ts;
		cpl[r] = tc;
		rec[r] = tr;
		bio[r] = tb;
		cmds = ROUND_CMDS;
	}
	ring_buffer__consume(rb);
	{
		/* the test program doing nothing: the cost of a run itself */
		__u64 t0 = run_ns();

		for (int i = 0; i < ROUND_CMDS; i++)
			drive(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0);
		empty = (double)(run_ns() - t0) / ROUND_CMDS;
	}
	{
		double s = (double)median(set, rounds) / (double)cmds;
		double c = (double)median(cpl, rounds) / (double)cmds;
		double rr = (double)median(rec, rounds) / (double)cmds / 5;
		double b = (double)median(bio, rounds) / (double)cmds;
		double per = s + c + 5 * rr;
		unsigned long long want = (unsigned long long)(rounds + 1) * ROUND_CMDS;

		if (json)
			printf("{\"rounds\":%d,\"commands_per_round\":%d,\"qd\":%d,"
			       "\"setup_ns\":%.1f,\"complete_ns\":%.1f,\"record_ns\":%.1f,"
			       "\"command_5_records_ns\":%.1f,\"biolatency_io_ns\":%.1f,"
			       "\"ratio\":%.3f,\"empty_run_ns\":%.1f,"
			       "\"matched\":%llu,\"other\":%llu,\"batch\":%d,"
			       "\"armed\":%d,\"dump\":%d,\"dumped\":%llu}\n",
			       rounds, ROUND_CMDS, QD, s, c, rr, per, b, per / b,
			       empty, matched, other, batched, armed, dump,
			       raw_records);
		else
			printf("join per command: setup %.1f ns, completion %.1f ns, record %.1f ns;\n"
			       "a command with five records %.1f ns; biolatency's work per I/O %.1f ns; ratio %.2f\n"
			       "(medians of %d rounds of %d commands, QD %d; %llu matched, %llu other;\n"
			       "a run of the test program doing nothing %.1f ns)\n",
			       s, c, rr, per, b, per / b, rounds, ROUND_CMDS, QD,
			       matched, other, empty);
		if (matched != want || other) {
			fprintf(stderr, "bench_bpf_join: %llu of %llu commands reported matched, %llu other events\n",
				matched, want, other);
			return 1;
		}
		if (dump && raw_records != 5 * want) {
			fprintf(stderr, "bench_bpf_join: --dump: %llu of %llu records handed over\n",
				raw_records, 5 * want);
			return 1;
		}
	}
	ring_buffer__free(rb);
	hmb_agent_test__destroy(skel);
	hmb_dict_free(dict);
	close(fd);
	return 0;
}
