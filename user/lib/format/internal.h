/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Private helpers of the format layer, shared by the libhmbtrace sources
 * of every layer (README.md).  Not installed.
 */
#ifndef HMBTRACE_INTERNAL_H
#define HMBTRACE_INTERNAL_H

#include "hmbtrace.h"

#define HMB_HIDDEN __attribute__((visibility("hidden")))

/*
 * Fill @err (if not NULL) with @code, @sys_errno, @offset and a formatted
 * message; return @code so callers can "return hmb__err(...)".
 */
HMB_HIDDEN int hmb__err(struct hmb_error *err, int code, int sys_errno,
			uint64_t offset, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));

/*
 * Validate the record header @h (already copied out of the ring or file);
 * @where completes messages ("at byte offset 96", "at cursor 81920 (ring
 * offset 0x3f40)") and @offset goes into @err.
 */
HMB_HIDDEN int hmb__rec_validate(const struct hmb_record_hdr *h,
				 uint64_t offset, const char *where,
				 struct hmb_error *err);

/*
 * Parse one record from @p holding @avail bytes of a dump stream found at
 * byte @offset; @name prefixes messages (may be NULL).  Returns 1 and fills
 * @rec, or HMB_E_TRUNC_HDR/HMB_E_TRUNC_PAYLOAD/validation errors.  @avail 0
 * is the caller's business (clean end).
 */
HMB_HIDDEN int hmb__parse_dump_rec(const uint8_t *p, size_t avail,
				   uint64_t offset, const char *name,
				   struct hmb_record *rec,
				   struct hmb_error *err);

/*
 * The fast walk of hmb_reader_acct() (fastwalk.c): count the data records
 * (flags 0 or TRUNCATED) in seq order after @a's last one that start in
 * m[@i..@iend), wholly inside @m (a record starting before @iend must fit),
 * as hmb_acct_add() would; stop at the first record that is anything else
 * and return its index (the caller takes it the general way).  @a must
 * have counted a record already (have_seq and records).  @mapped: @m is a
 * mapping of the file (not a buffer just read).  *@pair is the walk's
 * choice of method, kept by the caller from one call to the next (false
 * at first).
 */
HMB_HIDDEN size_t hmb__fast_walk(struct hmb_acct *a, const uint8_t *m,
				 size_t i, size_t iend, bool mapped,
				 bool *pair);

/*
 * Next record of a consumer, copied into the consumer's own buffer
 * (used by the ring-image reader).  Returns 1, 0 (nothing before head) or
 * a negative HMB_E_* code.  rec->offset is the record's cursor.
 */
HMB_HIDDEN int hmb__consumer_next(struct hmb_consumer *c,
				  struct hmb_record *rec,
				  struct hmb_error *err);

static inline uint64_t hmb__load_acq64(const volatile __u64 *p)
{
	return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

static inline uint32_t hmb__load_acq32(const volatile __u32 *p)
{
	return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

static inline void hmb__store_rel64(volatile __u64 *p, uint64_t v)
{
	__atomic_store_n(p, v, __ATOMIC_RELEASE);
}

static inline void hmb__store_rel32(volatile __u32 *p, uint32_t v)
{
	__atomic_store_n(p, v, __ATOMIC_RELEASE);
}

/*
 * The checks of hmb__rec_validate() without a message: the hot paths test
 * this first and format a location only for a header that fails it.
 */
static inline bool hmb__rec_hdr_ok(const struct hmb_record_hdr *h)
{
	return h->magic == HMB_RECORD_MAGIC &&
	       h->payload_len <= HMB_RECORD_MAX_PAYLOAD &&
	       !((h->flags & HMB_REC_FLAG_WRAP_MARKER) && h->payload_len);
}

/* hmb_record_kind(), inlined for the per-record paths. */
static inline enum hmb_rec_kind hmb__record_kind(const struct hmb_record_hdr *h)
{
	/* The marker bit wins over any other bit (docs/format.md). */
	if (h->flags & HMB_REC_FLAG_WRAP_MARKER)
		return HMB_KIND_MARKER;
	if (h->flags & ~HMB_REC_FLAGS_KNOWN)
		return HMB_KIND_IGNORED;
	return HMB_KIND_DATA;
}

static inline bool hmb__is_pow2(uint64_t v)
{
	return v && !(v & (v - 1));
}

#endif /* HMBTRACE_INTERNAL_H */
