// SPDX-License-Identifier: GPL-2.0
/*
 * bridge.c - the in-kernel consumer: drains a ring and emits one
 * hmb_trace_record event per data record, for perf, ftrace and BPF.
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
	u32 off = (u32)(cursor & (ring->ring_size - 1));

	ring->bstats.corrupt++;
	WRITE_ONCE(ring->bridge_stopped, true);
	if (READ_ONCE(ring->reason) == HMB_CORRUPT_NONE)
		WRITE_ONCE(ring->reason, reason);
	trace_hmb_trace_corrupt(ring->id, cursor, off,
				hmb_trace_reason_str(reason));
	dev_err_ratelimited(&ring->dev,
			    "bridge stopped: %s at cursor %llu (record area offset %u); write 1 to bridge to retry\n",
			    hmb_trace_reason_str(reason), cursor, off);
}

/*
 * One batch: head is read once, every record header is copied out of the
 * ring before it is checked (the device may rewrite it under us), and the
 * tail is published once at the end, after the events hold their copies.
 * The walk compares distances from the cursor (head - cur, bytes left in
 * the lap), never cursors: both count modulo 2^64, and in the last lap
 * before 2^64 a computed lap end wraps to 0.  A batch takes at most
 * HMB_BRIDGE_BATCH_MAX steps and yields the CPU every HMB_BRIDGE_RESCHED,
 * whatever the steps are.
 */
void hmb_bridge_work(struct work_struct *work)
{
	struct hmb_trace_ring *ring = container_of(work, struct hmb_trace_ring,
						   bridge_work);
	struct hmb_bridge_stats *st = &ring->bstats;
	struct hmb_ring_hdr *hdr = ring->hdr;
	enum hmb_trace_corrupt_reason reason = HMB_CORRUPT_NONE;
	u32 mask = ring->ring_size - 1;
	struct hmb_record_hdr rh;
	u64 head, cur, start;
	u32 seq;
	unsigned int n = 0;
	bool more = false;
	u32 flags;

	if (READ_ONCE(ring->owner) != HMB_OWNER_BRIDGE ||
	    READ_ONCE(ring->bridge_stopped))
		return;

	head = hmb_hdr_head_acquire(hdr);
	flags = hmb_hdr_flags(hdr);
	if ((flags & HMB_RING_FLAG_OVERFLOWED) &&
	    !(ring->bridge_flags & HMB_RING_FLAG_OVERFLOWED))
		st->overflows++;
	ring->bridge_flags = flags;

	cur = ring->bridge_tail;
	start = cur;
	if (hmb_cursor_before(head, ring->bridge_last_head))
		reason = HMB_CORRUPT_HEAD_BACKWARDS;
	else
		reason = hmb_trace_check_cursors(ring, head, cur);
	if (reason != HMB_CORRUPT_NONE) {
		hmb_bridge_corrupt(ring, head, reason);
		return;
	}

	/* From here on 0 < head - cur <= ring_size while there is work. */
	while (cur != head) {
		u32 off = (u32)(cur & mask);
		u32 left = ring->ring_size - off;
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
		memcpy(&rh, ring->area + off, sizeof(rh));
		if (hmb_le32(rh.magic) != HMB_RECORD_MAGIC) {
			reason = HMB_CORRUPT_REC_MAGIC;
			break;
		}
		if (rh.flags & HMB_REC_FLAG_WRAP_MARKER) {
			/* Carries the next record's seq and consumes none. */
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

		seq = hmb_le32(rh.seq);
		if (ring->bridge_have_seq && seq != ring->bridge_seq + 1)
			st->lost += (u32)(seq - ring->bridge_seq - 1);
		ring->bridge_seq = seq;
		ring->bridge_have_seq = true;

		if (rh.flags & ~HMB_REC_FLAGS_KNOWN) {
			st->ignored++;
		} else {
			trace_hmb_trace_record(ring->id, &rh, ring->area + off +
					       HMB_RECORD_HDR_SIZE);
			st->records++;
		}
		cur += size;
	}

	st->bytes += cur - start;
	ring->bridge_tail = cur;
	ring->bridge_last_head = head;
	/* Every copy above is complete before the producer may reuse it. */
	hmb_hdr_publish_tail(hdr, cur);
	if (reason != HMB_CORRUPT_NONE)
		hmb_bridge_corrupt(ring, cur, reason);
	else if (more)
		queue_work(system_unbound_wq, &ring->bridge_work);
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
	cancel_work_sync(&ring->bridge_work);
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
 * at a time), -ENODEV after the provider went away.
 */
int hmb_bridge_enable(struct hmb_trace_ring *ring)
{
	int ret = 0;

	mutex_lock(&ring->lock);
	if (ring->owner == HMB_OWNER_BRIDGE && READ_ONCE(ring->bridge_stopped))
		hmb_bridge_stop_locked(ring);	/* retry after corruption */
	if (ring->dead) {
		ret = -ENODEV;
	} else if (ring->owner == HMB_OWNER_BRIDGE) {
		ret = 0;
	} else if (ring->owner != HMB_OWNER_NONE) {
		ret = -EBUSY;
	} else {
		memset(&ring->bstats, 0, sizeof(ring->bstats));
		ring->bridge_tail = hmb_hdr_tail(ring->hdr);
		ring->bridge_last_head = ring->bridge_tail;
		ring->bridge_flags = hmb_hdr_flags(ring->hdr);
		ring->bridge_have_seq = false;
		WRITE_ONCE(ring->bridge_stopped, false);
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
