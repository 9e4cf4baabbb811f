// SPDX-License-Identifier: GPL-2.0
/*
 * t_analysis.c - unit tests of hmb-trace-agent's user-space join with
 * synthetic commands (TAP): the clock estimate recovers a known offset and
 * drift (offset within 20 us, drift within 10 %), follows an offset step,
 * ignores a few misattributed commands, and the per-command breakdown,
 * top-N and background overlap are right.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis.h"

static int tests, failed;

#define OK(cond, ...) do {						\
	tests++;							\
	if (!(cond))							\
		failed++;						\
	printf("%sok %d - ", (cond) ? "" : "not ", tests);		\
	printf(__VA_ARGS__);						\
	printf("\n");							\
} while (0)

/* xorshift64*: deterministic pseudo-random numbers */
static uint64_t rs = 88172645463325252ULL;
static double urand(void)
{
	rs ^= rs >> 12;
	rs ^= rs << 25;
	rs ^= rs >> 27;
	return (double)((rs * 2685821657736338717ULL) >> 11) / 9007199254740992.0;
}

static double erand(double mean)
{
	return -mean * log(1 - urand());
}

/* The simulated truth: host = fw + off(t) + drift * (fw - 0). */
struct truth {
	double off0;		/* ns */
	double drift;		/* e.g. 50e-6 */
	double step_at_host;	/* host time of an offset step, 0 = none */
	double step;		/* ns added to the offset after it */
};

static double fw_of_host(const struct truth *tr, double host)
{
	double off = tr->off0 + (tr->step_at_host && host >= tr->step_at_host ?
				 tr->step : 0);

	/* host = fw * (1 + drift) + off */
	return (host - off) / (1 + tr->drift);
}

/*
 * A command with host times @h (h[0] the submit, then one per phase) and
 * host completion @comp: its firmware records on the truth's clock,
 * numbered in the order the firmware wrote them, i.e. by host time (10 ns
 * a number keeps them in order; the tests span less than 40 s).
 */
static void put_cmd(const struct truth *tr, const double h[HMB_PH_COUNT],
		    double comp, uint16_t cid, struct hmb_cmd_event *ev)
{
	memset(ev, 0, sizeof(*ev));
	ev->type = HMB_EV_CMD;
	ev->qid = 1;
	ev->cid = cid;
	ev->st.submit_ns = (uint64_t)h[0];
	ev->st.complete_ns = (uint64_t)comp;
	for (int k = HMB_PH_FETCH; k < HMB_PH_COUNT; k++) {
		ev->st.fw_ts[k] = (uint64_t)fw_of_host(tr, h[k]);
		ev->st.fw_seq[k] = (uint32_t)(h[k] / 10);
	}
	ev->st.fw_mask = 0x3e;
	ev->st.opc = 2;
}

/* One synthetic command starting at host time @t. */
static void make_cmd(const struct truth *tr, double t, struct hmb_cmd_event *ev)
{
	double h[HMB_PH_COUNT];

	h[0] = t;
	h[HMB_PH_FETCH] = t + 4000 + erand(15000);
	h[HMB_PH_MEDIA_START] = h[HMB_PH_FETCH] + 2000 + erand(3000);
	h[HMB_PH_MEDIA_END] = h[HMB_PH_MEDIA_START] + 40000 + erand(60000);
	h[HMB_PH_XFER_DONE] = h[HMB_PH_MEDIA_END] + 3000 + erand(2000);
	h[HMB_PH_CQE_POSTED] = h[HMB_PH_XFER_DONE] + 1000 + erand(1000);
	put_cmd(tr, h, h[HMB_PH_CQE_POSTED] + 3000 + erand(12000),
		(uint16_t)(t / 1000), ev);
}

/*
 * A deep queue, as fio at QD32 makes it: about @qd commands in flight,
 * each mostly waiting for the media, so a clock step at any moment finds
 * dozens of them between their fetch and their completion.  The host sees
 * them complete in completion order, which is the order they are fed.
 */
static int cmp_complete(const void *a, const void *b)
{
	const struct hmb_cmd_event *x = a, *y = b;

	return x->st.complete_ns < y->st.complete_ns ? -1 :
	       x->st.complete_ns > y->st.complete_ns;
}

/* The commands to the analysis as the host completes them, ticking. */
static void feed_completed(struct hmb_analysis *a, struct hmb_cmd_event *v,
			   size_t m, size_t tick_every)
{
	qsort(v, m, sizeof(*v), cmp_complete);
	for (size_t i = 0; i < m; i++) {
		hmb_analysis_cmd(a, &v[i]);
		if ((i + 1) % tick_every == 0)
			hmb_analysis_tick(a);
	}
	hmb_analysis_flush(a);
}

static void make_deep_cmd(const struct truth *tr, double t, double media_ns,
			  struct hmb_cmd_event *ev)
{
	double h[HMB_PH_COUNT];

	h[0] = t;
	h[HMB_PH_FETCH] = t + 3000 + erand(10000);
	h[HMB_PH_MEDIA_START] = h[HMB_PH_FETCH] + 2000 + erand(3000);
	h[HMB_PH_MEDIA_END] = h[HMB_PH_MEDIA_START] + erand(media_ns);
	h[HMB_PH_XFER_DONE] = h[HMB_PH_MEDIA_END] + 1000;
	h[HMB_PH_CQE_POSTED] = h[HMB_PH_XFER_DONE] + 1000 + erand(5000);
	put_cmd(tr, h, h[HMB_PH_CQE_POSTED] + 3000 + erand(20000),
		(uint16_t)((uint64_t)(t / 100) & 0xffff), ev);
}

/*
 * QD32 as QEMU's NVMe model under TCG makes it: bursts of 32 commands
 * fetched together and worked through one after the other, then an idle
 * pause longer than the step.  The step falls between the last two cqes
 * of a burst whose last commands the host completes late (as a guest
 * busy elsewhere does): their records fit either clock, and the longest
 * firmware-time jump near the step is the idle pause, not the step.
 */
struct burst_cmd {
	double h[HMB_PH_COUNT];	/* host times of the phases; [0] = submit */
	double comp;
};

static void run_bursty(const char *name, struct truth tr, int nbursts)
{
	struct hmb_analysis_opts o = { .top_n = 5, .clock_window = 65536 };
	size_t m = (size_t)nbursts * 32, i, across = 0;
	struct burst_cmd *bc = calloc(m, sizeof(*bc));
	struct hmb_cmd_event *v = calloc(m, sizeof(*v));
	struct hmb_analysis a;
	double t = 10e9;
	uint32_t sstep, first_new = UINT32_MAX;
	int b, k;

	if (!bc || !v || hmb_analysis_init(&a, &o)) {
		OK(0, "%s: init", name);
		free(bc);
		free(v);
		return;
	}
	for (b = 0; b < nbursts; b++) {
		double last_cqe = 0, w = t + 40000, lag;

		for (k = 0; k < 32; k++) {
			struct burst_cmd *c = &bc[b * 32 + k];

			c->h[0] = t + k * 1500;
			c->h[HMB_PH_FETCH] = t + 30000 + k * 2000 + erand(500);
			w = (w > c->h[HMB_PH_FETCH] ? w : c->h[HMB_PH_FETCH]) + 50000 + erand(30000);
			c->h[HMB_PH_MEDIA_START] = w - 45000;
			c->h[HMB_PH_MEDIA_END] = w - 2000;
			c->h[HMB_PH_XFER_DONE] = w - 1000;
			c->h[HMB_PH_CQE_POSTED] = w;
			last_cqe = w;
		}
		/*
		 * The host sees each completion 20 to 100 us after its cqe;
		 * in the burst the step falls in, the last few only 2.5 ms
		 * after the burst's last cqe (so the records across the
		 * step fit either clock).
		 */
		lag = b == nbursts / 2 ? 2.5e6 : 0;
		for (k = 0; k < 32; k++) {
			struct burst_cmd *c = &bc[b * 32 + k];

			c->comp = c->h[HMB_PH_CQE_POSTED] + 20000 + erand(30000);
			if (lag && k >= 28)
				c->comp = last_cqe + lag + k * 8000;
		}
		t = last_cqe + lag + 32 * 8000 + 9e6 + erand(2e6);
	}
	/* the step: between the last two cqes of the middle burst */
	b = nbursts / 2;
	tr.step_at_host = (bc[b * 32 + 30].h[HMB_PH_CQE_POSTED] +
			   bc[b * 32 + 31].h[HMB_PH_CQE_POSTED]) / 2;
	sstep = (uint32_t)(tr.step_at_host / 10);
	for (i = 0; i < m; i++) {
		const struct hmb_cmd_state *st = &v[i].st;

		put_cmd(&tr, bc[i].h, bc[i].comp, (uint16_t)i, &v[i]);
		for (k = HMB_PH_FETCH; k < HMB_PH_COUNT; k++)
			if (st->fw_seq[k] >= sstep && st->fw_seq[k] < first_new)
				first_new = st->fw_seq[k];
		across += st->fw_seq[HMB_PH_FETCH] < sstep &&
			  st->fw_seq[HMB_PH_CQE_POSTED] >= sstep;
	}
	feed_completed(&a, v, m, 256);
	printf("# %s: %zu commands, %zu across the step, step %.1f us (+-%.1f) at seq %u (first new %u), placed %llu, in window %llu\n",
	       name, m, across, a.clk.step_ns / 1e3, a.clk.step_err_ns / 1e3,
	       a.clk.step_seq, first_new, (unsigned long long)a.tot.placed,
	       (unsigned long long)a.tot.in_window_err);
	OK(a.clk.steps == 1 && a.clk.step_seq == first_new,
	   "%s: the step found at the first record on the new clock, not at the idle pause after it (%u, want %u)",
	   name, a.clk.step_seq, first_new);
	OK(fabs(a.clk.step_ns - tr.step) < 20000,
	   "%s: step size within 20 us (%.1f us vs %.1f us)", name,
	   a.clk.step_ns / 1e3, tr.step / 1e3);
	OK(a.tot.placed == m && a.tot.in_window_err == m,
	   "%s: all %zu commands inside their host windows (%llu)", name, m,
	   (unsigned long long)a.tot.in_window_err);
	hmb_analysis_free(&a);
	free(bc);
	free(v);
}

static void run_deep(const char *name, struct truth tr, double secs,
		     double iops, double media_ns)
{
	struct hmb_analysis_opts o = { .top_n = 5, .clock_window = 65536 };
	size_t n = (size_t)(secs * iops * 1.2) + 16, m = 0, i, across = 0;
	struct hmb_cmd_event *v = calloc(n, sizeof(*v));
	double t = 10e9, end = 10e9 + secs * 1e9, inflight = 0;
	struct hmb_analysis a;
	uint64_t ok_across = 0, want_step;

	if (!v || hmb_analysis_init(&a, &o)) {
		OK(0, "%s: init", name);
		free(v);
		return;
	}
	while (t < end && m < n) {
		make_deep_cmd(&tr, t, media_ns, &v[m]);
		inflight += (double)(v[m].st.complete_ns - v[m].st.submit_ns);
		m++;
		t += erand(1e9 / iops);
	}
	feed_completed(&a, v, m, 5000);
	/*
	 * The commands the firmware was working on when its clock stepped
	 * (fetched before the step, cqe posted after it) must be placed
	 * whole: every record on its own side's clock.
	 */
	want_step = tr.step != 0;
	for (i = 0; want_step && i < m; i++) {
		const struct hmb_cmd_state *st = &v[i].st;
		uint32_t sstep = (uint32_t)(tr.step_at_host / 10);
		bool in = true;

		if (!((int32_t)(st->fw_seq[HMB_PH_FETCH] - sstep) < 0 &&
		      (int32_t)(st->fw_seq[HMB_PH_CQE_POSTED] - sstep) >= 0))
			continue;
		across++;
		for (int p = HMB_PH_FETCH; p < HMB_PH_COUNT; p++) {
			double h = hmb_clock_map(&a.clk, st->fw_ts[p],
						 st->fw_seq[p]);
			double err = hmb_clock_err_at(&a.clk, st->fw_seq[p]);

			if (h < (double)st->submit_ns - err ||
			    h > (double)st->complete_ns + err)
				in = false;
		}
		ok_across += in;
	}
	printf("# %s: %zu commands, %.1f in flight on average, steps %u (step %.1f us at seq %u, fw %.6f s; %llu skipped), placed %llu, in window (within error) %llu, outside %llu\n",
	       name, m, inflight / (end - 10e9), a.clk.steps, a.clk.step_ns / 1e3,
	       a.clk.step_seq, (double)a.clk.step_t / 1e9,
	       (unsigned long long)a.clk.skipped_before_step,
	       (unsigned long long)a.tot.placed,
	       (unsigned long long)a.tot.in_window_err,
	       (unsigned long long)a.tot.outside_window);
	OK(a.clk.steps == (tr.step != 0), "%s: %u offset step(s) detected",
	   name, a.clk.steps);
	OK(a.tot.placed == m && a.tot.in_window_err == m,
	   "%s: all %zu commands placed with every firmware event inside its host window (%llu)",
	   name, m, (unsigned long long)a.tot.in_window_err);
	if (tr.step) {
		uint32_t sstep = (uint32_t)(tr.step_at_host / 10);

		OK(across >= 10 && ok_across == across,
		   "%s: the %zu commands across the step placed whole, each record on its own clock (%llu)",
		   name, across, (unsigned long long)ok_across);
		OK(fabs(a.clk.step_ns - tr.step) < 20000,
		   "%s: step size recovered within 20 us (%.1f us vs %.1f us)",
		   name, a.clk.step_ns / 1e3, tr.step / 1e3);
		uint32_t first_new = UINT32_MAX;

		/* the first record on the new clock, exactly */
		for (i = 0; i < m; i++)
			for (int p = HMB_PH_FETCH; p < HMB_PH_COUNT; p++)
				if (v[i].st.fw_seq[p] >= sstep &&
				    v[i].st.fw_seq[p] < first_new)
					first_new = v[i].st.fw_seq[p];
		OK(a.clk.have_prev && a.clk.step_seq == first_new,
		   "%s: the step found at the first record on the new clock (seq %u; first new %u, step at %u)",
		   name, a.clk.step_seq, first_new, sstep);
	}
	hmb_analysis_free(&a);
	free(v);
}

/* Offset host - fw at firmware time fw, per the truth (before any step). */
static double true_off_at(const struct truth *tr, double fw, int after_step)
{
	return tr->off0 + (after_step ? tr->step : 0) + tr->drift * fw;
}

static void run_fit(const char *name, struct truth tr, double secs,
		    double iops, int misattribute)
{
	struct hmb_analysis_opts o = { .top_n = 5, .clock_window = 200000 };
	struct hmb_analysis a;
	struct hmb_cmd_event ev;
	double t = 10e9, end = 10e9 + secs * 1e9, off_err, drift_err;
	uint64_t n = 0, bad = 0;

	if (hmb_analysis_init(&a, &o)) {
		OK(0, "%s: init", name);
		return;
	}
	while (t < end) {
		make_cmd(&tr, t, &ev);
		if (misattribute && n % 1000 == 999) {
			/* a record of another command: 3 ms off */
			ev.st.fw_ts[HMB_PH_FETCH] -= 3000000;
			ev.st.fw_ts[HMB_PH_CQE_POSTED] -= 3000000;
			bad++;
		}
		hmb_analysis_cmd(&a, &ev);
		n++;
		if (n % 5000 == 0)
			hmb_analysis_tick(&a);
		t += erand(1e9 / iops);
	}
	hmb_analysis_flush(&a);
	off_err = hmb_clock_offset_at(&a.clk, (uint64_t)a.clk.ref) -
		  true_off_at(&tr, a.clk.ref, tr.step != 0);
	drift_err = a.clk.drift - tr.drift;
	printf("# %s: n=%llu used=%zu off=%.1f us (err %.2f us, bound %.2f us) drift=%.3f ppm (true %.3f, bound %.3f) steps=%u consistent=%d\n",
	       name, (unsigned long long)n, a.clk.used, a.clk.off_ns / 1e3,
	       off_err / 1e3, a.clk.off_err_ns / 1e3, a.clk.drift * 1e6,
	       tr.drift * 1e6, a.clk.drift_err * 1e6, a.clk.steps,
	       a.clk.consistent);
	OK(a.clk.valid && fabs(off_err) < 20000,
	   "%s: offset recovered within 20 us (error %.2f us)", name,
	   off_err / 1e3);
	if (tr.drift != 0)
		OK(fabs(drift_err) <= 0.1 * fabs(tr.drift),
		   "%s: drift recovered within 10 %% (%.3f ppm vs %.3f ppm)",
		   name, a.clk.drift * 1e6, tr.drift * 1e6);
	else
		OK(fabs(a.clk.drift) < 2e-6, "%s: no drift found where none is (%.3f ppm)",
		   name, a.clk.drift * 1e6);
	OK(a.clk.off_err_ns >= fabs(off_err) || !a.clk.consistent,
	   "%s: the error bound (%.2f us) covers the real error (%.2f us)",
	   name, a.clk.off_err_ns / 1e3, fabs(off_err) / 1e3);
	OK(a.clk.steps == (tr.step != 0),
	   "%s: %u offset step(s) detected", name, a.clk.steps);
	if (tr.step)
		OK(a.tot.in_window_err * 1000 >= n * 999,
		   "%s: %llu of %llu commands inside their host window (>= 99.9 %%: placed after the step was found)",
		   name, (unsigned long long)a.tot.in_window_err,
		   (unsigned long long)n);
	if (!tr.step) {
		/* All good commands inside their windows; the bad ones not. */
		OK(a.tot.matched == n && a.tot.placed == n &&
		   a.tot.in_window_err >= n - bad &&
		   a.tot.outside_window >= bad * 9 / 10,
		   "%s: %llu of %llu commands inside their host window (%llu misattributed planted, %llu outside)",
		   name, (unsigned long long)a.tot.in_window_err,
		   (unsigned long long)n, (unsigned long long)bad,
		   (unsigned long long)a.tot.outside_window);
	}
	hmb_analysis_free(&a);
}

static int bg_seen;
static void bg_cb(void *ctx, const char *group, uint64_t b, uint64_t e,
		  const struct hmb_bg_rec *r)
{
	(void)ctx;
	(void)r;
	if (!strcmp(group, "gc") && b == 1000 && e == 5000)
		bg_seen |= 1;
	if (!strcmp(group, "thermal") && b == 4000 && e == 0)
		bg_seen |= 2;
	if (!strcmp(group, "gc") && b == 9000)
		bg_seen |= 4;	/* outside: must not be reported */
}

static void test_breakdown(void)
{
	struct hmb_analysis_opts o = { .top_n = 3, .min_lat_ns = 0,
				       .clock_min_points = 32 };
	struct truth tr = { .off0 = 5e6 };
	struct hmb_analysis a;
	struct hmb_cmd_event ev;
	struct hmb_bg_event bg;
	double t = 1e9;
	int i, sorted = 1;
	unsigned int found;

	hmb_analysis_init(&a, &o);
	for (i = 0; i < 100; i++) {
		make_cmd(&tr, t, &ev);
		hmb_analysis_cmd(&a, &ev);
		t += 200000;
	}
	OK(a.npending == 100 && a.tot.cmds == 0,
	   "breakdown: matched commands wait for the first clock estimate (%zu)",
	   a.npending);
	hmb_analysis_tick(&a);
	OK(a.npending == HMB_PLACE_LAG && a.tot.cmds == 100 - HMB_PLACE_LAG,
	   "breakdown: placed once the estimate exists, %d behind the newest (%llu)",
	   HMB_PLACE_LAG, (unsigned long long)a.tot.cmds);
	hmb_analysis_flush(&a);
	OK(a.npending == 0 && a.tot.cmds == 100 && a.tot.matched == 100,
	   "breakdown: all placed at the end (%llu)",
	   (unsigned long long)a.tot.cmds);
	for (i = 1; i < (int)a.ntop_all; i++)
		if (a.top_all[i].x[HMB_X_HOST_TOTAL] >
		    a.top_all[i - 1].x[HMB_X_HOST_TOTAL])
			sorted = 0;
	OK(a.ntop_all == 3 && sorted, "breakdown: top-3 kept, slowest first");
	{
		const struct hmb_cmd *c = &a.top_all[0];
		int64_t sum = c->x[HMB_X_SUBMIT_TO_FETCH] + c->x[HMB_X_FW_TOTAL] +
			      c->x[HMB_X_CQE_TO_COMPLETE];

		OK(c->x[HMB_X_SUBMIT_TO_FETCH] >= 0 &&
		   c->x[HMB_X_CQE_TO_COMPLETE] >= 0 &&
		   llabs(sum - c->x[HMB_X_HOST_TOTAL]) < 40000,
		   "breakdown: submit->fetch + fw + cqe->complete = host total within the clock error (%lld vs %lld ns)",
		   (long long)sum, (long long)c->x[HMB_X_HOST_TOTAL]);
	}
	/* host-only and unmatched commands are classified, not clocked */
	memset(&ev, 0, sizeof(ev));
	ev.st.submit_ns = 1;
	ev.st.complete_ns = 1000001;
	ev.st.flags = HMB_CF_HOST_ONLY;
	hmb_analysis_cmd(&a, &ev);
	ev.st.flags = HMB_CF_SWEPT;
	hmb_analysis_cmd(&a, &ev);
	ev.st.fw_mask = 1 << HMB_PH_FETCH;
	ev.st.fw_ts[HMB_PH_FETCH] = 7;
	hmb_analysis_cmd(&a, &ev);
	hmb_analysis_flush(&a);
	OK(a.tot.host_only == 1 && a.tot.unmatched == 1 && a.tot.partial == 1 &&
	   a.tot.swept == 2, "breakdown: host-only, unmatched, partial counted");
	OK(hmb_hist_total(&a.xh[HMB_X_HOST_TOTAL]) == 103,
	   "breakdown: host histogram has every command");

	/* background windows: gc [1000,5000], thermal from 4000 open, gc 9000 */
	memset(&bg, 0, sizeof(bg));
	bg.type = HMB_EV_BG;
	bg.ts_ns = 1000; bg.edge = 1; hmb_analysis_bg(&a, &bg, "gc");
	bg.ts_ns = 4000; bg.edge = 1; hmb_analysis_bg(&a, &bg, "thermal");
	bg.ts_ns = 5000; bg.edge = 2; hmb_analysis_bg(&a, &bg, "gc");
	bg.ts_ns = 9000; bg.edge = 1; hmb_analysis_bg(&a, &bg, "gc");
	bg.ts_ns = 9500; bg.edge = 2; hmb_analysis_bg(&a, &bg, "gc");
	found = hmb_analysis_bg_overlap(&a, 4500, 6000, bg_cb, NULL);
	OK(found == 2 && bg_seen == 3,
	   "background: windows overlapping a command found, others not (%u, mask %d)",
	   found, bg_seen);
	hmb_analysis_free(&a);
}

static void test_hist(void)
{
	struct hmb_log2_hist h;

	memset(&h, 0, sizeof(h));
	hmb_hist_add(&h, 999);		/* 0 us */
	hmb_hist_add(&h, 1500);		/* 1 us */
	hmb_hist_add(&h, 2000);		/* 2 us -> slot 1 (2..3) */
	hmb_hist_add(&h, 7999);		/* 7 us -> slot 2 (4..7) */
	hmb_hist_add(&h, 8000);		/* 8 us -> slot 3 */
	OK(h.slots[0] == 2 && h.slots[1] == 1 && h.slots[2] == 1 &&
	   h.slots[3] == 1, "histogram: log2 usec slots as biolatency's");
}

int main(void)
{
	struct truth plain = { .off0 = 1.234567e9, .drift = 0 };
	struct truth drift = { .off0 = -3.5e9, .drift = 50e-6 };
	struct truth neg = { .off0 = 42e6, .drift = -80e-6 };
	struct truth step = { .off0 = 7e6, .drift = 20e-6,
			      .step_at_host = 10e9 + 5e9, .step = 3e6 };

	test_hist();
	run_fit("no drift", plain, 2, 5000, 0);
	run_fit("drift +50 ppm", drift, 10, 5000, 0);
	run_fit("drift -80 ppm", neg, 10, 3000, 0);
	run_fit("0.1 % misattributed", plain, 2, 5000, 1);
	run_fit("offset step +3 ms at 5 s", step, 10, 5000, 0);
	{
		/* firmware clock +2 ms ahead (host - fw falls), QD ~32 */
		struct truth fwd = { .off0 = -1e9, .drift = -200e-6,
				     .step_at_host = 10e9 + 2.5e9, .step = -2e6 };
		/* firmware clock 3 ms back: its times repeat */
		struct truth back = { .off0 = 7e6, .drift = 50e-6,
				      .step_at_host = 10e9 + 2.5e9, .step = 3e6 };

		run_deep("QD32, no step", plain, 3, 8000, 4e6);
		run_deep("QD32, firmware clock 2 ms forward", fwd, 5, 8000, 4e6);
		run_deep("QD32, firmware clock 3 ms back", back, 5, 8000, 4e6);
		run_bursty("QD32 in bursts (TCG), firmware clock 2 ms forward",
			   fwd, 400);
	}
	test_breakdown();
	printf("1..%d\n", tests);
	return failed ? 1 : 0;
}
