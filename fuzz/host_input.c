// SPDX-License-Identifier: Apache-2.0
/*
 * The one place the --host harness calls the analyzer's reader of host
 * NVMe events (agent JSON lines or perf script lines): the line entry
 * point of user/analyze/hostev.c, hostev_open() / hostev_line() /
 * hostev_close(), the same calls hostev_load() makes for a file.  The
 * input is cut into lines at '\n' as getline() would (the last line may
 * lack its newline; NUL bytes stay inside their line).
 * Returns the number of commands read (>= 0) or -1 when the input was
 * refused.
 */
#include <string.h>

#include "analyze.h"
#include "hostev.h"
#include "fuzz.h"
#include "host_input.h"

long fuzz_host_parse(const uint8_t *data, size_t size,
		     void (*each)(const struct hmb_host_cmd *c, void *ctx),
		     void *ctx)
{
	struct host_events he;
	struct hostev_reader *r = hostev_open(&he, "<fuzz>");
	const char *p = (const char *)data, *end = p + size;
	int rc = 0;
	long n;

	if (!r)
		return -1;
	while (!rc && p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t len = nl ? (size_t)(nl - p) + 1 : (size_t)(end - p);

		rc = hostev_line(r, p, len);
		p += len;
	}
	if (hostev_close(r, rc))
		return -1;
	for (size_t i = 0; i < he.n; i++)
		each(&he.v[i], ctx);
	n = (long)he.n;
	hostev_free(&he);
	return n;
}
