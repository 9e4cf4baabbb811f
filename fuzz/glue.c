// SPDX-License-Identifier: Apache-2.0
/*
 * The analyzer's error printer lives in user/analyze/input.c with the rest
 * of its file plumbing, which the harnesses do not link; this one formats
 * the message (so that every format and its arguments are exercised under
 * the sanitizers) and drops it, keeping the fuzzer's output readable.
 */
#include <stdarg.h>
#include <stdio.h>

#include "analyze.h"

void errorf(const char *fmt, ...)
{
	char buf[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
}
