// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Hostile rings (format.md 13): every corruption gives its documented error
 * code and
 * nothing is read outside the mapping.  Each ring sits at the very end of
 * an mmap with a PROT_NONE page after it, so an overrun faults (and ASan
 * watches the consumer's own buffers).  Ends with a seeded fuzz loop.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "hmbtrace.h"
#include "tap.h"

struct gring {
	uint8_t *map;
	size_t maplen;
	uint8_t *ring;		/* @len bytes ending at the guard page */
	size_t len;
	struct hmb_ring_hdr *hdr;
	uint8_t *area;
};

static void gr_new(struct gring *g, size_t len)
{
	size_t pg = sysconf(_SC_PAGESIZE), pages = (len + pg - 1) / pg + 1;

	g->maplen = pages * pg;
	g->map = mmap(NULL, g->maplen, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (g->map == MAP_FAILED)
		abort();
	if (mprotect(g->map + (pages - 1) * pg, pg, PROT_NONE))
		abort();
	g->len = len;
	g->ring = g->map + (pages - 1) * pg - len;
	g->hdr = (struct hmb_ring_hdr *)g->ring;
	g->area = g->ring + HMB_RECORD_AREA_OFF;
}

static void gr_free(struct gring *g)
{
	munmap(g->map, g->maplen);
}

/* A valid ring of @rs with records of @lens (payload lengths). */
static void gr_fill(struct gring *g, struct hmb_producer *p, uint32_t rs,
		    const int *lens, int n)
{
	static uint8_t pl[HMB_RECORD_MAX_PAYLOAD];
	struct hmb_error e;

	gr_new(g, HMB_RECORD_AREA_OFF + rs);
	memset(g->area, 0xa5, rs);
	hmb_producer_init(p, g->ring, g->len, rs, 0, &e);
	for (int i = 0; i < n; i++) {
		struct hmb_event ev = { .ts_ns = i, .payload_len = lens[i],
					.payload = pl };

		hmb_producer_emit(p, &ev, HMB_EMIT_DROP);
	}
}

static struct hmb_record_hdr *rec(struct gring *g, uint64_t off)
{
	return (struct hmb_record_hdr *)(g->area + off);
}

static uint8_t drained[1 << 16];	/* output of the last drain() */

/* Open, poll and read; report the first error (0 if none). */
static int drain(struct gring *g, size_t maplen, size_t *len,
		 struct hmb_error *e, uint64_t *cursor)
{
	uint8_t *buf = drained;
	struct hmb_consumer *c;
	uint64_t avail;
	int rc;

	*len = 0;
	rc = hmb_consumer_open(&c, g->ring, maplen, NULL, NULL, e);
	if (rc)
		return rc;
	rc = hmb_consumer_poll(c, &avail, e);
	if (!rc)
		rc = hmb_consumer_read(c, buf, sizeof(drained), len, e);
	if (cursor)
		*cursor = hmb_consumer_cursor(c);
	hmb_consumer_close(c);
	return rc;
}

static void test_header_faults(void)
{
	static const int lens[] = { 8, 16 };
	struct hmb_producer p;
	struct hmb_error e;
	struct gring g;
	size_t len;

	gr_fill(&g, &p, 4096, lens, 2);
	ok(drain(&g, g.len, &len, &e, NULL) == 0 && len == 40 + 48,
	   "valid ring at the end of the mapping reads fine");
	ok(drain(&g, g.len - 8, &len, &e, NULL) == HMB_E_RING_SHORT,
	   "mapping shorter than the ring: %s", e.msg);
	ok(drain(&g, 63, &len, &e, NULL) == HMB_E_RING_SHORT,
	   "mapping shorter than the header: %s", e.msg);
	g.hdr->magic = 0x11223344;
	ok(drain(&g, g.len, &len, &e, NULL) == HMB_E_RING_MAGIC,
	   "ring magic: %s", e.msg);
	g.hdr->magic = HMB_RING_MAGIC;
	g.hdr->version = 2;
	ok(drain(&g, g.len, &len, &e, NULL) == HMB_E_RING_VERSION,
	   "version 2: %s", e.msg);
	g.hdr->version = 1;
	g.hdr->record_area_off = 0x80;
	ok(drain(&g, g.len, &len, &e, NULL) == HMB_E_RING_AREA_OFF,
	   "record_area_off 0x80: %s", e.msg);
	g.hdr->record_area_off = 0x40;
	g.hdr->ring_size = 4000;
	ok(drain(&g, g.len, &len, &e, NULL) == HMB_E_RING_SIZE,
	   "ring_size 4000: %s", e.msg);
	g.hdr->ring_size = 8192;
	ok(drain(&g, g.len, &len, &e, NULL) == HMB_E_RING_SHORT,
	   "ring_size 8192 in a 4160-byte mapping: %s", e.msg);
	g.hdr->ring_size = 4096;
	g.hdr->head = 4096 * 3;
	g.hdr->tail = 4096 - 8;
	ok(drain(&g, g.len, &len, &e, NULL) == HMB_E_HEAD_AHEAD,
	   "head - tail > ring_size: %s", e.msg);
	g.hdr->head = 8;
	g.hdr->tail = 16;
	ok(drain(&g, g.len, &len, &e, NULL) == HMB_E_HEAD_BACKWARDS,
	   "head behind tail: %s", e.msg);
	g.hdr->head = 12;
	g.hdr->tail = 0;
	ok(drain(&g, g.len, &len, &e, NULL) == HMB_E_HEAD_MISALIGNED,
	   "head not aligned: %s", e.msg);
	g.hdr->head = 8;
	g.hdr->tail = 4;
	ok(drain(&g, g.len, &len, &e, NULL) == HMB_E_HEAD_MISALIGNED,
	   "tail not aligned: %s", e.msg);
	/* Cursors count modulo 2^64: 2^64 - 8 is 8 bytes behind tail 0. */
	g.hdr->head = UINT64_MAX - 7;
	g.hdr->tail = 0;
	ok(drain(&g, g.len, &len, &e, NULL) == HMB_E_HEAD_BACKWARDS,
	   "head 8 bytes behind tail 0 (mod 2^64): %s", e.msg);
	g.hdr->head = 1ull << 62;
	g.hdr->tail = 0;
	ok(drain(&g, g.len, &len, &e, NULL) == HMB_E_HEAD_AHEAD,
	   "head far ahead of tail: %s", e.msg);
	/* Head wrapped past 0, tail not: 64 bytes in the ring, all stale. */
	g.hdr->tail = UINT64_MAX - 31;
	g.hdr->head = 32;
	ok(drain(&g, g.len, &len, &e, NULL) == HMB_E_REC_MAGIC,
	   "head wrapped past 0 is accepted, the bytes are then checked: %s",
	   e.msg);
	gr_free(&g);
}

static void test_poll_faults(void)
{
	static const int lens[] = { 8, 16, 24 };
	struct hmb_consumer *c;
	struct hmb_producer p;
	struct hmb_error e;
	struct gring g;
	uint8_t buf[4096];
	uint64_t avail;
	size_t len;

	gr_fill(&g, &p, 4096, lens, 3);
	hmb_consumer_open(&c, g.ring, g.len, NULL, NULL, &e);
	hmb_consumer_poll(c, &avail, &e);
	hmb_consumer_read(c, buf, sizeof(buf), &len, &e);
	g.hdr->head = 40;
	ok(hmb_consumer_poll(c, &avail, &e) == HMB_E_HEAD_BACKWARDS &&
	   avail == 0, "head moved backwards: %s", e.msg);
	g.hdr->head = 144 + 4096 + 8;
	ok(hmb_consumer_poll(c, &avail, &e) == HMB_E_HEAD_AHEAD,
	   "head jumped more than ring_size ahead: %s", e.msg);
	g.hdr->head = 148;
	ok(hmb_consumer_poll(c, &avail, &e) == HMB_E_HEAD_MISALIGNED,
	   "misaligned head: %s", e.msg);
	/* The device changes ring_size under us: we keep ours. */
	g.hdr->ring_size = 1U << 30;
	g.hdr->head = 144 + 4096;
	ok(hmb_consumer_poll(c, &avail, &e) == 0 && avail == 4096,
	   "ring_size rewritten after open is not trusted");
	ok(hmb_consumer_read(c, buf, sizeof(buf), &len, &e) ==
	   HMB_E_REC_MAGIC && len == 0,
	   "garbage where head claims records: %s", e.msg);
	hmb_consumer_close(c);
	gr_free(&g);
}

static void test_record_faults(void)
{
	static const int lens[] = { 8, 16, 24, 32 };
	struct hmb_producer p;
	struct hmb_error e;
	struct gring g;
	uint64_t cur;
	size_t len;

	gr_fill(&g, &p, 4096, lens, 4);		/* 40 48 56 64: 0..208 */
	rec(&g, 40)->magic = 0x12345678;
	ok(drain(&g, g.len, &len, &e, &cur) == HMB_E_REC_MAGIC && len == 40 &&
	   cur == 40 && e.offset == 40 &&
	   strstr(e.msg, "0x12345678 at cursor 40 (ring offset 0x28)"),
	   "bad record magic, good prefix kept: %s", e.msg);
	{
		struct hmb_consumer *c;
		uint8_t buf[8192];
		uint64_t avail;

		hmb_consumer_open(&c, g.ring, g.len, NULL, NULL, &e);
		hmb_consumer_poll(c, &avail, &e);
		hmb_consumer_read(c, buf, sizeof(buf), &len, &e);
		ok(hmb_consumer_read(c, buf, sizeof(buf), &len, &e) ==
		   HMB_E_REC_MAGIC && len == 0 && hmb_consumer_cursor(c) == 40,
		   "a second read stops at the same bad record");
		hmb_consumer_close(c);
	}
	rec(&g, 40)->magic = HMB_RECORD_MAGIC;
	rec(&g, 88)->payload_len = 4065;
	ok(drain(&g, g.len, &len, &e, &cur) == HMB_E_REC_LEN && len == 88 &&
	   cur == 88, "payload_len 4065: %s", e.msg);
	rec(&g, 88)->payload_len = 1000;
	ok(drain(&g, g.len, &len, &e, &cur) == HMB_E_REC_BEYOND_HEAD &&
	   len == 88, "record past head: %s", e.msg);
	rec(&g, 88)->payload_len = 24;
	rec(&g, 88)->flags = HMB_REC_FLAG_WRAP_MARKER;
	ok(drain(&g, g.len, &len, &e, &cur) == HMB_E_MARKER_PAYLOAD &&
	   len == 88, "marker with payload: %s", e.msg);
	rec(&g, 88)->flags = 0;
	g.hdr->head = 208 - 8;
	ok(drain(&g, g.len, &len, &e, &cur) == HMB_E_REC_BEYOND_HEAD &&
	   len == 144 && cur == 144, "head inside the last record: %s", e.msg);
	g.hdr->head = 144 + 16;
	ok(drain(&g, g.len, &len, &e, &cur) == HMB_E_REC_BEYOND_HEAD &&
	   len == 144, "head inside the last header: %s", e.msg);
	g.hdr->head = 208;
	rec(&g, 144)->flags = 0x80 | 0x04;
	ok(drain(&g, g.len, &len, &e, &cur) == 0 && len == 208,
	   "unknown flag bits: copied and passed over");
	gr_free(&g);
}

/* A record at the very end of the mapping claiming to cross the lap. */
static void test_cross_lap(void)
{
	struct hmb_producer p;
	struct hmb_error e;
	struct gring g;
	uint64_t cur;
	size_t len;

	gr_fill(&g, &p, 4096, NULL, 0);
	*rec(&g, 4064) = (struct hmb_record_hdr){
		.magic = HMB_RECORD_MAGIC, .payload_len = 64 };
	g.hdr->tail = 4064;
	g.hdr->head = 4064 + 96;
	ok(drain(&g, g.len, &len, &e, &cur) == HMB_E_REC_CROSS_LAP &&
	   len == 0 && cur == 4064 && strstr(e.msg, "ring offset 0xfe0"),
	   "record crossing the end of the lap: %s", e.msg);
	rec(&g, 4064)->payload_len = 0;
	g.hdr->head = 4096;
	ok(drain(&g, g.len, &len, &e, &cur) == 0 && len == 32,
	   "the last 32 bytes of the lap hold a record");
	rec(&g, 4064)->flags = HMB_REC_FLAG_WRAP_MARKER;
	g.hdr->head = 4064 + 32;
	ok(drain(&g, g.len, &len, &e, &cur) == 0 && len == 32 && cur == 4096,
	   "a marker in the last 32 bytes ends the lap exactly");
	/* head inside the skip after a marker */
	*rec(&g, 4000) = (struct hmb_record_hdr){
		.magic = HMB_RECORD_MAGIC, .flags = HMB_REC_FLAG_WRAP_MARKER };
	g.hdr->tail = 4000;
	g.hdr->head = 4040;
	ok(drain(&g, g.len, &len, &e, &cur) == HMB_E_HEAD_IN_GAP &&
	   cur == 4000 && len == 0, "head inside a marker's skip: %s", e.msg);
	/* head inside an implicit gap (16 bytes left) */
	g.hdr->tail = 4080;
	g.hdr->head = 4088;
	ok(drain(&g, g.len, &len, &e, &cur) == HMB_E_HEAD_IN_GAP && cur == 4080,
	   "head inside an implicit gap: %s", e.msg);
	gr_free(&g);
}

/*
 * The same ring read record by record (hmb_consumer_next): the same bytes
 * and the same final code as the batch read that gave @rc and @len (whose
 * output is still in drain()'s buffer).
 */
static bool rc2_differs(struct gring *g, int rc, size_t len)
{
	struct hmb_consumer *c;
	struct hmb_record r;
	struct hmb_error e;
	uint64_t avail;
	size_t pos = 0;
	int rc2;

	if (hmb_consumer_open(&c, g->ring, g->len, NULL, NULL, &e))
		return rc == 0;
	rc2 = hmb_consumer_poll(c, &avail, &e);
	while (rc2 == 0 && (rc2 = hmb_consumer_next(c, &r, &e)) == 1) {
		if (pos + r.raw_len > len ||
		    memcmp(drained + pos, r.raw, r.raw_len)) {
			hmb_consumer_close(c);
			return true;
		}
		pos += r.raw_len;
		rc2 = 0;
	}
	hmb_consumer_close(c);
	if ((rc2 != rc || pos != len) && getenv("HMB_DEBUG"))
		diag("rc %d len %zu vs next rc %d pos %zu: %s", rc, len, rc2,
		     pos, e.msg);
	return rc2 != rc || pos != len;
}

/*
 * The same ring drained with its records read by pread(2) from a file
 * holding the same bytes (hmb_consumer_set_fd; the header still comes from
 * the mapping): the same code and the same bytes as the drain() that gave
 * @rc and @len.  @fd is a memfd reused from call to call.
 */
static bool pread_differs(struct gring *g, int fd, int rc, size_t len)
{
	static uint8_t buf[sizeof(drained)];
	struct hmb_consumer *c;
	struct hmb_error e;
	uint64_t avail;
	size_t len2 = 0;
	int rc2;

	if (pwrite(fd, g->ring, g->len, 0) != (ssize_t)g->len ||
	    ftruncate(fd, (off_t)g->len))
		return true;
	rc2 = hmb_consumer_open(&c, g->ring, g->len, NULL, NULL, &e);
	if (rc2)
		return rc2 != rc || len;
	rc2 = hmb_consumer_set_fd(c, fd, 0, &e);
	if (!rc2)
		rc2 = hmb_consumer_poll(c, &avail, &e);
	if (!rc2)
		rc2 = hmb_consumer_read(c, buf, sizeof(buf), &len2, &e);
	hmb_consumer_close(c);
	return rc2 != rc || len2 != len || memcmp(buf, drained, len);
}

/*
 * pread of a ring file cut short under the consumer: HMB_E_IO with
 * ENXIO and the good prefix, never a read past the end; a pipe is refused.
 */
static void test_pread_truncated(void)
{
	static const int lens[] = { 8, 16, 200, 24, 1000, 40 };
	struct hmb_producer p;
	struct hmb_consumer *c;
	struct hmb_error e;
	struct gring g;
	uint64_t avail;
	size_t len = 0;
	int fd, pfd[2], rc;

	gr_fill(&g, &p, 4096, lens, 6);
	fd = memfd_create("t_hostile", 0);
	if (fd < 0 || pwrite(fd, g.ring, g.len, 0) != (ssize_t)g.len)
		abort();
	hmb_consumer_open(&c, g.ring, g.len, NULL, NULL, &e);
	ok(hmb_consumer_set_fd(c, fd, 0, &e) == 0, "set_fd on a memfd");
	/* The file ends inside the fifth record (ring offset 40+48+232+56). */
	if (ftruncate(fd, HMB_RECORD_AREA_OFF + 376 + 100))
		abort();
	hmb_consumer_poll(c, &avail, &e);
	rc = hmb_consumer_read(c, drained, sizeof(drained), &len, &e);
	ok(rc == HMB_E_IO && e.sys_errno == ENXIO,
	   "ring file cut short: HMB_E_IO, ENXIO (%d, %d: %s)", rc,
	   e.sys_errno, e.msg);
	ok(len == 376 && hmb_consumer_cursor(c) == 376,
	   "the four whole records before the cut are read, the cursor stops at the fifth (%zu)",
	   len);
	if (pipe(pfd))
		abort();
	ok(hmb_consumer_set_fd(c, pfd[0], 0, &e) == HMB_E_INVAL,
	   "set_fd refuses a pipe: %s", e.msg);
	hmb_consumer_close(c);
	close(pfd[0]);
	close(pfd[1]);
	close(fd);
	gr_free(&g);
}

/* Random bytes and cursors: must never fault, always a known answer. */
static void test_fuzz(void)
{
	static const int known[] = { 0, HMB_E_RING_MAGIC, HMB_E_RING_VERSION,
		HMB_E_RING_SIZE, HMB_E_RING_AREA_OFF, HMB_E_RING_SHORT,
		HMB_E_HEAD_BACKWARDS, HMB_E_HEAD_AHEAD, HMB_E_HEAD_MISALIGNED,
		HMB_E_HEAD_IN_GAP, HMB_E_REC_MAGIC, HMB_E_REC_LEN,
		HMB_E_REC_CROSS_LAP, HMB_E_REC_BEYOND_HEAD,
		HMB_E_MARKER_PAYLOAD };
	uint64_t seed = (uint64_t)time(NULL), s = seed;
	unsigned iters = 20000, bad = 0, errs = 0, mismatch = 0, pmis = 0;
	int fd = memfd_create("t_hostile-fuzz", 0);
	struct hmb_error e;
	struct gring g;
	size_t len;

	diag("fuzz seed %" PRIu64, seed);
	gr_new(&g, HMB_RECORD_AREA_OFF + 1024);
	for (unsigned i = 0; i < iters; i++) {
		int rc, k;

		s = s * 6364136223846793005ULL + 1442695040888963407ULL;
		/* mostly-valid records with random damage */
		memset(g.ring, 0, g.len);
		g.hdr->magic = HMB_RING_MAGIC;
		g.hdr->version = 1;
		g.hdr->ring_size = (s >> 60) ? 1024 : 1u << ((s >> 33) % 12);
		g.hdr->record_area_off = 0x40;
		uint64_t bounds[64], nb = 0, off;

		for (off = 0; off + 32 <= 1024 && nb < 64;) {
			struct hmb_record_hdr *h = rec(&g, off);

			s = s * 6364136223846793005ULL + 1;
			h->magic = (s >> 60) ? HMB_RECORD_MAGIC : (uint32_t)s;
			h->payload_len = (s >> 20) % 200;
			if ((s >> 58) == 0)
				h->payload_len = (s >> 8) & 0xffff;
			h->flags = (s >> 59) == 0 ? (s >> 40) & 0xff : 0;
			off += HMB_RECORD_SIZE(h->payload_len % 200);
			bounds[nb++] = off;
		}
		s = s * 6364136223846793005ULL + 1;
		if (s & 0x100) {
			g.hdr->tail = 0;
			g.hdr->head = bounds[(s >> 24) % nb];
		} else {
			g.hdr->tail = ((s >> 16) % 4096) & ~7ULL;
			g.hdr->head = g.hdr->tail + (((s >> 40) % 1100) & ~7ULL);
		}
		if (!(s & 0xf))
			g.hdr->head |= 4;
		rc = drain(&g, g.len, &len, &e, NULL);
		if (rc2_differs(&g, rc, len))
			mismatch++;
		if (pread_differs(&g, fd, rc, len))
			pmis++;
		for (k = 0; k < (int)(sizeof(known) / sizeof(known[0])); k++)
			if (rc == known[k])
				break;
		if (k == (int)(sizeof(known) / sizeof(known[0])))
			bad++;
		if (rc)
			errs++;
	}
	ok(bad == 0, "fuzz: %u rings, %u rejected, no fault, only known codes",
	   iters, errs);
	ok(mismatch == 0, "fuzz: record-at-a-time reading agrees with batch "
	   "reading (%u differ)", mismatch);
	ok(fd >= 0 && pmis == 0, "fuzz: records read with pread from a file "
	   "agree with records copied from the mapping (%u differ)", pmis);
	close(fd);
	gr_free(&g);
}

int main(void)
{
	test_header_faults();
	test_poll_faults();
	test_record_faults();
	test_cross_lap();
	test_pread_truncated();
	test_fuzz();
	return tap_done();
}
