// SPDX-License-Identifier: Apache-2.0
/*
 * The consumer over a live hostile ring: libhmbtrace's producer and
 * consumer share one region, and the fuzzer's bytes are a program of
 * steps interleaving them with what a buggy device could do -- cursors
 * anywhere in 2^64 (biased to the last laps before 2^64 and to head having
 * wrapped past 0), head moved to any distance from the consumer, record
 * bytes and header fields rewritten between and during batches, FROZEN
 * and re-initialisations.
 *
 * Oracles, checked after every step:
 *  - every batch hmb_consumer_read() returns is a valid dump stream
 *    (hmb_buf_iter reads it to its end without error) no longer than the
 *    buffer and no longer than head - cursor before the call;
 *  - hmb_consumer_next() returns records that pass hmb_record_check();
 *  - the one-copy path: spans lie inside the record area, and whatever
 *    hmb_consumer_verify() accepts -- after the device scribbled between
 *    the check and the "write" -- is a valid dump stream; what it refuses
 *    puts the cursor back;
 *  - the cursor never moves more than ring_size past where it was, and
 *    head - cursor <= ring_size after every successful poll;
 *  - the consumer never reads outside the mapping (ASan: the region is an
 *    exact-size heap block).
 * A loop that never ends is a libFuzzer timeout.
 */
#include <sys/uio.h>
#include <hmbtrace.h>

#include "fuzz.h"

static uint64_t pick_cursor(struct fz *f)
{
	switch (fz_u8(f) & 3) {
	case 0:
		return 0;
	case 1:		/* the last laps before 2^64 */
		return (uint64_t)0 - ((uint64_t)fz_u16(f) << 3);
	case 2:		/* anywhere */
		return fz_u64(f) & ~7ull;
	default:	/* just past 0 after a wrap */
		return (uint64_t)fz_u16(f) << 3;
	}
}

/* The dump stream in @buf must read cleanly to its end. */
static void check_stream(const uint8_t *buf, size_t len)
{
	struct hmb_buf_iter it;
	struct hmb_record rec;
	size_t seen = 0;
	int rc;

	hmb_buf_iter_init(&it, buf, len, 0);
	while ((rc = hmb_buf_iter_next(&it, &rec, NULL)) == 1)
		seen += rec.raw_len;
	FZ_ASSERT(rc == 0 && seen == len);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t out[64 << 10], pay[HMB_RECORD_MAX_PAYLOAD];
	struct fz f = { data, size };
	volatile struct hmb_ring_hdr *h;
	struct hmb_consumer *c = NULL;
	struct hmb_producer p;
	struct hmb_error err;
	uint32_t rs = 64u << (fz_u8(&f) % 10);	/* 64 .. 32 KiB */
	uint64_t start = pick_cursor(&f);
	size_t map_len = 64 + rs;
	uint8_t *region;
	int steps = 0;

	region = malloc(map_len);	/* exact size: ASan sees any overrun */
	if (!region)
		return 0;
	memset(region, 0, map_len);
	if (hmb_producer_init(&p, region, map_len, rs, fz_u32(&f), &err))
		abort();
	h = (volatile struct hmb_ring_hdr *)region;
	p.head = p.tail_cache = start;
	h->head = h->tail = start;
	if (hmb_consumer_open(&c, region, map_len, hmb_publish_store, region,
			      &err))
		abort();
	memset(pay, 0x5a, sizeof(pay));
	while (f.n && steps++ < 400) {
		uint64_t avail, before, cur;
		struct hmb_event ev;
		struct hmb_record rec;
		size_t len, buflen;
		int rc, k;

		switch (fz_u8(&f) % 13) {
		case 0:		/* the producer emits a few records */
		case 1:
			for (k = fz_u8(&f) % 8; k >= 0; k--) {
				ev = (struct hmb_event){
					.ts_ns = fz_u16(&f), .opcode = fz_u8(&f),
					.flags = fz_u8(&f) & 0x82,
					.payload_len = fz_u16(&f) % 600,
					.payload = pay,
				};
				hmb_producer_emit(&p, &ev, (fz_u8(&f) & 1 ?
						  HMB_EMIT_TRY : HMB_EMIT_DROP) |
						  HMB_EMIT_DEFER);
			}
			hmb_producer_publish(&p);
			break;
		case 2:		/* the device scribbles on the record area */
			for (k = fz_u8(&f) % 16; k >= 0; k--)
				region[64 + fz_u32(&f) % rs] = fz_u8(&f);
			break;
		case 3: {	/* ... or writes a plausible header anywhere */
			struct hmb_record_hdr rh = {
				.magic = HMB_RECORD_MAGIC, .seq = fz_u32(&f),
				.flags = fz_u8(&f) & 0x83,
				.payload_len = fz_u16(&f) % 4200,
			};
			uint32_t off = (fz_u32(&f) % rs) & ~7u;

			if (off + sizeof(rh) <= rs)
				memcpy(region + 64 + off, &rh, sizeof(rh));
			break;
		}
		case 4:		/* head moved: near the cursor, or anywhere */
			cur = hmb_consumer_cursor(c);
			if (fz_u8(&f) & 1)
				__atomic_store_n(&h->head, cur + ((fz_u16(&f) % (2 * rs + 64)) & ~7ull),
						 __ATOMIC_RELEASE);
			else
				__atomic_store_n(&h->head, pick_cursor(&f) + (fz_u8(&f) & 7),
						 __ATOMIC_RELEASE);
			p.head = h->head;
			break;
		case 5:		/* drain a batch */
		case 6:
			before = hmb_consumer_cursor(c);
			if (hmb_consumer_poll(c, &avail, &err) != 0)
				break;
			FZ_ASSERT(hmb_consumer_head(c) - before <= rs);
			buflen = HMB_RECORD_MAX_SIZE + fz_u16(&f) % (sizeof(out) - HMB_RECORD_MAX_SIZE);
			rc = hmb_consumer_read(c, out, buflen, &len, &err);
			FZ_ASSERT(len <= buflen && len <= avail);
			FZ_ASSERT(hmb_consumer_cursor(c) - before <= rs);
			check_stream(out, len);
			(void)rc;
			break;
		case 7:		/* record at a time */
			before = hmb_consumer_cursor(c);
			if (hmb_consumer_poll(c, &avail, &err) != 0)
				break;
			for (k = fz_u8(&f) % 8; k >= 0; k--) {
				rc = hmb_consumer_next(c, &rec, &err);
				if (rc != 1)
					break;
				FZ_ASSERT(hmb_record_check(&rec.hdr, 0, NULL) == 0);
				FZ_ASSERT(rec.raw_len == HMB_RECORD_SIZE(rec.hdr.payload_len));
			}
			FZ_ASSERT(hmb_consumer_cursor(c) - before <= rs);
			break;
		case 8:
			hmb_consumer_commit(c, &err);
			p.tail_cache = __atomic_load_n(&h->tail, __ATOMIC_ACQUIRE);
			break;
		case 9:		/* FROZEN set or cleared */
			hmb_producer_set_flags(&p, fz_u8(&f) & 1 ? HMB_RING_FLAG_FROZEN : 0,
					       fz_u8(&f) & 1 ? HMB_RING_FLAG_FROZEN : 0);
			break;
		case 10:	/* re-initialisation, by the rules or not */
			if (fz_u8(&f) & 1) {
				hmb_producer_reinit(&p, fz_u32(&f));
			} else {
				__atomic_store_n(&h->tail, pick_cursor(&f), __ATOMIC_RELEASE);
				if (fz_u8(&f) & 1)
					h->ring_size = fz_u32(&f);
			}
			break;
		case 12: {	/* one copy: spans, the device, writev, verify */
			static struct iovec iov[64];
			int niov;

			before = hmb_consumer_cursor(c);
			if (hmb_consumer_poll(c, &avail, &err) != 0)
				break;
			buflen = HMB_RECORD_MAX_SIZE + fz_u16(&f) % (sizeof(out) - HMB_RECORD_MAX_SIZE);
			rc = hmb_consumer_spans(c, iov, 1 + fz_u8(&f) % 64, buflen,
						&niov, &len, &err);
			FZ_ASSERT(len <= buflen && len <= avail);
			FZ_ASSERT(hmb_consumer_cursor(c) - before <= rs);
			/* the device may write while we write */
			for (k = fz_u8(&f) % 4; k > 0; k--)
				region[64 + fz_u32(&f) % rs] = fz_u8(&f);
			len = 0;
			for (k = 0; k < niov; k++) {
				FZ_ASSERT((uint8_t *)iov[k].iov_base >= region + 64 &&
					  (uint8_t *)iov[k].iov_base + iov[k].iov_len <= region + map_len);
				memcpy(out + len, iov[k].iov_base, iov[k].iov_len);
				len += iov[k].iov_len;
			}
			/* What verify lets through is a valid dump. */
			if (hmb_consumer_verify(c, &err) == 0)
				check_stream(out, len);
			else
				FZ_ASSERT(hmb_consumer_cursor(c) == before);
			(void)rc;
			break;
		}
		default:
			rc = hmb_consumer_reinit(c, &err);
			FZ_ASSERT(rc <= 1);
			break;
		}
	}
	hmb_consumer_close(c);
	free(region);
	return 0;
}
