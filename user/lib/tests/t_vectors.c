// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The C producer against the independent Python model: replay the
 * scenarios of docs/test-vectors/gen.py with hmb_producer_emit() and
 * require the ring images to be byte-identical to the committed vectors.
 * Two implementations of the producer rules, one set of bytes.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hmbtrace.h"
#include "tap.h"

#ifndef HMB_TOP
#define HMB_TOP "../.."
#endif
#define VDIR HMB_TOP "/docs/test-vectors/v1/"

static uint8_t img[64 + 4096];

static struct hmb_ring_hdr *hdr(void)
{
	return (struct hmb_ring_hdr *)img;
}

static void pattern(uint8_t *p, uint32_t seq, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		p[i] = (uint8_t)(seq * 7 + i);
}

static int emit(struct hmb_producer *p, unsigned len, uint64_t ts,
		uint16_t opcode, uint8_t cpu, uint8_t flags)
{
	uint8_t pl[HMB_RECORD_MAX_PAYLOAD];
	struct hmb_event ev = { .ts_ns = ts, .opcode = opcode, .cpu = cpu,
				.flags = flags, .payload_len = len,
				.payload = pl };

	pattern(pl, p->next_seq, len);
	return hmb_producer_emit(p, &ev, HMB_EMIT_DROP);
}

static void start(struct hmb_producer *p, uint32_t rs, uint8_t fill)
{
	struct hmb_error e;

	memset(img, fill, sizeof(img));
	memset(img, 0, 64);
	hmb_producer_init(p, img, 64 + rs, rs, 0, &e);
}

static void compare(const char *name, uint32_t rs)
{
	static uint8_t want[sizeof(img) + 1];
	char path[512];
	size_t n = 0;
	FILE *f;

	snprintf(path, sizeof(path), VDIR "%s.bin", name);
	f = fopen(path, "rb");
	if (f) {
		n = fread(want, 1, sizeof(want), f);
		fclose(f);
	}
	ok(f && n == 64 + rs && !memcmp(want, img, n),
	   "C producer reproduces %s.bin byte for byte (%s)", name, path);
}

int main(void)
{
	static const unsigned lens[] = { 100, 40, 200, 0, 64, 16 };
	struct hmb_producer p;
	unsigned i;

	start(&p, 256, 0);
	compare("empty", 256);

	start(&p, 256, 0);
	{
		uint8_t pl[16];
		struct hmb_event ev = { .ts_ns = 1000, .opcode = 0x0101,
					.cpu = 2, .payload_len = 16,
					.payload = pl };

		for (i = 0; i < 16; i++)
			pl[i] = i;
		hmb_producer_emit(&p, &ev, HMB_EMIT_DROP);
	}
	compare("single", 256);

	start(&p, 1024, 0);
	for (i = 0; i < 6; i++)
		emit(&p, lens[i], 10 * p.next_seq, i, 0, 0);
	hdr()->tail = p.head;
	for (i = 0; p.head - hdr()->tail < 1024; i++)
		if (emit(&p, lens[i % 6], 10 * p.next_seq, i % 6, 0, 0) !=
		    HMB_EMITTED)
			break;
	ok(p.markers == 1 && p.head - hdr()->tail == 1024, "wrap: 1 marker");
	compare("wrap", 1024);

	start(&p, 512, 0xee);
	for (i = 0; i < 3; i++)
		emit(&p, i < 2 ? 200 : 8, 100 + p.next_seq, 2, 1, 0);
	hdr()->tail = HMB_RECORD_SIZE(200);
	emit(&p, 64, 100 + p.next_seq, 2, 1, 0);
	ok(p.implicit_wraps == 1 && p.head == 608, "implicit wrap at 504");
	compare("implicit-wrap", 512);

	start(&p, 512, 0);
	while (emit(&p, 40, 1000 + p.next_seq, 1, 0, 0) == HMB_EMITTED)
		;
	emit(&p, 40, 1000 + p.next_seq, 1, 0, 0);
	hdr()->tail = 3 * 72;
	while (emit(&p, 40, 1000 + p.next_seq, 1, 0, 0) == HMB_EMITTED)
		;
	ok(p.dropped == 3 && (hdr()->flags & HMB_RING_FLAG_OVERFLOWED),
	   "overflowed: 3 dropped, flag set");
	compare("overflowed", 512);

	start(&p, 256, 0);
	emit(&p, 8, 1, 3, 0, 0);
	emit(&p, 8, 2, 3, 0, 0x80);
	emit(&p, 12, 3, 3, 0, HMB_REC_FLAG_TRUNCATED);
	compare("unknown-flag", 256);
	return tap_done();
}
