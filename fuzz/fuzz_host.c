// SPDX-License-Identifier: Apache-2.0
/*
 * --host input of hmb-trace-analyze correlate/report: hmb-trace-agent's
 * JSON lines ({"type":"cmd","cmd":{...}}) or perf script lines of
 * nvme:nvme_setup_cmd / nvme:nvme_complete_rq, through the thin wrapper in
 * host_input.c.  Every command read must be self-consistent: a NUL-
 * terminated opcode name, completion not before submission.
 */
#include <string.h>

#include "hostev.h"
#include "fuzz.h"
#include "host_input.h"

static void each(const struct host_cmd *c, void *ctx)
{
	size_t *n = ctx;

	FZ_ASSERT(memchr(c->opc, '\0', sizeof(c->opc)));
	FZ_ASSERT(c->complete_ns >= c->submit_ns);
	(*n)++;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t n = 0;
	long got = fuzz_host_parse(data, size, each, &n);

	FZ_ASSERT(got < 0 || (size_t)got == n);
	return 0;
}
