/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A TrackEvent writer for Perfetto's protobuf trace (pftw.c): packet
 * sequences with an incremental clock and interned names, track
 * descriptors, slices, instants and counters with debug annotations.
 * The trace's layout is the caller's (pftrace.c).
 */
#ifndef HMB_PFTW_H
#define HMB_PFTW_H

#include <stdbool.h>
#include <stdint.h>

#include "hmbtrace_util.h"
#include "pb.h"

/* perfetto_trace.proto field numbers */
enum {
	TRACE_PACKET = 1,
	/* TracePacket */
	TP_CLOCK_SNAPSHOT = 6, TP_TIMESTAMP = 8, TP_SEQ_ID = 10,
	TP_TRACK_EVENT = 11, TP_INTERNED = 12, TP_SEQ_FLAGS = 13,
	TP_CLOCK_ID = 58, TP_DEFAULTS = 59, TP_TRACK_DESCRIPTOR = 60,
	/* TrackEvent */
	TE_ANNOTATION = 4, TE_TYPE = 9, TE_NAME_IID = 10, TE_TRACK = 11,
	TE_EXTRA_COUNTER_VALUES = 12, TE_NAME = 23, TE_COUNTER_VALUE = 30,
	TE_FLOW_IDS = 47, TE_TERMINATING_FLOW_IDS = 48,
	/* TrackEvent.Type */
	SLICE_BEGIN = 1, SLICE_END = 2, INSTANT = 3, COUNTER = 4,
	/* DebugAnnotation */
	DA_NAME_IID = 1, DA_BOOL = 2, DA_UINT = 3, DA_INT = 4, DA_STRING = 6,
	DA_NAME = 10,
	/* InternedData: event_names, debug_annotation_names; {iid, name} */
	ID_EVENT_NAMES = 2, ID_ANNOTATION_NAMES = 3,
	/* TrackDescriptor */
	TD_UUID = 1, TD_NAME = 2, TD_PROCESS = 3, TD_PARENT = 5,
	TD_COUNTER = 8, TD_CHILD_ORDERING = 11, TD_RANK = 12,
	TD_EXPLICIT = 3,
	/* TracePacketDefaults, TrackEventDefaults */
	DEF_CLOCK_ID = 58, DEF_TRACK_EVENT = 11, TED_TRACK = 11,
	TED_EXTRA_COUNTERS = 31,
	/* ClockSnapshot.Clock */
	CS_CLOCKS = 1, CLK_ID = 1, CLK_TS = 2, CLK_INCREMENTAL = 3,
	CLOCK_BOOTTIME = 6, CLOCK_INCR = 64,
	SEQ_INCREMENTAL_STATE_CLEARED = 1,
};

#define NAMES_MAX	4096	/* interned strings per kind; then literal */

/* Interned strings of one kind: name -> iid (1..), open addressing. */
struct strtab {
	char (*name)[HMB_DICT_NAME_LEN * 2 + 8];
	uint32_t *iid;		/* 0: empty slot */
	uint32_t *slot;		/* iid - 1 -> its slot */
	uint32_t n;
};

/* A packet sequence: a lane, a CPU, a background group, ... */
struct pseq {
	uint32_t id;
	bool started;
	uint64_t last_ts;
	uint64_t track;		/* its events' default track */
	uint64_t counter;	/* default extra counter track, or 0 */
	uint32_t *interned;	/* kind << 31 | iid, interned on it */
	uint32_t nint, capint;
};

/* The writer: the output, the packet being built, the interned names. */
struct pfw {
	struct hmb_outbuf *ob;
	struct hmb_pb pkt, ev;
	struct strtab names, anames;
	uint32_t need[32];	/* kind << 31 | iid the packet must intern */
	unsigned int nneed;
	struct pseq *cur;	/* sequence of the event being built */
	uint64_t cur_ts;	/* ... and its time */
	uint32_t next_seq;
	uint64_t next_uuid;
	uint64_t max_ts;	/* latest event time written */
	bool any_ts;
	bool oom;		/* an allocation failed: output cut short */
};

/* 0, or -1 out of memory (pfw_free() in both cases). */
int pfw_init(struct pfw *p, struct hmb_outbuf *ob);
void pfw_free(struct pfw *p);
uint64_t pfw_uuid(struct pfw *p);
/* A TrackDescriptor: @parent 0 for none, @rank < 0 for none, @pid > 0 a
 * process track, @counter a counter track (of counts). */
void pfw_track(struct pfw *p, uint64_t uuid, uint64_t parent, const char *name,
	   int rank, int pid, bool counter);
/* A new sequence whose events go on @track by default, their
 * extra_counter_values on @counter (0: none). */
void pfw_seq_init(struct pfw *p, struct pseq *s, uint64_t track,
	      uint64_t counter);
void pfw_seq_free(struct pseq *s);
/* An event of TrackEvent.Type @type on @s at firmware time @ts: its name,
 * args, counter value or other TrackEvent fields (into the returned
 * message) follow, then pfw_ev_put() writes it. */
struct hmb_pb *pfw_ev_start(struct pfw *p, struct pseq *s, uint64_t ts,
			int type);
void pfw_ev_name(struct pfw *p, const char *name);
void pfw_ann_u64(struct pfw *p, const char *name, uint64_t v);
void pfw_ann_i64(struct pfw *p, const char *name, int64_t v);
void pfw_ann_str(struct pfw *p, const char *name, const char *v);
void pfw_ann_bool(struct pfw *p, const char *name);
/* The value of the sequence's default extra counter at this event. */
void pfw_counter_val(struct pfw *p, int64_t v);
void pfw_ev_put(struct pfw *p);

/* A min-heap of uint32_t. */
void pfw_heap_push(uint32_t *h, uint32_t *n, uint32_t v);
uint32_t pfw_heap_pop(uint32_t *h, uint32_t *n);

#endif /* HMB_PFTW_H */
