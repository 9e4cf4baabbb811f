// SPDX-License-Identifier: Apache-2.0
/*
 * convert --to perfetto: a Trace Event JSON file (the "JSON trace format"
 * that ui.perfetto.dev and chrome://tracing open).
 *
 * Layout (process "SSD firmware"):
 *  - one thread track per firmware CPU, "fw cpu N": every record as a
 *    zero-length slice named after its dictionary event, its fields as
 *    args; background edges and points as instant events;
 *  - commands as nestable async slices (ph b/e, cat "cmd", one id per
 *    command), because commands overlap; the intervals between successive
 *    phases ("fetch->media_start", ...) nest inside them;
 *  - one track per background group ("bg gc"): its windows as slices;
 *  - track "lost records": every sequence gap as a "LOST N records" slice
 *    from the record before the gap to the record after it.
 * Timestamps are the firmware clock in microseconds with three decimals,
 * so no nanosecond is lost.  Output is streamed; the only state is the
 * bounded table of commands in flight (fwmodel).
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analyze.h"
#include "formats.h"
#include "hmbtrace_fwmodel.h"
#include "correlate.h"

#define OUTBUF_SIZE	(1u << 20)
#define PID_FW		1
#define PID_HOST	2
#define TID_SUBMIT	1
#define TID_LOST	1000
#define TID_BG		1100
#define REC_OUT_MAX	(2 * HMB_RECORD_MAX_PAYLOAD + 64 * HMB_DICT_MAX_FIELDS + 512)

struct pf {
	struct hmb_outbuf *ob;
	const struct hmb_dict *dict;
	bool first;		/* no event written yet (comma handling) */
	bool cpu_named[256];
	char groups[HMB_FWM_MAX_GROUPS][HMB_DICT_NAME_LEN];
	unsigned int ngroups;
	uint64_t lost_end;	/* end of the last LOST slice (no overlap) */
	/* counts, written into the metadata */
	uint64_t n_records, n_cmds, n_steps, n_lost_slices, n_bg, n_instants;
	uint64_t lost_clamped;
	/* --host: flows from host submit to the fetch record */
	const struct corr *corr;
	struct flow *flows;	/* sorted by (seq, ts) of the fetch record */
	size_t nflows;
	uint64_t n_host, n_flows_out;
};

struct flow {
	uint64_t ts;
	uint32_t seq;
	uint32_t id;
};

static void ev_start(struct pf *p)
{
	struct hmb_outbuf *ob = p->ob;

	hmb_ob_reserve(ob, REC_OUT_MAX);
	if (!p->first)
		hmb_ob_lit(ob, ",\n");
	p->first = false;
}

/* Firmware ns as Trace Event microseconds, exactly. */
static void put_us(struct hmb_outbuf *ob, uint64_t ns)
{
	hmb_ob_u64(ob, ns / 1000);
	hmb_ob_putc(ob, '.');
	hmb_ob_u64_pad(ob, ns % 1000, 3, '0');
}

static void put_i64(struct hmb_outbuf *ob, int64_t v)
{
	if (v < 0) {
		hmb_ob_putc(ob, '-');
		hmb_ob_u64(ob, (uint64_t)0 - (uint64_t)v);
	} else {
		hmb_ob_u64(ob, (uint64_t)v);
	}
}

static void meta_name_pid(struct pf *p, int pid, const char *what, int tid,
			  const char *name, int sort)
{
	ev_start(p);
	hmb_ob_lit(p->ob, "{\"ph\":\"M\",\"pid\":");
	hmb_ob_u64(p->ob, (uint64_t)pid);
	if (tid >= 0) {
		hmb_ob_lit(p->ob, ",\"tid\":");
		hmb_ob_u64(p->ob, (uint64_t)tid);
	}
	hmb_ob_lit(p->ob, ",\"name\":\"");
	hmb_ob_puts(p->ob, what);
	hmb_ob_lit(p->ob, "\",\"args\":{\"name\":\"");
	hmb_json_escape(p->ob, name, strlen(name));
	hmb_ob_lit(p->ob, "\"}}");
	if (tid >= 0) {
		ev_start(p);
		hmb_ob_lit(p->ob, "{\"ph\":\"M\",\"pid\":");
		hmb_ob_u64(p->ob, (uint64_t)pid);
		hmb_ob_lit(p->ob, ",\"tid\":");
		hmb_ob_u64(p->ob, (uint64_t)tid);
		hmb_ob_lit(p->ob, ",\"name\":\"thread_sort_index\",\"args\":{\"sort_index\":");
		hmb_ob_u64(p->ob, (uint64_t)sort);
		hmb_ob_lit(p->ob, "}}");
	}
}

static void meta_name(struct pf *p, const char *what, int tid,
		      const char *name, int sort)
{
	meta_name_pid(p, PID_FW, what, tid, name, sort);
}

static const struct flow *flow_find(const struct pf *p, uint32_t seq,
				    uint64_t ts)
{
	size_t lo = 0, hi = p->nflows;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct flow *f = &p->flows[mid];

		if (f->seq < seq || (f->seq == seq && f->ts < ts))
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < p->nflows && p->flows[lo].seq == seq && p->flows[lo].ts == ts)
		return &p->flows[lo];
	return NULL;
}

static void cpu_track(struct pf *p, uint8_t cpu)
{
	char name[32];

	if (p->cpu_named[cpu])
		return;
	p->cpu_named[cpu] = true;
	snprintf(name, sizeof(name), "fw cpu %u", cpu);
	meta_name(p, "thread_name", cpu, name, 100 + cpu);
}

static void put_fields(struct hmb_outbuf *ob, const struct hmb_dict_event *ev,
		       const struct hmb_record *rec)
{
	for (unsigned int i = 0; i < ev->nfields; i++) {
		const struct hmb_dict_field *f = &ev->fields[i];
		uint64_t v;

		hmb_ob_lit(ob, ",\"");
		hmb_ob_puts(ob, f->name);
		hmb_ob_lit(ob, "\":");
		if (hmb_dict_get(f, rec->payload, rec->hdr.payload_len, &v))
			hmb_ob_lit(ob, "null");
		else if (f->type >= HMB_FT_S8)
			put_i64(ob, (int64_t)v);
		else
			hmb_ob_u64(ob, v);
	}
}

static void on_record(void *ctx, const struct hmb_record *rec,
		      const struct hmb_dict_event *ev)
{
	struct pf *p = ctx;
	struct hmb_outbuf *ob = p->ob;
	const struct hmb_record_hdr *h = &rec->hdr;
	bool instant = ev && ev->bg_edge != HMB_BG_NONE;

	cpu_track(p, h->cpu);
	ev_start(p);
	if (instant) {
		hmb_ob_lit(ob, "{\"ph\":\"i\",\"s\":\"t\",\"cat\":\"fw.bg\",\"name\":\"");
		p->n_instants++;
	} else {
		hmb_ob_lit(ob, "{\"ph\":\"X\",\"dur\":0,\"cat\":\"fw\",\"name\":\"");
		p->n_records++;
	}
	if (ev) {
		hmb_ob_puts(ob, ev->name);
	} else {
		hmb_ob_lit(ob, "op 0x");
		hmb_ob_hex_fixed(ob, h->opcode, 4);
	}
	hmb_ob_lit(ob, "\",\"pid\":");
	hmb_ob_u64(ob, PID_FW);
	hmb_ob_lit(ob, ",\"tid\":");
	hmb_ob_u64(ob, h->cpu);
	hmb_ob_lit(ob, ",\"ts\":");
	put_us(ob, h->ts_ns);
	hmb_ob_lit(ob, ",\"args\":{\"seq\":");
	hmb_ob_u64(ob, h->seq);
	hmb_ob_lit(ob, ",\"opcode\":");
	hmb_ob_u64(ob, h->opcode);
	if (h->flags & HMB_REC_FLAG_TRUNCATED)
		hmb_ob_lit(ob, ",\"truncated\":true");
	if (ev) {
		put_fields(ob, ev, rec);
	} else {
		hmb_ob_lit(ob, ",\"payload\":\"");
		hmb_ob_hexbytes(ob, rec->payload, h->payload_len);
		hmb_ob_putc(ob, '"');
	}
	hmb_ob_lit(ob, "}");
	if (p->nflows && ev && ev->phase == HMB_PHASE_FETCH) {
		const struct flow *f = flow_find(p, h->seq, h->ts_ns);

		if (f) {
			hmb_ob_lit(ob, ",\"bind_id\":\"0x");
			hmb_ob_hex_fixed(ob, f->id, 8);
			hmb_ob_lit(ob, "\",\"flow_in\":true");
		}
	}
	hmb_ob_putc(ob, '}');
}

static void async_ev(struct pf *p, char ph, const char *name,
		     const struct hmb_fwm_cmd *c, uint64_t ts)
{
	struct hmb_outbuf *ob = p->ob;

	ev_start(p);
	hmb_ob_lit(ob, "{\"ph\":\"");
	hmb_ob_putc(ob, ph);
	hmb_ob_lit(ob, "\",\"cat\":\"cmd\",\"id\":\"0x");
	hmb_ob_hex_fixed(ob, c->id, 8);
	hmb_ob_lit(ob, "\",\"name\":\"");
	hmb_ob_puts(ob, name);
	hmb_ob_lit(ob, "\",\"pid\":");
	hmb_ob_u64(ob, PID_FW);
	hmb_ob_lit(ob, ",\"tid\":");
	hmb_ob_u64(ob, c->cpu);
	hmb_ob_lit(ob, ",\"ts\":");
	put_us(ob, ts);
}

static void on_cmd_begin(void *ctx, const struct hmb_fwm_cmd *c)
{
	struct pf *p = ctx;
	struct hmb_outbuf *ob = p->ob;
	char buf[16];

	p->n_cmds++;
	async_ev(p, 'b', hmb_fwm_cmd_name(c, buf, sizeof(buf)), c, c->first_ts);
	hmb_ob_lit(ob, ",\"args\":{\"sqid\":");
	hmb_ob_u64(ob, c->sqid);
	hmb_ob_lit(ob, ",\"cid\":");
	hmb_ob_u64(ob, c->cid);
	if (c->mask & (1u << HMB_PHASE_FETCH)) {
		if (c->have_opc) {
			hmb_ob_lit(ob, ",\"opc\":");
			hmb_ob_u64(ob, c->opc);
		}
		hmb_ob_lit(ob, ",\"nsid\":");
		hmb_ob_u64(ob, c->nsid);
		hmb_ob_lit(ob, ",\"slba\":");
		hmb_ob_u64(ob, c->slba);
		hmb_ob_lit(ob, ",\"nlb\":");
		hmb_ob_u64(ob, c->nlb);
	} else {
		hmb_ob_lit(ob, ",\"first_phase\":\"");
		hmb_ob_puts(ob, hmb_phase_name(c->last_phase));
		hmb_ob_putc(ob, '"');
	}
	hmb_ob_lit(ob, "}}");
}

static void on_cmd_step(void *ctx, const struct hmb_fwm_cmd *c,
			enum hmb_phase from, uint64_t t0,
			enum hmb_phase to, uint64_t t1)
{
	struct pf *p = ctx;
	char name[2 * HMB_DICT_NAME_LEN + 8];

	p->n_steps++;
	snprintf(name, sizeof(name), "%s->%s", hmb_phase_name(from),
		 hmb_phase_name(to));
	async_ev(p, 'b', name, c, t0);
	hmb_ob_lit(p->ob, "}");
	async_ev(p, 'e', name, c, t1);
	hmb_ob_lit(p->ob, ",\"args\":{\"dur_ns\":");
	hmb_ob_u64(p->ob, t1 - t0);
	hmb_ob_lit(p->ob, "}}");
}

static void on_cmd_end(void *ctx, const struct hmb_fwm_cmd *c, enum hmb_fwm_end why)
{
	struct pf *p = ctx;
	char buf[16];

	async_ev(p, 'e', hmb_fwm_cmd_name(c, buf, sizeof(buf)), c, c->last_ts);
	hmb_ob_lit(p->ob, ",\"args\":{\"end\":\"");
	hmb_ob_puts(p->ob, hmb_fwm_end_name(why));
	hmb_ob_lit(p->ob, "\",\"fw_ns\":");
	hmb_ob_u64(p->ob, c->last_ts - c->first_ts);
	hmb_ob_lit(p->ob, "}}");
}

static void on_bg_window(void *ctx, const char *group, uint64_t t0,
			 uint64_t t1, unsigned int flags, uint8_t cpu)
{
	struct pf *p = ctx;
	struct hmb_outbuf *ob = p->ob;
	unsigned int g;

	for (g = 0; g < p->ngroups; g++)
		if (strcmp(p->groups[g], group) == 0)
			break;
	if (g == p->ngroups) {
		char name[HMB_DICT_NAME_LEN + 8];

		if (g == HMB_FWM_MAX_GROUPS)
			return;
		snprintf(p->groups[g], HMB_DICT_NAME_LEN, "%s", group);
		p->ngroups++;
		snprintf(name, sizeof(name), "bg %s", group);
		meta_name(p, "thread_name", TID_BG + (int)g, name,
			  50 + (int)g);
	}
	p->n_bg++;
	ev_start(p);
	hmb_ob_lit(ob, "{\"ph\":\"X\",\"cat\":\"fw.bg\",\"name\":\"");
	hmb_ob_puts(ob, group);
	hmb_ob_lit(ob, "\",\"pid\":");
	hmb_ob_u64(ob, PID_FW);
	hmb_ob_lit(ob, ",\"tid\":");
	hmb_ob_u64(ob, TID_BG + g);
	hmb_ob_lit(ob, ",\"ts\":");
	put_us(ob, t0);
	hmb_ob_lit(ob, ",\"dur\":");
	put_us(ob, t1 - t0);
	hmb_ob_lit(ob, ",\"args\":{\"cpu\":");
	hmb_ob_u64(ob, cpu);
	if (flags & HMB_FWM_BG_NO_BEGIN)
		hmb_ob_lit(ob, ",\"begin_missing\":true");
	if (flags & HMB_FWM_BG_NO_END)
		hmb_ob_lit(ob, ",\"end_missing\":true");
	hmb_ob_lit(ob, "}}");
}

static void lost_slice(struct pf *p, const struct hmb_gap *g)
{
	struct hmb_outbuf *ob = p->ob;
	uint64_t t0 = g->ts_before, t1 = g->ts_after;
	bool clamped = false;

	if (p->n_lost_slices == 0)
		meta_name(p, "thread_name", TID_LOST, "lost records", 0);
	/* One synchronous track: slices must not overlap. */
	if (t0 < p->lost_end) {
		t0 = p->lost_end;
		clamped = true;
		p->lost_clamped++;
	}
	if (t1 < t0)
		t1 = t0;
	p->lost_end = t1;
	p->n_lost_slices++;
	ev_start(p);
	hmb_ob_printf(ob, "{\"ph\":\"X\",\"cat\":\"loss\",\"name\":\"LOST %llu record%s\",\"pid\":%d,\"tid\":%d,\"ts\":",
		  (unsigned long long)g->count, g->count == 1 ? "" : "s",
		  PID_FW, TID_LOST);
	put_us(ob, t0);
	hmb_ob_lit(ob, ",\"dur\":");
	put_us(ob, t1 - t0);
	hmb_ob_printf(ob, ",\"args\":{\"count\":%llu,\"first_seq\":%u,\"last_seq\":%u,\"ts_before\":%llu,\"ts_after\":%llu%s}}",
		  (unsigned long long)g->count, g->first_seq, g->last_seq,
		  (unsigned long long)g->ts_before,
		  (unsigned long long)g->ts_after,
		  clamped ? ",\"clamped\":true" : "");
}

static int cmp_flow(const void *a, const void *b)
{
	const struct flow *x = a, *y = b;

	if (x->seq != y->seq)
		return x->seq < y->seq ? -1 : 1;
	return x->ts < y->ts ? -1 : x->ts > y->ts;
}

static uint64_t to_fw(const struct hmb_join *j, size_t i, uint64_t host_ns)
{
	double v = hmb_join_unmap(j, i, host_ns);

	return v < 0 ? 0 : (uint64_t)(v + 0.5);
}

/* Command @c (the @i-th host command) as an async slice. */
static void host_slice(struct pf *p, const struct hmb_cmd *c, size_t i,
		       uint64_t t0, uint64_t t1)
{
	struct hmb_outbuf *ob = p->ob;
	const struct hmb_host_cmd *h = &c->h;

	for (int e = 0; e < 2; e++) {
		ev_start(p);
		hmb_ob_lit(ob, "{\"ph\":\"");
		hmb_ob_putc(ob, e ? 'e' : 'b');
		hmb_ob_lit(ob, "\",\"cat\":\"host\",\"id\":\"0x");
		hmb_ob_hex_fixed(ob, i + 1, 8);
		hmb_ob_lit(ob, "\",\"name\":\"");
		hmb_json_escape(ob, h->opc[0] ? h->opc : "cmd",
				strlen(h->opc[0] ? h->opc : "cmd"));
		hmb_ob_lit(ob, "\",\"pid\":");
		hmb_ob_u64(ob, PID_HOST);
		hmb_ob_lit(ob, ",\"tid\":");
		hmb_ob_u64(ob, TID_SUBMIT);
		hmb_ob_lit(ob, ",\"ts\":");
		put_us(ob, e ? t1 : t0);
		if (e) {
			hmb_ob_lit(ob, "}");
			continue;
		}
		hmb_ob_printf(ob, ",\"args\":{\"qid\":%u,\"cid\":%u,\"slba\":%llu,\"match\":\"%s\",\"submit_ns\":%llu,\"complete_ns\":%llu",
			      h->qid, h->cid, (unsigned long long)h->slba,
			      hmb_match_name(c->match),
			      (unsigned long long)h->submit_ns,
			      (unsigned long long)h->complete_ns);
		for (int x = 0; x < HMB_X_COUNT; x++)
			if (c->x[x] >= 0)
				hmb_ob_printf(ob, ",\"%s_ns\":%lld",
					      hmb_xphase_name(x),
					      (long long)c->x[x]);
		hmb_ob_lit(ob, "}}");
	}
}

/*
 * The host's commands, on the firmware time line through the clock
 * estimate: async slices in process "host", and a zero-length "submit"
 * slice per command from which a flow arrow goes to its fetch record.
 */
static int host_events(struct pf *p, const struct corr *corr)
{
	const struct hmb_join *j = corr->j;
	struct hmb_outbuf *ob = p->ob;
	size_t k = 0, n = hmb_join_count(j);
	struct hmb_cmd c;
	char name[300];

	p->flows = calloc(n ? n : 1, sizeof(*p->flows));
	if (!p->flows) {
		errorf("out of memory");
		return -1;
	}
	snprintf(name, sizeof(name), "host nvme%u (%s, times mapped to the firmware clock)",
		 hmb_join_ctrl(j), corr->host.path);
	meta_name_pid(p, PID_HOST, "process_name", -1, name, 0);
	meta_name_pid(p, PID_HOST, "thread_name", TID_SUBMIT, "host submit", 0);
	for (size_t i = 0; i < n; i++) {
		const struct hmb_host_cmd *h = &c.h;
		uint64_t t0, t1;
		bool flow;

		hmb_join_cmd(j, i, &c);
		if (h->ctrl != hmb_join_ctrl(j))
			continue;
		t0 = to_fw(j, i, h->submit_ns);
		t1 = to_fw(j, i, h->complete_ns);
		flow = c.fw.mask & (1u << HMB_PHASE_FETCH);
		if (t1 < t0)
			t1 = t0;
		p->n_host++;
		host_slice(p, &c, i, t0, t1);
		ev_start(p);
		hmb_ob_lit(ob, "{\"ph\":\"X\",\"dur\":0,\"cat\":\"host\",\"name\":\"submit\",\"pid\":");
		hmb_ob_u64(ob, PID_HOST);
		hmb_ob_lit(ob, ",\"tid\":");
		hmb_ob_u64(ob, TID_SUBMIT);
		hmb_ob_lit(ob, ",\"ts\":");
		put_us(ob, t0);
		hmb_ob_printf(ob, ",\"args\":{\"qid\":%u,\"cid\":%u}", h->qid,
			      h->cid);
		if (flow) {
			hmb_ob_lit(ob, ",\"bind_id\":\"0x");
			hmb_ob_hex_fixed(ob, i + 1, 8);
			hmb_ob_lit(ob, "\",\"flow_out\":true");
			p->flows[k].seq = c.fw.seq[HMB_PHASE_FETCH];
			p->flows[k].ts = c.fw.ts[HMB_PHASE_FETCH];
			p->flows[k].id = (uint32_t)(i + 1);
			k++;
		}
		hmb_ob_putc(ob, '}');
	}
	p->nflows = k;
	p->n_flows_out = k;
	qsort(p->flows, k, sizeof(*p->flows), cmp_flow);
	return 0;
}

static const struct hmb_fwm_ops pf_ops = {
	.record = on_record,
	.cmd_begin = on_cmd_begin,
	.cmd_step = on_cmd_step,
	.cmd_end = on_cmd_end,
	.bg_window = on_bg_window,
};

static void metadata(struct pf *p, const struct input *in,
		     const struct hmb_fwmodel *m)
{
	const struct hmb_acct *a = in->acct;
	struct hmb_outbuf *ob = p->ob;

	hmb_ob_reserve(ob, 4096);
	hmb_ob_lit(ob, "\n],\n\"metadata\":{\"source\":\"");
	hmb_json_escape(ob, in->name, strlen(in->name));
	hmb_ob_reserve(ob, 4096);
	hmb_ob_printf(ob, "\",\"clock\":\"firmware ts_ns (not host time)\","
		  "\"records\":%llu,\"lost\":%llu,\"gaps\":%llu,"
		  "\"duplicates\":%llu,\"wrap_markers\":%llu,\"ignored\":%llu,"
		  "\"truncated\":%llu,",
		  (unsigned long long)a->records,
		  (unsigned long long)a->lost, (unsigned long long)a->gaps,
		  (unsigned long long)a->duplicates,
		  (unsigned long long)a->wrap_markers,
		  (unsigned long long)a->ignored,
		  (unsigned long long)a->truncated);
	hmb_ob_printf(ob, "\"commands\":%llu,\"commands_complete\":%llu,"
		  "\"commands_reused\":%llu,\"commands_open_at_end\":%llu,"
		  "\"commands_evicted\":%llu,\"commands_without_fetch\":%llu,"
		  "\"duplicate_phase_events\":%llu,\"unknown_opcode\":%llu,"
		  "\"short_payload\":%llu,\"backwards_clamped\":%llu,"
		  "\"bg_windows\":%llu,\"lost_slices\":%llu,"
		  "\"lost_slices_clamped\":%llu",
		  (unsigned long long)m->st.cmds,
		  (unsigned long long)m->st.complete,
		  (unsigned long long)m->st.reused,
		  (unsigned long long)m->st.eof_open,
		  (unsigned long long)m->st.evicted,
		  (unsigned long long)m->st.no_fetch,
		  (unsigned long long)m->st.dup_phase,
		  (unsigned long long)m->st.unknown_opcode,
		  (unsigned long long)m->st.short_payload,
		  (unsigned long long)m->st.backwards,
		  (unsigned long long)m->st.bg_windows,
		  (unsigned long long)p->n_lost_slices,
		  (unsigned long long)p->lost_clamped);
	if (p->corr)
		hmb_ob_printf(ob, ",\"host_commands\":%llu,\"host_flows\":%llu,"
			  "\"clock_offset_ns\":%.0f,\"clock_offset_err_ns\":%.0f,"
			  "\"clock_ref_fw_ns\":%.0f,\"clock_drift_ppm\":%.3f",
			  (unsigned long long)p->n_host,
			  (unsigned long long)p->n_flows_out,
			  hmb_join_clock(p->corr->j)->off_ns,
			  hmb_join_clock(p->corr->j)->off_err_ns,
			  hmb_join_clock(p->corr->j)->ref,
			  hmb_join_clock(p->corr->j)->drift * 1e6);
	hmb_ob_lit(ob, "}\n}\n");
}

static int write_perfetto(struct input *in, struct hmb_outbuf *ob,
			  const struct hmb_dict *dict, const struct corr *corr)
{
	struct hmb_error err = { 0 };
	struct hmb_record rec;
	struct hmb_fwmodel m;
	struct pf p = { .ob = ob, .dict = dict, .first = true, .corr = corr };
	uint64_t gaps_seen = 0;
	char pname[300];
	int rc;

	if (hmb_fwm_init(&m, dict, &pf_ops, &p)) {
		errorf("out of memory");
		return EXIT_BADINPUT;
	}
	hmb_ob_lit(ob, "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n");
	snprintf(pname, sizeof(pname), "SSD firmware (%s)", in->name);
	meta_name(&p, "process_name", -1, pname, 0);
	if (corr && host_events(&p, corr)) {
		hmb_fwm_finish(&m);
		return EXIT_BADINPUT;
	}
	while ((rc = input_next(in, &rec, &err)) > 0) {
		if (in->acct->gaps != gaps_seen) {
			gaps_seen = in->acct->gaps;
			lost_slice(&p, &in->last_gap);
		}
		hmb_fwm_add(&m, &rec);
		if (ob->err)
			break;
	}
	hmb_fwm_finish(&m);
	free(p.flows);
	if (rc < 0) {
		hmb_ob_flush(ob);
		input_report(in, &err);
		return EXIT_BADINPUT;
	}
	metadata(&p, in, &m);
	hmb_ob_flush(ob);
	if (ob->err) {
		errorf("%s: write error: %s", ob->name, strerror(ob->err));
		return EXIT_BADINPUT;
	}
	return 0;
}

void usage_convert_ext(FILE *f)
{
	usage_convert(f);
	fprintf(f,
"\n"
"Perfetto / chrome://tracing:\n"
"  " PROG " convert FILE OUT.json --to perfetto [--host HOST_EVENTS [--ctrl N]]\n"
"                                          [--dict FILE]\n"
"\n"
"  Writes a Trace Event JSON file for ui.perfetto.dev or chrome://tracing:\n"
"  a track per firmware CPU with every record (dictionary names and fields\n"
"  as args), NVMe commands as async slices with their phases nested inside,\n"
"  background windows (gc, thermal) on their own tracks, and every sequence\n"
"  gap as a \"LOST N records\" slice.  Times are the firmware clock.\n"
"      --host FILE      also the host's commands (hmb-trace-agent -j\n"
"                       --per-command output, or perf script of the nvme\n"
"                       tracepoints; see correlate --help), placed on the\n"
"                       firmware time line by the clock estimate, with a flow\n"
"                       arrow from each host submit to its firmware fetch\n"
"      --ctrl N         the host controller of FILE (see correlate --help)\n"
"      --dict FILE      event dictionary (default: the shipped one, or\n"
"                       $HMB_EVENTS_DICT)\n"
"\n"
"CTF 1.8 without conversion:\n"
"  " PROG " convert FILE DIR --to ctf --raw [--dict FILE]\n"
"\n"
"  DIR/metadata describes the dump's own bytes and DIR/stream links to FILE,\n"
"  so babeltrace2 reads the dump as written: every record, wrap markers and\n"
"  duplicates included, payload raw, event names from the dictionary.  A\n"
"  ring image, or a dump whose timestamps go backwards, is refused.\n"
"\n"
"  Examples:\n"
"  " PROG " convert trace.bin trace.json --to perfetto\n"
"      then open trace.json in https://ui.perfetto.dev\n"
"  " PROG " convert trace.bin raw-ctf --to ctf --raw && babeltrace2 raw-ctf\n");
}

static const struct option pf_opts[] = {
	{ "to", required_argument, NULL, 't' },
	{ "dict", required_argument, NULL, 'D' },
	{ "host", required_argument, NULL, 'H' },
	{ "ctrl", required_argument, NULL, 'C' },
	{ "help", no_argument, NULL, 'h' },
	INPUT_LONGOPTS,
	{ NULL, 0, NULL, 0 }
};

static int cmd_perfetto(int argc, char **argv)
{
	struct input_opts iopts = { .max_gaps = 0 };
	const char *dict_path = NULL, *out, *host = NULL;
	struct hmb_dict *dict = NULL;
	struct corr corr, *cp = NULL;
	struct hmb_outbuf ob;
	struct input in;
	long ctrl = -1;
	int opt, rc;

	optind = 1;
	while ((opt = getopt_long(argc, argv, "t:h", pf_opts, NULL)) != -1) {
		switch (opt) {
		case 't':
			break;		/* perfetto: that is why we are here */
		case 'D':
			dict_path = optarg;
			break;
		case 'H':
			host = optarg;
			break;
		case 'C':
			if (parse_ctrl(optarg, &ctrl))
				return EXIT_USAGE;
			break;
		case 'h':
			usage_convert_ext(stdout);
			return 0;
		default:
			if (input_opt_or_usage(&iopts, opt, optarg, usage_convert_ext))
				return EXIT_USAGE;
		}
	}
	if (argc - optind != 2) {
		errorf("convert: expected FILE and OUT (try '" PROG " convert --help')");
		return EXIT_USAGE;
	}
	out = argv[optind + 1];
	if (host && strcmp(argv[optind], "-") == 0) {
		errorf("convert: --host reads FILE twice; give a file, not -");
		return EXIT_USAGE;
	}
	if (dict_open(dict_path, &dict))
		return EXIT_BADINPUT;
	if (host) {
		rc = corr_run(&corr, argv[optind], host, dict, ctrl, 0);
		if (rc) {
			hmb_dict_free(dict);
			return rc;
		}
		if (hmb_join_clock(corr.j)->valid) {
			cp = &corr;
		} else {
			fprintf(stderr, PROG ": %s: no clock estimate (%llu matched commands, %zu needed): host commands left out\n",
				host, (unsigned long long)
				hmb_join_stats(corr.j)->tot.matched,
				hmb_join_clock(corr.j)->min_points);
		}
	}
	if (input_open(&in, argv[optind], &iopts)) {
		if (host)
			corr_free(&corr);
		hmb_dict_free(dict);
		return EXIT_BADINPUT;
	}
	rc = ob_create(&ob, out, OUTBUF_SIZE);
	if (!rc) {
		rc = write_perfetto(&in, &ob, dict, cp);
		rc = ob_finish(&ob, rc);
	}
	input_close(&in);
	if (host)
		corr_free(&corr);
	hmb_dict_free(dict);
	return rc;
}

/* The --to value, in any spelling getopt accepts (NULL if none). */
static const char *convert_target(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = NULL;

		if (strcmp(a, "--") == 0)
			break;
		if ((strcmp(a, "--to") == 0 || strcmp(a, "-t") == 0) &&
		    i + 1 < argc)
			v = argv[++i];
		else if (strncmp(a, "--to=", 5) == 0)
			v = a + 5;
		else if (strncmp(a, "-t", 2) == 0 && a[2])
			v = a + 2;
		if (v)
			return v;
	}
	return NULL;
}

int cmd_convert_ext(int argc, char **argv)
{
	const char *to;

	for (int i = 1; i < argc; i++)
		if (strcmp(argv[i], "-h") == 0 ||
		    strcmp(argv[i], "--help") == 0) {
			usage_convert_ext(stdout);
			return 0;
		}
	to = convert_target(argc, argv);
	if (to && strcmp(to, "perfetto") == 0)
		return cmd_perfetto(argc, argv);
	if (to && strcmp(to, "ctf") == 0)
		for (int i = 1; i < argc; i++)
			if (strcmp(argv[i], "--raw") == 0)
				return cmd_ctf_raw_main(argc, argv);
	return cmd_convert(argc, argv);
}
