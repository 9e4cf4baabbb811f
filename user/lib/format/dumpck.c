// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * hmb_dump_check(): may a writer append records to an existing file?  Only
 * if it is a dump up to a record boundary (docs/format.md 12.1): appending
 * to anything else would bury the new records where no reader finds them,
 * after bytes that stop every reader.  What an interrupted writer leaves
 * behind the last whole record (a record cut short, zero bytes) is not an
 * error: it is what the appender cuts off before going on.
 */
#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"

static int io_err(struct hmb_error *err, const char *name, uint64_t off,
		  int e)
{
	return hmb__err(err, HMB_E_IO, e, off,
			"%s: read failed at byte offset %" PRIu64 ": %s", name,
			off, strerror(e));
}

/* pread all of @len bytes at @off, or fewer at the end of the file. */
static ssize_t pread_full(int fd, void *buf, size_t len, off_t off)
{
	size_t got = 0;

	while (got < len) {
		ssize_t n = pread(fd, (char *)buf + got, len - got,
				  off + (off_t)got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -1;
		if (n == 0)
			break;
		got += (size_t)n;
	}
	return (ssize_t)got;
}

/* Are the @len bytes at @off all zero?  1, 0, or -errno. */
static int all_zero(int fd, off_t off, uint64_t len)
{
	uint8_t buf[65536];

	while (len) {
		size_t want = len < sizeof(buf) ? (size_t)len : sizeof(buf);
		ssize_t n = pread_full(fd, buf, want, off);

		if (n < 0)
			return -errno;
		if ((size_t)n < want)
			return -EIO;	/* shrank under us */
		for (size_t i = 0; i < want; i++)
			if (buf[i])
				return 0;
		off += (off_t)want;
		len -= want;
	}
	return 1;
}

/*
 * The @n (< 32) bytes of @p at dump offset @off end the file: could they
 * be the start of a record header cut short?  0, or the check's error.
 */
static int torn_header_ok(const uint8_t *p, size_t n, uint64_t off,
			  const char *name, struct hmb_error *err)
{
	static const uint8_t magic[4] = { 'R', 'E', 'C', 'T' };
	struct hmb_record_hdr h;
	char where[96];
	int rc;

	/* The fields not (wholly) there stand in as valid: magic, length 0. */
	memset(&h, 0, sizeof(h));
	memcpy(&h, p, n);
	if (n < sizeof(magic) && !memcmp(p, magic, n))
		memcpy(&h.magic, magic, sizeof(magic));
	if (n < offsetof(struct hmb_record_hdr, payload_len) +
		sizeof(h.payload_len))
		h.payload_len = 0;
	snprintf(where, sizeof(where),
		 "at byte offset %" PRIu64 " (the last %zu bytes of the file)",
		 off, n);
	rc = hmb__rec_validate(&h, off, where, err);
	if (rc && err) {
		char tmp[HMB_ERRMSG_LEN];
		int len = snprintf(tmp, sizeof(tmp), "%s: %s", name, err->msg);

		if (len < 0)
			len = 0;
		if ((size_t)len >= sizeof(tmp))
			len = sizeof(tmp) - 1;
		memcpy(err->msg, tmp, (size_t)len);
		err->msg[len] = '\0';
	}
	return rc;
}

/* What follows the last whole record at @end: a tail to cut, or an error. */
static int classify_tail(int fd, off_t base, const char *name,
			 struct hmb_dump_state *st, int rc,
			 struct hmb_error *err)
{
	uint64_t left = st->size - st->end;
	uint8_t hdr[HMB_RECORD_HDR_SIZE];
	int z;

	z = all_zero(fd, base + (off_t)st->end, left);
	if (z < 0)
		return io_err(err, name, st->end, -z);
	if (z) {
		st->tail = HMB_DUMP_END_ZEROS;
		return hmb__err(err, 0, 0, st->end,
				"%s: %" PRIu64 " zero bytes after the last whole record, at byte offset %" PRIu64,
				name, left, st->end);
	}
	if (rc == HMB_E_TRUNC_PAYLOAD) {
		st->tail = HMB_DUMP_END_TORN;
		return 0;	/* the reader's message says what is cut */
	}
	if (rc != HMB_E_TRUNC_HDR)
		return rc;	/* the reader's message names the offset */
	/* Fewer than 32 bytes: the reader did not look at them. */
	if (pread_full(fd, hdr, (size_t)left, base + (off_t)st->end) !=
	    (ssize_t)left)
		return io_err(err, name, st->end, errno ? errno : EIO);
	rc = torn_header_ok(hdr, (size_t)left, st->end, name, err);
	if (rc)
		return rc;
	st->tail = HMB_DUMP_END_TORN;
	return hmb__err(err, 0, 0, st->end,
			"%s: a record header cut short at byte offset %" PRIu64
			" (%" PRIu64 " of %d bytes present)", name, st->end,
			left, HMB_RECORD_HDR_SIZE);
}

int hmb_dump_check(int fd, const char *name, struct hmb_dump_state *st,
		   struct hmb_error *err)
{
	static const uint8_t ring_magic[4] = { 'H', 'M', 'B', 'T' };
	struct hmb_reader *r = NULL;
	struct hmb_record rec;
	struct stat sb;
	uint8_t first[4];
	ssize_t n;
	off_t base;
	int rc;

	if (!st || fd < 0)
		return hmb__err(err, HMB_E_INVAL, 0, 0, "no file or state");
	name = name ? name : "dump";
	memset(st, 0, sizeof(*st));
	base = lseek(fd, 0, SEEK_CUR);
	if (base < 0 || fstat(fd, &sb))
		return io_err(err, name, 0, errno);
	if (!S_ISREG(sb.st_mode))
		return hmb__err(err, HMB_E_INVAL, 0, 0,
				"%s: not a regular file", name);
	st->size = sb.st_size > base ? (uint64_t)(sb.st_size - base) : 0;
	n = pread_full(fd, first, sizeof(first), base);
	if (n < 0)
		return io_err(err, name, 0, errno);
	/* Not read whole as the reader would: it is refused anyway. */
	if (n > 0 && !memcmp(first, ring_magic, (size_t)n))
		return hmb__err(err, HMB_E_NOT_DUMP, 0, 0,
				"%s: a ring image (\"HMBT\" at byte offset 0), not a dump",
				name);
	rc = hmb_reader_open(&r, fd, name, err);
	if (rc == 0) {
		while ((rc = hmb_reader_next(r, &rec, err)) == 1) {
			st->end = rec.offset + rec.raw_len;
			st->records++;
		}
		hmb_reader_close(r);
	}
	if (rc == 0 || rc == HMB_E_IO || rc == HMB_E_NOMEM)
		return rc;
	return classify_tail(fd, base, name, st, rc, err);
}
