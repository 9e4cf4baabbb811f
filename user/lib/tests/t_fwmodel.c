// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * t_fwmodel.c - the firmware command model (hmbtrace_fwmodel.h), TAP:
 * a command's phases joined into one command, an id reused before its
 * end (also when the next use's first record repeats the open use's last
 * phase after a loss), a duplicate phase, and more commands in flight than its table holds (the table must
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
/* the last two commands ended: mask, why, media_end's seq */
static struct ended {
	uint8_t mask;
	enum hmb_fwm_end why;
	uint32_t seq3;
} last[2];

static void on_end(void *ctx, const struct hmb_fwm_cmd *c,
		   enum hmb_fwm_end why)
{
	(void)ctx;
	ends[why]++;
	last[0] = last[1];
	last[1] = (struct ended){ c->mask, why, c->seq[HMB_PHASE_MEDIA_END] };
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
	uint32_t bad_at = 0, seq = 0, s3, n3;

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
	feed(&m, 0x0100, seq++, 1, 9);
	feed(&m, 0x0101, seq++, 1, 9);
	s3 = seq;
	feed(&m, 0x0102, seq++, 1, 9);
	feed(&m, 0x0102, s3, 1, 9);	/* the same record again */
	feed(&m, 0x0102, seq++, 1, 9);	/* nothing lost since */
	ok(m.st.dup_phase == 2 && m.open == 2,
	   "media_end again, replayed or with nothing lost since: duplicates");
	/*
	 * This use loses xfer_done and cqe_posted, the next one its fetch
	 * and media_start: the next media_end follows a seq gap.
	 */
	seq += 4;
	n3 = seq;
	feed(&m, 0x0102, seq++, 1, 9);
	feed(&m, 0x0102, s3, 1, 9);	/* a replay from before the gap */
	feed(&m, 0x0103, seq++, 1, 9);
	feed(&m, 0x0104, seq++, 1, 9);
	ok(m.st.dup_phase == 3 && ends[HMB_FWM_END_REUSED] == 2 &&
	   last[0].why == HMB_FWM_END_REUSED && last[0].mask == 0x0e &&
	   last[0].seq3 == s3 &&
	   last[1].why == HMB_FWM_END_COMPLETE && last[1].mask == 0x38 &&
	   last[1].seq3 == n3 && m.open == 1,
	   "media_end after a seq gap starts the id's next use (ended: "
	   "mask 0x%02x why %d, mask 0x%02x why %d; duplicates %llu)",
	   last[0].mask, (int)last[0].why, last[1].mask, (int)last[1].why,
	   (unsigned long long)m.st.dup_phase);
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
	ok(ends[HMB_FWM_END_EOF] == limit && m.st.cmds == n + 5,
	   "the rest closed at the end of the input (%llu)",
	   (unsigned long long)ends[HMB_FWM_END_EOF]);
	hmb_dict_free(d);
	return tap_done();
}
