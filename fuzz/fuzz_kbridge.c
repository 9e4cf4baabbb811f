// SPDX-License-Identifier: Apache-2.0
/*
 * The kernel module's reading of the ring: the bridge's walk
 * (kernel/bridge.c: hmb_bridge_work, hmb_bridge_enable) and the head
 * sampler's header and cursor checks (kernel/core.c from its reason names
 * to its sysfs section, taken out at build time), compiled from the
 * module's source on fuzz/kshim/ (the kernel API in user space) and
 * included here, so that their static functions are reachable.
 *
 * The input is a program: an honest producer writes records (wrap
 * markers, implicit skips, drops with OVERFLOWED when full), FROZEN is
 * set and cleared, the ring is re-initialised as the providers do it; a
 * hostile device scribbles on the record area, moves head anywhere,
 * rewrites header fields, and a consumer publishes any tail; the sampler
 * and the bridge run between the steps.  Byte 0: ring size (64 to 8192),
 * where the cursors start (0, the last laps before 2^64, anywhere),
 * hmb_trace_records on or off.
 */
#include <linux/kernel.h>

#include "hmb_trace_priv.h"
#include "hmb_trace_events.h"
#include "bridge.c"
#include "core-sampler.c"

#include "fuzz.h"

#define MAX_STEPS 400
#define QUEUE 4096

bool kshim_trace_enabled;
static bool work_queued;

/* What the honest producer wrote and the bridge has not emitted yet. */
static struct {
	u32 seq[QUEUE];
	u16 len[QUEUE];
	unsigned int head, n;
} q;
static bool honest;		/* nothing hostile since the bridge started */
static u64 emitted;		/* hmb_trace_record events since then */
static struct hmb_record_hdr pending[HMB_BRIDGE_BATCH];
static unsigned int npending;
static struct hmb_trace_ring *ring;

void kshim_log(const char *fmt, ...)
{
	char buf[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
}

bool kshim_queue_work(struct work_struct *w)
{
	FZ_ASSERT(w == &ring->br.work);
	work_queued = true;
	return true;
}

static u8 pattern(u32 seq, unsigned int i)
{
	return (u8)(seq * 7 + i);
}

void kshim_hmb_trace_record(u32 ring_id, const struct hmb_record_hdr *hdr,
			    const void *payload)
{
	const u8 *p = payload;
	u16 len = hmb_le16(hdr->payload_len);
	u8 sum = 0;

	(void)ring_id;
	/* a whole, checked data record inside the record area */
	FZ_ASSERT(hmb_le32(hdr->magic) == HMB_RECORD_MAGIC);
	FZ_ASSERT(len <= HMB_RECORD_MAX_PAYLOAD);
	FZ_ASSERT(!(hdr->flags & ~HMB_REC_FLAG_TRUNCATED));
	FZ_ASSERT(p >= ring->prov.area + HMB_RECORD_HDR_SIZE &&
		  p + len <= ring->prov.area + ring->prov.ring_size);
	for (unsigned int i = 0; i < len; i++)
		sum ^= p[i];	/* every byte readable (ASan) */
	(void)sum;
	emitted++;
	if (kshim_trace_enabled) {
		FZ_ASSERT(npending < HMB_BRIDGE_BATCH);
		pending[npending++] = *hdr;
	}
	if (!honest)
		return;
	/* each record once, in order, as written */
	FZ_ASSERT(q.n);
	FZ_ASSERT(hmb_le32(hdr->seq) == q.seq[q.head] && len == q.len[q.head]);
	for (unsigned int i = 0; i < len; i++)
		FZ_ASSERT(p[i] == pattern(q.seq[q.head], i));
	q.head = (q.head + 1) % QUEUE;
	q.n--;
}

void kshim_hmb_trace_records(u32 ring_id, const struct hmb_bridge_rec *recs,
			     u32 nr)
{
	(void)ring_id;
	/* the batch is the records shown one by one since the last one */
	FZ_ASSERT(kshim_trace_enabled && nr >= 1 && nr <= HMB_BRIDGE_BATCH);
	FZ_ASSERT(nr == npending);
	for (u32 i = 0; i < nr; i++) {
		u16 len = hmb_le16(recs[i].hdr.payload_len);

		FZ_ASSERT(!memcmp(&recs[i].hdr, &pending[i], sizeof(pending[i])));
		for (unsigned int k = len; k < HMB_BRIDGE_HEAD; k++)
			FZ_ASSERT(recs[i].head[k] == 0);
	}
	npending = 0;
}

void kshim_hmb_trace_overflow(u32 id, u64 head, u64 tail, u32 flags)
{
	(void)id; (void)head; (void)tail;
	FZ_ASSERT(flags & HMB_RING_FLAG_OVERFLOWED);
}

void kshim_hmb_trace_frozen(u32 id, u64 head, u64 tail, u32 flags)
{
	(void)id; (void)head; (void)tail;
	FZ_ASSERT(flags & HMB_RING_FLAG_FROZEN);
}

void kshim_hmb_trace_corrupt(u32 id, u64 cursor, u32 offset,
			     const char *reason)
{
	(void)id;
	FZ_ASSERT(offset == (u32)(cursor & (ring->prov.ring_size - 1)));
	FZ_ASSERT(reason && strcmp(reason, "unknown") && strcmp(reason, "none"));
}

void kshim_hmb_trace_consumer(u32 id, bool attach, const char *who, pid_t pid)
{
	(void)id; (void)attach; (void)pid;
	FZ_ASSERT(!strcmp(who, "bridge"));
}

static u64 hdr_head(void) { return hmb_le64(ring->prov.hdr->head); }
static u64 hdr_tail(void) { return hmb_le64(ring->prov.hdr->tail); }
static void set_head(u64 v) { smp_store_release(&ring->prov.hdr->head, hmb_cpu_to_le64(v)); }

static void set_flags(u32 set, u32 clear)
{
	u32 f = hmb_le32(ring->prov.hdr->flags);

	smp_store_release(&ring->prov.hdr->flags, hmb_cpu_to_le32((f | set) & ~clear));
}

static void put_hdr(u64 cur, u32 seq, u8 flags, u16 len)
{
	struct hmb_record_hdr h = {
		.magic = hmb_cpu_to_le32(HMB_RECORD_MAGIC),
		.seq = hmb_cpu_to_le32(seq),
		.ts_ns = hmb_cpu_to_le64(seq * 1000ULL),
		.opcode = hmb_cpu_to_le16(0x100),
		.flags = flags,
		.payload_len = hmb_cpu_to_le16(len),
	};

	memcpy(ring->prov.area + (cur & (ring->prov.ring_size - 1)), &h, sizeof(h));
}

/* One record as a producer writes it (docs/format.md), or a drop. */
static void produce(u32 *seq, u16 len)
{
	u32 mask = ring->prov.ring_size - 1;
	u64 head = hdr_head(), used = head - hdr_tail();
	u32 left = ring->prov.ring_size - (u32)(head & mask);
	u32 size = HMB_RECORD_SIZE(len);
	u64 need = size > left ? (u64)left + size : size;

	if (used > ring->prov.ring_size || need > ring->prov.ring_size - used ||
	    q.n == QUEUE) {
		set_flags(HMB_RING_FLAG_OVERFLOWED, 0);
		(*seq)++;	/* dropped: a gap the bridge counts as lost */
		return;
	}
	if (size > left) {
		if (left >= HMB_RECORD_HDR_SIZE)
			put_hdr(head, *seq, HMB_REC_FLAG_WRAP_MARKER, 0);
		head += left;
	}
	put_hdr(head, *seq, 0, len);
	for (unsigned int i = 0; i < len; i++)
		ring->prov.area[((head & mask) + HMB_RECORD_HDR_SIZE + i)] =
			pattern(*seq, i);
	q.seq[(q.head + q.n) % QUEUE] = *seq;
	q.len[(q.head + q.n) % QUEUE] = len;
	q.n++;
	(*seq)++;
	set_head(head + size);
}

static void run_bridge(void)
{
	u64 tail0 = hdr_tail();

	work_queued = false;
	hmb_bridge_work(&ring->br.work);
	FZ_ASSERT(!(ring->br.tail & (HMB_RECORD_ALIGN - 1)));
	FZ_ASSERT(ring->br.stats.records == emitted);
	/* the tail only moves forward, within one ring of where it was */
	FZ_ASSERT(hdr_tail() - tail0 <= ring->prov.ring_size);
	if (honest) {
		FZ_ASSERT(!ring->br.stopped);
		FZ_ASSERT(!ring->br.stats.corrupt);
		FZ_ASSERT(!ring->br.stats.duplicates && !ring->br.stats.ignored);
	}
}

static void run_sampler(void)
{
	struct hmb_ring_hdr *h = ring->prov.hdr;
	enum hmb_trace_corrupt_reason want = HMB_CORRUPT_NONE;
	enum hmb_trace_corrupt_reason before = ring->reason;

	if (hmb_le32(h->magic) != HMB_RING_MAGIC)
		want = HMB_CORRUPT_RING_MAGIC;
	else if (hmb_le32(h->version) != HMB_TRACE_ABI_VERSION)
		want = HMB_CORRUPT_RING_VERSION;
	else if (hmb_le32(h->ring_size) != ring->prov.ring_size ||
		 hmb_le32(h->record_area_off) != HMB_RECORD_AREA_OFF)
		want = HMB_CORRUPT_RING_GEOMETRY;
	FZ_ASSERT(hmb_sampler_fn(&ring->smp.timer) == HRTIMER_RESTART);
	/* the first corruption is kept; a bad header is always one */
	if (before != HMB_CORRUPT_NONE)
		FZ_ASSERT(ring->reason == before);
	else if (want != HMB_CORRUPT_NONE)
		FZ_ASSERT(ring->reason == want);
	if (honest)
		FZ_ASSERT(ring->reason == HMB_CORRUPT_NONE);
	FZ_ASSERT(ring->smp.cur_interval_ns >= 1000ULL * NSEC_PER_USEC &&
		  ring->smp.cur_interval_ns <= 64000ULL * NSEC_PER_USEC);
}

static void start_bridge(void)
{
	int rc = hmb_bridge_enable(ring);

	if (hdr_tail() & (HMB_RECORD_ALIGN - 1)) {
		FZ_ASSERT(rc == -EINVAL);
		return;
	}
	FZ_ASSERT(rc == 0 && ring->owner == HMB_OWNER_BRIDGE);
	FZ_ASSERT(!ring->br.stopped && !ring->br.stats.records);
	emitted = 0;
	npending = 0;
	/*
	 * Honest again only from a clean state: a valid header, the records
	 * from the tail on all the producer's, cursors sane.
	 */
	honest = false;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const u64 starts[] = { 0, (u64)-64, (u64)-4096, (u64)-8 };
	static const u16 lens[] = { 0, 8, 24, 40, 100, 300, 1000, 4064 };
	struct fz f = { data, size };
	u8 b0 = fz_u8(&f);
	u32 rsize = 64u << (b0 & 7), seq = fz_u32(&f);
	u64 start = (b0 & 0x30) == 0x30 ? fz_u64(&f) & ~7ULL : starts[(b0 >> 4) & 3];
	u8 *region;

	kshim_trace_enabled = b0 & 0x40;
	region = malloc(HMB_RECORD_AREA_OFF + rsize);	/* exact: ASan sees past it */
	ring = calloc(1, sizeof(*ring));
	if (!region || !ring)
		abort();
	memset(region, 0, HMB_RECORD_AREA_OFF + rsize);
	ring->prov.kaddr = region;
	ring->prov.size = HMB_RECORD_AREA_OFF + rsize;
	ring->prov.hdr = (struct hmb_ring_hdr *)region;
	ring->prov.area = region + HMB_RECORD_AREA_OFF;
	ring->prov.ring_size = rsize;
	ring->smp.poll_interval_us = 1000;
	ring->prov.sync = &ring->prov.own_sync;
	hmb_trace_hdr_write(ring->prov.sync, ring->prov.hdr, rsize, false);
	ring->prov.hdr->head = ring->prov.hdr->tail = hmb_cpu_to_le64(start);
	q.head = q.n = 0;
	start_bridge();
	honest = true;

	for (unsigned int step = 0; step < MAX_STEPS && f.n; step++) {
		u8 op = fz_u8(&f);

		switch (op % 16) {
		case 0: case 1: case 2: case 3: case 4:
			produce(&seq, lens[(op >> 4) & 7]);
			break;
		case 5:
			run_sampler();
			break;
		case 6: case 7:
			if (ring->owner == HMB_OWNER_BRIDGE)
				run_bridge();
			break;
		case 8:		/* FROZEN set or cleared by the producer side */
			if (op & 0x10)
				set_flags(HMB_RING_FLAG_FROZEN, 0);
			else
				set_flags(0, HMB_RING_FLAG_FROZEN);
			break;
		case 9:		/* re-initialised: what was not drained is gone */
			hmb_trace_hdr_write(ring->prov.sync, ring->prov.hdr, rsize, true);
			q.head = q.n = 0;
			break;
		case 10: {	/* the device writes anywhere in the record area */
			u32 off = fz_u16(&f) & (rsize - 1);

			ring->prov.area[off] = fz_u8(&f);
			honest = false;
			break;
		}
		case 11:	/* head anywhere, near the tail or not */
			set_head(op & 0x10 ? hdr_tail() + (fz_u16(&f) & ~7u) :
				 fz_u64(&f));
			honest = false;
			break;
		case 12: {	/* a header field rewritten */
			__le32 *w = (__le32 *)ring->prov.hdr + (fz_u8(&f) & 15);

			*w = hmb_cpu_to_le32(fz_u32(&f));
			honest = false;
			break;
		}
		case 13:	/* a consumer's SET_TAIL, taken by the sampler */
			atomic64_set(&ring->smp.pub_tail, (s64)fz_u64(&f));
			honest = false;
			break;
		case 14:	/* tail written behind the bridge's back */
			ring->prov.hdr->tail = hmb_cpu_to_le64(op & 0x10 ?
				hdr_head() : fz_u64(&f));
			honest = false;
			break;
		case 15:	/* bridge off and on again (after corruption) */
			hmb_bridge_disable(ring);
			FZ_ASSERT(ring->owner == HMB_OWNER_NONE);
			start_bridge();
			break;
		}
		/* the work the sampler or a full batch queued */
		for (int k = 0; work_queued && k < 4; k++)
			if (ring->owner == HMB_OWNER_BRIDGE)
				run_bridge();
	}
	/* an honest ring drains to the last record */
	if (honest && ring->owner == HMB_OWNER_BRIDGE &&
	    !(hmb_le32(ring->prov.hdr->flags) & HMB_RING_FLAG_FROZEN)) {
		for (int k = 0; k < 8 && hdr_tail() != hdr_head(); k++)
			run_bridge();
		FZ_ASSERT(hdr_tail() == hdr_head() && q.n == 0);
	}
	hmb_bridge_disable(ring);
	free(ring);
	free(region);
	return 0;
}
