// SPDX-License-Identifier: Apache-2.0
/*
 * hmb_reader_* on files and pipes: dialect detection (format.md 12.3), dumps
 * streamed
 * across buffer refills, truncated dumps, empty files, unknown magic, ring
 * images walked with the consumer code, refused versions.
 */
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hmbtrace.h"
#include "tap.h"

static char dir[] = "/tmp/hmbreader.XXXXXX";

static char *path(const char *name)
{
	static char p[256];

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	return p;
}

static void put(const char *name, const void *data, size_t len)
{
	int fd = open(path(name), O_WRONLY | O_CREAT | O_TRUNC, 0644);

	if (fd < 0 || write(fd, data, len) != (ssize_t)len)
		abort();
	close(fd);
}

static size_t last_off;	/* offset of the last record make_dump wrote */

/* A dump of @n records with payloads 0..299 bytes; returns its length. */
static size_t make_dump(uint8_t *buf, unsigned n)
{
	size_t off = 0;

	for (unsigned i = 0; i < n; i++) {
		struct hmb_record_hdr h = {
			.magic = HMB_RECORD_MAGIC, .seq = i, .ts_ns = i * 10,
			.opcode = i % 5, .payload_len = (i * 37) % 300,
		};

		if (i % 100 == 99) {
			h.flags = HMB_REC_FLAG_WRAP_MARKER;
			h.payload_len = 0;
		}
		last_off = off;
		memcpy(buf + off, &h, 32);
		for (unsigned k = 0; k < h.payload_len; k++)
			buf[off + 32 + k] = (uint8_t)(i + k);
		memset(buf + off + 32 + h.payload_len, 0,
		       HMB_RECORD_SIZE(h.payload_len) - 32 - h.payload_len);
		off += HMB_RECORD_SIZE(h.payload_len);
	}
	return off;
}

/* Read all; return count of records, and the error code at the end. */
static long read_all(int fd, int *rc_out, struct hmb_error *e,
		     enum hmb_dialect *d, bool check)
{
	struct hmb_reader *r;
	struct hmb_record rec;
	uint64_t off = 0;
	long n = 0;
	int rc;

	rc = hmb_reader_open(&r, fd, "test.bin", e);
	if (rc) {
		*rc_out = rc;
		return -1;
	}
	if (d)
		*d = hmb_reader_dialect(r);
	while ((rc = hmb_reader_next(r, &rec, e)) == 1) {
		if (check && (rec.hdr.seq != (uint32_t)n || rec.offset != off ||
			      rec.raw_len != (uint32_t)HMB_RECORD_SIZE(rec.hdr.payload_len) ||
			      (rec.hdr.payload_len &&
			       rec.payload[rec.hdr.payload_len - 1] !=
			       (uint8_t)(n + rec.hdr.payload_len - 1))))
			break;
		off += rec.raw_len;
		n++;
	}
	*rc_out = rc;
	if (rc < 0) {
		struct hmb_error e2;

		if (hmb_reader_next(r, &rec, &e2) != rc || e2.offset != e->offset)
			*rc_out = 99;	/* errors must be sticky */
	}
	hmb_reader_close(r);
	return n;
}

static long read_file(const char *name, int *rc, struct hmb_error *e,
		      enum hmb_dialect *d)
{
	int fd = open(path(name), O_RDONLY);
	long n = read_all(fd, rc, e, d, true);

	close(fd);
	return n;
}

struct feeder {
	int fd;
	const uint8_t *data;
	size_t len;
};

/* Write in odd-sized pieces so reads come back short. */
static void *feed(void *arg)
{
	struct feeder *f = arg;
	size_t off = 0, piece = 1;

	while (off < f->len) {
		size_t n = f->len - off < piece ? f->len - off : piece;

		if (write(f->fd, f->data + off, n) != (ssize_t)n)
			break;
		off += n;
		piece = piece * 7 % 5003 + 1;
	}
	close(f->fd);
	return NULL;
}

static long read_pipe(const uint8_t *data, size_t len, int *rc,
		      struct hmb_error *e, enum hmb_dialect *d, bool check)
{
	struct feeder f = { .data = data, .len = len };
	pthread_t t;
	int fds[2];
	long n;

	if (pipe(fds))
		abort();
	f.fd = fds[1];
	pthread_create(&t, NULL, feed, &f);
	n = read_all(fds[0], rc, e, d, check);
	close(fds[0]);	/* unblocks the feeder if we stopped early */
	pthread_join(t, NULL);
	return n;
}

static void test_dumps(void)
{
	static uint8_t buf[4 << 20];
	enum hmb_dialect d = 99;
	struct hmb_error e;
	size_t len = make_dump(buf, 2990), lo = last_off, ls = len - lo;
	long n;
	int rc;

	diag("dump of 2990 records, %zu bytes", len);
	put("empty.bin", "", 0);
	n = read_file("empty.bin", &rc, &e, &d);
	ok(n == 0 && rc == 0 && d == HMB_DIALECT_DUMP, "empty file: empty dump");
	put("dump.bin", buf, len);
	n = read_file("dump.bin", &rc, &e, &d);
	ok(n == 2990 && rc == 0 && d == HMB_DIALECT_DUMP,
	   "dump read across buffer refills (%ld records)", n);
	n = read_pipe(buf, len, &rc, &e, &d, true);
	ok(n == 2990 && rc == 0, "same dump through a pipe (%ld)", n);
	diag("last record at %zu, %zu bytes", lo, ls);
	put("trunc-hdr.bin", buf, lo + 16);
	n = read_file("trunc-hdr.bin", &rc, &e, NULL);
	ok(n == 2989 && rc == HMB_E_TRUNC_HDR && e.offset == lo &&
	   strstr(e.msg, "test.bin"), "truncated header: %s", e.msg);
	put("trunc-pl.bin", buf, len - 8);
	n = read_file("trunc-pl.bin", &rc, &e, NULL);
	ok(n == 2989 && rc == HMB_E_TRUNC_PAYLOAD && e.offset == lo,
	   "truncated payload: %s", e.msg);
	n = read_pipe(buf, len - 8, &rc, &e, NULL, true);
	ok(n == 2989 && rc == HMB_E_TRUNC_PAYLOAD, "truncated payload in a pipe");
	buf[lo] ^= 0xff;
	put("badmagic.bin", buf, len);
	n = read_file("badmagic.bin", &rc, &e, NULL);
	ok(n == 2989 && rc == HMB_E_REC_MAGIC && e.offset == lo,
	   "bad record magic in a dump: %s", e.msg);
	buf[lo] ^= 0xff;
	((struct hmb_record_hdr *)(buf + lo))->payload_len = 5000;
	put("badlen.bin", buf, len);
	n = read_file("badlen.bin", &rc, &e, NULL);
	ok(n == 2989 && rc == HMB_E_REC_LEN, "payload_len 5000: %s", e.msg);
	put("short1.bin", "RE", 2);
	n = read_file("short1.bin", &rc, &e, &d);
	ok(n == 0 && rc == HMB_E_TRUNC_HDR && e.offset == 0 &&
	   d == HMB_DIALECT_DUMP, "2-byte dump prefix: %s", e.msg);
	put("short2.bin", "HM", 2);
	n = read_file("short2.bin", &rc, &e, NULL);
	ok(n == -1 && rc == HMB_E_RING_SHORT, "2-byte image prefix: %s", e.msg);
	put("unknown.bin", "GIF89a..........", 16);
	n = read_file("unknown.bin", &rc, &e, NULL);
	ok(n == -1 && rc == HMB_E_UNKNOWN_MAGIC && e.offset == 0 &&
	   strstr(e.msg, "47 49 46 38"), "unknown magic: %s", e.msg);
	put("unknown1.bin", "X", 1);
	n = read_file("unknown1.bin", &rc, &e, NULL);
	ok(n == -1 && rc == HMB_E_UNKNOWN_MAGIC, "1-byte junk: %s", e.msg);
	{
		struct hmb_reader *r;

		ok(hmb_reader_open(&r, -1, "x", &e) == HMB_E_INVAL,
		   "bad fd refused");
	}
	{
		int fd = open(dir, O_RDONLY | O_DIRECTORY);

		n = read_all(fd, &rc, &e, NULL, false);
		ok(n == -1 && rc == HMB_E_IO && e.sys_errno, "read error: %s",
		   e.msg);
		close(fd);
	}
}

static void test_images(void)
{
	static uint8_t ring[64 + 4096], pl[300], tmp[8192];
	struct hmb_consumer *c;
	struct hmb_producer p;
	struct hmb_error e;
	struct hmb_reader *r;
	struct hmb_record rec;
	enum hmb_dialect d;
	int rc, fd, i;
	long n;

	memset(ring, 0, sizeof(ring));
	hmb_producer_init(&p, ring, sizeof(ring), 4096, 0, &e);
	hmb_consumer_open(&c, ring, sizeof(ring), hmb_publish_store, ring, &e);
	/* 10 records of 288 bytes, consumed (tail 2880); 12 more: 4 to
	 * 4032, a marker in the last 64 bytes, 8 in the next lap. */
	for (i = 0; i < 22; i++) {
		struct hmb_event ev = { .ts_ns = i, .payload_len = 250,
					.payload = pl };
		uint64_t avail;
		size_t l;

		memset(pl, i, sizeof(pl));
		hmb_producer_emit(&p, &ev, HMB_EMIT_DROP);
		if (i == 9) {
			hmb_consumer_poll(c, &avail, &e);
			hmb_consumer_read(c, tmp, sizeof(tmp), &l, &e);
			hmb_consumer_commit(c, &e);
		}
	}
	hmb_consumer_close(c);
	diag("image head %" PRIu64 " tail %" PRIu64 ", %" PRIu64 " markers",
	     (uint64_t)((struct hmb_ring_hdr *)ring)->head,
	     (uint64_t)((struct hmb_ring_hdr *)ring)->tail, p.markers);
	put("ring.bin", ring, sizeof(ring));
	fd = open(path("ring.bin"), O_RDONLY);
	rc = hmb_reader_open(&r, fd, "ring.bin", &e);
	ok(rc == 0 && hmb_reader_dialect(r) == HMB_DIALECT_RING &&
	   hmb_reader_ring_hdr(r)->ring_size == 4096, "ring image opened");
	n = 0;
	{
		int markers = 0, bad = 0;

		while ((rc = hmb_reader_next(r, &rec, &e)) == 1) {
			if (rec.kind == HMB_KIND_MARKER) {
				markers++;
				continue;
			}
			if (rec.offset < 64 || rec.offset >= 64 + 4096 ||
			    memcmp(ring + rec.offset, rec.raw, rec.raw_len) ||
			    rec.payload[0] != (uint8_t)rec.hdr.ts_ns)
				bad++;
			n++;
		}
		ok(rc == 0 && markers == 1 && bad == 0 && n == 12,
		   "image records tail..head: %ld records, 1 marker, file offsets",
		   n);
	}
	hmb_reader_close(r);
	close(fd);
	n = read_pipe(ring, sizeof(ring), &rc, &e, &d, false);
	ok(rc == 0 && d == HMB_DIALECT_RING && n == 13,
	   "ring image through a pipe");
	put("ring-short.bin", ring, sizeof(ring) - 8);
	n = read_file("ring-short.bin", &rc, &e, NULL);
	ok(rc == HMB_E_RING_SHORT, "truncated image: %s", e.msg);
	((struct hmb_ring_hdr *)ring)->version = 2;
	put("ring-v2.bin", ring, sizeof(ring));
	n = read_file("ring-v2.bin", &rc, &e, NULL);
	ok(rc == HMB_E_RING_VERSION && e.offset == 4, "version 2 image: %s",
	   e.msg);
	((struct hmb_ring_hdr *)ring)->version = 1;
	((struct hmb_ring_hdr *)ring)->ring_size = 1U << 31;
	put("ring-huge.bin", ring, sizeof(ring));
	n = read_file("ring-huge.bin", &rc, &e, NULL);
	ok(rc == HMB_E_RING_SHORT, "header claiming 2 GiB: %s", e.msg);
	((struct hmb_ring_hdr *)ring)->ring_size = 4096;
	((struct hmb_ring_hdr *)ring)->head += 4096;
	put("ring-ahead.bin", ring, sizeof(ring));
	n = read_file("ring-ahead.bin", &rc, &e, NULL);
	ok(rc == HMB_E_HEAD_AHEAD && e.offset == 0x10, "image head ahead: %s",
	   e.msg);
	((struct hmb_ring_hdr *)ring)->head -= 4096;
	{
		uint64_t t = ((struct hmb_ring_hdr *)ring)->tail;

		ring[64 + (t & 4095)] ^= 1;
		put("ring-bad.bin", ring, sizeof(ring));
		fd = open(path("ring-bad.bin"), O_RDONLY);
		hmb_reader_open(&r, fd, "ring-bad.bin", &e);
		rc = hmb_reader_next(r, &rec, &e);
		ok(rc == HMB_E_REC_MAGIC && e.offset == 64 + (t & 4095) &&
		   strstr(e.msg, "file offset"), "bad record in an image: %s",
		   e.msg);
		hmb_reader_close(r);
		close(fd);
	}
}

/* An image larger than the reader's first buffer: the growth path. */
static void test_big_image(void)
{
	const uint32_t rs = 256 * 1024;
	uint8_t *ring = calloc(1, 64 + rs), pl[1000];
	struct hmb_producer p;
	struct hmb_error e;
	enum hmb_dialect d;
	unsigned i;
	long n;
	int rc;

	hmb_producer_init(&p, ring, 64 + rs, rs, 0, &e);
	for (i = 0; ; i++) {
		struct hmb_event ev = { .ts_ns = i, .payload_len = i % 1000,
					.payload = pl };

		if (hmb_producer_emit(&p, &ev, HMB_EMIT_TRY) != HMB_EMITTED)
			break;
	}
	put("big.bin", ring, 64 + rs);
	{
		int fd = open(path("big.bin"), O_RDONLY);

		n = read_all(fd, &rc, &e, &d, false);
		close(fd);
	}
	ok(rc == 0 && d == HMB_DIALECT_RING && n == (long)(i + p.markers),
	   "256 KiB image from a file: %ld of %u records + markers", n, i);
	n = read_pipe(ring, 64 + rs, &rc, &e, &d, false);
	ok(rc == 0 && n == (long)(i + p.markers),
	   "256 KiB image through a pipe: %ld", n);
	n = read_pipe(ring, 64 + rs - 1000, &rc, &e, &d, false);
	ok(rc == HMB_E_RING_SHORT, "short 256 KiB image in a pipe: %s", e.msg);
	free(ring);
}

int main(void)
{
	if (!mkdtemp(dir))
		return 1;
	test_dumps();
	test_images();
	test_big_image();
	{
		char cmd[300];

		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
		if (system(cmd))
			diag("could not remove %s", dir);
	}
	return tap_done();
}
