// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Record iteration over files (format.md 12.3): dump streams ("RECT", or
 * empty) are streamed through a fixed buffer so pipes and stdin work in
 * constant memory; ring images ("HMBT") are read whole and walked with the
 * very consumer code that drains live rings.
 *
 * hmb_reader_acct() runs a whole dump through the sequence accounting.  On
 * a regular file it goes window by window, each mapped (no copy, unmapped
 * before the next, so memory stays bounded whatever the file's size) or
 * read, whichever costs less CPU on that file.  A file that shrinks under
 * a mapping raises SIGBUS on the next access: while a window is walked a
 * handler turns that into an HMB_E_IO error (the handler is installed for
 * the walk only, and passes any other SIGBUS on to the one it replaced).
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stddef.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"
#include "hmbtrace_util.h"

/*
 * The read buffer.  256 KiB: half the read() calls of 128 KiB, and still
 * in L2 when the walk reads what the copy put there, so stats of the
 * default payload mix gets closer to cat; 512 KiB gains nothing
 * (docs/benchmarks.md, hmb-trace-analyze stats).
 */
#define DUMP_BUF (256 * 1024)
/* Bytes of a dump mapped at a time by hmb_reader_acct() (plus one record). */
#define MAP_WINDOW_DEFAULT (8u << 20)

struct hmb_reader {
	int fd;
	char name[128];
	enum hmb_dialect dialect;
	/* dump stream */
	uint8_t *buf;
	size_t pos, len;	/* unread bytes are buf[pos..len) */
	uint64_t buf_off;	/* file offset of buf[0] */
	bool eof;
	/* ring image */
	uint8_t *img;
	size_t img_len;
	struct hmb_ring_hdr hdr;
	struct hmb_consumer *cons;
	/* mapped accounting of a dump in a regular file (hmb_reader_acct) */
	bool regular;
	off_t base;		/* file offset of the dump's byte 0 */
	size_t window;		/* bytes mapped at a time; 0: never map */
	uint64_t size_seen;	/* dump bytes the file held at the last look */
	uint64_t windows;	/* windows walked */
	uint64_t cost[2];	/* CPU ns per KiB of the last probe reading [0]
				 * and mapping [1] */
	unsigned int probing;	/* probe windows left in this round */
	bool map_better;	/* the last round's verdict */
	uint64_t next_round;	/* window of the next round (0: 8) */
	bool pair_walk;		/* the fast walk's method (hmb__fast_walk) */
	/* a failed reader keeps failing the same way */
	int failed;
	struct hmb_error ferr;
};

/* Make at least @need bytes available at buf[pos] unless the file ends. */
static int fill(struct hmb_reader *r, size_t need, struct hmb_error *err)
{
	if (r->len - r->pos >= need || r->eof)
		return 0;
	if (r->pos) {
		memmove(r->buf, r->buf + r->pos, r->len - r->pos);
		r->buf_off += r->pos;
		r->len -= r->pos;
		r->pos = 0;
	}
	while (r->len < need && !r->eof) {
		ssize_t n = read(r->fd, r->buf + r->len, DUMP_BUF - r->len);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return hmb__err(err, HMB_E_IO, errno,
					r->buf_off + r->len,
					"%s: read failed at byte offset %" PRIu64 ": %s",
					r->name, r->buf_off + r->len,
					strerror(errno));
		}
		if (n == 0)
			r->eof = true;
		r->len += n;
	}
	return 0;
}

static int fail(struct hmb_reader *r, int rc, struct hmb_error *err)
{
	r->failed = rc;
	if (err)
		r->ferr = *err;
	else
		hmb__err(&r->ferr, rc, 0, 0, "%s: %s", r->name,
			 hmb_strerror(rc));
	return rc;
}

static void set_msg(struct hmb_error *err, const char *text)
{
	size_t n = strlen(text);

	if (n >= sizeof(err->msg))
		n = sizeof(err->msg) - 1;
	memcpy(err->msg, text, n);
	err->msg[n] = '\0';
}

/* Translate a consumer error on an image into file offsets. */
static int image_err(struct hmb_reader *r, int rc, struct hmb_error *err)
{
	char tmp[HMB_ERRMSG_LEN + sizeof(r->name) + 48];

	if (!err)
		return rc;
	switch (rc) {
	case HMB_E_REC_MAGIC:
	case HMB_E_REC_LEN:
	case HMB_E_REC_CROSS_LAP:
	case HMB_E_REC_BEYOND_HEAD:
	case HMB_E_MARKER_PAYLOAD:
	case HMB_E_HEAD_IN_GAP:
		err->offset = HMB_RECORD_AREA_OFF +
			      (err->offset & ((uint64_t)r->hdr.ring_size - 1));
		snprintf(tmp, sizeof(tmp), "%s: %s, file offset %" PRIu64,
			 r->name, err->msg, err->offset);
		break;
	default:
		snprintf(tmp, sizeof(tmp), "%s: %s", r->name, err->msg);
		break;
	}
	set_msg(err, tmp);
	return rc;
}

static int open_image(struct hmb_reader *r, struct hmb_error *err)
{
	size_t total, cap;
	int rc;

	rc = fill(r, HMB_RING_HDR_SIZE, err);
	if (rc)
		return rc;
	if (r->len < HMB_RING_HDR_SIZE)
		return hmb__err(err, HMB_E_RING_SHORT, 0, r->len,
				"%s: ring image of %zu bytes is shorter than the %d-byte ring header",
				r->name, r->len, HMB_RING_HDR_SIZE);
	memcpy(&r->hdr, r->buf, sizeof(r->hdr));
	/* Check the header fields before trusting ring_size for a size. */
	rc = hmb_ring_hdr_check(&r->hdr, SIZE_MAX, err);
	if (rc)
		return image_err(r, rc, err);
	total = HMB_RECORD_AREA_OFF + (size_t)r->hdr.ring_size;
	/* Grow as data arrives: a lying header must not cost 2 GiB. */
	cap = total < DUMP_BUF ? total : DUMP_BUF;
	if (cap < r->len)
		cap = r->len;
	r->img = malloc(cap);
	if (!r->img)
		return hmb__err(err, HMB_E_NOMEM, ENOMEM, 0,
				"%s: out of memory for the ring image", r->name);
	r->img_len = r->len < total ? r->len : total;
	memcpy(r->img, r->buf, r->img_len);
	while (r->img_len < total && !r->eof) {
		ssize_t n;

		if (r->img_len == cap) {
			size_t ncap = cap * 2 < total ? cap * 2 : total;
			uint8_t *p = realloc(r->img, ncap);

			if (!p)
				return hmb__err(err, HMB_E_NOMEM, ENOMEM, 0,
						"%s: out of memory for the ring image",
						r->name);
			r->img = p;
			cap = ncap;
		}
		n = read(r->fd, r->img + r->img_len, cap - r->img_len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return hmb__err(err, HMB_E_IO, errno, r->img_len,
					"%s: read failed at byte offset %zu: %s",
					r->name, r->img_len, strerror(errno));
		}
		if (n == 0)
			r->eof = true;
		r->img_len += n;
	}
	if (r->img_len < total)
		return hmb__err(err, HMB_E_RING_SHORT, 0, r->img_len,
				"%s: ring image is %zu bytes, its header needs 0x40 + ring_size %" PRIu32
				" = %zu", r->name, r->img_len, r->hdr.ring_size,
				total);
	rc = hmb_consumer_open(&r->cons, r->img, r->img_len, NULL, NULL, err);
	if (rc)
		return image_err(r, rc, err);
	return 0;
}

int hmb_reader_open(struct hmb_reader **out, int fd, const char *name,
		    struct hmb_error *err)
{
	struct hmb_reader *r;
	int rc;

	if (!out || fd < 0)
		return hmb__err(err, HMB_E_INVAL, 0, 0, "no reader or file");
	*out = NULL;
	r = calloc(1, sizeof(*r));
	if (!r || !(r->buf = malloc(DUMP_BUF))) {
		free(r);
		return hmb__err(err, HMB_E_NOMEM, ENOMEM, 0,
				"out of memory for the reader");
	}
	r->fd = fd;
	snprintf(r->name, sizeof(r->name), "%s", name ? name : "input");
	{
		struct stat st;

		r->base = lseek(fd, 0, SEEK_CUR);
		/*
		 * A size of 0 may be an empty file, or one of /proc's, which
		 * have content and no size: read those as streams.
		 */
		r->regular = r->base >= 0 && !fstat(fd, &st) &&
			     S_ISREG(st.st_mode) && st.st_size > 0;
		r->window = MAP_WINDOW_DEFAULT;
	}
	rc = fill(r, 4, err);
	if (rc)
		goto fail;
	if (r->len == 0 || !memcmp(r->buf, "RECT", r->len < 4 ? r->len : 4)) {
		/* Empty file, a dump, or a dump cut inside its first header. */
		r->dialect = HMB_DIALECT_DUMP;
	} else if (!memcmp(r->buf, "HMBT", r->len < 4 ? r->len : 4)) {
		r->dialect = HMB_DIALECT_RING;
		rc = open_image(r, err);
		if (rc)
			goto fail;
		free(r->buf);
		r->buf = NULL;
	} else {
		uint8_t m[4] = { 0 };

		memcpy(m, r->buf, r->len < 4 ? r->len : 4);
		rc = hmb__err(err, HMB_E_UNKNOWN_MAGIC, 0, 0,
			      "%s: unknown file magic %02x %02x %02x %02x at byte offset 0: neither a dump (\"RECT\") nor a ring image (\"HMBT\")",
			      r->name, m[0], m[1], m[2], m[3]);
		goto fail;
	}
	*out = r;
	return 0;
fail:
	hmb_reader_close(r);
	return rc;
}

void hmb_reader_close(struct hmb_reader *r)
{
	if (!r)
		return;
	hmb_consumer_close(r->cons);
	free(r->img);
	free(r->buf);
	free(r);
}

enum hmb_dialect hmb_reader_dialect(const struct hmb_reader *r)
{
	return r->dialect;
}

const struct hmb_ring_hdr *hmb_reader_ring_hdr(const struct hmb_reader *r)
{
	return r->dialect == HMB_DIALECT_RING ? &r->hdr : NULL;
}

int hmb_reader_next(struct hmb_reader *r, struct hmb_record *rec,
		    struct hmb_error *err)
{
	uint64_t off;
	int rc;

	if (!r || !rec)
		return hmb__err(err, HMB_E_INVAL, 0, 0, "no reader or record");
	if (r->failed) {
		if (err)
			*err = r->ferr;
		return r->failed;
	}
	if (r->dialect == HMB_DIALECT_RING) {
		rc = hmb__consumer_next(r->cons, rec, err);
		if (rc < 0)
			return fail(r, image_err(r, rc, err), err);
		if (rc > 0)
			rec->offset = HMB_RECORD_AREA_OFF +
				      (rec->offset & ((uint64_t)r->hdr.ring_size - 1));
		return rc;
	}
	/*
	 * Fast path, taken for almost every record of a dump: a valid header
	 * and the whole record already in the buffer.  Anything else goes
	 * the general way below, which refills and says what is wrong.
	 */
	if (r->len - r->pos >= HMB_RECORD_HDR_SIZE) {
		const uint8_t *p = r->buf + r->pos;
		uint16_t plen;
		uint32_t size;

		/*
		 * The length comes straight from the buffer, not from the
		 * copy stored just before: the next record's position depends
		 * on it, and a load forwarded from that store would lengthen
		 * the chain (about 10% of stats time).
		 */
		memcpy(&plen, p + offsetof(struct hmb_record_hdr, payload_len),
		       sizeof(plen));
		size = HMB_RECORD_SIZE(plen);
		memcpy(&rec->hdr, p, sizeof(rec->hdr));
		if (__builtin_expect(hmb__rec_hdr_ok(&rec->hdr) &&
				     r->len - r->pos >= size, 1)) {
			rec->payload = p + HMB_RECORD_HDR_SIZE;
			rec->raw = p;
			rec->raw_len = size;
			rec->kind = hmb__record_kind(&rec->hdr);
			rec->offset = r->buf_off + r->pos;
			r->pos += size;
			return 1;
		}
	}
	rc = fill(r, HMB_RECORD_HDR_SIZE, err);
	if (rc)
		return fail(r, rc, err);
	if (r->len == r->pos)
		return 0;
	off = r->buf_off + r->pos;
	if (r->len - r->pos >= HMB_RECORD_HDR_SIZE) {
		struct hmb_record_hdr h;

		memcpy(&h, r->buf + r->pos, sizeof(h));
		if (h.magic == HMB_RECORD_MAGIC &&
		    h.payload_len <= HMB_RECORD_MAX_PAYLOAD) {
			rc = fill(r, HMB_RECORD_SIZE(h.payload_len), err);
			if (rc)
				return fail(r, rc, err);
		}
	}
	rc = hmb__parse_dump_rec(r->buf + r->pos, r->len - r->pos, off,
				 r->name, rec, err);
	if (rc < 0)
		return fail(r, rc, err);
	r->pos += rec->raw_len;
	return 1;
}

/* ------------------------------------------- accounting a whole dump */

int hmb_reader_set_map_window(struct hmb_reader *r, size_t bytes)
{
	long pg = sysconf(_SC_PAGESIZE);

	if (!r || pg <= 0)
		return HMB_E_INVAL;
	/* Whole pages: a window starts on a page boundary of the file. */
	r->window = (bytes + (size_t)pg - 1) / (size_t)pg * (size_t)pg;
	return 0;
}

uint64_t hmb_reader_offset(const struct hmb_reader *r)
{
	return r->buf_off + r->pos;
}

/*
 * SIGBUS while a window is walked: the file shrank under the mapping.  The
 * walking thread jumps back out of the walk; a SIGBUS anywhere else goes to
 * the handler that was there before (or kills the process as it would have).
 */
static __thread sigjmp_buf *bus_jmp;
static __thread uintptr_t bus_lo, bus_hi, bus_addr;
static pthread_mutex_t bus_lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned int bus_users;
static struct sigaction bus_old;

static void on_sigbus(int sig, siginfo_t *si, void *uc)
{
	uintptr_t a = (uintptr_t)si->si_addr;

	/* A fault (si_code > 0) inside the window walked by this thread. */
	if (si->si_code > 0 && bus_jmp && a >= bus_lo && a < bus_hi) {
		bus_addr = a;
		siglongjmp(*bus_jmp, 1);
	}
	if ((bus_old.sa_flags & SA_SIGINFO) && bus_old.sa_sigaction) {
		bus_old.sa_sigaction(sig, si, uc);
	} else if (!(bus_old.sa_flags & SA_SIGINFO) &&
		   bus_old.sa_handler != SIG_DFL &&
		   bus_old.sa_handler != SIG_IGN) {
		bus_old.sa_handler(sig);
	} else if (si->si_code <= 0 && bus_old.sa_handler == SIG_IGN) {
		/* Sent by kill() and ignored before: still ignored. */
	} else {
		/*
		 * Returning retries a faulting access, which now faults for
		 * good; a signal sent by kill() is sent again, to take its
		 * default action once this handler returns.
		 */
		signal(SIGBUS, SIG_DFL);
		if (si->si_code <= 0)
			raise(SIGBUS);
	}
}

static int bus_guard(bool on)
{
	int rc = 0;

	pthread_mutex_lock(&bus_lock);
	if (on && bus_users++ == 0) {
		struct sigaction sa;

		memset(&sa, 0, sizeof(sa));
		sa.sa_sigaction = on_sigbus;
		sa.sa_flags = SA_SIGINFO;
		sigemptyset(&sa.sa_mask);
		if (sigaction(SIGBUS, &sa, &bus_old)) {
			bus_users = 0;
			rc = -1;
		}
	} else if (!on && --bus_users == 0) {
		sigaction(SIGBUS, &bus_old, NULL);
	}
	pthread_mutex_unlock(&bus_lock);
	return rc;
}

#define WALK_MORE 1	/* a record runs past the mapped end of the file */
#define WALK_NO_GUARD 2	/* no SIGBUS handler: do not walk the mapping */
#define AT_STOP 3	/* the next record starts at or after @stop */
#define AT_UNTIL 4	/* ... at or after the end of the window */

/*
 * Walk the records starting in [*pos, lim) of a window: @m holds the dump's
 * bytes [moff, end) (@end is where the file ended when it was mapped, or
 * where the window ends, at least a whole record past @lim).
 */
static int walk_window(struct hmb_reader *r, struct hmb_acct *a,
		       const uint8_t *m, uint64_t moff, uint64_t end,
		       uint64_t lim, uint64_t *pos, struct hmb_error *err)
{
	uint64_t p = *pos, fend;
	int rc = 0;

	if (lim > end)
		lim = end;
	/* Records starting before fend fit whole in the mapping. */
	fend = end >= HMB_RECORD_MAX_SIZE ? end - HMB_RECORD_MAX_SIZE : 0;
	if (fend > lim)
		fend = lim;
	while (p < lim) {
		struct hmb_record rec;

		if (a->have_seq && a->records && p < fend)
			p = moff + hmb__fast_walk(a, m, p - moff, fend - moff,
						   true, &r->pair_walk);
		if (p >= lim)
			break;
		rc = hmb__parse_dump_rec(m + (p - moff), end - p, p, r->name,
					 &rec, err);
		if (rc < 0) {
			if ((rc == HMB_E_TRUNC_HDR || rc == HMB_E_TRUNC_PAYLOAD) &&
			    end == r->size_seen)
				rc = WALK_MORE;
			break;
		}
		rc = 0;
		hmb_acct_add(a, &rec);
		p += rec.raw_len;
	}
	*pos = p;
	return rc;
}

struct walk {
	struct hmb_reader *r;
	struct hmb_acct *a;
	const uint8_t *m;
	size_t len;
	uint64_t moff, end, lim, *pos;
	struct hmb_error *err;
};

/* walk_window() with a shrinking file's SIGBUS made an error. */
static int guarded_walk(struct walk *w)
{
	struct walk *volatile vw = w;
	sigjmp_buf jb;
	int rc;

	if (bus_guard(true))
		return WALK_NO_GUARD;
	if (sigsetjmp(jb, 1)) {
		struct walk *b = vw;
		/* The first byte of the page that is gone (m is a page's). */
		uint64_t off = b->moff + ((bus_addr - (uintptr_t)b->m) &
					  ~(uintptr_t)(sysconf(_SC_PAGESIZE) - 1));

		bus_jmp = NULL;
		bus_guard(false);
		return hmb__err(b->err, HMB_E_IO, 0, off,
				"%s: read failed at byte offset %" PRIu64
				": the file shrank while being read (SIGBUS)",
				b->r->name, off);
	}
	bus_lo = (uintptr_t)w->m;
	bus_hi = (uintptr_t)w->m + w->len;
	bus_jmp = &jb;
	rc = walk_window(w->r, w->a, w->m, w->moff, w->end, w->lim, w->pos,
			 w->err);
	bus_jmp = NULL;
	bus_guard(false);
	return rc;
}

/* Leave the stream at dump offset @pos (its buffer emptied). */
static void sync_stream(struct hmb_reader *r, uint64_t pos)
{
	r->buf_off = pos;
	r->pos = r->len = 0;
	r->eof = false;
	lseek(r->fd, r->base + (off_t)pos, SEEK_SET);
}

/*
 * The stream's way: records from the read buffer, the common ones through
 * hmb__fast_walk().  Returns 0 at the end of the file, AT_STOP, AT_UNTIL or a
 * negative HMB_E_* code (the reader then fails).
 */
static int stream_acct(struct hmb_reader *r, struct hmb_acct *a,
		       uint64_t stop, uint64_t until, struct hmb_error *err)
{
	struct hmb_record rec;
	int rc;

	for (;;) {
		uint64_t off, lim;

		rc = fill(r, HMB_RECORD_MAX_SIZE, err);
		if (rc)
			return fail(r, rc, err);
		if (r->len == r->pos)
			return 0;
		off = hmb_reader_offset(r);
		if (off >= stop)
			return AT_STOP;
		if (off >= until)
			return AT_UNTIL;
		lim = stop < until ? stop : until;
		if (a->have_seq && a->records &&
		    r->len - r->pos > HMB_RECORD_MAX_SIZE) {
			size_t iend = r->len - HMB_RECORD_MAX_SIZE;

			if (lim - off < iend - r->pos)
				iend = r->pos + (size_t)(lim - off);
			r->pos = hmb__fast_walk(a, r->buf, r->pos, iend,
						false, &r->pair_walk);
			if (hmb_reader_offset(r) != off)
				continue;
		}
		rc = hmb_reader_next(r, &rec, err);
		if (rc <= 0)
			return rc;
		hmb_acct_add(a, &rec);
	}
}

/* Map [pos, pos + win) of the file (win: whole pages) and walk it. */
static int map_window(struct hmb_reader *r, struct hmb_acct *a, uint64_t *pos,
		      uint64_t size, uint64_t stop, size_t win,
		      struct hmb_error *err)
{
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);
	off_t fstart = (r->base + (off_t)*pos) & ~(off_t)(pg - 1);
	uint64_t moff = (uint64_t)(fstart - r->base);	/* may wrap below 0 */
	uint64_t lim = moff + win;
	uint64_t end = lim + HMB_RECORD_MAX_SIZE < size ?
		       lim + HMB_RECORD_MAX_SIZE : size;
	size_t len = (size_t)(end - moff);
	uint8_t *m;
	int rc;

	m = mmap(NULL, len, PROT_READ, MAP_SHARED, r->fd, fstart);
	if (m == MAP_FAILED)
		return WALK_NO_GUARD;
	madvise(m, len, MADV_SEQUENTIAL);
	rc = guarded_walk(&(struct walk){
		.r = r, .a = a, .m = m, .len = len, .moff = moff, .end = end,
		.lim = lim < stop ? lim : stop, .pos = pos, .err = err });
	munmap(m, len);
	return rc;
}

/*
 * Which way takes the next window: mapping it costs page-table work per
 * page, reading it a copy per byte, and which is cheaper depends on the
 * page cache (large folios map for much less).  Both are measured on the
 * file itself, in rounds of probes: smaller windows (probe_size(): a probe
 * of the dearer way costs little), one read then one mapped, and the
 * cheaper (CPU time per byte) takes the windows until the next round.
 * The first round is two pairs, read, map, read, map, the verdict from the
 * second (the first window each way pays for what that way sets up, such
 * as the read buffer's first faults); the next round comes about twice
 * as far on, four times where one way cost under 2/3 of the other (the
 * dearer way's probes are what the rounds cost: ~1.5 ms of 32 on the
 * default-mix dump, which maps for twice what it reads for), and 64
 * windows on at most.  Probes are compared with probes only: a running
 * average over probes and whole windows kept whichever way had gone first
 * (on the 64-byte dump in large folios, reading at 74 ns a KiB after a
 * first mapped probe of 197, where whole mapped windows cost 41).
 */
static bool use_map(struct hmb_reader *r, bool *probe)
{
	uint64_t w = r->windows;

	if (w < 4) {
		*probe = true;
		return w & 1;
	}
	if (!r->probing && w >= (r->next_round ? r->next_round : 8)) {
		r->probing = 2;
		r->next_round = UINT64_MAX;	/* set when the round ends */
	}
	*probe = r->probing > 0;
	if (r->probing)
		return r->probing-- == 1;
	return r->map_better;
}

/* A round of probes ended with window r->windows: the verdict, the next. */
static void end_round(struct hmb_reader *r)
{
	uint64_t lo = r->cost[0], hi = r->cost[1], n = r->windows + 1, gap;

	r->map_better = r->cost[1] < r->cost[0];
	if (lo > hi) {
		lo = r->cost[1];
		hi = r->cost[0];
	}
	gap = 3 * lo < 2 * hi ? 3 * n : n;
	r->next_round = n + (gap < 64 ? gap : 64);
}

/*
 * A probe's window: an eighth of @win, and 2 MiB at least in a window of
 * four times that.  Less than 2 MiB mapped costs several times more a byte
 * where the page cache holds the file in 2 MiB folios (faulting in the
 * 64-byte dump took 24 ms in windows of 1 MiB, 3.8 ms in windows of 2 MiB
 * and 3.2 ms in windows of 8 MiB), and would make mapping look dear.
 */
static size_t probe_size(size_t win)
{
	const size_t floor = 2u << 20;
	size_t p = (win / 8 + 4095) & ~(size_t)4095;

	return win >= 4 * floor && p < floor ? floor : p;
}

/*
 * A record cut at the end of the file: the end of the dump, or the file
 * shrank (a read stops at the new end) below what was already read?
 */
static int cut_or_shrunk(struct hmb_reader *r, int rc, struct hmb_error *err)
{
	uint64_t had = r->buf_off + r->len, size;
	struct stat st;

	if (fstat(r->fd, &st))
		return rc;
	size = st.st_size > r->base ? (uint64_t)(st.st_size - r->base) : 0;
	if (size >= r->size_seen && size >= had)
		return rc;
	r->failed = 0;
	return fail(r, hmb__err(err, HMB_E_IO, 0, hmb_reader_offset(r),
				"%s: read failed at byte offset %" PRIu64
				": the file shrank to %" PRIu64 " bytes while being read",
				r->name, hmb_reader_offset(r), size), err);
}

/*
 * A dump in a regular file, window by window (each mapped or read, see
 * use_map()); looks at the file's size before each window: one that grew is
 * read on, one that shrank is an I/O error.
 */
static int file_acct(struct hmb_reader *r, struct hmb_acct *a, uint64_t stop,
		     struct hmb_error *err)
{
	for (;;) {
		uint64_t pos = hmb_reader_offset(r), size, t0, done;
		bool map = false, probe = false;
		size_t win;
		struct stat st;
		int rc;

		if (fstat(r->fd, &st))
			return fail(r, hmb__err(err, HMB_E_IO, errno, pos,
						"%s: read failed at byte offset %" PRIu64 ": %s",
						r->name, pos, strerror(errno)), err);
		size = st.st_size > r->base ? (uint64_t)(st.st_size - r->base) : 0;
		if (size < r->size_seen || size < pos)
			return fail(r, hmb__err(err, HMB_E_IO, 0, pos,
						"%s: read failed at byte offset %" PRIu64
						": the file shrank to %" PRIu64 " bytes while being read",
						r->name, pos, size), err);
		r->size_seen = size;
		if (pos >= size && r->len == r->pos)
			return 0;
		if (pos >= stop)
			return 1;
		t0 = hmb_now_ns(CLOCK_THREAD_CPUTIME_ID);
		win = r->window;
		if (win) {
			map = use_map(r, &probe);
			if (probe)
				win = probe_size(win);
		}
		if (map) {
			uint64_t p = pos;

			sync_stream(r, pos);
			rc = map_window(r, a, &p, size, stop, win, err);
			sync_stream(r, p);
			if (rc == WALK_NO_GUARD) {
				r->window = 0;	/* cannot map: read from now on */
				continue;
			}
			if (rc < 0)
				return fail(r, rc, err);
			/* A record cut at the end: the stream says what. */
			map = rc != WALK_MORE;
		}
		if (!map) {
			r->eof = false;	/* the file may have grown */
			if (!win)
				win = MAP_WINDOW_DEFAULT;
			rc = stream_acct(r, a, stop, pos + win, err);
			if (rc == HMB_E_TRUNC_HDR || rc == HMB_E_TRUNC_PAYLOAD)
				rc = cut_or_shrunk(r, rc, err);
			if (rc < 0)
				return rc;
			if (rc == 0 && hmb_reader_offset(r) == pos)
				return 0;
		}
		done = hmb_reader_offset(r) - pos;
		if (probe && done >= 16384) {
			r->cost[map] = (hmb_now_ns(CLOCK_THREAD_CPUTIME_ID) - t0) * 1024 / done;
			if (map)	/* a round ends with its mapped probe */
				end_round(r);
		}
		r->windows++;
	}
}

int hmb_reader_acct(struct hmb_reader *r, struct hmb_acct *a, uint64_t stop,
		    struct hmb_error *err)
{
	struct hmb_record rec;
	int rc;

	if (!r || !a)
		return hmb__err(err, HMB_E_INVAL, 0, 0, "no reader or accounting");
	if (r->failed) {
		if (err)
			*err = r->ferr;
		return r->failed;
	}
	if (r->dialect == HMB_DIALECT_DUMP) {
		if (r->regular)
			return file_acct(r, a, stop, err);
		rc = stream_acct(r, a, stop, UINT64_MAX, err);
		return rc == AT_STOP ? 1 : rc;
	}
	while ((rc = hmb_reader_next(r, &rec, err)) == 1)
		hmb_acct_add(a, &rec);
	return rc;
}
