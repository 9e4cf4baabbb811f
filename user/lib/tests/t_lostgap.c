// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * hmb__join_lost_between() finds the first loss after a seq by binary
 * search over the run's losses: it must answer what a scan of them
 * answers, for losses and seqs on both sides of the 32-bit seq wrap, a
 * range that wraps past the first loss, and seqs given out of order.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#include "../model/joinpriv.h"
#include "tap.h"

static bool scan(const uint32_t *gaps, size_t n, uint32_t a, uint32_t b)
{
	for (size_t g = 0; g < n; g++)
		if (jseq_diff(gaps[g], a) > 0 && jseq_diff(gaps[g], b) < 0)
			return true;
	return false;
}

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint32_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (uint32_t)(rng >> 16);
}

/* A seq near @g (a loss, or a loss's neighbour), or anywhere. */
static uint32_t near(const uint32_t *gaps, size_t n)
{
	if (!n || rnd() % 8 == 0)
		return rnd();
	return gaps[rnd() % n] + (uint32_t)(int32_t)(rnd() % 7) - 3;
}

int main(void)
{
	static uint32_t gaps[4096];
	size_t checks = 0, same = 0, found = 0;

	for (int round = 0; round < 2000; round++) {
		/* first seqs around the wrap, at 0 and anywhere */
		uint32_t s = round % 3 == 0 ? (uint32_t)-(int32_t)(rnd() % 5000) :
			     round % 3 == 1 ? rnd() % 100 : rnd();
		size_t n = round % 50 == 0 ? 0 : 1 + rnd() % 4096;
		uint32_t step = round % 4 == 0 ? 1 + rnd() % 4 :
				1 + rnd() % 1000000;

		for (size_t g = 0; g < n; g++) {
			gaps[g] = s;
			s += 1 + rnd() % step;
		}
		for (int q = 0; q < 200; q++) {
			uint32_t a = near(gaps, n), b;

			switch (rnd() % 4) {
			case 0:
				b = a + rnd() % 16;
				break;
			case 1:
				b = near(gaps, n);
				break;
			case 2:
				b = a - rnd() % 16;
				break;
			default:
				b = a + rnd() % (step * 64 + 1);
			}
			checks++;
			found += scan(gaps, n, a, b);
			same += scan(gaps, n, a, b) ==
				hmb__join_lost_between(gaps, n, a, b);
		}
	}
	ok(same == checks, "binary search = scan on %zu of %zu checks", same,
	   checks);
	ok(found > checks / 10 && found < checks - checks / 10,
	   "both answers tested (%zu losses between of %zu)", found, checks);
	return tap_done();
}
