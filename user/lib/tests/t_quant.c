// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * t_quant.c - latency percentiles (hmbtrace_quant.h), TAP: exact ones
 * against a sorted copy indexed as ClickHouse's quantileExact does, the
 * histogram's once past what is held (the exact value inside the bounds
 * given, within 1/32), clear, and the stats' text.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hmbtrace_cmd.h"
#include "tap.h"

static uint64_t rs = 0x9e3779b97f4a7c15ULL;
static uint64_t rnd(void)
{
	rs ^= rs >> 12;
	rs ^= rs << 25;
	rs ^= rs >> 27;
	return rs * 2685821657736338717ULL;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* quantileExact: the sorted values at floor(level * n), the last for 1. */
static uint64_t ref_at(const uint64_t *sorted, size_t n, double level)
{
	size_t k = level >= 1 ? n - 1 : (size_t)(level * (double)n);

	return sorted[k < n ? k : n - 1];
}

/* A latency-like spread: mostly tens of us, a tail to tens of ms. */
static uint64_t latency(void)
{
	uint64_t r = rnd();

	if (r % 1000 == 0)
		return 1000000 + r % 50000000;
	if (r % 100 == 0)
		return 200000 + r % 2000000;
	return 20000 + r % 100000;
}

static void run(const char *name, size_t n, size_t keep)
{
	static const double lv[] = { 0, 0.25, 0.5, 0.9, 0.99, 0.999, 1 };
	struct hmb_quant q;
	uint64_t *v = malloc(n * sizeof(*v));
	int exact_ok = 1, bound_ok = 1, rel_ok = 1, flag_ok = 1;

	hmb_quant_init(&q, keep);
	for (size_t i = 0; i < n; i++) {
		v[i] = latency();
		hmb_quant_add(&q, v[i]);
	}
	qsort(v, n, sizeof(*v), cmp_u64);
	for (size_t i = 0; i < sizeof(lv) / sizeof(lv[0]); i++) {
		struct hmb_quant_val r;
		uint64_t want = ref_at(v, n, lv[i]);

		if (!hmb_quant_at(&q, lv[i], &r)) {
			exact_ok = bound_ok = 0;
			continue;
		}
		if (r.exact != (n <= keep))
			flag_ok = 0;
		if (r.exact && r.v != want) {
			printf("# %s: level %g: %llu, want %llu\n", name, lv[i],
			       (unsigned long long)r.v,
			       (unsigned long long)want);
			exact_ok = 0;
		}
		if (!r.exact) {
			if (want < r.lo || want > r.hi || r.v < r.lo ||
			    r.v > r.hi) {
				printf("# %s: level %g: %llu not in [%llu, %llu]\n",
				       name, lv[i], (unsigned long long)want,
				       (unsigned long long)r.lo,
				       (unsigned long long)r.hi);
				bound_ok = 0;
			}
			if ((double)(r.hi - r.lo) > (double)r.lo / 32)
				rel_ok = 0;
		}
	}
	ok(flag_ok, "%s: exact while the %zu values are held (keep %zu)", name,
	   n, keep);
	ok(exact_ok, "%s: exact percentiles are quantileExact's", name);
	ok(bound_ok, "%s: past what is held, the exact value lies in the bounds given",
	   name);
	ok(rel_ok, "%s: the bounds are within 1/32 of the value", name);
	ok(q.min == v[0] && q.max == v[n - 1], "%s: min and max exact", name);
	hmb_quant_free(&q);
	free(v);
}

static void test_small(void)
{
	struct hmb_quant q;
	struct hmb_quant_val r;
	uint64_t four[] = { 40, 10, 30, 20 };

	hmb_quant_init(&q, 16);
	ok(!hmb_quant_at(&q, 0.5, &r), "empty: no percentile");
	for (int i = 0; i < 4; i++)
		hmb_quant_add(&q, four[i]);
	/* quantileExact(0.5) of 10,20,30,40 is 30; (0.9) 40; (0) 10 */
	ok(hmb_quant_at(&q, 0.5, &r) && r.v == 30 && r.exact,
	   "p50 of 10,20,30,40 is 30");
	ok(hmb_quant_at(&q, 0.9, &r) && r.v == 40, "p90 of them is 40");
	ok(hmb_quant_at(&q, 0, &r) && r.v == 10, "level 0 is the minimum");
	hmb_quant_clear(&q);
	ok(!hmb_quant_at(&q, 0.5, &r) && q.n == 0, "clear forgets the values");
	hmb_quant_add(&q, 5);
	ok(hmb_quant_at(&q, 0.999, &r) && r.v == 5 && r.exact,
	   "one value after clear: every percentile is it");
	hmb_quant_free(&q);
}

static void test_stats_text(void)
{
	struct hmb_cmd_stats s;
	struct hmb_cmd c;
	char *out = NULL;
	size_t len = 0;
	FILE *f;

	hmb_cmd_stats_init(&s, 4, 0);
	memset(&c, 0, sizeof(c));
	for (int i = 0; i < HMB_X_COUNT; i++)
		c.x[i] = -1;
	for (int i = 1; i <= 1000; i++) {
		c.x[HMB_X_HOST_TOTAL] = i * 1000;
		hmb_cmd_stats_add(&s, &c);
	}
	f = open_memstream(&out, &len);
	hmb_quant_print(f, &s);
	fclose(f);
	ok(out && strstr(out, "host_total") &&
	   strstr(out, "p50 501.0 p90 901.0 p99 991.0 p99.9 1000.0 max 1000.0 (exact, 1000)") &&
	   !strstr(out, "fw_total"),
	   "text: the host total's percentiles in us, exact; phases without values left out");
	free(out);
	hmb_cmd_stats_clear(&s);
	f = open_memstream(&out, &len);
	hmb_quant_print(f, &s);
	fclose(f);
	ok(out && !*out, "text: nothing once cleared");
	free(out);
	hmb_cmd_stats_free(&s);
}

int main(void)
{
	test_small();
	run("100000 held", 100000, HMB_QUANT_KEEP);
	run("100000, 1000 held", 100000, 1000);
	run("2000000, default keep", 2000000, HMB_QUANT_KEEP);
	test_stats_text();
	return tap_done();
}
