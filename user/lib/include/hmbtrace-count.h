/* SPDX-License-Identifier: Apache-2.0 */
/*
 * hmbtrace-count.h - counting the records of a buffer that
 * hmb_consumer_read() filled, for consumers that report what they moved
 * (hmb-trace-daemon's summary) without decoding it.
 */
#ifndef HMBTRACE_COUNT_H
#define HMBTRACE_COUNT_H

#include <hmbtrace.h>

#ifdef __cplusplus
extern "C" {
#endif

struct hmb_buf_counts {
	uint64_t records;	/* HMB_KIND_DATA */
	uint64_t markers;	/* HMB_KIND_MARKER */
	uint64_t ignored;	/* HMB_KIND_IGNORED */
};

/*
 * Add the records of @buf (@len bytes of whole records, as
 * hmb_consumer_read() returns them: already validated) to @counts.  Reads
 * only each header's magic, flags and payload_len, so it costs a fraction
 * of hmb_buf_iter_next().  Returns 0, or HMB_E_REC_MAGIC, HMB_E_REC_LEN or
 * HMB_E_TRUNC_HDR/HMB_E_TRUNC_PAYLOAD (with the offset in @err) if @buf is
 * not such a buffer; @counts then holds the records before the bad one.
 */
int hmb_buf_count(const void *buf, size_t len, struct hmb_buf_counts *counts,
		  struct hmb_error *err);

#ifdef __cplusplus
}
#endif
#endif /* HMBTRACE_COUNT_H */
