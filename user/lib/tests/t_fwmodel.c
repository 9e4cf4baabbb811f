// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * t_fwmodel.c - the firmware command model (hmbtrace_fwmodel.h), TAP:
 * a command's phases joined into one command, an id reused before its
 * end, and more commands in flight than its table holds (the table must
 * stay at most 3/4 full, every eviction closing a real open command, or
 * the probe for a free slot never ends).
 */
#include <string.h>

#include "hmbtrace_fwmodel.h"
#include "tap.h"

#ifndef HMB_TOP
#define HMB_TOP "../.."
#endif

static uint64_t ends[4];

static void on_end(void *ctx, const struct hmb_fwm_cmd *c,
		   enum hmb_fwm_end why)
{
	(void)ctx;
	(void)c;
	ends[why]++;
}

static const struct hmb_fwm_ops ops = { .cmd_end = on_end };

/* A phase record of (sqid, cid) as the shipped dictionary lays it out. */
static void feed(struct hmb_fwmodel *m, uint16_t opcode, uint32_t seq,
		 uint16_t sqid, uint16_t cid)
{
	uint8_t pl[24] = { 0 };
	struct hmb_record rec;

	memset(&rec, 0, sizeof(rec));
	pl[0] = (uint8_t)sqid;
	pl[1] = (uint8_t)(sqid >> 8);
	pl[2] = (uint8_t)cid;
	pl[3] = (uint8_t)(cid >> 8);
	pl[8] = 2;	/* opc: read */
	rec.hdr.magic = HMB_RECORD_MAGIC;
	rec.hdr.seq = seq;
	rec.hdr.ts_ns = 1000ull * (seq + 1);
	rec.hdr.opcode = opcode;
	rec.hdr.payload_len = sizeof(pl);
	rec.payload = pl;
	hmb_fwm_add(m, &rec);
}

static uint32_t used_slots(const struct hmb_fwmodel *m)
{
	uint32_t n = 0;

	for (uint32_t i = 0; i < HMB_FWM_MAX_INFLIGHT; i++)
		n += m->tab[i].used;
	return n;
}

int main(void)
{
	const uint32_t limit = HMB_FWM_MAX_INFLIGHT / 4 * 3, n = 300000;
	struct hmb_error err = { 0 };
	struct hmb_fwmodel m;
	struct hmb_dict *d;
	uint32_t bad_at = 0, seq = 0;

	if (!ok(!hmb_dict_load(&d, HMB_TOP "/share/hmb-events.dict", &err),
		"shipped dictionary loads"))
		return tap_done();
	ok(!hmb_fwm_init(&m, d, &ops, NULL), "init");
	for (uint16_t op = 0x0100; op <= 0x0104; op++)
		feed(&m, op, seq++, 1, 7);
	ok(m.st.cmds == 1 && ends[HMB_FWM_END_COMPLETE] == 1 && m.open == 0,
	   "fetch .. cqe_posted of one command: one complete command");
	feed(&m, 0x0100, seq++, 1, 8);
	feed(&m, 0x0100, seq++, 1, 8);
	ok(ends[HMB_FWM_END_REUSED] == 1 && m.open == 1,
	   "a second fetch of the same id ends the first as reused");
	for (uint32_t i = 0; i < n; i++) {
		feed(&m, 0x0100, seq++, (uint16_t)(2 + (i >> 16)),
		     (uint16_t)i);
		/* stop before a full table would hang the probe */
		if (i % 4096 == 4095 &&
		    (used_slots(&m) != m.open || m.open > limit)) {
			bad_at = i + 1;
			break;
		}
	}
	ok(!bad_at, "%u commands in flight: the table holds exactly the open "
	   "ones, at most %u (first wrong after %u)", n, limit, bad_at);
	ok(m.st.evicted == n + 1 - limit && m.open == limit &&
	   ends[HMB_FWM_END_EVICTED] == m.st.evicted,
	   "%u commands in flight: %llu closed early as evicted", n,
	   (unsigned long long)m.st.evicted);
	hmb_fwm_finish(&m);
	ok(ends[HMB_FWM_END_EOF] == limit && m.st.cmds == n + 3,
	   "the rest closed at the end of the input (%llu)",
	   (unsigned long long)ends[HMB_FWM_END_EOF]);
	hmb_dict_free(d);
	return tap_done();
}
