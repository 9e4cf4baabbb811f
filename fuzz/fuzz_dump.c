// SPDX-License-Identifier: Apache-2.0
/*
 * Dump reader: the input as a dump stream, read twice -- by the streaming
 * file reader (hmb_reader_open/next, refills across its 256 KiB buffer)
 * and by the in-memory iterator (hmb_buf_iter) -- with sequence accounting
 * and the dictionary formatter on every data record.  Both readers must
 * agree record for record and fail at the same offset with the same code.
 * Then the whole file through hmb_reader_acct() (mapped and read windows,
 * the fast walk): the same counts and the same error.  Last, a dump made
 * from the input (gen_dump(): big enough and regular enough for the fast
 * walk's paired chains to start, with fake records in payloads) counted
 * both ways: the same counts.
 */
#include <hmbtrace.h>
#include <hmbtrace_dict.h>

#include "fuzz.h"

#define GEN_MAX (96 * 1024)

/*
 * A dump of valid-looking records, two input bytes a record (the input
 * read again from its start when it runs out) until GEN_MAX - 4096 bytes:
 * b0 picks the payload size (bits 0-2), the seq step (bits 3-5: a gap, a
 * replay or the next seq) and the payload's fake records (bits 6-7: none,
 * or the magic every 32 bytes with seqs leading into the next real record,
 * starting at its seq, or taken from b1); b1 the flags and opcode.
 */
static size_t gen_dump(const uint8_t *in, size_t n, uint8_t *out)
{
	static const uint16_t plens[] = { 0, 8, 24, 40, 64, 200, 1000, 4064 };
	uint32_t seq = 1;
	size_t off = 0, k = 0;

	if (!n)
		return 0;
	while (off + HMB_RECORD_MAX_SIZE + 4096 <= GEN_MAX) {
		uint8_t b0 = in[k++ % n], b1 = in[k++ % n];
		struct hmb_record_hdr h = {
			.magic = HMB_RECORD_MAGIC, .opcode = b1 & 3,
			.payload_len = plens[b0 & 7],
		};
		size_t size = HMB_RECORD_SIZE(h.payload_len), end, p;
		uint32_t fs;

		switch ((b0 >> 3) & 7) {
		case 7:
			seq += 1 + (b1 & 3);		/* a gap */
			break;
		case 6:
			if (seq > 4)
				seq -= 1 + (b1 & 3);	/* a replay */
			break;
		}
		h.flags = (b1 >> 2) & 3;
		if (h.flags & HMB_REC_FLAG_WRAP_MARKER)
			h.flags = (b1 & 0x80) ? 0x40 : 0;	/* ignored */
		h.seq = seq++;
		h.ts_ns = h.seq * 10ull;
		memset(out + off, b1, size);
		memcpy(out + off, &h, sizeof(h));
		end = off + size;
		fs = (b0 >> 6) == 1 ? seq - (uint32_t)((size - 32) / 32) :
		     (b0 >> 6) == 2 ? seq : b1 * 0x01010101u;
		for (p = off + 32; (b0 >> 6) && p + 32 <= end; p += 32, fs++) {
			struct hmb_record_hdr f = {
				.magic = HMB_RECORD_MAGIC, .seq = fs,
				.payload_len = end - p < 64 ? (uint16_t)(end - p - 32) : 0,
			};

			memcpy(out + p, &f, sizeof(f));
			if (f.payload_len)
				break;
		}
		off = end;
	}
	return off;
}

/* The generated dump counted record by record and by hmb_reader_acct(). */
static void check_gen(const uint8_t *data, size_t size, struct hmb_acct *a1,
		      struct hmb_acct *a2)
{
	static uint8_t *gen;
	static const size_t windows[] = { 0, 65536 };
	struct hmb_record rec;
	struct hmb_reader *r;
	struct hmb_error e;
	size_t len;
	int fd, rc;

	if (!gen)
		gen = malloc(GEN_MAX);
	len = gen_dump(data, size, gen);
	fd = fz_memfd(gen, len);
	if (fd < 0)
		return;
	hmb_acct_init(a1, 0, NULL, NULL);
	if (hmb_reader_open(&r, fd, "gen", &e) == 0) {
		while ((rc = hmb_reader_next(r, &rec, &e)) == 1)
			hmb_acct_add(a1, &rec);
		FZ_ASSERT(rc == 0);
		hmb_reader_close(r);
	}
	for (size_t w = 0; w < sizeof(windows) / sizeof(windows[0]); w++) {
		hmb_acct_init(a2, 0, NULL, NULL);
		if (lseek(fd, 0, SEEK_SET) != 0 ||
		    hmb_reader_open(&r, fd, "gen", &e))
			break;
		hmb_reader_set_map_window(r, windows[w]);
		FZ_ASSERT(hmb_reader_acct(r, a2, UINT64_MAX, &e) == 0);
		FZ_ASSERT(!memcmp(a1, a2, sizeof(*a1)));
		hmb_reader_close(r);
	}
	close(fd);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct hmb_dict *dict;
	struct hmb_record a, b;
	struct hmb_error ea, eb;
	struct hmb_buf_iter it;
	struct hmb_reader *r;
	static struct hmb_acct *acct, *acct2;
	char line[512];
	const char *text;
	uint8_t *copy;
	size_t len;
	int fd, ra, rb;

	text = hmb_dict_builtin(&len);
	if (!dict && hmb_dict_parse(&dict, text, len, "dict", NULL))
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
		/*
		 * hmb_reader_acct() over the same file in one-page windows
		 * (mapped and read in turn) counts the same and fails at the
		 * same offset with the same code.
		 */
		if (!acct2)
			acct2 = malloc(sizeof(*acct2));
		hmb_acct_init(acct2, 0, NULL, NULL);
		if (lseek(fd, 0, SEEK_SET) == 0 &&
		    hmb_reader_open(&r, fd, "fuzz", &eb) == 0) {
			hmb_reader_set_map_window(r, 4096);
			rb = hmb_reader_acct(r, acct2, UINT64_MAX, &eb);
			FZ_ASSERT(rb == (ra < 0 ? ra : 0));
			if (rb < 0)
				FZ_ASSERT(ea.offset == eb.offset &&
					  !strcmp(ea.msg, eb.msg));
			FZ_ASSERT(!memcmp(acct, acct2, sizeof(*acct)));
			hmb_reader_close(r);
		}
		check_gen(data, size, acct, acct2);
	}
	free(copy);
	close(fd);
	return 0;
}
