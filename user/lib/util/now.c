// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * now.c - the one reading of a clock for every nvme-hmb-trace tool
 * (hmbtrace_util.h): the sidecar's and the exporter's clock stamps, the
 * intervals and deadlines of the daemon, the agent and the simulator.
 */
#include <time.h>

#include "hmbtrace_util.h"

uint64_t hmb_now_ns(clockid_t id)
{
	struct timespec ts = { 0 };

	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

double hmb_now_s(clockid_t id)
{
	struct timespec ts = { 0 };

	clock_gettime(id, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}
