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

/* Records between two cond_resched() calls in one batch. */
#define HMB_BRIDGE_RESCHED	1024

static void hmb_bridge_corrupt(struct hmb_trace_ring *ring, u64 cursor,
			       enum hmb_trace_corrupt_reason reason)
{
	u32 off = (u32)(cursor & (ring->ring_size - 1));

	ring->bstats.corrupt++;
	ring->bridge_stopped = true;
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
	unsigned int n = 0;
	u32 flags;

	if (READ_ONCE(ring->owner) != HMB_OWNER_BRIDGE || ring->bridge_stopped)
		return;

	/* Pairs with the producer's release of head after the record bytes. */
	head = smp_load_acquire(&hdr->head);
	flags = READ_ONCE(hdr->flags);
	if ((flags & HMB_RING_FLAG_OVERFLOWED) &&
	    !(ring->bridge_flags & HMB_RING_FLAG_OVERFLOWED))
		st->overflows++;
	ring->bridge_flags = flags;

	cur = ring->bridge_tail;
	start = cur;
	if (head < ring->bridge_last_head)
		reason = HMB_CORRUPT_HEAD_BACKWARDS;
	else
		reason = hmb_trace_check_cursors(ring, head, cur);
	if (reason != HMB_CORRUPT_NONE) {
		hmb_bridge_corrupt(ring, head, reason);
		return;
	}

	while (cur < head) {
		u32 off = (u32)(cur & mask);
		u32 left = ring->ring_size - off;
		u32 size;

		if (left < HMB_RECORD_HDR_SIZE) {
			/* Implicit skip: no marker fits in 8, 16 or 24 bytes. */
			if (cur + left > head) {
				reason = HMB_CORRUPT_SKIP_BEYOND_HEAD;
				break;
			}
			cur += left;
			continue;
		}
		memcpy(&rh, ring->area + off, sizeof(rh));
		if (rh.magic != HMB_RECORD_MAGIC) {
			reason = HMB_CORRUPT_REC_MAGIC;
			break;
		}
		if (rh.flags & HMB_REC_FLAG_WRAP_MARKER) {
			/* Carries the next record's seq; consumes none (D3). */
			if (cur + left > head) {
				reason = HMB_CORRUPT_SKIP_BEYOND_HEAD;
				break;
			}
			st->markers++;
			cur += left;
			continue;
		}
		if (rh.payload_len > HMB_RECORD_MAX_PAYLOAD) {
			reason = HMB_CORRUPT_REC_LEN;
			break;
		}
		size = HMB_RECORD_SIZE(rh.payload_len);
		if (size > left) {
			reason = HMB_CORRUPT_REC_STRADDLE;
			break;
		}
		if (cur + size > head) {
			reason = HMB_CORRUPT_REC_BEYOND_HEAD;
			break;
		}

		if (ring->bridge_have_seq && rh.seq != ring->bridge_seq + 1)
			st->lost += (u32)(rh.seq - ring->bridge_seq - 1);
		ring->bridge_seq = rh.seq;
		ring->bridge_have_seq = true;

		if (rh.flags & ~HMB_REC_FLAGS_KNOWN) {
			st->ignored++;
		} else {
			trace_hmb_trace_record(ring->id, &rh, ring->area + off +
					       HMB_RECORD_HDR_SIZE);
			st->records++;
		}
		cur += size;
		if (++n % HMB_BRIDGE_RESCHED == 0)
			cond_resched();
	}

	st->bytes += cur - start;
	ring->bridge_tail = cur;
	ring->bridge_last_head = head;
	/*
	 * Pairs with the producer's acquire of tail: every copy above is
	 * complete before the producer may overwrite the bytes.
	 */
	smp_store_release(&hdr->tail, cur);
	if (reason != HMB_CORRUPT_NONE)
		hmb_bridge_corrupt(ring, cur, reason);
}

/**
 * hmb_bridge_enable() - make the bridge the consumer of @ring.
 * @ring: the ring.
 *
 * Counters restart from zero and the bridge resumes at the ring's tail.
 *
 * Return: 0 (also when it is already on), -EBUSY while the character
 * device is open (decision D7), -ENODEV after the provider went away.
 */
int hmb_bridge_enable(struct hmb_trace_ring *ring)
{
	int ret = 0;

	mutex_lock(&ring->lock);
	if (ring->dead) {
		ret = -ENODEV;
	} else if (ring->owner == HMB_OWNER_BRIDGE && !ring->bridge_stopped) {
		ret = 0;
	} else if (ring->owner != HMB_OWNER_NONE &&
		   ring->owner != HMB_OWNER_BRIDGE) {
		ret = -EBUSY;
	} else {
		if (ring->owner == HMB_OWNER_BRIDGE) {
			/* Retry after corruption: restart cleanly. */
			hmb_trace_stop_sampler(ring);
			cancel_work_sync(&ring->bridge_work);
		}
		memset(&ring->bstats, 0, sizeof(ring->bstats));
		ring->bridge_tail = READ_ONCE(ring->hdr->tail);
		ring->bridge_last_head = ring->bridge_tail;
		ring->bridge_flags = READ_ONCE(ring->hdr->flags);
		ring->bridge_have_seq = false;
		ring->bridge_stopped = false;
		if (ring->owner == HMB_OWNER_NONE)
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
 * Waits for a running batch; afterwards the bridge touches nothing.
 */
void hmb_bridge_disable(struct hmb_trace_ring *ring)
{
	mutex_lock(&ring->lock);
	if (ring->owner == HMB_OWNER_BRIDGE) {
		ring->owner = HMB_OWNER_NONE;
		hmb_trace_stop_sampler(ring);
		cancel_work_sync(&ring->bridge_work);
		trace_hmb_trace_consumer(ring->id, false, "bridge", 0);
	}
	mutex_unlock(&ring->lock);
}
