// SPDX-License-Identifier: GPL-2.0
/*
 * bridge.c - the in-kernel consumer: drains a ring and emits one
 * hmb_trace_record event per data record, for perf, ftrace and BPF, and
 * the same records in batches as hmb_trace_records, for BPF.
 */
#include <linux/kernel.h>
#include <linux/sched.h>
#include <linux/string.h>

#include "hmb_trace_priv.h"
#include "hmb_trace_events.h"

/* Steps (records, markers, skips) between two cond_resched() calls. */
#define HMB_BRIDGE_RESCHED	1024
/* Steps per run of the work item; more is left to its next run. */
#define HMB_BRIDGE_BATCH_MAX	65536

static void hmb_bridge_corrupt(struct hmb_trace_ring *ring, u64 cursor,
			       enum hmb_trace_corrupt_reason reason)
{
	u32 off = (u32)(cursor & (ring->prov.ring_size - 1));

	ring->br.stats.corrupt++;
	WRITE_ONCE(ring->br.stopped, true);
	if (READ_ONCE(ring->reason) == HMB_CORRUPT_NONE)
		WRITE_ONCE(ring->reason, reason);
	trace_hmb_trace_corrupt(ring->id, cursor, off,
				hmb_trace_reason_str(reason));
	dev_err_ratelimited(&ring->dev,
			    "bridge stopped: %s at cursor %llu (record area offset %u); write 1 to bridge to retry\n",
			    hmb_trace_reason_str(reason), cursor, off);
}

/*
 * Emit the record (@rh, the bridge's checked copy of its header; @payload
 * in the ring) as hmb_trace_record, and add it to the ring's next
 * hmb_trace_records event while that is enabled, @nb records there so
 * far; emit that event when it is full.  Returns the records now there.
 */
static unsigned int hmb_bridge_emit(struct hmb_trace_ring *ring,
				    unsigned int nb,
				    const struct hmb_record_hdr *rh,
				    const u8 *payload)
{
	struct hmb_bridge_rec *br = &ring->br.batch[nb];
	u16 len = min_t(u16, hmb_le16(rh->payload_len), HMB_BRIDGE_HEAD);

	trace_hmb_trace_record(ring->id, rh, payload);
	if (!trace_hmb_trace_records_enabled())
		return nb;
	nb++;
	br->hdr = *rh;
	br->payload = (u64)(uintptr_t)payload;
	memcpy(br->head, payload, len);
	memset(br->head + len, 0, HMB_BRIDGE_HEAD - len);
	if (nb < HMB_BRIDGE_BATCH)
		return nb;
	trace_hmb_trace_records(ring->id, ring->br.batch, nb);
	return 0;
}

/*
 * Sequence accounting of one record (docs/format.md §10): a forward gap of
 * less than 2^31 is lost records, also across a re-initialisation (the
 * controller's seq continues over it); a seq at most one ring's worth of
 * records behind the highest seen inside an epoch is a duplicate, not
 * emitted; anything else is a producer restart and counts nothing.
 * Returns false for a duplicate.
 */
static bool hmb_bridge_seq(struct hmb_trace_ring *ring, u32 seq)
{
	struct hmb_bridge_stats *st = &ring->br.stats;
	u32 d = seq - ring->br.seq - 1;

	if (ring->br.have_seq && d) {
		bool back_a_little = ring->br.seq - seq <
				     ring->prov.ring_size / HMB_RECORD_HDR_SIZE;

		if (d < 0x80000000U) {
			st->lost += d;
		} else if (!ring->br.new_epoch && back_a_little) {
			st->duplicates++;
			return false;
		}
	}
	ring->br.seq = seq;
	ring->br.have_seq = true;
	ring->br.new_epoch = false;
	return true;
}

/*
 * FROZEN, a new sync generation or a tail the bridge did not write (it is
 * the only consumer) mean the producer side stopped the ring and may be
 * rewriting it (docs/format.md §11.2).  A FROZEN ring whose header is
 * untouched is drained as usual; once FROZEN is clear again the ring has
 * thawed or begun a new epoch.  Returns false if there is nothing to do
 * until a later batch, true to drain (with *reason set on corruption).
 */
static bool hmb_bridge_epoch(struct hmb_trace_ring *ring, u32 flags, u64 head,
			     u64 tail, u32 gen,
			     enum hmb_trace_corrupt_reason *reason)
{
	bool rewritten = gen != ring->br.gen || tail != ring->br.tail;

	if ((flags & HMB_RING_FLAG_FROZEN) || rewritten)
		ring->br.frozen = true;
	if (!ring->br.frozen)
		return true;
	if (flags & HMB_RING_FLAG_FROZEN)
		return !rewritten &&
		       !hmb_cursor_before(head, ring->br.last_head);
	*reason = hmb_trace_check_cursors(ring, head, tail);
	/* The drain walks 8-byte records from the new tail, as at enable. */
	if (*reason == HMB_CORRUPT_NONE && (tail & (HMB_RECORD_ALIGN - 1)))
		*reason = HMB_CORRUPT_TAIL_UNALIGNED;
	if (*reason != HMB_CORRUPT_NONE)
		return true;
	if (rewritten || hmb_cursor_before(head, ring->br.last_head)) {
		ring->br.tail = tail;
		ring->br.last_head = tail;
		ring->br.new_epoch = true;
		ring->br.stats.epochs++;
	}
	ring->br.gen = gen;
	ring->br.frozen = false;
	return true;
}

/*
 * One batch: head is read once, every record header is copied out of the
 * ring before it is checked (the device may rewrite it under us), and the
 * tail is published once at the end, after the events hold their copies
 * (hmb_trace_records carries up to HMB_BRIDGE_BATCH records, emitted when
 * full and once more before the tail moves).
 * The walk compares distances from the cursor (head - cur, bytes left in
 * the lap), never cursors: both count modulo 2^64, and in the last lap
 * before 2^64 a computed lap end wraps to 0.  A batch takes at most
 * HMB_BRIDGE_BATCH_MAX steps and yields the CPU every HMB_BRIDGE_RESCHED,
 * whatever the steps are.
 */
void hmb_bridge_work(struct work_struct *work)
{
	struct hmb_trace_ring *ring = container_of(work, struct hmb_trace_ring,
						   br.work);
	struct hmb_bridge_stats *st = &ring->br.stats;
	struct hmb_ring_hdr *hdr = ring->prov.hdr;
	enum hmb_trace_corrupt_reason reason = HMB_CORRUPT_NONE;
	u32 mask = ring->prov.ring_size - 1;
	struct hmb_record_hdr rh;
	u64 head, tail, cur, start;
	unsigned int n = 0, nb = 0;
	bool published, more = false;
	u32 flags, gen;

	if (READ_ONCE(ring->owner) != HMB_OWNER_BRIDGE ||
	    READ_ONCE(ring->br.stopped))
		return;

	gen = READ_ONCE(ring->prov.sync->gen);
	/* Pairs with the release that clears FROZEN after a re-initialisation. */
	flags = hmb_le32(smp_load_acquire(&hdr->flags));
	head = hmb_hdr_head_acquire(hdr);
	tail = hmb_hdr_tail(hdr);
	if ((flags & HMB_RING_FLAG_OVERFLOWED) &&
	    !(ring->br.flags & HMB_RING_FLAG_OVERFLOWED))
		st->overflows++;
	ring->br.flags = flags;

	if (!hmb_bridge_epoch(ring, flags, head, tail, gen, &reason))
		return;
	cur = ring->br.tail;
	start = cur;
	if (reason == HMB_CORRUPT_NONE) {
		if (hmb_cursor_before(head, ring->br.last_head))
			reason = HMB_CORRUPT_HEAD_BACKWARDS;
		else
			reason = hmb_trace_check_cursors(ring, head, cur);
	}
	if (reason != HMB_CORRUPT_NONE) {
		hmb_bridge_corrupt(ring, head, reason);
		return;
	}

	/* From here on 0 < head - cur <= ring_size while there is work. */
	while (cur != head) {
		u32 off = (u32)(cur & mask);
		u32 left = ring->prov.ring_size - off;
		u64 avail = head - cur;
		u32 size;

		if (++n > HMB_BRIDGE_BATCH_MAX) {
			more = true;
			break;
		}
		if (n % HMB_BRIDGE_RESCHED == 0)
			cond_resched();
		if (left < HMB_RECORD_HDR_SIZE) {
			/* Implicit skip: no marker fits in 8, 16 or 24 bytes. */
			if (left > avail) {
				reason = HMB_CORRUPT_SKIP_BEYOND_HEAD;
				break;
			}
			cur += left;
			continue;
		}
		memcpy(&rh, ring->prov.area + off, sizeof(rh));
		if (hmb_le32(rh.magic) != HMB_RECORD_MAGIC) {
			reason = HMB_CORRUPT_REC_MAGIC;
			break;
		}
		if (rh.flags & HMB_REC_FLAG_WRAP_MARKER) {
			/* Carries the next record's seq and consumes none. */
			if (rh.payload_len) {
				reason = HMB_CORRUPT_MARKER_LEN;
				break;
			}
			if (left > avail) {
				reason = HMB_CORRUPT_SKIP_BEYOND_HEAD;
				break;
			}
			st->markers++;
			cur += left;
			continue;
		}
		if (hmb_le16(rh.payload_len) > HMB_RECORD_MAX_PAYLOAD) {
			reason = HMB_CORRUPT_REC_LEN;
			break;
		}
		size = HMB_RECORD_SIZE(hmb_le16(rh.payload_len));
		if (size > left) {
			reason = HMB_CORRUPT_REC_STRADDLE;
			break;
		}
		if (size > avail) {
			reason = HMB_CORRUPT_REC_BEYOND_HEAD;
			break;
		}

		if (!hmb_bridge_seq(ring, hmb_le32(rh.seq))) {
			/* A seq already seen: not emitted twice. */
		} else if (rh.flags & ~HMB_REC_FLAGS_KNOWN) {
			st->ignored++;
		} else {
			nb = hmb_bridge_emit(ring, nb, &rh, ring->prov.area + off +
					     HMB_RECORD_HDR_SIZE);
			st->records++;
		}
		cur += size;
	}

	/* Before the tail moves on: the events point into the ring. */
	if (nb)
		trace_hmb_trace_records(ring->id, ring->br.batch, nb);

	/*
	 * Under the sync lock, so the tail of this epoch never lands in a
	 * header the producer side rewrote meanwhile (then it starts a new
	 * epoch).
	 */
	spin_lock(&ring->prov.sync->lock);
	published = READ_ONCE(ring->prov.sync->gen) == gen &&
		    hmb_hdr_tail(hdr) == start;
	if (published) {
		/*
		 * Pairs with the producer's acquire of tail: every copy above
		 * is complete before the producer may overwrite the bytes.
		 */
		hmb_hdr_publish_tail(hdr, cur);
	}
	spin_unlock(&ring->prov.sync->lock);
	if (!published) {
		/*
		 * Rewritten under us: what the batch read may be the new
		 * epoch's bytes, so a check that failed on them is no
		 * corruption.  The next batch starts the new epoch.
		 */
		ring->br.frozen = true;
		st->bytes += cur - start;
		return;
	}
	st->bytes += cur - start;
	ring->br.tail = cur;
	ring->br.last_head = head;
	if (reason != HMB_CORRUPT_NONE)
		hmb_bridge_corrupt(ring, cur, reason);
	else if (more)
		queue_work(system_unbound_wq, &ring->br.work);
}

/*
 * Caller holds ring->lock and the bridge owns the ring.  The sampler stops
 * at once; the lock is dropped while a batch that already runs finishes,
 * so that sysfs and unregistering never wait behind it.  Meanwhile the
 * slot stays taken (HMB_OWNER_BRIDGE_STOPPING).  Returns with the lock held
 * and the ring unowned; the caller rechecks anything else it relies on.
 */
static void hmb_bridge_stop_locked(struct hmb_trace_ring *ring)
{
	ring->owner = HMB_OWNER_BRIDGE_STOPPING;
	hmb_trace_stop_sampler(ring);
	trace_hmb_trace_consumer(ring->id, false, "bridge", 0);
	mutex_unlock(&ring->lock);
	cancel_work_sync(&ring->br.work);
	mutex_lock(&ring->lock);
	ring->owner = HMB_OWNER_NONE;
}

/**
 * hmb_bridge_enable() - make the bridge the consumer of @ring.
 * @ring: the ring.
 *
 * Counters restart from zero and the bridge resumes at the ring's tail.
 * After corruption stopped it, enabling again restarts it the same way.
 *
 * Return: 0 (also when it is already on), -EBUSY while the character
 * device is open or the bridge is still being switched off (one consumer
 * at a time), -ENODEV after the provider went away, -EINVAL when the
 * ring's tail is not 8-byte aligned.
 */
int hmb_bridge_enable(struct hmb_trace_ring *ring)
{
	u64 tail;
	int ret = 0;

	mutex_lock(&ring->lock);
	if (ring->owner == HMB_OWNER_BRIDGE && READ_ONCE(ring->br.stopped))
		hmb_bridge_stop_locked(ring);	/* retry after corruption */
	tail = ring->dead ? 0 : hmb_hdr_tail(ring->prov.hdr);
	if (ring->dead) {
		ret = -ENODEV;
	} else if (ring->owner == HMB_OWNER_BRIDGE) {
		ret = 0;
	} else if (ring->owner != HMB_OWNER_NONE) {
		ret = -EBUSY;
	} else if (tail & (HMB_RECORD_ALIGN - 1)) {
		/* The drain walks 8-byte records from here: refuse it. */
		dev_err(&ring->dev, "bridge not started: %s (tail %llu)\n",
			hmb_trace_reason_str(HMB_CORRUPT_TAIL_UNALIGNED), tail);
		ret = -EINVAL;
	} else {
		memset(&ring->br.stats, 0, sizeof(ring->br.stats));
		ring->br.gen = READ_ONCE(ring->prov.sync->gen);
		ring->br.tail = tail;
		ring->br.last_head = tail;
		/*
		 * A ring found OVERFLOWED counts as one overflow seen: its
		 * producer dropped records before the bridge came.
		 */
		ring->br.flags = hmb_hdr_flags(ring->prov.hdr) &
				     ~HMB_RING_FLAG_OVERFLOWED;
		ring->br.have_seq = false;
		ring->br.new_epoch = false;
		ring->br.frozen = false;
		WRITE_ONCE(ring->br.stopped, false);
		trace_hmb_trace_consumer(ring->id, true, "bridge", 0);
		ring->owner = HMB_OWNER_BRIDGE;
		hmb_trace_start_sampler(ring);
	}
	mutex_unlock(&ring->lock);
	return ret;
}

/**
 * hmb_bridge_disable() - stop the bridge of @ring, if it runs.
 * @ring: the ring.
 *
 * Waits for a running batch (without holding the ring's lock); afterwards
 * the bridge touches nothing.
 */
void hmb_bridge_disable(struct hmb_trace_ring *ring)
{
	mutex_lock(&ring->lock);
	if (ring->owner == HMB_OWNER_BRIDGE)
		hmb_bridge_stop_locked(ring);
	mutex_unlock(&ring->lock);
}
