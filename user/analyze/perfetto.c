// SPDX-License-Identifier: Apache-2.0
/*
 * convert --to perfetto-json: a Trace Event JSON file (the "JSON trace format"
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
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analyze.h"
#include "formats.h"
#include "hmbtrace_fwmodel.h"
#include "correlate.h"
#include "pelhost.h"

#define OUTBUF_SIZE	(1u << 20)
#define PID_FW		1
#define PID_HOST	2
#define TID_SUBMIT	1
#define TID_LOST	1000
#define TID_BG		1100
#define PID_PEL		3

struct pf {
	struct hmb_json j;		/* the traceEvents array */
	const struct hmb_dict *dict;
	bool cpu_named[256];
	char groups[HMB_FWM_MAX_GROUPS][HMB_DICT_NAME_LEN];
	unsigned int ngroups;
	uint64_t lost_end;	/* end of the last LOST slice (no overlap) */
	/* counts, written into the metadata */
	uint64_t n_records, n_cmds, n_steps, n_lost_slices, n_bg, n_instants;
	uint64_t lost_clamped;
	/* --host: flows from host submit to the fetch record */
	const struct corr *corr;
	struct pf_flow *flows;	/* sorted by (seq, ts) of the fetch record;
				 * those of records not written yet */
	size_t nflows, capflows;
	uint64_t n_host, n_flows_out;
	uint64_t n_seen;	/* host commands the join handed out */
	uint64_t n_unplaced;	/* ... in a window without a clock */
	const char *host_path;
	/* the records, written as the join is done with them */
	struct input *in;
	struct hmb_fwmodel *m;
	struct hmb_record rec;	/* read, not yet written */
	bool held, in_end;
	uint64_t gaps_seen;
	int rec_rc;		/* pf_advance's failure, for pf_host */
	bool host_named, oom;
	/* --pel: the log's events, given firmware times as the join goes */
	struct pelh *pel;
};

/* A new event of the traceEvents array, one per line. */
static struct hmb_json *ev_start(struct pf *p)
{
	hmb_json_next_line(&p->j);
	hmb_json_obj(&p->j);
	return &p->j;
}

/* Firmware ns as Trace Event microseconds, exactly. */
static void kv_us(struct hmb_json *j, const char *key, uint64_t ns)
{
	hmb_json_key_str(j, key);
	hmb_json_fixed(j, ns, 3);
}

/* An id such as "0x0000002a". */
static void kv_id(struct hmb_json *j, const char *key, uint64_t id)
{
	char buf[24];

	snprintf(buf, sizeof(buf), "0x%08llx", (unsigned long long)id);
	hmb_json_key_str(j, key);
	hmb_json_str(j, buf);
}

static void meta_name_pid(struct pf *p, int pid, const char *what, int tid,
			  const char *name, int sort)
{
	struct hmb_json *j = ev_start(p);

	hmb_json_kv_str(j, "ph", "M");
	hmb_json_kv_u64(j, "pid", (uint64_t)pid);
	if (tid >= 0)
		hmb_json_kv_u64(j, "tid", (uint64_t)tid);
	hmb_json_kv_str(j, "name", what);
	hmb_json_key(j, "args");
	hmb_json_obj(j);
	hmb_json_kv_str(j, "name", name);
	hmb_json_end(j);
	hmb_json_end(j);
	if (tid < 0)
		return;
	j = ev_start(p);
	hmb_json_kv_str(j, "ph", "M");
	hmb_json_kv_u64(j, "pid", (uint64_t)pid);
	hmb_json_kv_u64(j, "tid", (uint64_t)tid);
	hmb_json_kv_str(j, "name", "thread_sort_index");
	hmb_json_key(j, "args");
	hmb_json_obj(j);
	hmb_json_kv_u64(j, "sort_index", (uint64_t)sort);
	hmb_json_end(j);
	hmb_json_end(j);
}

static void meta_name(struct pf *p, const char *what, int tid,
		      const char *name, int sort)
{
	meta_name_pid(p, PID_FW, what, tid, name, sort);
}

const struct pf_flow *pf_flow_find(const struct pf_flow *v, size_t n,
				   uint32_t seq, uint64_t ts)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct pf_flow *f = &v[mid];

		if (f->seq < seq || (f->seq == seq && f->ts < ts))
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < n && v[lo].seq == seq && v[lo].ts == ts)
		return &v[lo];
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

static void put_fields(struct hmb_json *j, const struct hmb_dict_event *ev,
		       const struct hmb_record *rec)
{
	for (unsigned int i = 0; i < ev->nfields; i++) {
		const struct hmb_dict_field *f = &ev->fields[i];
		uint64_t v;

		hmb_json_key_str(j, f->name);
		if (hmb_dict_get(f, rec->payload, rec->hdr.payload_len, &v))
			hmb_json_null(j);
		else if (f->type >= HMB_FT_S8)
			hmb_json_i64(j, (int64_t)v);
		else
			hmb_json_u64(j, v);
	}
}

static void record_args(struct hmb_json *j, const struct hmb_dict_event *ev,
			const struct hmb_record *rec)
{
	const struct hmb_record_hdr *h = &rec->hdr;

	hmb_json_key(j, "args");
	hmb_json_obj(j);
	hmb_json_kv_u64(j, "seq", h->seq);
	hmb_json_kv_u64(j, "opcode", h->opcode);
	if (h->flags & HMB_REC_FLAG_TRUNCATED)
		hmb_json_kv_bool(j, "truncated", true);
	if (ev) {
		put_fields(j, ev, rec);
	} else {
		hmb_json_key(j, "payload");
		hmb_json_hex(j, rec->payload, h->payload_len);
	}
	hmb_json_end(j);
}

static void on_record(void *ctx, const struct hmb_record *rec,
		      const struct hmb_dict_event *ev)
{
	struct pf *p = ctx;
	const struct hmb_record_hdr *h = &rec->hdr;
	bool instant = ev && ev->bg_edge != HMB_BG_NONE;
	struct hmb_json *j;
	char name[16];

	cpu_track(p, h->cpu);
	j = ev_start(p);
	if (instant) {
		hmb_json_kv_str(j, "ph", "i");
		hmb_json_kv_str(j, "s", "t");
		hmb_json_kv_str(j, "cat", "fw.bg");
		p->n_instants++;
	} else {
		hmb_json_kv_str(j, "ph", "X");
		hmb_json_kv_u64(j, "dur", 0);
		hmb_json_kv_str(j, "cat", "fw");
		p->n_records++;
	}
	snprintf(name, sizeof(name), "op 0x%04x", h->opcode);
	hmb_json_kv_str(j, "name", ev ? ev->name : name);
	hmb_json_kv_u64(j, "pid", PID_FW);
	hmb_json_kv_u64(j, "tid", h->cpu);
	kv_us(j, "ts", h->ts_ns);
	record_args(j, ev, rec);
	if (p->nflows && ev && ev->phase == HMB_PHASE_FETCH) {
		const struct pf_flow *f = pf_flow_find(p->flows, p->nflows,
						       h->seq, h->ts_ns);

		if (f) {
			kv_id(j, "bind_id", f->id);
			hmb_json_kv_bool(j, "flow_in", true);
		}
	}
	hmb_json_end(j);
}

/* An async event of command @c; its args follow. */
static struct hmb_json *async_ev(struct pf *p, const char *ph,
				 const char *name, const struct hmb_fwm_cmd *c,
				 uint64_t ts)
{
	struct hmb_json *j = ev_start(p);

	hmb_json_kv_str(j, "ph", ph);
	hmb_json_kv_str(j, "cat", "cmd");
	kv_id(j, "id", c->id);
	hmb_json_kv_str(j, "name", name);
	hmb_json_kv_u64(j, "pid", PID_FW);
	hmb_json_kv_u64(j, "tid", c->cpu);
	kv_us(j, "ts", ts);
	return j;
}

static void on_cmd_begin(void *ctx, const struct hmb_fwm_cmd *c)
{
	struct pf *p = ctx;
	struct hmb_json *j;
	char buf[16];

	p->n_cmds++;
	j = async_ev(p, "b", hmb_fwm_cmd_name(c, buf, sizeof(buf)), c,
		     c->first_ts);
	hmb_json_key(j, "args");
	hmb_json_obj(j);
	hmb_json_kv_u64(j, "sqid", c->sqid);
	hmb_json_kv_u64(j, "cid", c->cid);
	if (c->mask & (1u << HMB_PHASE_FETCH)) {
		if (c->have_opc)
			hmb_json_kv_u64(j, "opc", c->opc);
		hmb_json_kv_u64(j, "nsid", c->nsid);
		hmb_json_kv_u64(j, "slba", c->slba);
		hmb_json_kv_u64(j, "nlb", c->nlb);
	} else {
		hmb_json_kv_str(j, "first_phase", hmb_phase_name(c->last_phase));
	}
	hmb_json_end(j);
	hmb_json_end(j);
}

static void on_cmd_step(void *ctx, const struct hmb_fwm_cmd *c,
			enum hmb_phase from, uint64_t t0,
			enum hmb_phase to, uint64_t t1)
{
	struct pf *p = ctx;
	char name[2 * HMB_DICT_NAME_LEN + 8];
	struct hmb_json *j;

	p->n_steps++;
	snprintf(name, sizeof(name), "%s->%s", hmb_phase_name(from),
		 hmb_phase_name(to));
	j = async_ev(p, "b", name, c, t0);
	hmb_json_end(j);
	j = async_ev(p, "e", name, c, t1);
	hmb_json_key(j, "args");
	hmb_json_obj(j);
	hmb_json_kv_u64(j, "dur_ns", t1 - t0);
	hmb_json_end(j);
	hmb_json_end(j);
}

static void on_cmd_end(void *ctx, const struct hmb_fwm_cmd *c,
		       enum hmb_fwm_end why)
{
	struct pf *p = ctx;
	struct hmb_json *j;
	char buf[16];

	j = async_ev(p, "e", hmb_fwm_cmd_name(c, buf, sizeof(buf)), c,
		     c->last_ts);
	hmb_json_key(j, "args");
	hmb_json_obj(j);
	hmb_json_kv_str(j, "end", hmb_fwm_end_name(why));
	hmb_json_kv_u64(j, "fw_ns", c->last_ts - c->first_ts);
	hmb_json_end(j);
	hmb_json_end(j);
}

/* The track of background group @group (named when first seen), or -1. */
static int bg_track(struct pf *p, const char *group)
{
	char name[HMB_DICT_NAME_LEN + 8];
	unsigned int g;

	for (g = 0; g < p->ngroups; g++)
		if (strcmp(p->groups[g], group) == 0)
			return (int)g;
	if (g == HMB_FWM_MAX_GROUPS)
		return -1;
	snprintf(p->groups[g], HMB_DICT_NAME_LEN, "%s", group);
	p->ngroups++;
	snprintf(name, sizeof(name), "bg %s", group);
	meta_name(p, "thread_name", TID_BG + (int)g, name, 50 + (int)g);
	return (int)g;
}

static void on_bg_window(void *ctx, const char *group, uint64_t t0,
			 uint64_t t1, unsigned int flags, uint8_t cpu)
{
	struct pf *p = ctx;
	int g = bg_track(p, group);
	struct hmb_json *j;

	if (g < 0)
		return;
	p->n_bg++;
	j = ev_start(p);
	hmb_json_kv_str(j, "ph", "X");
	hmb_json_kv_str(j, "cat", "fw.bg");
	hmb_json_kv_str(j, "name", group);
	hmb_json_kv_u64(j, "pid", PID_FW);
	hmb_json_kv_u64(j, "tid", TID_BG + (unsigned int)g);
	kv_us(j, "ts", t0);
	kv_us(j, "dur", t1 - t0);
	hmb_json_key(j, "args");
	hmb_json_obj(j);
	hmb_json_kv_u64(j, "cpu", cpu);
	if (flags & HMB_FWM_BG_NO_BEGIN)
		hmb_json_kv_bool(j, "begin_missing", true);
	if (flags & HMB_FWM_BG_NO_END)
		hmb_json_kv_bool(j, "end_missing", true);
	hmb_json_end(j);
	hmb_json_end(j);
}

static void lost_slice(struct pf *p, const struct hmb_gap *g)
{
	uint64_t t0 = g->ts_before, t1 = g->ts_after;
	bool clamped = false;
	struct hmb_json *j;
	char name[48];

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
	snprintf(name, sizeof(name), "LOST %llu record%s",
		 (unsigned long long)g->count, g->count == 1 ? "" : "s");
	j = ev_start(p);
	hmb_json_kv_str(j, "ph", "X");
	hmb_json_kv_str(j, "cat", "loss");
	hmb_json_kv_str(j, "name", name);
	hmb_json_kv_u64(j, "pid", PID_FW);
	hmb_json_kv_u64(j, "tid", TID_LOST);
	kv_us(j, "ts", t0);
	kv_us(j, "dur", t1 - t0);
	hmb_json_key(j, "args");
	hmb_json_obj(j);
	hmb_json_kv_u64(j, "count", g->count);
	hmb_json_kv_u64(j, "first_seq", g->first_seq);
	hmb_json_kv_u64(j, "last_seq", g->last_seq);
	hmb_json_kv_u64(j, "ts_before", g->ts_before);
	hmb_json_kv_u64(j, "ts_after", g->ts_after);
	if (clamped)
		hmb_json_kv_bool(j, "clamped", true);
	hmb_json_end(j);
	hmb_json_end(j);
}

static int cmp_flow(const void *a, const void *b)
{
	const struct pf_flow *x = a, *y = b;

	if (x->seq != y->seq)
		return x->seq < y->seq ? -1 : 1;
	return x->ts < y->ts ? -1 : x->ts > y->ts;
}

void pf_flow_sort(struct pf_flow *v, size_t n)
{
	qsort(v, n, sizeof(*v), cmp_flow);
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
	const struct hmb_host_cmd *h = &c->h;
	struct hmb_json *j;

	for (int e = 0; e < 2; e++) {
		j = ev_start(p);
		hmb_json_kv_str(j, "ph", e ? "e" : "b");
		hmb_json_kv_str(j, "cat", "host");
		kv_id(j, "id", i + 1);
		hmb_json_kv_str(j, "name", h->opc[0] ? h->opc : "cmd");
		hmb_json_kv_u64(j, "pid", PID_HOST);
		hmb_json_kv_u64(j, "tid", TID_SUBMIT);
		kv_us(j, "ts", e ? t1 : t0);
		if (!e) {
			hmb_json_key(j, "args");
			hmb_json_obj(j);
			hmb_json_kv_u64(j, "qid", h->qid);
			hmb_json_kv_u64(j, "cid", h->cid);
			hmb_json_kv_u64(j, "slba", h->slba);
			hmb_json_kv_str(j, "match", hmb_match_name(c->match));
			hmb_json_kv_u64(j, "submit_ns", h->submit_ns);
			hmb_json_kv_u64(j, "complete_ns", h->complete_ns);
			for (int x = 0; x < HMB_X_COUNT; x++) {
				char key[48];

				if (c->x[x] < 0)
					continue;
				snprintf(key, sizeof(key), "%s_ns",
					 hmb_xphase_name(x));
				hmb_json_key_str(j, key);
				hmb_json_i64(j, c->x[x]);
			}
			hmb_json_end(j);
		}
		hmb_json_end(j);
	}
}

/* The zero-length submit slice of command @c, a flow starting from it. */
static void host_submit(struct pf *p, const struct hmb_cmd *c, size_t i,
			uint64_t t0)
{
	struct hmb_json *j = ev_start(p);

	hmb_json_kv_str(j, "ph", "X");
	hmb_json_kv_u64(j, "dur", 0);
	hmb_json_kv_str(j, "cat", "host");
	hmb_json_kv_str(j, "name", "submit");
	hmb_json_kv_u64(j, "pid", PID_HOST);
	hmb_json_kv_u64(j, "tid", TID_SUBMIT);
	kv_us(j, "ts", t0);
	hmb_json_key(j, "args");
	hmb_json_obj(j);
	hmb_json_kv_u64(j, "qid", c->h.qid);
	hmb_json_kv_u64(j, "cid", c->h.cid);
	hmb_json_end(j);
	if ((c->fw.mask & (1u << HMB_PHASE_FETCH)) &&
	    p->nflows == p->capflows) {
		size_t cap = p->capflows ? p->capflows * 2 : 4096;
		struct pf_flow *v = realloc(p->flows, cap * sizeof(*v));

		if (v) {
			p->flows = v;
			p->capflows = cap;
		} else {
			p->oom = true;
		}
	}
	if ((c->fw.mask & (1u << HMB_PHASE_FETCH)) && p->nflows < p->capflows) {
		struct pf_flow *f = &p->flows[p->nflows++];

		kv_id(j, "bind_id", i + 1);
		hmb_json_kv_bool(j, "flow_out", true);
		f->seq = c->fw.seq[HMB_PHASE_FETCH];
		f->ts = c->fw.ts[HMB_PHASE_FETCH];
		f->id = (uint32_t)(i + 1);
		p->n_flows_out++;
	}
	hmb_json_end(j);
}

/*
 * The host's commands, on the firmware time line through the clock
 * estimate: async slices in process "host", and a zero-length "submit"
 * slice per command from which a flow arrow goes to its fetch record.
 * corr_run's callback: written as the join hands each command out (its
 * window's clock; commands of a window without one are left out).
 */
static int host_cmd(void *ctx, const struct hmb_join *j, size_t i,
		    const struct hmb_cmd *c)
{
	struct pf *p = ctx;
	size_t id = (size_t)p->n_seen++;
	uint64_t t0, t1;

	(void)i;
	if (c->h.ctrl != hmb_join_ctrl(j))
		return 0;
	if (!hmb_join_clock(j)->valid) {
		p->n_unplaced++;
		return 0;
	}
	if (!p->host_named) {
		char name[300];

		snprintf(name, sizeof(name), "host nvme%u (%s, times mapped to the firmware clock)",
			 hmb_join_ctrl(j), p->host_path);
		meta_name_pid(p, PID_HOST, "process_name", -1, name, 0);
		meta_name_pid(p, PID_HOST, "thread_name", TID_SUBMIT,
			      "host submit", 0);
		p->host_named = true;
	}
	t0 = to_fw(j, i, c->h.submit_ns);
	t1 = to_fw(j, i, c->h.complete_ns);
	if (t1 < t0)
		t1 = t0;
	if (p->pel) {
		pelh_cmd(p->pel, c);
		pelh_fw_cmd(p->pel, j, i, c);
	}
	p->n_host++;
	host_slice(p, c, id, t0, t1);
	host_submit(p, c, id, t0);
	return p->j.ob->err || p->oom ? -1 : 0;
}

static const struct hmb_fwm_ops pf_ops = {
	.record = on_record,
	.cmd_begin = on_cmd_begin,
	.cmd_step = on_cmd_step,
	.cmd_end = on_cmd_end,
	.bg_window = on_bg_window,
};

static void metadata(struct hmb_json *j, const struct pf *p,
		     const struct input *in, const struct hmb_fwmodel *m)
{
	const struct hmb_acct *a = in->acct;
	const struct hmb_fwm_stats *st = &m->st;

	hmb_json_key(j, "metadata");
	hmb_json_obj(j);
	hmb_json_kv_str(j, "source", in->name);
	hmb_json_kv_str(j, "clock", "firmware ts_ns (not host time)");
	hmb_json_kv_u64(j, "records", a->records);
	hmb_json_kv_u64(j, "lost", a->lost);
	hmb_json_kv_u64(j, "gaps", a->gaps);
	hmb_json_kv_u64(j, "duplicates", a->duplicates);
	hmb_json_kv_u64(j, "wrap_markers", a->wrap_markers);
	hmb_json_kv_u64(j, "ignored", a->ignored);
	hmb_json_kv_u64(j, "truncated", a->truncated);
	hmb_json_kv_u64(j, "commands", st->cmds);
	hmb_json_kv_u64(j, "commands_complete", st->complete);
	hmb_json_kv_u64(j, "commands_reused", st->reused);
	hmb_json_kv_u64(j, "commands_open_at_end", st->eof_open);
	hmb_json_kv_u64(j, "commands_evicted", st->evicted);
	hmb_json_kv_u64(j, "commands_without_fetch", st->no_fetch);
	hmb_json_kv_u64(j, "duplicate_phase_events", st->dup_phase);
	hmb_json_kv_u64(j, "unknown_opcode", st->unknown_opcode);
	hmb_json_kv_u64(j, "short_payload", st->short_payload);
	hmb_json_kv_u64(j, "backwards_clamped", st->backwards);
	hmb_json_kv_u64(j, "bg_windows", st->bg_windows);
	hmb_json_kv_u64(j, "lost_slices", p->n_lost_slices);
	hmb_json_kv_u64(j, "lost_slices_clamped", p->lost_clamped);
	if (p->corr) {
		const struct hmb_clock *k = hmb_join_clock(p->corr->j);

		hmb_json_kv_u64(j, "host_commands", p->n_host);
		hmb_json_kv_u64(j, "host_flows", p->n_flows_out);
		hmb_json_kv_dbl(j, "clock_offset_ns", k->off_ns, 0);
		hmb_json_kv_dbl(j, "clock_offset_err_ns", k->off_err_ns, 0);
		hmb_json_kv_dbl(j, "clock_ref_fw_ns", k->ref, 0);
		hmb_json_kv_dbl(j, "clock_drift_ppm", k->drift * 1e6, 3);
	}
	if (p->pel) {
		hmb_json_kv_u64(j, "pel_events", p->pel->n);
		hmb_json_kv_u64(j, "pel_placed", p->pel->nplaced);
		hmb_json_kv_u64(j, "pel_on_timeline", p->pel->n_fw);
	}
	hmb_json_end(j);
}

/* --pel: each event on the firmware time line, an instant in its own
 * process, its host time, bound and fields as args. */
static void pel_events(struct pf *p)
{
	char name[300];

	snprintf(name, sizeof(name), "NVMe Persistent Event Log (%s, times mapped to the firmware clock)",
		 p->pel->path);
	meta_name_pid(p, PID_PEL, "process_name", -1, name, 0);
	for (size_t k = 0; k < p->pel->n_fw; k++) {
		const struct pelh_ev *x = &p->pel->ev[p->pel->fw_order[k]];
		struct hmb_json *j = ev_start(p);
		char nb[16];

		snprintf(nb, sizeof(nb), "type_%02x", x->type);
		hmb_json_kv_str(j, "ph", "i");
		hmb_json_kv_str(j, "s", "p");
		hmb_json_kv_str(j, "cat", "pel");
		hmb_json_kv_str(j, "name", x->name ? x->name : nb);
		hmb_json_kv_u64(j, "pid", PID_PEL);
		hmb_json_kv_u64(j, "tid", 1);
		kv_us(j, "ts", x->fw_ns);
		hmb_json_key(j, "args");
		hmb_json_obj(j);
		hmb_json_kv_u64(j, "index", x->index);
		hmb_json_kv_u64(j, "host_ns", x->mono_ns);
		hmb_json_kv_u64(j, "bound_ns", x->bound_ns);
		hmb_json_kv_u64(j, "ctrl_timestamp_ms", x->ts.ms);
		hmb_json_kv_str(j, "fields", x->fields);
		hmb_json_kv_u64(j, "commands_overlapped", x->n_cmds);
		hmb_json_end(j);
		hmb_json_end(j);
	}
}

/*
 * Stream @in through the firmware model into the Trace Event file: every
 * record (@all), or those before seq @before (serial order; the first
 * record at or after it is held for the next call).  With --host, the
 * join says how far it is done with the records (pf_window), so the
 * flows it left are bound as their fetch records go out, then dropped.
 */
static int pf_advance(struct pf *p, uint32_t before, bool all)
{
	struct input *in = p->in;
	struct hmb_error err = { 0 };
	size_t k = 0;
	int rc;

	for (;;) {
		if (!p->held) {
			rc = p->in_end ? 0 : input_next(in, &p->rec, &err);
			if (rc < 0) {
				hmb_ob_flush(p->j.ob);
				input_report(in, &err);
				return EXIT_BADINPUT;
			}
			if (!rc) {
				p->in_end = true;
				break;
			}
			p->held = true;
			if (in->acct->gaps != p->gaps_seen) {
				p->gaps_seen = in->acct->gaps;
				lost_slice(p, &in->last_gap);
			}
		}
		if (!all && (int32_t)(p->rec.hdr.seq - before) >= 0)
			break;
		hmb_fwm_add(p->m, &p->rec);
		p->held = false;
		if (p->j.ob->err)
			break;
	}
	/* the flows of the records written are done */
	for (size_t i = 0; i < p->nflows; i++)
		if (!all && (int32_t)(p->flows[i].seq - before) >= 0)
			p->flows[k++] = p->flows[i];
	p->nflows = k;
	return 0;
}

/* hmb_join_src.window_done: the window's flows sorted, records out. */
static int pf_window(void *ctx, uint32_t before, bool all)
{
	struct pf *p = ctx;

	pf_flow_sort(p->flows, p->nflows);
	p->rec_rc = pf_advance(p, before, all);
	return p->rec_rc ? 1 : 0;
}

/* After the events: the metadata object and the file's end. */
static void metadata_end(struct hmb_json *top, const struct pf *p,
			 const struct input *in, const struct hmb_fwmodel *m)
{
	hmb_json_next_line(top);	/* after the last event, no comma */
	hmb_json_end_arr(top);
	hmb_json_next_line(top);
	metadata(top, p, in, m);
	hmb_ob_reserve(top->ob, 1);
	hmb_ob_putc(top->ob, '\n');	/* white space: no comma */
	hmb_json_end(top);
	hmb_json_nl(top);
}

/*
 * --host: the join streamed into the host's events (host_cmd), then its
 * flows sorted for the records.  0, or an exit code (said).
 */
static int pf_host(struct pf *p, const struct conv *c,
		   const struct hmb_dict *dict, struct corr *corr)
{
	const struct hmb_clock *k;
	int rc;

	p->host_path = c->host;
	rc = corr_run_src(corr, c->in, c->host, dict, c->ctrl, 0, NULL,
			  host_cmd, pf_window, p);
	if (rc == 1 && p->rec_rc)	/* the records failed: said */
		return p->rec_rc;
	if (rc < 0)	/* the output failed: said when it is finished */
		return p->oom ? (errorf("out of memory"), EXIT_BADINPUT) : 0;
	if (rc)
		return rc;
	k = hmb_join_clock(corr->j);
	if (p->n_unplaced)
		fprintf(stderr, PROG ": %s: no clock estimate (%llu matched commands, %zu needed)%s: %llu host commands left out\n",
			c->host, (unsigned long long)
			hmb_join_stats(corr->j)->tot.matched, k->min_points,
			hmb_join_totals(corr->j)->windows > 1 ?
			" in some of the join's windows" : "",
			(unsigned long long)p->n_unplaced);
	if (k->valid)
		p->corr = corr;
	return 0;
}

static int write_perfetto(struct input *in, struct hmb_outbuf *ob,
			  const struct hmb_dict *dict, const struct conv *c)
{
	struct hmb_fwmodel m;
	struct pf p = { .dict = dict, .in = in, .m = &m };
	struct hmb_json top;
	struct corr corr;
	struct pelh pel;
	char pname[300];
	int rc = 0;

	if (c->pel && pelh_load(&pel, c->pel))
		return EXIT_BADINPUT;
	if (c->pel)
		p.pel = &pel;
	if (hmb_fwm_init(&m, dict, &pf_ops, &p)) {
		errorf("out of memory");
		if (p.pel)
			pelh_free(p.pel);
		return EXIT_BADINPUT;
	}
	hmb_json_init(&top, ob);
	hmb_json_obj(&top);
	hmb_json_kv_str(&top, "displayTimeUnit", "ns");
	hmb_json_key(&top, "traceEvents");
	hmb_json_arr(&top);
	hmb_json_init(&p.j, ob);
	snprintf(pname, sizeof(pname), "SSD firmware (%s)", in->name);
	meta_name(&p, "process_name", -1, pname, 0);
	if (c->host)
		rc = pf_host(&p, c, dict, &corr);
	if (!rc)	/* what the join left (all of it without --host) */
		rc = pf_advance(&p, 0, true);
	if (!rc && p.pel && pelh_fw_end(p.pel)) {
		errorf("out of memory");
		rc = EXIT_BADINPUT;
	}
	if (!rc && p.pel)
		pel_events(&p);
	hmb_fwm_finish(&m);
	free(p.flows);
	if (!rc)
		metadata_end(&top, &p, in, &m);
	if (p.pel)
		pelh_free(p.pel);
	if (c->host && !rc)
		corr_free(&corr);
	if (rc)
		return rc;
	hmb_ob_flush(ob);
	if (ob->err) {
		errorf("%s: write error: %s", ob->name, strerror(ob->err));
		return EXIT_BADINPUT;
	}
	return 0;
}

/* convert --to perfetto-json (convert.c's table). */
int perfetto_convert(const struct conv *c, const struct conv_format *f)
{
	struct hmb_dict *dict = NULL;
	struct hmb_outbuf ob;
	struct input in;
	int rc;

	(void)f;
	if (c->host && strcmp(c->in, "-") == 0) {
		usagef("--host reads FILE twice; give a file, not -");
		return EXIT_USAGE;
	}
	if (dict_open(c->dict_path, &dict))
		return EXIT_BADINPUT;
	rc = input_open(&in, c->in, &c->iopts);
	if (!rc) {
		rc = ob_create(&ob, c->out, OUTBUF_SIZE);
		if (!rc)
			rc = ob_finish(&ob, write_perfetto(&in, &ob, dict, c));
		input_close(&in);
	}
	hmb_dict_free(dict);
	return rc;
}
