/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * hmbtrace_conform.h - the producer rules of docs/format.md checked record
 * by record on what a consumer read from a live ring: the checker behind
 * hmb-trace-conform (docs/man/hmb-trace-conform.md), which a firmware team
 * points at its drive.
 *
 * The caller consumes the ring with hmb_consumer_poll()/next() and hands
 * the checker every poll (head, the tail it had published, the flags),
 * every record, every error the consumer returned and every
 * re-initialisation.  Each rule has a short id and the section of
 * docs/format.md (or docs/events.md) that states it; the checker counts
 * how often a rule was exercised and keeps the first violation with the
 * record's seq and cursor.  Same conventions as hmbtrace.h: nothing
 * prints, aborts or exits.
 */
#ifndef HMBTRACE_CONFORM_H
#define HMBTRACE_CONFORM_H

#include <stdbool.h>
#include <stdint.h>
#include "hmbtrace.h"
#include "hmbtrace_dict.h"

#ifdef __cplusplus
extern "C" {
#endif

enum hmb_cf_rule {
	HMB_CF_REC_MAGIC = 0,	/* a record (RECT) where the stream continues */
	HMB_CF_REC_LEN,		/* payload_len <= 4064 */
	HMB_CF_REC_MBZ,		/* reserved fields and flag bits 2..7 zero */
	HMB_CF_REC_PAD,		/* padding after the payload zero */
	HMB_CF_HEAD,		/* head aligned, ahead of tail by <= ring_size,
				 * never backwards, never inside a record */
	HMB_CF_WRAP_MARKER,	/* a marker when >= 32 bytes are left and the
				 * record does not fit; only then */
	HMB_CF_MARKER_FIELDS,	/* marker: opcode/cpu/reserved 0, flags 0x01,
				 * no payload, seq and ts of the next record */
	HMB_CF_WRAP_IMPLICIT,	/* < 32 bytes left: skipped, nothing there */
	HMB_CF_SEQ_NEXT,	/* seq + 1 per record; a gap only when full */
	HMB_CF_TS_MONO,		/* ts_ns never goes back within an epoch */
	HMB_CF_DICT_OPCODE,	/* the opcode is in the dictionary */
	HMB_CF_DICT_LEN,	/* payload_len >= the dictionary's length */
	HMB_CF_EPOCH_SEQ,	/* new epoch: seq continues (16.7) */
	HMB_CF_EPOCH_START,	/* new epoch: produced from cursor 0 (16.8) */
	HMB_CF_RULES
};

struct hmb_cf_rule_info {
	const char *id;		/* "seq-next" */
	const char *section;	/* "format.md 7, 10" */
	const char *what;	/* one line */
};

/* NULL for a rule outside 0..HMB_CF_RULES-1. */
const struct hmb_cf_rule_info *hmb_cf_rule_info(int rule);

struct hmb_cf_result {
	uint64_t checked;	/* times the rule applied */
	uint64_t failed;
	/* the first violation */
	bool have_seq;
	uint32_t seq;
	uint64_t cursor;
	char msg[HMB_ERRMSG_LEN];
};

struct hmb_conform {
	uint32_t ring_size;
	const struct hmb_dict *dict;	/* NULL: dictionary rules not checked */
	struct hmb_cf_result res[HMB_CF_RULES];
	/* stream state */
	bool have_prev;		/* a data/ignored record in this epoch */
	bool have_any;		/* a data/ignored record in any epoch */
	uint32_t prev_seq;
	uint64_t prev_ts;
	uint64_t next_cursor;	/* where the next record must start */
	bool have_next;
	bool marker;		/* a marker waits for its record */
	uint32_t marker_seq;
	uint64_t marker_ts, marker_cursor;
	bool new_epoch;		/* no record yet since init or epoch() */
	bool start_due;		/* epoch(): the next record must be at 0 */
	bool drop_now;		/* the last poll saw a ring a record could
				 * have been dropped from */
	bool drop_window;	/* some poll did, since the one that
				 * brought the last record */
	bool stopped;		/* a consumer error ended the stream */
	/* counts */
	uint64_t records, markers, implicit_skips, lost, epochs;
};

void hmb_conform_init(struct hmb_conform *ck, uint32_t ring_size,
		      const struct hmb_dict *dict);

/*
 * A poll found @head with @tail the consumer had published (before this
 * batch) and @flags.  A seq gap before a record is a legal drop only if
 * OVERFLOWED or a ring too full for some record (less than 8192 bytes
 * free: the largest record plus the largest skip before it) was seen at
 * a poll from the one that brought the record before the gap up to the
 * one that brought the record after it: occupancy only grows between two
 * publications of the tail, so a poll after a drop sees the ring at
 * least as full as the producer did.
 */
void hmb_conform_poll(struct hmb_conform *ck, uint64_t head, uint64_t tail,
		      uint32_t flags);

/* One record hmb_consumer_next() returned (rec->offset is its cursor). */
void hmb_conform_record(struct hmb_conform *ck, const struct hmb_record *rec);

/*
 * The consumer refused the ring (hmb_consumer_poll/next): the violation
 * is charged to the producer rule it breaks.  @head is the head it had
 * polled.  The stream ends there (no further record is checked).
 */
void hmb_conform_consumer_error(struct hmb_conform *ck,
				const struct hmb_error *err, uint64_t head);

/*
 * The host (re-)initialised the ring and the controller adopted it: the
 * next record starts a new epoch, at cursor 0, its seq continuing the
 * last epoch's.  Call it also before the first epoch of an adopted ring
 * (without it, a stream starting at any tail is taken as it is).
 */
void hmb_conform_epoch(struct hmb_conform *ck);

/*
 * Record one application of @rule: a pass, or (@ok false) a violation at
 * the record (@seq if @have_seq, @cursor) with the message.  For checks
 * the caller makes itself with the checker's rule ids.
 */
void hmb_conform_note(struct hmb_conform *ck, int rule, bool ok,
		      bool have_seq, uint32_t seq, uint64_t cursor,
		      const char *fmt, ...)
	__attribute__((format(printf, 7, 8)));

/* Total violations over every rule. */
uint64_t hmb_conform_failures(const struct hmb_conform *ck);

#ifdef __cplusplus
}
#endif
#endif
