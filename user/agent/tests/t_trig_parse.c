// SPDX-License-Identifier: GPL-2.0
/*
 * t_trig_parse.c - the --trigger expression language (trigparse.c): what
 * good expressions arm, and where and why bad ones are refused, against
 * the shipped dictionary.  TAP; needs no BPF.
 */
#include <string.h>

#include "trigger.h"
#include "tap.h"

static struct hmb_dict *dict;

/* @e parses to a latency from @from to @to over @ns, opcode @opc. */
static void lat(const char *e, unsigned int from, unsigned int to,
		uint64_t ns, int opc)
{
	struct trig_spec t;
	char why[256];
	int col = trig_parse(e, dict, &t, why, sizeof(why));

	ok(!col && t.kind == HMB_TK_LAT && t.from == from && t.to == to &&
	   t.thresh_ns == ns && t.opc == opc && !t.pct,
	   "'%s': %s_to_%s > %llu ns, opcode %d (%s)", e,
	   trig_point_name(from), trig_point_name(to),
	   (unsigned long long)ns, opc, col ? why : "parsed");
}

/* @e is refused at column @col with @why_part in the reason. */
static void bad(const char *e, int col, const char *why_part)
{
	struct trig_spec t;
	char why[256];
	int c = trig_parse(e, dict, &t, why, sizeof(why));

	ok(c == col && strstr(why, why_part),
	   "'%s' refused at column %d (%d): %s", e, col, c, why);
}

static void good_ones(void)
{
	struct trig_spec t;
	char why[256];

	lat("host_total>5ms", HMB_TP_SUBMIT, HMB_TP_COMPLETE, 5000000, -1);
	lat("fw_fetch_to_fw_cqe_posted>2ms", HMB_PH_FETCH, HMB_PH_CQE_POSTED,
	    2000000, -1);
	lat("fw_total>2ms", HMB_PH_FETCH, HMB_PH_CQE_POSTED, 2000000, -1);
	/* the phases as the reports name them: fw_ left out of a firmware point */
	lat("fw_fetch_to_cqe_posted>2ms", HMB_PH_FETCH, HMB_PH_CQE_POSTED,
	    2000000, -1);
	lat("fetch_to_media_start>5us", HMB_PH_FETCH, HMB_PH_MEDIA_START, 5000, -1);
	lat("xfer_done_to_host_complete>1ms", HMB_PH_XFER_DONE, HMB_TP_COMPLETE,
	    1000000, -1);
	lat("host_submit_to_fw_fetch>1ms", HMB_TP_SUBMIT, HMB_PH_FETCH,
	    1000000, -1);
	lat("fw_cqe_posted_to_host_complete>250us", HMB_PH_CQE_POSTED,
	    HMB_TP_COMPLETE, 250000, -1);
	lat("read:host_total>1.5ms", HMB_TP_SUBMIT, HMB_TP_COMPLETE, 1500000, 2);
	lat("write : host_total > 10 us", HMB_TP_SUBMIT, HMB_TP_COMPLETE,
	    10000, 1);
	lat("0x09:fw_media_start_to_fw_media_end>1s", HMB_PH_MEDIA_START,
	    HMB_PH_MEDIA_END, 1000000000ULL, 9);
	lat("host_total>800ns", HMB_TP_SUBMIT, HMB_TP_COMPLETE, 800, -1);

	ok(!trig_parse("host_total>p99.9", dict, &t, why, sizeof(why)) &&
	   t.kind == HMB_TK_LAT && t.pct == 99.9 && t.window_s == 10 &&
	   !t.thresh_ns, "'host_total>p99.9': the 99.9th percentile of the last 10 s");
	ok(!trig_parse("host_total>p99@60s", dict, &t, why, sizeof(why)) &&
	   t.pct == 99 && t.window_s == 60,
	   "'host_total>p99@60s': the 99th percentile of the last 60 s");
	ok(!trig_parse("gc", dict, &t, why, sizeof(why)) &&
	   t.kind == HMB_TK_EVENT && t.nops == 1 && t.ops[0] == 0x0200,
	   "'gc': the group's begin event gc_start only (0x%04x, %u)",
	   t.ops[0], t.nops);
	ok(!trig_parse("thermal", dict, &t, why, sizeof(why)) &&
	   t.nops == 1 && t.ops[0] == 0x0210,
	   "'thermal': thermal_throttle_start");
	ok(!trig_parse("gc_end", dict, &t, why, sizeof(why)) &&
	   t.nops == 1 && t.ops[0] == 0x0201, "'gc_end': the event by its name");
	ok(!trig_parse("temp", dict, &t, why, sizeof(why)) &&
	   t.nops == 1 && t.ops[0] == 0x0220, "'temp': a group of point events");
	ok(!trig_parse(" reset ", dict, &t, why, sizeof(why)) &&
	   t.kind == HMB_TK_RESET, "'reset': the controller reset");
}

static void bad_ones(void)
{
	bad("", 1, "empty");
	bad("host_totl>5ms", 1, "unknown latency 'host_totl'");
	bad("host_total>5xs", 13, "unknown unit 'xs'");
	bad("host_total>5", 13, "a unit is needed");
	bad("host_total>ms", 12, "a number is expected");
	bad("host_total>5.ms", 14, "a digit is expected");
	bad("host_total>0ns", 12, "1ns to 3600s");
	bad("host_total>2h", 13, "unknown unit 'h'");
	bad("host_total 5ms", 12, "'>' and a threshold");
	bad("host_total>5ms junk", 16, "unexpected 'junk'");
	bad("fw_cqe_posted_to_fw_fetch>1ms", 1, "runs backwards");
	bad("fw_fetch_to_nowhere>1ms", 1, "unknown latency");
	bad("nosuch", 1, "no event or background group 'nosuch'");
	bad("cmd_fetch", 1, "is a command phase");
	bad("read:gc", 8, "opcode filter applies to latencies only");
	bad("reed:host_total>5ms", 1, "unknown opcode 'reed'");
	bad("256:host_total>5ms", 1, "unknown opcode '256'");
	bad("read:", 6, "a latency is expected");
	bad("fw_total>p99", 1, "host_total only");
	bad("read:host_total>p99", 1, "no opcode filter");
	bad("host_total>p100", 13, "above 0 and below 100");
	bad("host_total>p99@1.5s", 16, "whole seconds");
	bad("host_total>p99@2h", 17, "unknown unit");
	bad("host_total>p99@7200s", 16, "3600s");
	bad("gc>5ms", 1, "unknown latency 'gc'");
}

static void percentiles(void)
{
	uint64_t h[HMB_HIST_SLOTS] = { 0 };

	/* 999 commands of 2-3 us and one of 1024-2047 us */
	h[1] = 999;
	h[10] = 1;
	ok(trig_hist_pct_ns(h, 99.9) >= 2000 &&
	   trig_hist_pct_ns(h, 99.9) <= 4000,
	   "p99.9 of 1000 commands: within the bounds of the 999th's slot (%llu ns)",
	   (unsigned long long)trig_hist_pct_ns(h, 99.9));
	h[1] = 990;
	h[10] = 10;
	ok(trig_hist_pct_ns(h, 99.5) == 1536000,
	   "p99.5 of 990 fast and 10 slow: halfway into the slow slot (%llu ns)",
	   (unsigned long long)trig_hist_pct_ns(h, 99.5));
	h[1] = 98;
	h[10] = 1;
	ok(trig_hist_pct_ns(h, 99.9) == 0,
	   "p99.9 of 99 commands: no threshold yet (the tail holds none)");
	ok(trig_hist_pct_ns(h, 90) > 0, "p90 of 99 commands: a threshold");
}

/*
 * hmb_trig_lat_fires(): the rule the programs apply and the agent's sweep
 * applies to the commands it takes out.
 */
static void rule(void)
{
	struct hmb_cmd_state st = { .submit_ns = 1000000, .complete_ns = 0,
				    .opc = 2 };
	struct hmb_trig t = { .kind = HMB_TK_LAT, .from = HMB_TP_SUBMIT,
			      .to = HMB_TP_COMPLETE, .opc = -1,
			      .thresh_ns = 50000 };
	struct hmb_clk c = { 0 };
	__u64 v = 0;

	ok(!hmb_trig_lat_fires(&t, &st, &c, &v),
	   "host_total of a command that never completed: no value, no firing");
	st.complete_ns = 1050000;
	ok(!hmb_trig_lat_fires(&t, &st, &c, &v) && v == 50000,
	   "host_total exactly at the threshold: measured, not over");
	st.complete_ns = 1050001;
	ok(hmb_trig_lat_fires(&t, &st, &c, &v) && v == 50001,
	   "1 ns over: fires");
	t.opc = 1;
	ok(!hmb_trig_lat_fires(&t, &st, &c, &v), "a write filter on a read: no");
	t.opc = 2;
	t.thresh_ns = 0;
	ok(!hmb_trig_lat_fires(&t, &st, &c, &v),
	   "threshold 0 (a percentile not known yet): no");
	t = (struct hmb_trig){ .kind = HMB_TK_LAT, .from = HMB_TP_SUBMIT,
			       .to = HMB_PH_FETCH, .opc = -1, .thresh_ns = 1000 };
	st.fw_mask = 1 << HMB_PH_FETCH;
	st.fw_ts[HMB_PH_FETCH] = 7000;
	ok(!hmb_trig_lat_fires(&t, &st, &c, &v),
	   "host_submit_to_fw_fetch without a clock estimate: no");
	c = (struct hmb_clk){ .valid = 1, .off_ns = 1000000 - 7000 + 3000,
			      .ref_fw = 7000 };
	ok(hmb_trig_lat_fires(&t, &st, &c, &v) && v == 3000,
	   "with the estimate: the fetch 3 us after the submission (%llu)",
	   (unsigned long long)v);
	c.drift_ppb = 1000000;	/* 1000 ppm, 1 s of firmware time later */
	st.fw_ts[HMB_PH_FETCH] = 7000 + 1000000000ULL;
	c.off_ns -= 1000000000LL;
	ok(hmb_trig_lat_fires(&t, &st, &c, &v) && v == 3000 + 1000000,
	   "the drift applies (+1 ms over 1 s at 1000 ppm: %llu)",
	   (unsigned long long)v);
	t.from = HMB_PH_FETCH;
	t.to = HMB_PH_CQE_POSTED;
	ok(!hmb_trig_lat_fires(&t, &st, &c, &v),
	   "fw_total without the cqe_posted record: no");
}

int main(int argc, char **argv)
{
	struct hmb_error err = { 0 };
	const char *path = argc > 1 ? argv[1] : "../../share/hmb-events.dict";

	if (hmb_dict_load(&dict, path, &err)) {
		ok(0, "dictionary: %s", err.msg);
		return tap_done();
	}
	good_ones();
	bad_ones();
	percentiles();
	rule();
	hmb_dict_free(dict);
	return tap_done();
}
