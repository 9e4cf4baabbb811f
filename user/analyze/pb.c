// SPDX-License-Identifier: Apache-2.0
/*
 * The protocol buffers wire-format writer (pb.h).
 */
#include <stdlib.h>
#include <string.h>

#include "pb.h"

void hmb_pb_init(struct hmb_pb *pb)
{
	memset(pb, 0, sizeof(*pb));
}

void hmb_pb_free(struct hmb_pb *pb)
{
	free(pb->buf);
	hmb_pb_init(pb);
}

/* Room for @n more bytes; false (and oom set) if there is none. */
static bool room(struct hmb_pb *pb, size_t n)
{
	size_t cap;
	uint8_t *b;

	if (pb->oom)
		return false;
	if (pb->cap - pb->len >= n)
		return true;
	cap = pb->cap ? pb->cap : 256;
	while (cap - pb->len < n)
		cap *= 2;
	b = realloc(pb->buf, cap);
	if (!b) {
		pb->oom = true;
		return false;
	}
	pb->buf = b;
	pb->cap = cap;
	return true;
}

size_t hmb_pb_put_varint(uint8_t *out, uint64_t v)
{
	size_t n = 0;

	while (v >= 0x80) {
		out[n++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	out[n++] = (uint8_t)v;
	return n;
}

static void tag(struct hmb_pb *pb, uint32_t field, unsigned int wire)
{
	pb->len += hmb_pb_put_varint(pb->buf + pb->len,
				     (uint64_t)field << 3 | wire);
}

void hmb_pb_varint(struct hmb_pb *pb, uint32_t field, uint64_t v)
{
	if (!room(pb, 20))
		return;
	tag(pb, field, HMB_PB_VARINT);
	pb->len += hmb_pb_put_varint(pb->buf + pb->len, v);
}

void hmb_pb_fixed64(struct hmb_pb *pb, uint32_t field, uint64_t v)
{
	if (!room(pb, 18))
		return;
	tag(pb, field, HMB_PB_I64);
	for (int i = 0; i < 8; i++)	/* little endian on the wire */
		pb->buf[pb->len++] = (uint8_t)(v >> (8 * i));
}

void hmb_pb_double(struct hmb_pb *pb, uint32_t field, double v)
{
	uint64_t u;

	memcpy(&u, &v, sizeof(u));
	hmb_pb_fixed64(pb, field, u);
}

void hmb_pb_bytes(struct hmb_pb *pb, uint32_t field, const void *p, size_t n)
{
	if (!room(pb, 20 + n))
		return;
	tag(pb, field, HMB_PB_LEN);
	pb->len += hmb_pb_put_varint(pb->buf + pb->len, n);
	if (n)
		memcpy(pb->buf + pb->len, p, n);
	pb->len += n;
}

void hmb_pb_str(struct hmb_pb *pb, uint32_t field, const char *s)
{
	hmb_pb_bytes(pb, field, s, strlen(s));
}

void hmb_pb_begin(struct hmb_pb *pb, uint32_t field)
{
	if (pb->depth == HMB_PB_MAX_DEPTH)
		abort();	/* a caller's bug, not an input's */
	if (!room(pb, 11)) {
		pb->open[pb->depth++] = 0;	/* balanced; nothing kept */
		return;
	}
	tag(pb, field, HMB_PB_LEN);
	pb->open[pb->depth++] = pb->len++;
}

void hmb_pb_end(struct hmb_pb *pb)
{
	uint8_t len[10];
	size_t at, body, n;

	if (!pb->depth)
		abort();
	at = pb->open[--pb->depth];
	if (pb->oom)
		return;
	body = pb->len - at - 1;
	n = hmb_pb_put_varint(len, body);
	if (n > 1) {
		if (!room(pb, n - 1))
			return;
		memmove(pb->buf + at + n, pb->buf + at + 1, body);
		pb->len += n - 1;
	}
	memcpy(pb->buf + at, len, n);
}
