// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * hmb_reader_acct(): a dump through the sequence accounting, mapped and
 * read window by window, must count exactly what hmb_reader_next() and
 * hmb_acct_add() count, record for record, gap for gap, error for error:
 * records straddling window ends (windows of 1, 3 and 16 pages and the
 * default), runs of one size left in the middle, every record kind, a dump
 * starting at an offset that is not a page boundary, pipes, sidecar-style
 * stops, a truncated file, a file shrinking under the reader (between
 * windows and inside a mapped one: SIGBUS), a file growing while read.
 */
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hmbtrace.h"
#include "tap.h"

/* fastwalk.c's counts of second chains taken and dropped (not exported). */
extern uint64_t hmb__pair_taken, hmb__pair_dropped, hmb__run_odd;

static char dir[] = "/tmp/hmbacct.XXXXXX";

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

static size_t emit(uint8_t *buf, size_t off, uint32_t seq, uint16_t op,
		   uint8_t flags, uint16_t plen)
{
	struct hmb_record_hdr h = {
		.magic = HMB_RECORD_MAGIC, .seq = seq, .ts_ns = 1000 + seq * 3ull,
		.opcode = op, .cpu = seq & 3, .flags = flags,
		.payload_len = plen,
	};
	size_t size = HMB_RECORD_SIZE(plen);

	memcpy(buf + off, &h, sizeof(h));
	for (size_t k = 32; k < size; k++)
		buf[off + k] = k - 32 < plen ? (uint8_t)(seq + k) : 0;
	return off + size;
}

/*
 * A dump of every kind of record: runs of one size (some long, some broken
 * after a few records), mixed sizes up to the largest, wrap markers,
 * TRUNCATED and unknown flags, gaps, replayed batches, a producer restart.
 */
static size_t make_dump(uint8_t *buf, size_t cap, uint32_t *gap_seq_out,
			size_t *gap_off_out)
{
	size_t off = 0;
	uint32_t seq = 0, x = 12345;
	unsigned int i = 0;

	while (off + 8192 < cap) {
		unsigned int kind;
		uint16_t plen;

		x = x * 1103515245u + 12345u;
		kind = (x >> 16) % 100;
		if (i < 3000 || (i / 500) % 3 == 0)
			plen = 32;			/* a run of 64-byte records */
		else if ((i / 100) % 2)
			plen = (x >> 8) % 4065;		/* any size */
		else
			plen = (uint16_t[]){ 16, 64, 512, 4064 }[(x >> 4) & 3];
		if (kind == 0) {
			off = emit(buf, off, 0, 0, HMB_REC_FLAG_WRAP_MARKER, 0);
		} else if (kind == 1) {
			off = emit(buf, off, seq++, 7, 0x80, plen);	/* ignored */
		} else if (kind == 2) {
			seq += 1 + (x >> 20) % 50;			/* a gap */
			if (gap_seq_out && !*gap_seq_out && off > 70000) {
				*gap_seq_out = seq;
				*gap_off_out = off;
			}
			off = emit(buf, off, seq++, 1, 0, plen);
		} else if (kind == 3 && seq > 10) {
			off = emit(buf, off, seq - 5, 1, 0, plen);	/* replay */
		} else if (kind == 4 && i % 7 == 0) {
			seq = 1000000 + i;				/* restart */
			off = emit(buf, off, seq++, 2, 0, plen);
		} else {
			off = emit(buf, off, seq++, (x >> 24) % 6 + (kind == 5 ? 300 : 0),
				   kind == 6 ? HMB_REC_FLAG_TRUNCATED : 0, plen);
		}
		i++;
	}
	return off;
}

/*
 * Mixed sizes for the paired walk (fastwalk.c: two chains, the second
 * starting at the first record magic past a block's middle): payload sizes
 * at random, a gap, a record with unknown flags, a TRUNCATED one and a
 * replay now and then.  With @fakes, payloads of 64 bytes or more are
 * filled with fake records: the magic at every 32 bytes, lengths that end
 * exactly where the real record ends, and seqs that lead into the real
 * record after it (the last fake has that record's seq minus one, so a
 * chain started on a fake walks on into the real records), or start at
 * that record's seq (what the first chain expects where it lands), or are
 * random.  So the second chain mostly starts inside a payload, and must
 * be dropped, never counted.
 */
static size_t make_mixed(uint8_t *buf, size_t cap, bool fakes, uint32_t x)
{
	static const uint16_t sizes[] = { 8, 16, 24, 40, 64, 100, 512, 4064 };
	size_t off = 0;
	uint32_t seq = 1;

	while (off + 8192 < cap) {
		uint16_t plen, op;
		uint8_t flags = 0;
		unsigned int kind;
		size_t start = off, p, end;
		uint32_t nf, fs;

		x = x * 1103515245u + 12345u;
		plen = sizes[(x >> 8) % 8];
		kind = (x >> 16) % 64;
		op = (x >> 24) % 5;
		if (kind == 0)
			seq += 1 + (x >> 22) % 3;		/* a gap */
		else if (kind == 1)
			flags = 0x40;				/* ignored */
		else if (kind == 2)
			flags = HMB_REC_FLAG_TRUNCATED;
		if (kind == 3 && seq > 5)
			off = emit(buf, off, seq - 3, op, 0, plen);	/* replay */
		else
			off = emit(buf, off, seq++, op, flags, plen);
		if (!fakes || plen < 64)
			continue;
		/* Fake records of 32 bytes, the last one up to the end. */
		end = off;
		nf = (uint32_t)((end - start - 32) / 32);
		fs = (x & 0x300) == 0x100 ? seq - nf :
		     (x & 0x300) == 0x200 ? seq : x;
		for (p = start + 32; p < end; p += 32, fs++) {
			size_t size = end - p < 64 ? end - p : 32;
			struct hmb_record_hdr h = {
				.magic = HMB_RECORD_MAGIC, .seq = fs,
				.ts_ns = fs, .opcode = 9,
				.payload_len = (uint16_t)(size - 32),
			};

			memcpy(buf + p, &h, sizeof(h));
			if (size > 32)
				break;
		}
	}
	return off;
}

/*
 * Runs broken by single records of another size, as a firmware logs one
 * kind of event per command among a few of another (the shipped
 * dictionary: 56 bytes, then seven of 40): the fast walk's runs step over
 * them (fastwalk.c, run_span()).  Periods of 2 to 9 records, the odd one
 * first; now and then two odd ones in a row (the run ends there), and on
 * an odd record a gap, a replay, TRUNCATED, unknown flags or a wrap
 * marker.
 */
static size_t make_periodic(uint8_t *buf, size_t cap, uint32_t x)
{
	size_t off = 0;
	uint32_t seq = 1;
	unsigned int period = 8, k = 0;

	while (off + 8192 < cap) {
		uint16_t plen = 8;	/* 40-byte records */
		uint8_t flags = 0;
		unsigned int kind;

		x = x * 1103515245u + 12345u;
		kind = (x >> 16) % 400;
		if (k == 0) {
			plen = 24;	/* the odd one: 56 bytes */
			if (kind < 8)
				seq += 1 + kind;			/* a gap */
			else if (kind < 12)
				flags = HMB_REC_FLAG_TRUNCATED;
			else if (kind == 12)
				flags = 0x20;			/* ignored */
		}
		if (k == 1 && kind < 12)
			plen = (uint16_t)(100 + kind);	/* two odd in a row */
		if (k == 0 && kind == 13)
			off = emit(buf, off, 0, 0, HMB_REC_FLAG_WRAP_MARKER, 0);
		else if (k == 0 && kind == 14 && seq > 5)
			off = emit(buf, off, seq - 3, 1, 0, plen);	/* replay */
		else
			off = emit(buf, off, seq++, (uint16_t)(0x100 + k), flags,
				   plen);
		if (++k == period) {
			k = 0;
			if (kind >= 390)
				period = 2 + kind % 8;
		}
	}
	return off;
}

struct gaps {
	struct hmb_gap g[4096];
	size_t n;
	bool raise_bus;		/* at trunc_at_seq, raise(SIGBUS) instead */
	int trunc_fd;		/* >= 0: at gap trunc_at_seq, truncate/extend */
	uint32_t trunc_at_seq;
	off_t trunc_to;
	const uint8_t *grow_data;	/* extend the file with these bytes */
	size_t grow_len;
};

static void on_gap(void *ctx, const struct hmb_gap *g)
{
	struct gaps *gs = ctx;

	if (gs->n < 4096)
		gs->g[gs->n++] = *g;
	if (gs->raise_bus && g->last_seq + 1 == gs->trunc_at_seq) {
		raise(SIGBUS);
		gs->raise_bus = false;
	}
	if (gs->trunc_fd >= 0 && g->last_seq + 1 == gs->trunc_at_seq) {
		if (gs->grow_data) {
			if (pwrite(gs->trunc_fd, gs->grow_data, gs->grow_len,
				   gs->trunc_to) != (ssize_t)gs->grow_len)
				abort();
		} else if (ftruncate(gs->trunc_fd, gs->trunc_to)) {
			abort();
		}
		gs->trunc_fd = -1;
	}
}

struct result {
	int rc;
	struct hmb_error err;
	struct hmb_acct acct;
	struct gaps gaps;
	unsigned int stops;
};

/* The reference: hmb_reader_next() and hmb_acct_add(). */
static void by_next(int fd, struct result *res)
{
	struct hmb_reader *r;
	struct hmb_record rec;

	memset(res, 0, sizeof(*res));
	res->gaps.trunc_fd = -1;
	hmb_acct_init(&res->acct, 0, on_gap, &res->gaps);
	res->rc = hmb_reader_open(&r, fd, "t.bin", &res->err);
	if (res->rc)
		return;
	while ((res->rc = hmb_reader_next(r, &rec, &res->err)) == 1)
		hmb_acct_add(&res->acct, &rec);
	hmb_reader_close(r);
}

/* hmb_reader_acct() with @window; a stop every @every bytes. */
static void by_acct(int fd, size_t window, uint64_t every, struct result *res,
		    const struct gaps *setup)
{
	struct hmb_reader *r;
	uint64_t stop = every ? every : UINT64_MAX;

	memset(res, 0, sizeof(*res));
	res->gaps.trunc_fd = -1;
	if (setup)
		res->gaps = *setup;
	hmb_acct_init(&res->acct, 0, on_gap, &res->gaps);
	res->rc = hmb_reader_open(&r, fd, "t.bin", &res->err);
	if (res->rc)
		return;
	if (window != (size_t)-1)
		hmb_reader_set_map_window(r, window);
	while ((res->rc = hmb_reader_acct(r, &res->acct, stop, &res->err)) == 1) {
		if (hmb_reader_offset(r) < stop)
			break;	/* stopped early: wrong */
		res->stops++;
		/*
		 * A stop is where a caller may start an epoch (a sidecar's
		 * epoch= offset); these stops are not epochs, so the counts
		 * must come out as without them.
		 */
		stop = (hmb_reader_offset(r) / every + 1) * every;
	}
	if (res->rc < 0) {
		struct hmb_error e2;

		/* Errors are sticky. */
		if (hmb_reader_acct(r, &res->acct, UINT64_MAX, &e2) != res->rc ||
		    e2.offset != res->err.offset)
			res->rc = 99;
	}
	hmb_reader_close(r);
}

static bool same(const struct result *a, const struct result *b)
{
	static struct hmb_acct x, y;

	/* Each points its gap callback at its own list. */
	x = a->acct;
	y = b->acct;
	x.gap_ctx = y.gap_ctx = NULL;
	return a->rc == b->rc && !memcmp(&x, &y, sizeof(x)) &&
	       a->gaps.n == b->gaps.n &&
	       !memcmp(a->gaps.g, b->gaps.g, a->gaps.n * sizeof(a->gaps.g[0])) &&
	       (a->rc >= 0 || (a->err.offset == b->err.offset &&
			       !strcmp(a->err.msg, b->err.msg)));
}

static int open_at(const char *name, off_t at)
{
	int fd = open(path(name), O_RDONLY);

	if (fd < 0 || lseek(fd, at, SEEK_SET) != at)
		abort();
	return fd;
}

static void check_file(const char *name, off_t at, const char *what)
{
	static const size_t windows[] = { 4096, 3 * 4096, 65536, (size_t)-1, 0 };
	static struct result ref, got;

	{
		int fd = open_at(name, at);

		by_next(fd, &ref);
		close(fd);
	}
	for (size_t k = 0; k < sizeof(windows) / sizeof(windows[0]); k++) {
		int fd = open_at(name, at);
		bool ok1;

		by_acct(fd, windows[k], 0, &got, NULL);
		close(fd);
		ok1 = same(&ref, &got);
		ok(ok1, "%s, window %zd: %llu records, %llu lost in %zu gaps, rc %d%s%s",
		   what, (ssize_t)windows[k],
		   (unsigned long long)got.acct.records,
		   (unsigned long long)got.acct.lost, got.gaps.n, got.rc,
		   got.rc < 0 ? ": " : "", got.rc < 0 ? got.err.msg : "");
		if (!ok1)
			diag("expected %llu records, rc %d %s",
			     (unsigned long long)ref.acct.records, ref.rc,
			     ref.rc < 0 ? ref.err.msg : "");
	}
}

struct feeder {
	int fd;
	const uint8_t *data;
	size_t len;
};

static void *feed(void *arg)
{
	struct feeder *f = arg;
	size_t off = 0, piece = 1;

	while (off < f->len) {
		size_t n = f->len - off < piece ? f->len - off : piece;

		if (write(f->fd, f->data + off, n) != (ssize_t)n)
			break;
		off += n;
		piece = piece * 7 % 50003 + 1;
	}
	close(f->fd);
	return NULL;
}

static int bus_seen;

static void my_bus(int sig)
{
	(void)sig;
	bus_seen++;
}

/* hmb_acct_opcodes() gives what a scan of all 65536 counts gives. */
static bool same_opcodes(const struct hmb_acct *a)
{
	struct hmb_opcode_iter it;
	uint32_t want = 0;
	uint64_t n;
	uint16_t op;

	hmb_acct_opcodes(a, &it);
	while (hmb_opcode_iter_next(&it, &op, &n)) {
		while (want < op && !a->opcodes[want])
			want++;
		if (want != op || a->opcodes[op] != n)
			return false;
		want++;
	}
	while (want < 65536 && !a->opcodes[want])
		want++;
	return want == 65536;
}

/* Does @it give the @n opcodes of @want in order (with counts 1000 i + 1)? */
static bool gives(struct hmb_opcode_iter *it, const uint16_t *want, size_t n,
		  bool counts)
{
	bool good = true;
	uint64_t c;
	uint16_t op;
	size_t i;

	for (i = 0; hmb_opcode_iter_next(it, &op, &c); i++)
		good = good && i < n && op == want[i] &&
		       (!counts || c == 1000 * i + 1);
	return good && i == n;
}

/*
 * hmb_acct_opcodes(): the opcodes with counts in order, each once, on an
 * accounting of hmb_acct_new() and one of hmb_acct_init(); a copy of the
 * iterator goes over them again.
 */
static void opcode_iter(void)
{
	static const uint16_t want[] = { 0, 7, 511, 512, 1000, 40000, 65535 };
	static struct hmb_acct st;
	struct hmb_acct *na = hmb_acct_new(0, NULL, NULL);
	struct hmb_acct *accts[] = { na, &st };
	const char *names[] = { "hmb_acct_new", "hmb_acct_init" };
	struct hmb_opcode_iter it, again;
	size_t k, i;
	uint64_t n;
	uint16_t op;

	if (!ok(na, "hmb_acct_new for the opcode iterator"))
		return;
	hmb_acct_init(&st, 0, NULL, NULL);
	hmb_acct_opcodes(na, &it);
	ok(!hmb_opcode_iter_next(&it, &op, &n) &&
	   !hmb_opcode_iter_next(&it, &op, &n),
	   "hmb_acct_opcodes: none on a new accounting, and none again");
	for (k = 0; k < 2; k++) {
		struct hmb_acct *a = accts[k];
		size_t nw = sizeof(want) / sizeof(want[0]);

		for (i = 0; i < nw; i++)
			a->opcodes[want[i]] = 1000 * i + 1;
		hmb_acct_opcodes(a, &it);
		again = it;
		ok(gives(&it, want, nw, true), "%s: hmb_opcode_iter_next gives the 7 opcodes with counts (0, 7, 511, 512, 1000, 40000, 65535), in order, with their counts",
		   names[k]);
		ok(gives(&again, want, nw, false), "%s: a copy of the iterator gives them again", names[k]);
		ok(!hmb_opcode_iter_next(&it, &op, &n),
		   "%s: and nothing after the end", names[k]);
	}
	hmb_acct_free(na);
}

int main(void)
{
	static uint8_t buf[6 << 20];
	static struct result ref, got;
	uint32_t gap_seq = 0;
	size_t len, gap_off = 0;

	if (!mkdtemp(dir))
		return 1;
	signal(SIGPIPE, SIG_IGN);
	len = make_dump(buf, sizeof(buf), &gap_seq, &gap_off);
	diag("dump of %zu bytes", len);
	put("d.bin", buf, len);
	check_file("d.bin", 0, "whole dump");

	/* hmb_acct_new(): mapped zero, counts as hmb_acct_init() does. */
	{
		static struct gaps ng = { .trunc_fd = -1 };
		struct hmb_acct *na = hmb_acct_new(0, on_gap, &ng), x;
		struct hmb_reader *r = NULL;
		struct hmb_error e;
		int fd = open_at("d.bin", 0), rc = -1;

		by_next(fd, &ref);
		if (lseek(fd, 0, SEEK_SET) == 0 && na &&
		    !hmb_reader_open(&r, fd, "t.bin", &e))
			while ((rc = hmb_reader_acct(r, na, UINT64_MAX, &e)) == 1)
				;
		hmb_reader_close(r);
		close(fd);
		x = ref.acct;
		x.gap_ctx = &ng;
		ok(na && rc == 0 && !memcmp(&x, na, sizeof(x)) &&
		   ng.n == ref.gaps.n &&
		   !memcmp(ng.g, ref.gaps.g, ng.n * sizeof(ng.g[0])),
		   "hmb_acct_new: a mapped zero accounting counts the dump as hmb_acct_init's (%llu records)",
		   na ? (unsigned long long)na->records : 0);
		ok(na && same_opcodes(na), "hmb_acct_opcodes: the dump's opcodes, as a scan of all counts finds them");
		hmb_acct_free(na);
		hmb_acct_free(NULL);
	}
	opcode_iter();

	/* The dump after a 100-byte prefix: windows off the page grid. */
	{
		static uint8_t pre[(6 << 20) + 100];

		memset(pre, 'x', 100);
		memcpy(pre + 100, buf, len);
		put("pre.bin", pre, len + 100);
		check_file("pre.bin", 100, "dump at file offset 100");
	}

	/* Cut inside a payload, inside a header; a bad magic far in. */
	put("cut.bin", buf, len - 8);
	check_file("cut.bin", 0, "dump cut in its last payload");
	{
		struct hmb_record_hdr saved;
		size_t off = 0, last = 0;

		while (off < len) {
			struct hmb_record_hdr h;

			memcpy(&h, buf + off, sizeof(h));
			last = off;
			off += HMB_RECORD_SIZE(h.payload_len);
		}
		put("cuthdr.bin", buf, last + 20);
		check_file("cuthdr.bin", 0, "dump cut in its last header");
		off = 0;
		while (off < len / 2) {
			struct hmb_record_hdr h;

			memcpy(&h, buf + off, sizeof(h));
			off += HMB_RECORD_SIZE(h.payload_len);
		}
		memcpy(&saved, buf + off, sizeof(saved));
		buf[off + 1] ^= 0x20;
		put("magic.bin", buf, len);
		check_file("magic.bin", 0, "bad magic in the middle");
		buf[off + 1] ^= 0x20;
		((struct hmb_record_hdr *)(buf + off))->payload_len = 4065;
		put("len.bin", buf, len);
		check_file("len.bin", 0, "payload_len 4065 in the middle");
		((struct hmb_record_hdr *)(buf + off))->payload_len = 0;
		((struct hmb_record_hdr *)(buf + off))->flags |= HMB_REC_FLAG_WRAP_MARKER;
		put("marker.bin", buf, len);
		check_file("marker.bin", 0, "marker in the middle (payload 0)");
		memcpy(buf + off, &saved, sizeof(saved));
	}
	/*
	 * Runs that step over single records of another size: counted
	 * exactly as the reference, also with an oversized length on one of
	 * them; and that way taken.
	 */
	{
		static uint8_t per[6 << 20];
		uint64_t o0 = hmb__run_odd;
		size_t plen = make_periodic(per, sizeof(per), 99), off = 0;

		put("periodic.bin", per, plen);
		check_file("periodic.bin", 0, "runs with one record of another size");
		ok(hmb__run_odd - o0 > 10000,
		   "runs with one record of another size: %llu stepped over inside runs",
		   (unsigned long long)(hmb__run_odd - o0));
		/* the 56-byte record of the period nearest the middle: 4065 */
		while (off < plen / 2) {
			struct hmb_record_hdr h;

			memcpy(&h, per + off, sizeof(h));
			off += HMB_RECORD_SIZE(h.payload_len);
		}
		while (((struct hmb_record_hdr *)(per + off))->payload_len != 24)
			off += HMB_RECORD_SIZE(((struct hmb_record_hdr *)(per + off))->payload_len);
		((struct hmb_record_hdr *)(per + off))->payload_len = 4065;
		put("periodic-len.bin", per, plen);
		check_file("periodic-len.bin", 0, "runs with one record of another size, one of them with payload_len 4065");
	}
	put("empty.bin", "", 0);
	check_file("empty.bin", 0, "empty file");

	/*
	 * The paired walk: mixed sizes take it; fake records in payloads
	 * make it drop the second chain.  Both ways must count exactly as
	 * the reference, and both must have been taken.
	 */
	{
		static uint8_t mixed[(6 << 20) + 100];
		uint64_t t0 = hmb__pair_taken, d0 = hmb__pair_dropped;
		size_t mlen = make_mixed(mixed, 6 << 20, false, 777);

		put("mixed.bin", mixed, mlen);
		check_file("mixed.bin", 0, "mixed sizes");
		memmove(mixed + 100, mixed, mlen);
		memset(mixed, 'x', 100);
		put("mixed100.bin", mixed, mlen + 100);
		check_file("mixed100.bin", 100, "mixed sizes at file offset 100");
		ok(hmb__pair_taken - t0 > 100,
		   "mixed sizes: %llu blocks walked two records at a time, %llu dropped",
		   (unsigned long long)(hmb__pair_taken - t0),
		   (unsigned long long)(hmb__pair_dropped - d0));
		t0 = hmb__pair_taken;
		d0 = hmb__pair_dropped;
		mlen = make_mixed(mixed, 6 << 20, true, 4242);
		put("fakes.bin", mixed, mlen);
		check_file("fakes.bin", 0, "fake records in payloads");
		ok(hmb__pair_dropped - d0 > 100,
		   "fake records in payloads: %llu second chains dropped, %llu taken",
		   (unsigned long long)(hmb__pair_dropped - d0),
		   (unsigned long long)(hmb__pair_taken - t0));
	}

	/* A pipe: the stream's way, same counts. */
	{
		struct feeder f = { .data = buf, .len = len };
		pthread_t t;
		int fds[2], fd;

		fd = open_at("d.bin", 0);
		by_next(fd, &ref);
		close(fd);
		if (pipe(fds))
			abort();
		f.fd = fds[1];
		pthread_create(&t, NULL, feed, &f);
		by_acct(fds[0], (size_t)-1, 0, &got, NULL);
		close(fds[0]);
		pthread_join(t, NULL);
		ok(same(&ref, &got), "through a pipe in odd pieces: %llu records",
		   (unsigned long long)got.acct.records);
	}

	/* Stops (sidecar epochs) every 100000 bytes, file and pipe. */
	{
		int fd = open_at("d.bin", 0);

		by_acct(fd, 65536, 100000, &got, NULL);
		close(fd);
		ok(same(&ref, &got) && got.stops == len / 100000,
		   "a stop every 100000 bytes: %u stops, same counts", got.stops);
	}

	/*
	 * Shrinking: at the gap of seq gap_seq (its record at gap_off, past
	 * byte 70000) the file is cut at the end of that record's page, and
	 * the walk goes on into the next page, which no longer exists:
	 * SIGBUS, an error.  The windows are sized so that the gap falls in
	 * window 1, which is mapped (a probe: an eighth of the size).
	 */
	{
		size_t pg0 = gap_off & ~(size_t)4095;
		struct gaps setup = { .trunc_at_seq = gap_seq,
				      .trunc_to = (off_t)pg0 + 4096 };
		struct sigaction mine = { .sa_handler = my_bus }, after;
		int fd;

		put("shrink.bin", buf, len);
		fd = open(path("shrink.bin"), O_RDWR);
		setup.trunc_fd = fd;
		sigemptyset(&mine.sa_mask);
		sigaction(SIGBUS, &mine, NULL);
		by_acct(fd, 8 * pg0, 0, &got, &setup);
		sigaction(SIGBUS, NULL, &after);
		ok(got.rc == HMB_E_IO && strstr(got.err.msg, "t.bin: read failed at byte offset") &&
		   strstr(got.err.msg, "shrank while being read (SIGBUS)") &&
		   got.err.offset == pg0 + 4096 && got.gaps.trunc_fd == -1,
		   "file cut under a mapped window: %s", got.err.msg);
		ok(after.sa_handler == my_bus && bus_seen == 0,
		   "the program's SIGBUS handler is back, and was not called");
		close(fd);

		/* A SIGBUS sent (not a fault) during the walk is the program's. */
		fd = open_at("d.bin", 0);
		by_acct(fd, 8 * pg0, 0, &got, &(struct gaps){
			.trunc_fd = -1, .trunc_at_seq = gap_seq,
			.raise_bus = true });
		close(fd);
		ok(got.rc == 0 && got.acct.records == ref.acct.records &&
		   bus_seen == 1,
		   "raise(SIGBUS) during a mapped walk: the program's handler ran once, the walk went on");

		/* Cut while window 0 (read) is walked: seen at the next. */
		put("shrink.bin", buf, len);
		fd = open(path("shrink.bin"), O_RDWR);
		setup.trunc_fd = fd;
		setup.trunc_to = 4096;
		by_acct(fd, 1 << 20, 0, &got, &setup);
		ok(got.rc == HMB_E_IO && strstr(got.err.msg, "shrank to 4096 bytes"),
		   "file cut while a read window is walked: %s", got.err.msg);
		close(fd);
		signal(SIGBUS, SIG_DFL);
	}

	/*
	 * Growing: the file holds the dump cut in a record past the gap;
	 * at the gap the rest is written; the walk reads on to the end.
	 */
	{
		struct gaps setup = { .trunc_at_seq = gap_seq, .trunc_to = 200005,
				      .grow_data = buf + 200005,
				      .grow_len = len - 200005 };
		int fd;

		put("grow.bin", buf, 200005);
		fd = open(path("grow.bin"), O_RDWR);
		setup.trunc_fd = fd;
		by_acct(fd, 65536, 0, &got, &setup);
		close(fd);
		ok(got.rc == 0 && got.acct.records == ref.acct.records &&
		   got.acct.bytes == len,
		   "file growing while read: %llu records, %llu bytes",
		   (unsigned long long)got.acct.records,
		   (unsigned long long)got.acct.bytes);
	}

	/* A ring image: the consumer's way; the stop does not apply. */
	{
		struct hmb_reader *r;
		struct hmb_error e;
		int fd;

		put("ring.bin", "HMBT", 4);
		fd = open_at("ring.bin", 0);
		ok(hmb_reader_open(&r, fd, "t.bin", &e) == HMB_E_RING_SHORT,
		   "short ring image refused at open: %s", e.msg);
		close(fd);
		ok(hmb_reader_acct(NULL, NULL, 0, &e) == HMB_E_INVAL,
		   "no reader: HMB_E_INVAL");
	}
	{
		char cmd[300];

		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
		if (system(cmd))
			diag("could not remove %s", dir);
	}
	return tap_done();
}
