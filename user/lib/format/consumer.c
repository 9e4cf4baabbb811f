// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The SPSC ring consumer (docs/format.md "Consumer rules").
 *
 * The ring is hostile input (format.md 13): head is loaded once per batch with
 * acquire semantics and checked against the previous head and our cursor;
 * record bytes are copied out of the ring first and validated on the copy,
 * so a device rewriting bytes under us can corrupt what we return but never
 * make us read outside the mapping.  Every value derived from the ring is
 * bounded by the ring_size captured at open, not re-read from the header.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "internal.h"

/* What hmb_consumer_verify() re-checks of one record written from spans. */
struct span_rec {
	uint32_t off;		/* ring offset (ring_size <= 2^31) */
	uint16_t payload_len;
	uint8_t flags;
};

struct hmb_consumer {
	const volatile uint8_t *base;
	size_t map_len;
	const volatile struct hmb_ring_hdr *hdr;
	const uint8_t *area;	/* volatile cast away: only memcpy'd from */
	int fd;			/* ring file read with pread, or -1 */
	off_t fd_area;		/* file offset of the record area */
	uint32_t ring_size;
	uint64_t mask;
	uint64_t cursor;	/* local, unpublished */
	uint64_t head;		/* last validated head */
	uint64_t published;	/* last tail handed to the hook */
	uint64_t hdr_tail;	/* tail the header should hold (ours) */
	hmb_publish_fn publish;
	void *pub_ctx;
	bool frozen_seen;
	bool stale;		/* the publish hook said our epoch is over */
	bool need_ack;		/* publish ack_tail before anything else */
	uint64_t ack_tail;	/* tail the header held when we read it */
	struct hmb_consumer_counts n;	/* copied out since open */
	/* the batch of the last hmb_consumer_spans(), for verify() */
	struct span_rec *sv;
	size_t sv_n, sv_cap;
	uint64_t sv_cursor;		/* cursor before that batch */
	struct hmb_consumer_counts sv_counts;
	uint8_t one[HMB_RECORD_MAX_SIZE];	/* for hmb__consumer_next */
};

int hmb_publish_store(void *ctx, uint64_t tail)
{
	volatile struct hmb_ring_hdr *h = ctx;

	if (!h)
		return -EINVAL;
	/* Pairs with the producer's acquire load of tail. */
	hmb__store_rel64(&h->tail, tail);
	return 0;
}

static void where_cur(const struct hmb_consumer *c, uint64_t cur, char *buf,
		      size_t len)
{
	snprintf(buf, len, "at cursor %" PRIu64 " (ring offset 0x%" PRIx64 ")",
		 cur, cur & c->mask);
}

/*
 * The checks both ring walks (consume, hmb_consumer_spans) make at cursor
 * @cur, with @rem bytes left in the lap and @left up to the polled head;
 * each returns 0 or the error (said in @err).
 */

/* Fewer than a header's bytes left in the lap: an implicit wrap. */
static int check_gap(const struct hmb_consumer *c, uint64_t cur,
		     uint64_t rem, uint64_t left, struct hmb_error *err)
{
	char where[96];

	if (left >= rem)
		return 0;
	where_cur(c, cur, where, sizeof(where));
	return hmb__err(err, HMB_E_HEAD_IN_GAP, 0, cur,
			"head %" PRIu64 " inside the %" PRIu64
			"-byte implicit wrap gap %s", c->head, rem, where);
}

/* A record header fits before the head. */
static int check_hdr_room(const struct hmb_consumer *c, uint64_t cur,
			  uint64_t left, struct hmb_error *err)
{
	char where[96];

	if (left >= HMB_RECORD_HDR_SIZE)
		return 0;
	where_cur(c, cur, where, sizeof(where));
	return hmb__err(err, HMB_E_REC_BEYOND_HEAD, 0, cur,
			"record header %s extends past head %" PRIu64,
			where, c->head);
}

/* Why check_rec() refused @h: the error, said. */
static __attribute__((noinline, cold)) int
rec_err(const struct hmb_consumer *c, const struct hmb_record_hdr *h,
	uint64_t cur, uint64_t rem, struct hmb_error *err)
{
	uint64_t s = HMB_RECORD_SIZE(h->payload_len);
	char where[96];

	where_cur(c, cur, where, sizeof(where));
	if (!hmb__rec_hdr_ok(h))
		return hmb__rec_validate(h, cur, where, err);
	if (s > rem)
		return hmb__err(err, HMB_E_REC_CROSS_LAP, 0, cur,
				"record of %" PRIu64 " bytes %s crosses the end of the lap (%" PRIu64
				" bytes left)", s, where, rem);
	return hmb__err(err, HMB_E_REC_BEYOND_HEAD, 0, cur,
			"record of %" PRIu64 " bytes %s extends past head %" PRIu64,
			s, where, c->head);
}

/* The head lies inside the skip of the wrap marker at @cur. */
static __attribute__((noinline, cold)) int
marker_err(const struct hmb_consumer *c, uint64_t cur, struct hmb_error *err)
{
	char where[96];

	where_cur(c, cur, where, sizeof(where));
	return hmb__err(err, HMB_E_HEAD_IN_GAP, 0, cur,
			"head %" PRIu64 " inside the skip after the wrap marker %s",
			c->head, where);
}

/*
 * The header copy @h: valid, and its record within the lap and the head
 * (a wrap marker's skip is the caller's: marker_err()).  Inline: the hot
 * path of both walks.
 */
static inline __attribute__((always_inline)) int
check_rec(const struct hmb_consumer *c, const struct hmb_record_hdr *h,
	  uint64_t cur, uint64_t rem, uint64_t left, struct hmb_error *err)
{
	uint64_t s = HMB_RECORD_SIZE(h->payload_len);

	if (__builtin_expect(hmb__rec_hdr_ok(h) && s <= rem && s <= left, 1))
		return 0;
	return rec_err(c, h, cur, rem, err);
}

/* Copy and validate the header; set up geometry.  Shared by open/reinit. */
static int load_header(struct hmb_consumer *c, uint64_t *head, uint64_t *tail,
		       struct hmb_error *err)
{
	struct hmb_ring_hdr h;
	uint64_t hd, tl;
	int rc;

	memcpy(&h, (const void *)c->base, sizeof(h));
	rc = hmb_ring_hdr_check(&h, c->map_len, err);
	if (rc)
		return rc;
	/* Pairs with the publisher's release store of tail. */
	tl = hmb__load_acq64(&c->hdr->tail);
	/* Pairs with the producer's release store of head. */
	hd = hmb__load_acq64(&c->hdr->head);
	if (tl & (HMB_RECORD_ALIGN - 1))
		return hmb__err(err, HMB_E_HEAD_MISALIGNED, 0, 0x18,
				"ring tail %" PRIu64 " at offset 0x18 is not 8-byte aligned",
				tl);
	if (hd & (HMB_RECORD_ALIGN - 1))
		return hmb__err(err, HMB_E_HEAD_MISALIGNED, 0, 0x10,
				"ring head %" PRIu64 " at offset 0x10 is not 8-byte aligned",
				hd);
	/*
	 * Cursors are byte counters modulo 2^64 (format.md section 4): head
	 * may have wrapped past 0 while tail has not.  Compare distances.
	 */
	if ((int64_t)(hd - tl) < 0)
		return hmb__err(err, HMB_E_HEAD_BACKWARDS, 0, 0x10,
				"ring head %" PRIu64 " is behind tail %" PRIu64,
				hd, tl);
	if (hd - tl > h.ring_size)
		return hmb__err(err, HMB_E_HEAD_AHEAD, 0, 0x10,
				"ring head %" PRIu64 " is %" PRIu64
				" bytes ahead of tail %" PRIu64 ", more than ring_size %" PRIu32,
				hd, hd - tl, tl, h.ring_size);
	c->ring_size = h.ring_size;
	c->mask = (uint64_t)h.ring_size - 1;
	*head = hd;
	*tail = tl;
	return 0;
}

int hmb_consumer_open(struct hmb_consumer **out, const volatile void *base,
		      size_t map_len, hmb_publish_fn publish, void *pub_ctx,
		      struct hmb_error *err)
{
	struct hmb_consumer *c;
	uint64_t head, tail;
	int rc;

	if (!out || !base)
		return hmb__err(err, HMB_E_INVAL, 0, 0, "no ring mapping given");
	*out = NULL;
	if ((uintptr_t)base & (HMB_RECORD_ALIGN - 1))
		return hmb__err(err, HMB_E_INVAL, 0, 0,
				"ring mapping %p is not 8-byte aligned", base);
	if (map_len < HMB_RING_HDR_SIZE)
		return hmb__err(err, HMB_E_RING_SHORT, 0, map_len,
				"mapping of %zu bytes is shorter than the %d-byte ring header",
				map_len, HMB_RING_HDR_SIZE);
	c = calloc(1, sizeof(*c));
	if (!c)
		return hmb__err(err, HMB_E_NOMEM, ENOMEM, 0,
				"out of memory for the consumer");
	c->base = base;
	c->map_len = map_len;
	c->hdr = base;
	c->area = (const uint8_t *)c->base + HMB_RECORD_AREA_OFF;
	c->fd = -1;
	c->publish = publish;
	c->pub_ctx = pub_ctx;
	rc = load_header(c, &head, &tail, err);
	if (rc) {
		free(c);
		return rc;
	}
	c->cursor = c->published = c->hdr_tail = c->ack_tail = tail;
	c->head = head;
	c->need_ack = publish != NULL;
	*out = c;
	return 0;
}

void hmb_consumer_close(struct hmb_consumer *c)
{
	if (c)
		free(c->sv);
	free(c);
}

int hmb_consumer_poll(struct hmb_consumer *c, uint64_t *avail,
		      struct hmb_error *err)
{
	uint32_t flags;
	uint64_t h;
	bool frozen;
	char where[96];

	if (!c || !avail)
		return hmb__err(err, HMB_E_INVAL, 0, 0, "no consumer");
	*avail = 0;
	flags = hmb__load_acq32(&c->hdr->flags);
	h = hmb__load_acq64(&c->hdr->head);
	frozen = flags & HMB_RING_FLAG_FROZEN;
	if (frozen)
		c->frozen_seen = true;
	if (c->stale) {
		c->head = c->cursor;
		return 0;	/* hmb_consumer_reinit() takes it from here */
	}
	/*
	 * Only the consumer's side writes tail, except a producer
	 * re-initialising the ring (format.md 11.2).  A tail we did not
	 * publish means the header was rewritten even if every FROZEN window
	 * fell between two polls: read nothing more of the old epoch and
	 * treat it as FROZEN seen.
	 */
	if (hmb__load_acq64(&c->hdr->tail) != c->hdr_tail) {
		c->frozen_seen = true;
		c->head = c->cursor;
		return 0;	/* hmb_consumer_reinit() takes it from here */
	}
	if ((int64_t)(h - c->head) < 0) {
		/*
		 * A frozen ring is being re-initialised: wait for reinit, and
		 * read nothing more of the old epoch (its bytes are being
		 * overwritten).
		 */
		if (c->frozen_seen) {
			c->head = c->cursor;
			return 0;
		}
		where_cur(c, c->cursor, where, sizeof(where));
		return hmb__err(err, HMB_E_HEAD_BACKWARDS, 0, c->cursor,
				"head moved backwards from %" PRIu64 " to %" PRIu64
				" (consumer %s)", c->head, h, where);
	}
	/*
	 * While FROZEN, a head that fails a check means the header is being
	 * rewritten: nothing is available, and read() must not go on to an
	 * older head either (it returns what poll said: nothing).
	 */
	if (h & (HMB_RECORD_ALIGN - 1)) {
		if (frozen) {
			c->head = c->cursor;
			return 0;
		}
		return hmb__err(err, HMB_E_HEAD_MISALIGNED, 0, c->cursor,
				"head %" PRIu64 " is not 8-byte aligned (consumer at cursor %" PRIu64 ")",
				h, c->cursor);
	}
	if (h - c->cursor > c->ring_size) {
		if (frozen) {
			c->head = c->cursor;
			return 0;
		}
		return hmb__err(err, HMB_E_HEAD_AHEAD, 0, c->cursor,
				"head %" PRIu64 " is %" PRIu64
				" bytes ahead of the consumer cursor %" PRIu64
				", more than ring_size %" PRIu32,
				h, h - c->cursor, c->cursor, c->ring_size);
	}
	c->head = h;
	*avail = h - c->cursor;
	return 0;
}

/*
 * Copy up to @n bytes of the record area at ring offset @off (cursor @cur)
 * into @dst: with pread(2) on the ring file when hmb_consumer_set_fd() gave
 * one, else from the mapping.  Either way a private copy, checked
 * afterwards.  Returns the bytes copied: all @n from the mapping; from the
 * file at least @need of them (a file cut short gives fewer: the records
 * wholly before its end are still read), else a negative HMB_E_IO.
 */
static ssize_t copy_out(const struct hmb_consumer *c, uint8_t *dst,
			uint64_t off, size_t n, size_t need, uint64_t cur,
			struct hmb_error *err)
{
	size_t got = 0;

	if (c->fd < 0) {
		memcpy(dst, c->area + off, n);
		return (ssize_t)n;
	}
	while (got < n) {
		ssize_t r = pread(c->fd, dst + got, n - got,
				  c->fd_area + (off_t)(off + got));

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return hmb__err(err, HMB_E_IO, errno, cur,
					"reading the ring file at ring offset 0x%" PRIx64 ": %s",
					off + got, strerror(errno));
		if (r == 0)
			break;
		got += (size_t)r;
	}
	if (got < need)
		return hmb__err(err, HMB_E_IO, ENXIO, cur,
				"the ring file ends at ring offset 0x%" PRIx64
				", inside the record at cursor %" PRIu64 " (cut short?)",
				off + got, cur);
	return (ssize_t)got;
}

int hmb_consumer_set_fd(struct hmb_consumer *c, int fd, off_t map_off,
			struct hmb_error *err)
{
	struct stat st;

	if (!c || fd < 0 || map_off < 0)
		return hmb__err(err, HMB_E_INVAL, 0, 0, "no consumer or ring file given");
	if (fstat(fd, &st))
		return hmb__err(err, HMB_E_IO, errno, 0, "fstat of the ring file: %s",
				strerror(errno));
	if (!S_ISREG(st.st_mode))
		return hmb__err(err, HMB_E_INVAL, 0, 0,
				"the ring's file is not a regular file (pread would not see the mapping's bytes)");
	c->fd = fd;
	c->fd_area = map_off + HMB_RECORD_AREA_OFF;
	return 0;
}

/* A data record handed out: one with flag bits unknown here is ignored. */
static inline void count_rec(struct hmb_consumer *c, uint8_t flags)
{
	if (flags & ~HMB_REC_FLAGS_KNOWN)
		c->n.ignored++;
	else
		c->n.records++;
}

/*
 * The common case of consume(), a few ns a record: data records (flags 0
 * or TRUNCATED only) lying wholly in the copied bytes @p[0, @n), whose
 * end is at or before both the lap's end and the head.  Returns the bytes
 * they take, *@k their number and *@lastoff the offset of the last one;
 * stops at anything else, which the general path then takes (and
 * refuses, if it must).  The checks are check_rec()'s, on the copy.
 */
static size_t walk_copied(const uint8_t *p, size_t n, unsigned long *k,
			  size_t *lastoff)
{
	size_t i = 0, last = 0, step = 0;
	unsigned long cnt = 0;

	while (n - i >= HMB_RECORD_HDR_SIZE) {
		__le32 magic;
		__le16 plen;
		size_t sz;

		memcpy(&magic, p + i, sizeof(magic));
		memcpy(&plen, p + i + 20, sizeof(plen));
		if (hmb_le32(magic) != HMB_RECORD_MAGIC ||
		    (p[i + 19] & ~HMB_REC_FLAG_TRUNCATED) ||
		    hmb_le16(plen) > HMB_RECORD_MAX_PAYLOAD)
			break;
		sz = HMB_RECORD_SIZE(hmb_le16(plen));
		if (sz > n - i)
			break;
		last = i;
		cnt++;
		/*
		 * A record the size of the one before (a firmware logging one
		 * kind of event) steps by that size, so that the next position
		 * does not wait for this length's load; the compare is a
		 * predicted branch.
		 */
		if (__builtin_expect(sz == step, 1)) {
			__asm__("" : "+r"(step));
			i += step;
		} else {
			i += sz;
			step = sz;
		}
	}
	*k = cnt;
	*lastoff = last;
	return i;
}

/*
 * Copy validated records from the cursor up to the last polled head into
 * @buf, at most @max_recs of them.  @last gets the cursor of the last
 * record stored.  See hmb_consumer_read() for the contract.
 */
static int consume(struct hmb_consumer *c, uint8_t *buf, size_t buflen,
		   size_t *len, unsigned long max_recs, uint64_t *last,
		   struct hmb_error *err)
{
	const uint64_t rs = c->ring_size, head = c->head;
	uint64_t cur = c->cursor, ck_end = c->cursor, refilled = UINT64_MAX;
	unsigned long nrec = 0;
	size_t out = 0;
	int rc = 0;

	/*
	 * Cursors are counters modulo 2^64: every comparison is between
	 * distances from @cur (head - cur, rem), never between absolute
	 * cursors, whose lap end wraps to 0 in the last lap before 2^64.
	 * poll() guarantees head - cur <= ring_size.
	 */
	while (cur != head && nrec < max_recs) {
		uint64_t off = cur & c->mask;
		uint64_t rem = rs - off;	/* bytes left in this lap */
		uint64_t left = head - cur;	/* bytes up to head */
		struct hmb_record_hdr h;
		ssize_t got;
		uint64_t s;

		if (rem < HMB_RECORD_HDR_SIZE) {
			/* Implicit wrap: no marker fits, skip the rest. */
			rc = check_gap(c, cur, rem, left, err);
			if (rc)
				break;
			cur = ck_end = cur + rem;
			continue;
		}
		rc = check_hdr_room(c, cur, left, err);
		if (rc)
			break;
		if (ck_end - cur < HMB_RECORD_HDR_SIZE) {
			uint64_t n = left < rem ? left : rem;

			if (buflen - out < HMB_RECORD_HDR_SIZE)
				break;		/* caller's buffer is full */
			if (n > buflen - out)
				n = buflen - out;
			/* One record wanted: do not copy a whole chunk. */
			if (max_recs == 1)
				n = HMB_RECORD_HDR_SIZE;
			got = copy_out(c, buf + out, off, n, HMB_RECORD_HDR_SIZE,
				       cur, err);
			if (got < 0) {
				rc = (int)got;
				break;
			}
			ck_end = cur + (uint64_t)got;
		}
		if (max_recs == ~0UL) {
			unsigned long k;
			size_t lo, adv;

			adv = walk_copied(buf + out, ck_end - cur, &k, &lo);
			if (k) {
				*last = cur + lo;
				out += adv;
				nrec += k;
				c->n.records += k;
				cur += adv;
				continue;
			}
		}
		/* Validate the copy, never the ring. */
		memcpy(&h, buf + out, sizeof(h));
		rc = check_rec(c, &h, cur, rem, left, err);
		if (rc)
			break;
		s = HMB_RECORD_SIZE(h.payload_len);
		if (h.flags & HMB_REC_FLAG_WRAP_MARKER) {
			if (left < rem) {
				rc = marker_err(c, cur, err);
				break;
			}
			out += s;
			nrec++;
			c->n.markers++;
			*last = cur;
			cur = ck_end = cur + rem;
			continue;
		}
		if (ck_end - cur < s) {
			/*
			 * The record continues past what we copied: copy it
			 * again from its start and re-validate that copy.
			 */
			uint64_t n = left < rem ? left : rem;

			if (buflen - out < s)
				break;		/* caller's buffer is full */
			if (n > buflen - out)
				n = buflen - out;
			/*
			 * One record wanted: copy just it, once.  A second
			 * refill at the same cursor (the bytes changed under
			 * us) copies all it can, so that a header that grows
			 * again fails a check instead of looping.
			 */
			if (max_recs == 1 && refilled != cur)
				n = s;
			refilled = cur;
			got = copy_out(c, buf + out, off, n, s, cur, err);
			if (got < 0) {
				rc = (int)got;
				break;
			}
			ck_end = cur + (uint64_t)got;
			continue;
		}
		out += s;
		nrec++;
		count_rec(c, h.flags);
		*last = cur;
		cur += s;
	}
	c->cursor = cur;
	*len = out;
	return rc;
}

int hmb_consumer_spans(struct hmb_consumer *c, struct iovec *iov,
		       int max_iov, size_t max_bytes, int *n_iov, size_t *len,
		       struct hmb_error *err)
{
	const uint64_t rs = c ? c->ring_size : 0, head = c ? c->head : 0;
	uint64_t cur;
	size_t out = 0, need;
	int n = 0, rc = 0;

	if (len)
		*len = 0;
	if (n_iov)
		*n_iov = 0;
	if (!c || !iov || max_iov < 1 || !n_iov || !len)
		return hmb__err(err, HMB_E_INVAL, 0, 0, "no consumer or span list");
	if (max_bytes < HMB_RECORD_MAX_SIZE)
		return hmb__err(err, HMB_E_INVAL, 0, 0,
				"span batch of %zu bytes is smaller than %d",
				max_bytes, HMB_RECORD_MAX_SIZE);
	/* At most one record per 32 bytes: the verify list never grows. */
	need = max_bytes / HMB_RECORD_HDR_SIZE;
	if (c->sv_cap < need) {
		struct span_rec *v = realloc(c->sv, need * sizeof(*v));

		if (!v)
			return hmb__err(err, HMB_E_NOMEM, ENOMEM, 0,
					"out of memory for %zu span records", need);
		c->sv = v;
		c->sv_cap = need;
	}
	c->sv_n = 0;
	c->sv_cursor = c->cursor;
	c->sv_counts = c->n;
	cur = c->cursor;
	/* Distances only, as in consume(): cursors count modulo 2^64. */
	while (cur != head) {
		uint64_t off = cur & c->mask;
		uint64_t rem = rs - off;
		uint64_t left = head - cur;
		const uint8_t *p = c->area + off;
		struct hmb_record_hdr h;
		uint64_t s;

		if (rem < HMB_RECORD_HDR_SIZE) {
			rc = check_gap(c, cur, rem, left, err);
			if (rc)
				break;
			cur += rem;
			continue;
		}
		rc = check_hdr_room(c, cur, left, err);
		if (rc)
			break;
		/*
		 * The walk from header to header defeats the hardware
		 * prefetcher on large records; ask for the bytes ahead, which
		 * the write will read anyway.
		 */
		__builtin_prefetch(p + 512);
		__builtin_prefetch(p + 1024);
		/* The header is copied once and only the copy is used. */
		memcpy(&h, p, sizeof(h));
		rc = check_rec(c, &h, cur, rem, left, err);
		if (rc)
			break;
		s = HMB_RECORD_SIZE(h.payload_len);
		if ((h.flags & HMB_REC_FLAG_WRAP_MARKER) && left < rem) {
			rc = marker_err(c, cur, err);
			break;
		}
		if (max_bytes - out < s)
			break;		/* the batch is full */
		if (n && (const uint8_t *)iov[n - 1].iov_base +
			 iov[n - 1].iov_len == p) {
			iov[n - 1].iov_len += s;
		} else {
			if (n == max_iov)
				break;	/* no span left for this record */
			iov[n].iov_base = (void *)p;
			iov[n].iov_len = s;
			n++;
		}
		c->sv[c->sv_n++] = (struct span_rec){
			.off = (uint32_t)off, .payload_len = h.payload_len,
			.flags = h.flags,
		};
		out += s;
		if (h.flags & HMB_REC_FLAG_WRAP_MARKER) {
			c->n.markers++;
			cur += rem;
		} else {
			count_rec(c, h.flags);
			cur += s;
		}
	}
	c->cursor = cur;
	*len = out;
	*n_iov = n;
	return rc;
}

int hmb_consumer_verify(struct hmb_consumer *c, struct hmb_error *err)
{
	size_t i;

	if (!c)
		return hmb__err(err, HMB_E_INVAL, 0, 0, "no consumer");
	for (i = 0; i < c->sv_n; i++) {
		const struct span_rec *v = &c->sv[i];
		struct hmb_record_hdr h;

		memcpy(&h, c->area + v->off, sizeof(h));
		if (h.magic == HMB_RECORD_MAGIC &&
		    h.payload_len == v->payload_len && h.flags == v->flags)
			continue;
		c->cursor = c->sv_cursor;
		c->n = c->sv_counts;
		c->sv_n = 0;
		return hmb__err(err, HMB_E_RING_CHANGED, 0, c->cursor,
				"the record header at ring offset 0x%" PRIx32
				" changed between its validation and its write (magic 0x%08" PRIx32
				", payload_len %u, flags 0x%02x; checked: payload_len %u, flags 0x%02x); batch from cursor %" PRIu64 " to be read again",
				v->off, h.magic, h.payload_len, h.flags,
				v->payload_len, v->flags, c->cursor);
	}
	c->sv_n = 0;
	return 0;
}

int hmb_consumer_read(struct hmb_consumer *c, void *buf, size_t buflen,
		      size_t *len, struct hmb_error *err)
{
	uint64_t last;

	if (len)
		*len = 0;
	if (!c || !buf || !len)
		return hmb__err(err, HMB_E_INVAL, 0, 0, "no consumer or buffer");
	if (buflen < HMB_RECORD_MAX_SIZE)
		return hmb__err(err, HMB_E_INVAL, 0, 0,
				"read buffer of %zu bytes is smaller than %d",
				buflen, HMB_RECORD_MAX_SIZE);
	return consume(c, buf, buflen, len, ~0UL, &last, err);
}

int hmb__consumer_next(struct hmb_consumer *c, struct hmb_record *rec,
		       struct hmb_error *err)
{
	uint64_t last = 0;
	size_t len = 0;
	int rc;

	rc = consume(c, c->one, sizeof(c->one), &len, 1, &last, err);
	if (rc)
		return rc;
	if (!len)
		return 0;
	memcpy(&rec->hdr, c->one, sizeof(rec->hdr));
	rec->payload = c->one + HMB_RECORD_HDR_SIZE;
	rec->raw = c->one;
	rec->raw_len = len;
	rec->kind = hmb_record_kind(&rec->hdr);
	rec->offset = last;
	return 1;
}

int hmb_consumer_next(struct hmb_consumer *c, struct hmb_record *rec,
		      struct hmb_error *err)
{
	if (!c || !rec)
		return hmb__err(err, HMB_E_INVAL, 0, 0, "no consumer or record");
	return hmb__consumer_next(c, rec, err);
}

/*
 * The hook's -ESTALE: the producer side rewrote the header (a
 * re-initialisation, format.md §11.2) since we read it, so our cursor
 * belongs to an epoch that is over and there is nothing left to publish
 * for it.  Read nothing more of it; hmb_consumer_reinit() starts the new
 * one.
 */
static void went_stale(struct hmb_consumer *c)
{
	c->stale = true;
	c->frozen_seen = true;
	c->need_ack = false;
	c->head = c->cursor;
	c->published = c->cursor;
}

int hmb_consumer_commit(struct hmb_consumer *c, struct hmb_error *err)
{
	uint64_t t;
	int rc;

	if (!c)
		return hmb__err(err, HMB_E_INVAL, 0, 0, "no consumer");
	if (c->stale || (c->cursor == c->published && !c->need_ack))
		return 0;
	if (!c->publish) {
		c->published = c->cursor;
		return 0;
	}
	/*
	 * First the tail we found in the header (at open, at a new epoch):
	 * the device takes it as our word that we follow the header's
	 * current epoch, and refuses tails of an older one with ESTALE.
	 */
	t = c->need_ack ? c->ack_tail : c->cursor;
	for (;;) {
		rc = c->publish(c->pub_ctx, t);
		if (rc == -ESTALE) {
			went_stale(c);
			return 0;
		}
		if (rc)
			return hmb__err(err, HMB_E_IO, rc < 0 ? -rc : rc, t,
					"publishing tail %" PRIu64 " failed: %s",
					t, strerror(rc < 0 ? -rc : rc));
		c->hdr_tail = t;
		if (!c->need_ack)
			break;
		c->need_ack = false;
		if (c->cursor == t)
			break;
		t = c->cursor;
	}
	c->published = c->cursor;
	return 0;
}

void hmb_consumer_counts(const struct hmb_consumer *c,
			 struct hmb_consumer_counts *n)
{
	*n = c->n;
}

uint64_t hmb_consumer_cursor(const struct hmb_consumer *c)
{
	return c->cursor;
}

uint64_t hmb_consumer_head(const struct hmb_consumer *c)
{
	return c->head;
}

uint32_t hmb_consumer_ring_size(const struct hmb_consumer *c)
{
	return c->ring_size;
}

uint32_t hmb_consumer_flags(const struct hmb_consumer *c)
{
	return hmb__load_acq32(&c->hdr->flags);
}

int hmb_consumer_reinit(struct hmb_consumer *c, struct hmb_error *err)
{
	uint64_t head, tail;
	uint32_t flags;
	int rc;

	if (!c)
		return hmb__err(err, HMB_E_INVAL, 0, 0, "no consumer");
	/* Pairs with the producer's release store that clears FROZEN. */
	flags = hmb__load_acq32(&c->hdr->flags);
	if (flags & HMB_RING_FLAG_FROZEN) {
		c->frozen_seen = true;
		return 0;
	}
	if (!c->frozen_seen)
		return 0;
	rc = load_header(c, &head, &tail, err);
	if (rc)
		return rc;
	c->frozen_seen = false;
	if (!c->stale && tail == c->hdr_tail && (int64_t)(head - c->head) >= 0) {
		/* Thawed without a rewrite: carry on where we were. */
		return 0;
	}
	c->stale = false;
	c->cursor = c->published = c->hdr_tail = c->ack_tail = tail;
	c->head = head;
	c->need_ack = c->publish != NULL;
	return 1;
}
