// SPDX-License-Identifier: Apache-2.0
/*
 * hmb_buf_count() against hmb_buf_iter_next() on consumer output with wrap
 * markers, unknown-flag records and every payload size class, and its
 * error paths.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "hmbtrace.h"
#include "hmbtrace-count.h"
#include "tap.h"

int main(void)
{
	const uint32_t rs = 4096;
	uint8_t *ring = aligned_alloc(64, HMB_RECORD_AREA_OFF + rs);
	uint8_t payload[HMB_RECORD_MAX_PAYLOAD] = { 0 };
	uint8_t *buf = malloc(1 << 16);
	struct hmb_producer p;
	struct hmb_consumer *c;
	struct hmb_error err;
	struct hmb_buf_counts n = { 0, 0, 0 };
	uint64_t it_rec = 0, it_mark = 0, it_ign = 0, avail;
	int i, bad = 0;

	ok(hmb_producer_init(&p, ring, HMB_RECORD_AREA_OFF + rs, rs, 0, &err) == 0,
	   "producer init");
	ok(hmb_consumer_open(&c, ring, HMB_RECORD_AREA_OFF + rs, hmb_publish_store,
			     ring, &err) == 0, "consumer open");
	for (i = 0; i < 2000; i++) {
		struct hmb_event ev = {
			.ts_ns = (uint64_t)i, .opcode = 1,
			.flags = (i % 97 == 0) ? 0x80 : 0,	/* unknown bit */
			.payload_len = (uint16_t)((i * 37) % 700),
			.payload = payload,
		};
		struct hmb_buf_iter it;
		struct hmb_record rec;
		size_t len;
		int r;

		if (hmb_producer_emit(&p, &ev, HMB_EMIT_TRY) == HMB_EMIT_FULL) {
			/* Drain: count both ways. */
			hmb_consumer_poll(c, &avail, &err);
			if (hmb_consumer_read(c, buf, 1 << 16, &len, &err) < 0)
				bad++;
			if (hmb_buf_count(buf, len, &n, &err))
				bad++;
			hmb_buf_iter_init(&it, buf, len, 0);
			while ((r = hmb_buf_iter_next(&it, &rec, &err)) == 1) {
				if (rec.kind == HMB_KIND_MARKER)
					it_mark++;
				else if (rec.kind == HMB_KIND_IGNORED)
					it_ign++;
				else
					it_rec++;
			}
			if (r < 0)
				bad++;
			hmb_consumer_commit(c, &err);
			i--;
		}
	}
	ok(bad == 0, "no errors while draining");
	ok(n.records == it_rec && n.markers == it_mark && n.ignored == it_ign,
	   "counts agree with the iterator (%llu/%llu/%llu)",
	   (unsigned long long)n.records, (unsigned long long)n.markers,
	   (unsigned long long)n.ignored);
	ok(n.markers > 0 && n.ignored > 0, "markers and ignored records seen");

	/* Error paths on a hand-made buffer of two records. */
	{
		struct hmb_record_hdr h = { .magic = HMB_RECORD_MAGIC, .payload_len = 8 };
		uint8_t b[80] = { 0 };
		struct hmb_buf_counts m = { 0, 0, 0 };

		memcpy(b, &h, sizeof(h));
		memcpy(b + 40, &h, sizeof(h));
		ok(hmb_buf_count(b, 80, &m, &err) == 0 && m.records == 2, "two records");
		ok(hmb_buf_count(b, 75, &m, &err) == HMB_E_TRUNC_PAYLOAD &&
		   err.offset == 40, "cut payload named at offset 40");
		ok(hmb_buf_count(b, 50, &m, &err) == HMB_E_TRUNC_HDR, "cut header");
		b[40] = 'X';
		ok(hmb_buf_count(b, 80, &m, &err) == HMB_E_REC_MAGIC && err.offset == 40,
		   "bad magic named at offset 40");
		h.payload_len = 5000;
		memcpy(b, &h, sizeof(h));
		ok(hmb_buf_count(b, 80, &m, &err) == HMB_E_REC_LEN, "payload_len over 4064");
		ok(hmb_buf_count(NULL, 0, &m, &err) == 0, "empty buffer");
	}
	hmb_consumer_close(c);
	free(ring);
	free(buf);
	return tap_done();
}
