/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * hmbtrace_quant.h - latency percentiles of nvme-hmb-trace: one
 * implementation for the agent's report, correlate and report.
 *
 * Exact while the values are held (up to a set number of them): the
 * value at index floor(level * n) of the sorted values, the last for
 * level 1, which is ClickHouse's quantileExact.  Past that number, from
 * a log-linear histogram (HMB_QUANT_SUB buckets per power of two): the
 * bucket holding that index, whose bounds are given with the value
 * (relative error under 1 / HMB_QUANT_SUB).  min and max stay exact.
 */
#ifndef HMBTRACE_QUANT_H
#define HMBTRACE_QUANT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define HMB_QUANT_SUB		32
#define HMB_QUANT_BUCKETS	(64 * HMB_QUANT_SUB)
/*
 * Values held for exact percentiles (512 KiB): the users stream captures
 * of any length in bounded memory, so past this many the buckets answer.
 */
#define HMB_QUANT_KEEP		(1u << 16)

struct hmb_quant {
	uint64_t n, min, max, sum;
	uint64_t *v;		/* the values while n <= keep */
	size_t nv, cap, keep;
	bool sorted;
	uint64_t *b;		/* HMB_QUANT_BUCKETS counts, from the first value */
	bool oom;		/* a value could not be counted */
};

/* What a percentile is: exact (lo == hi == v), or the bucket's bounds. */
struct hmb_quant_val {
	uint64_t v, lo, hi;
	bool exact;
};

/* The levels printed everywhere: p50, p90, p99, p99.9. */
#define HMB_QUANT_NLEVELS	4
extern const double hmb_quant_levels[HMB_QUANT_NLEVELS];
extern const char *const hmb_quant_level_names[HMB_QUANT_NLEVELS];
/* The same as JSON member names: p50, p90, p99, p999. */
extern const char *const hmb_quant_json_names[HMB_QUANT_NLEVELS];

void hmb_quant_init(struct hmb_quant *q, size_t keep);
void hmb_quant_free(struct hmb_quant *q);
/* Forget the values, keep the memory. */
void hmb_quant_clear(struct hmb_quant *q);
void hmb_quant_add(struct hmb_quant *q, uint64_t v);
/* The lowest value bucket @i (of b[]) holds: for drawing the histogram. */
uint64_t hmb_quant_bucket_lo(unsigned int i);
/* The percentile at @level (0..1); false when there are no values. */
bool hmb_quant_at(struct hmb_quant *q, double level, struct hmb_quant_val *r);

#ifdef __cplusplus
}
#endif

#endif /* HMBTRACE_QUANT_H */
