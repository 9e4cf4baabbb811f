// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * t_pel - the Persistent Event Log decoder (pel.h) on logs written from the
 * specification's layout (pelbuild.h): every event type's fields, zero
 * events, vendor information ahead of the data, and the refusals, each at
 * the byte it names: truncated logs, lengths past the end, headers and
 * event data too short; then every truncation and every single-byte
 * corruption of a full log decoded without a read out of bounds (the ASan
 * build); and the first event on the controller's present clock.
 */
#include <stdio.h>
#include <string.h>

#include "pel.h"
#include "pelbuild.h"
#include "../../lib/tests/tap.h"

struct got {
	unsigned int n;
	struct {
		char name[48];
		int idx;
		enum pel_kind kind;
		uint64_t u, hi;
		char s[64];
		size_t len;
	} f[128];
};

static void collect(const struct pel_field *f, void *arg)
{
	struct got *g = arg;

	if (g->n >= 128)
		return;
	snprintf(g->f[g->n].name, sizeof(g->f[0].name), "%s", f->name);
	g->f[g->n].idx = f->idx;
	g->f[g->n].kind = f->kind;
	g->f[g->n].u = f->u;
	g->f[g->n].hi = f->hi;
	g->f[g->n].len = f->len;
	if (f->kind == PF_STR || f->kind == PF_HEX) {
		size_t l = f->len < 63 ? f->len : 63;

		memcpy(g->f[g->n].s, f->p, l);
		g->f[g->n].s[l] = 0;
	}
	g->n++;
}

static int find(const struct got *g, const char *name, int idx)
{
	for (unsigned int i = 0; i < g->n; i++)
		if (!strcmp(g->f[i].name, name) && g->f[i].idx == idx)
			return (int)i;
	return -1;
}

static uint64_t fu(const struct got *g, const char *name, int idx)
{
	int i = find(g, name, idx);

	return i < 0 ? 0xbadbadbadULL : g->f[i].u;
}

static const char *fs(const struct got *g, const char *name, int idx)
{
	int i = find(g, name, idx);

	return i < 0 ? "(none)" : g->f[i].s;
}

/* Decode event @want of @l's log: its fields into @g; the rc of fields. */
static int event_of(const struct pb *l, uint32_t want, struct pel_event *ev,
		    struct got *g, struct pel_err *e)
{
	struct pel_header h;
	struct pel_iter it;
	int r;

	memset(g, 0, sizeof(*g));
	if (pel_header(l->b, l->len, &h, e))
		return -2;
	pel_iter_init(&it, l->b, &h);
	while ((r = pel_next(&it, ev, e)) == 1)
		if (ev->index == want)
			return pel_fields(ev, collect, g, e);
	return -3;
}

static void t_header(void)
{
	struct pb l;
	struct pel_header h;
	struct pel_err e;
	struct pel_iter it;
	struct pel_event ev;

	pb_init(&l);
	pb_finish(&l);
	ok(pel_header(l.b, l.len, &h, &e) == 0, "zero events: header decodes");
	ok(h.lid == 0x0d && h.tnev == 0 && h.tll == 512 && h.rv == 1 &&
	   h.lhl == 492 && h.first == 512 && h.end == 512,
	   "header: lid, tnev 0, tll 512, revision 1, lhl 492");
	ok(h.ts.ms == 1700000000123ULL && !h.ts.synch && h.ts.origin == 1,
	   "header timestamp: ms, synch clear, origin 1");
	ok(h.poh_lo == 4321 && h.poh_hi == 0 && h.pcc == 77,
	   "power on hours 4321, power cycles 77");
	ok(h.vid == 0x1b36 && h.ssvid == 0x1af4, "vid, ssvid");
	ok(!strcmp(h.sn, "SN-PEL-0001") && !strcmp(h.mn, "HMB Trace Model PEL")
	   && !strcmp(h.subnqn, "nqn.2019-08.org.qemu:pel"),
	   "serial, model, subsystem NQN without padding");
	ok(h.gen == 5 && (h.rci & 0xffff) == 3 && ((h.rci >> 16) & 3) == 1 &&
	   ((h.rci >> 18) & 1), "generation 5, reporting context 3/1/exists");
	ok(h.seb[0] == 0xfe && (h.seb[0xde / 8] >> (0xde % 8) & 1),
	   "supported events bitmap");
	pel_iter_init(&it, l.b, &h);
	ok(pel_next(&it, &ev, &e) == 0, "zero events: the walk ends at once");

	ok(pel_header(l.b, 511, &h, &e) == -1 && e.off == 511 &&
	   strstr(e.msg, "511 bytes"), "511 bytes: refused at byte 511 (%s)",
	   e.msg);
	ok(pel_header(l.b, 0, &h, &e) == -1 && e.off == 0, "empty: refused");
	l.b[0] = 0x02;
	ok(pel_header(l.b, l.len, &h, &e) == -1 && e.off == 0 &&
	   strstr(e.msg, "0x02"), "log identifier 02h: refused at byte 0");
	l.b[0] = 0x0d;
	pb_put(l.b + 18, 400, 2);
	ok(pel_header(l.b, l.len, &h, &e) == -1 && e.off == 18 &&
	   strstr(e.msg, "byte 420"), "LHL 400: refused at byte 18 (%s)",
	   e.msg);
	pb_put(l.b + 18, 492, 2);
	pb_put(l.b + 8, 100, 8);
	ok(pel_header(l.b, l.len, &h, &e) == -1 && e.off == 8,
	   "TLL 100 < header: refused at byte 8 (%s)", e.msg);
	/* a longer header (LHL 1004): the first event at byte 1024 */
	pb_init(&l);
	pb_put(l.b + 18, 1004, 2);
	l.len = 1024;
	pb_event(&l, 0x0d, PB_TS(1), 0, 2)[0] = 9;
	pb_finish(&l);
	ok(pel_header(l.b, l.len, &h, &e) == 0 && h.first == 1024,
	   "LHL 1004: first event at byte 1024");
	pel_iter_init(&it, l.b, &h);
	ok(pel_next(&it, &ev, &e) == 1 && ev.off == 1024 && ev.data[0] == 9,
	   "the event after a longer header");
	/* the file ends inside that longer header */
	ok(pel_header(l.b, 800, &h, &e) == 0 && h.end == 800,
	   "LHL 1004, 800 bytes: the header decodes");
	pel_iter_init(&it, l.b, &h);
	ok(pel_next(&it, &ev, &e) == -1 && e.off == 800 &&
	   strstr(e.msg, "starts at byte 1024"),
	   "the first event is refused at the end, byte 800 (%s)", e.msg);
}

static void t_types(void)
{
	struct pb l;
	struct pel_event ev;
	struct pel_err e;
	struct got g;

	pb_all(&l);
	ok(l.n == 14, "the full log has 14 events (%u bytes)", (unsigned)l.len);

	ok(event_of(&l, 0, &ev, &g, &e) == 0 && ev.type == 0x01 &&
	   ev.len == 512 && ev.off == 512 && ev.ehl == 21 && ev.cntlid == 1,
	   "01h SMART: 512 bytes at byte 512");
	ok(ev.ts.ms == PB_TS0 + 1000 && ev.ts.origin == 1 && !ev.ts.synch,
	   "01h: event timestamp, 48-bit ms, origin 1");
	ok(fu(&g, "critical_warning", -1) == 2 &&
	   fu(&g, "temperature_k", -1) == 318 &&
	   fu(&g, "avail_spare", -1) == 100 && fu(&g, "percent_used", -1) == 3,
	   "01h: warning, temperature, spare, used");
	{
		int i = find(&g, "data_units_read", -1);

		ok(i >= 0 && g.f[i].kind == PF_U128 && g.f[i].u == 5 &&
		   g.f[i].hi == 1, "01h: data units read 2^64+5 (128 bits)");
	}
	ok(fu(&g, "power_on_hours", -1) == 4321 &&
	   fu(&g, "unsafe_shutdowns", -1) == 4 &&
	   fu(&g, "num_err_log_entries", -1) == 9 &&
	   fu(&g, "temp_sensor_2", -1) == 305 &&
	   fu(&g, "thm_temp2_total_time", -1) == 20,
	   "01h: counters, sensors, thermal management times");

	ok(event_of(&l, 1, &ev, &g, &e) == 0 && ev.type == 0x02 &&
	   !strcmp(fs(&g, "old_fw_rev", -1), "1.0.0") &&
	   !strcmp(fs(&g, "new_fw_rev", -1), "1.1.0") &&
	   fu(&g, "fw_commit_action", -1) == 3 && fu(&g, "fw_slot", -1) == 2 &&
	   fu(&g, "vu_fw_commit_rc", -1) == 0x1234, "02h firmware commit");

	ok(event_of(&l, 2, &ev, &g, &e) == 0 && ev.type == 0x03 &&
	   fu(&g, "prev_timestamp_ms", -1) == PB_TS0 - 5000 &&
	   fu(&g, "prev_timestamp_synch", -1) == 1 &&
	   fu(&g, "prev_timestamp_origin", -1) == 0 &&
	   fu(&g, "ms_since_reset", -1) == 98765, "03h timestamp change");

	ok(event_of(&l, 3, &ev, &g, &e) == 0 && ev.type == 0x04 &&
	   !strcmp(fs(&g, "fw_rev", -1), "1.1.0") &&
	   fu(&g, "ctrl_id", 0) == 1 && fu(&g, "ctrl_id", 1) == 2 &&
	   fu(&g, "fw_act", 1) == 1 && fu(&g, "ctrl_power_cycle", 1) == 78 &&
	   fu(&g, "power_on_ms", 1) == 7200000 &&
	   fu(&g, "ctrl_timestamp_ms", 0) == PB_TS0 + 3500 &&
	   fu(&g, "ctrl_timestamp_origin", 1) == 1 && find(&g, "ctrl_id", 2) < 0,
	   "04h power-on/reset: firmware, two reset entries");

	ok(event_of(&l, 4, &ev, &g, &e) == 0 && ev.type == 0x05 &&
	   fu(&g, "hw_err_code", -1) == 7 &&
	   g.f[find(&g, "additional_info", -1)].len == 4,
	   "05h hardware error: code, 4 bytes of additional information");

	ok(event_of(&l, 5, &ev, &g, &e) == 0 && ev.type == 0x06 &&
	   fu(&g, "nsze", -1) == 2097152 && fu(&g, "nscap", -1) == 2097152 &&
	   fu(&g, "flbas", -1) == 0x10 && fu(&g, "ana_grp_id", -1) == 1 &&
	   fu(&g, "nvmset_id", -1) == 1 && fu(&g, "nsid", -1) == 2,
	   "06h change namespace");
	ok(event_of(&l, 6, &ev, &g, &e) == 0 && ev.type == 0x07 &&
	   fu(&g, "nsid", -1) == 1 && fu(&g, "fna", -1) == 1 &&
	   fu(&g, "format_nvm_cdw10", -1) == 0x201, "07h format start");
	ok(event_of(&l, 7, &ev, &g, &e) == 0 && ev.type == 0x08 &&
	   fu(&g, "format_nvm_status", -1) == 1 &&
	   fu(&g, "status_field", -1) == 0, "08h format complete");
	ok(event_of(&l, 8, &ev, &g, &e) == 0 && ev.type == 0x09 &&
	   fu(&g, "sanicap", -1) == 0x60000007 &&
	   fu(&g, "sani_cdw10", -1) == 2, "09h sanitize start");
	ok(event_of(&l, 9, &ev, &g, &e) == 0 && ev.type == 0x0a &&
	   fu(&g, "sani_prog", -1) == 0xffff &&
	   fu(&g, "sani_status", -1) == 0x0101, "0Ah sanitize complete");
	ok(event_of(&l, 10, &ev, &g, &e) == 0 && ev.type == 0x0b &&
	   fu(&g, "logged_dwords", -1) == 2 && fu(&g, "fid", -1) == 0x0d &&
	   fu(&g, "cdw11", -1) == 1 && fu(&g, "cqe_dw0", -1) == 0 &&
	   find(&g, "cdw12", -1) < 0 &&
	   !memcmp(fs(&g, "mem", -1), "\x01\x02\x03\x04", 4),
	   "0Bh set feature: FID 0Dh, CDW11, completion DW0, 4 memory bytes");
	ok(event_of(&l, 11, &ev, &g, &e) == 0 && ev.type == 0x0c &&
	   fu(&g, "telemetry_lid", -1) == 7 &&
	   fu(&g, "data_area_3_last_block", -1) == 3 &&
	   fu(&g, "ctrl_data_gen", -1) == 4, "0Ch telemetry log created");
	ok(event_of(&l, 12, &ev, &g, &e) == 0 && ev.type == 0x0d &&
	   fu(&g, "over_temp", -1) == 5 && fu(&g, "threshold", -1) == 80,
	   "0Dh thermal excursion");
	ok(event_of(&l, 13, &ev, &g, &e) == 0 && ev.type == 0xde &&
	   fu(&g, "vs_event_code", 0) == 0x101 &&
	   fu(&g, "vs_data_type", 0) == 3 &&
	   fu(&g, "vs_event_code", 1) == 0x202 &&
	   !strcmp(fs(&g, "vs_data", 1), "abc") && find(&g, "vs_data", 2) < 0,
	   "DEh vendor specific: two descriptors");
	ok(event_of(&l, 14, &ev, &g, &e) == -3, "no 15th event");
	for (unsigned int t = 0; t < 256; t++)
		if (pel_type_min((uint8_t)t) &&
		    (!pel_type_name((uint8_t)t) || t > 0x0d))
			ok(0, "type %02xh has a size but no name", t);
	ok(pel_type_name(0x0e) == NULL && pel_type_name(0xde),
	   "type names: 0Eh unknown, DEh known");
}

static void t_odd_events(void)
{
	struct pb l;
	struct pel_event ev;
	struct pel_err e;
	struct got g;
	uint8_t *d;

	/* vendor information comes before the event data (EL covers both) */
	pb_init(&l);
	d = pb_event(&l, 0x0d, PB_TS(1), 5, 2);
	d[0] = 7;
	d[1] = 85;
	pb_finish(&l);
	ok(event_of(&l, 0, &ev, &g, &e) == 0 && ev.vsil == 5 && ev.el == 7 &&
	   ev.vsi == l.b + 536 && ev.len == 2 &&
	   fu(&g, "over_temp", -1) == 7 && fu(&g, "threshold", -1) == 85,
	   "VSIL 5: data after the vendor information");

	/* a longer event header (EHL 25): data after its 28 bytes */
	pb_init(&l);
	d = pb_event(&l, 0x0d, PB_TS(1), 0, 2);
	memmove(d + 4, d, 2);
	l.b[512 + 2] = 25;
	l.len += 4;
	d[4] = 6;
	pb_finish(&l);
	ok(event_of(&l, 0, &ev, &g, &e) == 0 && ev.data == l.b + 540 &&
	   fu(&g, "over_temp", -1) == 6, "EHL 25: the data after 28 bytes");

	/* an unknown type: its data as bytes */
	pb_init(&l);
	memcpy(pb_event(&l, 0x42, PB_TS(1), 0, 3), "xyz", 3);
	pb_finish(&l);
	ok(event_of(&l, 0, &ev, &g, &e) == 0 && g.n == 1 &&
	   !strcmp(fs(&g, "data", -1), "xyz"), "type 42h: 3 bytes of data");

	/* data shorter than the type's layout: the field error, at its byte */
	pb_init(&l);
	pb_event(&l, 0x02, PB_TS(1), 0, 19);
	pb_event(&l, 0x0d, PB_TS(2), 0, 2);
	pb_finish(&l);
	ok(event_of(&l, 0, &ev, &g, &e) == -1 && e.off == 536 && g.n == 0 &&
	   strstr(e.msg, "19 bytes") && strstr(e.msg, "has 20"),
	   "02h with 19 bytes of data: refused at byte 536 (%s)", e.msg);
	ok(event_of(&l, 1, &ev, &g, &e) == 0 && ev.off == 555,
	   "the walk goes on past it: the next event at byte 555");

	/* a reset information list that is not whole entries */
	pb_init(&l);
	pb_event(&l, 0x04, PB_TS(1), 0, 8 + 36 + 10);
	pb_finish(&l);
	ok(event_of(&l, 0, &ev, &g, &e) == -1 && e.off == 536 + 44 &&
	   find(&g, "ctrl_id", 0) >= 0 && find(&g, "ctrl_id", 1) < 0,
	   "04h list of 46 bytes: one entry, refused at byte 580 (%s)", e.msg);

	/* set feature: more dwords than the command has; past the data */
	pb_init(&l);
	pb_put(pb_event(&l, 0x0b, PB_TS(1), 0, 4 + 28), 7, 4);
	pb_put(pb_event(&l, 0x0b, PB_TS(2), 0, 8), 1 | 200u << 16, 4);
	pb_finish(&l);
	ok(event_of(&l, 0, &ev, &g, &e) == -1 && e.off == 536 &&
	   strstr(e.msg, "7 command dwords"), "0Bh 7 dwords: refused (%s)",
	   e.msg);
	ok(event_of(&l, 1, &ev, &g, &e) == -1 && strstr(e.msg, "208 bytes"),
	   "0Bh memory buffer of 200 bytes in 8: refused (%s)", e.msg);

	/* vendor descriptors running past the data */
	pb_init(&l);
	d = pb_event(&l, 0xde, PB_TS(1), 0, 6 + 2 + 4);
	pb_put(d + 4, 2, 2);
	pb_put(d + 8 + 4, 9, 2);
	pb_finish(&l);
	ok(event_of(&l, 0, &ev, &g, &e) == -1 && e.off == 536 + 8 &&
	   find(&g, "vs_event_code", 0) >= 0,
	   "DEh second descriptor cut short: refused at byte 544 (%s)", e.msg);
	l.b[512 + 22] += 2;
	l.len += 2;
	pb_finish(&l);
	ok(event_of(&l, 0, &ev, &g, &e) == -1 && e.off == 536 + 8 + 4,
	   "DEh descriptor length past the data: refused at byte 548 (%s)",
	   e.msg);
}

static void t_refusals(void)
{
	struct pb l, m;
	struct pel_header h;
	struct pel_iter it;
	struct pel_event ev;
	struct pel_err e;
	int r;

	pb_all(&l);
	/* the file cut inside the 8th event's header (at byte 1378) */
	ok(pel_header(l.b, 1390, &h, &e) == 0 && h.end == 1390,
	   "a log cut at byte 1390: the header decodes, %u bytes to read",
	   (unsigned)h.end);
	pel_iter_init(&it, l.b, &h);
	while ((r = pel_next(&it, &ev, &e)) == 1)
		;
	ok(r == -1 && it.n == 7 && e.off == 1378 &&
	   strstr(e.msg, "event 7 ") && strstr(e.msg, "12 left") &&
	   strstr(e.msg, "truncated"),
	   "7 events, then refused at byte 1378 (%s)", e.msg);
	/* cut inside the first event's data */
	pel_header(l.b, 600, &h, &e);
	pel_iter_init(&it, l.b, &h);
	ok(pel_next(&it, &ev, &e) == -1 && e.off == 534 &&
	   strstr(e.msg, "536 bytes") && strstr(e.msg, "byte 600"),
	   "a log cut at byte 600: the first event refused at byte 534 (%s)",
	   e.msg);

	/* TNEV says more than there are */
	m = l;
	pb_put(m.b + 4, 15, 4);
	pel_header(m.b, m.len, &h, &e);
	pel_iter_init(&it, m.b, &h);
	while ((r = pel_next(&it, &ev, &e)) == 1)
		;
	ok(r == -1 && it.n == 14 && e.off == m.len &&
	   strstr(e.msg, "TNEV too high"),
	   "TNEV 15 of 14: refused at the log's end, byte %zu (%s)", m.len,
	   e.msg);

	/* an event length past the end of the log */
	m = l;
	pb_put(m.b + 512 + 22, 0xffff, 2);
	pel_header(m.b, m.len, &h, &e);
	pel_iter_init(&it, m.b, &h);
	ok(pel_next(&it, &ev, &e) == -1 && e.off == 534 &&
	   strstr(e.msg, "65559 bytes"), "EL 65535: refused at byte 534 (%s)",
	   e.msg);

	/* VSIL longer than EL */
	m = l;
	pb_put(m.b + 512 + 20, 513, 2);
	pel_header(m.b, m.len, &h, &e);
	pel_iter_init(&it, m.b, &h);
	ok(pel_next(&it, &ev, &e) == -1 && e.off == 532,
	   "VSIL 513 > EL 512: refused at byte 532 (%s)", e.msg);

	/* EHL too short for the header's fields */
	m = l;
	m.b[512 + 2] = 20;
	pel_header(m.b, m.len, &h, &e);
	pel_iter_init(&it, m.b, &h);
	ok(pel_next(&it, &ev, &e) == -1 && e.off == 514,
	   "EHL 20: refused at byte 514 (%s)", e.msg);

	/* TLL shorter than the bytes: the rest is not read */
	m = l;
	pb_put(m.b + 8, 1238, 8);
	pel_header(m.b, m.len, &h, &e);
	pel_iter_init(&it, m.b, &h);
	while ((r = pel_next(&it, &ev, &e)) == 1)
		;
	ok(h.end == 1238 && r == -1 && it.n == 4 && e.off == 1238 &&
	   strstr(e.msg, "TNEV too high"),
	   "TLL 1238: the bytes after it are not events (%s)", e.msg);

	/* bytes after TLL (a longer read): ignored */
	m = l;
	memset(m.b + m.len, 0xee, 64);
	pel_header(m.b, m.len + 64, &h, &e);
	pel_iter_init(&it, m.b, &h);
	while ((r = pel_next(&it, &ev, &e)) == 1)
		;
	ok(r == 0 && it.n == 14 && h.end == l.len,
	   "64 bytes after TLL: 14 events, the rest ignored");
}

/* Decode everything: every field of every event; the number of events. */
static int walk(const uint8_t *b, size_t len, uint32_t *fields)
{
	struct pel_header h;
	struct pel_iter it;
	struct pel_event ev;
	struct pel_err e;
	struct got g;
	int r, n = 0;

	if (pel_header(b, len, &h, &e))
		return -1;
	pel_iter_init(&it, b, &h);
	while ((r = pel_next(&it, &ev, &e)) == 1) {
		memset(&g, 0, sizeof(g));
		pel_fields(&ev, collect, &g, &e);
		*fields += g.n;
		n++;
	}
	return r < 0 ? -1 : n;
}

static void t_hostile(void)
{
	static uint8_t cut[16384];
	struct pb l;
	uint32_t fields = 0, whole = 0, refused = 0;
	uint32_t x = 0x12345678;
	size_t len;

	int n;

	pb_all(&l);
	n = walk(l.b, l.len, &fields);
	ok(n == 14 && fields == 108, "the full log: %d events, %u fields", n,
	   fields);
	/* every truncation, each copied to a buffer of exactly its length
	 * (ASan sees a read past it) */
	for (len = 0; len <= l.len; len++) {
		uint8_t *p = cut + sizeof(cut) - len;

		memcpy(p, l.b, len);
		if (walk(p, len, &fields) == 14)
			whole++;
		else
			refused++;
	}
	ok(whole == 1 && refused == l.len, "%zu truncations: all refused, "
	   "only the whole log decodes", l.len);
	/* every byte of the log set to 00h, FFh and a random value */
	whole = refused = 0;
	for (size_t i = 0; i < l.len; i++) {
		static const uint8_t v[] = { 0x00, 0xff, 0 };

		for (unsigned int k = 0; k < 3; k++) {
			struct pb m = l;
			uint8_t *p = cut + sizeof(cut) - l.len;

			x = x * 1103515245u + 12345u;
			m.b[i] = k < 2 ? v[k] : (uint8_t)(x >> 16);
			memcpy(p, m.b, l.len);
			if (walk(p, l.len, &fields) < 0)
				refused++;
			else
				whole++;
		}
	}
	ok(whole + refused == 3 * l.len && refused > 0,
	   "%zu corrupted logs decoded in bounds: %u walked, %u refused",
	   3 * l.len, whole, refused);
}

static void t_clock_epoch(void)
{
	struct pb l;
	struct pel_header h;
	struct pel_err e;

	pb_all(&l);
	pel_header(l.b, l.len, &h, &e);
	ok(pel_clock_epoch(l.b, &h) == 3, "clock epoch: the power-on/reset "
	   "event (#3) after the timestamp change (#2)");
	pel_header(l.b, 1400, &h, &e);
	ok(pel_clock_epoch(l.b, &h) == -1, "clock epoch of a cut log: -1");
	pb_init(&l);
	pb_event(&l, 0x0d, PB_TS(1), 0, 2);
	pb_event(&l, 0x01, PB_TS(2), 0, 512);
	pb_finish(&l);
	pel_header(l.b, l.len, &h, &e);
	ok(pel_clock_epoch(l.b, &h) == 0, "no reset, no change: event 0");
}

int main(void)
{
	t_header();
	t_types();
	t_odd_events();
	t_refusals();
	t_hostile();
	t_clock_epoch();
	return tap_done();
}
