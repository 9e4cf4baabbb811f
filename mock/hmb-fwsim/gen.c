// SPDX-License-Identifier: Apache-2.0
/*
 * gen.c - deterministic synthetic trace load for hmb-fwsim.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <linux/nvme_hmb_trace.h>
#include "gen.h"
#include "hmbtrace_util.h"

static int parse_u32(const char *s, char **end, uint32_t *out, int base)
{
	const char *e;
	uint64_t v;

	if (hmb_strtou64(s, &e, (unsigned int)base, &v) || v > UINT32_MAX)
		return -1;
	*end = (char *)e;
	*out = (uint32_t)v;
	return 0;
}

static int dist_add(struct gen_dist *d, uint32_t value, uint32_t weight,
		    char *msg, size_t msglen)
{
	if (d->n >= GEN_MAX_CHOICES) {
		snprintf(msg, msglen, "more than %d choices", GEN_MAX_CHOICES);
		return -1;
	}
	if (weight == 0) {
		snprintf(msg, msglen, "weight of %" PRIu32 " is zero", value);
		return -1;
	}
	d->c[d->n].value = value;
	d->c[d->n].weight = weight;
	d->n++;
	d->total += weight;
	return 0;
}

int gen_parse_payload(struct gen_dist *d, const char *spec, char *msg,
		      size_t msglen)
{
	char *end;
	const char *s;
	uint32_t a, b;

	memset(d, 0, sizeof(*d));
	if (strncmp(spec, "fixed:", 6) == 0) {
		if (parse_u32(spec + 6, &end, &a, 10) || *end)
			goto bad;
		if (a > HMB_RECORD_MAX_PAYLOAD)
			goto big;
		return dist_add(d, a, 1, msg, msglen);
	}
	if (strncmp(spec, "uniform:", 8) == 0) {
		if (parse_u32(spec + 8, &end, &a, 10) || *end != '-' ||
		    parse_u32(end + 1, &end, &b, 10) || *end || b < a)
			goto bad;
		if (b > HMB_RECORD_MAX_PAYLOAD)
			goto big;
		d->uniform = 1;
		d->lo = a;
		d->hi = b;
		return 0;
	}
	if (strncmp(spec, "mix:", 4) == 0) {
		s = spec + 4;
		for (;;) {
			if (parse_u32(s, &end, &a, 10) || *end != 'x' ||
			    parse_u32(end + 1, &end, &b, 10))
				goto bad;
			if (a > HMB_RECORD_MAX_PAYLOAD)
				goto big;
			if (dist_add(d, a, b, msg, msglen))
				return -1;
			if (*end == 0)
				break;
			if (*end != ',')
				goto bad;
			s = end + 1;
		}
		return 0;
	}
bad:
	snprintf(msg, msglen,
		 "bad payload distribution '%s' (want fixed:N, uniform:A-B or mix:AxW,BxW,...)",
		 spec);
	return -1;
big:
	snprintf(msg, msglen, "payload size in '%s' exceeds %d bytes", spec,
		 HMB_RECORD_MAX_PAYLOAD);
	return -1;
}

int gen_parse_opcodes(struct gen_dist *d, const char *spec, char *msg,
		      size_t msglen)
{
	const char *s = spec;
	char *end;
	uint32_t op, w;

	memset(d, 0, sizeof(*d));
	for (;;) {
		if (parse_u32(s, &end, &op, 0) || op > 0xffff)
			goto bad;
		w = 1;
		if (*end == ':' && parse_u32(end + 1, &end, &w, 10))
			goto bad;
		if (dist_add(d, op, w, msg, msglen))
			return -1;
		if (*end == 0)
			return 0;
		if (*end != ',')
			goto bad;
		s = end + 1;
	}
bad:
	snprintf(msg, msglen,
		 "bad opcode mix '%s' (want OP[:WEIGHT],... with OP <= 0xffff)",
		 spec);
	return -1;
}

void gen_init(struct gen *g, uint64_t seed)
{
	uint64_t x = seed;
	size_t i;

	g->seed = seed;
	for (i = 0; i < GEN_BLOCK_SIZE; i += 8) {
		x = gen_mix64(x);
		memcpy(g->block + i, &x, 8);
	}
}

static uint32_t dist_pick(const struct gen_dist *d, uint64_t h)
{
	uint64_t r;
	unsigned int i;

	if (d->uniform)
		return d->lo + (uint32_t)(h % ((uint64_t)d->hi - d->lo + 1));
	if (d->n == 1)
		return d->c[0].value;
	r = h % d->total;
	for (i = 0; i < d->n; i++) {
		if (r < d->c[i].weight)
			return d->c[i].value;
		r -= d->c[i].weight;
	}
	return d->c[d->n - 1].value;
}

void gen_record(const struct gen *g, uint32_t seq, uint8_t *buf,
		struct gen_rec *out)
{
	uint64_t h = gen_mix64(g->seed ^ ((uint64_t)seq << 1));
	uint64_t h2 = gen_mix64(h);
	uint32_t len = dist_pick(&g->payload, h);
	size_t off = (size_t)(h2 >> 40) % (GEN_BLOCK_SIZE - HMB_RECORD_MAX_PAYLOAD);

	out->payload_len = (uint16_t)len;
	out->opcode = (uint16_t)dist_pick(&g->opcodes, h2 & 0xffffffffu);
	out->cpu = (uint8_t)((h2 >> 32) % g->cpus);
	/* First 8 bytes: the seq and a hash, so a glance at a payload tells
	 * which record it belongs to; the rest comes from the seeded block. */
	if (len >= 8) {
		uint64_t tag = ((uint64_t)seq) | (h & 0xffffffff00000000ULL);

		memcpy(buf, &tag, 8);
		memcpy(buf + 8, g->block + off, len - 8);
	} else if (len) {
		memcpy(buf, &h, len);
	}
	out->payload = buf;
}
