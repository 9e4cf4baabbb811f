// SPDX-License-Identifier: Apache-2.0
/*
 * Dump reader: the input as a dump stream, read twice -- by the streaming
 * file reader (hmb_reader_open/next, refills across its 128 KiB buffer)
 * and by the in-memory iterator (hmb_buf_iter) -- with sequence accounting
 * and the dictionary formatter on every data record.  Both readers must
 * agree record for record and fail at the same offset with the same code.
 */
#include <hmbtrace.h>
#include <hmbtrace_dict.h>

#include "fuzz.h"

extern const char hmb_analyze_dict[], hmb_analyze_dict_end[];

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct hmb_dict *dict;
	struct hmb_record a, b;
	struct hmb_error ea, eb;
	struct hmb_buf_iter it;
	struct hmb_reader *r;
	static struct hmb_acct *acct;
	char line[512];
	uint8_t *copy;
	int fd, ra, rb;

	if (!dict && hmb_dict_parse(&dict, hmb_analyze_dict,
				    (size_t)(hmb_analyze_dict_end -
					     hmb_analyze_dict) - 1,
				    "dict", NULL))
		abort();
	/*
	 * A dump begins "RECT" (or is empty): make most inputs one; those
	 * whose first byte has its top bit set are taken as they are (the
	 * dialect checks, empty and short files).
	 */
	copy = malloc(size ? size : 1);
	memcpy(copy, data, size);
	if (size >= 4 && !(data[0] & 0x80))
		memcpy(copy, "RECT", 4);
	fd = fz_memfd(copy, size);
	if (fd < 0) {
		free(copy);
		return 0;
	}
	/* 512 KiB of per-opcode counts: allocate once. */
	if (!acct)
		acct = malloc(sizeof(*acct));
	hmb_acct_init(acct, 0, NULL, NULL);
	hmb_buf_iter_init(&it, copy, size, 0);
	if (hmb_reader_open(&r, fd, "fuzz", &ea) == 0) {
		for (;;) {
			ra = hmb_reader_next(r, &a, &ea);
			rb = hmb_buf_iter_next(&it, &b, &eb);
			FZ_ASSERT(ra == rb);
			if (ra != 1) {
				if (ra < 0)
					FZ_ASSERT(ea.offset == eb.offset);
				break;
			}
			FZ_ASSERT(a.offset == b.offset && a.raw_len == b.raw_len);
			FZ_ASSERT(!memcmp(a.raw, b.raw, a.raw_len));
			FZ_ASSERT(a.offset + a.raw_len <= size);
			if (hmb_acct_add(acct, &a) == HMB_ACCT_NEW) {
				const struct hmb_dict_event *ev =
					hmb_dict_lookup(dict, a.hdr.opcode);

				if (ev)
					hmb_dict_format(ev, a.payload,
							a.hdr.payload_len, line,
							sizeof(line));
			}
		}
		hmb_reader_close(r);
	}
	free(copy);
	close(fd);
	return 0;
}
