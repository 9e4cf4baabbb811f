// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Sequence accounting (format.md 10): loss is counted from seq gaps
 * modulo 2^32 over non-marker records; a small backward step is a replayed
 * batch, a large one a producer restart.  At an epoch boundary (a ring
 * re-initialised) the seq may continue, as an NVMe controller's does across
 * a reset: a forward gap of less than 2^31 is records lost with the old
 * epoch, anything else a restart that counts nothing (format.md §10).
 */
#include <string.h>
#include <sys/mman.h>

#include "internal.h"

/* ring_size / 32 of a 4 MiB ring: the most records one batch can hold. */
#define HMB_ACCT_DEFAULT_DUP_WINDOW (4U * 1024 * 1024 / HMB_RECORD_HDR_SIZE)

void hmb_acct_init(struct hmb_acct *a, uint32_t dup_window, hmb_gap_fn cb,
		   void *ctx)
{
	memset(a, 0, sizeof(*a));
	a->dup_window = dup_window ? dup_window : HMB_ACCT_DEFAULT_DUP_WINDOW;
	a->gap_cb = cb;
	a->gap_ctx = ctx;
}

struct hmb_acct *hmb_acct_new(uint32_t dup_window, hmb_gap_fn cb, void *ctx)
{
	struct hmb_acct *a = mmap(NULL, sizeof(*a), PROT_READ | PROT_WRITE,
				  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (a == MAP_FAILED)
		return NULL;
	/* zero already: only what hmb_acct_init() sets to non-zero */
	a->dup_window = dup_window ? dup_window : HMB_ACCT_DEFAULT_DUP_WINDOW;
	a->gap_cb = cb;
	a->gap_ctx = ctx;
	return a;
}

void hmb_acct_free(struct hmb_acct *a)
{
	if (a)
		munmap(a, sizeof(*a));
}

void hmb_acct_new_epoch(struct hmb_acct *a)
{
	a->epoch_start = true;
}

enum hmb_acct_verdict hmb_acct_add(struct hmb_acct *a,
				   const struct hmb_record *rec)
{
	const struct hmb_record_hdr *h = &rec->hdr;
	enum hmb_rec_kind kind = hmb__record_kind(h);

	a->bytes += rec->raw_len;
	if (kind == HMB_KIND_MARKER) {
		/* Markers consume no seq and carry no event. */
		a->wrap_markers++;
		return HMB_ACCT_MARKER;
	}
	if (a->have_seq) {
		uint32_t expected = a->max_seq + 1;
		uint32_t d = h->seq - expected;

		if (d != 0 && d < 0x80000000U) {
			struct hmb_gap g = {
				.first_seq = expected,
				.last_seq = h->seq - 1,
				.count = d,
				.ts_before = a->max_seq_ts,
				.ts_after = h->ts_ns,
				.offset = rec->offset,
			};

			a->lost += d;
			a->gaps++;
			if (a->gap_cb)
				a->gap_cb(a->gap_ctx, &g);
		} else if (d != 0 && !a->epoch_start) {
			uint32_t behind = a->max_seq - h->seq;

			if (behind <= a->dup_window) {
				a->duplicates++;
				return HMB_ACCT_DUPLICATE;
			}
			/* A producer restart: a new epoch begins here. */
			a->resets++;
		}
	}
	a->have_seq = true;
	a->epoch_start = false;
	a->max_seq = h->seq;
	a->max_seq_ts = h->ts_ns;
	if (kind == HMB_KIND_IGNORED) {
		a->ignored++;
		return HMB_ACCT_IGNORED;
	}
	if (!a->records)
		a->first_ts_ns = h->ts_ns;
	a->last_ts_ns = h->ts_ns;
	a->records++;
	a->payload_bytes += h->payload_len;
	a->opcodes[h->opcode]++;
	if (h->flags & HMB_REC_FLAG_TRUNCATED)
		a->truncated++;
	return HMB_ACCT_NEW;
}

void hmb_acct_opcodes(const struct hmb_acct *a, struct hmb_opcode_iter *it)
{
	memset(it, 0, sizeof(*it));
	it->a = a;
}

int hmb_opcode_iter_next(struct hmb_opcode_iter *it, uint16_t *op,
			 uint64_t *count)
{
	const uint64_t *ops = it->a->opcodes;

	while (it->next < 65536) {
		uint32_t o = it->next++;

		if (ops[o]) {
			*op = (uint16_t)o;
			*count = ops[o];
			return 1;
		}
	}
	return 0;
}
