// SPDX-License-Identifier: Apache-2.0
/*
 * The one-copy consumer path (hmb_consumer_spans + hmb_consumer_verify,
 * docs/format.md 9.5): the spans cover exactly the bytes read() would copy;
 * a device that rewrites a checked header between the check and the write
 * is caught by verify(), which puts the cursor and counts back so the
 * batch can be read again from a private copy; a rewritten payload byte is
 * not (payloads are never checked, by either path); and cursors near 2^64
 * work as everywhere else.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "hmbtrace.h"
#include "tap.h"

#define RS 4096

static uint8_t region[HMB_RECORD_AREA_OFF + RS] __attribute__((aligned(64)));
static uint8_t pay[HMB_RECORD_MAX_PAYLOAD];

/* A ring starting at cursor @start holding @n records of sizes by seq. */
static void fill(struct hmb_producer *p, uint64_t start, int n)
{
	volatile struct hmb_ring_hdr *h = (volatile struct hmb_ring_hdr *)region;
	struct hmb_error e;

	memset(region, 0xee, sizeof(region));
	if (hmb_producer_init(p, region, sizeof(region), RS, 100, &e))
		abort();
	p->head = p->tail_cache = start;
	h->head = h->tail = start;
	for (int i = 0; i < n; i++) {
		struct hmb_event ev = {
			.ts_ns = 1000 + i, .opcode = 1 + i % 3,
			.payload_len = (uint16_t)((i * 37) % 300),
			.payload = pay,
		};

		if (hmb_producer_emit(p, &ev, HMB_EMIT_TRY) != HMB_EMITTED)
			abort();
	}
}

/* Gather what writev(2) of @iov would write, now. */
static size_t gather(const struct iovec *iov, int n, uint8_t *out)
{
	size_t len = 0;

	for (int i = 0; i < n; i++) {
		memcpy(out + len, iov[i].iov_base, iov[i].iov_len);
		len += iov[i].iov_len;
	}
	return len;
}

/* Is @buf a valid dump stream to its end? */
static int valid_dump(const uint8_t *buf, size_t len)
{
	struct hmb_buf_iter it;
	struct hmb_record rec;
	int rc;

	hmb_buf_iter_init(&it, buf, len, 0);
	while ((rc = hmb_buf_iter_next(&it, &rec, NULL)) == 1)
		;
	return rc == 0;
}

static struct hmb_consumer *open_c(void)
{
	struct hmb_consumer *c;
	struct hmb_error e;
	uint64_t avail;

	if (hmb_consumer_open(&c, region, sizeof(region), hmb_publish_store,
			      region, &e) || hmb_consumer_poll(c, &avail, &e))
		abort();
	return c;
}

static void same_as_read(uint64_t start, const char *what)
{
	static uint8_t a[RS * 2], b[RS * 2];
	struct hmb_consumer_counts na, nb;
	struct hmb_consumer *c;
	struct hmb_producer p;
	struct iovec iov[64];
	struct hmb_error e;
	size_t la, lb;
	int n, ra, rb;

	fill(&p, start, 20);
	c = open_c();
	ra = hmb_consumer_read(c, a, sizeof(a), &la, &e);
	hmb_consumer_counts(c, &na);
	hmb_consumer_close(c);
	c = open_c();
	rb = hmb_consumer_spans(c, iov, 64, sizeof(b), &n, &lb, &e);
	ok(ra == 0 && rb == 0 && la == lb && gather(iov, n, b) == lb &&
	   !memcmp(a, b, la), "%s: spans (%d of them) cover the bytes read() copies (%zu)",
	   what, n, lb);
	ok(hmb_consumer_verify(c, &e) == 0, "%s: verify passes on an untouched ring",
	   what);
	hmb_consumer_counts(c, &nb);
	ok(na.records == nb.records && na.markers == nb.markers &&
	   hmb_consumer_cursor(c) == p.head,
	   "%s: same counts (%" PRIu64 " records, %" PRIu64 " markers), cursor at head",
	   what, nb.records, nb.markers);
	hmb_consumer_close(c);
}

int main(void)
{
	static uint8_t out[RS * 2], again[RS * 2];
	struct hmb_consumer_counts n0, n1;
	struct hmb_consumer *c;
	struct hmb_producer p;
	struct hmb_record_hdr h;
	struct iovec iov[64];
	struct hmb_error e;
	size_t len, len2;
	uint64_t start;
	int n;

	memset(pay, 0x3c, sizeof(pay));
	same_as_read(0, "cursor 0");
	same_as_read(UINT64_MAX - 2047, "cursor 2^64 - 2048 (head wraps past 0)");

	/* A checked header rewritten before the write: payload_len grows. */
	fill(&p, 0, 20);
	c = open_c();
	hmb_consumer_counts(c, &n0);
	start = hmb_consumer_cursor(c);
	ok(hmb_consumer_spans(c, iov, 64, sizeof(out), &n, &len, &e) == 0 && len,
	   "spans over 20 records (%zu bytes)", len);
	memcpy(&h, region + HMB_RECORD_AREA_OFF, sizeof(h));
	h.payload_len += 8;	/* the device rewrites the first header */
	memcpy(region + HMB_RECORD_AREA_OFF, &h, sizeof(h));
	len2 = gather(iov, n, out);	/* what writev would now write */
	ok(len2 == len && !valid_dump(out, len),
	   "without verify the written bytes would not be a valid dump");
	ok(hmb_consumer_verify(c, &e) == HMB_E_RING_CHANGED,
	   "verify: %s", e.msg);
	hmb_consumer_counts(c, &n1);
	ok(hmb_consumer_cursor(c) == start && n1.records == n0.records &&
	   n1.markers == n0.markers && n1.ignored == n0.ignored,
	   "verify put the cursor and the counts back");
	{
		int rc = hmb_consumer_read(c, again, sizeof(again), &len2, &e);

		ok(valid_dump(again, len2),
		   "read() again from a private copy: a valid dump (%zu bytes, rc %d%s%s)",
		   len2, rc, rc ? ": " : "", rc ? e.msg : "");
	}
	hmb_consumer_close(c);

	/* Flags (classification) rewritten: also caught. */
	fill(&p, 0, 5);
	c = open_c();
	ok(hmb_consumer_spans(c, iov, 64, sizeof(out), &n, &len, &e) == 0,
	   "spans over 5 records");
	region[HMB_RECORD_AREA_OFF + 19] |= 0x80;	/* flags of record 1 */
	ok(hmb_consumer_verify(c, &e) == HMB_E_RING_CHANGED,
	   "a rewritten flags byte is caught: %s", e.msg);
	hmb_consumer_close(c);

	/* A payload byte rewritten: not checked by either path. */
	fill(&p, 0, 5);
	c = open_c();
	ok(hmb_consumer_spans(c, iov, 64, sizeof(out), &n, &len, &e) == 0,
	   "spans over 5 records");
	/* record 0: 32 bytes; record 1: header at 32, 37-byte payload at 64 */
	region[HMB_RECORD_AREA_OFF + 70] ^= 0xff;
	len2 = gather(iov, n, out);
	ok(hmb_consumer_verify(c, &e) == 0 && valid_dump(out, len2),
	   "a rewritten payload byte passes (payloads are opaque) and the dump stays valid");
	hmb_consumer_close(c);

	/* Bounds: few spans, small batches. */
	fill(&p, RS - 256, 15);
	c = open_c();
	ok(hmb_consumer_spans(c, iov, 1, RS * 2, &n, &len, &e) == 0 && n == 1,
	   "one span allowed: stops at the lap end (%zu bytes)", len);
	ok(hmb_consumer_verify(c, &e) == 0, "verify of that batch");
	ok(hmb_consumer_spans(c, iov, 64, HMB_RECORD_MAX_SIZE - 1, &n, &len, &e) ==
	   HMB_E_INVAL, "a batch below 4096 bytes refused");
	hmb_consumer_close(c);
	return tap_done();
}
