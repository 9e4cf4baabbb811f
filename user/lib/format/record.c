// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Validation of ring and record headers, record classification, and the
 * iterator over a dump stream held in memory.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"

enum hmb_rec_kind hmb_record_kind(const struct hmb_record_hdr *hdr)
{
	return hmb__record_kind(hdr);
}

int hmb__rec_validate(const struct hmb_record_hdr *h, uint64_t offset,
		      const char *where, struct hmb_error *err)
{
	if (h->magic != HMB_RECORD_MAGIC)
		return hmb__err(err, HMB_E_REC_MAGIC, 0, offset,
				"bad record magic 0x%08" PRIx32 " %s",
				h->magic, where);
	if (h->payload_len > HMB_RECORD_MAX_PAYLOAD)
		return hmb__err(err, HMB_E_REC_LEN, 0, offset,
				"record payload_len %u over %u %s",
				h->payload_len, HMB_RECORD_MAX_PAYLOAD, where);
	if ((h->flags & HMB_REC_FLAG_WRAP_MARKER) && h->payload_len)
		return hmb__err(err, HMB_E_MARKER_PAYLOAD, 0, offset,
				"wrap marker with payload_len %u (must be 0) %s",
				h->payload_len, where);
	return 0;
}

int hmb_record_check(const struct hmb_record_hdr *hdr, uint64_t offset,
		     struct hmb_error *err)
{
	char where[64];

	if (!hdr)
		return hmb__err(err, HMB_E_INVAL, 0, offset, "no record header");
	snprintf(where, sizeof(where), "at offset %" PRIu64, offset);
	return hmb__rec_validate(hdr, offset, where, err);
}

int hmb_ring_hdr_check(const struct hmb_ring_hdr *hdr, size_t avail,
		       struct hmb_error *err)
{
	if (!hdr)
		return hmb__err(err, HMB_E_INVAL, 0, 0, "no ring header");
	if (avail < HMB_RING_HDR_SIZE)
		return hmb__err(err, HMB_E_RING_SHORT, 0, avail,
				"ring of %zu bytes is shorter than the %d-byte ring header",
				avail, HMB_RING_HDR_SIZE);
	if (hdr->magic != HMB_RING_MAGIC)
		return hmb__err(err, HMB_E_RING_MAGIC, 0, 0x00,
				"bad ring magic 0x%08" PRIx32
				" at offset 0x00 (expected 0x%08x \"HMBT\")",
				hdr->magic, HMB_RING_MAGIC);
	if (hdr->version != HMB_TRACE_ABI_VERSION)
		return hmb__err(err, HMB_E_RING_VERSION, 0, 0x04,
				"ring version %" PRIu32
				" at offset 0x04 is not supported (this library reads version %d only)",
				hdr->version, HMB_TRACE_ABI_VERSION);
	if (!hmb__is_pow2(hdr->ring_size) ||
	    hdr->ring_size < HMB_RING_MIN_SIZE ||
	    hdr->ring_size > HMB_RING_MAX_SIZE)
		return hmb__err(err, HMB_E_RING_SIZE, 0, 0x08,
				"ring_size %" PRIu32
				" at offset 0x08 is not a power of two between %u and %u",
				hdr->ring_size, HMB_RING_MIN_SIZE,
				HMB_RING_MAX_SIZE);
	if (hdr->record_area_off != HMB_RECORD_AREA_OFF)
		return hmb__err(err, HMB_E_RING_AREA_OFF, 0, 0x0c,
				"record_area_off 0x%" PRIx32
				" at offset 0x0c is not 0x%x",
				hdr->record_area_off, HMB_RECORD_AREA_OFF);
	if (avail - HMB_RECORD_AREA_OFF < hdr->ring_size)
		return hmb__err(err, HMB_E_RING_SHORT, 0, avail,
				"ring of %zu bytes is shorter than header + ring_size (0x40 + %" PRIu32 ")",
				avail, hdr->ring_size);
	return 0;
}

int hmb__parse_dump_rec(const uint8_t *p, size_t avail, uint64_t offset,
			const char *name, struct hmb_record *rec,
			struct hmb_error *err)
{
	const char *pfx = name ? name : "";
	const char *sep = name ? ": " : "";
	char where[64];
	uint32_t size;
	int rc;

	if (avail < HMB_RECORD_HDR_SIZE)
		return hmb__err(err, HMB_E_TRUNC_HDR, 0, offset,
				"%s%send of data inside the record header at byte offset %" PRIu64
				" (%zu of %d bytes present)",
				pfx, sep, offset, avail, HMB_RECORD_HDR_SIZE);
	memcpy(&rec->hdr, p, sizeof(rec->hdr));
	if (__builtin_expect(!hmb__rec_hdr_ok(&rec->hdr), 0)) {
		snprintf(where, sizeof(where), "at byte offset %" PRIu64,
			 offset);
		rc = hmb__rec_validate(&rec->hdr, offset, where, err);
		if (err && name) {
			char tmp[HMB_ERRMSG_LEN];
			size_t n;

			n = snprintf(tmp, sizeof(tmp), "%s: %s", name, err->msg);
			if (n >= sizeof(tmp))
				n = sizeof(tmp) - 1;
			memcpy(err->msg, tmp, n + 1);
		}
		return rc;
	}
	size = HMB_RECORD_SIZE(rec->hdr.payload_len);
	if (avail < size)
		return hmb__err(err, HMB_E_TRUNC_PAYLOAD, 0, offset,
				"%s%send of data inside the record at byte offset %" PRIu64
				": payload_len %u needs %" PRIu32 " bytes with padding, %zu present",
				pfx, sep, offset, rec->hdr.payload_len, size, avail);
	rec->payload = p + HMB_RECORD_HDR_SIZE;
	rec->raw = p;
	rec->raw_len = size;
	rec->kind = hmb_record_kind(&rec->hdr);
	rec->offset = offset;
	return 1;
}

void hmb_buf_iter_init(struct hmb_buf_iter *it, const void *buf, size_t len,
		       uint64_t base_offset)
{
	it->buf = buf;
	it->len = buf ? len : 0;
	it->pos = 0;
	it->base_offset = base_offset;
}

int hmb_buf_iter_next(struct hmb_buf_iter *it, struct hmb_record *rec,
		      struct hmb_error *err)
{
	int rc;

	if (!it || !rec)
		return hmb__err(err, HMB_E_INVAL, 0, 0, "no iterator or record");
	if (it->pos >= it->len)
		return 0;
	rc = hmb__parse_dump_rec(it->buf + it->pos, it->len - it->pos,
				 it->base_offset + it->pos, NULL, rec, err);
	if (rc < 0)
		return rc;
	it->pos += rec->raw_len;
	return 1;
}
