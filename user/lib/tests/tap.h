/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Minimal TAP output for the libhmbtrace tests. */
#ifndef HMB_TEST_TAP_H
#define HMB_TEST_TAP_H

#include <stdio.h>
#include <stdlib.h>

static int tap_n, tap_fail;

#define ok(cond, ...) do {						\
	int _c = !!(cond);						\
	tap_n++;							\
	if (!_c)							\
		tap_fail++;						\
	printf("%sok %d - ", _c ? "" : "not ", tap_n);			\
	printf(__VA_ARGS__);						\
	printf("\n");							\
	if (!_c)							\
		printf("#   failed at %s:%d: %s\n", __FILE__, __LINE__,	\
		       #cond);						\
	fflush(stdout);							\
} while (0)

#define diag(...) do { printf("# "); printf(__VA_ARGS__);		\
	printf("\n"); fflush(stdout); } while (0)

static inline int tap_done(void)
{
	printf("1..%d\n", tap_n);
	return tap_fail ? 1 : 0;
}

#endif
