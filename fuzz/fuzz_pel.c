// SPDX-License-Identifier: Apache-2.0
/*
 * The NVMe Persistent Event Log decoder (user/nvme/pel.c), which
 * `hmb-trace-analyze pel` runs on a log a drive or a file hands it.
 * Byte 0's low bit: the log as it is, or with its header made plausible
 * (log identifier 0Dh, LHL 492, TLL the input's length) so that the
 * fuzzer spends its time in the events; the rest is the log, copied into
 * a heap block of exactly its length.
 *
 * Oracles: every refusal names a byte inside the log (or its end); events
 * come in increasing offsets, each inside the decoded length, with its
 * vendor information and data inside it; every field points inside the
 * event's data; no more events than TNEV; the clock epoch (pel_clock_epoch)
 * is one of the events walked, or -1 when the walk failed.
 */
#include "pel.h"

#include "fuzz.h"

struct ctx {
	const uint8_t *lo, *hi;
	unsigned long fields;
};

static void field(const struct pel_field *f, void *arg)
{
	struct ctx *c = arg;

	FZ_ASSERT(f->name && f->name[0]);
	if (f->kind == PF_STR || f->kind == PF_HEX)
		FZ_ASSERT(f->p >= c->lo && f->len <= (size_t)(c->hi - f->p));
	c->fields++;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct pel_header h;
	struct pel_iter it;
	struct pel_event ev;
	struct pel_err e;
	size_t last = 0;
	uint8_t *b;
	int r;

	if (size < 1)
		return 0;
	b = malloc(size - 1 ? size - 1 : 1);
	if (!b)
		return 0;
	memcpy(b, data + 1, size - 1);
	size--;
	if ((data[0] & 1) && size >= PEL_HDR_LEN) {
		b[0] = PEL_LID;
		b[18] = 492 & 0xff;
		b[19] = 492 >> 8;
		for (unsigned int i = 0; i < 8; i++)
			b[8 + i] = (uint8_t)((uint64_t)size >> (8 * i));
	}
	if (pel_header(b, size, &h, &e)) {
		FZ_ASSERT(e.off <= size && e.msg[0]);
		free(b);
		return 0;
	}
	FZ_ASSERT(h.first >= PEL_HDR_LEN && h.end <= size);
	pel_iter_init(&it, b, &h);
	while ((r = pel_next(&it, &ev, &e)) == 1) {
		struct ctx c = { .lo = ev.data, .hi = ev.data + ev.len };

		FZ_ASSERT(ev.off >= h.first && ev.off >= last);
		FZ_ASSERT(ev.off + 3 + ev.ehl + ev.el <= h.end);
		FZ_ASSERT(ev.vsi == b + ev.off + 3 + ev.ehl);
		FZ_ASSERT(ev.data + ev.len <= b + h.end);
		FZ_ASSERT(ev.index < h.tnev);
		last = ev.off + 24;
		if (pel_fields(&ev, field, &c, &e))
			FZ_ASSERT(e.off >= ev.off && e.off <= h.end && e.msg[0]);
	}
	if (r < 0)
		FZ_ASSERT(e.off <= h.end && e.msg[0]);
	{
		long ep = pel_clock_epoch(b, &h);

		FZ_ASSERT(r < 0 ? ep == -1 : ep >= 0 && (ep < (long)it.n ||
							 ep == 0));
	}
	free(b);
	return 0;
}
