// SPDX-License-Identifier: Apache-2.0
/*
 * The TrackEvent writer of convert --to perfetto (pftw.h).
 *
 * Each sequence's events are meant to be in time order: their timestamps
 * are deltas on the sequence's incremental clock (clock 64, started by a
 * clock snapshot in the sequence's first packet); an event earlier than
 * the sequence's last one carries an absolute BOOTTIME timestamp instead
 * (the snapshot says the two clocks agree), as Perfetto's own SDK does.
 * Names and arg names are interned per sequence in the packet that first
 * uses them.
 */
#include <stdlib.h>
#include <string.h>

#include "hmbtrace_dict.h"
#include "pftw.h"

/* ------------------------------------------------------------- strings */

static int strtab_init(struct strtab *t)
{
	t->name = calloc(NAMES_MAX * 2, sizeof(*t->name));
	t->iid = calloc(NAMES_MAX * 2, sizeof(*t->iid));
	t->slot = calloc(NAMES_MAX, sizeof(*t->slot));
	t->n = 0;
	return t->name && t->iid && t->slot ? 0 : -1;
}

static void strtab_free(struct strtab *t)
{
	free(t->name);
	free(t->iid);
	free(t->slot);
	memset(t, 0, sizeof(*t));
}

static uint32_t str_hash(const char *s)
{
	uint32_t h = 2166136261u;

	while (*s)
		h = (h ^ (uint8_t)*s++) * 16777619u;
	return h;
}

/* The iid of @s, interned now if new; 0 when the table is full or @s
 * does not fit a slot (the caller writes it literally). */
static uint32_t strtab_iid(struct strtab *t, const char *s)
{
	uint32_t mask = NAMES_MAX * 2 - 1, i = str_hash(s) & mask;

	if (strlen(s) >= sizeof(t->name[0]))
		return 0;
	while (t->iid[i]) {
		if (strcmp(t->name[i], s) == 0)
			return t->iid[i];
		i = (i + 1) & mask;
	}
	if (t->n == NAMES_MAX)
		return 0;
	strcpy(t->name[i], s);
	t->slot[t->n] = i;
	t->iid[i] = ++t->n;
	return t->iid[i];
}

static const char *strtab_name(const struct strtab *t, uint32_t iid)
{
	return t->name[t->slot[iid - 1]];
}

/* ------------------------------------------------------------ packets */

static void put_packet(struct pfw *p, const struct hmb_pb *pkt)
{
	uint8_t hdr[11];
	size_t n = 0;

	if (pkt->oom) {
		p->oom = true;
		return;
	}
	hdr[n++] = TRACE_PACKET << 3 | HMB_PB_LEN;
	n += hmb_pb_put_varint(hdr + n, pkt->len);
	hmb_ob_write(p->ob, (const char *)hdr, n);
	hmb_ob_write(p->ob, (const char *)pkt->buf, pkt->len);
}

uint64_t pfw_uuid(struct pfw *p)
{
	return ++p->next_uuid;
}

/* A TrackDescriptor: @parent 0 for none, @rank < 0 for none. */
void pfw_track(struct pfw *p, uint64_t uuid, uint64_t parent,
	       const char *name, int rank, int pid, bool counter)
{
	struct hmb_pb *b = &p->pkt;

	hmb_pb_reset(b);
	hmb_pb_begin(b, TP_TRACK_DESCRIPTOR);
	hmb_pb_varint(b, TD_UUID, uuid);
	if (parent)
		hmb_pb_varint(b, TD_PARENT, parent);
	hmb_pb_str(b, TD_NAME, name);
	if (pid) {
		hmb_pb_begin(b, TD_PROCESS);
		hmb_pb_varint(b, 1, (uint64_t)pid);	/* pid */
		hmb_pb_str(b, 6, name);			/* process_name */
		hmb_pb_end(b);
	}
	if (counter) {
		hmb_pb_begin(b, TD_COUNTER);
		hmb_pb_varint(b, 3, 2);		/* unit: UNIT_COUNT */
		hmb_pb_end(b);
	}
	hmb_pb_varint(b, TD_CHILD_ORDERING, TD_EXPLICIT);
	if (rank >= 0)
		hmb_pb_varint(b, TD_RANK, (uint64_t)rank);
	hmb_pb_end(b);
	put_packet(p, b);
}

void pfw_seq_init(struct pfw *p, struct pseq *s, uint64_t track,
		  uint64_t counter)
{
	memset(s, 0, sizeof(*s));
	s->id = ++p->next_seq;
	s->track = track;
	s->counter = counter;
}

void pfw_seq_free(struct pseq *s)
{
	free(s->interned);
	s->interned = NULL;
}

/*
 * The sequence's first packet: its incremental state cleared, its
 * defaults (the incremental clock, its track and counter) and the clock
 * snapshot that starts the incremental clock at @ts.
 */
static void seq_start(struct pfw *p, struct pseq *s, uint64_t ts)
{
	struct hmb_pb *b = &p->pkt;

	hmb_pb_reset(b);
	hmb_pb_varint(b, TP_SEQ_ID, s->id);
	hmb_pb_varint(b, TP_SEQ_FLAGS, SEQ_INCREMENTAL_STATE_CLEARED);
	hmb_pb_begin(b, TP_DEFAULTS);
	hmb_pb_varint(b, DEF_CLOCK_ID, CLOCK_INCR);
	hmb_pb_begin(b, DEF_TRACK_EVENT);
	hmb_pb_varint(b, TED_TRACK, s->track);
	if (s->counter)
		hmb_pb_varint(b, TED_EXTRA_COUNTERS, s->counter);
	hmb_pb_end(b);
	hmb_pb_end(b);
	hmb_pb_begin(b, TP_CLOCK_SNAPSHOT);
	hmb_pb_begin(b, CS_CLOCKS);
	hmb_pb_varint(b, CLK_ID, CLOCK_BOOTTIME);
	hmb_pb_varint(b, CLK_TS, ts);
	hmb_pb_end(b);
	hmb_pb_begin(b, CS_CLOCKS);
	hmb_pb_varint(b, CLK_ID, CLOCK_INCR);
	hmb_pb_varint(b, CLK_TS, ts);
	hmb_pb_varint(b, CLK_INCREMENTAL, 1);
	hmb_pb_end(b);
	hmb_pb_end(b);
	put_packet(p, b);
	s->started = true;
	s->last_ts = ts;
	s->nint = 0;
}

/* Has @s interned @key (kind << 31 | iid)?  Records it if not. */
static bool seq_has(struct pfw *p, struct pseq *s, uint32_t key)
{
	for (uint32_t i = 0; i < s->nint; i++)
		if (s->interned[i] == key)
			return true;
	if (s->nint == s->capint) {
		uint32_t cap = s->capint ? s->capint * 2 : 16;
		uint32_t *v = realloc(s->interned, cap * sizeof(*v));

		if (!v) {
			p->oom = true;
			return true;	/* nothing interned: cut short */
		}
		s->interned = v;
		s->capint = cap;
	}
	s->interned[s->nint++] = key;
	return false;
}

/* The next event, on sequence @s at firmware time @ts. */
struct hmb_pb *pfw_ev_start(struct pfw *p, struct pseq *s, uint64_t ts,
			    int type)
{
	if (!s->started)
		seq_start(p, s, ts);
	p->cur = s;
	p->cur_ts = ts;
	p->nneed = 0;
	hmb_pb_reset(&p->ev);
	hmb_pb_varint(&p->ev, TE_TYPE, (uint64_t)type);
	return &p->ev;
}

/* Interned id of @s for the current sequence (0: write it literally). */
static uint32_t iid_of(struct pfw *p, bool ann, const char *s)
{
	uint32_t iid = strtab_iid(ann ? &p->anames : &p->names, s);
	uint32_t key = (ann ? 1u << 31 : 0) | iid;

	if (!iid || p->nneed == sizeof(p->need) / sizeof(p->need[0]))
		return 0;
	if (!seq_has(p, p->cur, key))
		p->need[p->nneed++] = key;
	return iid;
}

void pfw_ev_name(struct pfw *p, const char *name)
{
	uint32_t iid = iid_of(p, false, name);

	if (iid)
		hmb_pb_varint(&p->ev, TE_NAME_IID, iid);
	else
		hmb_pb_str(&p->ev, TE_NAME, name);
}

static void ann_name(struct pfw *p, const char *name)
{
	uint32_t iid = iid_of(p, true, name);

	hmb_pb_begin(&p->ev, TE_ANNOTATION);
	if (iid)
		hmb_pb_varint(&p->ev, DA_NAME_IID, iid);
	else
		hmb_pb_str(&p->ev, DA_NAME, name);
}

void pfw_ann_u64(struct pfw *p, const char *name, uint64_t v)
{
	ann_name(p, name);
	hmb_pb_varint(&p->ev, DA_UINT, v);
	hmb_pb_end(&p->ev);
}

void pfw_ann_i64(struct pfw *p, const char *name, int64_t v)
{
	ann_name(p, name);
	hmb_pb_int(&p->ev, DA_INT, v);
	hmb_pb_end(&p->ev);
}

void pfw_ann_str(struct pfw *p, const char *name, const char *v)
{
	ann_name(p, name);
	hmb_pb_str(&p->ev, DA_STRING, v);
	hmb_pb_end(&p->ev);
}

void pfw_ann_bool(struct pfw *p, const char *name)
{
	ann_name(p, name);
	hmb_pb_varint(&p->ev, DA_BOOL, 1);
	hmb_pb_end(&p->ev);
}

/*
 * The event built since pfw_ev_start(), at its firmware time: a delta on the
 * sequence's clock, or absolute when it is earlier than the sequence's
 * last event.  The names it uses that the sequence has not seen yet are
 * interned in the same packet.
 */
void pfw_ev_put(struct pfw *p)
{
	struct pseq *s = p->cur;
	struct hmb_pb *b = &p->pkt;
	uint64_t ts = p->cur_ts;

	if (!p->any_ts || ts > p->max_ts)
		p->max_ts = ts;
	p->any_ts = true;
	hmb_pb_reset(b);
	if (ts >= s->last_ts) {
		hmb_pb_varint(b, TP_TIMESTAMP, ts - s->last_ts);
		s->last_ts = ts;
	} else {
		hmb_pb_varint(b, TP_TIMESTAMP, ts);
		hmb_pb_varint(b, TP_CLOCK_ID, CLOCK_BOOTTIME);
	}
	hmb_pb_varint(b, TP_SEQ_ID, s->id);
	if (p->nneed) {
		hmb_pb_begin(b, TP_INTERNED);
		for (unsigned int i = 0; i < p->nneed; i++) {
			bool ann = p->need[i] >> 31;
			uint32_t iid = p->need[i] & ~(1u << 31);

			hmb_pb_begin(b, ann ? ID_ANNOTATION_NAMES :
				     ID_EVENT_NAMES);
			hmb_pb_varint(b, 1, iid);
			hmb_pb_str(b, 2, strtab_name(ann ? &p->anames :
						     &p->names, iid));
			hmb_pb_end(b);
		}
		hmb_pb_end(b);
	}
	if (p->ev.oom)
		b->oom = true;
	else
		hmb_pb_bytes(b, TP_TRACK_EVENT, p->ev.buf, p->ev.len);
	put_packet(p, b);
}


void pfw_heap_push(uint32_t *h, uint32_t *n, uint32_t v)
{
	uint32_t i = (*n)++;

	while (i && h[(i - 1) / 2] > v) {
		h[i] = h[(i - 1) / 2];
		i = (i - 1) / 2;
	}
	h[i] = v;
}

uint32_t pfw_heap_pop(uint32_t *h, uint32_t *n)
{
	uint32_t top = h[0], v = h[--*n], i = 0;

	for (;;) {
		uint32_t c = 2 * i + 1;

		if (c >= *n)
			break;
		if (c + 1 < *n && h[c + 1] < h[c])
			c++;
		if (h[c] >= v)
			break;
		h[i] = h[c];
		i = c;
	}
	if (*n)
		h[i] = v;
	return top;
}

void pfw_counter_val(struct pfw *p, int64_t v)
{
	hmb_pb_int(&p->ev, TE_EXTRA_COUNTER_VALUES, v);
}


int pfw_init(struct pfw *p, struct hmb_outbuf *ob)
{
	memset(p, 0, sizeof(*p));
	p->ob = ob;
	hmb_pb_init(&p->pkt);
	hmb_pb_init(&p->ev);
	if (strtab_init(&p->names) || strtab_init(&p->anames)) {
		pfw_free(p);
		return -1;
	}
	return 0;
}

void pfw_free(struct pfw *p)
{
	hmb_pb_free(&p->pkt);
	hmb_pb_free(&p->ev);
	strtab_free(&p->names);
	strtab_free(&p->anames);
}
