// SPDX-License-Identifier: GPL-2.0
/*
 * t_bpf_trig.c - --trigger as the programs evaluate it (hmb_agent_trig.bpf.h),
 * driven like t_bpf_join through BPF_PROG_TEST_RUN of the test program:
 * commands above and below each threshold fire exactly the triggers they
 * should, the opcode filter holds, a firmware event trigger fires on its
 * event only, a latency between host and firmware points waits for the
 * clock, a percentile trigger waits for its threshold, the reset trigger
 * fires on a frozen ring; and the armed programs pass the verifier.  The
 * triggers come from trigparse.c as the agent's do.  Needs root and BPF;
 * SKIPs otherwise.  TAP.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/epoll.h>

#include <linux/types.h>
#include <bpf/libbpf.h>
#include <bpf/bpf.h>

#include "hmbtrace.h"
#include "hmbtrace_dict.h"
#include "hmb_agent.h"
#include "hmb_agent_test.skel.h"
#include "evdesc.h"
#include "trigger.h"
#include "tap.h"

/* The triggers armed, in --trigger order (their index is their bit). */
static const char *const exprs[] = {
	"host_total>50us",			/* 0 */
	"read:fw_total>40us",			/* 1 */
	"gc",					/* 2 */
	"host_submit_to_fw_fetch>10us",		/* 3: needs the clock */
	"reset",				/* 4 */
	"host_total>p99",			/* 5: threshold set below */
	"thermal_throttle_end",			/* 6 */
};
#define NTRIG	(sizeof(exprs) / sizeof(exprs[0]))

#define MAXEV 64
static struct hmb_trig_event evs[MAXEV];
static int nev, ncmd;

static int on_event(void *ctx, void *data, size_t len)
{
	const __u32 *type = data;

	(void)ctx;
	if (*type == HMB_EV_CMD)
		ncmd++;
	if (*type == HMB_EV_TRIGGER && len >= sizeof(evs[0]) && nev < MAXEV)
		memcpy(&evs[nev++], data, sizeof(evs[0]));
	return 0;
}

static struct hmb_agent_test *skel;
static struct ring_buffer *rb;
static int prog_fd;
static struct hmb_dict *dict;
static __u32 seq;
static int keep_events;	/* set: drive() leaves the events in "rb" */

static void drive(__u64 a0, __u64 a1, __u64 a2, __u64 a3, __u64 a4,
		  __u64 a5, __u64 a6, __u64 a7, __u64 a8)
{
	__u64 args[11] = { a0, a1, a2, a3, a4, a5, a6, a7, a8, 0, 0 };
	LIBBPF_OPTS(bpf_test_run_opts, o, .ctx_in = args,
		    .ctx_size_in = sizeof(args));

	if (bpf_prog_test_run_opts(prog_fd, &o))
		printf("# test_run: %s\n", strerror(errno));
	if (!keep_events)
		ring_buffer__consume(rb);
}

static void setup(__u16 cid, __u64 ts, __u8 opc)
{
	drive(1, 0, 1, cid, ts, opc, 1, 0, 0);
}

static void complete(__u16 cid, __u64 ts)
{
	drive(2, 0, 1, cid, ts, 0, 0, 0, 0);
}

static void rec(__u16 opcode, __u16 cid, __u64 ts, __u16 len)
{
	drive(3, 0, opcode, 1, cid, ts, seq++, len, 0);
}

/* The five phases of command @cid from firmware time @ts, over @total ns. */
static void fw_cmd(__u16 cid, __u64 ts, __u64 total)
{
	rec(0x100, cid, ts, 24);
	rec(0x101, cid, ts + total / 4, 8);
	rec(0x102, cid, ts + total / 2, 8);
	rec(0x103, cid, ts + total - 1000, 8);
	rec(0x104, cid, ts + total, 8);
}

/* The triggers fired since the last call, as a bit mask. */
static unsigned int fired(void)
{
	unsigned int m = 0;

	for (int i = 0; i < nev; i++)
		m |= 1U << evs[i].trig;
	return m;
}

static void reset_events(void)
{
	nev = 0;
	ncmd = 0;
}

static int arm(struct trig_spec *specs)
{
	char why[256];

	for (unsigned int i = 0; i < NTRIG; i++) {
		int col = trig_parse(exprs[i], dict, &specs[i], why, sizeof(why));

		if (col) {
			ok(0, "'%s': column %d: %s", exprs[i], col, why);
			return -1;
		}
		trig_to_bpf(&specs[i], specs[i].opc, &skel->bss->trig[i]);
		if (specs[i].kind == HMB_TK_EVENT &&
		    hmb_evdesc_mark_trig(bpf_map__fd(skel->maps.evdesc),
					 specs[i].ops, specs[i].nops, i))
			return -1;
	}
	return 0;
}

static int load(void)
{
	struct bpf_program *p;
	__u32 r = 0, one = 1, op;

	skel = hmb_agent_test__open();
	if (!skel)
		return -1;
	skel->rodata->fw_enabled = true;
	skel->rodata->emit_all = true;
	skel->rodata->trig_armed = HMB_TRIG_ARM_LAT | HMB_TRIG_ARM_EV |
				   HMB_TRIG_ARM_RESET;
	bpf_object__for_each_program(p, skel->obj)
		bpf_program__set_autoload(p, p == skel->progs.hmb_test_drive ||
					  p == skel->progs.hmb_frozen);
	if (hmb_agent_test__load(skel) ||
	    hmb_evdesc_load(bpf_map__fd(skel->maps.evdesc), dict, &op))
		return -1;
	bpf_map_update_elem(bpf_map__fd(skel->maps.ring_ctrl), &r, &one, 0);
	prog_fd = bpf_program__fd(skel->progs.hmb_test_drive);
	rb = ring_buffer__new(bpf_map__fd(skel->maps.rb), on_event, NULL, NULL);
	return rb ? 0 : -1;
}

static void frozen(__u32 ring)
{
	__u64 args[4] = { ring, 100, 50, 4 };
	LIBBPF_OPTS(bpf_test_run_opts, o, .ctx_in = args,
		    .ctx_size_in = sizeof(args));

	if (bpf_prog_test_run_opts(bpf_program__fd(skel->progs.hmb_frozen), &o))
		printf("# test_run: %s\n", strerror(errno));
	ring_buffer__consume(rb);
}

static void latency(void)
{
	const struct hmb_trig_event *e;

	/* A read, 30 us on the host, 54 us in the firmware: fw_total only */
	setup(0x10, 1000000, 2);
	complete(0x10, 1030000);
	fw_cmd(0x10, 5000, 54000);
	ok(fired() == 1U << 1 && ncmd == 1,
	   "read, host 30 us, firmware 54 us: read:fw_total>40us only (0x%x)",
	   fired());
	e = nev ? &evs[0] : NULL;
	ok(e && e->value_ns == 54000 && e->thresh_ns == 40000 &&
	   e->qid == 1 && e->cid == 0x10 && e->st.submit_ns == 1000000 &&
	   e->st.complete_ns == 1030000 && e->st.fw_mask == 0x3e &&
	   e->st.fw_ts[HMB_PH_FETCH] == 5000 && e->st.opc == 2,
	   "the firing carries the command: key, host times, firmware phases, the value and the threshold");
	reset_events();

	/* A write, 100 us on the host, 54 us in the firmware: host_total */
	setup(0x11, 2000000, 1);
	fw_cmd(0x11, 6000, 54000);
	complete(0x11, 2100000);
	ok(fired() == 1U << 0 && nev == 1,
	   "write, host 100 us, firmware 54 us: host_total>50us only, not the read filter, nor the percentile without its threshold, nor host_submit_to_fw_fetch without the clock (0x%x)",
	   fired());
	ok(nev && evs[0].value_ns == 100000 && evs[0].cid == 0x11,
	   "... measured 100 us on the write");
	reset_events();

	/* A read under every threshold */
	setup(0x12, 3000000, 2);
	complete(0x12, 3020000);
	fw_cmd(0x12, 7000, 30000);
	ok(nev == 0 && ncmd == 1,
	   "read, host 20 us, firmware 30 us: nothing fires (%d)", nev);
	reset_events();

	/* A read at exactly a threshold: over means over */
	setup(0x13, 4000000, 2);
	complete(0x13, 4050000);
	fw_cmd(0x13, 8000, 40000);
	ok(nev == 0, "host exactly 50 us, firmware exactly 40 us: nothing fires (%d)",
	   nev);
	reset_events();
}

/* Whether "rb" woke its waiters since asked last (20 ms for the interrupt). */
static int rb_woken(int efd)
{
	struct epoll_event ev;

	return epoll_wait(efd, &ev, 1, 20) == 1;
}

/*
 * A firing wakes the agent at once, also while the command events before
 * it wait in the ring for the agent's poll (they do not wake it).
 */
static void wakeup(void)
{
	struct epoll_event ee = { .events = EPOLLIN | EPOLLET };
	int efd = epoll_create1(EPOLL_CLOEXEC), quiet, woken;

	if (efd < 0 || epoll_ctl(efd, EPOLL_CTL_ADD, bpf_map__fd(skel->maps.rb),
				 &ee)) {
		ok(0, "wakeup: epoll: %s", strerror(errno));
		return;
	}
	keep_events = 1;
	setup(0x14, 5000000, 2);	/* under every threshold */
	complete(0x14, 5020000);
	fw_cmd(0x14, 9000, 30000);
	quiet = !rb_woken(efd);
	setup(0x15, 6000000, 2);	/* read:fw_total>40us */
	complete(0x15, 6030000);
	fw_cmd(0x15, 10000, 54000);
	woken = rb_woken(efd);
	keep_events = 0;
	ring_buffer__consume(rb);
	ok(quiet && woken && fired() == 1U << 1 && ncmd == 2,
	   "a firing wakes the agent while a command's event waits in the ring (woken %d, before it %d; fired 0x%x, %d commands)",
	   woken, !quiet, fired(), ncmd);
	reset_events();
	close(efd);
}

static void clock_and_percentile(void)
{
	/*
	 * With the clock (host = fw + off), the fetch at firmware time 10000
	 * is host time 10020000: 20 us after the submission.
	 */
	skel->bss->clk.off_ns = 10000000 - 10000 + 20000;
	skel->bss->clk.tight_ns = 1000000;
	skel->bss->clk.tol_ns = 1000000;
	skel->bss->clk.valid = 1;
	setup(0x20, 10000000, 2);
	fw_cmd(0x20, 10000, 54000);
	complete(0x20, 10080000);
	ok(fired() == ((1U << 0) | (1U << 1) | (1U << 3)),
	   "with the clock, a read 80 us on the host, fetched 20 us after submission, 54 us in the firmware: host_total, read:fw_total and host_submit_to_fw_fetch (0x%x)",
	   fired());
	for (int i = 0; i < nev; i++)
		if (evs[i].trig == 3)
			ok(evs[i].value_ns == 20000,
			   "host_submit_to_fw_fetch measured 20 us (%llu)",
			   (unsigned long long)evs[i].value_ns);
	reset_events();
	skel->bss->clk.valid = 0;

	/* The percentile's threshold published: it fires over it. */
	skel->bss->trig[5].thresh_ns = 60000;
	setup(0x21, 20000000, 1);
	fw_cmd(0x21, 20000, 10000);
	complete(0x21, 20070000);
	ok(fired() == ((1U << 0) | (1U << 5)),
	   "percentile threshold 60 us published: a 70 us write fires it and host_total>50us (0x%x)",
	   fired());
	reset_events();
	setup(0x22, 21000000, 1);
	fw_cmd(0x22, 21000, 10000);
	complete(0x22, 21055000);
	ok(fired() == 1U << 0,
	   "a 55 us write: host_total>50us, not the 60 us percentile (0x%x)",
	   fired());
	reset_events();
}

static void events_and_reset(void)
{
	rec(0x0201, 0, 30000, 8);	/* gc_end */
	rec(0x0220, 0, 30001, 2);	/* temperature */
	rec(0x0210, 0, 30002, 3);	/* thermal_throttle_start */
	ok(nev == 0, "gc_end, temperature, thermal_throttle_start: nothing fires (%d)",
	   nev);
	rec(0x0200, 0, 30003, 8);	/* gc_start */
	ok(fired() == 1U << 2 && nev == 1 && evs[0].opcode == 0x0200 &&
	   evs[0].ts_ns == 30003 && evs[0].ring == 0,
	   "gc_start fires 'gc' once, with its opcode, ring and firmware time (0x%x)",
	   fired());
	reset_events();
	rec(0x0211, 0, 30004, 2);	/* thermal_throttle_end */
	ok(fired() == 1U << 6 && nev == 1,
	   "thermal_throttle_end fires its own trigger only (0x%x)", fired());
	reset_events();
	frozen(0);
	ok(fired() == 1U << 4 && nev == 1 && evs[0].ring == 0,
	   "a frozen ring fires 'reset' (0x%x)", fired());
	reset_events();
}

static void counts(void)
{
	static const __u64 want[NTRIG] = { 4, 3, 1, 1, 1, 1, 1 };	/* 1: wakeup() too */
	bool same = true;

	for (unsigned int i = 0; i < NTRIG; i++) {
		if (skel->bss->trig_fired[i] != want[i]) {
			diag("trigger %u fired %llu, expected %llu", i,
			     (unsigned long long)skel->bss->trig_fired[i],
			     (unsigned long long)want[i]);
			same = false;
		}
	}
	ok(same, "firings counted per trigger in the program");
}

static int libbpf_quiet(enum libbpf_print_level l, const char *f, va_list a)
{
	if (l == LIBBPF_DEBUG)
		return 0;
	return vfprintf(stderr, f, a);
}

/*
 * The armed NVMe and block programs pass the verifier (raw_tp variants;
 * NVMe CO-RE relocated against the synthetic nvme_core BTF).
 */
static void verifier(const char *fake_btf)
{
	LIBBPF_OPTS(bpf_object_open_opts, oo, .btf_custom_path = fake_btf);
	struct hmb_agent_test *s = hmb_agent_test__open_opts(&oo);
	struct bpf_program *p;
	int e;

	if (!s) {
		ok(0, "open with the synthetic nvme_core BTF %s", fake_btf);
		return;
	}
	s->rodata->fw_enabled = true;
	s->rodata->trig_armed = HMB_TRIG_ARM_LAT | HMB_TRIG_ARM_EV |
				HMB_TRIG_ARM_RESET;
	bpf_object__for_each_program(p, s->obj)
		bpf_program__set_autoload(p,
			p == s->progs.nvme_setup_raw ||
			p == s->progs.nvme_complete_raw ||
			p == s->progs.hmb_record || p == s->progs.hmb_records ||
			p == s->progs.hmb_frozen);
	e = hmb_agent_test__load(s);
	ok(e == 0, "armed: verifier accepts nvme_setup_raw, nvme_complete_raw, hmb_record, hmb_records, hmb_frozen (%s)",
	   e ? strerror(-e) : "loaded");
	hmb_agent_test__destroy(s);
}

static void verifier_blk(void)
{
	struct hmb_agent_test *s = hmb_agent_test__open();
	struct bpf_program *p;
	int e;

	if (!s) {
		ok(0, "open the BPF object");
		return;
	}
	s->rodata->trig_armed = HMB_TRIG_ARM_LAT;
	bpf_object__for_each_program(p, s->obj)
		bpf_program__set_autoload(p, p == s->progs.blk_issue_raw ||
					  p == s->progs.blk_complete_raw);
	e = hmb_agent_test__load(s);
	ok(e == 0, "armed: verifier accepts blk_issue_raw, blk_complete_raw (%s)",
	   e ? strerror(-e) : "loaded");
	hmb_agent_test__destroy(s);
}

int main(int argc, char **argv)
{
	struct trig_spec specs[NTRIG];
	struct hmb_error err = { 0 };
	const char *dpath = argc > 1 ? argv[1] : "../../share/hmb-events.dict";

	if (geteuid() != 0) {
		printf("1..0 # SKIP needs root for BPF\n");
		return 0;
	}
	if (hmb_dict_load(&dict, dpath, &err)) {
		ok(0, "dictionary: %s", err.msg);
		return tap_done();
	}
	libbpf_set_print(libbpf_quiet);
	if (load()) {
		printf("1..0 # SKIP cannot load the BPF test program: %s\n",
		       strerror(errno));
		return 0;
	}
	if (!arm(specs)) {
		latency();
		wakeup();
		clock_and_percentile();
		events_and_reset();
		counts();
	}
	ring_buffer__free(rb);
	hmb_agent_test__destroy(skel);
	if (argc > 2)
		verifier(argv[2]);
	verifier_blk();
	hmb_dict_free(dict);
	return tap_done();
}
