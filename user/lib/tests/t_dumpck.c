// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * hmb_dump_check(): which existing files records may be appended to.  A
 * dump of whole records, an empty file, and a dump ending in what an
 * interrupted writer leaves (a torn record, zero bytes) are accepted, with
 * the end of the last whole record; a ring image, a text file, a dump
 * corrupt in the middle or followed by bytes that no record begins with
 * are refused with the offset of the first bad byte.  The file itself is
 * never changed.
 */
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "hmbtrace.h"
#include "tap.h"

static char dir[] = "/tmp/hmbdumpck.XXXXXX";
static uint8_t dump[64 * 1024];
static size_t dump_len;

/* A dump of @n records (payloads 0..299 bytes, a marker now and then). */
static size_t make_dump(uint8_t *buf, unsigned int n)
{
	size_t off = 0;

	for (unsigned int i = 0; i < n; i++) {
		struct hmb_record_hdr h = {
			.magic = HMB_RECORD_MAGIC, .seq = i, .ts_ns = i * 10,
			.opcode = i % 5, .payload_len = (i * 37) % 300,
		};

		if (i % 50 == 49) {
			h.flags = HMB_REC_FLAG_WRAP_MARKER;
			h.payload_len = 0;
		}
		memcpy(buf + off, &h, sizeof(h));
		memset(buf + off + 32, 0, HMB_RECORD_SIZE(h.payload_len) - 32);
		for (unsigned int k = 0; k < h.payload_len; k++)
			buf[off + 32 + k] = (uint8_t)(i + k + 1);
		off += HMB_RECORD_SIZE(h.payload_len);
	}
	return off;
}

/*
 * Write @a (@alen bytes) then @b (@blen) to a file, after @skip bytes that
 * are not the dump's (the check starts at the fd's offset), and check it.
 */
static int check_file(const void *a, size_t alen, const void *b, size_t blen,
		      size_t skip, struct hmb_dump_state *st,
		      struct hmb_error *e)
{
	char path[256], junk[64];
	struct stat s0, s1;
	int fd, rc;

	snprintf(path, sizeof(path), "%s/f.bin", dir);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	memset(junk, 'j', sizeof(junk));
	if (fd < 0 || write(fd, junk, skip) != (ssize_t)skip ||
	    write(fd, a, alen) != (ssize_t)alen ||
	    write(fd, b, blen) != (ssize_t)blen ||
	    lseek(fd, (off_t)skip, SEEK_SET) != (off_t)skip || fstat(fd, &s0))
		abort();
	memset(e, 0, sizeof(*e));
	rc = hmb_dump_check(fd, "f.bin", st, e);
	if (fstat(fd, &s1) || s1.st_size != s0.st_size)
		rc = 999;	/* the check must not change the file */
	close(fd);
	return rc;
}

static void test_accepted(void)
{
	static const uint8_t zeros[5000];
	struct hmb_dump_state st;
	struct hmb_record_hdr h;
	struct hmb_error e;
	uint8_t rec[32 + 200];
	int rc;

	rc = check_file(dump, dump_len, NULL, 0, 0, &st, &e);
	ok(rc == 0 && st.end == dump_len && st.size == dump_len &&
	   st.records == 200 && st.tail == HMB_DUMP_END_CLEAN,
	   "a whole dump: end %" PRIu64 " of %zu, %" PRIu64 " records", st.end,
	   dump_len, st.records);
	rc = check_file(NULL, 0, NULL, 0, 0, &st, &e);
	ok(rc == 0 && st.end == 0 && st.size == 0 &&
	   st.tail == HMB_DUMP_END_CLEAN, "an empty file");
	rc = check_file(dump, dump_len, NULL, 0, 24, &st, &e);
	ok(rc == 0 && st.end == dump_len && st.size == dump_len,
	   "checked from the fd's offset on (24 bytes before it)");

	memset(&h, 0, sizeof(h));
	h.magic = HMB_RECORD_MAGIC;
	h.payload_len = 200;
	memcpy(rec, &h, sizeof(h));
	memset(rec + 32, 7, 200);
	for (size_t cut = 1; cut < sizeof(rec); cut++) {
		rc = check_file(dump, dump_len, rec, cut, 0, &st, &e);
		if (rc != 0 || st.end != dump_len ||
		    st.size != dump_len + cut ||
		    st.tail != HMB_DUMP_END_TORN || e.offset != dump_len)
			break;
	}
	ok(rc == 0 && st.tail == HMB_DUMP_END_TORN && st.end == dump_len,
	   "every cut of the last record (1..231 of 232 bytes) is a torn tail: %s",
	   e.msg);
	rc = check_file(dump, dump_len, rec, 20, 0, &st, &e);
	ok(rc == 0 && strstr(e.msg, "f.bin") &&
	   strstr(e.msg, "cut short at byte offset"),
	   "a torn header is described, with the offset: %s", e.msg);
	rc = check_file(rec, 3, NULL, 0, 0, &st, &e);
	ok(rc == 0 && st.end == 0 && st.tail == HMB_DUMP_END_TORN,
	   "a file of 3 bytes \"REC\" is one torn record");

	rc = check_file(dump, dump_len, zeros, sizeof(zeros), 0, &st, &e);
	ok(rc == 0 && st.end == dump_len && st.tail == HMB_DUMP_END_ZEROS &&
	   strstr(e.msg, "5000 zero bytes"),
	   "zero bytes after the last record: %s", e.msg);
	rc = check_file(dump, dump_len, zeros, 7, 0, &st, &e);
	ok(rc == 0 && st.end == dump_len && st.tail == HMB_DUMP_END_ZEROS,
	   "7 zero bytes after the last record");
	rc = check_file(zeros, sizeof(zeros), NULL, 0, 0, &st, &e);
	ok(rc == 0 && st.end == 0 && st.tail == HMB_DUMP_END_ZEROS,
	   "a file of zero bytes only");
}

static void test_refused(void)
{
	static const char text[] = "notes about the trace\n";
	struct hmb_dump_state st;
	struct hmb_record_hdr h;
	struct hmb_error e;
	uint8_t image[64 + 4096], bad[64];
	size_t mid;
	int rc;

	memset(image, 0, sizeof(image));
	memcpy(image, "HMBT", 4);
	rc = check_file(image, sizeof(image), NULL, 0, 0, &st, &e);
	ok(rc == HMB_E_NOT_DUMP && e.offset == 0 && strstr(e.msg, "ring image"),
	   "a ring image: %s", e.msg);
	rc = check_file("HM", 2, NULL, 0, 0, &st, &e);
	ok(rc == HMB_E_NOT_DUMP, "2 bytes of a ring image");
	ok(!strcmp(hmb_errname(HMB_E_NOT_DUMP), "HMB_E_NOT_DUMP"),
	   "HMB_E_NOT_DUMP has a name");
	rc = check_file(text, strlen(text), NULL, 0, 0, &st, &e);
	ok(rc == HMB_E_UNKNOWN_MAGIC && e.offset == 0,
	   "a text file: %s", e.msg);

	/* A record's worth of bytes that are no record, in the middle. */
	mid = 0;
	for (int i = 0; i < 10; i++) {
		memcpy(&h, dump + mid, sizeof(h));
		mid += HMB_RECORD_SIZE(h.payload_len);
	}
	{
		uint8_t *copy = malloc(dump_len);

		memcpy(copy, dump, dump_len);
		memset(copy + mid, 'X', 32);
		rc = check_file(copy, dump_len, NULL, 0, 0, &st, &e);
		ok(rc == HMB_E_REC_MAGIC && e.offset == mid &&
		   st.end == mid && st.records == 10,
		   "corrupt in the middle, at %zu: %s", mid, e.msg);
		memcpy(&h, copy + mid, sizeof(h));
		h.magic = HMB_RECORD_MAGIC;
		h.payload_len = 5000;
		memcpy(copy + mid, &h, sizeof(h));
		rc = check_file(copy, dump_len, NULL, 0, 0, &st, &e);
		ok(rc == HMB_E_REC_LEN && e.offset == mid,
		   "a bad length in the middle: %s", e.msg);
		free(copy);
	}
	rc = check_file(dump, dump_len, "notes\n", 6, 0, &st, &e);
	ok(rc == HMB_E_REC_MAGIC && e.offset == dump_len &&
	   strstr(e.msg, "f.bin"),
	   "6 bytes of text after the last record: %s", e.msg);
	rc = check_file(dump, dump_len, "RX", 2, 0, &st, &e);
	ok(rc == HMB_E_REC_MAGIC && e.offset == dump_len,
	   "2 bytes that begin no magic after the last record");
	memset(&h, 0, sizeof(h));
	h.magic = HMB_RECORD_MAGIC;
	h.payload_len = 4065;
	rc = check_file(dump, dump_len, &h, 24, 0, &st, &e);
	ok(rc == HMB_E_REC_LEN && e.offset == dump_len,
	   "a torn header whose length is too large: %s", e.msg);
	h.payload_len = 8;
	h.flags = HMB_REC_FLAG_WRAP_MARKER;
	rc = check_file(dump, dump_len, &h, 24, 0, &st, &e);
	ok(rc == HMB_E_MARKER_PAYLOAD && e.offset == dump_len,
	   "a torn marker header with a payload: %s", e.msg);
	memset(bad, 0, sizeof(bad));
	bad[40] = 1;
	rc = check_file(dump, dump_len, bad, sizeof(bad), 0, &st, &e);
	ok(rc == HMB_E_REC_MAGIC && e.offset == dump_len,
	   "zeros with one byte set are no zero tail");
	rc = check_file(bad, sizeof(bad), NULL, 0, 0, &st, &e);
	ok(rc == HMB_E_UNKNOWN_MAGIC && e.offset == 0,
	   "nor at the start of the file");
	ok(hmb_dump_check(-1, "x", &st, &e) == HMB_E_INVAL, "no fd");
	{
		int fd = open(dir, O_RDONLY | O_DIRECTORY);

		ok(hmb_dump_check(fd, "dir", &st, &e) == HMB_E_INVAL,
		   "a directory: %s", e.msg);
		close(fd);
	}
}

int main(void)
{
	if (!mkdtemp(dir))
		return 1;
	dump_len = make_dump(dump, 200);
	if (dump_len > sizeof(dump))
		abort();
	test_accepted();
	test_refused();
	{
		char cmd[300];

		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
		if (system(cmd))
			diag("could not remove %s", dir);
	}
	return tap_done();
}
