// SPDX-License-Identifier: Apache-2.0
/*
 * Record counting over consumer output (hmbtrace-count.h).  The consumer
 * validated every record when it copied it out of the ring; this walk only
 * re-checks what it needs to stay inside the buffer.
 */
#include <inttypes.h>
#include <string.h>

#include "internal.h"
#include <hmbtrace-count.h>

int hmb_buf_count(const void *buf, size_t len, struct hmb_buf_counts *counts,
		  struct hmb_error *err)
{
	const uint8_t *p = buf;
	size_t pos = 0;

	if (!counts || (!buf && len))
		return hmb__err(err, HMB_E_INVAL, 0, 0, "no buffer or counts");
	while (pos < len) {
		struct hmb_record_hdr h;
		size_t s;

		if (len - pos < HMB_RECORD_HDR_SIZE)
			return hmb__err(err, HMB_E_TRUNC_HDR, 0, pos,
					"record header at buffer offset %zu cut short (%zu bytes left)",
					pos, len - pos);
		memcpy(&h, p + pos, sizeof(h));
		if (h.magic != HMB_RECORD_MAGIC)
			return hmb__err(err, HMB_E_REC_MAGIC, 0, pos,
					"bad record magic 0x%08" PRIx32 " at buffer offset %zu",
					h.magic, pos);
		if (h.payload_len > HMB_RECORD_MAX_PAYLOAD)
			return hmb__err(err, HMB_E_REC_LEN, 0, pos,
					"payload_len %u over %d at buffer offset %zu",
					h.payload_len, HMB_RECORD_MAX_PAYLOAD, pos);
		s = HMB_RECORD_SIZE(h.payload_len);
		if (s > len - pos)
			return hmb__err(err, HMB_E_TRUNC_PAYLOAD, 0, pos,
					"record at buffer offset %zu needs %zu bytes, %zu left",
					pos, s, len - pos);
		switch (hmb__record_kind(&h)) {
		case HMB_KIND_MARKER:
			counts->markers++;
			break;
		case HMB_KIND_IGNORED:
			counts->ignored++;
			break;
		default:
			counts->records++;
			break;
		}
		pos += s;
	}
	return 0;
}
