// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * window.c - a flight recorder's window of whole records
 * (hmbtrace_window.h).  Records are parsed by hmb_buf_iter only, each in
 * place or, when it straddles the end of the buffer, from a copy.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "hmbtrace_window.h"
#include "internal.h"

int hmb_window_open(struct hmb_window *w, size_t size, struct hmb_error *err)
{
	uint8_t *m;

	memset(w, 0, sizeof(*w));
	if (!size)
		return hmb__err(err, HMB_E_INVAL, 0, 0, "a window of 0 bytes");
	w->epochs = calloc(HMB_SIDECAR_MAX_EPOCHS, sizeof(*w->epochs));
	if (!w->epochs)
		return hmb__err(err, HMB_E_NOMEM, ENOMEM, 0,
				"cannot allocate the window's epoch list");
	/* Private: a snapshot's child keeps the window as it was at fork. */
	m = mmap(NULL, size, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED) {
		int e = errno;

		free(w->epochs);
		w->epochs = NULL;
		return hmb__err(err, HMB_E_IO, e, 0,
				"cannot map a %zu-byte window: %s", size,
				strerror(e));
	}
	w->map = m;
	w->size = size;
	return 0;
}

void hmb_window_close(struct hmb_window *w)
{
	if (w->map)
		munmap(w->map, w->size);
	w->map = NULL;
	free(w->epochs);
	w->epochs = NULL;
}

/*
 * The record at stream offset @pos (before head), parsed by libhmbtrace:
 * in place, or from @tmp when its bytes straddle the end of the buffer.
 */
static int rec_at(const struct hmb_window *w, uint64_t pos,
		  struct hmb_record *rec, uint8_t tmp[HMB_RECORD_MAX_SIZE],
		  struct hmb_error *err)
{
	size_t off = pos % w->size, left = w->head - pos;
	size_t n = left < HMB_RECORD_MAX_SIZE ? left : HMB_RECORD_MAX_SIZE;
	const uint8_t *p = w->map + off;
	struct hmb_buf_iter it;

	if (off + n > w->size) {
		memcpy(tmp, p, w->size - off);
		memcpy(tmp + (w->size - off), w->map, n - (w->size - off));
		p = tmp;
	}
	hmb_buf_iter_init(&it, p, n, pos - w->tail);
	return hmb_buf_iter_next(&it, rec, err);
}

/* Drop the oldest record.  HMB_E_INVAL (emptied) if it does not parse. */
static int evict_one(struct hmb_window *w, struct hmb_error *err)
{
	uint8_t tmp[HMB_RECORD_MAX_SIZE];
	struct hmb_record rec;
	int r;

	r = rec_at(w, w->tail, &rec, tmp, err);
	if (r <= 0) {
		if (!r && err)
			err->msg[0] = 0;
		w->ev_bytes += w->head - w->tail;
		w->tail = w->head;
		return HMB_E_INVAL;
	}
	switch (rec.kind) {
	case HMB_KIND_MARKER:
		w->ev_markers++;
		break;
	case HMB_KIND_IGNORED:
		w->ev_ignored++;
		break;
	default:
		w->ev_records++;
		break;
	}
	if (rec.kind != HMB_KIND_MARKER) {
		w->ev_have_seq = true;
		w->ev_last_seq = rec.hdr.seq;
	}
	w->ev_bytes += rec.raw_len;
	w->tail += rec.raw_len;
	return 0;
}

int hmb_window_add(struct hmb_window *w, const void *buf, size_t len,
		   struct hmb_error *err)
{
	size_t off = w->head % w->size, first;
	int rc = 0;

	if (len > w->size)
		return hmb__err(err, HMB_E_INVAL, 0, 0,
				"%zu bytes do not fit in a %zu-byte window",
				len, w->size);
	while (w->head - w->tail + len > w->size)
		if ((rc = evict_one(w, err)))
			break;
	first = len < w->size - off ? len : w->size - off;
	memcpy(w->map + off, buf, first);
	memcpy(w->map, (const uint8_t *)buf + first, len - first);
	w->head += len;
	return rc;
}

int hmb_window_epoch(struct hmb_window *w)
{
	size_t i, n = 0;
	int rc = 0;

	/* Epochs whose first record was evicted need no line any more. */
	for (i = 0; i < w->n_epochs; i++)
		if (w->epochs[i] > w->tail)
			w->epochs[n++] = w->epochs[i];
	if (n && w->epochs[n - 1] == w->head) {
		w->n_epochs = n;
		return 0;
	}
	if (n == HMB_SIDECAR_MAX_EPOCHS) {
		memmove(w->epochs, w->epochs + 1, --n * sizeof(*w->epochs));
		rc = 1;
	}
	w->epochs[n++] = w->head;
	w->n_epochs = n;
	return rc;
}

int hmb_window_walk(const struct hmb_window *w, struct hmb_window_sum *s,
		    struct hmb_error *err)
{
	uint8_t tmp[HMB_RECORD_MAX_SIZE];
	struct hmb_record rec;
	uint64_t pos = w->tail;
	size_t e = 0;
	int r = 0;

	memset(s, 0, sizeof(*s));
	s->acct = hmb_acct_new(0, NULL, NULL);
	if (!s->acct)
		return HMB_E_NOMEM;
	while (pos < w->head && (r = rec_at(w, pos, &rec, tmp, err)) > 0) {
		pos += rec.raw_len;
		while (e < w->n_epochs && w->epochs[e] <= w->tail + rec.offset) {
			if (w->epochs[e] == w->tail + rec.offset && rec.offset)
				hmb_acct_new_epoch(s->acct);
			e++;
		}
		hmb_acct_add(s->acct, &rec);
		if (rec.kind == HMB_KIND_MARKER)
			continue;
		if (!s->have_seq)
			s->first_seq = rec.hdr.seq;
		s->have_seq = true;
		s->last_seq = rec.hdr.seq;
	}
	if (r <= 0 && pos < w->head) {
		if (!r && err)
			err->msg[0] = 0;
		hmb_acct_free(s->acct);
		s->acct = NULL;
		return r ? r : HMB_E_INVAL;
	}
	return 0;
}

int hmb_window_spans(const struct hmb_window *w, struct iovec iov[2])
{
	size_t off = w->tail % w->size, len = w->head - w->tail;

	iov[0].iov_base = w->map + off;
	iov[0].iov_len = len < w->size - off ? len : w->size - off;
	iov[1].iov_base = w->map;
	iov[1].iov_len = len - iov[0].iov_len;
	return iov[1].iov_len ? 2 : 1;
}
