// SPDX-License-Identifier: Apache-2.0
/*
 * The one place the --host harness calls the analyzer's reader of host
 * NVMe events (agent JSON lines or perf script lines).  Today that is
 * hostev_load() in user/analyze/hostev.c, which reads a path; when the
 * reader changes (a json-c based one), only this function is retargeted.
 * Returns the number of commands read (>= 0) or -1 when the input was
 * refused.
 */
#include "analyze.h"
#include "hostev.h"
#include "fuzz.h"
#include "host_input.h"

long fuzz_host_parse(const uint8_t *data, size_t size,
		     void (*each)(const struct host_cmd *c, void *ctx),
		     void *ctx)
{
	struct host_events he;
	char path[64];
	long n = -1;
	int fd;

	fd = fz_memfd(data, size);
	if (fd < 0)
		return -1;
	fz_fd_path(fd, path, sizeof(path));
	if (hostev_load(&he, path) == 0) {
		for (size_t i = 0; i < he.n; i++)
			each(&he.v[i], ctx);
		n = (long)he.n;
		hostev_free(&he);
	}
	close(fd);
	return n;
}
