// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The ring producer, exactly as docs/format.md "Producer rules" states them
 * (used by the firmware simulator and the tests).  Single-threaded per ring.
 */
#include <inttypes.h>
#include <string.h>

#include "internal.h"

static int check_size(uint64_t ring_size, size_t len, struct hmb_error *err)
{
	if (!hmb__is_pow2(ring_size) || ring_size < HMB_RING_MIN_SIZE ||
	    ring_size > HMB_RING_MAX_SIZE)
		return hmb__err(err, HMB_E_RING_SIZE, 0, 0,
				"ring_size %" PRIu64 " is not a power of two between %u and %u",
				ring_size, HMB_RING_MIN_SIZE, HMB_RING_MAX_SIZE);
	if (len < HMB_RECORD_AREA_OFF + ring_size)
		return hmb__err(err, HMB_E_RING_SHORT, 0, len,
				"%zu bytes cannot hold the header and a ring of %" PRIu64,
				len, ring_size);
	return 0;
}

static void write_header(struct hmb_producer *p)
{
	volatile struct hmb_ring_hdr *h = p->hdr;

	h->magic = HMB_RING_MAGIC;
	h->version = HMB_TRACE_ABI_VERSION;
	h->ring_size = p->ring_size;
	h->record_area_off = HMB_RECORD_AREA_OFF;
	h->reserved0 = 0;
	h->reserved1 = 0;
	h->reserved2 = 0;
	h->reserved3 = 0;
	h->tail = 0;
	h->head = 0;
}

static void reset_state(struct hmb_producer *p, uint32_t first_seq)
{
	p->next_seq = first_seq;
	p->first_seq = first_seq;
	p->head = 0;
	p->tail_cache = 0;
}

int hmb_producer_init(struct hmb_producer *p, void *base, size_t len,
		      uint32_t ring_size, uint32_t first_seq,
		      struct hmb_error *err)
{
	int rc;

	if (!p || !base)
		return hmb__err(err, HMB_E_INVAL, 0, 0, "no producer or ring");
	if ((uintptr_t)base & (HMB_RECORD_ALIGN - 1))
		return hmb__err(err, HMB_E_INVAL, 0, 0,
				"ring %p is not 8-byte aligned", base);
	rc = check_size(ring_size, len, err);
	if (rc)
		return rc;
	memset(p, 0, sizeof(*p));
	p->hdr = base;
	p->area = (uint8_t *)base + HMB_RECORD_AREA_OFF;
	p->ring_size = ring_size;
	reset_state(p, first_seq);
	write_header(p);
	/* Everything above is visible before flags say "valid, not frozen". */
	hmb__store_rel32(&p->hdr->flags, 0);
	return 0;
}

void hmb_producer_reinit(struct hmb_producer *p, uint32_t first_seq)
{
	/* Order per docs/format.md "Re-initialisation": FROZEN first... */
	hmb__store_rel32(&p->hdr->flags,
			 p->hdr->flags | HMB_RING_FLAG_FROZEN);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	reset_state(p, first_seq);
	write_header(p);
	/* ...then the rewritten header, then FROZEN cleared with release. */
	hmb__store_rel32(&p->hdr->flags, 0);
}

void hmb_producer_publish(struct hmb_producer *p)
{
	/* Pairs with the consumer's acquire load of head. */
	hmb__store_rel64(&p->hdr->head, p->head);
}

void hmb_producer_set_flags(struct hmb_producer *p, uint32_t set,
			    uint32_t clear)
{
	uint32_t f = p->hdr->flags;

	hmb__store_rel32(&p->hdr->flags, (f | set) & ~clear);
}

static int drop(struct hmb_producer *p)
{
	p->next_seq++;
	p->dropped++;
	if (!(p->hdr->flags & HMB_RING_FLAG_OVERFLOWED))
		hmb_producer_set_flags(p, HMB_RING_FLAG_OVERFLOWED, 0);
	return HMB_EMIT_DROPPED;
}

/* Skip the @rem bytes left in the lap at @off: a marker if one fits. */
static void do_wrap(struct hmb_producer *p, const struct hmb_event *ev,
		    uint64_t off, uint64_t rem)
{
	if (rem >= HMB_RECORD_HDR_SIZE) {
		struct hmb_record_hdr m = {
			.magic = HMB_RECORD_MAGIC,
			.seq = p->next_seq,	/* the next record's seq */
			.ts_ns = ev->ts_ns,
			.flags = HMB_REC_FLAG_WRAP_MARKER,
		};

		memcpy(p->area + off, &m, sizeof(m));
		p->markers++;
	} else {
		p->implicit_wraps++;
	}
	p->head += rem;
}

/*
 * Does @need more bytes fit between the cached tail and head?  Distances
 * only (cursors are counters modulo 2^64), and a tail that is not within
 * ring_size behind head (a consumer that published nonsense) leaves no
 * room at all rather than wrapping the sum around.
 */
static bool fits(const struct hmb_producer *p, uint64_t need)
{
	uint64_t used = p->head - p->tail_cache;

	return used <= p->ring_size && need <= p->ring_size - used;
}

int hmb_producer_emit(struct hmb_producer *p, const struct hmb_event *ev,
		      int mode)
{
	const int m = mode & ~HMB_EMIT_DEFER;
	const bool defer = mode & HMB_EMIT_DEFER;
	struct hmb_record_hdr h;
	uint64_t rs, s, off, rem, skip, pad;

	if (!p || !ev || (m != HMB_EMIT_DROP && m != HMB_EMIT_TRY) ||
	    ev->payload_len > HMB_RECORD_MAX_PAYLOAD ||
	    (ev->payload_len && !ev->payload))
		return HMB_E_INVAL;
	rs = p->ring_size;
	s = HMB_RECORD_SIZE(ev->payload_len);
	if (s > rs) {
		/* Can never fit this ring. */
		if (m == HMB_EMIT_TRY)
			return HMB_E_INVAL;
		return drop(p);
	}
	off = p->head & (rs - 1);
	rem = rs - off;
	skip = s > rem ? rem : 0;
	if (!fits(p, skip + s)) {
		/* Pairs with the consumer's release publication of tail. */
		p->tail_cache = hmb__load_acq64(&p->hdr->tail);
		if (!fits(p, skip + s)) {
			if (m == HMB_EMIT_DROP)
				return drop(p);
			/*
			 * TRY: publish the wrap alone when it fits, or a
			 * record as large as the ring could never be written.
			 */
			if (!skip || !fits(p, skip))
				return HMB_EMIT_FULL;
			do_wrap(p, ev, off, rem);
			if (!defer)
				hmb_producer_publish(p);
			if (!fits(p, s))
				return HMB_EMIT_FULL;
			skip = 0;
		}
	}
	if (skip)
		do_wrap(p, ev, off, rem);
	off = p->head & (rs - 1);
	h = (struct hmb_record_hdr){
		.magic = HMB_RECORD_MAGIC,
		.seq = p->next_seq,
		.ts_ns = ev->ts_ns,
		.opcode = ev->opcode,
		.cpu = ev->cpu,
		.flags = ev->flags,
		.payload_len = ev->payload_len,
	};
	memcpy(p->area + off, &h, sizeof(h));
	if (ev->payload_len)
		memcpy(p->area + off + HMB_RECORD_HDR_SIZE, ev->payload,
		       ev->payload_len);
	pad = s - HMB_RECORD_HDR_SIZE - ev->payload_len;
	if (pad)
		memset(p->area + off + HMB_RECORD_HDR_SIZE + ev->payload_len,
		       0, pad);
	p->head += s;
	p->next_seq++;
	p->produced++;
	p->bytes += s;
	if (!defer)
		hmb_producer_publish(p);
	/* OVERFLOWED means "currently dropping": clear it once we write. */
	if (p->hdr->flags & HMB_RING_FLAG_OVERFLOWED)
		hmb_producer_set_flags(p, 0, HMB_RING_FLAG_OVERFLOWED);
	return HMB_EMITTED;
}
