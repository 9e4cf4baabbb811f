// SPDX-License-Identifier: Apache-2.0
/*
 * The check before appending to an existing dump, hmb_dump_check()
 * (docs/format.md 12.1, "Appending to a dump"): the daemon runs it on
 * whatever file its output path holds.  The input is that file, read from
 * a start offset past a prefix of ring magics (byte 0 picks 0, 1, 8 or
 * 4096 bytes) that the check must not look at.
 *
 * The verdict is computed another way, from the in-memory iterator
 * hmb_buf_iter over the same bytes: a dump up to its last whole record,
 * then nothing (CLEAN), zero bytes only (ZEROS), a record cut short (TORN)
 * or a refusal with the iterator's error at that record's offset
 * (UNKNOWN_MAGIC for bad first bytes, NOT_DUMP for a ring magic).  The
 * file is never written.
 */
#include <hmbtrace.h>

#include "fuzz.h"

static bool zeros(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i])
			return false;
	return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const size_t prefixes[] = { 0, 1, 8, 4096 };
	static uint8_t file[4096 + 65536], back[sizeof(file)];
	struct hmb_dump_state st;
	struct hmb_error err = { 0 }, ierr = { 0 };
	struct hmb_buf_iter it;
	struct hmb_record rec;
	const uint8_t *d;
	size_t n, pre, end = 0, left;
	uint64_t cnt = 0;
	int fd, rc, e;

	if (!size || size - 1 > 65536)
		return 0;
	pre = prefixes[data[0] & 3];
	d = data + 1;
	n = size - 1;
	for (size_t i = 0; i < pre; i++)
		file[i] = "HMBT"[i % 4];
	memcpy(file + pre, d, n);
	fd = fz_memfd(file, pre + n);
	if (fd < 0 || lseek(fd, (off_t)pre, SEEK_SET) != (off_t)pre)
		abort();
	rc = hmb_dump_check(fd, "x.bin", &st, &err);
	/* never written */
	FZ_ASSERT(pread(fd, back, pre + n + 1, 0) == (ssize_t)(pre + n));
	FZ_ASSERT(!memcmp(back, file, pre + n));
	close(fd);

	hmb_buf_iter_init(&it, d, n, 0);
	while ((e = hmb_buf_iter_next(&it, &rec, &ierr)) == 1) {
		FZ_ASSERT(rec.offset == end);
		end = rec.offset + rec.raw_len;
		cnt++;
	}
	left = n - end;
	FZ_ASSERT(rc <= 0 && rc != HMB_E_IO && rc != HMB_E_NOMEM &&
		  rc != HMB_E_INVAL);
	if (n && !memcmp(d, "HMBT", n < 4 ? n : 4)) {
		FZ_ASSERT(rc == HMB_E_NOT_DUMP && err.offset == 0);
		return 0;
	}
	if (rc == 0) {
		FZ_ASSERT(st.size == n && st.records == cnt && st.end == end);
		switch (st.tail) {
		case HMB_DUMP_END_CLEAN:
			FZ_ASSERT(e == 0 && end == n);
			break;
		case HMB_DUMP_END_ZEROS:
			FZ_ASSERT(left && zeros(d + end, left));
			break;
		case HMB_DUMP_END_TORN:
			FZ_ASSERT(!zeros(d + end, left));
			FZ_ASSERT(e == HMB_E_TRUNC_HDR ||
				  e == HMB_E_TRUNC_PAYLOAD);
			break;
		default:
			FZ_ASSERT(!"a tail kind hmbtrace.h does not list");
		}
		return 0;
	}
	/* refused: what follows the last whole record is neither kind */
	FZ_ASSERT(e < 0 && !zeros(d + end, left));
	FZ_ASSERT(e != HMB_E_TRUNC_PAYLOAD);
	FZ_ASSERT(err.code == rc && err.offset == end);
	if (e == HMB_E_TRUNC_HDR)
		/* a header cut short that could not begin a valid one */
		FZ_ASSERT(left < HMB_RECORD_HDR_SIZE &&
			  (rc == HMB_E_REC_MAGIC || rc == HMB_E_REC_LEN ||
			   rc == HMB_E_MARKER_PAYLOAD ||
			   (end == 0 && rc == HMB_E_UNKNOWN_MAGIC)));
	else if (end == 0 && e == HMB_E_REC_MAGIC)
		FZ_ASSERT(rc == HMB_E_UNKNOWN_MAGIC);
	else
		FZ_ASSERT(rc == e);
	return 0;
}
