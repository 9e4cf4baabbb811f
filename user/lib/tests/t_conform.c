// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The producer-rule checker (hmbtrace_conform.h) on crafted rings: a ring
 * the library's own producer wrote passes every rule it exercises, and
 * each rule is caught by a ring that breaks it, with the rule's id, the
 * seq and the cursor of the record at fault.  Rings are written by hand
 * (put()) where a violation is one the producer cannot make.
 */
#include <stdlib.h>
#include <string.h>

#include "hmbtrace.h"
#include "hmbtrace_conform.h"
#include "hmbtrace_dict.h"
#include "tap.h"

#define RS 256u

static uint8_t ringbuf[HMB_RECORD_AREA_OFF + 65536] __attribute__((aligned(64)));
static struct hmb_ring_hdr *hdr = (struct hmb_ring_hdr *)ringbuf;
static uint8_t *area = ringbuf + HMB_RECORD_AREA_OFF;
static struct hmb_dict *dict;

static void ring_init(uint32_t rs, uint64_t start)
{
	memset(ringbuf, 0, sizeof(ringbuf));
	hdr->magic = HMB_RING_MAGIC;
	hdr->version = HMB_TRACE_ABI_VERSION;
	hdr->ring_size = rs;
	hdr->record_area_off = HMB_RECORD_AREA_OFF;
	hdr->head = hdr->tail = start;
}

/* A record written by hand at cursor @c; returns the cursor after it. */
static uint64_t put(uint64_t c, uint32_t seq, uint64_t ts, uint16_t opc,
		    uint8_t flags, uint16_t len)
{
	struct hmb_record_hdr h = { 0 };
	uint32_t off = (uint32_t)(c & (hdr->ring_size - 1));

	h.magic = HMB_RECORD_MAGIC;
	h.seq = seq;
	h.ts_ns = ts;
	h.opcode = opc;
	h.flags = flags;
	h.payload_len = len;
	memcpy(area + off, &h, sizeof(h));
	memset(area + off + 32, 0x11, len);
	memset(area + off + 32 + len, 0, HMB_RECORD_SIZE(len) - 32 - len);
	return c + HMB_RECORD_SIZE(len);
}

static struct hmb_record_hdr *at(uint64_t c)
{
	return (struct hmb_record_hdr *)(area + (c & (hdr->ring_size - 1)));
}

/* Consume from the header's tail to its head, all of it, into @ck. */
static void consume(struct hmb_conform *ck, uint32_t poll_flags)
{
	struct hmb_consumer *c;
	struct hmb_error err = { 0 };
	struct hmb_record rec;
	uint64_t avail, tail = hdr->tail;
	int k;

	if (hmb_consumer_open(&c, ringbuf, HMB_RECORD_AREA_OFF + hdr->ring_size,
			      hmb_publish_store, ringbuf, &err)) {
		hmb_conform_consumer_error(ck, &err, hdr->head);
		return;
	}
	if (hmb_consumer_poll(c, &avail, &err) < 0) {
		hmb_conform_consumer_error(ck, &err, hdr->head);
		hmb_consumer_close(c);
		return;
	}
	hmb_conform_poll(ck, hmb_consumer_head(c), tail, poll_flags);
	while ((k = hmb_consumer_next(c, &rec, &err)) == 1)
		hmb_conform_record(ck, &rec);
	if (k < 0)
		hmb_conform_consumer_error(ck, &err, hmb_consumer_head(c));
	hmb_consumer_commit(c, &err);
	hmb_consumer_close(c);
}

static int failed_rules(const struct hmb_conform *ck)
{
	int i, n = 0;

	for (i = 0; i < HMB_CF_RULES; i++)
		if (ck->res[i].failed)
			n++;
	return n;
}

/* Exactly @rule failed, first at @cursor (and @seq unless -1). */
static void caught(const struct hmb_conform *ck, int rule, uint64_t cursor,
		   long long seq, const char *what)
{
	const struct hmb_cf_result *r = &ck->res[rule];

	for (int i = 0; i < HMB_CF_RULES; i++)
		if (ck->res[i].failed && i != rule)
			diag("also %s: %s", hmb_cf_rule_info(i)->id, ck->res[i].msg);
	ok(r->failed && failed_rules(ck) == 1 && r->cursor == cursor &&
	   (seq < 0 || (r->have_seq && r->seq == (uint32_t)seq)),
	   "%s: caught by %s at cursor %llu (failed %llu, other rules %d): %s",
	   what, hmb_cf_rule_info(rule)->id, (unsigned long long)r->cursor,
	   (unsigned long long)r->failed, failed_rules(ck) - !!r->failed, r->msg);
}

/* The library's producer over several laps of a small ring: clean. */
static void t_clean(void)
{
	static const uint16_t lens[] = { 8, 40, 0, 100, 16, 64, 4, 200, 24, 12 };
	static uint8_t pl[256];
	struct hmb_producer p;
	struct hmb_conform ck;
	struct hmb_error err;
	struct hmb_event ev = { 0 };
	int i, j;

	memset(ringbuf, 0, sizeof(ringbuf));
	hmb_producer_init(&p, ringbuf, HMB_RECORD_AREA_OFF + RS, RS, 7, &err);
	hmb_conform_init(&ck, RS, dict);
	hmb_conform_epoch(&ck);
	for (i = 0; i < 200; i++) {
		for (j = 0; j < 2; j++) {
			ev.ts_ns = 1000 + (uint64_t)i * 10 + j;
			ev.opcode = 0x0102;
			ev.payload_len = lens[(i + j) % 10] < 8 ? 8 : lens[(i + j) % 10];
			ev.payload = pl;
			hmb_producer_emit(&p, &ev, HMB_EMIT_DROP);
		}
		consume(&ck, 0);
	}
	ok(!hmb_conform_failures(&ck) && ck.records == p.produced &&
	   ck.markers == p.markers && ck.implicit_skips == p.implicit_wraps,
	   "producer's ring: no failure, %llu records, %llu markers, %llu "
	   "implicit skips (producer: %llu, %llu, %llu)",
	   (unsigned long long)ck.records, (unsigned long long)ck.markers,
	   (unsigned long long)ck.implicit_skips,
	   (unsigned long long)p.produced, (unsigned long long)p.markers,
	   (unsigned long long)p.implicit_wraps);
	ok(ck.markers && ck.implicit_skips, "both kinds of wrap exercised");
	for (i = 0; i < HMB_CF_RULES; i++) {
		if (i == HMB_CF_EPOCH_SEQ)
			continue;	/* one epoch */
		ok(ck.res[i].checked, "rule %s exercised %llu times",
		   hmb_cf_rule_info(i)->id, (unsigned long long)ck.res[i].checked);
	}
}

/* Records 0..2 of 32-byte payloads (64 bytes each) from cursor 0. */
static uint64_t three(void)
{
	uint64_t c = 0;
	int i;

	for (i = 0; i < 3; i++)
		c = put(c, 10 + i, 100 + i, 0x0102, 0, 32);
	return c;
}

static void t_record_fields(void)
{
	struct hmb_conform ck;

	ring_init(RS, 0);
	hdr->head = three();
	at(64)->reserved0 = 1;
	hmb_conform_init(&ck, RS, dict);
	consume(&ck, 0);
	caught(&ck, HMB_CF_REC_MBZ, 64, 11, "reserved0 set");

	ring_init(RS, 0);
	hdr->head = three();
	at(128)->flags = 0x04;
	hmb_conform_init(&ck, RS, dict);
	consume(&ck, 0);
	caught(&ck, HMB_CF_REC_MBZ, 128, 12, "flag bit 2 set");

	ring_init(RS, 0);
	hdr->head = put(put(0, 1, 1, 0x0102, 0, 8), 2, 2, 0x0102, 0, 9);
	area[40 + 32 + 9 + 3] = 0xee;
	hmb_conform_init(&ck, RS, dict);
	consume(&ck, 0);
	caught(&ck, HMB_CF_REC_PAD, 40, 2, "padding byte set");

	ring_init(RS, 0);
	hdr->head = three();
	at(64)->magic = 0x12345678;
	hmb_conform_init(&ck, RS, dict);
	consume(&ck, 0);
	caught(&ck, HMB_CF_REC_MAGIC, 64, -1, "bad magic inside the lap");

	ring_init(RS, 0);
	hdr->head = three();
	at(128)->payload_len = 5000;
	hmb_conform_init(&ck, RS, dict);
	consume(&ck, 0);
	caught(&ck, HMB_CF_REC_LEN, 128, -1, "payload_len 5000");

	ring_init(RS, 0);
	hdr->head = three() + 4;
	hmb_conform_init(&ck, RS, dict);
	consume(&ck, 0);
	caught(&ck, HMB_CF_HEAD, 0x10, -1, "head not 8-aligned (header offset)");
}

/*
 * ring 256 from tail 128: a record of 64 bytes (seq 12) to 192, then (64
 * bytes left) a marker if @marker and a record of @next_len at 256.
 */
static uint64_t lap_then(uint16_t next_len, bool marker, uint32_t mseq,
			 uint64_t mts, uint8_t mcpu)
{
	uint64_t c;

	ring_init(RS, 128);
	c = put(128, 12, 100, 0x0102, 0, 32);

	if (marker) {
		put(c, mseq, mts, 0, HMB_REC_FLAG_WRAP_MARKER, 0);
		at(c)->cpu = mcpu;
	}
	return put(RS, 13, 200, 0x0102, 0, next_len);
}

static void t_wrap(void)
{
	struct hmb_conform ck;

	hdr->head = lap_then(64, true, 13, 200, 0);
	hmb_conform_init(&ck, RS, dict);
	consume(&ck, 0);
	ok(!hmb_conform_failures(&ck) && ck.markers == 1,
	   "a due wrap marker passes (%llu failures)",
	   (unsigned long long)hmb_conform_failures(&ck));

	hdr->head = lap_then(64, false, 0, 0, 0);	/* 64 bytes left, no marker */
	hmb_conform_init(&ck, RS, dict);
	consume(&ck, 0);
	caught(&ck, HMB_CF_WRAP_MARKER, 192, -1, "wrap marker missing (zeroes there)");

	/* the marker missing, a stale record of an earlier lap in its place */
	hdr->head = lap_then(64, false, 0, 0, 0);
	put(192, 3, 50, 0x0102, 0, 32);
	hmb_conform_init(&ck, RS, dict);
	consume(&ck, 0);
	ok(ck.res[HMB_CF_SEQ_NEXT].failed && ck.res[HMB_CF_SEQ_NEXT].cursor == 192,
	   "wrap marker missing (a stale record there): seq-next at 192: %s",
	   ck.res[HMB_CF_SEQ_NEXT].msg);

	hdr->head = lap_then(16, true, 13, 200, 0);	/* 48 bytes fitted */
	hmb_conform_init(&ck, RS, dict);
	consume(&ck, 0);
	caught(&ck, HMB_CF_WRAP_MARKER, 192, 13, "wrap marker though the record fitted");

	hdr->head = lap_then(64, true, 14, 200, 0);
	hmb_conform_init(&ck, RS, dict);
	consume(&ck, 0);
	caught(&ck, HMB_CF_MARKER_FIELDS, 192, 14, "marker seq not the next record's");

	hdr->head = lap_then(64, true, 13, 199, 0);
	hmb_conform_init(&ck, RS, dict);
	consume(&ck, 0);
	caught(&ck, HMB_CF_MARKER_FIELDS, 192, 13, "marker ts_ns not the next record's");

	hdr->head = lap_then(64, true, 13, 200, 2);
	hmb_conform_init(&ck, RS, dict);
	consume(&ck, 0);
	caught(&ck, HMB_CF_MARKER_FIELDS, 192, 13, "marker with cpu 2");

	/* a record crossing the lap end instead of a wrap */
	ring_init(RS, 128);
	put(put(128, 12, 100, 0x0102, 0, 32), 13, 200, 0x0102, 0, 40);
	hdr->head = 192 + 72;	/* 72 bytes with 64 left */
	hmb_conform_init(&ck, RS, dict);
	consume(&ck, 0);
	caught(&ck, HMB_CF_WRAP_MARKER, 192, -1, "record across the lap end");

	/* 16 bytes left: implicit skip; head published inside it */
	ring_init(RS, 64);
	hdr->head = put(64, 1, 1, 0x0102, 0, 144);
	hmb_conform_init(&ck, RS, dict);
	consume(&ck, 0);
	ok(!hmb_conform_failures(&ck), "a record up to 16 bytes before the lap end passes");
	hdr->head = 248;
	consume(&ck, 0);
	caught(&ck, HMB_CF_WRAP_IMPLICIT, 240, -1, "head inside an implicit skip");

	ring_init(RS, 64);
	put(64, 1, 1, 0x0102, 0, 144);
	hdr->head = put(RS, 2, 3, 0x0102, 0, 8);
	hmb_conform_init(&ck, RS, dict);
	consume(&ck, 0);
	ok(!hmb_conform_failures(&ck) && ck.implicit_skips == 1,
	   "an implicit skip passes (%llu failures, %llu skips)",
	   (unsigned long long)hmb_conform_failures(&ck),
	   (unsigned long long)ck.implicit_skips);
}

static void t_seq_ts_dict(void)
{
	struct hmb_conform ck;

	ring_init(16384, 0);
	hdr->head = put(put(put(0, 5, 1, 0x0102, 0, 8), 6, 2, 0x0102, 0, 8),
			9, 3, 0x0102, 0, 8);
	hmb_conform_init(&ck, 16384, dict);
	consume(&ck, 0);
	caught(&ck, HMB_CF_SEQ_NEXT, 80, 9, "seq gap of 2, ring had room");

	ring_init(16384, 0);
	hdr->head = put(put(put(0, 5, 1, 0x0102, 0, 8), 6, 2, 0x0102, 0, 8),
			9, 3, 0x0102, 0, 8);
	hmb_conform_init(&ck, 16384, dict);
	consume(&ck, HMB_RING_FLAG_OVERFLOWED);
	ok(!hmb_conform_failures(&ck) && ck.lost == 2,
	   "the same gap with OVERFLOWED at the poll: 2 lost, no failure");

	/* OVERFLOWED at the poll that brought the record before the gap */
	ring_init(16384, 0);
	hdr->head = put(put(0, 5, 1, 0x0102, 0, 8), 6, 2, 0x0102, 0, 8);
	hmb_conform_init(&ck, 16384, dict);
	consume(&ck, HMB_RING_FLAG_OVERFLOWED);
	hdr->head = put(80, 9, 3, 0x0102, 0, 8);
	consume(&ck, 0);
	ok(!hmb_conform_failures(&ck) && ck.lost == 2,
	   "OVERFLOWED one poll before the gap: the drops are legal");
	hdr->head = put(120, 12, 4, 0x0102, 0, 8);
	consume(&ck, 0);
	caught(&ck, HMB_CF_SEQ_NEXT, 120, 12,
	       "a later gap with no full ring since the record before it");

	ring_init(RS, 0);
	hdr->head = put(put(put(0, 5, 1, 0x0102, 0, 8), 6, 2, 0x0102, 0, 8),
			6, 3, 0x0102, 0, 8);
	hmb_conform_init(&ck, RS, dict);
	consume(&ck, 0);
	caught(&ck, HMB_CF_SEQ_NEXT, 80, 6, "seq repeated");

	ring_init(RS, 0);
	hdr->head = put(put(put(0, 5, 10, 0x0102, 0, 8), 6, 20, 0x0102, 0, 8),
			7, 15, 0x0102, 0, 8);
	hmb_conform_init(&ck, RS, dict);
	consume(&ck, 0);
	caught(&ck, HMB_CF_TS_MONO, 80, 7, "firmware time back");

	ring_init(RS, 0);
	hdr->head = put(put(0, 5, 1, 0x0102, 0, 8), 6, 2, 0x0102, 0, 6);
	hmb_conform_init(&ck, RS, dict);
	consume(&ck, 0);
	caught(&ck, HMB_CF_DICT_LEN, 40, 6, "cmd_media_end with 6 of 8 payload bytes");

	ring_init(RS, 0);
	hdr->head = put(put(0, 5, 1, 0x0102, 0, 8), 6, 2, 0x7777, 0, 8);
	hmb_conform_init(&ck, RS, dict);
	consume(&ck, 0);
	caught(&ck, HMB_CF_DICT_OPCODE, 40, 6, "opcode not in the dictionary");

	ring_init(RS, 0);
	hdr->head = put(put(0, 5, 1, 0x0102, 0, 8), 6, 2, 0x7777, 0, 8);
	hmb_conform_init(&ck, RS, NULL);
	consume(&ck, 0);
	ok(!hmb_conform_failures(&ck) && !ck.res[HMB_CF_DICT_LEN].checked,
	   "without a dictionary the dictionary rules are not applied");
}

static void t_epoch(void)
{
	struct hmb_conform ck;

	ring_init(RS, 0);
	hdr->head = put(put(0, 5, 1, 0x0102, 0, 8), 6, 2, 0x0102, 0, 8);
	hmb_conform_init(&ck, RS, dict);
	consume(&ck, 0);
	ring_init(RS, 0);
	hdr->head = put(0, 9, 1, 0x0102, 0, 8);
	hmb_conform_epoch(&ck);
	consume(&ck, 0);
	ok(!hmb_conform_failures(&ck) && ck.lost == 2 &&
	   ck.res[HMB_CF_EPOCH_SEQ].checked == 1,
	   "a new epoch continuing the seqs (2 undrained) passes, 2 lost");

	ring_init(RS, 0);
	hdr->head = put(0, 2, 1, 0x0102, 0, 8);
	hmb_conform_epoch(&ck);
	consume(&ck, 0);
	caught(&ck, HMB_CF_EPOCH_SEQ, 0, 2, "a new epoch restarting the seqs");

	ring_init(RS, 64);
	hdr->head = put(64, 1, 1, 0x0102, 0, 8);
	hmb_conform_init(&ck, RS, dict);
	hmb_conform_epoch(&ck);
	consume(&ck, 0);
	caught(&ck, HMB_CF_EPOCH_START, 64, 1, "first record at cursor 64");
}

static void t_note(void)
{
	struct hmb_conform ck;
	const struct hmb_cf_rule_info *ri;
	int i, named = 1;

	hmb_conform_init(&ck, RS, NULL);
	hmb_conform_note(&ck, HMB_CF_HEAD, true, false, 0, 0, "x");
	hmb_conform_note(&ck, HMB_CF_HEAD, false, true, 3, 72, "first %d", 1);
	hmb_conform_note(&ck, HMB_CF_HEAD, false, true, 4, 80, "second");
	ok(ck.res[HMB_CF_HEAD].checked == 3 && ck.res[HMB_CF_HEAD].failed == 2 &&
	   ck.res[HMB_CF_HEAD].seq == 3 && !strcmp(ck.res[HMB_CF_HEAD].msg, "first 1"),
	   "note keeps the first violation and counts the rest");
	for (i = 0; i < HMB_CF_RULES; i++) {
		ri = hmb_cf_rule_info(i);
		if (!ri || !ri->id || !ri->section || !ri->what)
			named = 0;
	}
	ok(named && !hmb_cf_rule_info(HMB_CF_RULES) && !hmb_cf_rule_info(-1),
	   "every rule has an id, a section and a text");
}

int main(void)
{
	struct hmb_error err;

	if (hmb_dict_load(&dict, HMB_TOP "/share/hmb-events.dict", &err)) {
		printf("Bail out! %s\n", err.msg);
		return 1;
	}
	t_clean();
	t_record_fields();
	t_wrap();
	t_seq_ts_dict();
	t_epoch();
	t_note();
	hmb_dict_free(dict);
	return tap_done();
}
