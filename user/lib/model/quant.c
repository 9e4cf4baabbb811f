// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * quant.c - latency percentiles (hmbtrace_quant.h).
 */
#include <stdlib.h>
#include <string.h>

#include "hmbtrace_quant.h"

const double hmb_quant_levels[HMB_QUANT_NLEVELS] = { 0.5, 0.9, 0.99, 0.999 };
const char *const hmb_quant_level_names[HMB_QUANT_NLEVELS] = {
	"p50", "p90", "p99", "p99.9"
};
const char *const hmb_quant_json_names[HMB_QUANT_NLEVELS] = {
	"p50", "p90", "p99", "p999"
};

/* Buckets: v < SUB one each, then SUB per power of two. */
static unsigned int bucket(uint64_t v)
{
	unsigned int k;

	if (v < HMB_QUANT_SUB)
		return (unsigned int)v;
	k = 63 - (unsigned int)__builtin_clzll(v);	/* >= log2(SUB) */
	return (k - 4) * HMB_QUANT_SUB +
	       (unsigned int)((v >> (k - 5)) & (HMB_QUANT_SUB - 1));
}

uint64_t hmb_quant_bucket_lo(unsigned int i)
{
	unsigned int k;

	if (i < HMB_QUANT_SUB)
		return i;
	k = i / HMB_QUANT_SUB + 4;
	return (uint64_t)(HMB_QUANT_SUB + i % HMB_QUANT_SUB) << (k - 5);
}

_Static_assert(HMB_QUANT_SUB == 32, "bucket() shifts for 32 per octave");

void hmb_quant_init(struct hmb_quant *q, size_t keep)
{
	memset(q, 0, sizeof(*q));
	q->keep = keep;
}

void hmb_quant_free(struct hmb_quant *q)
{
	free(q->v);
	free(q->b);
	hmb_quant_init(q, q->keep);
}

void hmb_quant_clear(struct hmb_quant *q)
{
	q->n = q->min = q->max = q->sum = 0;
	q->nv = 0;
	q->sorted = false;
	q->oom = false;
	if (q->b)
		memset(q->b, 0, HMB_QUANT_BUCKETS * sizeof(*q->b));
}

void hmb_quant_add(struct hmb_quant *q, uint64_t v)
{
	if (!q->b) {
		q->b = calloc(HMB_QUANT_BUCKETS, sizeof(*q->b));
		if (!q->b) {
			q->oom = true;
			return;
		}
	}
	if (!q->n || v < q->min)
		q->min = v;
	if (v > q->max)
		q->max = v;
	q->n++;
	q->sum += v;
	q->b[bucket(v)]++;
	if (q->n > q->keep)
		return;
	if (q->nv == q->cap) {
		size_t cap = q->cap ? q->cap * 2 : 1024;
		uint64_t *nv;

		if (cap > q->keep)
			cap = q->keep;
		nv = realloc(q->v, cap * sizeof(*nv));
		if (!nv) {
			/* the histogram still has it: no longer exact */
			q->keep = 0;
			return;
		}
		q->v = nv;
		q->cap = cap;
	}
	q->v[q->nv++] = v;
	q->sorted = false;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

bool hmb_quant_at(struct hmb_quant *q, double level, struct hmb_quant_val *r)
{
	uint64_t k, cum = 0;

	if (!q->n)
		return false;
	k = level >= 1 ? q->n - 1 : (uint64_t)(level * (double)q->n);
	if (k >= q->n)
		k = q->n - 1;
	if (q->nv == q->n) {
		if (!q->sorted) {
			qsort(q->v, q->nv, sizeof(*q->v), cmp_u64);
			q->sorted = true;
		}
		r->v = r->lo = r->hi = q->v[k];
		r->exact = true;
		return true;
	}
	for (unsigned int i = 0; i < HMB_QUANT_BUCKETS; i++) {
		cum += q->b[i];
		if (cum > k) {
			uint64_t lo = hmb_quant_bucket_lo(i);
			uint64_t hi = i + 1 < HMB_QUANT_BUCKETS ?
				      hmb_quant_bucket_lo(i + 1) - 1 : UINT64_MAX;

			r->lo = lo > q->min ? lo : q->min;
			r->hi = hi < q->max ? hi : q->max;
			r->v = r->hi;
			r->exact = false;
			return true;
		}
	}
	r->v = r->lo = r->hi = q->max;
	r->exact = false;
	return true;
}
