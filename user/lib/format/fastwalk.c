// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The fast walk of hmb_reader_acct() (reader.c): the common records of a
 * dump counted a few ns each, straight from the read buffer or the mapped
 * window, with the same counts as hmb_acct_add() would give them.
 */
#include <stdbool.h>
#include <string.h>

#include "internal.h"

#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
/* flags other than TRUNCATED, where they sit in the header's third word */
#define BAD_FLAGS ((uint64_t)(0xffu & ~HMB_REC_FLAG_TRUNCATED) << 24)
#endif

/*
 * The common case, a few ns a record: data records (flags 0 or TRUNCATED)
 * in seq order, wholly inside the buffer, starting before @iend.  Stops at
 * the first record that is anything else and returns its index; the caller
 * takes that one the general way.
 *
 * The next record's position depends on this one's length: a chain of a
 * load and two adds per record, which bounds the walk.  Inside a run of
 * records of one size (a firmware logging one kind of event) the walk
 * steps by that size, so the positions no longer wait for the loads, and
 * checks that each length is one of that size; a mismatch leaves the run
 * (one mispredicted branch) and the record is looked at the general way.
 * Then the instructions bound the walk, so a run does the least a record
 * needs: one compare of the first word with the magic and the seq
 * expected, the flags tested in the third, the size; the record count
 * and the next seq follow from where the run stopped.  Runs start after
 * RUN_AFTER equal sizes, so a mix of sizes seldom pays for a run it
 * leaves at once.
 *
 * A run survives one record of another size (a firmware that logs one
 * kind of event per command among a few of another: the shipped
 * dictionary's events are 56, then seven of 40 bytes): that record is
 * checked as the others and stepped over by its own size, a branch the
 * predictor learns when the pattern repeats, and the run goes on at its
 * size; a second such record in a row ends it.  The step by the run's
 * size is kept apart from the loaded length (an empty asm), or the
 * compiler would take the load's value, equal there, and bring the chain
 * back.  1 M dictionary events: 6.3 against 5.1 ms of CPU for `stats`,
 * the other dumps unchanged (docs/benchmarks.md).
 */
/*
 * A mapped window is read from memory, not from a buffer just copied: the
 * hardware prefetcher stops at each 4 KiB page, so a run asks for the line
 * this far ahead (2-6 % less CPU on the 64-byte dump mapped than without,
 * 5 rounds).  Two pages ahead rather than half of one: with the dump in
 * memory, not in the last-level cache (stats run after babeltrace2, the
 * files held in the page cache), 4-5 % less CPU on the 1 M records of the
 * 64-byte dump and of the dictionary's events, 13 % on the 256 MiB dump,
 * the default mix unchanged (9 rounds); 4 KiB and 16 KiB within 1 % of it.
 */
#define PREFETCH 8192
#ifndef RUN_AFTER
#define RUN_AFTER 2
#endif
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
/*
 * Records of a run that were of another size than the run's (stepped over
 * in it), for the tests (t_acct checks that its dumps take that way);
 * one relaxed atomic add a run.
 */
HMB_HIDDEN uint64_t hmb__run_odd;

/*
 * The records of a run from i on, each of @size bytes but no two in a row
 * of another size, and the next seq from @seq on; returns where the first
 * that is not stands (or the first at or past @iend).  Adds their
 * TRUNCATED bits (bit 25) to *@tbits, their payload lengths to *@pbytes,
 * those not of @size to *@odd, and sets *@lastp to the last one's index
 * (unchanged if none); *@n is how many (from the seq: no division by the
 * size at the end of every run).
 */
static inline __attribute__((always_inline)) size_t
run_span(const uint8_t *m, size_t i, size_t iend, uint32_t size, uint32_t seq,
	 uint64_t *ops, uint64_t *tbits, uint64_t *pbytes, uint64_t *n,
	 uint64_t *odd, size_t *lastp, bool mapped)
{
	uint64_t expect = HMB_RECORD_MAGIC | (uint64_t)seq << 32;
	uint64_t t = 0, pb = 0, o = 0;
	bool last_odd = false;
	size_t li = *lastp;

	while (i < iend) {
		uint64_t w0, w2;
		uint16_t len16;
		uint32_t rsz;

		memcpy(&w0, m + i, 8);
		memcpy(&w2, m + i + 16, 8);
		memcpy(&len16, m + i + 20, 2);
		if (w0 != expect || (w2 & BAD_FLAGS))
			break;
		rsz = (uint32_t)HMB_RECORD_SIZE(len16);
		if (rsz != size) {
			if (last_odd || len16 > HMB_RECORD_MAX_PAYLOAD)
				break;
			last_odd = true;
			o++;
		} else {
			last_odd = false;
			rsz = size;
			__asm__("" : "+r"(rsz));
		}
		ops[w2 & 0xffff]++;
		if (mapped)
			__builtin_prefetch(m + i + PREFETCH);
		t += w2 & 1ull << 25;
		pb += len16;
		expect += 1ull << 32;
		li = i;
		i += rsz;
	}
	*tbits += t;
	*pbytes += pb;
	*odd += o;
	*lastp = li;
	if (o)
		__atomic_fetch_add(&hmb__run_odd, o, __ATOMIC_RELAXED);
	*n = (uint32_t)((expect >> 32) - seq);
	return i;
}
#endif

static size_t fast_run(struct hmb_acct *a, const uint8_t *m, size_t i,
		       size_t iend, bool mapped, uint64_t *reps)
{
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	uint64_t records = 0, pbytes = 0, trunc = 0, *ops = a->opcodes;
	uint64_t same_size = 0;
	uint32_t seq = a->max_seq + 1, size, sz = 0, same = 0;
	size_t i0 = i, last = i;
	uint64_t w0, w2;
	uint16_t len16;
	uint32_t plen;

/* Load and check the header at i, count the record; break if it is not ours. */
#define FAST_REC()							\
	memcpy(&w0, m + i, 8);		/* magic, seq */		\
	memcpy(&w2, m + i + 16, 8);	/* opcode, cpu, flags, len */	\
	memcpy(&len16, m + i + 20, 2);	/* a load of its own: see below */ \
	plen = len16;							\
	if (w0 != (HMB_RECORD_MAGIC | (uint64_t)seq << 32) ||		\
	    (w2 & BAD_FLAGS) || plen > HMB_RECORD_MAX_PAYLOAD)		\
		break;							\
	ops[w2 & 0xffff]++;						\
	trunc += (w2 >> 25) & 1;					\
	pbytes += plen;							\
	seq++;								\
	records++;							\
	last = i;							\
	size = HMB_RECORD_SIZE(plen)

	/*
	 * The chain is the length's own 16-bit load and the size's add, and,
	 * add (not a shift of the 64-bit word that holds the length too).  i
	 * need not be a multiple of 8: a window starts on a page of the file,
	 * the dump anywhere in it.
	 */
#define NEXT(i, plen) ((i) + HMB_RECORD_SIZE(plen))

	while (i < iend) {
		FAST_REC();
		i = NEXT(i, plen);
		/* No branch on the size itself: mixed sizes would mispredict. */
		same_size += size == sz;
		same = size == sz ? same + 1 : 0;
		sz = size;
		if (same < RUN_AFTER)
			continue;
		{
			uint64_t tbits = 0, n, odd = 0;

			/* A constant flag each: two loops, no test in them. */
			if (mapped)
				i = run_span(m, i, iend, size, seq, ops, &tbits,
					     &pbytes, &n, &odd, &last, true);
			else
				i = run_span(m, i, iend, size, seq, ops, &tbits,
					     &pbytes, &n, &odd, &last, false);
			records += n;
			trunc += tbits >> 25;
			seq += (uint32_t)n;
			same_size += n - odd;
			/* The record at i is not of the run: the general way. */
			same = 0;
		}
	}
#undef FAST_REC
#undef NEXT
	*reps = same_size;
	if (records) {
		uint64_t ts;

		memcpy(&ts, m + last + 8, 8);
		a->records += records;
		a->payload_bytes += pbytes;
		a->truncated += trunc;
		a->bytes += i - i0;
		a->max_seq = seq - 1;
		a->max_seq_ts = ts;
		a->last_ts_ns = ts;
	}
#else
	(void)a; (void)m; (void)iend;
	*reps = 0;
#endif
	return i;
}


/*
 * Two records at a time.  In a dump of mixed sizes the walk is bound by
 * the chain above (the next position waits for this record's length, a
 * load from the buffer), not by the work per record, and runs of one size
 * are too short to help.  So a block of the buffer is walked by two chains
 * at once: chain A from the start, chain B from the first place in the
 * block's second half that holds the record magic (at a multiple of 8
 * bytes from A's start: records start there).  B does not know that the
 * place is a record's start, nor what seq to expect there: it takes the
 * seq it finds and checks each record after it as A does.  When A reaches
 * B's start it decides: B's records are the dump's own, counted exactly as
 * A would have counted them, only if A lands on B's start exactly and
 * expects the seq B started with (where a walk lands fixes every position
 * after it).  Otherwise what B saw is dropped (it kept its opcodes aside
 * and counted nothing in @a) and A walks on alone.  So a payload holding
 * the magic can cost a block its speed, never a count.
 */

/* One chain: where it is and what it counted (records wholly checked). */
struct chain {
	size_t i, last;
	uint32_t seq, size;
	uint64_t records, pbytes, trunc, reps;
};

/*
 * Blocks whose B was taken / dropped, for the tests (t_acct checks that its
 * dumps take both ways); relaxed atomics, one add a block.
 */
HMB_HIDDEN uint64_t hmb__pair_taken, hmb__pair_dropped;

/* Bytes of the buffer a block covers; B walks at most half of it. */
#define PAIR_BLOCK (32u * 1024)
#define PAIR_MAX_B (PAIR_BLOCK / 2 / HMB_RECORD_HDR_SIZE + 1)

#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
/* Check and count the record at c->i; false if it is not one of ours. */
static inline bool chain_rec(struct chain *c, const uint8_t *m, uint16_t *op)
{
	uint64_t w0, w2;
	uint16_t len16;
	uint32_t size;

	memcpy(&w0, m + c->i, 8);
	memcpy(&w2, m + c->i + 16, 8);
	memcpy(&len16, m + c->i + 20, 2);
	if (w0 != (HMB_RECORD_MAGIC | (uint64_t)c->seq << 32) ||
	    (w2 & BAD_FLAGS) || len16 > HMB_RECORD_MAX_PAYLOAD)
		return false;
	*op = (uint16_t)w2;
	size = HMB_RECORD_SIZE(len16);
	c->reps += size == c->size;
	c->size = size;
	c->trunc += (w2 >> 25) & 1;
	c->pbytes += len16;
	c->seq++;
	c->records++;
	c->last = c->i;
	c->i += size;
	return true;
}

/* Add what chain @c counted from @from on to @a. */
static void chain_flush(struct hmb_acct *a, const struct chain *c,
			const uint8_t *m, size_t from)
{
	uint64_t ts;

	if (!c->records)
		return;
	memcpy(&ts, m + c->last + 8, 8);
	a->records += c->records;
	a->payload_bytes += c->pbytes;
	a->truncated += c->trunc;
	a->bytes += c->i - from;
	a->max_seq = c->seq - 1;
	a->max_seq_ts = ts;
	a->last_ts_ns = ts;
}

/*
 * Where B starts in [i, end): the first place at a multiple of 8 bytes from
 * i, at or after the middle, that holds the record magic; end if none does
 * within one largest record (a dump has a record start in any 4096 bytes).
 */
static size_t b_start(const uint8_t *m, size_t i, size_t end)
{
	size_t p = i + (((end - i) / 2 + 7) & ~(size_t)7);
	size_t lim = p + HMB_RECORD_MAX_SIZE < end ? p + HMB_RECORD_MAX_SIZE : end;

	for (; p < lim; p += 8) {
		uint32_t magic;

		memcpy(&magic, m + p, 4);
		if (magic == HMB_RECORD_MAGIC)
			return p;
	}
	return end;
}

/*
 * The records starting in [i, end) (end - i >= 2 * HMB_RECORD_MAX_SIZE),
 * two chains at a time; returns where the walk stopped (at or after end,
 * or at a record not ours: then sets *@stopped) and in *@reps how many of
 * the records had the size of the one before.
 */
static size_t pair_block(struct hmb_acct *a, const uint8_t *m, size_t i,
			 size_t end, bool *stopped, uint64_t *reps)
{
	uint64_t *ops = a->opcodes;
	size_t c0 = b_start(m, i, end), nb = 0, p;
	struct chain A = { .i = i, .seq = a->max_seq + 1 };
	struct chain B = { .i = c0 };
	uint16_t bops[PAIR_MAX_B], op;
	bool b_done = false;

	*reps = 0;
	if (c0 >= end) {
		p = fast_run(a, m, i, end, false, reps);
		*stopped = p < end;
		return p;
	}
	memcpy(&B.seq, m + c0 + 4, 4);
	while (A.i < c0 && !b_done) {
		if (!chain_rec(&A, m, &op))
			break;
		ops[op]++;
		if (B.i < end && chain_rec(&B, m, &bops[nb]))
			nb++;
		else
			b_done = true;
	}
	chain_flush(a, &A, m, i);
	*reps = A.reps;
	if (A.i < c0) {
		/* A stopped at a record not ours, or B is done: A on alone. */
		p = fast_run(a, m, A.i, c0, false, &A.reps);
		if (p < c0) {
			*stopped = true;
			return p;
		}
		A.i = p;
	}
	if (A.i != c0 || a->max_seq + 1 != B.seq - (uint32_t)B.records) {
		/* B did not start at a record of the walk: drop what it saw. */
		__atomic_fetch_add(&hmb__pair_dropped, 1, __ATOMIC_RELAXED);
		*stopped = false;
		return A.i;
	}
	__atomic_fetch_add(&hmb__pair_taken, 1, __ATOMIC_RELAXED);
	for (size_t k = 0; k < nb; k++)
		ops[bops[k]]++;
	chain_flush(a, &B, m, c0);
	*reps += B.reps;
	if (!b_done) {
		/* A got there first: B on alone. */
		p = fast_run(a, m, B.i, end, false, &B.reps);
		*reps += B.reps;
		*stopped = p < end;
		return p;
	}
	*stopped = B.i < end;
	return B.i;
}
#endif

/*
 * Block by block, each the way that suits the one before: runs of one size
 * through fast_run(), mixed sizes two chains at a time; *@pair carries the
 * choice from one call to the next.
 */
size_t hmb__fast_walk(struct hmb_acct *a, const uint8_t *m, size_t i,
		      size_t iend, bool mapped, bool *pair)
{
	while (i < iend) {
		size_t end = iend - i > PAIR_BLOCK ? i + PAIR_BLOCK : iend;
		uint64_t n0 = a->records, same;
		bool stopped;

#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
		if (*pair && end - i >= 2 * HMB_RECORD_MAX_SIZE) {
			i = pair_block(a, m, i, end, &stopped, &same);
		} else
#endif
		{
			/* Runs: the rest at once (fast_run() is cheaper so). */
			end = iend;
			i = fast_run(a, m, i, end, mapped, &same);
			stopped = i < end;
		}
		/* Half the records or more of their predecessor's size: runs. */
		if (a->records - n0 >= 16)
			*pair = 2 * same < a->records - n0;
		if (stopped)
			break;
	}
	return i;
}
