// SPDX-License-Identifier: Apache-2.0
/*
 * pelhost: a saved Persistent Event Log on the join's timeline (pelhost.h).
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "analyze.h"
#include "hmbtrace_cmd.h"
#include "hmbtrace_join.h"
#include "pelhost.h"

static int by_mono(const void *a, const void *b, void *arg)
{
	const struct pelh_ev *ev = arg;
	uint64_t x = ev[*(const size_t *)a].mono_ns;
	uint64_t y = ev[*(const size_t *)b].mono_ns;

	return x < y ? -1 : x > y;
}

int pelh_load(struct pelh *p, const char *path)
{
	struct pel_iter it;
	struct pel_event ev;
	struct pel_err e;
	size_t cap = 0;
	int r;

	memset(p, 0, sizeof(*p));
	p->path = path;
	if (pel_slurp(path, path, &p->buf, &p->len))
		return EXIT_BADINPUT;
	if (pel_header(p->buf, p->len, &p->h, &e)) {
		errorf("%s: byte %zu: %s", path, e.off, e.msg);
		goto fail;
	}
	r = pel_clock_load(path, &p->clk, &e);
	if (r < 0) {
		errorf("line %zu of %s", e.off, e.msg);
		goto fail;
	}
	p->have_clock = r == 0;
	pel_hostmap_init(&p->map, p->have_clock ? &p->clk : NULL, p->buf,
			 &p->h);
	pel_iter_init(&it, p->buf, &p->h);
	while ((r = pel_next(&it, &ev, &e)) == 1) {
		struct pelh_ev *x;

		if (p->n == cap) {
			size_t nc = cap ? 2 * cap : 64;
			void *nv = realloc(p->ev, nc * sizeof(*p->ev));

			if (!nv) {
				errorf("%s: out of memory", path);
				goto fail;
			}
			p->ev = nv;
			cap = nc;
		}
		x = &p->ev[p->n++];
		memset(x, 0, sizeof(*x));
		x->index = ev.index;
		x->type = ev.type;
		x->name = pel_type_name(ev.type);
		x->ts = ev.ts;
		x->why = pel_place(&p->map, &ev, &x->mono_ns, &x->bound_ns);
		p->unplaced[x->why]++;
		pel_fields_text(&ev, x->fields, sizeof(x->fields));
	}
	if (r < 0) {
		/* the events before the fault are kept, as `pel` prints them */
		errorf("%s: byte %zu: %s (the %zu events before it are used)",
		       path, e.off, e.msg, p->n);
		p->walk_err = true;
	}
	p->order = malloc((p->n ? p->n : 1) * sizeof(*p->order));
	if (!p->order) {
		errorf("%s: out of memory", path);
		goto fail;
	}
	for (size_t i = 0; i < p->n; i++) {
		if (p->ev[i].why != PEL_PLACED)
			continue;
		p->order[p->nplaced++] = i;
		if (p->ev[i].bound_ns > p->max_bound)
			p->max_bound = p->ev[i].bound_ns;
	}
	qsort_r(p->order, p->nplaced, sizeof(*p->order), by_mono, p->ev);
	return 0;
fail:
	pelh_free(p);
	return EXIT_BADINPUT;
}

void pelh_fw_cmd(struct pelh *p, const struct hmb_join *j, size_t i,
		 const struct hmb_cmd *c)
{
	uint64_t s = c->h.submit_ns;
	double d = hmb_join_unmap(j, i, s) - (double)s;

	while (p->fw_next < p->nplaced) {
		struct pelh_ev *x = &p->ev[p->order[p->fw_next]];
		double fw = (double)x->mono_ns + d;

		if (x->mono_ns > s)
			break;
		x->on_fw = fw >= 0;
		x->fw_ns = x->on_fw ? (uint64_t)(fw + 0.5) : 0;
		p->fw_next++;
	}
	p->fw_delta = d;
	p->fw_have = true;
}

static int by_fw(const void *a, const void *b, void *arg)
{
	const struct pelh_ev *ev = arg;
	uint64_t x = ev[*(const size_t *)a].fw_ns;
	uint64_t y = ev[*(const size_t *)b].fw_ns;

	return x < y ? -1 : x > y;
}

int pelh_fw_end(struct pelh *p)
{
	for (; p->fw_have && p->fw_next < p->nplaced; p->fw_next++) {
		struct pelh_ev *x = &p->ev[p->order[p->fw_next]];
		double fw = (double)x->mono_ns + p->fw_delta;

		x->on_fw = fw >= 0;
		x->fw_ns = x->on_fw ? (uint64_t)(fw + 0.5) : 0;
	}
	p->fw_order = malloc((p->n ? p->n : 1) * sizeof(*p->fw_order));
	if (!p->fw_order)
		return -1;
	p->n_fw = 0;
	for (size_t i = 0; i < p->n; i++)
		if (p->ev[i].on_fw)
			p->fw_order[p->n_fw++] = i;
	qsort_r(p->fw_order, p->n_fw, sizeof(*p->fw_order), by_fw, p->ev);
	return 0;
}

void pelh_free(struct pelh *p)
{
	free(p->fw_order);
	free(p->buf);
	free(p->ev);
	free(p->order);
	memset(p, 0, sizeof(*p));
}

static void ref_of(struct pelh_cmd *r, const struct hmb_cmd *c)
{
	r->submit_ns = c->h.submit_ns;
	r->complete_ns = c->h.complete_ns;
	r->qid = c->h.qid;
	r->cid = c->h.cid;
	memcpy(r->opc, c->h.opc, sizeof(r->opc));
	r->opc[sizeof(r->opc) - 1] = 0;
}

void pelh_cmd(struct pelh *p, const struct hmb_cmd *c)
{
	uint64_t s = c->h.submit_ns;
	uint64_t e = c->h.complete_ns ? c->h.complete_ns : s;
	uint64_t lo = s > p->max_bound ? s - p->max_bound : 0;
	size_t a = 0, b = p->nplaced;

	/* the first placed event at or after lo: no earlier one can reach */
	while (a < b) {
		size_t m = a + (b - a) / 2;

		if (p->ev[p->order[m]].mono_ns < lo)
			a = m + 1;
		else
			b = m;
	}
	for (; a < p->nplaced; a++) {
		struct pelh_ev *x = &p->ev[p->order[a]];

		if (x->mono_ns > e + p->max_bound)
			break;
		if (x->mono_ns + x->bound_ns < s ||
		    (x->mono_ns > x->bound_ns ? x->mono_ns - x->bound_ns : 0) > e)
			continue;
		x->n_cmds++;
		if (s <= x->mono_ns && x->mono_ns <= e)
			x->n_in_flight++;
		if (x->nlist < PELH_LIST_MAX)
			ref_of(&x->list[x->nlist++], c);
		if (x->n_cmds == 1 || e - s > x->slowest.complete_ns -
					       x->slowest.submit_ns)
			ref_of(&x->slowest, c);
	}
}

static const char *ev_name(const struct pelh_ev *x, char *buf, size_t n)
{
	if (x->name)
		return x->name;
	snprintf(buf, n, "type_%02x", x->type);
	return buf;
}

void pelh_print(FILE *f, const struct pelh *p)
{
	char nb[16], esc[4 * sizeof(p->ev->fields) + 1];

	fprintf(f, "\npersistent event log %s: %zu events, %zu placed on the host clock",
		p->path, p->n, p->nplaced);
	if (p->nplaced < p->n) {
		const char *sep = " (";

		fprintf(f, ", %zu not placed", p->n - p->nplaced);
		for (int r = 1; r < PEL_UNPLACED_COUNT; r++) {
			if (!p->unplaced[r])
				continue;
			fprintf(f, "%s%" PRIu64 " %s", sep, p->unplaced[r],
				pel_unplaced_name((enum pel_unplaced)r));
			sep = ", ";
		}
		fprintf(f, ")");
	}
	fprintf(f, "\n");
	if (!p->have_clock)
		fprintf(f, "  no clock reading (%s.clock, written by pel --device --save): no event has a host time\n",
			p->path);
	for (size_t k = 0; k < p->nplaced; k++) {
		const struct pelh_ev *x = &p->ev[p->order[k]];

		fprintf(f, "  host %" PRIu64 ".%06" PRIu64 " s ±%.3f ms  #%u %s",
			x->mono_ns / 1000000000u, x->mono_ns % 1000000000u / 1000,
			(double)x->bound_ns / 1e6, x->index,
			ev_name(x, nb, sizeof(nb)));
		if (x->fields[0])
			fprintf(f, " %s", hmb_text_esc(esc, sizeof(esc),
						       x->fields));
		fprintf(f, ": %" PRIu64 " commands overlapped, %" PRIu64 " in flight",
			x->n_cmds, x->n_in_flight);
		if (x->n_cmds)
			fprintf(f, "; slowest q%u cid 0x%04x %s %.3f us",
				x->slowest.qid, x->slowest.cid, x->slowest.opc,
				x->slowest.complete_ns ?
				(double)(x->slowest.complete_ns -
					 x->slowest.submit_ns) / 1e3 : 0.0);
		fprintf(f, "\n");
	}
	for (size_t i = 0; i < p->n; i++) {
		const struct pelh_ev *x = &p->ev[i];

		if (x->why == PEL_PLACED)
			continue;
		fprintf(f, "  not placed (%s): #%u %s controller %" PRIu64 " ms origin %u",
			pel_unplaced_name(x->why), x->index,
			ev_name(x, nb, sizeof(nb)), x->ts.ms, x->ts.origin);
		if (x->fields[0])
			fprintf(f, " %s", hmb_text_esc(esc, sizeof(esc),
						       x->fields));
		fprintf(f, "\n");
	}
}

static void ev_json(struct hmb_json *j, const struct pelh *p,
		    const struct pelh_ev *x)
{
	hmb_json_obj(j);
	hmb_json_kv_str(j, "type", "pel");
	hmb_json_kv_str(j, "file", p->path);
	hmb_json_kv_u64(j, "index", x->index);
	hmb_json_kv_u64(j, "event_type", x->type);
	hmb_json_key(j, "event");
	if (x->name)
		hmb_json_str(j, x->name);
	else
		hmb_json_null(j);
	hmb_json_kv_u64(j, "ctrl_timestamp_ms", x->ts.ms);
	hmb_json_kv_u64(j, "ctrl_timestamp_origin", x->ts.origin);
	hmb_json_kv_str(j, "fields", x->fields);
	hmb_json_kv_bool(j, "placed", x->why == PEL_PLACED);
	hmb_json_kv_str(j, "place", pel_unplaced_name(x->why));
	hmb_json_key(j, "host_ns");
	if (x->why == PEL_PLACED)
		hmb_json_u64(j, x->mono_ns);
	else
		hmb_json_null(j);
	hmb_json_kv_u64(j, "bound_ns", x->bound_ns);
	hmb_json_kv_u64(j, "commands_overlapped", x->n_cmds);
	hmb_json_kv_u64(j, "commands_in_flight", x->n_in_flight);
	hmb_json_key(j, "commands");
	hmb_json_arr(j);
	for (uint32_t k = 0; k < x->nlist; k++) {
		hmb_json_obj(j);
		hmb_json_kv_u64(j, "qid", x->list[k].qid);
		hmb_json_kv_u64(j, "cid", x->list[k].cid);
		hmb_json_kv_str(j, "opc", x->list[k].opc);
		hmb_json_kv_u64(j, "submit_ns", x->list[k].submit_ns);
		hmb_json_kv_u64(j, "complete_ns", x->list[k].complete_ns);
		hmb_json_end(j);
	}
	hmb_json_end_arr(j);
	hmb_json_end(j);
	hmb_json_nl(j);
}

void pelh_json_lines(struct hmb_json *j, const struct pelh *p)
{
	for (size_t k = 0; k < p->nplaced; k++)
		ev_json(j, p, &p->ev[p->order[k]]);
	for (size_t i = 0; i < p->n; i++)
		if (p->ev[i].why != PEL_PLACED)
			ev_json(j, p, &p->ev[i]);
}

void pelh_json_totals(struct hmb_json *j, const struct pelh *p)
{
	hmb_json_key(j, "pel");
	hmb_json_obj(j);
	hmb_json_kv_str(j, "file", p->path);
	hmb_json_kv_bool(j, "clock", p->have_clock);
	hmb_json_kv_u64(j, "events", p->n);
	hmb_json_kv_u64(j, "placed", p->nplaced);
	hmb_json_key(j, "not_placed");
	hmb_json_obj(j);
	for (int r = 1; r < PEL_UNPLACED_COUNT; r++) {
		hmb_json_key_str(j, pel_unplaced_name((enum pel_unplaced)r));
		hmb_json_u64(j, p->unplaced[r]);
	}
	hmb_json_end(j);
	if (p->map.valid) {
		hmb_json_kv_u64(j, "clock_ctrl_ms", p->map.ctrl_ms);
		hmb_json_kv_u64(j, "clock_monotonic_ns", p->map.mono_ns);
		hmb_json_kv_u64(j, "clock_err_ns", p->map.err_ns);
		hmb_json_kv_u64(j, "drift_ppm", PEL_DRIFT_PPM);
	}
	hmb_json_end(j);
}
