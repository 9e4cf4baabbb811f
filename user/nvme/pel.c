// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * pel.c - the NVMe Persistent Event Log (log page 0Dh) decoded (pel.h).
 * Offsets are the NVM Express Base Specification's (Persistent Event Log
 * header, event header, and each event type's data).
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "pel.h"

static uint16_t le16(const uint8_t *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

static uint32_t le32(const uint8_t *p)
{
	return (uint32_t)le16(p) | (uint32_t)le16(p + 2) << 16;
}

static uint64_t le64(const uint8_t *p)
{
	return (uint64_t)le32(p) | (uint64_t)le32(p + 4) << 32;
}

static int fail(struct pel_err *e, size_t off, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int fail(struct pel_err *e, size_t off, const char *fmt, ...)
{
	va_list ap;

	e->off = off;
	va_start(ap, fmt);
	vsnprintf(e->msg, sizeof(e->msg), fmt, ap);
	va_end(ap);
	return -1;
}

static void ts_of(struct pel_ts *t, uint64_t raw)
{
	t->raw = raw;
	t->ms = raw & ((1ULL << 48) - 1);
	t->synch = (raw >> 48) & 1;
	t->origin = (raw >> 49) & 7;
}

/* An ASCII field: NULs and the space padding at its end cut. */
static void str_of(char *dst, const uint8_t *src, size_t n)
{
	while (n && (src[n - 1] == ' ' || src[n - 1] == 0))
		n--;
	memcpy(dst, src, n);
	dst[n] = 0;
}

int pel_header(const uint8_t *buf, size_t len, struct pel_header *h,
	       struct pel_err *e)
{
	memset(h, 0, sizeof(*h));
	if (len < PEL_HDR_LEN)
		return fail(e, len, "log is %zu bytes, its header alone is %u",
			    len, PEL_HDR_LEN);
	h->lid = buf[0];
	if (h->lid != PEL_LID)
		return fail(e, 0, "log identifier is 0x%02x, not 0x0d "
			    "(Persistent Event Log)", h->lid);
	h->tnev = le32(buf + 4);
	h->tll = le64(buf + 8);
	h->rv = buf[16];
	h->lhl = le16(buf + 18);
	ts_of(&h->ts, le64(buf + 20));
	h->poh_lo = le64(buf + 28);
	h->poh_hi = le64(buf + 36);
	h->pcc = le64(buf + 44);
	h->vid = le16(buf + 52);
	h->ssvid = le16(buf + 54);
	str_of(h->sn, buf + 56, 20);
	str_of(h->mn, buf + 76, 40);
	str_of(h->subnqn, buf + 116, 256);
	h->gen = le16(buf + 372);
	h->rci = le32(buf + 374);
	memcpy(h->seb, buf + 480, 32);
	h->first = (size_t)h->lhl + 20;
	if (h->first < PEL_HDR_LEN)
		return fail(e, 18, "log header length %u puts the first event "
			    "at byte %zu, inside the %u-byte header",
			    h->lhl, h->first, PEL_HDR_LEN);
	if (h->tll < h->first)
		return fail(e, 8, "total log length %llu is shorter than the "
			    "header (%zu bytes)", (unsigned long long)h->tll,
			    h->first);
	h->end = h->tll < len ? (size_t)h->tll : len;
	return 0;
}

void pel_iter_init(struct pel_iter *it, const uint8_t *buf,
		   const struct pel_header *h)
{
	it->buf = buf;
	it->h = h;
	it->off = h->first;
	it->n = 0;
}

int pel_next(struct pel_iter *it, struct pel_event *ev, struct pel_err *e)
{
	const uint8_t *p;
	size_t off = it->off, end = it->h->end, room;

	if (it->n >= it->h->tnev)
		return 0;
	room = off < end ? end - off : 0;
	memset(ev, 0, sizeof(*ev));
	ev->index = it->n;
	ev->off = off;
	if (off > end)		/* the first event, after a long header */
		return fail(e, end, "event %u of %u starts at byte %zu, past "
			    "the end of the log (%zu bytes, total log length "
			    "%llu)", it->n, it->h->tnev, off, end,
			    (unsigned long long)it->h->tll);
	if (room < 3 + PEL_EHL_MIN)
		return fail(e, off, "event %u of %u: its header needs %u bytes, "
			    "the log has %zu left (total log length %llu, "
			    "%s)", it->n, it->h->tnev, 3 + PEL_EHL_MIN, room,
			    (unsigned long long)it->h->tll,
			    it->h->tll > end ? "log truncated" : "TNEV too high");
	p = it->buf + off;
	ev->type = p[0];
	ev->rev = p[1];
	ev->ehl = p[2];
	ev->ehai = p[3];
	ev->cntlid = le16(p + 4);
	ts_of(&ev->ts, le64(p + 6));
	ev->pelpid = le16(p + 14);
	ev->vsil = le16(p + 20);
	ev->el = le16(p + 22);
	if (ev->ehl < PEL_EHL_MIN)
		return fail(e, off + 2, "event %u: event header length %u, "
			    "below the %u its fields take", it->n, ev->ehl,
			    PEL_EHL_MIN);
	if (ev->vsil > ev->el)
		return fail(e, off + 20, "event %u: vendor specific information "
			    "length %u exceeds its event length %u", it->n,
			    ev->vsil, ev->el);
	if ((size_t)3 + ev->ehl + ev->el > room)
		return fail(e, off + 22, "event %u (type 0x%02x) is %u bytes, "
			    "past the end of the log at byte %zu", it->n,
			    ev->type, 3 + ev->ehl + ev->el, end);
	ev->vsi = p + 3 + ev->ehl;
	ev->data = ev->vsi + ev->vsil;
	ev->len = (uint32_t)(ev->el - ev->vsil);
	it->off = off + 3 + ev->ehl + ev->el;
	it->n++;
	return 1;
}

const char *pel_type_name(uint8_t type)
{
	switch (type) {
	case PEL_SMART:		return "smart";
	case PEL_FW_COMMIT:	return "fw_commit";
	case PEL_TS_CHANGE:	return "timestamp_change";
	case PEL_POR:		return "power_on_reset";
	case PEL_HW_ERROR:	return "hw_error";
	case PEL_CHANGE_NS:	return "change_namespace";
	case PEL_FORMAT_START:	return "format_start";
	case PEL_FORMAT_DONE:	return "format_complete";
	case PEL_SANITIZE_START: return "sanitize_start";
	case PEL_SANITIZE_DONE:	return "sanitize_complete";
	case PEL_SET_FEATURE:	return "set_feature";
	case PEL_TELEMETRY:	return "telemetry_log_created";
	case PEL_THERMAL:	return "thermal_excursion";
	case PEL_VENDOR:	return "vendor_specific";
	}
	return NULL;
}

uint32_t pel_type_min(uint8_t type)
{
	switch (type) {
	case PEL_SMART:		return 512;
	case PEL_FW_COMMIT:	return 20;
	case PEL_TS_CHANGE:	return 16;
	case PEL_POR:		return 8;
	case PEL_HW_ERROR:	return 4;
	case PEL_CHANGE_NS:	return 48;
	case PEL_FORMAT_START:	return 12;
	case PEL_FORMAT_DONE:	return 12;
	case PEL_SANITIZE_START: return 12;
	case PEL_SANITIZE_DONE:	return 8;
	case PEL_SET_FEATURE:	return 4;
	case PEL_TELEMETRY:	return 512;
	case PEL_THERMAL:	return 2;
	}
	return 0;
}

/* The emitter: one field at a time to the caller's function. */
struct out {
	pel_field_fn fn;
	void *arg;
	const uint8_t *d;
	int idx;
};

static void put(struct out *o, const char *name, enum pel_kind k, uint64_t u,
		uint64_t hi, const uint8_t *p, size_t len)
{
	struct pel_field f = {
		.name = name, .idx = o->idx, .kind = k, .u = u, .hi = hi,
		.p = p, .len = len,
	};

	o->fn(&f, o->arg);
}

static void u8f(struct out *o, const char *n, size_t at)
{
	put(o, n, PF_UINT, o->d[at], 0, NULL, 0);
}

static void u16f(struct out *o, const char *n, size_t at)
{
	put(o, n, PF_UINT, le16(o->d + at), 0, NULL, 0);
}

static void u32f(struct out *o, const char *n, size_t at)
{
	put(o, n, PF_UINT, le32(o->d + at), 0, NULL, 0);
}

static void u64f(struct out *o, const char *n, size_t at)
{
	put(o, n, PF_UINT, le64(o->d + at), 0, NULL, 0);
}

static void u128f(struct out *o, const char *n, size_t at)
{
	put(o, n, PF_U128, le64(o->d + at), le64(o->d + at + 8), NULL, 0);
}

/* A firmware revision: 8 ASCII bytes. */
static void strf(struct out *o, const char *n, size_t at, size_t len)
{
	size_t l = len;

	while (l && (o->d[at + l - 1] == ' ' || o->d[at + l - 1] == 0))
		l--;
	put(o, n, PF_STR, 0, 0, o->d + at, l);
}

static void hexf(struct out *o, const char *n, size_t at, size_t len)
{
	put(o, n, PF_HEX, 0, 0, o->d + at, len);
}

static void smart(struct out *o)
{
	static const char *const cnt[] = {
		"data_units_read", "data_units_written", "host_read_commands",
		"host_write_commands", "controller_busy_time", "power_cycles",
		"power_on_hours", "unsafe_shutdowns", "media_errors",
		"num_err_log_entries",
	};
	static const char *const sensor[] = {
		"temp_sensor_1", "temp_sensor_2", "temp_sensor_3",
		"temp_sensor_4", "temp_sensor_5", "temp_sensor_6",
		"temp_sensor_7", "temp_sensor_8",
	};
	unsigned int i;

	u8f(o, "critical_warning", 0);
	u16f(o, "temperature_k", 1);
	u8f(o, "avail_spare", 3);
	u8f(o, "spare_thresh", 4);
	u8f(o, "percent_used", 5);
	u8f(o, "endurance_grp_critical_warning_summary", 6);
	for (i = 0; i < 10; i++)
		u128f(o, cnt[i], 32 + 16 * i);
	u32f(o, "warning_temp_time", 192);
	u32f(o, "critical_comp_time", 196);
	for (i = 0; i < 8; i++)
		u16f(o, sensor[i], 200 + 2 * i);
	u32f(o, "thm_temp1_trans_count", 216);
	u32f(o, "thm_temp2_trans_count", 220);
	u32f(o, "thm_temp1_total_time", 224);
	u32f(o, "thm_temp2_total_time", 228);
}

static void por(struct out *o, const struct pel_event *ev)
{
	uint32_t n = (ev->len - 8) / 36, i;

	strf(o, "fw_rev", 0, 8);
	for (i = 0; i < n; i++) {
		const uint8_t *save = o->d;

		o->idx = (int)i;
		o->d = save + 8 + 36 * i;
		u16f(o, "ctrl_id", 0);
		u8f(o, "fw_act", 2);
		u8f(o, "op_in_prog", 3);
		u32f(o, "ctrl_power_cycle", 16);
		u64f(o, "power_on_ms", 20);
		{
			uint64_t ts = le64(o->d + 28);

			put(o, "ctrl_timestamp_ms", PF_UINT,
			    ts & ((1ULL << 48) - 1), 0, NULL, 0);
			put(o, "ctrl_timestamp_synch", PF_UINT, (ts >> 48) & 1,
			    0, NULL, 0);
			put(o, "ctrl_timestamp_origin", PF_UINT,
			    (ts >> 49) & 7, 0, NULL, 0);
		}
		o->d = save;
	}
	o->idx = -1;
}

static int set_feature(struct out *o, const struct pel_event *ev,
		       size_t at0, struct pel_err *e)
{
	uint32_t layout = le32(o->d), ndw = layout & 7, cc = (layout >> 3) & 1;
	uint32_t mb = layout >> 16, need = 4 + 4 * ndw + 4 * cc + mb, i;
	static const char *const cdw[] = {
		"cdw10", "cdw11", "cdw12", "cdw13", "cdw14", "cdw15",
	};

	u32f(o, "layout", 0);
	put(o, "logged_dwords", PF_UINT, ndw, 0, NULL, 0);
	put(o, "logged_mem_bytes", PF_UINT, mb, 0, NULL, 0);
	if (ndw > 6)
		return fail(e, at0, "set feature event logs %u command dwords, "
			    "the command has 6 (CDW10..CDW15)", ndw);
	if (need > ev->len)
		return fail(e, at0, "set feature event's layout needs %u bytes "
			    "of data, the event has %u", need, ev->len);
	if (ndw)
		put(o, "fid", PF_UINT, o->d[4], 0, NULL, 0);
	for (i = 0; i < ndw; i++)
		u32f(o, cdw[i], 4 + 4 * i);
	if (cc)
		u32f(o, "cqe_dw0", 4 + 4 * ndw);
	if (mb)
		hexf(o, "mem", 4 + 4 * ndw + 4 * cc, mb);
	return 0;
}

static int vendor(struct out *o, const struct pel_event *ev, size_t at0,
		  struct pel_err *e)
{
	uint32_t at = 0;
	int i = 0;

	while (at < ev->len) {
		uint16_t l;

		if (ev->len - at < 6)
			return fail(e, at0 + at, "vendor event descriptor %d "
				    "needs 6 bytes, %u left", i, ev->len - at);
		l = le16(o->d + at + 4);
		if (l > ev->len - at - 6)
			return fail(e, at0 + at + 4, "vendor event descriptor "
				    "%d: data length %u, %u bytes left", i, l,
				    ev->len - at - 6);
		o->idx = i;
		u16f(o, "vs_event_code", at);
		u8f(o, "vs_data_type", at + 2);
		u8f(o, "uuid_index", at + 3);
		hexf(o, "vs_data", at + 6, l);
		at += 6 + l;
		i++;
	}
	o->idx = -1;
	return 0;
}

int pel_fields(const struct pel_event *ev, pel_field_fn fn, void *arg,
	       struct pel_err *e)
{
	struct out o = { .fn = fn, .arg = arg, .d = ev->data, .idx = -1 };
	size_t at0 = ev->off + 3 + ev->ehl + ev->vsil;
	uint32_t min = pel_type_min(ev->type);

	if (ev->len < min)
		return fail(e, at0, "event %u (%s): %u bytes of data, its "
			    "layout has %u", ev->index,
			    pel_type_name(ev->type), ev->len, min);
	switch (ev->type) {
	case PEL_SMART:
		smart(&o);
		break;
	case PEL_FW_COMMIT:
		strf(&o, "old_fw_rev", 0, 8);
		strf(&o, "new_fw_rev", 8, 8);
		u8f(&o, "fw_commit_action", 16);
		u8f(&o, "fw_slot", 17);
		u8f(&o, "sct_fw", 18);
		u8f(&o, "sc_fw", 19);
		if (ev->len >= 22)
			u16f(&o, "vu_fw_commit_rc", 20);
		break;
	case PEL_TS_CHANGE: {
		uint64_t prev = le64(ev->data);

		put(&o, "prev_timestamp_ms", PF_UINT, prev & ((1ULL << 48) - 1),
		    0, NULL, 0);
		put(&o, "prev_timestamp_synch", PF_UINT, (prev >> 48) & 1, 0,
		    NULL, 0);
		put(&o, "prev_timestamp_origin", PF_UINT, (prev >> 49) & 7, 0,
		    NULL, 0);
		u64f(&o, "ms_since_reset", 8);
		break;
	}
	case PEL_POR:
		por(&o, ev);
		if ((ev->len - 8) % 36)
			return fail(e, at0 + 8 + (ev->len - 8) / 36 * 36,
				    "event %u (power_on_reset): reset "
				    "information list of %u bytes is not a "
				    "multiple of 36", ev->index, ev->len - 8);
		break;
	case PEL_HW_ERROR:
		u16f(&o, "hw_err_code", 0);
		if (ev->len > 4)
			hexf(&o, "additional_info", 4, ev->len - 4);
		break;
	case PEL_CHANGE_NS:
		u32f(&o, "nsmgt_cdw10", 0);
		u64f(&o, "nsze", 8);
		u64f(&o, "nscap", 24);
		u8f(&o, "flbas", 32);
		u8f(&o, "dps", 33);
		u8f(&o, "nmic", 34);
		u32f(&o, "ana_grp_id", 36);
		u16f(&o, "nvmset_id", 40);
		u32f(&o, "nsid", 44);
		break;
	case PEL_FORMAT_START:
		u32f(&o, "nsid", 0);
		u8f(&o, "fna", 4);
		u32f(&o, "format_nvm_cdw10", 8);
		break;
	case PEL_FORMAT_DONE:
		u32f(&o, "nsid", 0);
		u8f(&o, "smallest_fpi", 4);
		u8f(&o, "format_nvm_status", 5);
		u16f(&o, "compln_info", 6);
		u32f(&o, "status_field", 8);
		break;
	case PEL_SANITIZE_START:
		u32f(&o, "sanicap", 0);
		u32f(&o, "sani_cdw10", 4);
		u32f(&o, "sani_cdw11", 8);
		break;
	case PEL_SANITIZE_DONE:
		u16f(&o, "sani_prog", 0);
		u16f(&o, "sani_status", 2);
		u16f(&o, "compln_info", 4);
		break;
	case PEL_SET_FEATURE:
		return set_feature(&o, ev, at0, e);
	case PEL_TELEMETRY:
		/* the Telemetry Host-Initiated log's header */
		u8f(&o, "telemetry_lid", 0);
		hexf(&o, "ieee_oui", 5, 3);
		u16f(&o, "data_area_1_last_block", 8);
		u16f(&o, "data_area_2_last_block", 10);
		u16f(&o, "data_area_3_last_block", 12);
		u8f(&o, "ctrl_data_available", 382);
		u8f(&o, "ctrl_data_gen", 383);
		break;
	case PEL_THERMAL:
		u8f(&o, "over_temp", 0);
		u8f(&o, "threshold", 1);
		break;
	case PEL_VENDOR:
		return vendor(&o, ev, at0, e);
	default:
		if (ev->len)
			hexf(&o, "data", 0, ev->len);
		break;
	}
	return 0;
}

long pel_clock_epoch(const uint8_t *buf, const struct pel_header *h)
{
	struct pel_iter it;
	struct pel_event ev;
	struct pel_err e;
	long first = 0;
	int r;

	pel_iter_init(&it, buf, h);
	while ((r = pel_next(&it, &ev, &e)) == 1)
		if (ev.type == PEL_POR || ev.type == PEL_TS_CHANGE)
			first = (long)ev.index;
	return r < 0 ? -1 : first;
}
