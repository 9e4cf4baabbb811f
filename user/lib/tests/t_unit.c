// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Unit tests of every libhmbtrace function and its error paths, with the
 * concrete cursor numbers of the worked examples in docs/format.md.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <inttypes.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hmbtrace.h"
#include "tap.h"

static uint8_t *new_ring(uint32_t rs)
{
	uint8_t *m = aligned_alloc(64, HMB_RECORD_AREA_OFF + rs);

	memset(m, 0xee, HMB_RECORD_AREA_OFF + rs);	/* stale garbage */
	return m;
}

static struct hmb_record_hdr *rec_at(uint8_t *ring, uint64_t off)
{
	return (struct hmb_record_hdr *)(ring + HMB_RECORD_AREA_OFF + off);
}

static int emit_len(struct hmb_producer *p, uint16_t len, int mode)
{
	static uint8_t pl[HMB_RECORD_MAX_PAYLOAD];
	struct hmb_event ev = {
		.ts_ns = 1000 + p->next_seq, .opcode = 7, .cpu = 1,
		.payload_len = len, .payload = pl,
	};

	for (unsigned i = 0; i < len; i++)
		pl[i] = (uint8_t)(p->next_seq + i);
	return hmb_producer_emit(p, &ev, mode);
}

static void test_errors(void)
{
	ok(!strcmp(hmb_errname(HMB_E_REC_MAGIC), "HMB_E_REC_MAGIC"),
	   "hmb_errname names codes");
	ok(!strcmp(hmb_strerror(HMB_E_HEAD_BACKWARDS), "head moved backwards"),
	   "hmb_strerror describes codes");
	ok(!strcmp(hmb_errname(-999), "HMB_E_UNKNOWN") &&
	   !strcmp(hmb_strerror(-999), "unknown error"), "unknown code");
}

static void test_record_check(void)
{
	struct hmb_record_hdr h = { .magic = HMB_RECORD_MAGIC };
	struct hmb_error e;

	ok(hmb_record_check(&h, 0, &e) == 0 &&
	   hmb_record_kind(&h) == HMB_KIND_DATA, "plain record is data");
	h.flags = HMB_REC_FLAG_TRUNCATED;
	ok(hmb_record_kind(&h) == HMB_KIND_DATA, "truncated is data");
	h.flags = 0x80;
	ok(hmb_record_kind(&h) == HMB_KIND_IGNORED, "unknown bit is ignored");
	h.flags = 0x80 | HMB_REC_FLAG_WRAP_MARKER;
	ok(hmb_record_kind(&h) == HMB_KIND_MARKER, "marker bit wins");
	h.payload_len = 8;
	ok(hmb_record_check(&h, 96, &e) == HMB_E_MARKER_PAYLOAD &&
	   e.offset == 96, "marker with payload: %s", e.msg);
	h.flags = 0;
	h.payload_len = 4065;
	ok(hmb_record_check(&h, 8, &e) == HMB_E_REC_LEN, "len 4065: %s",
	   e.msg);
	h.payload_len = 4064;
	ok(hmb_record_check(&h, 8, &e) == 0, "len 4064 is fine");
	h.magic = 0x12345678;
	ok(hmb_record_check(&h, 40, &e) == HMB_E_REC_MAGIC &&
	   strstr(e.msg, "0x12345678") && strstr(e.msg, "40"),
	   "bad magic: %s", e.msg);
	ok(hmb_record_check(&h, 40, NULL) == HMB_E_REC_MAGIC,
	   "NULL err is allowed");
}

static void test_ring_hdr_check(void)
{
	struct hmb_ring_hdr h = {
		.magic = HMB_RING_MAGIC, .version = 1, .ring_size = 4096,
		.record_area_off = 0x40,
	};
	struct hmb_ring_hdr b;
	struct hmb_error e;

	ok(hmb_ring_hdr_check(&h, 64 + 4096, &e) == 0, "good header");
	ok(hmb_ring_hdr_check(&h, 64 + 4095, &e) == HMB_E_RING_SHORT,
	   "short: %s", e.msg);
	ok(hmb_ring_hdr_check(&h, 63, &e) == HMB_E_RING_SHORT,
	   "shorter than header");
	b = h; b.magic = 0;
	ok(hmb_ring_hdr_check(&b, 8192, &e) == HMB_E_RING_MAGIC && e.offset == 0,
	   "bad ring magic: %s", e.msg);
	b = h; b.version = 2;
	ok(hmb_ring_hdr_check(&b, 8192, &e) == HMB_E_RING_VERSION &&
	   e.offset == 4, "version 2: %s", e.msg);
	b = h; b.version = 0;
	ok(hmb_ring_hdr_check(&b, 8192, &e) == HMB_E_RING_VERSION, "version 0");
	b = h; b.ring_size = 3000;
	ok(hmb_ring_hdr_check(&b, 8192, &e) == HMB_E_RING_SIZE && e.offset == 8,
	   "ring_size 3000: %s", e.msg);
	b = h; b.ring_size = 32;
	ok(hmb_ring_hdr_check(&b, 8192, &e) == HMB_E_RING_SIZE, "ring_size 32");
	b = h; b.ring_size = 0;
	ok(hmb_ring_hdr_check(&b, 8192, &e) == HMB_E_RING_SIZE, "ring_size 0");
	b = h; b.record_area_off = 0x80;
	ok(hmb_ring_hdr_check(&b, 8192, &e) == HMB_E_RING_AREA_OFF &&
	   e.offset == 0x0c, "area off 0x80: %s", e.msg);
	b = h; b.reserved1 = 5; b.flags = 0x80;
	ok(hmb_ring_hdr_check(&b, 8192, &e) == 0,
	   "reserved fields and unknown ring flags are ignored on read");
}

/* Drain everything into @buf; return bytes or a negative code. */
static long drain(struct hmb_consumer *c, uint8_t *buf, size_t cap)
{
	struct hmb_error e;
	uint64_t avail;
	size_t len;
	int rc;

	rc = hmb_consumer_poll(c, &avail, &e);
	if (rc)
		return rc;
	rc = hmb_consumer_read(c, buf, cap, &len, &e);
	if (rc)
		return rc;
	return (long)len;
}

static void test_roundtrip(void)
{
	uint8_t *ring = new_ring(4096), buf[8192];
	struct hmb_producer p;
	struct hmb_consumer *c;
	struct hmb_buf_iter it;
	struct hmb_record r;
	struct hmb_error e;
	long n;
	int rc, i;

	ok(hmb_producer_init(&p, ring, 64 + 4096, 4096, 10, &e) == 0,
	   "producer init");
	ok(hmb_producer_init(&p, ring, 64 + 4095, 4096, 10, &e) ==
	   HMB_E_RING_SHORT, "producer init on a short buffer");
	ok(hmb_producer_init(&p, ring, 64 + 4096, 1000, 10, &e) ==
	   HMB_E_RING_SIZE, "producer init with a bad size");
	ok(hmb_producer_init(&p, ring + 4, 64 + 4000, 2048, 10, &e) ==
	   HMB_E_INVAL, "producer init on a misaligned ring");
	hmb_producer_init(&p, ring, 64 + 4096, 4096, 10, &e);
	ok(hmb_consumer_open(&c, ring + 4, 64 + 4000, NULL, NULL, &e) ==
	   HMB_E_INVAL && !c, "consumer open on a misaligned mapping");
	ok(hmb_consumer_open(&c, ring, 64 + 4096, hmb_publish_store, ring,
			     &e) == 0, "consumer open");
	for (i = 0; i < 5; i++)
		emit_len(&p, i * 5, HMB_EMIT_DROP);
	n = drain(c, buf, sizeof(buf));
	ok(n == 32 + 40 + 48 + 48 + 56, "read 5 records (%ld bytes)", n);
	hmb_buf_iter_init(&it, buf, n, 0);
	for (i = 0; (rc = hmb_buf_iter_next(&it, &r, &e)) == 1; i++) {
		if (r.hdr.seq != 10u + i || r.hdr.payload_len != i * 5 ||
		    r.kind != HMB_KIND_DATA || r.hdr.ts_ns != 1010u + i)
			break;
		if (i == 4 && r.payload[3] != (uint8_t)(14 + 3))
			break;
	}
	ok(rc == 0 && i == 5, "records are verbatim, in order");
	ok(((struct hmb_ring_hdr *)ring)->tail == 0, "tail not published yet");
	ok(hmb_consumer_commit(c, &e) == 0 &&
	   ((struct hmb_ring_hdr *)ring)->tail == (uint64_t)n &&
	   hmb_consumer_cursor(c) == (uint64_t)n &&
	   hmb_consumer_head(c) == (uint64_t)n &&
	   hmb_consumer_ring_size(c) == 4096, "commit publishes the cursor");
	ok(drain(c, buf, sizeof(buf)) == 0, "nothing more to read");
	ok(hmb_consumer_read(c, buf, 4095, (size_t *)&n, &e) == HMB_E_INVAL,
	   "read buffer under 4096 refused");
	/* padding is zero */
	ok(ring[64 + 32 + 32 + 5] == 0 && ring[64 + 32 + 32 + 7] == 0,
	   "padding written as zero");
	/* record-at-a-time */
	emit_len(&p, 3, HMB_EMIT_DROP);
	emit_len(&p, 0, HMB_EMIT_DROP);
	{
		uint64_t avail;

		hmb_consumer_poll(c, &avail, &e);
		ok(avail == 40 + 32, "poll reports unread bytes");
		ok(hmb_consumer_next(c, &r, &e) == 1 && r.hdr.seq == 15 &&
		   r.offset == (uint64_t)224 && r.raw_len == 40,
		   "consumer_next gives a record and its cursor");
		ok(hmb_consumer_next(c, &r, &e) == 1 && r.hdr.seq == 16 &&
		   hmb_consumer_next(c, &r, &e) == 0, "consumer_next to the end");
	}
	{
		struct hmb_consumer_counts cn;

		hmb_consumer_counts(c, &cn);
		ok(cn.records == 7 && cn.markers == 0 && cn.ignored == 0,
		   "consumer counts what it copied out (%" PRIu64 " records)",
		   cn.records);
	}
	hmb_consumer_close(c);
	free(ring);
}

static int fail_hook(void *ctx, uint64_t tail)
{
	(void)ctx;
	(void)tail;
	return -EPERM;
}

static void test_commit_hook_error(void)
{
	uint8_t *ring = new_ring(256), buf[4096];
	struct hmb_producer p;
	struct hmb_consumer *c;
	struct hmb_error e;

	hmb_producer_init(&p, ring, 64 + 256, 256, 0, &e);
	hmb_consumer_open(&c, ring, 64 + 256, fail_hook, NULL, &e);
	emit_len(&p, 8, HMB_EMIT_DROP);
	drain(c, buf, sizeof(buf));
	ok(hmb_consumer_commit(c, &e) == HMB_E_IO && e.sys_errno == EPERM,
	   "hook failure is HMB_E_IO: %s", e.msg);
	hmb_consumer_close(c);
	hmb_consumer_open(&c, ring, 64 + 256, NULL, NULL, &e);
	drain(c, buf, sizeof(buf));
	ok(hmb_consumer_commit(c, &e) == 0, "commit without a hook is a no-op");
	hmb_consumer_close(c);
	free(ring);
}

/* docs/format.md, worked example 1: a wrap marker. */
static void test_wrap_marker(void)
{
	uint8_t *ring = new_ring(256), buf[4096];
	struct hmb_producer p;
	struct hmb_consumer *c;
	struct hmb_record_hdr *m;
	struct hmb_buf_iter it;
	struct hmb_record r;
	struct hmb_error e;
	long n;

	hmb_producer_init(&p, ring, 64 + 256, 256, 100, &e);
	hmb_consumer_open(&c, ring, 64 + 256, hmb_publish_store, ring, &e);
	emit_len(&p, 168, HMB_EMIT_DROP);	/* 0..200 */
	ok(p.head == 200, "head 200 after a 200-byte record");
	drain(c, buf, sizeof(buf));
	hmb_consumer_commit(c, &e);		/* tail 200 */
	/* 56 bytes left; a 64-byte record does not fit: marker at 200. */
	ok(emit_len(&p, 32, HMB_EMIT_DROP) == HMB_EMITTED, "emit 64 bytes");
	m = rec_at(ring, 200);
	ok(m->magic == HMB_RECORD_MAGIC &&
	   m->flags == HMB_REC_FLAG_WRAP_MARKER && m->payload_len == 0 &&
	   m->seq == 101 && m->ts_ns == 1101, "marker at ring offset 200");
	ok(rec_at(ring, 0)->seq == 101, "record at offset 0 of the next lap");
	ok(p.head == 320 && ((struct hmb_ring_hdr *)ring)->head == 320 &&
	   p.markers == 1 && p.implicit_wraps == 0,
	   "head 200 + 56 skipped + 64 = 320");
	n = drain(c, buf, sizeof(buf));
	ok(n == 32 + 64, "consumer returns marker + record, not the skip");
	hmb_buf_iter_init(&it, buf, n, 0);
	ok(hmb_buf_iter_next(&it, &r, &e) == 1 && r.kind == HMB_KIND_MARKER &&
	   hmb_buf_iter_next(&it, &r, &e) == 1 && r.hdr.seq == 101 &&
	   r.kind == HMB_KIND_DATA && hmb_buf_iter_next(&it, &r, &e) == 0,
	   "marker then record 101");
	ok(hmb_consumer_cursor(c) == 320, "cursor 320");
	hmb_consumer_close(c);
	free(ring);
}

/* docs/format.md, worked example 2: fewer than 32 bytes left. */
static void test_wrap_implicit(void)
{
	uint8_t *ring = new_ring(256), buf[4096];
	struct hmb_producer p;
	struct hmb_consumer *c;
	struct hmb_error e;
	long n;

	hmb_producer_init(&p, ring, 64 + 256, 256, 0, &e);
	hmb_consumer_open(&c, ring, 64 + 256, hmb_publish_store, ring, &e);
	emit_len(&p, 200, HMB_EMIT_DROP);	/* 0..232 */
	drain(c, buf, sizeof(buf));
	hmb_consumer_commit(c, &e);
	ok(emit_len(&p, 0, HMB_EMIT_DROP) == HMB_EMITTED &&
	   p.head == 232 + 24 + 32 && p.implicit_wraps == 1 && p.markers == 0,
	   "24 bytes left: skipped without a marker, head 288");
	ok(rec_at(ring, 232)->magic != HMB_RECORD_MAGIC,
	   "nothing written in the 24-byte gap");
	n = drain(c, buf, sizeof(buf));
	ok(n == 32 && ((struct hmb_record_hdr *)buf)->seq == 1 &&
	   hmb_consumer_cursor(c) == 288, "consumer skips the gap: %ld", n);
	hmb_consumer_close(c);
	free(ring);
}

static void test_overflow_drop(void)
{
	uint8_t *ring = new_ring(256), buf[4096];
	volatile struct hmb_ring_hdr *h = (void *)ring;
	struct hmb_producer p;
	struct hmb_consumer *c;
	struct hmb_error e;
	int i, rc = 0;

	hmb_producer_init(&p, ring, 64 + 256, 256, 0, &e);
	hmb_consumer_open(&c, ring, 64 + 256, hmb_publish_store, ring, &e);
	for (i = 0; i < 4; i++)
		rc |= emit_len(&p, 32, HMB_EMIT_DROP);	/* 4 x 64 = full */
	ok(rc == HMB_EMITTED && p.head == 256, "ring filled exactly");
	ok(emit_len(&p, 0, HMB_EMIT_DROP) == HMB_EMIT_DROPPED &&
	   (h->flags & HMB_RING_FLAG_OVERFLOWED) && p.next_seq == 5 &&
	   p.dropped == 1 && p.head == 256,
	   "overflow drops, consumes the seq, sets OVERFLOWED");
	ok(emit_len(&p, 0, HMB_EMIT_TRY) == HMB_EMIT_FULL && p.next_seq == 5,
	   "TRY on a full ring consumes nothing");
	drain(c, buf, sizeof(buf));
	hmb_consumer_commit(c, &e);
	ok(emit_len(&p, 0, HMB_EMIT_DROP) == HMB_EMITTED &&
	   !(h->flags & HMB_RING_FLAG_OVERFLOWED) && rec_at(ring, 0)->seq == 5,
	   "next successful emit clears OVERFLOWED; seq 4 is missing");
	hmb_consumer_close(c);
	free(ring);
}

static void test_try_wrap_alone(void)
{
	uint8_t *ring = new_ring(4096), buf[8192];
	struct hmb_producer p;
	struct hmb_consumer *c;
	struct hmb_error e;
	long n;

	hmb_producer_init(&p, ring, 64 + 4096, 4096, 0, &e);
	hmb_consumer_open(&c, ring, 64 + 4096, hmb_publish_store, ring, &e);
	emit_len(&p, 4000 - 32, HMB_EMIT_TRY);	/* 0..4000 */
	drain(c, buf, sizeof(buf));
	hmb_consumer_commit(c, &e);		/* empty, tail 4000 */
	ok(emit_len(&p, 4064, HMB_EMIT_TRY) == HMB_EMIT_FULL &&
	   p.head == 4096 && p.markers == 1 && p.next_seq == 1 &&
	   ((struct hmb_ring_hdr *)ring)->head == 4096,
	   "4096-byte record at 4000: the wrap is published alone");
	n = drain(c, buf, sizeof(buf));
	hmb_consumer_commit(c, &e);
	ok(n == 32, "consumer takes the marker alone");
	ok(emit_len(&p, 4064, HMB_EMIT_TRY) == HMB_EMITTED && p.head == 8192,
	   "then the 4096-byte record fills the whole ring");
	n = drain(c, buf, sizeof(buf));
	ok(n == 4096 && ((struct hmb_record_hdr *)buf)->seq == 1,
	   "and is read whole");
	hmb_consumer_close(c);
	free(ring);

	ring = new_ring(64);
	hmb_producer_init(&p, ring, 128, 64, 0, &e);
	ok(emit_len(&p, 40, HMB_EMIT_TRY) == HMB_E_INVAL && p.next_seq == 0,
	   "record larger than the ring: HMB_E_INVAL in TRY mode");
	ok(emit_len(&p, 40, HMB_EMIT_DROP) == HMB_EMIT_DROPPED &&
	   p.next_seq == 1 && p.dropped == 1, "and dropped in DROP mode");
	ok(emit_len(&p, 32, HMB_EMIT_DROP) == HMB_EMITTED && p.head == 64,
	   "a 64-byte record fills a 64-byte ring");
	{
		struct hmb_event ev = { .payload_len = 4065 };

		ok(hmb_producer_emit(&p, &ev, HMB_EMIT_DROP) == HMB_E_INVAL,
		   "payload_len 4065 refused");
		ev.payload_len = 4;
		ok(hmb_producer_emit(&p, &ev, HMB_EMIT_DROP) == HMB_E_INVAL,
		   "payload without a pointer refused");
		ev.payload_len = 0;
		ok(hmb_producer_emit(&p, &ev, 7) == HMB_E_INVAL,
		   "unknown mode refused");
	}
	free(ring);
}

static void test_defer(void)
{
	uint8_t *ring = new_ring(256);
	volatile struct hmb_ring_hdr *h = (void *)ring;
	struct hmb_producer p;
	struct hmb_error e;

	hmb_producer_init(&p, ring, 64 + 256, 256, 0, &e);
	emit_len(&p, 0, HMB_EMIT_DROP | HMB_EMIT_DEFER);
	emit_len(&p, 0, HMB_EMIT_DROP | HMB_EMIT_DEFER);
	ok(h->head == 0 && p.head == 64, "DEFER does not publish");
	hmb_producer_publish(&p);
	ok(h->head == 64, "publish stores the local head");
	hmb_producer_set_flags(&p, HMB_RING_FLAG_FROZEN, 0);
	ok(h->flags == HMB_RING_FLAG_FROZEN, "set_flags sets");
	hmb_producer_set_flags(&p, 0, HMB_RING_FLAG_FROZEN);
	ok(h->flags == 0, "set_flags clears");
	free(ring);
}

static void test_reinit(void)
{
	uint8_t *ring = new_ring(256), buf[4096];
	struct hmb_producer p;
	struct hmb_consumer *c;
	struct hmb_error e;
	uint64_t avail;
	int i;

	hmb_producer_init(&p, ring, 64 + 256, 256, 0, &e);
	hmb_consumer_open(&c, ring, 64 + 256, hmb_publish_store, ring, &e);
	for (i = 0; i < 10; i++) {
		emit_len(&p, 24, HMB_EMIT_DROP);
		drain(c, buf, sizeof(buf));
		hmb_consumer_commit(c, &e);
	}
	ok(hmb_consumer_reinit(c, &e) == 0, "no reinit on a running ring");
	hmb_producer_set_flags(&p, HMB_RING_FLAG_FROZEN, 0);
	ok(hmb_consumer_reinit(c, &e) == 0 &&
	   (hmb_consumer_flags(c) & HMB_RING_FLAG_FROZEN), "frozen: wait");
	hmb_producer_set_flags(&p, 0, HMB_RING_FLAG_FROZEN);
	ok(hmb_consumer_reinit(c, &e) == 0 && hmb_consumer_cursor(c) == 624 &&
	   p.head == 624,
	   "thawed without rewrite: carry on");
	/* a real re-init, seen half-way (FROZEN set, head reset) */
	hmb_producer_set_flags(&p, HMB_RING_FLAG_FROZEN, 0);
	((struct hmb_ring_hdr *)ring)->head = 0;
	ok(hmb_consumer_poll(c, &avail, &e) == 0 && avail == 0,
	   "poll on a frozen ring with head reset reports nothing");
	{
		size_t l = 1;

		ok(hmb_consumer_read(c, buf, sizeof(buf), &l, &e) == 0 &&
		   l == 0, "and read returns nothing of the old epoch");
	}
	hmb_producer_reinit(&p, 1000);
	emit_len(&p, 0, HMB_EMIT_DROP);
	ok(hmb_consumer_reinit(c, &e) == 1 && hmb_consumer_cursor(c) == 0 &&
	   hmb_consumer_head(c) == 32, "reinit restarts from the new tail");
	ok(drain(c, buf, sizeof(buf)) == 32 &&
	   ((struct hmb_record_hdr *)buf)->seq == 1000, "new epoch read");
	hmb_consumer_close(c);
	/* a re-init never seen as FROZEN is a backwards head */
	hmb_consumer_open(&c, ring, 64 + 256, hmb_publish_store, ring, &e);
	emit_len(&p, 0, HMB_EMIT_DROP);
	drain(c, buf, sizeof(buf));
	hmb_producer_reinit(&p, 0);
	ok(hmb_consumer_poll(c, &avail, &e) == HMB_E_HEAD_BACKWARDS,
	   "unseen re-init with tail 0 published: %s", e.msg);
	hmb_consumer_close(c);
	/*
	 * A re-init whose whole FROZEN window fell between two polls, after
	 * the consumer had published a tail, with the new epoch already past
	 * the old head: the rewritten tail gives it away.
	 */
	hmb_consumer_open(&c, ring, 64 + 256, hmb_publish_store, ring, &e);
	for (i = 0; i < 3; i++)
		emit_len(&p, 24, HMB_EMIT_DROP);
	drain(c, buf, sizeof(buf));
	hmb_consumer_commit(c, &e);
	ok(hmb_consumer_cursor(c) == 168, "consumer published 168");
	hmb_producer_reinit(&p, 5000);
	for (i = 0; i < 4; i++)
		emit_len(&p, 24, HMB_EMIT_DROP);
	ok(p.head == 224 && hmb_consumer_poll(c, &avail, &e) == 0 &&
	   avail == 0, "rewritten tail: nothing of the old epoch is read");
	ok(hmb_consumer_reinit(c, &e) == 1 && hmb_consumer_cursor(c) == 0,
	   "missed re-init recognised by the rewritten tail");
	ok(hmb_consumer_poll(c, &avail, &e) == 0 && avail == 224 &&
	   drain(c, buf, sizeof(buf)) == 224 &&
	   ((struct hmb_record_hdr *)buf)->seq == 5000,
	   "new epoch read from its start");
	hmb_consumer_close(c);
	free(ring);
}

/*
 * The character device's SET_TAIL as far as epochs go: after the producer
 * side rewrote the header (gen bumped), a tail other than the header's own
 * is ESTALE; the header's own tail acknowledges the new epoch.
 */
struct fake_dev {
	uint8_t *ring;
	unsigned gen, seen_gen;
	unsigned calls;
	uint64_t last[8];
};

static int dev_hook(void *ctx, uint64_t tail)
{
	struct fake_dev *d = ctx;
	struct hmb_ring_hdr *h = (struct hmb_ring_hdr *)d->ring;

	d->last[d->calls++ % 8] = tail;
	if (d->gen != d->seen_gen) {
		if (tail != h->tail)
			return -ESTALE;
		d->seen_gen = d->gen;
		return 0;
	}
	if (tail < h->tail || tail > h->head)
		return -EINVAL;
	return hmb_publish_store(d->ring, tail);
}

static void test_estale(void)
{
	uint8_t *ring = new_ring(256), buf[4096];
	struct fake_dev d = { .ring = ring };
	struct hmb_producer p;
	struct hmb_consumer *c;
	struct hmb_error e;
	uint64_t avail;
	int i;

	hmb_producer_init(&p, ring, 64 + 256, 256, 0, &e);
	ok(hmb_consumer_open(&c, ring, 64 + 256, dev_hook, &d, &e) == 0 &&
	   d.calls == 0, "open publishes nothing");
	emit_len(&p, 24, HMB_EMIT_DROP);
	drain(c, buf, sizeof(buf));
	ok(hmb_consumer_commit(c, &e) == 0 && d.calls == 2 && d.last[0] == 0 &&
	   d.last[1] == 56 && ((struct hmb_ring_hdr *)ring)->tail == 56,
	   "first commit: the tail found at open, then the cursor");
	emit_len(&p, 24, HMB_EMIT_DROP);
	drain(c, buf, sizeof(buf));
	ok(hmb_consumer_commit(c, &e) == 0 && d.calls == 3 && d.last[2] == 112,
	   "later commits: the cursor only");

	/* a batch read, then the ring re-initialised before its tail went out */
	emit_len(&p, 24, HMB_EMIT_DROP);
	drain(c, buf, sizeof(buf));
	hmb_producer_set_flags(&p, HMB_RING_FLAG_FROZEN, 0);
	hmb_producer_reinit(&p, p.next_seq + 2);
	d.gen++;
	for (i = 0; i < 2; i++)
		emit_len(&p, 24, HMB_EMIT_DROP);
	ok(hmb_consumer_commit(c, &e) == 0 && d.calls == 4 &&
	   ((struct hmb_ring_hdr *)ring)->tail == 0,
	   "a tail of the old epoch refused with ESTALE: not an error, not stored");
	ok(hmb_consumer_poll(c, &avail, &e) == 0 && avail == 0,
	   "stale: nothing more of the old epoch is read");
	ok(hmb_consumer_reinit(c, &e) == 1 && hmb_consumer_cursor(c) == 0,
	   "stale: the new epoch starts at the header's tail");
	ok(drain(c, buf, sizeof(buf)) == 112 &&
	   ((struct hmb_record_hdr *)buf)->seq == 5, "new epoch read (seq 5)");
	ok(hmb_consumer_commit(c, &e) == 0 && d.calls == 6 && d.last[4] == 0 &&
	   d.last[5] == 112 && ((struct hmb_ring_hdr *)ring)->tail == 112,
	   "new epoch acknowledged with its tail 0, then 112 published");

	/* re-initialised while FROZEN was seen: recognised, then acknowledged */
	hmb_producer_set_flags(&p, HMB_RING_FLAG_FROZEN, 0);
	ok(hmb_consumer_reinit(c, &e) == 0, "frozen: wait");
	hmb_producer_reinit(&p, p.next_seq);
	d.gen++;
	emit_len(&p, 24, HMB_EMIT_DROP);
	ok(hmb_consumer_reinit(c, &e) == 1 && drain(c, buf, sizeof(buf)) == 56,
	   "re-initialisation recognised, new epoch read");
	ok(hmb_consumer_commit(c, &e) == 0 && d.calls == 8 && d.last[6] == 0 &&
	   d.last[7] == 56 && ((struct hmb_ring_hdr *)ring)->tail == 56,
	   "acknowledged, then published");
	hmb_consumer_close(c);
	free(ring);
}

static void gap_cb(void *ctx, const struct hmb_gap *g)
{
	*(struct hmb_gap *)ctx = *g;
}

static struct hmb_record mk(uint32_t seq, uint8_t flags, uint64_t ts)
{
	struct hmb_record r;

	memset(&r, 0, sizeof(r));
	r.hdr.magic = HMB_RECORD_MAGIC;
	r.hdr.seq = seq;
	r.hdr.flags = flags;
	r.hdr.ts_ns = ts;
	r.hdr.opcode = 3;
	r.hdr.payload_len = flags & HMB_REC_FLAG_WRAP_MARKER ? 0 : 8;
	r.raw_len = HMB_RECORD_SIZE(r.hdr.payload_len);
	r.kind = hmb_record_kind(&r.hdr);
	r.offset = seq * 100;
	return r;
}

static void test_acct(void)
{
	static struct hmb_acct a;
	struct hmb_gap g = { 0 };
	struct hmb_record r;

	hmb_acct_init(&a, 16, gap_cb, &g);
	r = mk(0xfffffffe, 0, 10);
	ok(hmb_acct_add(&a, &r) == HMB_ACCT_NEW, "first record");
	r = mk(0xffffffff, HMB_REC_FLAG_TRUNCATED, 11);
	ok(hmb_acct_add(&a, &r) == HMB_ACCT_NEW && a.truncated == 1,
	   "truncated counted");
	r = mk(0, HMB_REC_FLAG_WRAP_MARKER, 12);
	ok(hmb_acct_add(&a, &r) == HMB_ACCT_MARKER && a.wrap_markers == 1,
	   "marker counted, no seq");
	r = mk(0, 0, 12);
	ok(hmb_acct_add(&a, &r) == HMB_ACCT_NEW && a.lost == 0,
	   "seq wraps 2^32 in order");
	r = mk(4, 0, 20);
	ok(hmb_acct_add(&a, &r) == HMB_ACCT_NEW && a.lost == 3 && a.gaps == 1 &&
	   g.first_seq == 1 && g.last_seq == 3 && g.count == 3 &&
	   g.ts_before == 12 && g.ts_after == 20 && g.offset == 400,
	   "gap of 3 located");
	r = mk(5, 0x40, 21);
	ok(hmb_acct_add(&a, &r) == HMB_ACCT_IGNORED && a.ignored == 1,
	   "unknown flag ignored");
	r = mk(7, 0, 22);
	ok(hmb_acct_add(&a, &r) == HMB_ACCT_NEW && a.lost == 4,
	   "ignored record's seq counted as seen (gap of 1 only)");
	r = mk(3, 0, 23);
	ok(hmb_acct_add(&a, &r) == HMB_ACCT_DUPLICATE && a.duplicates == 1 &&
	   a.records == 5, "small step back: duplicate");
	r = mk(7, 0, 23);
	ok(hmb_acct_add(&a, &r) == HMB_ACCT_DUPLICATE, "same seq: duplicate");
	r = mk(1000000, 0, 30);
	ok(hmb_acct_add(&a, &r) == HMB_ACCT_NEW && a.lost == 4 + 999992,
	   "big step forward: a gap");
	r = mk(5, 0, 40);
	ok(hmb_acct_add(&a, &r) == HMB_ACCT_NEW && a.resets == 1 &&
	   a.lost == 4 + 999992, "big step back: a reset");
	hmb_acct_new_epoch(&a);
	r = mk(100, 0, 50);
	ok(hmb_acct_add(&a, &r) == HMB_ACCT_NEW && a.resets == 1 &&
	   a.gaps == 4 && a.lost == 4 + 999992 + 94 && g.first_seq == 6 &&
	   g.last_seq == 99 && g.ts_before == 40 && g.ts_after == 50,
	   "new epoch, seq continued with a gap: 94 lost with the old epoch");
	hmb_acct_new_epoch(&a);
	r = mk(101, 0, 51);
	ok(hmb_acct_add(&a, &r) == HMB_ACCT_NEW && a.gaps == 4 &&
	   a.lost == 4 + 999992 + 94, "new epoch, seq continued in order");
	hmb_acct_new_epoch(&a);
	r = mk(99, 0, 52);
	ok(hmb_acct_add(&a, &r) == HMB_ACCT_NEW && a.duplicates == 2 &&
	   a.resets == 1 && a.lost == 4 + 999992 + 94,
	   "new epoch, seq a little behind: a restart, counts nothing");
	hmb_acct_new_epoch(&a);
	r = mk(100 + 0x80000000U, 0, 53);
	ok(hmb_acct_add(&a, &r) == HMB_ACCT_NEW && a.gaps == 4 &&
	   a.resets == 1 && a.lost == 4 + 999992 + 94,
	   "new epoch, seq 2^31 ahead: a restart, counts nothing");
	r = mk(100 + 0x80000000U, 0, 54);
	ok(hmb_acct_add(&a, &r) == HMB_ACCT_DUPLICATE && a.duplicates == 3,
	   "inside the new epoch, duplicates count again");
	ok(a.records == 11 && a.first_ts_ns == 10 && a.last_ts_ns == 53 &&
	   a.opcodes[3] == 11 && a.payload_bytes == 88 &&
	   a.bytes == 15 * 40 + 32, "totals: records %llu bytes %llu",
	   (unsigned long long)a.records, (unsigned long long)a.bytes);
	hmb_acct_init(&a, 0, NULL, NULL);
	ok(a.dup_window == 131072, "default dup window");
}

static void test_buf_iter(void)
{
	uint8_t buf[256] = { 0 };
	struct hmb_record_hdr h = { .magic = HMB_RECORD_MAGIC,
				    .payload_len = 5 };
	struct hmb_buf_iter it;
	struct hmb_record r;
	struct hmb_error e;

	memcpy(buf, &h, 32);
	memcpy(buf + 40, &h, 32);
	hmb_buf_iter_init(&it, buf, 80, 1000);
	ok(hmb_buf_iter_next(&it, &r, &e) == 1 && r.offset == 1000 &&
	   r.raw_len == 40, "first record");
	ok(hmb_buf_iter_next(&it, &r, &e) == 1 &&
	   hmb_buf_iter_next(&it, &r, &e) == 0, "second, then end");
	hmb_buf_iter_init(&it, buf, 60, 0);
	hmb_buf_iter_next(&it, &r, &e);
	ok(hmb_buf_iter_next(&it, &r, &e) == HMB_E_TRUNC_HDR && e.offset == 40,
	   "truncated header: %s", e.msg);
	hmb_buf_iter_init(&it, buf, 76, 0);
	hmb_buf_iter_next(&it, &r, &e);
	ok(hmb_buf_iter_next(&it, &r, &e) == HMB_E_TRUNC_PAYLOAD &&
	   e.offset == 40, "truncated payload: %s", e.msg);
	buf[40] = 'X';
	hmb_buf_iter_init(&it, buf, 80, 0);
	hmb_buf_iter_next(&it, &r, &e);
	ok(hmb_buf_iter_next(&it, &r, &e) == HMB_E_REC_MAGIC && e.offset == 40,
	   "bad magic: %s", e.msg);
	hmb_buf_iter_init(&it, NULL, 0, 0);
	ok(hmb_buf_iter_next(&it, &r, &e) == 0, "empty buffer");
}

/* Read @path whole into @buf (NUL-terminated); bytes read or -1. */
static ssize_t read_text(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n >= 0)
		buf[n] = 0;
	return n;
}

/*
 * Sidecar updates keep every line (epochs, clock anchors), restarts are
 * recorded, a symlink planted at "<path>.tmp" is never written through,
 * files are created 0600 (or the mode asked for) whatever the umask, and
 * a sidecar that cannot be parsed is refused and left as it was.
 */
static void test_sidecar_update(const char *dir)
{
	struct hmb_sidecar sc = {
		.abi_version = 1, .ring_size = 65536, .realtime_ns = 11,
		.monotonic_ns = 22, .boottime_ns = 33, .source = "/dev/shm/r",
	}, rd;
	struct hmb_sidecar_restart rs = {
		.dump_offset = 8192, .tail = 18446744073709551608ULL,
		.ring_size = 65536, .realtime_ns = 44, .monotonic_ns = 55,
		.boottime_ns = 66, .source = "/dev/shm/r two",
	};
	char path[256], tmp[300], victim[300], before[4096], after[4096];
	uint64_t ep[4];
	struct hmb_error e;
	struct stat st;
	mode_t um;
	size_t n;
	FILE *f;

	snprintf(path, sizeof(path), "%s/u.bin.meta", dir);
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	snprintf(victim, sizeof(victim), "%s/victim", dir);
	um = umask(0);
	ok(hmb_sidecar_create(path, &sc, 0, 0, &e) == 0 && !stat(path, &st) &&
	   (st.st_mode & 07777) == 0600, "created 0600 under umask 0 (%o)",
	   st.st_mode & 07777);
	umask(077);
	ok(hmb_sidecar_create(path, &sc, 0, 0640, &e) == 0 && !stat(path, &st) &&
	   (st.st_mode & 07777) == 0640, "created 0640 as asked under umask 077");
	umask(um);
	ok(hmb_sidecar_append_epoch(path, 4096, &e) == 0, "epoch appended");
	ok(hmb_sidecar_append_restart(path, &rs, &e) == 0, "restart appended: %s",
	   e.msg);
	ok(hmb_sidecar_read(path, &rd, &e) == 0 && rd.n_epochs == 1 &&
	   rd.n_restarts == 1 && rd.realtime_ns == 11 && rd.monotonic_ns == 22 &&
	   !strcmp(rd.source, "/dev/shm/r"),
	   "restart keeps epoch and clock anchors (%u epochs, %u restarts)",
	   rd.n_epochs, rd.n_restarts);
	ok(!stat(path, &st) && (st.st_mode & 07777) == 0640,
	   "append keeps the sidecar's mode");
	ok(hmb_sidecar_append_epoch(path, 12288, &e) == 0 &&
	   hmb_sidecar_epochs(path, ep, 4, &n, &e) == 0 && n == 2 &&
	   ep[0] == 4096 && ep[1] == 12288, "epochs after a restart kept");
	/* A symlink planted at .tmp: the victim must stay untouched. */
	f = fopen(victim, "w");
	fputs("precious\n", f);
	fclose(f);
	ok(!symlink(victim, tmp), "symlink planted at %s", tmp);
	ok(hmb_sidecar_append_epoch(path, 16384, &e) == 0, "append with a planted symlink: %s",
	   e.msg);
	ok(read_text(victim, after, sizeof(after)) > 0 &&
	   !strcmp(after, "precious\n"), "symlink target not written");
	ok(lstat(tmp, &st) && errno == ENOENT, "no .tmp left behind");
	/* The dump's sidecar itself a symlink: refused, nothing written. */
	unlink(path);
	ok(!symlink(victim, path), "sidecar replaced by a symlink");
	ok(hmb_sidecar_append_epoch(path, 1, &e) == HMB_E_IO &&
	   e.sys_errno == ELOOP, "append through a symlinked sidecar refused: %s",
	   e.msg);
	ok(read_text(victim, after, sizeof(after)) > 0 &&
	   !strcmp(after, "precious\n"), "its target not written");
	unlink(path);
	/*
	 * A FIFO there: refused at once, not opened for a writer that never
	 * comes (a hang is the failure; alarm() ends it).
	 */
	ok(!mkfifo(path, 0600), "sidecar replaced by a FIFO");
	alarm(30);
	ok(hmb_sidecar_read(path, &rd, &e) == HMB_E_SIDECAR &&
	   strstr(e.msg, "not a regular file"), "reading a FIFO refused: %s",
	   e.msg);
	ok(hmb_sidecar_append_epoch(path, 1, &e) == HMB_E_SIDECAR,
	   "appending to a FIFO refused: %s", e.msg);
	alarm(0);
	ok(lstat(path, &st) == 0 && S_ISFIFO(st.st_mode), "the FIFO left there");
	unlink(path);
	/* Malformed: refused, left exactly as it was. */
	f = fopen(path, "w");
	fputs("hmb_trace_sidecar=1\nabi_version=1\nepoch=12x\n", f);
	fclose(f);
	read_text(path, before, sizeof(before));
	ok(hmb_sidecar_append_epoch(path, 8, &e) == HMB_E_SIDECAR,
	   "append to a malformed sidecar refused: %s", e.msg);
	ok(read_text(path, after, sizeof(after)) > 0 && !strcmp(before, after),
	   "malformed sidecar left as it was");
	f = fopen(path, "w");
	fputs("hmb_trace_sidecar=1\nabi_version=1\nrestart=8 tail=x\n", f);
	fclose(f);
	ok(hmb_sidecar_read(path, &rd, &e) == HMB_E_SIDECAR && e.offset == 3,
	   "malformed restart line: %s", e.msg);
	f = fopen(path, "w");
	fputs("hmb_trace_sidecar=1\nabi_version=1\nrestart=8 future=1 source=a b\n", f);
	fclose(f);
	ok(hmb_sidecar_read(path, &rd, &e) == 0 && rd.n_restarts == 1,
	   "unknown restart fields ignored");
	unlink(path);
	unlink(victim);
}

static void test_sidecar(void)
{
	char dir[] = "/tmp/hmbtest.XXXXXX", path[256];
	struct hmb_sidecar sc = {
		.abi_version = 1, .ring_size = 4096, .realtime_ns = 1,
		.monotonic_ns = 2, .boottime_ns = 18446744073709551615ULL,
	}, rd;
	uint64_t ep[8];
	size_t n;
	struct hmb_error e;
	FILE *f;

	if (!mkdtemp(dir)) {
		ok(0, "mkdtemp");
		return;
	}
	snprintf(path, sizeof(path), "%s/t.bin.meta", dir);
	strcpy(sc.source, "/dev/nvme-hmb-trace0");
	ok(hmb_sidecar_write(path, &sc, &e) == 0, "sidecar write");
	ok(hmb_sidecar_read(path, &rd, &e) == 0 && rd.abi_version == 1 &&
	   rd.ring_size == 4096 && rd.realtime_ns == 1 &&
	   rd.monotonic_ns == 2 && rd.boottime_ns == sc.boottime_ns &&
	   !strcmp(rd.source, sc.source) && rd.n_epochs == 0,
	   "sidecar round trip");
	ok(hmb_sidecar_append_epoch(path, 4096, &e) == 0 &&
	   hmb_sidecar_append_epoch(path, 81920, &e) == 0, "append epochs");
	ok(hmb_sidecar_epochs(path, ep, 8, &n, &e) == 0 && n == 2 &&
	   ep[0] == 4096 && ep[1] == 81920, "read epochs back");
	ok(hmb_sidecar_epochs(path, ep, 1, &n, &e) == HMB_E_SIDECAR,
	   "epoch list over its bound: %s", e.msg);
	ok(hmb_sidecar_read(path, &rd, &e) == 0 && rd.n_epochs == 2,
	   "read counts epochs");
	f = fopen(path, "a");
	fputs("future_key=whatever\n", f);
	fclose(f);
	ok(hmb_sidecar_read(path, &rd, &e) == 0, "unknown keys ignored");
	f = fopen(path, "a");
	fputs("abi_version=2\n", f);
	fclose(f);
	ok(hmb_sidecar_read(path, &rd, &e) == HMB_E_SIDECAR_VERSION,
	   "abi_version 2 refused: %s", e.msg);
	f = fopen(path, "w");
	fputs("abi_version=1\n", f);
	fclose(f);
	ok(hmb_sidecar_read(path, &rd, &e) == HMB_E_SIDECAR,
	   "missing first line: %s", e.msg);
	f = fopen(path, "w");
	fputs("hmb_trace_sidecar=1\nabi_version=1\nring_size=12x\n", f);
	fclose(f);
	ok(hmb_sidecar_read(path, &rd, &e) == HMB_E_SIDECAR && e.offset == 3,
	   "bad number: %s", e.msg);
	f = fopen(path, "w");
	fputs("hmb_trace_sidecar=1\nring_size=12\n", f);
	fclose(f);
	ok(hmb_sidecar_read(path, &rd, &e) == HMB_E_SIDECAR,
	   "no abi_version: %s", e.msg);
	f = fopen(path, "w");
	fputs("hmb_trace_sidecar=2\nabi_version=1\n", f);
	fclose(f);
	ok(hmb_sidecar_read(path, &rd, &e) == HMB_E_SIDECAR_VERSION,
	   "sidecar format 2 refused");
	unlink(path);
	ok(hmb_sidecar_read(path, &rd, &e) == HMB_E_SIDECAR && e.sys_errno,
	   "missing sidecar: %s", e.msg);
	strcpy(sc.source, "a\nb");
	ok(hmb_sidecar_write(path, &sc, &e) == HMB_E_INVAL,
	   "newline in source refused");
	test_sidecar_update(dir);
	rmdir(dir);
}

/* Reads through a minimal 4096-byte buffer equal one big read. */
static void test_small_buffer(void)
{
	const uint32_t rs = 65536;
	uint8_t *ring = new_ring(rs), *big = malloc(rs), small[4096];
	struct hmb_consumer *c1, *c2;
	struct hmb_producer p;
	struct hmb_error e;
	size_t n1 = 0, n2 = 0, l;
	uint64_t avail;
	unsigned i, reads = 0;
	int rc = 0;

	hmb_producer_init(&p, ring, 64 + rs, rs, 0, &e);
	hmb_consumer_open(&c1, ring, 64 + rs, NULL, NULL, &e);
	hmb_consumer_open(&c2, ring, 64 + rs, NULL, NULL, &e);
	for (i = 0; emit_len(&p, (i * 389) % 4065, HMB_EMIT_DROP) ==
		    HMB_EMITTED; i++)
		;
	hmb_consumer_poll(c1, &avail, &e);
	rc |= hmb_consumer_read(c1, big, rs, &n1, &e);
	hmb_consumer_poll(c2, &avail, &e);
	do {
		rc |= hmb_consumer_read(c2, small, sizeof(small), &l, &e);
		if (n2 + l > rs || memcmp(big + n2, small, l))
			rc = -99;
		n2 += l;
		reads++;
	} while (l && rc == 0);
	ok(rc == 0 && n1 == n2 && n1 > 60000 &&
	   hmb_consumer_cursor(c1) == hmb_consumer_cursor(c2),
	   "%u reads of 4096 bytes equal one read of %zu bytes", reads, n1);
	hmb_consumer_close(c1);
	hmb_consumer_close(c2);
	free(big);
	free(ring);
}

/*
 * The dump writer (hmb-trace-agent -w): records appended one at a time read
 * back as the same stream, a seq the writer never got shows as a loss, a
 * bad record is refused with nothing written, and the sidecar is there
 * from the start and gets the closing lines.
 */
static void test_dump_writer(void)
{
	char dir[] = "/tmp/hmbtest.XXXXXX", path[256], meta[300];
	struct hmb_sidecar sc = {
		.abi_version = 1, .ring_size = 65536, .realtime_ns = 5,
		.monotonic_ns = 6, .boottime_ns = 7,
		.source = "/dev/nvme-hmb-trace0",
	}, rd;
	static const uint32_t seqs[] = { 10, 11, 13, 14 };
	struct hmb_record_hdr h = { .magic = HMB_RECORD_MAGIC, .opcode = 0x21 };
	struct hmb_dump_writer *w;
	struct hmb_reader *r;
	struct hmb_record rec;
	struct hmb_acct *a;
	struct hmb_error e = { 0 };
	uint8_t pl[13];
	char buf[1024];
	int fd, rc, bad_ok;
	FILE *f;
	size_t n;

	if (!mkdtemp(dir)) {
		ok(0, "mkdtemp");
		return;
	}
	snprintf(path, sizeof(path), "%s/w.bin", dir);
	snprintf(meta, sizeof(meta), "%s.meta", path);
	memset(pl, 0xab, sizeof(pl));
	ok(hmb_dump_writer_open(&w, path, &sc, 0, &e) == 0, "writer open: %s",
	   e.msg);
	ok(hmb_sidecar_read(meta, &rd, &e) == 0 && rd.ring_size == 65536 &&
	   !strcmp(rd.source, sc.source), "sidecar written at open");
	for (size_t i = 0; i < 4; i++) {
		h.seq = seqs[i];
		h.ts_ns = 1000 * (i + 1);
		h.payload_len = (uint16_t)(i * 4 + 1);
		ok(hmb_dump_writer_add(w, &h, pl, &e) == 0, "add seq %u",
		   seqs[i]);
	}
	h.magic = 0x12345678;
	bad_ok = hmb_dump_writer_add(w, &h, pl, &e) == HMB_E_REC_MAGIC;
	ok(bad_ok && strstr(e.msg, path), "bad magic refused: %s", e.msg);
	h.magic = HMB_RECORD_MAGIC;
	h.payload_len = 4065;
	ok(hmb_dump_writer_add(w, &h, pl, &e) == HMB_E_REC_LEN,
	   "payload_len 4065 refused");
	ok(hmb_dump_writer_records(w) == 4 &&
	   hmb_dump_writer_size(w) == 32 * 4 + 8 + 8 + 16 + 16,
	   "4 records, %" PRIu64 " bytes", hmb_dump_writer_size(w));
	ok(hmb_dump_writer_close(w, "consumer_lost=1\n", &e) == 0,
	   "close: %s", e.msg);
	a = calloc(1, sizeof(*a));
	fd = open(path, O_RDONLY);
	ok(a && fd >= 0 && hmb_reader_open(&r, fd, path, &e) == 0,
	   "read it back");
	if (!a || fd < 0) {
		free(a);
		return;
	}
	hmb_acct_init(a, 0, NULL, NULL);
	n = 0;
	while ((rc = hmb_reader_next(r, &rec, &e)) == 1) {
		hmb_acct_add(a, &rec);
		if (rec.hdr.seq == seqs[n] && rec.hdr.payload_len == n * 4 + 1 &&
		    !memcmp(rec.payload, pl, rec.hdr.payload_len))
			n++;
	}
	ok(rc == 0 && n == 4 && a->records == 4 && a->lost == 1 &&
	   a->gaps == 1, "stream: %zu of 4 records as written, lost %" PRIu64,
	   n, a->lost);
	hmb_reader_close(r);
	close(fd);
	free(a);
	f = fopen(meta, "r");
	n = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;
	buf[n] = 0;
	if (f)
		fclose(f);
	ok(strstr(buf, "\nconsumer_lost=1\n") &&
	   hmb_sidecar_read(meta, &rd, &e) == 0, "closing lines appended");
	ok(hmb_dump_writer_open(&w, dir, &sc, 0, &e) == HMB_E_IO &&
	   strstr(e.msg, dir), "a directory is refused: %s", e.msg);
	unlink(meta);
	unlink(path);
	rmdir(dir);
}

int main(void)
{
	test_errors();
	test_record_check();
	test_ring_hdr_check();
	test_roundtrip();
	test_commit_hook_error();
	test_wrap_marker();
	test_wrap_implicit();
	test_overflow_drop();
	test_try_wrap_alone();
	test_defer();
	test_reinit();
	test_estale();
	test_acct();
	test_buf_iter();
	test_sidecar();
	test_dump_writer();
	test_small_buffer();
	return tap_done();
}
