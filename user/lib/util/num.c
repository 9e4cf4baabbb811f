// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * num.c - the one number parser of nvme-hmb-trace (hmbtrace_util.h):
 * options of every tool, the event dictionary, the sidecar, QEMU trace
 * lines and perf script lines all read their numbers here.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>

#include "hmbtrace_util.h"

static int digit(char c, unsigned int base)
{
	unsigned int d;

	if (c >= '0' && c <= '9')
		d = (unsigned int)(c - '0');
	else if (c >= 'a' && c <= 'f')
		d = (unsigned int)(c - 'a') + 10;
	else if (c >= 'A' && c <= 'F')
		d = (unsigned int)(c - 'A') + 10;
	else
		return -1;
	return d < base ? (int)d : -1;
}

int hmb_strtou64(const char *s, const char **end, unsigned int base,
		 uint64_t *v)
{
	const char *p = s;
	uint64_t x = 0;
	int d;

	if ((base == 0 || base == 16) && s[0] == '0' &&
	    (s[1] == 'x' || s[1] == 'X') && digit(s[2], 16) >= 0) {
		base = 16;
		p += 2;
	} else if (base == 0) {
		base = 10;
	}
	if (base < 2 || base > 16)
		return -1;
	if (digit(*p, base) < 0)
		return -1;
	for (; (d = digit(*p, base)) >= 0; p++) {
		if (x > (UINT64_MAX - (uint64_t)d) / base)
			return -1;
		x = x * base + (uint64_t)d;
	}
	*v = x;
	*end = p;
	return 0;
}

int hmb_parse_u64(const char *s, unsigned int flags, uint64_t min,
		  uint64_t max, uint64_t *v)
{
	const char *e;
	uint64_t x;
	unsigned int shift = 0;

	if (!s || hmb_strtou64(s, &e, flags & HMB_NUM_DEC ? 10 : 0, &x))
		return -1;
	if (flags & HMB_NUM_SIZE) {
		switch (*e) {
		case 'k': case 'K': shift = 10; e++; break;
		case 'm': case 'M': shift = 20; e++; break;
		case 'g': case 'G': shift = 30; e++; break;
		default: break;
		}
		if (shift && e[0] == 'i' && e[1] == 'B')
			e += 2;
		else if (*e == 'B')
			e++;
		if (shift && x > (UINT64_MAX >> shift))
			return -1;
		x <<= shift;
	}
	if (*e || x < min || x > max)
		return -1;
	*v = x;
	return 0;
}

int hmb_strtod(const char *s, const char **end, double *v)
{
	const char *p = s;
	char *e;
	double x;

	if (*p == '-' || *p == '+')
		p++;
	/* decimal only: strtod would take white space, hex, inf and nan */
	if (!((*p >= '0' && *p <= '9') || (*p == '.' && p[1] >= '0' &&
					   p[1] <= '9')))
		return -1;
	if (p[0] == '0' && (p[1] == 'x' || p[1] == 'X'))
		return -1;
	errno = 0;
	x = strtod(s, &e);
	if (e == s || errno == ERANGE || !isfinite(x))
		return -1;
	*v = x;
	*end = e;
	return 0;
}

int hmb_parse_double(const char *s, double min, double max, double *v)
{
	const char *e;
	double x;

	if (!s || hmb_strtod(s, &e, &x) || *e || x < min || x > max)
		return -1;
	*v = x;
	return 0;
}
