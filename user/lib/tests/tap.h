/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * tap.h - the one TAP helper of the C tests (libhmbtrace's and the
 * agent's): ok() prints "ok N - what" or "not ok N - what" with the failed
 * condition and where, and returns the condition; tap_done() prints the
 * plan and gives main()'s exit status.
 */
#ifndef HMB_TEST_TAP_H
#define HMB_TEST_TAP_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

static int tap_n, tap_fail;

__attribute__((format(printf, 5, 6), unused))
static int tap_ok(int c, const char *file, int line, const char *expr,
		  const char *fmt, ...)
{
	va_list ap;

	tap_n++;
	if (!c)
		tap_fail++;
	printf("%sok %d - ", c ? "" : "not ", tap_n);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	if (!c)
		printf("#   failed at %s:%d: %s\n", file, line, expr);
	fflush(stdout);
	return c;
}

#define ok(cond, ...) tap_ok(!!(cond), __FILE__, __LINE__, #cond, __VA_ARGS__)

#define diag(...) do { printf("# "); printf(__VA_ARGS__);		\
	printf("\n"); fflush(stdout); } while (0)

/* A check that cannot run here: counted as passed, marked SKIP. */
#define skip(why, ...) do { tap_n++; printf("ok %d - ", tap_n);		\
	printf(__VA_ARGS__); printf(" # SKIP %s\n", why); fflush(stdout); \
	} while (0)

static inline int tap_done(void)
{
	printf("1..%d\n", tap_n);
	return tap_fail ? 1 : 0;
}

#endif
