// SPDX-License-Identifier: Apache-2.0
/*
 * tsc-khz: the frequency of this machine's time stamp counter in kHz, on
 * standard output.  vm-run passes it to a TCG guest (tsc_early_khz=): under
 * TCG the guest's TSC is the host's, but the guest's boot-time calibration
 * against the emulated PIT goes wrong on a loaded host (seen: 170 MHz for a
 * 2.6 GHz TSC, a guest clock running 15 times too fast).
 *
 * Each sample reads CLOCK_MONOTONIC_RAW, the TSC, CLOCK_MONOTONIC_RAW and
 * keeps the pair only when the two clock reads are within 2 us (not
 * preempted in between); the rate is taken between pairs 100 ms apart, the
 * median of 5 such rates is printed.  Exit 1 when no good pair is found.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <x86intrin.h>

#include "hmbtrace_util.h"

/* A (time, tsc) pair read without preemption between them, or 0. */
static int pair(uint64_t *t, uint64_t *c)
{
	for (int i = 0; i < 1000; i++) {
		uint64_t a = hmb_now_ns(CLOCK_MONOTONIC_RAW);
		uint64_t x = __rdtsc();
		uint64_t b = hmb_now_ns(CLOCK_MONOTONIC_RAW);

		if (b - a < 2000) {
			*t = a / 2 + b / 2;
			*c = x;
			return 1;
		}
	}
	return 0;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

int main(void)
{
	struct timespec gap = { 0, 100000000 };
	double khz[5];
	int n = 0;

	for (int i = 0; i < 5; i++) {
		uint64_t t0, t1, c0, c1;

		if (!pair(&t0, &c0))
			continue;
		nanosleep(&gap, NULL);
		if (!pair(&t1, &c1) || t1 <= t0)
			continue;
		khz[n++] = (double)(c1 - c0) * 1e6 / (double)(t1 - t0);
	}
	if (!n)
		return 1;
	qsort(khz, n, sizeof(khz[0]), cmp);
	printf("%.0f\n", khz[n / 2]);
	return 0;
}
