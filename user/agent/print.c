// SPDX-License-Identifier: GPL-2.0
/*
 * print.c - hmb-trace-agent's output: the start line, every interval's and
 * the run's report (text or JSON lines) and the per-command lines.  The
 * commands, totals, histograms and the clock estimate are printed by
 * libhmbtrace's command model (hmbtrace_cmd.h), as hmb-trace-analyze
 * correlate prints them; the BPF counters and in-kernel histograms here.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "agent.h"
#include "snap.h"
#include "trigger.h"
#include "hmb_agent.skel.h"

const char *const counter_names[HMB_C_COUNT] = {
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
	[HMB_C_FW_BY_ORDER] = "fw_matched_by_slba_or_order",
	[HMB_C_FW_REFUSED] = "fw_refused_outside_window",
	[HMB_C_FW_BG] = "fw_background",
	[HMB_C_FW_OTHER] = "fw_other_events",
	[HMB_C_FW_UNMAPPED_RING] = "fw_unmapped_ring",
	[HMB_C_CMD_EMITTED] = "cmd_events_sent",
	[HMB_C_CMD_FILTERED] = "cmd_filtered",
	[HMB_C_CMD_BELOW_MIN] = "cmd_below_min_latency",
	[HMB_C_ACTIVE_OVERWRITE] = "host_submit_while_in_flight",
	[HMB_C_DUMP_SENT] = "dump_records_sent",
	[HMB_C_DUMP_LOST] = "dump_records_lost",
};

/*
 * Percentiles need every command in user space: NVMe mode, --per-command
 * and --export send them all; block mode otherwise only the slow ones
 * (its histograms count every I/O in the kernel).
 */
static bool every_cmd(void)
{
	return ag.skel && ag.skel->rodata->emit_all;
}

static const char *const bpf_hist_names[HMB_H_COUNT] = {
	[HMB_H_HOST_TOTAL] = "host_total",
	[HMB_H_FW_TOTAL] = "fw_fetch_to_cqe_posted",
	[HMB_H_FW_TO_MEDIA_START] = "fw_to_media_start",
	[HMB_H_FW_TO_MEDIA_END] = "fw_to_media_end",
	[HMB_H_FW_TO_XFER_DONE] = "fw_to_xfer_done",
	[HMB_H_FW_TO_CQE_POSTED] = "fw_to_cqe_posted",
};

/* ------------------------------------------------------------- BPF maps */

/*
 * Runs the kernel skipped because the program was already running on
 * that CPU (the per-program recursion guard): events lost before the
 * program saw them.
 */
uint64_t recursion_misses(void)
{
	struct bpf_program *p;
	uint64_t sum = 0;

	bpf_object__for_each_program(p, ag.skel->obj) {
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

void read_counters(uint64_t *c)
{
	uint64_t *vals = calloc((size_t)ag.nr_cpus, sizeof(*vals));
	int fd = bpf_map__fd(ag.skel->maps.counters);

	memset(c, 0, sizeof(uint64_t) * HMB_C_COUNT);
	if (!vals)
		return;
	for (__u32 i = 0; i < HMB_C_COUNT; i++) {
		if (bpf_map_lookup_elem(fd, &i, vals))
			continue;
		for (int cpu = 0; cpu < ag.nr_cpus; cpu++)
			c[i] += vals[cpu];
	}
	/* a filtered command the sweep took is not reported either */
	c[HMB_C_CMD_FILTERED] += ag.swept_filtered;
	free(vals);
}

/*
 * This interval's counts of the per-CPU histogram @id (the BPF side counts
 * into the slots of hmbtrace_hist.h's rule, the layout of struct
 * hmb_log2_hist): the map's counts only grow, and the interval is what
 * their sum over the CPUs grew by since the last take.  (Zeroing the map
 * after reading it lost the samples the programs added in between.)
 */
static void take_bpf_hist(__u32 id, struct hmb_log2_hist *h)
{
	static struct hmb_log2_hist seen[HMB_H_FW_TOTAL];
	size_t vsz = sizeof(struct hmb_log2_hist);
	int fd = bpf_map__fd(ag.skel->maps.hists);
	char *vals = calloc((size_t)ag.nr_cpus, vsz);
	struct hmb_log2_hist cur = { 0 };

	memset(h, 0, sizeof(*h));
	if (!vals || id >= HMB_H_FW_TOTAL) {
		free(vals);
		return;
	}
	if (!bpf_map_lookup_elem(fd, &id, vals)) {
		for (int cpu = 0; cpu < ag.nr_cpus; cpu++) {
			const struct hmb_log2_hist *p =
				(const void *)(vals + (size_t)cpu * vsz);

			for (int s = 0; s < HMB_HIST_SLOTS; s++)
				cur.slots[s] += p->slots[s];
		}
		for (int s = 0; s < HMB_HIST_SLOTS; s++)
			h->slots[s] = cur.slots[s] - seen[id].slots[s];
		seen[id] = cur;
	}
	free(vals);
}

/* This interval's histograms into @iv (and the run's). */
static void take_bpf_hists(struct hmb_log2_hist *iv)
{
	for (int i = 0; i < HMB_H_COUNT; i++) {
		if (i < HMB_H_FW_TOTAL) {
			take_bpf_hist((__u32)i, &iv[i]);
		} else {
			iv[i] = ag.fw_hist_iv[i];
			memset(&ag.fw_hist_iv[i], 0, sizeof(iv[i]));
		}
		for (int s = 0; s < HMB_HIST_SLOTS; s++)
			ag.bpf_hist_run[i].slots[s] += iv[i].slots[s];
	}
}

/* ----------------------------------------------------------------- JSON */

void json_line_end(void)
{
	hmb_json_nl(&ag.j);
	hmb_ob_flush(&ag.ob);
}

void print_start(void)
{
	char dev[24];

	if (!ag.env.json) {
		fprintf(ag.out, "Tracing %s (%s", ag.mode_name, ag.attach);
		if (ag.use_nvme && ag.ctrl >= 0)
			fprintf(ag.out, ", nvme%d", ag.ctrl);
		if (ag.nsid)
			fprintf(ag.out, " nsid %u", ag.nsid);
		if (ag.devt)
			fprintf(ag.out, ", dev %u:%u", ag.devt >> 20,
				ag.devt & 0xfffff);
		if (!ag.use_nvme)
			fprintf(ag.out, ", issue time: %s",
				ag.kernel_stamp ? "the request's stamp" :
				"block_rq_issue");
		if (ag.fw_on) {
			fprintf(ag.out, ", records from %s, rings ->",
				ag.fw_event);
			for (int i = 0; i < 4; i++)
				fprintf(ag.out, " %d:nvme%d", i,
					(int)ring_ctrl_of(i) - 1);
			fprintf(ag.out, " ...");
		}
		fprintf(ag.out, ")... Hit Ctrl-C to end.\n");
		fflush(ag.out);
		return;
	}
	snprintf(dev, sizeof(dev), "%u:%u", ag.devt >> 20, ag.devt & 0xfffff);
	hmb_json_obj(&ag.j);
	hmb_json_kv_str(&ag.j, "type", "start");
	hmb_json_kv_str(&ag.j, "mode", ag.mode_name);
	hmb_json_kv_str(&ag.j, "attach", ag.attach);
	if (!ag.use_nvme) {
		hmb_json_kv_str(&ag.j, "issue_stamp",
				ag.kernel_stamp ? "kernel" : "bpf");
		hmb_json_kv_str(&ag.j, "issue_stamp_why", ag.stamp_why);
	}
	hmb_json_kv_bool(&ag.j, "firmware", ag.fw_on);
	hmb_json_kv_str(&ag.j, "fw_event", ag.fw_event);
	hmb_json_kv_str(&ag.j, "missing", ag.missing_msg);
	hmb_json_kv_i64(&ag.j, "ctrl", ag.ctrl);
	hmb_json_kv_u64(&ag.j, "nsid", ag.nsid);
	hmb_json_kv_str(&ag.j, "dev", dev);
	hmb_json_kv_i64(&ag.j, "interval_s", ag.env.interval);
	hmb_json_kv_u64(&ag.j, "dict_events", hmb_dict_count(ag.dict));
	hmb_json_end(&ag.j);
	json_line_end();
	fflush(ag.out);
}

/* --------------------------------------------------- one command's lines */

struct bg_print_ctx {
	const struct hmb_cmd *c;
	int n;
};

static void bg_fields(const struct hmb_live_bg *r, const char **name,
		      char *fields, size_t len)
{
	const struct hmb_dict_event *ev = hmb_dict_lookup(ag.dict, r->opcode);

	*name = ev ? ev->name : "?";
	hmb_dict_format(ev, r->payload, r->payload_len, fields, len);
}

static void bg_json(void *ctx, const char *group, uint64_t b, uint64_t e,
		    const struct hmb_live_bg *r)
{
	struct bg_print_ctx *p = ctx;
	double f0 = (double)p->c->fw.ts[HMB_PHASE_FETCH];
	char fields[160];
	const char *name;

	bg_fields(r, &name, fields, sizeof(fields));
	hmb_json_obj(&ag.j);
	hmb_json_kv_str(&ag.j, "group", group);
	hmb_json_kv_str(&ag.j, "event", name);
	hmb_json_kv_dbl(&ag.j, "begin_rel_us", ((double)b - f0) / 1e3, 1);
	hmb_json_key(&ag.j, "end_rel_us");
	if (e)
		hmb_json_dbl(&ag.j, ((double)e - f0) / 1e3, 1);
	else
		hmb_json_null(&ag.j);
	hmb_json_kv_str(&ag.j, "fields", fields);
	hmb_json_end(&ag.j);
}

static void bg_text(void *ctx, const char *group, uint64_t b, uint64_t e,
		    const struct hmb_live_bg *r)
{
	struct bg_print_ctx *p = ctx;
	double f0 = (double)p->c->fw.ts[HMB_PHASE_FETCH];
	char fields[160];
	const char *name;

	bg_fields(r, &name, fields, sizeof(fields));
	if (r->edge == HMB_BG_POINT)
		fprintf(ag.out, "        during: %s %s at %+.1f us (%s)\n",
			group, name, ((double)b - f0) / 1e3, fields);
	else if (e)
		fprintf(ag.out, "        during: %s window %+.1f .. %+.1f us from fetch (%s)\n",
			group, ((double)b - f0) / 1e3, ((double)e - f0) / 1e3,
			fields);
	else
		fprintf(ag.out, "        during: %s window from %+.1f us, still open (%s)\n",
			group, ((double)b - f0) / 1e3, fields);
}

/* The background windows of @c's firmware time, through @fn. */
static void overlap(const struct hmb_cmd *c, hmb_live_bg_fn fn)
{
	const struct hmb_fw_side *fw = &c->fw;
	struct bg_print_ctx p = { .c = c };
	uint64_t t1 = fw->mask & (1u << HMB_PHASE_CQE_POSTED) ?
		      fw->ts[HMB_PHASE_CQE_POSTED] : fw->ts[HMB_PHASE_FETCH];

	hmb_live_bg_overlap(&ag.live, fw->ts[HMB_PHASE_FETCH], t1, fn, &p);
}

static void cmd_json(const struct hmb_cmd *c)
{
	hmb_json_obj(&ag.j);
	hmb_cmd_json_members(&ag.j, c);
	if (c->fw.mask & (1u << HMB_PHASE_FETCH)) {
		hmb_json_key(&ag.j, "background");
		hmb_json_arr(&ag.j);
		overlap(c, bg_json);
		hmb_json_end_arr(&ag.j);
	}
	hmb_json_end(&ag.j);
}

static void cmd_text(const struct hmb_cmd *c, int rank)
{
	hmb_cmd_print(ag.out, c, rank, ag.dict);
	if ((c->match == HMB_M_MATCHED || c->match == HMB_M_PARTIAL) &&
	    (c->fw.mask & (1u << HMB_PHASE_FETCH)))
		overlap(c, bg_text);
}

void print_cmd_line(void *ctx, const struct hmb_cmd *c)
{
	(void)ctx;
	if (!ag.env.per_command || c->x[HMB_X_HOST_TOTAL] < 0 ||
	    (uint64_t)c->x[HMB_X_HOST_TOTAL] < ag.env.min_lat_us * 1000)
		return;
	if (!ag.env.json) {
		cmd_text(c, 0);
		return;
	}
	hmb_json_obj(&ag.j);
	hmb_json_kv_str(&ag.j, "type", "cmd");
	hmb_json_key(&ag.j, "cmd");
	cmd_json(c);
	hmb_json_end(&ag.j);
	json_line_end();
}

/*
 * The writers above write to ag.j; for the flight recorder's window the
 * same line goes to @ob instead, with ag.j kept as it was.
 */
void print_cmd_json_to(struct hmb_outbuf *ob, const struct hmb_cmd *c)
{
	struct hmb_json save = ag.j;

	ob->len = 0;
	hmb_json_init(&ag.j, ob);
	hmb_json_obj(&ag.j);
	hmb_json_kv_str(&ag.j, "type", "cmd");
	hmb_json_key(&ag.j, "cmd");
	cmd_json(c);
	hmb_json_end(&ag.j);
	ag.j = save;
}

void print_clock_json_to(struct hmb_outbuf *ob)
{
	struct hmb_json j;

	ob->len = 0;
	hmb_json_init(&j, ob);
	hmb_json_obj(&j);
	hmb_json_kv_str(&j, "type", "clock");
	hmb_json_kv_u64(&j, "monotonic_ns", hmb_now_ns(CLOCK_MONOTONIC));
	hmb_json_kv_u64(&j, "realtime_ns", hmb_now_ns(CLOCK_REALTIME));
	hmb_json_key(&j, "firmware");
	hmb_json_bool(&j, ag.fw_on);
	hmb_json_key(&j, "clock");
	hmb_json_obj(&j);
	hmb_clock_json_members(&j, &ag.live.clk);
	hmb_json_end(&j);
	hmb_json_end(&j);
	hmb_json_nl(&j);
	if (!hmb_ob_reserve(ob, 1))
		hmb_ob_putc(ob, 0);	/* a C string */
}

/* --------------------------------------------------------------- reports */

static void report_json(const char *kind, const char *ts, uint64_t nio,
			const uint64_t *c, const struct hmb_log2_hist *bh,
			struct hmb_cmd_stats *s)
{
	struct hmb_json *j = &ag.j;

	hmb_json_obj(j);
	hmb_json_kv_str(j, "type", kind);
	hmb_json_kv_str(j, "time", ts);
	hmb_json_kv_str(j, "mode", ag.mode_name);
	hmb_json_kv_u64(j, "completed", nio);
	hmb_json_key(j, "totals");
	hmb_json_obj(j);
	hmb_cmd_totals_json_members(j, &s->tot);
	hmb_json_end(j);
	hmb_json_key(j, "counters");
	hmb_json_obj(j);
	for (int i = 0; i < HMB_C_COUNT; i++) {
		hmb_json_key_str(j, counter_names[i]);
		hmb_json_u64(j, c[i]);
	}
	hmb_json_kv_u64(j, "bpf_recursion_misses", recursion_misses());
	if (ag.fw_on)
		hmb_json_kv_u64(j, "fw_refused_when_placed",
				ag.live.fw_refused);
	if (ag.fw_on) {
		uint64_t b[BRIDGE_C_COUNT];

		bridge_totals(b);
		for (int i = 0; i < BRIDGE_C_COUNT; i++) {
			hmb_json_key_str(j, bridge_counter_name(i));
			hmb_json_u64(j, b[i]);
		}
	}
	hmb_json_end(j);
	if (ag.env.dump_path) {
		uint64_t recs, bytes, lost;

		dump_totals(&recs, &bytes, &lost);
		hmb_json_key(j, "dump");
		hmb_json_obj(j);
		hmb_json_kv_str(j, "file", ag.env.dump_path);
		hmb_json_kv_u64(j, "records", recs);
		hmb_json_kv_u64(j, "bytes", bytes);
		hmb_json_kv_u64(j, "lost", lost);
		hmb_json_kv_u64(j, "refused", ag.dump.refused);
		hmb_json_kv_u64(j, "write_errors", ag.dump.write_errors);
		hmb_json_end(j);
	}
	if (!strcmp(kind, "summary"))
		export_json(j);	/* the sender has stopped */
	if (ag.fw_on) {
		hmb_json_key(j, "clock");
		hmb_json_obj(j);
		hmb_clock_json_members(j, &ag.live.clk);
		hmb_json_end(j);
	}
	hmb_json_key(j, "hists_us");
	hmb_json_obj(j);
	for (int i = 0; i < HMB_H_COUNT; i++) {
		if (!ag.fw_on && i != HMB_H_HOST_TOTAL)
			continue;
		hmb_json_key_str(j, bpf_hist_names[i]);
		hmb_hist_json(j, &bh[i]);
	}
	for (int x = HMB_X_SUBMIT_TO_FETCH; ag.fw_on && x < HMB_X_COUNT; x++) {
		if (x == HMB_X_FW_TOTAL)	/* the BPF map has it */
			continue;
		hmb_json_key_str(j, hmb_xphase_name(x));
		hmb_hist_json(j, &s->xh[x]);
	}
	hmb_json_end(j);
	if (every_cmd()) {
		hmb_json_key(j, "percentiles");
		hmb_quant_json(j, s);
	}
	trig_report_json(j);
	snap_report_json(j);
	hmb_json_key(j, "top");
	hmb_json_arr(j);
	hmb_cmd_stats_sort(s);
	for (unsigned int i = 0; i < s->ntop; i++)
		cmd_json(&s->top[i]);
	hmb_json_end_arr(j);
	hmb_json_end(j);
	json_line_end();
	fflush(ag.out);
}

static void report_losses(const uint64_t *c)
{
	fprintf(ag.out, "losses: ringbuf reservations failed %llu, in-flight map full %llu, command id outside the index %llu, completions without submit %llu, cid reuse flushes %llu",
		(unsigned long long)c[HMB_C_RB_FAIL],
		(unsigned long long)c[HMB_C_ACTIVE_FULL],
		(unsigned long long)c[HMB_C_DONE_FULL],
		(unsigned long long)c[HMB_C_HOST_NO_SUBMIT],
		(unsigned long long)c[HMB_C_REUSE_FLUSH]);
	fprintf(ag.out, ", submitted while in flight %llu, missed by the kernel's recursion guard %llu",
		(unsigned long long)c[HMB_C_ACTIVE_OVERWRITE],
		(unsigned long long)recursion_misses());
	if (ag.fw_on) {
		uint64_t b[BRIDGE_C_COUNT];

		bridge_totals(b);
		fprintf(ag.out, "; kernel bridge: records lost %llu, ignored %llu, stopped on corruption %llu",
			(unsigned long long)b[BRIDGE_C_LOST],
			(unsigned long long)b[BRIDGE_C_IGNORED],
			(unsigned long long)b[BRIDGE_C_CORRUPT]);
	}
	if (ag.fw_on)
		fprintf(ag.out, "\nfw records %llu: matched %llu (by slba or ring order %llu; proposals refused by the window %llu), background %llu, unmatched: no command %llu, duplicate phase %llu, outside window %llu, unknown opcode %llu, short %llu, unmapped ring %llu, read failed %llu; markers %llu",
			(unsigned long long)c[HMB_C_FW_RECORDS],
			(unsigned long long)c[HMB_C_FW_MATCHED],
			(unsigned long long)c[HMB_C_FW_BY_ORDER],
			(unsigned long long)c[HMB_C_FW_REFUSED],
			(unsigned long long)c[HMB_C_FW_BG],
			(unsigned long long)c[HMB_C_FW_NO_CMD],
			(unsigned long long)c[HMB_C_FW_DUP_PHASE],
			(unsigned long long)c[HMB_C_FW_OUT_OF_WINDOW],
			(unsigned long long)c[HMB_C_FW_UNKNOWN_OP],
			(unsigned long long)c[HMB_C_FW_SHORT],
			(unsigned long long)c[HMB_C_FW_UNMAPPED_RING],
			(unsigned long long)c[HMB_C_FW_READ_FAIL],
			(unsigned long long)c[HMB_C_FW_MARKER]);
	if (ag.fw_on)
		fprintf(ag.out, "; taken off their command when placed (outside its window) %llu",
			(unsigned long long)ag.live.fw_refused);
	if (ag.env.dump_path) {
		uint64_t recs, bytes, lost;

		dump_totals(&recs, &bytes, &lost);
		fprintf(ag.out, "\ndump %s: %llu records written (%llu bytes), not handed over by BPF %llu, refused %llu, lost to write errors %llu",
			ag.env.dump_path, (unsigned long long)recs,
			(unsigned long long)bytes, (unsigned long long)lost,
			(unsigned long long)ag.dump.refused,
			(unsigned long long)ag.dump.write_errors);
	}
	fputc('\n', ag.out);
}

/*
 * --pid, --comm, --cgroup: how many commands they kept out of the report
 * (with -c and the namespace of -d, which the programs count alike).
 */
static void who_filtered_text(const uint64_t *c)
{
	char want[512] = "";
	int n = 0;

	if (ag.env.who_pid)
		n += snprintf(want + n, sizeof(want) - (size_t)n, " --pid %u",
			      ag.env.who_pid);
	if (ag.env.who_comm && n < (int)sizeof(want))
		n += snprintf(want + n, sizeof(want) - (size_t)n, " --comm %s",
			      ag.env.who_comm);
	if (ag.env.who_cgroup && n < (int)sizeof(want))
		snprintf(want + n, sizeof(want) - (size_t)n, " --cgroup %s",
			 ag.env.who_cgroup);
	fprintf(ag.out, "filtered: %llu commands not reported (%s)\n",
		(unsigned long long)c[HMB_C_CMD_FILTERED], want + 1);
}

static void report_text(const char *kind, const char *ts, uint64_t nio,
			const uint64_t *c, const struct hmb_log2_hist *bh,
			struct hmb_cmd_stats *s, bool final)
{
	fprintf(ag.out, "\n%s %s [%s] completed %llu", ts, kind, ag.mode_name,
		(unsigned long long)nio);
	if (ag.fw_on) {
		fprintf(ag.out, ", reported %llu: ",
			(unsigned long long)s->tot.cmds);
		hmb_cmd_totals_print(ag.out, &s->tot);
	}
	fputc('\n', ag.out);
	if (ag.env.who_pid || ag.env.who_comm || ag.env.who_cgroup)
		who_filtered_text(c);
	report_losses(c);
	trig_report_text(ag.out);
	snap_report_text(ag.out);
	if (ag.fw_on)
		hmb_clock_print(ag.out, &ag.live.clk);
	if (every_cmd())
		hmb_quant_print(ag.out, s);
	hmb_hist_print(ag.out, &bh[HMB_H_HOST_TOTAL],
		       "host: submit -> complete (BPF map)");
	for (int i = HMB_H_FW_TOTAL; ag.fw_on && i < HMB_H_COUNT; i++) {
		char title[96];

		snprintf(title, sizeof(title), "firmware: %s (BPF map, fw clock)",
			 bpf_hist_names[i]);
		hmb_hist_print(ag.out, &bh[i], title);
	}
	if (ag.fw_on) {
		hmb_hist_print(ag.out, &s->xh[HMB_X_SUBMIT_TO_FETCH],
			       hmb_xphase_title(HMB_X_SUBMIT_TO_FETCH));
		hmb_hist_print(ag.out, &s->xh[HMB_X_CQE_TO_COMPLETE],
			       hmb_xphase_title(HMB_X_CQE_TO_COMPLETE));
	}
	if (s->ntop) {
		hmb_cmd_stats_sort(s);
		fprintf(ag.out, "\n%u slowest commands%s:\n", s->ntop,
			final ? " of the run" : " of the interval");
		for (unsigned int i = 0; i < s->ntop; i++)
			cmd_text(&s->top[i], (int)i + 1);
	}
	fflush(ag.out);
}

void print_report(const char *kind, bool final)
{
	struct hmb_cmd_stats *s = final ? &ag.live.run : &ag.live.iv;
	struct hmb_log2_hist bh[HMB_H_COUNT];
	uint64_t c[HMB_C_COUNT];
	time_t now = time(NULL);
	char ts[32];

	strftime(ts, sizeof(ts), "%H:%M:%S", localtime(&now));
	read_counters(c);
	take_bpf_hists(bh);
	if (final)
		memcpy(bh, ag.bpf_hist_run, sizeof(bh));
	if (ag.env.json)
		report_json(kind, ts, hmb_hist_total(&bh[HMB_H_HOST_TOTAL]), c,
			    bh, s);
	else
		report_text(kind, ts, hmb_hist_total(&bh[HMB_H_HOST_TOTAL]), c,
			    bh, s, final);
}
