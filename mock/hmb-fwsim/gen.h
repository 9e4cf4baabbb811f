/* SPDX-License-Identifier: Apache-2.0 */
/*
 * gen.h - deterministic synthetic trace load for hmb-fwsim.
 *
 * Everything about a record except its timestamp is a pure function of
 * (seed, seq): payload length, opcode, cpu and payload bytes.  A receiver
 * that knows the seed can therefore check every record it got.
 */
#ifndef HMB_FWSIM_GEN_H
#define HMB_FWSIM_GEN_H

#include <stdint.h>
#include <stddef.h>

#define GEN_MAX_CHOICES 64
#define GEN_BLOCK_SIZE 8192	/* >= 4096 + HMB_RECORD_MAX_PAYLOAD */

struct gen_choice {
	uint32_t value;
	uint32_t weight;
};

/* A discrete weighted distribution, or a uniform range. */
struct gen_dist {
	int uniform;			/* 1: [lo, hi] uniform */
	uint32_t lo, hi;
	unsigned int n;
	struct gen_choice c[GEN_MAX_CHOICES];
	uint64_t total;			/* sum of weights */
};

struct gen {
	uint64_t seed;
	struct gen_dist payload;
	struct gen_dist opcodes;
	unsigned int cpus;
	uint8_t block[GEN_BLOCK_SIZE];
};

/* Parse "fixed:N", "uniform:A-B" or "mix:AxW,BxW,...".  0 or -1 (msg). */
int gen_parse_payload(struct gen_dist *d, const char *spec, char *msg,
		      size_t msglen);
/* Parse "OP[:W],OP[:W],..." (OP decimal or 0x hex).  0 or -1 (msg). */
int gen_parse_opcodes(struct gen_dist *d, const char *spec, char *msg,
		      size_t msglen);

void gen_init(struct gen *g, uint64_t seed);

struct gen_rec {
	uint16_t payload_len;
	uint16_t opcode;
	uint8_t cpu;
	const uint8_t *payload;	/* points into @buf of gen_record() */
};

/* Describe record @seq; @buf must hold HMB_RECORD_MAX_PAYLOAD bytes. */
void gen_record(const struct gen *g, uint32_t seq, uint8_t *buf,
		struct gen_rec *out);

/* 64-bit mixing function (splitmix64 finaliser). */
static inline uint64_t gen_mix64(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ULL;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

#endif
