/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * libhmbtrace - the one implementation of the v1 HMB trace format in user
 * space: ring consumer, ring producer, record iteration over ring images and
 * dump streams, validation and sequence accounting.  See docs/format.md.
 *
 * Rules every function follows:
 *  - it never aborts, exits or prints; failures return a negative HMB_E_*
 *    code and, when the caller passes a struct hmb_error, fill it with the
 *    code, errno (for I/O), the byte offset concerned and a one-line message;
 *  - every field read from a ring or a file is validated before it is used
 *    (the ring is hostile input: format.md 13), and nothing is read outside
 *    the mapping or buffer it was given.
 */
#ifndef HMBTRACE_H
#define HMBTRACE_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>
#include <sys/types.h>
#include <linux/nvme_hmb_trace.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "libhmbtrace v1 supports little-endian hosts only"
#endif

/* ------------------------------------------------------------------ errors */

enum hmb_errcode {
	HMB_OK = 0,
	HMB_E_INVAL = -1,		/* bad argument from the caller */
	HMB_E_IO = -2,			/* system call failed; see sys_errno */
	HMB_E_NOMEM = -3,
	HMB_E_RING_MAGIC = -10,		/* ring header magic is not HMBT */
	HMB_E_RING_VERSION = -11,	/* ring version 0 or > 1: refused */
	HMB_E_RING_SIZE = -12,		/* ring_size not a power of two in range */
	HMB_E_RING_AREA_OFF = -13,	/* record_area_off != 0x40 */
	HMB_E_RING_SHORT = -14,		/* mapping/image shorter than off+size */
	HMB_E_HEAD_BACKWARDS = -15,	/* head moved backwards */
	HMB_E_HEAD_AHEAD = -16,		/* head - tail > ring_size */
	HMB_E_HEAD_MISALIGNED = -17,	/* head or tail not 8-byte aligned */
	HMB_E_HEAD_IN_GAP = -18,	/* head points inside a wrap gap/record */
	HMB_E_REC_MAGIC = -20,		/* record magic is not RECT */
	HMB_E_REC_LEN = -21,		/* payload_len > 4064 */
	HMB_E_REC_CROSS_LAP = -22,	/* record crosses the end of the lap */
	HMB_E_REC_BEYOND_HEAD = -23,	/* record extends past head */
	HMB_E_MARKER_PAYLOAD = -24,	/* wrap marker with payload_len != 0 */
	HMB_E_RING_CHANGED = -25,	/* a validated record header changed in
					 * the ring before it was written out */
	HMB_E_TRUNC_HDR = -30,		/* dump: end of file inside a header */
	HMB_E_TRUNC_PAYLOAD = -31,	/* dump: end of file inside a payload */
	HMB_E_UNKNOWN_MAGIC = -32,	/* first 4 bytes neither HMBT nor RECT */
	HMB_E_SIDECAR = -33,		/* sidecar unreadable or malformed */
	HMB_E_SIDECAR_VERSION = -34,	/* sidecar abi_version > 1 */
	HMB_E_NOT_DUMP = -35,		/* a ring image where a dump must be */
	HMB_E_DICT = -40,		/* event dictionary malformed */
};

#define HMB_ERRMSG_LEN 256

struct hmb_error {
	int code;		/* enum hmb_errcode */
	int sys_errno;		/* errno for HMB_E_IO, else 0 */
	uint64_t offset;	/* byte offset (file offset or ring cursor) */
	char msg[HMB_ERRMSG_LEN];	/* "what, where": one line, no newline */
};

/* Short fixed description of a code ("bad record magic", ...). */
const char *hmb_strerror(int code);
/* The code's enum name ("HMB_E_REC_MAGIC"), for JSON and logs. */
const char *hmb_errname(int code);

/* ----------------------------------------------------------------- records */

enum hmb_rec_kind {
	HMB_KIND_DATA = 0,	/* a record to decode (TRUNCATED allowed) */
	HMB_KIND_MARKER,	/* wrap marker: skipped by decoders */
	HMB_KIND_IGNORED,	/* unknown flag bits: skipped, seq counts */
};

/*
 * A validated record.  @hdr is a private copy; @payload and @raw point into
 * memory owned by the iterator and stay valid until the next call on it.
 * @raw is the record as it lies in the stream (header, payload, padding),
 * @raw_len == HMB_RECORD_SIZE(payload_len).
 */
struct hmb_record {
	struct hmb_record_hdr hdr;
	const uint8_t *payload;
	const uint8_t *raw;
	uint32_t raw_len;
	enum hmb_rec_kind kind;
	uint64_t offset;	/* dump: file offset; ring image: file offset
				 * (0x40 + ring offset); live ring: cursor */
};

/* Classify @hdr, which must already have passed hmb_record_check(). */
enum hmb_rec_kind hmb_record_kind(const struct hmb_record_hdr *hdr);

/*
 * Validate a record header found at @offset: magic, payload_len <= 4064,
 * markers without payload.  Returns 0 or a negative HMB_E_* code.
 */
int hmb_record_check(const struct hmb_record_hdr *hdr, uint64_t offset,
		     struct hmb_error *err);

/*
 * Validate a ring header (magic, version, ring_size, record_area_off, and
 * that @avail bytes hold header plus record area).
 */
int hmb_ring_hdr_check(const struct hmb_ring_hdr *hdr, size_t avail,
		       struct hmb_error *err);

/* -------------------------------------------------------- ring consumer */

/*
 * Publish hook: make @tail visible to the producer.  For a file-backed ring
 * hmb_publish_store() stores it (release) into the mapped header; for the
 * device the daemon passes a hook that calls NVME_HMB_TRACE_SET_TAIL.
 * Returns 0 or a negative errno.
 */
typedef int (*hmb_publish_fn)(void *ctx, uint64_t tail);

/* Store-release into ((struct hmb_ring_hdr *)ctx)->tail.  ctx = writable hdr. */
int hmb_publish_store(void *ctx, uint64_t tail);

struct hmb_consumer;

/*
 * Attach a consumer to a mapped ring of @map_len bytes at @base (the mapping
 * may be read-only).  Validates the header; the consumer starts at the
 * ring's published tail.  @publish may be NULL (read-only inspection).
 */
int hmb_consumer_open(struct hmb_consumer **out, const volatile void *base,
		      size_t map_len, hmb_publish_fn publish, void *pub_ctx,
		      struct hmb_error *err);
void hmb_consumer_close(struct hmb_consumer *c);

/*
 * Acquire-load head once, validate it against the previous head and our
 * cursor (never backwards, aligned, head - cursor <= ring_size) and return
 * the number of unread bytes in *@avail.  While the ring is FROZEN (being
 * re-initialised) a head failing these checks gives *@avail = 0, not an
 * error; see hmb_consumer_reinit().
 */
int hmb_consumer_poll(struct hmb_consumer *c, uint64_t *avail,
		      struct hmb_error *err);

/*
 * Copy whole validated records from the local cursor up to the head seen by
 * the last hmb_consumer_poll() into @buf (at most @buflen bytes, which must
 * be >= HMB_RECORD_MAX_SIZE), verbatim: wrap markers included, implicit
 * wrap gaps and the bytes after a marker excluded.  The bytes are copied out
 * of the ring first and validated on the copy.  Advances the local cursor
 * (not the published tail).  Returns bytes stored in *@len; 0 when nothing is
 * left.  On a validation error, *@len holds the good prefix that was copied
 * before the bad record, the cursor stops at the bad record, and the error
 * names the cursor and ring offset.
 */
int hmb_consumer_read(struct hmb_consumer *c, void *buf, size_t buflen,
		      size_t *len, struct hmb_error *err);

/*
 * Read the ring's records with pread(2) on @fd, the regular file the
 * mapping given to hmb_consumer_open() maps from file offset @map_off,
 * instead of copying them from the mapping: the same private copy, checked
 * the same way, without faulting the whole ring into this process's page
 * tables (a ring file is read once, front to back, like any file).  The
 * header (head, tail, flags) is still read and the tail still published
 * through the mapping.  A ring file cut short under the consumer makes
 * hmb_consumer_read() fail with HMB_E_IO (sys_errno ENXIO) where the
 * mapping would raise SIGBUS.  @fd stays the caller's; keep it open while
 * the consumer is.  Not for a character device (HMB_E_INVAL).
 */
int hmb_consumer_set_fd(struct hmb_consumer *c, int fd, off_t map_off,
			struct hmb_error *err);

/*
 * One-copy alternative to hmb_consumer_read() (docs/format.md 9.5): check
 * the records from the local cursor up to the polled head where they lie
 * -- each header copied out and checked on the copy, exactly as read()
 * does -- and describe them as at most @max_iov spans of the mapping in
 * @iov (records verbatim, markers included, gaps excluded), at most
 * @max_bytes in all (>= HMB_RECORD_MAX_SIZE).  *@n_iov and *@len say how
 * many spans and bytes.  Advances the local cursor like read(); on a
 * validation error the spans hold the good prefix and the cursor stops at
 * the bad record.
 *
 * The caller writes the spans out (writev), then calls
 * hmb_consumer_verify() before it publishes anything: the bytes went from
 * the ring to the output after they were checked, so a device that
 * rewrote them meanwhile would reach the output unchecked.
 */
struct iovec;
int hmb_consumer_spans(struct hmb_consumer *c, struct iovec *iov,
		       int max_iov, size_t max_bytes, int *n_iov, size_t *len,
		       struct hmb_error *err);
/*
 * After the spans of the last hmb_consumer_spans() were written out: read
 * every record header of them from the ring again and compare the fields
 * that frame the stream and classify records (magic, payload_len, flags)
 * with what was checked.  0: unchanged, publish.  HMB_E_RING_CHANGED: a
 * header changed (the error names its ring offset); the cursor and the
 * counts are back where they were before hmb_consumer_spans(), and the
 * caller must drop what it wrote of that batch and read it again with
 * hmb_consumer_read() (which checks a private copy).
 */
int hmb_consumer_verify(struct hmb_consumer *c, struct hmb_error *err);

/*
 * Record-at-a-time alternative to hmb_consumer_read(): the next validated
 * record up to the polled head (any kind), copied into memory owned by the
 * consumer (valid until the next call); rec->offset is its cursor.  Returns
 * 1, 0 when nothing is left before head, or a negative HMB_E_* code (cursor
 * left at the bad record).  Do not mix with a read() whose output you have
 * not consumed.
 */
int hmb_consumer_next(struct hmb_consumer *c, struct hmb_record *rec,
		      struct hmb_error *err);

/*
 * Publish the local cursor through the hook (once per batch, bytes out first).
 * Without a hook (read-only inspection) it only records the cursor as
 * published.  A hook failure returns HMB_E_IO with the hook's errno, except
 * -ESTALE: the hook says the ring was re-initialised since we read its
 * header (the character device's SET_TAIL does, and so may a ring-file
 * hook); the batch is then taken as published, nothing more of the old
 * epoch is read, and hmb_consumer_reinit() starts the new one.  The first
 * commit after open and after a new epoch first publishes the tail found
 * in the header (an acknowledgement the device needs to accept the
 * epoch's tails), then the cursor: two hook calls.
 */
int hmb_consumer_commit(struct hmb_consumer *c, struct hmb_error *err);

/*
 * Records hmb_consumer_read()/hmb_consumer_next() have copied out since
 * the consumer was opened, by kind: counted during validation, so a
 * consumer that only moves bytes (the daemon) need not walk them again.
 */
struct hmb_consumer_counts {
	uint64_t records;	/* HMB_KIND_DATA */
	uint64_t markers;	/* HMB_KIND_MARKER */
	uint64_t ignored;	/* HMB_KIND_IGNORED */
};
void hmb_consumer_counts(const struct hmb_consumer *c,
			 struct hmb_consumer_counts *n);

/* Local (unpublished) cursor, last head seen, ring_size. */
uint64_t hmb_consumer_cursor(const struct hmb_consumer *c);
uint64_t hmb_consumer_head(const struct hmb_consumer *c);
uint32_t hmb_consumer_ring_size(const struct hmb_consumer *c);
/* Current ring flags (acquire load). */
uint32_t hmb_consumer_flags(const struct hmb_consumer *c);
/*
 * After the producer has re-initialised a frozen ring (FROZEN set, then the
 * header rewritten and FROZEN cleared), re-validate the header and restart
 * from its tail.  Returns 1 if the ring was re-initialised, 0 if not (or a
 * negative HMB_E_* code if the rewritten header is invalid).  Cheap (one
 * flag load) unless FROZEN was seen: call it after every poll that found
 * nothing to read.  While FROZEN is set, or after it was seen, a head that
 * moved backwards makes hmb_consumer_poll() report 0 bytes, not an error.
 * On 1 the caller starts a new epoch (hmb_acct_new_epoch(), sidecar epoch).
 */
int hmb_consumer_reinit(struct hmb_consumer *c, struct hmb_error *err);

/* ------------------------------------------------------- ring producer */

struct hmb_producer {
	volatile struct hmb_ring_hdr *hdr;
	uint8_t *area;
	uint32_t ring_size;
	uint32_t next_seq;
	uint64_t head;		/* local head, published by emit/publish */
	uint64_t tail_cache;	/* last tail read (acquire) */
	/* counts */
	uint64_t produced;	/* records written */
	uint64_t bytes;		/* bytes of records written (no markers) */
	uint64_t dropped;	/* records dropped on overflow */
	uint64_t markers;	/* wrap markers written */
	uint64_t implicit_wraps;	/* wraps with < 32 bytes left */
	uint32_t first_seq;
};

/*
 * Initialise the header at @base (@len bytes) for a ring of @ring_size:
 * magic, version 1, record_area_off 0x40, head = tail = 0, flags 0,
 * reserved zero; the first record gets seq @first_seq.
 */
int hmb_producer_init(struct hmb_producer *p, void *base, size_t len,
		      uint32_t ring_size, uint32_t first_seq,
		      struct hmb_error *err);

struct hmb_event {
	uint64_t ts_ns;
	uint16_t opcode;
	uint8_t cpu;
	uint8_t flags;		/* only TRUNCATED (or test bits) */
	uint16_t payload_len;
	const void *payload;
};

enum hmb_emit_mode {
	HMB_EMIT_DROP = 0,	/* firmware rule: full -> drop, set OVERFLOWED */
	HMB_EMIT_TRY = 1,	/* full -> return HMB_EMIT_FULL, no seq used;
				 * may publish a wrap alone to make room
				 * (not published under HMB_EMIT_DEFER);
				 * a record larger than the ring: HMB_E_INVAL */
};
#define HMB_EMIT_DEFER	0x100	/* OR into mode: do not publish head yet */

enum hmb_emit_result {
	HMB_EMITTED = 0,
	HMB_EMIT_DROPPED = 1,	/* overflow: dropped, seq consumed, flag set */
	HMB_EMIT_FULL = 2,	/* TRY mode: no room now, nothing consumed */
};

/*
 * Emit one record by the producer rules (docs/format.md "Producer"):
 * wrap marker or implicit skip (section 8), overflow check against the acquired
 * tail, header + payload + zero padding, then release-store of head
 * (unless HMB_EMIT_DEFER).  Returns enum hmb_emit_result or HMB_E_INVAL.
 */
int hmb_producer_emit(struct hmb_producer *p, const struct hmb_event *ev,
		      int mode);
/* Release-store the local head (after HMB_EMIT_DEFER emits). */
void hmb_producer_publish(struct hmb_producer *p);
/* Set/clear ring flags (FROZEN) with release semantics. */
void hmb_producer_set_flags(struct hmb_producer *p, uint32_t set,
			    uint32_t clear);
/*
 * Re-initialise the ring in place (controller reset): set FROZEN, rewrite
 * the header with head = tail = 0, clear FROZEN last with release.  The
 * next record gets @first_seq; counters are kept.
 */
void hmb_producer_reinit(struct hmb_producer *p, uint32_t first_seq);

/* ------------------------------------------------ files: dumps, images */

enum hmb_dialect {
	HMB_DIALECT_DUMP = 0,	/* "RECT": stream of records (or empty file) */
	HMB_DIALECT_RING = 1,	/* "HMBT": ring image, records tail..head */
};

struct hmb_reader;
struct hmb_acct;

/*
 * Open a reader on @fd (a file, a pipe or stdin; not closed by the reader).
 * @name is used in error messages.  Detects the dialect from the first four
 * bytes (12.3).  Dumps are streamed with a fixed buffer (constant memory);
 * ring images are read whole (they are at most 64 + ring_size bytes).
 */
int hmb_reader_open(struct hmb_reader **out, int fd, const char *name,
		    struct hmb_error *err);
void hmb_reader_close(struct hmb_reader *r);
enum hmb_dialect hmb_reader_dialect(const struct hmb_reader *r);
/* The ring header of a ring image (NULL for a dump). */
const struct hmb_ring_hdr *hmb_reader_ring_hdr(const struct hmb_reader *r);
/*
 * Next record (any kind).  Returns 1 with *@rec filled, 0 at a clean end,
 * or a negative HMB_E_* code (truncated header/payload, bad magic, ...)
 * naming the byte offset in @err.
 */
int hmb_reader_next(struct hmb_reader *r, struct hmb_record *rec,
		    struct hmb_error *err);
/*
 * Run the records of @r through @a (hmb_acct_add()) up to the end of the
 * file, a faster equivalent of calling hmb_reader_next() and
 * hmb_acct_add() in a loop.  Returns 0 at a clean end, a negative HMB_E_*
 * code with the same error as hmb_reader_next() would give, or, for a dump,
 * 1 when the next record starts at or after byte offset @stop (a sidecar
 * epoch: call hmb_acct_new_epoch() and go on; UINT64_MAX for none; ignored
 * for ring images, whose offsets are not dump offsets).
 *
 * A dump in a regular file goes hmb_reader_set_map_window() bytes at a time
 * (default 8 MiB), each window mapped (no copy) or read, whichever the
 * reader measured to cost less CPU on this file; memory stays bounded by
 * the window.  A file that grows is read up to its end at the time the end
 * is reached; one that shrinks is an HMB_E_IO error ("the file shrank"),
 * also when the shrink raises SIGBUS inside a mapped window: a SIGBUS
 * handler is installed for the walk and the previous one restored after it
 * (a SIGBUS elsewhere, or sent with kill(), goes to the previous handler).
 * Pipes, stdin from a pipe and files that cannot be mapped are read as
 * hmb_reader_next() does.  Uses hmb_reader_next()'s buffer: the two can be
 * mixed on one reader.
 */
int hmb_reader_acct(struct hmb_reader *r, struct hmb_acct *a, uint64_t stop,
		    struct hmb_error *err);
/* Window of hmb_reader_acct() in bytes (rounded up to pages); 0: never map. */
int hmb_reader_set_map_window(struct hmb_reader *r, size_t bytes);
/* Byte offset of the next record of a dump (0 at the start). */
uint64_t hmb_reader_offset(const struct hmb_reader *r);

/*
 * What an existing dump holds before records are appended to it
 * (hmb_dump_check, docs/format.md 12.1 "Appending to a dump").
 */
enum hmb_dump_end {
	HMB_DUMP_END_CLEAN = 0,	/* empty, or ends after a whole record */
	HMB_DUMP_END_TORN = 1,	/* then one record cut short: a prefix of a
				 * valid header, or a valid header and part
				 * of its payload (a writer killed mid-write) */
	HMB_DUMP_END_ZEROS = 2,	/* then zero bytes only (blocks allocated but
				 * never written before a crash) */
};

struct hmb_dump_state {
	uint64_t size;		/* bytes from the start offset to the end */
	uint64_t end;		/* end of the last whole record */
	uint64_t records;	/* whole records before @end (any kind) */
	enum hmb_dump_end tail;	/* what [end, size) holds */
};

/*
 * May records be appended to the dump in @fd, read from its current
 * offset to its end (a regular file, left at an unspecified offset; @name
 * prefixes messages)?
 * Returns 0 when it is a dump up to @st->end followed by nothing or by
 * what an interrupted writer leaves (@st->tail); the appender cuts the
 * file back to @st->end first, and @err then says what is cut (for a log
 * line).  Otherwise, without reading further than needed, a negative code
 * naming the byte offset of the first byte that is neither part of a whole
 * record nor such a tail: HMB_E_NOT_DUMP (a ring image, "HMBT", offset 0),
 * HMB_E_UNKNOWN_MAGIC (offset 0), HMB_E_REC_MAGIC, HMB_E_REC_LEN or
 * HMB_E_MARKER_PAYLOAD (the bytes after the last whole record), HMB_E_IO.
 * The file is never written.
 */
int hmb_dump_check(int fd, const char *name, struct hmb_dump_state *st,
		   struct hmb_error *err);

/*
 * Iterate the records in a memory buffer holding a dump stream (for example
 * what hmb_consumer_read() produced).  Same return convention.
 */
struct hmb_buf_iter {
	const uint8_t *buf;
	size_t len;
	size_t pos;
	uint64_t base_offset;	/* added to offsets in records and errors */
};
void hmb_buf_iter_init(struct hmb_buf_iter *it, const void *buf, size_t len,
		       uint64_t base_offset);
int hmb_buf_iter_next(struct hmb_buf_iter *it, struct hmb_record *rec,
		      struct hmb_error *err);

/* ------------------------------------------------ sequence accounting */

struct hmb_gap {
	uint32_t first_seq;	/* first missing seq */
	uint32_t last_seq;	/* last missing seq */
	uint64_t count;		/* records missing */
	uint64_t ts_before;	/* ts_ns of the record before the gap */
	uint64_t ts_after;	/* ts_ns of the record after the gap */
	uint64_t offset;	/* offset of the record after the gap */
};

enum hmb_acct_verdict {
	HMB_ACCT_NEW = 0,	/* a new data record: decode it */
	HMB_ACCT_MARKER,	/* wrap marker: skip */
	HMB_ACCT_IGNORED,	/* unknown flags: skip (its seq counts as seen) */
	HMB_ACCT_DUPLICATE,	/* seq already seen (replayed batch): skip */
};

/* Gap callback: called once per gap as it is found. */
typedef void (*hmb_gap_fn)(void *ctx, const struct hmb_gap *gap);

struct hmb_acct {
	uint64_t records;	/* data records counted (not dups) */
	uint64_t wrap_markers;
	uint64_t ignored;	/* records with unknown flag bits */
	uint64_t truncated;	/* records with HMB_REC_FLAG_TRUNCATED */
	uint64_t lost;		/* sum of seq gaps */
	uint64_t duplicates;	/* replayed records dropped */
	uint64_t resets;	/* seq restarts (new epoch) */
	uint64_t gaps;		/* number of gaps */
	uint64_t bytes;		/* bytes of all records seen, markers incl. */
	uint64_t payload_bytes;	/* payload bytes of data records */
	uint64_t first_ts_ns, last_ts_ns;	/* over data records */
	uint64_t opcodes[65536];	/* data records by opcode */
	/* private state */
	bool have_seq;
	bool epoch_start;	/* the next record begins a new epoch */
	uint32_t max_seq;	/* highest seq seen (serial arithmetic) */
	uint64_t max_seq_ts;	/* ts of that record */
	uint32_t dup_window;	/* backward jumps within this are replays */
	hmb_gap_fn gap_cb;
	void *gap_ctx;
};

/*
 * @dup_window: a record whose seq is behind the highest seq seen by at most
 * this many is a duplicate (a batch replayed after a daemon crash); a
 * larger backward jump is a producer restart (new epoch, counted in
 * @resets).  0 selects the default (ring_size / 32 of a 4 MiB ring).
 */
void hmb_acct_init(struct hmb_acct *a, uint32_t dup_window, hmb_gap_fn cb,
		   void *ctx);
/*
 * hmb_acct_init() on a new accounting of its own, in mapped anonymous
 * memory that is zero already: the 512 KiB of opcode counts are not
 * cleared page by page.  NULL with errno set if no memory; release it
 * with hmb_acct_free() (NULL is fine).
 */
struct hmb_acct *hmb_acct_new(uint32_t dup_window, hmb_gap_fn cb, void *ctx);
void hmb_acct_free(struct hmb_acct *a);
/*
 * Start a new epoch (the ring was re-initialised): the seq of the next
 * record may continue the old epoch's (a forward gap below 2^31 counts as
 * lost, as records the old epoch never delivered) or restart (anything
 * else: no gap, no reset, no duplicate).
 */
void hmb_acct_new_epoch(struct hmb_acct *a);
enum hmb_acct_verdict hmb_acct_add(struct hmb_acct *a,
				   const struct hmb_record *rec);

/*
 * The opcodes that counted records, in ascending order:
 * hmb_acct_opcodes() starts, hmb_opcode_iter_next() gives 1 with the next
 * opcode and its count, 0 after the last.  The iterator may be copied to
 * go over the same opcodes again.
 *
 *	struct hmb_opcode_iter it;
 *	uint16_t op;
 *	uint64_t n;
 *
 *	hmb_acct_opcodes(a, &it);
 *	while (hmb_opcode_iter_next(&it, &op, &n))
 *		printf("0x%04x %llu\n", op, (unsigned long long)n);
 */
struct hmb_opcode_iter {
	/* private */
	const struct hmb_acct *a;
	uint32_t next;		/* the opcode to look at next */
};
void hmb_acct_opcodes(const struct hmb_acct *a, struct hmb_opcode_iter *it);
int hmb_opcode_iter_next(struct hmb_opcode_iter *it, uint16_t *op,
			 uint64_t *count);

/* ------------------------------------------------------------ sidecar */

/*
 * Sidecar metadata file written by the daemon beside every output (12.4):
 * "<output>.meta", text lines "key=value", first line
 * "hmb_trace_sidecar=1".  Version checked on read; unknown keys ignored.
 */
#define HMB_SIDECAR_MAX_EPOCHS 4096
#define HMB_SIDECAR_MAX_RESTARTS 4096
struct hmb_sidecar {
	uint32_t abi_version;
	uint32_t ring_size;
	char source[256];		/* device or ring-file path */
	uint64_t realtime_ns;		/* CLOCK_REALTIME at open */
	uint64_t monotonic_ns;		/* CLOCK_MONOTONIC at open */
	uint64_t boottime_ns;		/* CLOCK_BOOTTIME at open */
	uint32_t n_epochs;		/* read: number of epoch= lines */
	uint32_t n_restarts;		/* read: number of restart= lines */
	uint64_t anchor_offset;		/* dump size when the clocks above were
					 * taken (0: the dump was new) */
};

/*
 * One "restart=" line: a daemon started appending to an existing dump (or
 * was pointed at a dump another process wrote) at @dump_offset, attached to
 * @source (@ring_size) at ring cursor @tail, with these host clocks.  It
 * does not start an epoch (a restart may replay a batch: format.md 9.4).
 */
struct hmb_sidecar_restart {
	uint64_t dump_offset;
	uint64_t tail;
	uint32_t ring_size;
	uint64_t realtime_ns, monotonic_ns, boottime_ns;
	char source[256];
};

/*
 * Create or replace the sidecar atomically and durably: "<path>.tmp" made
 * with O_CREAT | O_EXCL | O_NOFOLLOW (a file or symlink already there is
 * unlinked, never followed), given exactly @mode (0 = 0600), fsync'ed,
 * renamed over @path, the directory fsync'ed.  @anchor_offset != 0 says
 * the dump already held that many bytes (the clocks are not its start's).
 * n_epochs/n_restarts are not written.
 */
int hmb_sidecar_create(const char *path, const struct hmb_sidecar *sc,
		       uint64_t anchor_offset, unsigned int mode,
		       struct hmb_error *err);
/* hmb_sidecar_create(path, sc, 0, 0600, err). */
int hmb_sidecar_write(const char *path, const struct hmb_sidecar *sc,
		      struct hmb_error *err);
int hmb_sidecar_read(const char *path, struct hmb_sidecar *sc,
		     struct hmb_error *err);
/*
 * Parse sidecar text from memory (@name prefixes messages); fill @sc and
 * the epoch offsets (either may be NULL).  What hmb_sidecar_read() and
 * hmb_sidecar_epochs() do after reading the file.
 */
int hmb_sidecar_parse(const char *text, size_t len, const char *name,
		      struct hmb_sidecar *sc, uint64_t *epochs,
		      size_t max_epochs, size_t *n_epochs,
		      struct hmb_error *err);
/*
 * Append whole "key=value\n" @lines: the existing sidecar is read and
 * checked (a malformed or newer one is refused and left as it is), the
 * result is checked too, and the file is replaced as by
 * hmb_sidecar_create(), keeping its permission bits.  Nothing already in
 * the sidecar is ever dropped.
 */
int hmb_sidecar_append(const char *path, const char *lines,
		       struct hmb_error *err);
/*
 * Append "epoch=<dump_offset>": the ring was re-initialised and the records
 * from @dump_offset of the dump on belong to a new producer epoch.
 */
int hmb_sidecar_append_epoch(const char *path, uint64_t dump_offset,
			     struct hmb_error *err);
/* Append one "restart=" line (docs/format.md 12.4). */
int hmb_sidecar_append_restart(const char *path,
			       const struct hmb_sidecar_restart *r,
			       struct hmb_error *err);
/*
 * Read the epoch offsets in file order into @offs (at most @max, itself at
 * most HMB_SIDECAR_MAX_EPOCHS); more lines than that is HMB_E_SIDECAR.
 */
int hmb_sidecar_epochs(const char *path, uint64_t *offs, size_t max,
		       size_t *n, struct hmb_error *err);
/*
 * The same with the line of each in @lines: an offset that is not where a
 * record of the dump starts (inside one, or past the end) is the reader's
 * to report by its line (docs/format.md 12.4).
 */
int hmb_sidecar_epoch_lines(const char *path, uint64_t *offs,
			    unsigned int *lines, size_t max, size_t *n,
			    struct hmb_error *err);
/* fsync the directory that holds @path.  0 or a negative errno. */
int hmb_fsync_dir_of(const char *path);
/*
 * Rename @from to @to, never over what is already at @to, also on a
 * filesystem without renameat2's RENAME_NOREPLACE: 0, -EEXIST when @to
 * is taken, or another negative errno.
 */
int hmb_rename_noreplace(const char *from, const char *to);
/*
 * A snapshot's name for a request now: SNAP-<UTC time, to the
 * millisecond>Z-@reason, as the daemon and the agent name their bundles.
 */
void hmb_snapshot_stem(char *buf, size_t len, const char *reason);
/*
 * Move the finished directory @tmp to @dir/@stem, or @stem-2, -3, ... up
 * to -999 if that name is taken: never over another.  The name tried last
 * goes to @out.  0, -EEXIST when every name is taken, or the rename's
 * negative errno.  The caller syncs @dir (hmb_fsync_dir_of(@out)).
 */
int hmb_publish_noreplace(const char *tmp, const char *dir, const char *stem,
			  char *out, size_t len);

/* -------------------------------------------------------- dump writer */

/*
 * A dump (docs/format.md 12.1) written record by record, with its sidecar,
 * by a consumer that receives records one at a time (hmb-trace-agent -w).
 * hmb_dump_writer_open() creates or truncates @path (O_NOFOLLOW, @mode, 0 =
 * 0600) and writes "<path>.meta" from @sc (hmb_sidecar_create) before any
 * record.  hmb_dump_writer_add() checks the record like one read from a
 * file (a bad one is refused with the HMB_E_* code and nothing written) and
 * appends header, payload and zero padding, buffered.  After a write error
 * every later add fails.  hmb_dump_writer_close() writes out, fsyncs and
 * closes the dump, appends @lines (whole "key=value\n" lines, may be NULL)
 * to the sidecar, frees @w and returns the first error.
 */
struct hmb_dump_writer;
int hmb_dump_writer_open(struct hmb_dump_writer **out, const char *path,
			 const struct hmb_sidecar *sc, unsigned int mode,
			 struct hmb_error *err);
int hmb_dump_writer_add(struct hmb_dump_writer *w,
			const struct hmb_record_hdr *hdr, const void *payload,
			struct hmb_error *err);
/* Records and bytes accepted so far. */
uint64_t hmb_dump_writer_records(const struct hmb_dump_writer *w);
uint64_t hmb_dump_writer_size(const struct hmb_dump_writer *w);
int hmb_dump_writer_close(struct hmb_dump_writer *w, const char *lines,
			  struct hmb_error *err);

#ifdef __cplusplus
}
#endif
#endif /* HMBTRACE_H */
