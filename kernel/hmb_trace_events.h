/* SPDX-License-Identifier: GPL-2.0 */
/*
 * hmb_trace_events.h - tracepoints of nvme-hmb-trace.ko.  Plain fields only,
 * so that perf, trace-cmd and ftrace can decode them from the format files.
 */
#undef TRACE_SYSTEM
#define TRACE_SYSTEM hmb_trace

#if !defined(_HMB_TRACE_EVENTS_H) || defined(TRACE_HEADER_MULTI_READ)
#define _HMB_TRACE_EVENTS_H

#include <linux/tracepoint.h>
#include <linux/nvme_hmb_trace.h>

#include "compat.h"

/*
 * One firmware record drained by the bridge.  The prototype is ABI for the
 * BPF agent, which attaches raw_tp/hmb_trace_record and reads args[0..2]:
 * keep it exactly (u32 ring_id, const struct hmb_record_hdr *hdr,
 * const void *payload).  @hdr points to a validated copy of the header,
 * @payload to hdr->payload_len bytes.
 */
TRACE_EVENT(hmb_trace_record,
	    TP_PROTO(u32 ring_id, const struct hmb_record_hdr *hdr,
		     const void *payload),
	    TP_ARGS(ring_id, hdr, payload),
	    TP_STRUCT__entry(__field(u32, ring_id)
		__field(u32, seq)
		__field(u64, ts_ns)
		__field(u16, opcode)
		__field(u8, cpu)
		__field(u8, flags)
		__field(u16, payload_len)
		__dynamic_array(u8, payload, hmb_le16(hdr->payload_len))
	    ),
	    TP_fast_assign(__entry->ring_id = ring_id;
		__entry->seq = hmb_le32(hdr->seq);
		__entry->ts_ns = hmb_le64(hdr->ts_ns);
		__entry->opcode = hmb_le16(hdr->opcode);
		__entry->cpu = hdr->cpu;
		__entry->flags = hdr->flags;
		__entry->payload_len = hmb_le16(hdr->payload_len);
		memcpy(__get_dynamic_array(payload), payload,
		       hmb_le16(hdr->payload_len));
	    ),
	    TP_printk("ring=%u seq=%u ts_ns=%llu opcode=0x%x cpu=%u flags=0x%x payload_len=%u payload=%s",
		      __entry->ring_id, __entry->seq, __entry->ts_ns,
		      __entry->opcode, __entry->cpu, __entry->flags,
		      __entry->payload_len,
		      __print_hex(__get_dynamic_array(payload),
				  __entry->payload_len > 16 ? 16 : __entry->payload_len))
);

/*
 * The records the bridge drained in one go, for BPF: @recs points to @nr
 * (1 to HMB_BRIDGE_BATCH) struct hmb_bridge_rec in ring order, the same
 * records hmb_trace_record shows one by one.  One program run per batch
 * instead of one per record.  The prototype is ABI for the BPF agent,
 * which attaches raw_tp/hmb_trace_records and reads args[0..2]: keep it
 * exactly (u32 ring_id, const struct hmb_bridge_rec *recs, u32 nr).
 */
TRACE_EVENT(hmb_trace_records,
	    TP_PROTO(u32 ring_id, const struct hmb_bridge_rec *recs, u32 nr),
	    TP_ARGS(ring_id, recs, nr),
	    TP_STRUCT__entry(__field(u32, ring_id)
		__field(u32, nr)
		__field(u32, first_seq)
		__field(u32, last_seq)
	    ),
	    TP_fast_assign(__entry->ring_id = ring_id;
		__entry->nr = nr;
		__entry->first_seq = hmb_le32(recs[0].hdr.seq);
		__entry->last_seq = hmb_le32(recs[nr - 1].hdr.seq);
	    ),
	    TP_printk("ring=%u nr=%u seq=%u..%u",
		      __entry->ring_id, __entry->nr, __entry->first_seq,
		      __entry->last_seq)
);

/* A ring flag went from 0 to 1; head and tail as the sampler saw them. */
DECLARE_EVENT_CLASS(hmb_trace_ring_flag,
		    TP_PROTO(u32 ring_id, u64 head_pos, u64 tail_pos, u32 flags),
		    TP_ARGS(ring_id, head_pos, tail_pos, flags),
		    TP_STRUCT__entry(__field(u32, ring_id)
			__field(u64, head)
			__field(u64, tail)
			__field(u32, flags)
		    ),
		    TP_fast_assign(__entry->ring_id = ring_id;
			__entry->head = head_pos;
			__entry->tail = tail_pos;
			__entry->flags = flags;
		    ),
		    TP_printk("ring=%u head=%llu tail=%llu flags=0x%x",
			      __entry->ring_id, __entry->head, __entry->tail,
			      __entry->flags)
);

/* The producer set HMB_RING_FLAG_OVERFLOWED: it is dropping records. */
DEFINE_EVENT(hmb_trace_ring_flag, hmb_trace_overflow,
	     TP_PROTO(u32 ring_id, u64 head_pos, u64 tail_pos, u32 flags),
	     TP_ARGS(ring_id, head_pos, tail_pos, flags)
);

/* The producer set HMB_RING_FLAG_FROZEN: it has stopped (reset, shutdown). */
DEFINE_EVENT(hmb_trace_ring_flag, hmb_trace_frozen,
	     TP_PROTO(u32 ring_id, u64 head_pos, u64 tail_pos, u32 flags),
	     TP_ARGS(ring_id, head_pos, tail_pos, flags)
);

/* The ring failed validation at @cursor (record area offset @offset). */
TRACE_EVENT(hmb_trace_corrupt,
	    TP_PROTO(u32 ring_id, u64 cursor, u32 offset, const char *reason),
	    TP_ARGS(ring_id, cursor, offset, reason),
	    TP_STRUCT__entry(__field(u32, ring_id)
		__field(u64, cursor)
		__field(u32, offset)
		__string(reason, reason)
	    ),
	    TP_fast_assign(__entry->ring_id = ring_id;
		__entry->cursor = cursor;
		__entry->offset = offset;
		hmb_assign_str(reason, reason);
	    ),
	    TP_printk("ring=%u cursor=%llu offset=%u reason=%s",
		      __entry->ring_id, __entry->cursor, __entry->offset,
		      __get_str(reason))
);

/* A consumer took (@attach 1) or released (@attach 0) the ring. */
TRACE_EVENT(hmb_trace_consumer,
	    TP_PROTO(u32 ring_id, bool attach, const char *who, pid_t pid),
	    TP_ARGS(ring_id, attach, who, pid),
	    TP_STRUCT__entry(__field(u32, ring_id)
		__field(u8, attach)
		__field(pid_t, pid)
		__string(who, who)
	    ),
	    TP_fast_assign(__entry->ring_id = ring_id;
		__entry->attach = attach;
		__entry->pid = pid;
		hmb_assign_str(who, who);
	    ),
	    TP_printk("ring=%u %s who=%s pid=%d", __entry->ring_id,
		      __entry->attach ? "attach" : "detach", __get_str(who),
		      __entry->pid)
);

#endif /* _HMB_TRACE_EVENTS_H */

#undef TRACE_INCLUDE_PATH
#define TRACE_INCLUDE_PATH .
#undef TRACE_INCLUDE_FILE
#define TRACE_INCLUDE_FILE hmb_trace_events
#include <trace/define_trace.h>
