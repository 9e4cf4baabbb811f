// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The producer rules of docs/format.md, checked on the records a consumer
 * read from a live ring (hmbtrace_conform.h).  The consumer has already
 * validated what a reader needs (section 13); this adds what a producer
 * owes beyond that: zero reserved bytes and padding, markers only where
 * due and carrying the next record's seq and time, seqs without gaps
 * unless the ring was full, a clock that does not go back, payloads as
 * long as the dictionary says, and the epoch rules of section 16.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "hmbtrace_conform.h"

static const struct hmb_cf_rule_info rules[HMB_CF_RULES] = {
	[HMB_CF_REC_MAGIC] = { "rec-magic", "format.md 5",
		"every record starts with the magic RECT" },
	[HMB_CF_REC_LEN] = { "rec-len", "format.md 5",
		"payload_len is at most 4064" },
	[HMB_CF_REC_MBZ] = { "rec-mbz", "format.md 5",
		"reserved0, reserved1 and record flag bits 2..7 are written as zero" },
	[HMB_CF_REC_PAD] = { "rec-pad", "format.md 5",
		"the padding after the payload is zero" },
	[HMB_CF_HEAD] = { "head-publish", "format.md 4, 6, 13",
		"head is 8-aligned, at most ring_size ahead of tail, never "
		"backwards, never inside a record or a skip" },
	[HMB_CF_WRAP_MARKER] = { "wrap-marker", "format.md 7 step 3 and 5.1, 8",
		"a record never crosses the lap end; with 32 bytes or more left "
		"a wrap marker is written, and only when the next record does "
		"not fit" },
	[HMB_CF_MARKER_FIELDS] = { "marker-fields", "format.md 7 step 5.1",
		"a wrap marker has opcode 0, cpu 0, flags 0x01, payload_len 0, "
		"reserved 0, and the seq and ts_ns of the record after it" },
	[HMB_CF_WRAP_IMPLICIT] = { "wrap-implicit", "format.md 8",
		"with fewer than 32 bytes left the lap is skipped and the next "
		"record starts at offset 0" },
	[HMB_CF_SEQ_NEXT] = { "seq-next", "format.md 7 steps 5.3 and 6, 10",
		"each record's seq is the previous one's plus one; a gap only "
		"for records dropped when the ring was full" },
	[HMB_CF_TS_MONO] = { "ts-monotonic", "format.md 5",
		"ts_ns (the firmware's monotonic clock) never goes back within "
		"an epoch" },
	[HMB_CF_DICT_OPCODE] = { "dict-opcode", "events.md",
		"every data record's opcode is in the event dictionary" },
	[HMB_CF_DICT_LEN] = { "dict-len", "events.md",
		"a data record's payload is at least as long as its dictionary "
		"entry (len= or the end of its last field)" },
	[HMB_CF_EPOCH_SEQ] = { "epoch-seq", "format.md 16.7, 10",
		"after a re-initialisation the controller's seq continues: the "
		"new epoch's first seq is at or after the old epoch's last + 1" },
	[HMB_CF_EPOCH_START] = { "epoch-start", "format.md 16.2, 16.8",
		"an adopted ring is produced from cursor 0 (the head the host "
		"initialised)" },
};

const struct hmb_cf_rule_info *hmb_cf_rule_info(int rule)
{
	if (rule < 0 || rule >= HMB_CF_RULES)
		return NULL;
	return &rules[rule];
}

void hmb_conform_init(struct hmb_conform *ck, uint32_t ring_size,
		      const struct hmb_dict *dict)
{
	memset(ck, 0, sizeof(*ck));
	ck->ring_size = ring_size;
	ck->dict = dict;
	ck->new_epoch = true;
}

static void vnote(struct hmb_conform *ck, int rule, bool ok, bool have_seq,
		  uint32_t seq, uint64_t cursor, const char *fmt, va_list ap)
{
	struct hmb_cf_result *r;

	if (rule < 0 || rule >= HMB_CF_RULES)
		return;
	r = &ck->res[rule];
	r->checked++;
	if (ok)
		return;
	if (!r->failed++) {
		r->have_seq = have_seq;
		r->seq = seq;
		r->cursor = cursor;
		vsnprintf(r->msg, sizeof(r->msg), fmt, ap);
	}
}

void hmb_conform_note(struct hmb_conform *ck, int rule, bool ok,
		      bool have_seq, uint32_t seq, uint64_t cursor,
		      const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vnote(ck, rule, ok, have_seq, seq, cursor, fmt, ap);
	va_end(ap);
}

uint64_t hmb_conform_failures(const struct hmb_conform *ck)
{
	uint64_t n = 0;
	int i;

	for (i = 0; i < HMB_CF_RULES; i++)
		n += ck->res[i].failed;
	return n;
}

void hmb_conform_poll(struct hmb_conform *ck, uint64_t head, uint64_t tail,
		      uint32_t flags)
{
	uint64_t used = head - tail;

	ck->drop_now = (flags & HMB_RING_FLAG_OVERFLOWED) ||
		       used + 2 * HMB_RECORD_MAX_SIZE > ck->ring_size;
	ck->drop_window |= ck->drop_now;
}

void hmb_conform_epoch(struct hmb_conform *ck)
{
	ck->new_epoch = true;
	ck->start_due = true;
	ck->have_prev = false;
	ck->have_next = false;
	ck->marker = false;
	ck->stopped = false;
}

/* Header fields every record owes, marker or not. */
static void check_common(struct hmb_conform *ck, const struct hmb_record *rec)
{
	const struct hmb_record_hdr *h = &rec->hdr;
	uint64_t c = rec->offset;
	uint32_t i, end = HMB_RECORD_HDR_SIZE + h->payload_len;
	bool pad_ok = true;

	hmb_conform_note(ck, HMB_CF_REC_MAGIC, h->magic == HMB_RECORD_MAGIC,
			 true, h->seq, c, "magic 0x%08x, not RECT", h->magic);
	hmb_conform_note(ck, HMB_CF_REC_LEN,
			 h->payload_len <= HMB_RECORD_MAX_PAYLOAD, true, h->seq,
			 c, "payload_len %u > 4064", h->payload_len);
	hmb_conform_note(ck, HMB_CF_REC_MBZ,
			 !h->reserved0 && !h->reserved1 && !(h->flags & ~0x03u),
			 true, h->seq, c,
			 "reserved0 0x%x, reserved1 0x%llx, flags 0x%02x: "
			 "must be zero (flag bits 2..7 too)", h->reserved0,
			 (unsigned long long)h->reserved1, h->flags);
	for (i = end; i < rec->raw_len; i++)
		if (rec->raw[i])
			pad_ok = false;
	hmb_conform_note(ck, HMB_CF_REC_PAD, pad_ok, true, h->seq, c,
			 "non-zero padding after a payload of %u bytes",
			 h->payload_len);
}

static void check_marker(struct hmb_conform *ck, const struct hmb_record *rec)
{
	const struct hmb_record_hdr *h = &rec->hdr;
	uint64_t c = rec->offset;
	uint32_t rem = ck->ring_size - (uint32_t)(c & (ck->ring_size - 1));

	hmb_conform_note(ck, HMB_CF_MARKER_FIELDS,
			 !h->opcode && !h->cpu && h->flags == HMB_REC_FLAG_WRAP_MARKER &&
			 !h->payload_len && !h->reserved0 && !h->reserved1,
			 true, h->seq, c,
			 "wrap marker with opcode 0x%x, cpu %u, flags 0x%02x, "
			 "payload_len %u, reserved 0x%x/0x%llx (want 0, 0, 0x01, 0, 0)",
			 h->opcode, h->cpu, h->flags, h->payload_len,
			 h->reserved0, (unsigned long long)h->reserved1);
	hmb_conform_note(ck, HMB_CF_WRAP_MARKER, !ck->marker, true, h->seq, c,
			 "a second wrap marker before any record (the one at "
			 "cursor %llu)", (unsigned long long)ck->marker_cursor);
	ck->marker = true;
	ck->marker_seq = h->seq;
	ck->marker_ts = h->ts_ns;
	ck->marker_cursor = c;
	ck->markers++;
	ck->next_cursor = c + rem;
	ck->have_next = true;
}

static void check_seq(struct hmb_conform *ck, const struct hmb_record *rec)
{
	const struct hmb_record_hdr *h = &rec->hdr;
	uint32_t expect = ck->prev_seq + 1, d = h->seq - expect;
	uint64_t c = rec->offset;

	if (ck->new_epoch) {
		if (ck->have_any) {
			hmb_conform_note(ck, HMB_CF_EPOCH_SEQ, d < 0x80000000u,
					 true, h->seq, c,
					 "the new epoch starts at seq %u, before the "
					 "old epoch's last seq %u + 1: the counter "
					 "was reset", h->seq, ck->prev_seq);
			if (d < 0x80000000u)
				ck->lost += d;
		}
		ck->new_epoch = false;
		ck->epochs++;
		return;
	}
	if (!ck->have_prev)
		return;
	if (!d) {
		hmb_conform_note(ck, HMB_CF_SEQ_NEXT, true, true, h->seq, c, "%s", "");
	} else if (d < 0x80000000u) {
		hmb_conform_note(ck, HMB_CF_SEQ_NEXT, ck->drop_window, true, h->seq, c,
				 "seq gap: %u records (seq %u..%u) missing while "
				 "the ring had room for any record and OVERFLOWED "
				 "was clear", d, expect, h->seq - 1);
		if (ck->drop_window)
			ck->lost += d;
	} else {
		hmb_conform_note(ck, HMB_CF_SEQ_NEXT, false, true, h->seq, c,
				 "seq %u after seq %u: goes back (a stale record "
				 "of an earlier lap where a wrap marker was due?)",
				 h->seq, ck->prev_seq);
	}
}

void hmb_conform_record(struct hmb_conform *ck, const struct hmb_record *rec)
{
	const struct hmb_record_hdr *h = &rec->hdr;
	const struct hmb_dict_event *ev;
	uint32_t rs = ck->ring_size, rem;
	uint64_t c = rec->offset;

	if (ck->stopped)
		return;
	if (ck->start_due)
		hmb_conform_note(ck, HMB_CF_EPOCH_START, c == 0, true, h->seq, c,
				 "the first record of the ring is at cursor %llu, "
				 "not 0", (unsigned long long)c);
	ck->start_due = false;
	if (ck->have_next) {
		uint64_t exp = ck->next_cursor;

		rem = rs - (uint32_t)(exp & (rs - 1));
		if (rem < HMB_RECORD_HDR_SIZE) {
			ck->implicit_skips++;
			hmb_conform_note(ck, HMB_CF_WRAP_IMPLICIT, c == exp + rem,
					 true, h->seq, c,
					 "%u bytes left at cursor %llu: the next record "
					 "must start at %llu", rem,
					 (unsigned long long)exp,
					 (unsigned long long)(exp + rem));
		} else {
			hmb_conform_note(ck, HMB_CF_HEAD, c == exp, true, h->seq, c,
					 "record at cursor %llu, the previous ended "
					 "at %llu", (unsigned long long)c,
					 (unsigned long long)exp);
		}
	}
	check_common(ck, rec);
	if (rec->kind == HMB_KIND_MARKER) {
		check_marker(ck, rec);
		return;
	}
	if (ck->marker) {
		uint32_t mrem = rs - (uint32_t)(ck->marker_cursor & (rs - 1));

		hmb_conform_note(ck, HMB_CF_MARKER_FIELDS,
				 ck->marker_seq == h->seq && ck->marker_ts == h->ts_ns,
				 true, ck->marker_seq, ck->marker_cursor,
				 "wrap marker with seq %u ts_ns %llu, the record "
				 "after it has seq %u ts_ns %llu", ck->marker_seq,
				 (unsigned long long)ck->marker_ts, h->seq,
				 (unsigned long long)h->ts_ns);
		hmb_conform_note(ck, HMB_CF_WRAP_MARKER, rec->raw_len > mrem,
				 true, ck->marker_seq, ck->marker_cursor,
				 "wrap marker with %u bytes left in the lap, but "
				 "the next record (%u bytes) fitted", mrem,
				 rec->raw_len);
		ck->marker = false;
	}
	check_seq(ck, rec);
	if (ck->have_prev)
		hmb_conform_note(ck, HMB_CF_TS_MONO, h->ts_ns >= ck->prev_ts, true,
				 h->seq, c, "ts_ns %llu after %llu: the firmware "
				 "clock went back", (unsigned long long)h->ts_ns,
				 (unsigned long long)ck->prev_ts);
	if (rec->kind == HMB_KIND_DATA && ck->dict) {
		ev = hmb_dict_lookup(ck->dict, h->opcode);
		hmb_conform_note(ck, HMB_CF_DICT_OPCODE, ev != NULL, true, h->seq,
				 c, "opcode 0x%04x is not in the dictionary",
				 h->opcode);
		if (ev)
			hmb_conform_note(ck, HMB_CF_DICT_LEN,
					 h->payload_len >= ev->min_len, true,
					 h->seq, c, "%s (0x%04x): payload_len %u, "
					 "the dictionary needs %u", ev->name,
					 h->opcode, h->payload_len, ev->min_len);
	}
	/* a step back is reported once, not again for every later record */
	if (!ck->have_prev || h->seq - ck->prev_seq < 0x80000000u)
		ck->prev_seq = h->seq;
	ck->prev_ts = h->ts_ns;
	ck->have_prev = ck->have_any = true;
	ck->records++;
	ck->drop_window = ck->drop_now;
	ck->next_cursor = c + rec->raw_len;
	ck->have_next = true;
}

void hmb_conform_consumer_error(struct hmb_conform *ck,
				const struct hmb_error *err, uint64_t head)
{
	uint64_t c = err->offset, left = head - c;
	uint32_t rem = ck->ring_size - (uint32_t)(c & (ck->ring_size - 1));
	int rule;

	switch (err->code) {
	case HMB_E_REC_MAGIC:
		/* head past the lap end with no marker here: the marker is missing */
		rule = rem >= HMB_RECORD_HDR_SIZE && left > rem ?
		       HMB_CF_WRAP_MARKER : HMB_CF_REC_MAGIC;
		break;
	case HMB_E_REC_LEN:
		rule = HMB_CF_REC_LEN;
		break;
	case HMB_E_MARKER_PAYLOAD:
		rule = HMB_CF_MARKER_FIELDS;
		break;
	case HMB_E_REC_CROSS_LAP:
		rule = HMB_CF_WRAP_MARKER;
		break;
	case HMB_E_HEAD_IN_GAP:
		rule = rem < HMB_RECORD_HDR_SIZE ? HMB_CF_WRAP_IMPLICIT : HMB_CF_HEAD;
		break;
	default:
		rule = HMB_CF_HEAD;
		break;
	}
	hmb_conform_note(ck, rule, false, false, 0, c,
			 "%s (%s; %u bytes left in the lap, head %llu)", err->msg,
			 hmb_errname(err->code), rem, (unsigned long long)head);
	ck->stopped = true;
}
