// SPDX-License-Identifier: Apache-2.0
/*
 * convert --to perfetto: Perfetto's own trace format, a stream of
 * TracePacket messages (protos/perfetto/trace/perfetto_trace.proto, field
 * 1 of Trace), written with the TrackEvent writer of pftw.h on the
 * wire-format writer of pb.h.
 *
 * Layout:
 *  - track "SSD firmware (FILE)" (a process track, pid 1) with children:
 *    "fw commands in flight" (a counter), one "bg GROUP" slice track and
 *    "GROUP active" counter (0/1) per background group, "lost records",
 *    one "fw cpu N" track per firmware CPU, and per submission queue
 *    "fw sqN" with lanes "sqN #k";
 *  - every command on a lane of its queue: a slice from its first to its
 *    last phase, named after its NVMe opcode, the fetch record's fields as
 *    args; the intervals between successive phases ("fetch->media_start",
 *    ...) nested inside, each carrying the fields of the record that ends
 *    it.  A lane holds one command at a time: lanes are as many as
 *    commands were in flight at once;
 *  - the records no command slice carries (background edges and points,
 *    unknown opcodes, phase records the model did not place) as instants
 *    on their CPU's track, with seq and fields;
 *  - with --host, track "host nvmeN" (pid 2): per host queue "host qN"
 *    with lanes, each host command a slice from submit to completion on
 *    the firmware time line, its latency breakdown as args, a flow from it
 *    to its firmware command's slice; "host commands in flight".
 *
 * Size: each lane, CPU and background group is its own packet sequence,
 * so that its events are in time order: timestamps are deltas on the
 * sequence's incremental clock (clock 64; an event earlier than the last
 * one on its sequence carries an absolute BOOTTIME timestamp instead), the
 * track is the sequence's default, names and arg names are interned per
 * sequence, and the counters ride on the slices as extra_counter_values.
 * Memory: the firmware model's table, the lanes (as many as commands in
 * flight at once), the join's window and its flows.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "analyze.h"
#include "formats.h"
#include "hmbtrace_fwmodel.h"
#include "correlate.h"
#include "pelhost.h"
#include "pftw.h"

#define OUTBUF_SIZE	(1u << 20)

struct lane;

/* The lanes of one queue (firmware sqid or host qid). */
struct lgroup {
	bool host;
	uint16_t q;
	uint64_t uuid;
	struct lane **lanes;
	uint32_t nlanes, caplanes;
	uint32_t *free;		/* min-heap of free lane numbers */
	uint32_t nfree;
};

struct lane {
	struct pseq s;
	struct lgroup *g;
	uint32_t k;		/* number in its group */
	uint64_t end_ts;	/* end of its last slice */
};

/* A host command's end, written when no later submit precedes it. */
struct hend {
	uint64_t ts;
	struct lane *lane;
};

/* Open firmware commands: (sqid, cid) -> lane, open addressing. */
#define CMAP_SIZE	(2 * HMB_FWM_MAX_INFLIGHT)
struct cmap_ent {
	uint32_t key;		/* sqid << 16 | cid */
	bool used;
	struct lane *lane;
};

struct pft {
	struct pfw w;
	const struct hmb_dict *dict;
	struct input *in;
	struct hmb_fwmodel *m;
	uint64_t fw_root, host_root, fw_inflight, host_inflight;
	struct pseq meta, lost;
	struct pseq *cpu[256];
	struct {
		char name[HMB_DICT_NAME_LEN];
		struct pseq s;
	} bg[HMB_FWM_MAX_GROUPS];
	unsigned int nbg;
	struct lgroup **fwg, **hostg;
	unsigned int nfwg, nhostg;
	struct cmap_ent *cmap;
	/* the record being modelled: what its callbacks left to write */
	struct {
		struct lane *lane;
		bool begin, step_end, end;
		int64_t begin_val, end_val;
		uint64_t begin_ts, step_ts, end_ts;
		char name[16];
		uint32_t flow;
	} pend;
	int64_t fw_open, host_open;
	/* --host */
	struct pf_flow *flows;
	size_t nflows, capflows;
	struct hend *hends;	/* min-heap by ts */
	size_t nhends, caphends;
	const struct corr *corr;
	const char *host_path;
	uint64_t n_seen, n_host, n_unplaced, n_flows_out, n_flows_in;
	/* records */
	struct hmb_record rec;
	bool held, in_end;
	uint64_t gaps_seen, lost_end, n_lost_slices, lost_clamped;
	int rec_rc;
	/* --pel: the log's events, given firmware times as the join goes */
	struct pelh *pel;
	struct pseq pels;
};

/* The lane group of queue @q (host or firmware), made when first seen. */
static struct lgroup *group_of(struct pft *p, bool host, uint16_t q)
{
	struct lgroup ***v = host ? &p->hostg : &p->fwg;
	unsigned int *n = host ? &p->nhostg : &p->nfwg;
	struct lgroup *g, **nv;
	char name[48];

	for (unsigned int i = 0; i < *n; i++)
		if ((*v)[i]->q == q)
			return (*v)[i];
	nv = realloc(*v, (*n + 1) * sizeof(**v));
	g = calloc(1, sizeof(*g));
	if (nv)
		*v = nv;
	if (!nv || !g) {
		free(g);
		p->w.oom = true;
		return NULL;
	}
	(*v)[(*n)++] = g;
	g->host = host;
	g->q = q;
	g->uuid = pfw_uuid(&p->w);
	if (host)
		snprintf(name, sizeof(name), "host q%u", q);
	else
		snprintf(name, sizeof(name), "fw sq%u", q);
	pfw_track(&p->w, g->uuid, host ? p->host_root : p->fw_root, name,
		  1000 + q, 0, false);
	return g;
}

/*
 * A lane of @g free from @ts on: the lowest-numbered free one whose last
 * slice ended by then, else a new one.  NULL: out of memory.
 */
static struct lane *lane_get(struct pft *p, struct lgroup *g, uint64_t ts)
{
	struct lane *l;
	char name[48];

	if (g->nfree && g->lanes[g->free[0]]->end_ts <= ts)
		return g->lanes[pfw_heap_pop(g->free, &g->nfree)];
	if (g->nlanes == g->caplanes) {
		uint32_t cap = g->caplanes ? g->caplanes * 2 : 16;
		struct lane **v = realloc(g->lanes, cap * sizeof(*v));
		uint32_t *f = v ? realloc(g->free, cap * sizeof(*f)) : NULL;

		if (v)
			g->lanes = v;
		if (f)
			g->free = f;
		if (!v || !f) {
			p->w.oom = true;
			return NULL;
		}
		g->caplanes = cap;
	}
	l = calloc(1, sizeof(*l));
	if (!l) {
		p->w.oom = true;
		return NULL;
	}
	l->g = g;
	l->k = g->nlanes;
	g->lanes[g->nlanes++] = l;
	pfw_seq_init(&p->w, &l->s, pfw_uuid(&p->w),
		     g->host ? p->host_inflight : p->fw_inflight);
	snprintf(name, sizeof(name), "%s%u #%u", g->host ? "q" : "sq", g->q,
		 l->k);
	pfw_track(&p->w, l->s.track, g->uuid, name, (int)l->k, 0, false);
	return l;
}

static void lane_put(struct lane *l, uint64_t end_ts)
{
	l->end_ts = end_ts;
	pfw_heap_push(l->g->free, &l->g->nfree, l->k);
}

static void groups_free(struct lgroup **v, unsigned int n)
{
	for (unsigned int i = 0; i < n; i++) {
		for (uint32_t k = 0; k < v[i]->nlanes; k++) {
			pfw_seq_free(&v[i]->lanes[k]->s);
			free(v[i]->lanes[k]);
		}
		free(v[i]->lanes);
		free(v[i]->free);
		free(v[i]);
	}
	free(v);
}

/* Open firmware commands by (sqid, cid): the model has one per key. */
static uint32_t cmap_slot(uint32_t key)
{
	return (key * 2654435761u) & (CMAP_SIZE - 1);
}

static struct cmap_ent *cmap_find(struct pft *p, uint32_t key)
{
	uint32_t i = cmap_slot(key);

	while (p->cmap[i].used) {
		if (p->cmap[i].key == key)
			return &p->cmap[i];
		i = (i + 1) & (CMAP_SIZE - 1);
	}
	return &p->cmap[i];
}

static void cmap_del(struct pft *p, struct cmap_ent *e)
{
	uint32_t i = (uint32_t)(e - p->cmap), j = i;

	e->used = false;
	for (;;) {
		uint32_t h;

		j = (j + 1) & (CMAP_SIZE - 1);
		if (!p->cmap[j].used)
			return;
		h = cmap_slot(p->cmap[j].key);
		/* move j back to i unless its home lies in (i, j] */
		if ((j > i && (h <= i || h > j)) || (j < i && h <= i && h > j)) {
			p->cmap[i] = p->cmap[j];
			p->cmap[j].used = false;
			i = j;
		}
	}
}

static uint32_t cmd_key(const struct hmb_fwm_cmd *c)
{
	return (uint32_t)c->sqid << 16 | c->cid;
}

/* ------------------------------------------------------ firmware side */

static struct pseq *cpu_seq(struct pft *p, uint8_t cpu)
{
	char name[32];
	struct pseq *s;

	if (p->cpu[cpu])
		return p->cpu[cpu];
	s = calloc(1, sizeof(*s));
	if (!s) {
		p->w.oom = true;
		return NULL;
	}
	pfw_seq_init(&p->w, s, pfw_uuid(&p->w), 0);
	snprintf(name, sizeof(name), "fw cpu %u", cpu);
	pfw_track(&p->w, s->track, p->fw_root, name, 100 + cpu, 0, false);
	p->cpu[cpu] = s;
	return s;
}

/* Which of a record's fields rec_fields() leaves out. */
enum {
	RF_ALL,		/* none: a record of its own (an instant), with its
			 * seq; a command's records are found by their time,
			 * their fields equal to 0 left out (most statuses) */
	RF_CMD,		/* a command's first record: its sqid and opc are
			 * its lane's queue and its name */
	RF_STEP,	/* a later record: its keys are its command's */
};

/* The dictionary fields of @rec as args, but those @rf leaves out. */
static void rec_fields(struct pft *p, const struct hmb_dict_event *ev,
		       const struct hmb_record *rec, int rf)
{
	for (unsigned int i = 0; i < ev->nfields; i++) {
		const struct hmb_dict_field *f = &ev->fields[i];
		uint64_t v;

		if ((rf == RF_STEP && f->key != HMB_KEY_NONE) ||
		    (rf == RF_CMD && (f->key == HMB_KEY_SQID ||
				      strcmp(f->name, "opc") == 0)))
			continue;
		if (hmb_dict_get(f, rec->payload, rec->hdr.payload_len, &v))
			continue;	/* a short payload: not there */
		if (rf != RF_ALL && v == 0)
			continue;	/* as protobuf leaves out zeros */
		if (f->type >= HMB_FT_S8)
			pfw_ann_i64(&p->w, f->name, (int64_t)v);
		else
			pfw_ann_u64(&p->w, f->name, v);
	}
}

/* A record no command slice carries: an instant on its CPU's track. */
static void cpu_instant(struct pft *p, const struct hmb_record *rec,
			const struct hmb_dict_event *ev)
{
	const struct hmb_record_hdr *h = &rec->hdr;
	struct pseq *s = cpu_seq(p, h->cpu);
	char name[16];

	if (!s)
		return;
	pfw_ev_start(&p->w, s, h->ts_ns, INSTANT);
	snprintf(name, sizeof(name), "op 0x%04x", h->opcode);
	pfw_ev_name(&p->w, ev ? ev->name : name);
	pfw_ann_u64(&p->w, "seq", h->seq);
	pfw_ann_u64(&p->w, "opcode", h->opcode);
	if (h->flags & HMB_REC_FLAG_TRUNCATED)
		pfw_ann_bool(&p->w, "truncated");
	if (ev) {
		rec_fields(p, ev, rec, RF_ALL);
	} else {
		char hex[2 * 4096 + 1];
		size_t n = h->payload_len < 4096 ? h->payload_len : 4096;

		for (size_t i = 0; i < n; i++)
			snprintf(hex + 2 * i, 3, "%02x", rec->payload[i]);
		hex[2 * n] = '\0';
		pfw_ann_str(&p->w, "payload", hex);
	}
	pfw_ev_put(&p->w);
}

static void on_cmd_begin(void *ctx, const struct hmb_fwm_cmd *c)
{
	struct pft *p = ctx;
	struct lgroup *g = group_of(p, false, c->sqid);
	struct lane *l = g ? lane_get(p, g, c->first_ts) : NULL;
	struct cmap_ent *e;
	char name[16];

	if (!l)
		return;
	e = cmap_find(p, cmd_key(c));
	e->used = true;
	e->key = cmd_key(c);
	e->lane = l;
	p->fw_open++;
	p->pend.lane = l;
	p->pend.begin = true;
	p->pend.begin_ts = c->first_ts;
	p->pend.begin_val = p->fw_open;
	snprintf(p->pend.name, sizeof(p->pend.name), "%s",
		 hmb_fwm_cmd_name(c, name, sizeof(name)));
	p->pend.flow = 0;
	if (p->nflows && (c->mask & (1u << HMB_PHASE_FETCH))) {
		const struct pf_flow *f = pf_flow_find(
			p->flows, p->nflows, c->seq[HMB_PHASE_FETCH],
			c->ts[HMB_PHASE_FETCH]);

		if (f)
			p->pend.flow = f->id;
	}
}

static void on_cmd_step(void *ctx, const struct hmb_fwm_cmd *c,
			enum hmb_phase from, uint64_t t0,
			enum hmb_phase to, uint64_t t1)
{
	struct pft *p = ctx;
	struct cmap_ent *e = cmap_find(p, cmd_key(c));
	char name[2 * HMB_DICT_NAME_LEN + 8];

	if (!e->used)
		return;
	snprintf(name, sizeof(name), "%s->%s", hmb_phase_name(from),
		 hmb_phase_name(to));
	pfw_ev_start(&p->w, &e->lane->s, t0, SLICE_BEGIN);
	pfw_ev_name(&p->w, name);
	pfw_ev_put(&p->w);
	p->pend.lane = e->lane;
	p->pend.step_end = true;
	p->pend.step_ts = t1;
}

static void on_cmd_end(void *ctx, const struct hmb_fwm_cmd *c,
		       enum hmb_fwm_end why)
{
	struct pft *p = ctx;
	struct cmap_ent *e = cmap_find(p, cmd_key(c));
	struct lane *l;

	if (!e->used)
		return;
	l = e->lane;
	cmap_del(p, e);
	p->fw_open--;
	if (why == HMB_FWM_END_COMPLETE) {
		/* written with the record that ends it, its fields on it */
		p->pend.lane = l;
		p->pend.end = true;
		p->pend.end_ts = c->last_ts;
		p->pend.end_val = p->fw_open;
	} else {
		/* ended by a later record: no counter value on it (the
		 * next one written is the count then) */
		pfw_ev_start(&p->w, &l->s, c->last_ts, SLICE_END);
		pfw_ann_str(&p->w, "end", hmb_fwm_end_name(why));
		pfw_ev_put(&p->w);
	}
	lane_put(l, c->last_ts);
}

/* Every record: what its callbacks left, or an instant on its CPU. */
static void on_record(void *ctx, const struct hmb_record *rec,
		      const struct hmb_dict_event *ev)
{
	struct pft *p = ctx;
	struct pseq *s = p->pend.lane ? &p->pend.lane->s : NULL;
	bool placed = false;

	if (s && p->pend.begin) {
		pfw_ev_start(&p->w, s, p->pend.begin_ts, SLICE_BEGIN);
		pfw_ev_name(&p->w, p->pend.name);
		pfw_counter_val(&p->w, p->pend.begin_val);
		if (p->pend.flow) {
			hmb_pb_fixed64(&p->w.ev, TE_TERMINATING_FLOW_IDS,
				       p->pend.flow);
			p->n_flows_in++;
		}
		if (!p->pend.step_end)
			rec_fields(p, ev, rec, RF_CMD);
		pfw_ev_put(&p->w);
		placed = true;
	}
	if (s && p->pend.step_end) {
		pfw_ev_start(&p->w, s, p->pend.step_ts, SLICE_END);
		rec_fields(p, ev, rec, RF_STEP);
		pfw_ev_put(&p->w);
		placed = true;
	}
	if (s && p->pend.end) {
		pfw_ev_start(&p->w, s, p->pend.end_ts, SLICE_END);
		pfw_counter_val(&p->w, p->pend.end_val);
		pfw_ev_put(&p->w);
	}
	if (!placed)
		cpu_instant(p, rec, ev);
	memset(&p->pend, 0, sizeof(p->pend));
}

/* The sequence of background group @group (made when first seen). */
static struct pseq *bg_seq(struct pft *p, const char *group)
{
	char name[HMB_DICT_NAME_LEN + 16];
	uint64_t counter;
	unsigned int g;

	for (g = 0; g < p->nbg; g++)
		if (strcmp(p->bg[g].name, group) == 0)
			return &p->bg[g].s;
	if (g == HMB_FWM_MAX_GROUPS)
		return NULL;
	snprintf(p->bg[g].name, sizeof(p->bg[g].name), "%s", group);
	p->nbg++;
	counter = pfw_uuid(&p->w);
	snprintf(name, sizeof(name), "%s active", group);
	pfw_track(&p->w, counter, p->fw_root, name, 20 + (int)g, 0, true);
	pfw_seq_init(&p->w, &p->bg[g].s, pfw_uuid(&p->w), counter);
	snprintf(name, sizeof(name), "bg %s", group);
	pfw_track(&p->w, p->bg[g].s.track, p->fw_root, name, 10 + (int)g, 0, false);
	return &p->bg[g].s;
}

static void on_bg_window(void *ctx, const char *group, uint64_t t0,
			 uint64_t t1, unsigned int flags, uint8_t cpu)
{
	struct pft *p = ctx;
	struct pseq *s = bg_seq(p, group);

	if (!s)
		return;
	pfw_ev_start(&p->w, s, t0, SLICE_BEGIN);
	pfw_ev_name(&p->w, group);
	pfw_counter_val(&p->w, 1);
	pfw_ann_u64(&p->w, "cpu", cpu);
	if (flags & HMB_FWM_BG_NO_BEGIN)
		pfw_ann_bool(&p->w, "begin_missing");
	if (flags & HMB_FWM_BG_NO_END)
		pfw_ann_bool(&p->w, "end_missing");
	pfw_ev_put(&p->w);
	pfw_ev_start(&p->w, s, t1, SLICE_END);
	pfw_counter_val(&p->w, 0);
	pfw_ev_put(&p->w);
}

static const struct hmb_fwm_ops pft_ops = {
	.record = on_record,
	.cmd_begin = on_cmd_begin,
	.cmd_step = on_cmd_step,
	.cmd_end = on_cmd_end,
	.bg_window = on_bg_window,
};

/* A sequence gap: a "LOST N records" slice (one track: no overlap). */
static void lost_slice(struct pft *p, const struct hmb_gap *g)
{
	uint64_t t0 = g->ts_before, t1 = g->ts_after;
	bool clamped = false;
	char name[48];

	if (!p->lost.id) {
		pfw_seq_init(&p->w, &p->lost, pfw_uuid(&p->w), 0);
		pfw_track(&p->w, p->lost.track, p->fw_root, "lost records",
			  30, 0, false);
	}
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
	pfw_ev_start(&p->w, &p->lost, t0, SLICE_BEGIN);
	hmb_pb_str(&p->w.ev, TE_NAME, name);	/* one per count: literal */
	pfw_ann_u64(&p->w, "count", g->count);
	pfw_ann_u64(&p->w, "first_seq", g->first_seq);
	pfw_ann_u64(&p->w, "last_seq", g->last_seq);
	pfw_ann_u64(&p->w, "ts_before", g->ts_before);
	pfw_ann_u64(&p->w, "ts_after", g->ts_after);
	if (clamped)
		pfw_ann_bool(&p->w, "clamped");
	pfw_ev_put(&p->w);
	pfw_ev_start(&p->w, &p->lost, t1, SLICE_END);
	pfw_ev_put(&p->w);
}

/* ---------------------------------------------------------- host side */

static void hend_push(struct pft *p, uint64_t ts, struct lane *l)
{
	size_t i;

	if (p->nhends == p->caphends) {
		size_t cap = p->caphends ? p->caphends * 2 : 1024;
		struct hend *v = realloc(p->hends, cap * sizeof(*v));

		if (!v) {
			p->w.oom = true;
			return;
		}
		p->hends = v;
		p->caphends = cap;
	}
	i = p->nhends++;
	while (i && p->hends[(i - 1) / 2].ts > ts) {
		p->hends[i] = p->hends[(i - 1) / 2];
		i = (i - 1) / 2;
	}
	p->hends[i].ts = ts;
	p->hends[i].lane = l;
}

/* Write the host command ends at or before @ts (all: UINT64_MAX). */
static void hends_until(struct pft *p, uint64_t ts)
{
	while (p->nhends && p->hends[0].ts <= ts) {
		struct hend top = p->hends[0], v = p->hends[--p->nhends];
		size_t i = 0, n = p->nhends;

		for (;;) {
			size_t c = 2 * i + 1;

			if (c >= n)
				break;
			if (c + 1 < n && p->hends[c + 1].ts < p->hends[c].ts)
				c++;
			if (p->hends[c].ts >= v.ts)
				break;
			p->hends[i] = p->hends[c];
			i = c;
		}
		if (n)
			p->hends[i] = v;
		p->host_open--;
		pfw_ev_start(&p->w, &top.lane->s, top.ts, SLICE_END);
		pfw_counter_val(&p->w, p->host_open);
		pfw_ev_put(&p->w);
		lane_put(top.lane, top.ts);
	}
}

static uint64_t to_fw(const struct hmb_join *j, size_t i, uint64_t host_ns)
{
	double v = hmb_join_unmap(j, i, host_ns);

	return v < 0 ? 0 : (uint64_t)(v + 0.5);
}

/* The flow of host command @id to its fetch record, kept until the
 * record is written. */
static bool flow_add(struct pft *p, const struct hmb_cmd *c, uint32_t id)
{
	struct pf_flow *f;

	if (p->nflows == p->capflows) {
		size_t cap = p->capflows ? p->capflows * 2 : 4096;
		struct pf_flow *v = realloc(p->flows, cap * sizeof(*v));

		if (!v) {
			p->w.oom = true;
			return false;
		}
		p->flows = v;
		p->capflows = cap;
	}
	f = &p->flows[p->nflows++];
	f->seq = c->fw.seq[HMB_PHASE_FETCH];
	f->ts = c->fw.ts[HMB_PHASE_FETCH];
	f->id = id;
	return true;
}

/*
 * corr_run's callback: host command @c as a slice on a lane of its
 * queue, from submit to completion mapped onto the firmware clock, with
 * a flow to its firmware command.  Ends are held until no later submit
 * can precede them (the join hands commands out in submit order within
 * its window), so that each lane's events are in time order and the
 * in-flight count is exact.
 */
static int host_cmd(void *ctx, const struct hmb_join *j, size_t i,
		    const struct hmb_cmd *c)
{
	struct pft *p = ctx;
	const struct hmb_host_cmd *h = &c->h;
	uint32_t id = (uint32_t)++p->n_seen;
	struct lgroup *g;
	struct lane *l;
	uint64_t t0, t1;

	if (h->ctrl != hmb_join_ctrl(j))
		return 0;
	if (!hmb_join_clock(j)->valid) {
		p->n_unplaced++;
		return 0;
	}
	if (!p->host_root) {
		char name[300];

		snprintf(name, sizeof(name), "host nvme%u (%s, times mapped to the firmware clock)",
			 hmb_join_ctrl(j), p->host_path);
		p->host_root = pfw_uuid(&p->w);
		pfw_track(&p->w, p->host_root, 0, name, -1, 2, false);
		p->host_inflight = pfw_uuid(&p->w);
		pfw_track(&p->w, p->host_inflight, p->host_root,
			  "host commands in flight", 0, 0, true);
	}
	t0 = to_fw(j, i, h->submit_ns);
	t1 = to_fw(j, i, h->complete_ns);
	if (t1 < t0)
		t1 = t0;
	hends_until(p, t0);
	g = group_of(p, true, h->qid);
	l = g ? lane_get(p, g, t0) : NULL;
	if (!l)
		return -1;
	if (p->pel) {
		pelh_cmd(p->pel, c);
		pelh_fw_cmd(p->pel, j, i, c);
	}
	p->n_host++;
	p->host_open++;
	pfw_ev_start(&p->w, &l->s, t0, SLICE_BEGIN);
	pfw_ev_name(&p->w, h->opc[0] ? h->opc : "cmd");
	pfw_counter_val(&p->w, p->host_open);
	if ((c->fw.mask & (1u << HMB_PHASE_FETCH)) && flow_add(p, c, id)) {
		hmb_pb_fixed64(&p->w.ev, TE_FLOW_IDS, id);
		p->n_flows_out++;
	}
	pfw_ann_u64(&p->w, "cid", h->cid);
	if (c->match != HMB_M_MATCHED)
		pfw_ann_str(&p->w, "match", hmb_match_name(c->match));
	for (int x = 0; x < HMB_X_COUNT; x++) {
		char key[48];

		/* the firmware's own span is its command slice */
		if (c->x[x] < 0 || x == HMB_X_FW_TOTAL)
			continue;
		snprintf(key, sizeof(key), "%s_ns", hmb_xphase_name(x));
		pfw_ann_i64(&p->w, key, c->x[x]);
	}
	pfw_ev_put(&p->w);
	hend_push(p, t1, l);
	return p->w.ob->err || p->w.oom ? -1 : 0;
}

/* ------------------------------------------------------------- driver */

/*
 * Stream the records through the model: every record (@all), or those
 * before seq @before (the first at or after it held for the next call);
 * then drop the flows of the records written.
 */
static int pft_advance(struct pft *p, uint32_t before, bool all)
{
	struct input *in = p->in;
	struct hmb_error err = { 0 };
	size_t k = 0;
	int rc;

	for (;;) {
		if (!p->held) {
			rc = p->in_end ? 0 : input_next(in, &p->rec, &err);
			if (rc < 0) {
				hmb_ob_flush(p->w.ob);
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
		if (p->w.ob->err || p->w.oom)
			break;
	}
	for (size_t i = 0; i < p->nflows; i++)
		if (!all && (int32_t)(p->flows[i].seq - before) >= 0)
			p->flows[k++] = p->flows[i];
	p->nflows = k;
	return 0;
}

/* hmb_join_src.window_done: the window's flows sorted, records out. */
static int pft_window(void *ctx, uint32_t before, bool all)
{
	struct pft *p = ctx;

	pf_flow_sort(p->flows, p->nflows);
	p->rec_rc = pft_advance(p, before, all);
	return p->rec_rc ? 1 : 0;
}

/* --host: the join streamed into the host slices; 0 or an exit code. */
static int pft_host(struct pft *p, const struct conv *c,
		    const struct hmb_dict *dict, struct corr *corr)
{
	const struct hmb_clock *k;
	int rc;

	p->host_path = c->host;
	rc = corr_run_src(corr, c->in, c->host, dict, c->ctrl, 0, NULL,
			  host_cmd, pft_window, p);
	if (rc == 1 && p->rec_rc)	/* the records failed: said */
		return p->rec_rc;
	if (rc < 0)	/* the output failed: said when it is finished */
		return p->w.oom ? (errorf("out of memory"), EXIT_BADINPUT) : 0;
	if (rc)
		return rc;
	hends_until(p, UINT64_MAX);
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

/* The counts (the JSON's metadata) as args of an instant at the start. */
static void summary(struct pft *p, const struct input *in,
		    const struct hmb_fwmodel *m)
{
	const struct hmb_acct *a = in->acct;
	const struct hmb_fwm_stats *st = &m->st;

	if (!p->meta.id)
		pfw_seq_init(&p->w, &p->meta, p->fw_root, 0);
	if (p->fw_open != 0 || st->eof_open) {
		/* the commands open at the end were closed: none in flight */
		pfw_ev_start(&p->w, &p->meta, p->w.max_ts, COUNTER);
		hmb_pb_varint(&p->w.ev, TE_TRACK, p->fw_inflight);
		hmb_pb_int(&p->w.ev, TE_COUNTER_VALUE, p->fw_open);
		pfw_ev_put(&p->w);
	}
	pfw_ev_start(&p->w, &p->meta, m->have_ts ? m->first_ts : 0, INSTANT);
	pfw_ev_name(&p->w, "trace summary");
	pfw_ann_str(&p->w, "source", in->name);
	pfw_ann_str(&p->w, "clock", "firmware ts_ns (not host time)");
	pfw_ann_u64(&p->w, "records", a->records);
	pfw_ann_u64(&p->w, "lost", a->lost);
	pfw_ann_u64(&p->w, "gaps", a->gaps);
	pfw_ann_u64(&p->w, "duplicates", a->duplicates);
	pfw_ann_u64(&p->w, "wrap_markers", a->wrap_markers);
	pfw_ann_u64(&p->w, "ignored", a->ignored);
	pfw_ann_u64(&p->w, "truncated", a->truncated);
	pfw_ann_u64(&p->w, "commands", st->cmds);
	pfw_ann_u64(&p->w, "commands_complete", st->complete);
	pfw_ann_u64(&p->w, "commands_reused", st->reused);
	pfw_ann_u64(&p->w, "commands_open_at_end", st->eof_open);
	pfw_ann_u64(&p->w, "commands_evicted", st->evicted);
	pfw_ann_u64(&p->w, "commands_without_fetch", st->no_fetch);
	pfw_ann_u64(&p->w, "duplicate_phase_events", st->dup_phase);
	pfw_ann_u64(&p->w, "unknown_opcode", st->unknown_opcode);
	pfw_ann_u64(&p->w, "short_payload", st->short_payload);
	pfw_ann_u64(&p->w, "backwards_clamped", st->backwards);
	pfw_ann_u64(&p->w, "bg_windows", st->bg_windows);
	pfw_ann_u64(&p->w, "lost_slices", p->n_lost_slices);
	pfw_ann_u64(&p->w, "lost_slices_clamped", p->lost_clamped);
	if (p->corr) {
		const struct hmb_clock *k = hmb_join_clock(p->corr->j);

		pfw_ann_u64(&p->w, "host_commands", p->n_host);
		pfw_ann_u64(&p->w, "host_flows", p->n_flows_out);
		pfw_ann_u64(&p->w, "host_flows_ended", p->n_flows_in);
		pfw_ann_i64(&p->w, "clock_offset_ns", (int64_t)k->off_ns);
		pfw_ann_i64(&p->w, "clock_offset_err_ns", (int64_t)k->off_err_ns);
		pfw_ann_i64(&p->w, "clock_ref_fw_ns", (int64_t)k->ref);
		pfw_ann_i64(&p->w, "clock_drift_ppb", (int64_t)(k->drift * 1e9));
	}
	if (p->pel) {
		pfw_ann_u64(&p->w, "pel_events", p->pel->n);
		pfw_ann_u64(&p->w, "pel_placed", p->pel->nplaced);
		pfw_ann_u64(&p->w, "pel_on_timeline", p->pel->n_fw);
	}
	pfw_ev_put(&p->w);
}

static void pft_free(struct pft *p)
{
	pfw_free(&p->w);
	for (unsigned int i = 0; i < 256; i++) {
		if (p->cpu[i])
			pfw_seq_free(p->cpu[i]);
		free(p->cpu[i]);
	}
	for (unsigned int g = 0; g < p->nbg; g++)
		pfw_seq_free(&p->bg[g].s);
	pfw_seq_free(&p->meta);
	pfw_seq_free(&p->lost);
	pfw_seq_free(&p->pels);
	groups_free(p->fwg, p->nfwg);
	groups_free(p->hostg, p->nhostg);
	free(p->cmap);
	free(p->flows);
	free(p->hends);
}

static int write_pftrace(struct input *in, struct hmb_outbuf *ob,
			 const struct hmb_dict *dict, const struct conv *c)
{
	struct hmb_fwmodel m;
	struct pft *p = calloc(1, sizeof(*p));
	struct corr corr;
	struct pelh pel;
	char name[300];
	int rc = 0;

	if (c->pel && pelh_load(&pel, c->pel)) {
		free(p);
		return EXIT_BADINPUT;
	}

	if (!p || pfw_init(&p->w, ob) ||
	    !(p->cmap = calloc(CMAP_SIZE, sizeof(*p->cmap))) ||
	    hmb_fwm_init(&m, dict, &pft_ops, p)) {
		if (p)
			pft_free(p);
		free(p);
		if (c->pel)
			pelh_free(&pel);
		errorf("out of memory");
		return EXIT_BADINPUT;
	}
	if (c->pel)
		p->pel = &pel;
	p->dict = dict;
	p->in = in;
	p->m = &m;
	snprintf(name, sizeof(name), "SSD firmware (%s)", in->name);
	p->fw_root = pfw_uuid(&p->w);
	pfw_track(&p->w, p->fw_root, 0, name, -1, 1, false);
	p->fw_inflight = pfw_uuid(&p->w);
	pfw_track(&p->w, p->fw_inflight, p->fw_root,
		  "fw commands in flight", 0, 0, true);
	if (c->host)
		rc = pft_host(p, c, dict, &corr);
	if (!rc)	/* what the join left (all of it without --host) */
		rc = pft_advance(p, 0, true);
	hmb_fwm_finish(&m);
	if (!rc && p->pel && pelh_fw_end(p->pel))
		p->w.oom = true;
	if (!rc && p->pel && !p->w.oom)
		pftrace_pel(&p->w, &p->pels, p->pel);
	if (!rc)
		summary(p, in, &m);
	if (c->host && !rc)
		corr_free(&corr);
	if (!rc && p->w.oom) {
		errorf("out of memory");
		rc = EXIT_BADINPUT;
	}
	pft_free(p);
	free(p);
	if (c->pel)
		pelh_free(&pel);
	if (rc)
		return rc;
	hmb_ob_flush(ob);
	if (ob->err) {
		errorf("%s: write error: %s", ob->name, strerror(ob->err));
		return EXIT_BADINPUT;
	}
	return 0;
}

/* convert --to perfetto (convert.c's table). */
int pftrace_convert(const struct conv *c, const struct conv_format *f)
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
			rc = ob_finish(&ob, write_pftrace(&in, &ob, dict, c));
		input_close(&in);
	}
	hmb_dict_free(dict);
	return rc;
}
