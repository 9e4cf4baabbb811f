/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A protocol buffers wire-format writer: varints, fixed64, doubles, and
 * length-delimited fields (strings, bytes, nested messages) into one
 * growing buffer.  No schema and no generated code: the caller names the
 * field numbers.  A nested message reserves one byte for its length and
 * moves its body when the length needs more (rare for small messages).
 */
#ifndef HMB_PB_H
#define HMB_PB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define HMB_PB_MAX_DEPTH	8

struct hmb_pb {
	uint8_t *buf;
	size_t len, cap;
	size_t open[HMB_PB_MAX_DEPTH];	/* offset of each open length byte */
	unsigned int depth;
	bool oom;		/* an allocation failed: the message is cut */
};

/* Wire types. */
enum { HMB_PB_VARINT = 0, HMB_PB_I64 = 1, HMB_PB_LEN = 2 };

void hmb_pb_init(struct hmb_pb *pb);
void hmb_pb_free(struct hmb_pb *pb);
/* Empty the buffer (every nested message must have ended). */
static inline void hmb_pb_reset(struct hmb_pb *pb)
{
	pb->len = 0;
	pb->depth = 0;
}

/* The varint encoding of @v into @out (at least 10 bytes); its length. */
size_t hmb_pb_put_varint(uint8_t *out, uint64_t v);

void hmb_pb_varint(struct hmb_pb *pb, uint32_t field, uint64_t v);
/* int64 fields: two's complement, as protobuf encodes them (10 bytes
 * for a negative value). */
static inline void hmb_pb_int(struct hmb_pb *pb, uint32_t field, int64_t v)
{
	hmb_pb_varint(pb, field, (uint64_t)v);
}
void hmb_pb_fixed64(struct hmb_pb *pb, uint32_t field, uint64_t v);
void hmb_pb_double(struct hmb_pb *pb, uint32_t field, double v);
void hmb_pb_bytes(struct hmb_pb *pb, uint32_t field, const void *p, size_t n);
void hmb_pb_str(struct hmb_pb *pb, uint32_t field, const char *s);
/* A nested message: its fields follow, until hmb_pb_end(). */
void hmb_pb_begin(struct hmb_pb *pb, uint32_t field);
void hmb_pb_end(struct hmb_pb *pb);

#endif /* HMB_PB_H */
