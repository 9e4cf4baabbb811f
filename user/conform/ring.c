// SPDX-License-Identifier: GPL-2.0
/*
 * The trace ring phases of hmb-trace-conform: the tool's HMB with the
 * trace slice last (its header written by libhmbtrace, as the host's
 * driver would), consumed with libhmbtrace after every I/O and every
 * record handed to the library's rule checker; then a stalled consumer
 * (OVERFLOWED), a stalled consumer with a tail the controller must not
 * use, EHM=0 (FROZEN), the host's re-initialisation and EHM=1
 * MR=1 (a new epoch), a controller reset (FROZEN again), and the ring
 * given back for a controller shutdown (FROZEN once more).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "conform.h"
#include "hmbtrace_util.h"

struct ring {
	struct conform *cf;
	struct hmb_consumer *c;
	volatile struct hmb_ring_hdr *hdr;
	uint8_t *area;
	bool dead;		/* the consumer refused the ring */
	uint64_t got;		/* records and markers read */
};

static uint32_t rflags(struct ring *r)
{
	return __atomic_load_n(&r->hdr->flags, __ATOMIC_ACQUIRE);
}

static uint64_t rhead(struct ring *r)
{
	return __atomic_load_n(&r->hdr->head, __ATOMIC_ACQUIRE);
}

/* Read what is there into the checker; the number of records read. */
static uint64_t drain(struct ring *r)
{
	struct hmb_error err = { 0 };
	struct hmb_record rec;
	uint64_t avail, tail, n = 0;
	int k;

	if (r->dead)
		return 0;
	tail = __atomic_load_n(&r->hdr->tail, __ATOMIC_ACQUIRE);
	if (hmb_consumer_poll(r->c, &avail, &err) < 0) {
		hmb_conform_consumer_error(&r->cf->ck, &err, rhead(r));
		r->dead = true;
		return 0;
	}
	hmb_conform_poll(&r->cf->ck, hmb_consumer_head(r->c), tail, rflags(r));
	while ((k = hmb_consumer_next(r->c, &rec, &err)) == 1) {
		hmb_conform_record(&r->cf->ck, &rec);
		n++;
	}
	if (k < 0) {
		hmb_conform_consumer_error(&r->cf->ck, &err, hmb_consumer_head(r->c));
		r->dead = true;
	}
	if (n && hmb_consumer_commit(r->c, &err) < 0) {
		hmb_conform_consumer_error(&r->cf->ck, &err, hmb_consumer_head(r->c));
		r->dead = true;
	}
	if (!n && hmb_consumer_reinit(r->c, &err) == 1)
		hmb_conform_epoch(&r->cf->ck);
	r->got += n;
	return n;
}

static void io(struct ring *r, bool and_drain)
{
	if (do_io(r->cf)) {
		r->cf->aborted = true;
		snprintf(r->cf->abort_msg, sizeof(r->cf->abort_msg),
			 "I/O on %s failed", r->cf->ns);
		return;
	}
	if (and_drain)
		drain(r);
}

/* I/O for @secs seconds (at least 16 commands), draining after each. */
static void io_for(struct ring *r, uint32_t secs)
{
	uint64_t end = hmb_now_ns(CLOCK_MONOTONIC) + (uint64_t)secs * 1000000000u;
	uint64_t n = 0;

	while ((n++ < 16 || hmb_now_ns(CLOCK_MONOTONIC) < end) && !r->cf->aborted)
		io(r, true);
}

static int enable(struct conform *cf, uint32_t cdw11)
{
	uint8_t *l = cf->list.va;
	uint32_t i;

	memset(l, 0, (size_t)cf->list.pages * PAGE);
	for (i = 0; i < cf->nfill; i++)
		pt_put_desc(l, i, cf->fill[i].pa, cf->chunk_pages);
	pt_put_desc(l, cf->nfill, cf->slice.pa, cf->slice_pages);
	return pt_set_hmb(cf->fd, cdw11, cf->hsize, cf->list.pa, cf->nfill + 1);
}

/* Stall until OVERFLOWED (or 4 rings' worth of commands), then resume. */
static void overflow(struct ring *r)
{
	struct conform *cf = r->cf;
	uint32_t rs = cf->ring_size, flags = 0;
	uint64_t i, limit = (uint64_t)rs / 32 * 4 + 64, tail, head, lost0;
	uint8_t *snap = malloc(rs);

	if (!snap)
		die("malloc");
	for (i = 0; i < limit && !cf->aborted; i++) {
		io(r, false);
		flags = rflags(r);
		if (flags & HMB_RING_FLAG_OVERFLOWED)
			break;
	}
	tnote(cf, T_OVF_SET, flags & HMB_RING_FLAG_OVERFLOWED,
	      "%llu commands with the consumer stalled, head - tail = %llu of "
	      "%u bytes, flags 0x%x: OVERFLOWED never set",
	      (unsigned long long)i,
	      (unsigned long long)(rhead(r) - r->hdr->tail), rs, flags);
	/* more commands now: each record must be dropped, not written over */
	tail = r->hdr->tail;
	head = rhead(r);
	memcpy(snap, r->area, rs);
	for (i = 0; i < 32 && !cf->aborted; i++)
		io(r, false);
	for (i = 0; i < head - tail; i += 8) {
		uint32_t o = (uint32_t)((tail + i) & (rs - 1));

		if (memcmp(snap + o, r->area + o, 8))
			break;
	}
	tnote(cf, T_OVF_KEEP, i >= head - tail,
	      "unconsumed bytes at cursor %llu (tail %llu, head %llu) changed "
	      "while the ring was full", (unsigned long long)(tail + i),
	      (unsigned long long)tail, (unsigned long long)head);
	free(snap);
	lost0 = cf->ck.lost;
	while (drain(r))
		;
	for (i = 0; i < 8 && !cf->aborted; i++)
		io(r, true);
	if (flags & HMB_RING_FLAG_OVERFLOWED)	/* the controller says it dropped */
		tnote(cf, T_OVF_SEQ, cf->ck.lost > lost0,
		      "OVERFLOWED was set but the records after the stall continue "
		      "the seqs without a gap: the dropped records took no seq");
	flags = rflags(r);
	tnote(cf, T_OVF_CLEAR, !(flags & HMB_RING_FLAG_OVERFLOWED),
	      "flags 0x%x after the consumer caught up and %llu records more",
	      flags, (unsigned long long)i);
}

/*
 * A tail the controller must not use (16.6): not 8-byte aligned, half a
 * ring ahead of the good one and published once head is past it (the
 * consumer stalled), so that a controller that took it would write half
 * a ring over unconsumed records.  Head may get at most ring_size ahead
 * of the last good tail; then the good tail again, and everything
 * drained.
 */
static void bad_tail(struct ring *r)
{
	struct conform *cf = r->cf;
	uint32_t rs = cf->ring_size;
	/* a ring's worth if each command writes one record of 32 bytes or more */
	uint64_t i, limit = (uint64_t)rs / 32 + 64, good, head, bad;

	while (drain(r))
		;
	good = __atomic_load_n(&r->hdr->tail, __ATOMIC_ACQUIRE);
	bad = good + rs / 2 + 4;
	for (i = 0; i < limit && rhead(r) < bad + 4 &&
	     !(rflags(r) & HMB_RING_FLAG_OVERFLOWED) && !cf->aborted; i++)
		io(r, false);
	__atomic_store_n(&r->hdr->tail, bad, __ATOMIC_RELEASE);
	for (i = 0; i < limit && !cf->aborted; i++)
		io(r, false);
	head = rhead(r);
	__atomic_store_n(&r->hdr->tail, good, __ATOMIC_RELEASE);
	tnote(cf, T_BAD_TAIL, head - good <= rs,
	      "with tail %llu published (not 8-byte aligned; the good one %llu) "
	      "head went to %llu, %llu bytes ahead of the good tail in a ring "
	      "of %u: the controller used the bad tail",
	      (unsigned long long)bad, (unsigned long long)good,
	      (unsigned long long)head, (unsigned long long)(head - good), rs);
	if (head - good > rs) {
		/*
		 * unconsumed records were written over: what is read from
		 * here on would blame rules the controller did not break
		 */
		r->dead = true;
		return;
	}
	while (drain(r))
		;
	for (i = 0; i < 8 && !cf->aborted; i++)
		io(r, true);
}

/* EHM=0 must freeze the ring and stop the producer. */
static void freeze_ehm0(struct ring *r)
{
	struct conform *cf = r->cf;
	uint64_t head;
	uint32_t flags;
	int st, i;

	st = pt_set_hmb(cf->fd, 0, 0, 0, 0);
	tnote(cf, T_SF_DISABLE, st == ST_OK, "EHM=0: status 0x%x", st);
	flags = rflags(r);
	tnote(cf, T_FROZEN_EHM0, flags & HMB_RING_FLAG_FROZEN,
	      "flags 0x%x after Set Features EHM=0", flags);
	head = rhead(r);
	for (i = 0; i < 16 && !cf->aborted; i++)
		io(r, false);
	tnote(cf, T_FROZEN_QUIET, rhead(r) == head,
	      "head moved from %llu to %llu after FROZEN",
	      (unsigned long long)head, (unsigned long long)rhead(r));
	while (drain(r))
		;
	drain(r);	/* sees FROZEN: the consumer expects a re-initialisation */
}

/* The host re-initialises the ring (format.md 11.2) and enables again. */
static void reinit(struct ring *r, struct hmb_producer *host)
{
	struct conform *cf = r->cf;
	uint64_t before = r->got, epochs = cf->ck.epochs;
	int st;

	hmb_producer_reinit(host, 0);
	st = enable(cf, 3);
	tnote(cf, T_SF_VALID, st == ST_OK, "EHM=1 MR=1: status 0x%x", st);
	io_for(r, 1);
	tnote(cf, T_REINIT, r->got > before && cf->ck.epochs > epochs,
	      "after the re-initialisation and EHM=1 MR=1: %llu records, "
	      "new epoch %s", (unsigned long long)(r->got - before),
	      cf->ck.epochs > epochs ? "seen" : "not seen");
}

static void reset(struct ring *r)
{
	struct conform *cf = r->cf;
	uint32_t flags;

	if (ctrl_reset(cf)) {
		tnote(cf, T_FROZEN_RESET, false, "NVME_IOCTL_RESET failed");
		return;
	}
	cf->linux_back = true;	/* the driver set its own HMB up again */
	flags = rflags(r);
	tnote(cf, T_FROZEN_RESET, flags & HMB_RING_FLAG_FROZEN,
	      "flags 0x%x after a controller reset", flags);
	while (drain(r))
		;
}

/*
 * A shutdown must freeze the ring as a reset does.  After the reset the
 * driver has its own HMB: EHM=0 for that, the host's re-initialisation,
 * EHM=1 with the tool's list, records again; then the driver is unbound
 * from the PCI function (its remove sets CC.SHN to 01b, as at power-off),
 * FROZEN must be in the flags, and the driver is bound again.  Not done
 * (the rule not exercised, the reason said) with --no-shutdown, when a
 * namespace is in use or sysfs does not name the driver, or when the
 * reset left the ring unfrozen (the consumer could not follow a
 * re-initialisation the producer never announced).
 */
static void shutdown_ctrl(struct ring *r, struct hmb_producer *host)
{
	struct conform *cf = r->cf;
	uint64_t before = r->got, ops = cf->io_ops;
	char msg[256], held[64];
	uint32_t flags;
	int st;

	if (!cf->no_shut[0] && r->dead)
		snprintf(cf->no_shut, sizeof(cf->no_shut), "the records stopped "
			 "being read at a rule that ends the stream");
	if (!cf->no_shut[0] && !cf->linux_back)
		snprintf(cf->no_shut, sizeof(cf->no_shut), "the reset failed");
	if (!cf->no_shut[0] && !(rflags(r) & HMB_RING_FLAG_FROZEN))
		snprintf(cf->no_shut, sizeof(cf->no_shut),
			 "the reset left the ring unfrozen");
	if (!cf->no_shut[0] && ns_busy(cf->dev, held, sizeof(held)))
		snprintf(cf->no_shut, sizeof(cf->no_shut), "%s is in use "
			 "(mounted or held), so the driver stays bound", held);
	if (cf->no_shut[0]) {
		printf("# frozen-shutdown not checked: %s\n", cf->no_shut);
		return;
	}
	st = pt_set_hmb(cf->fd, 0, 0, 0, 0);
	tnote(cf, T_SF_DISABLE, st == ST_OK, "EHM=0 after the reset: status 0x%x", st);
	hmb_producer_reinit(host, 0);
	st = enable(cf, 1);
	tnote(cf, T_SF_VALID, st == ST_OK,
	      "EHM=1 with the trace slice after the reset: status 0x%x", st);
	if (st) {
		ctrl_reset(cf);		/* the driver sets its HMB up again */
		return;
	}
	io_for(r, 1);
	tnote(cf, T_ADOPT, r->got > before,
	      "the ring re-initialised and given back after the reset: no "
	      "record after %llu commands",
	      (unsigned long long)(cf->io_ops - ops));
	if (r->got == before || r->dead || cf->aborted) {
		ctrl_reset(cf);
		return;
	}
	if (ctrl_unbind(cf, msg, sizeof(msg))) {
		cf->aborted = true;
		snprintf(cf->abort_msg, sizeof(cf->abort_msg), "%s", msg);
		return;
	}
	flags = rflags(r);
	tnote(cf, T_FROZEN_SHUTDOWN, flags & HMB_RING_FLAG_FROZEN,
	      "flags 0x%x after a shutdown (%s unbound from %s)", flags,
	      cf->bdf, cf->drv);
	while (drain(r))
		;
	if (ctrl_rebind(cf, msg, sizeof(msg))) {
		cf->aborted = true;
		snprintf(cf->abort_msg, sizeof(cf->abort_msg), "%s", msg);
		return;
	}
	printf("# shutdown: %s\n", msg);
}

void check_ring(struct conform *cf)
{
	struct hmb_producer host;
	struct hmb_error err = { 0 };
	struct ring r = { .cf = cf };
	uint32_t flags;
	int st;

	/* the host's header; flags left set: the controller must clear them */
	if (hmb_producer_init(&host, cf->slice.va, (size_t)cf->slice_pages * PAGE,
			      cf->ring_size, 0, &err)) {
		snprintf(cf->abort_msg, sizeof(cf->abort_msg), "%s", err.msg);
		cf->aborted = true;
		return;
	}
	r.hdr = (volatile struct hmb_ring_hdr *)cf->slice.va;
	r.area = cf->slice.va + HMB_RECORD_AREA_OFF;
	r.hdr->flags = HMB_RING_FLAG_OVERFLOWED;
	st = enable(cf, 1);
	tnote(cf, T_SF_VALID, st == ST_OK, "EHM=1 with the trace slice: status 0x%x", st);
	if (st)
		return;
	flags = rflags(&r);
	if (hmb_consumer_open(&r.c, cf->slice.va, HMB_RECORD_AREA_OFF + cf->ring_size,
			      hmb_publish_store, cf->slice.va, &err)) {
		hmb_conform_consumer_error(&cf->ck, &err, rhead(&r));
		pt_set_hmb(cf->fd, 0, 0, 0, 0);
		return;
	}
	hmb_conform_epoch(&cf->ck);
	io_for(&r, cf->io_secs);
	tnote(cf, T_ADOPT, r.got > 0 && !flags,
	      "flags 0x%x after adoption (the host left 0x1), %llu records "
	      "after %llu commands", flags, (unsigned long long)r.got,
	      (unsigned long long)cf->io_ops);
	if (r.got && !r.dead)
		overflow(&r);
	if (r.got && !r.dead && !cf->aborted)
		bad_tail(&r);
	freeze_ehm0(&r);
	if (!r.dead && !cf->aborted)
		reinit(&r, &host);
	if (!cf->aborted)
		reset(&r);
	if (!cf->aborted)
		shutdown_ctrl(&r, &host);
	hmb_consumer_close(r.c);
}
