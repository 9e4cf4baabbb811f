// SPDX-License-Identifier: Apache-2.0
/*
 * Ring image reader: hmb_reader_open() on a file whose first bytes say
 * "HMBT", then every record through hmb_reader_next() and the sequence
 * accounting.  The first input byte chooses whether the header fields that
 * attach checks (magic, version, ring_size, record_area_off) are taken as
 * they are or made plausible, so the fuzzer spends its time on both the
 * refusals and the records; head and tail are always the input's (any
 * value in 2^64).
 */
#include <hmbtrace.h>

#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t buf[64 + 8192 + 64];
	struct hmb_reader *r;
	struct hmb_record rec;
	struct hmb_error err;
	static struct hmb_acct *acct;
	uint64_t prev_end = 0;
	size_t len;
	int fd, rc, n = 0;

	if (!size)
		return 0;
	len = size - 1 < sizeof(buf) ? size - 1 : sizeof(buf);
	memcpy(buf, data + 1, len);
	if ((data[0] & 1) && len >= 16) {
		uint32_t rs = 64u << (data[0] >> 1 & 7);	/* 64 .. 8192 */

		memcpy(buf, "HMBT", 4);
		buf[4] = 1; buf[5] = buf[6] = buf[7] = 0;
		memcpy(buf + 8, &rs, 4);
		buf[12] = 0x40; buf[13] = buf[14] = buf[15] = 0;
		if (len < 64 + rs && size - 1 >= 16) {
			memset(buf + len, 0, 64 + rs - len);
			len = 64 + rs;
		}
	} else if (len >= 4) {
		memcpy(buf, "HMBT", 4);
	}
	fd = fz_memfd(buf, len);
	if (fd < 0)
		return 0;
	/* 512 KiB of per-opcode counts: allocate once. */
	if (!acct)
		acct = malloc(sizeof(*acct));
	hmb_acct_init(acct, 0, NULL, NULL);
	rc = hmb_reader_open(&r, fd, "fuzz", &err);
	if (rc == 0) {
		while ((rc = hmb_reader_next(r, &rec, &err)) == 1) {
			FZ_ASSERT(rec.raw_len == HMB_RECORD_SIZE(rec.hdr.payload_len));
			FZ_ASSERT(rec.offset >= 64 && rec.offset + rec.raw_len <= len);
			FZ_ASSERT(hmb_record_check(&rec.hdr, rec.offset, NULL) == 0);
			hmb_acct_add(acct, &rec);
			prev_end = rec.offset + rec.raw_len;
			FZ_ASSERT(++n <= 8192 / 32 + 1);	/* one lap at most */
		}
		FZ_ASSERT(rc <= 0);
		hmb_reader_close(r);
	}
	(void)prev_end;
	close(fd);
	return 0;
}
