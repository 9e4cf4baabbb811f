// SPDX-License-Identifier: GPL-2.0
/*
 * bridge.c - what the kernel bridge lost of the agent's rings while the
 * agent ran: the module's per-ring sysfs counters (docs/kernel.md),
 * read when the programs are attached and again at exit.  The BPF side
 * never sees a record the bridge did not emit, so these are the only
 * count of them in the agent's summary and --export's losses rows.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "agent.h"

static const char *const names[BRIDGE_C_COUNT] = {
	[BRIDGE_C_LOST] = "bridge_lost",
	[BRIDGE_C_IGNORED] = "bridge_ignored",
	[BRIDGE_C_CORRUPT] = "bridge_corrupt",
};

const char *bridge_counter_name(int i)
{
	return names[i];
}

int ring_sysfs_u64(unsigned int ring, const char *attr, uint64_t *v)
{
	char path[128], buf[32];
	const char *e;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path),
		 "/sys/class/nvme-hmb-trace/nvme-hmb-trace%u/%s", ring, attr);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -EIO;
	buf[n] = 0;
	if (buf[n - 1] == '\n')
		buf[n - 1] = 0;
	if (hmb_strtou64(buf, &e, 0, v) || *e)
		return -EINVAL;
	return 0;
}

void bridge_start(void)
{
	for (unsigned int r = 0; r < HMB_MAX_RINGS; r++) {
		ag.bridge.have[r] = false;
		/* mapped rings are all the agent's controller's */
		if (!ag.fw_on || !ring_ctrl_of(r))
			continue;
		for (int i = 0; i < BRIDGE_C_COUNT; i++)
			if (ring_sysfs_u64(r, names[i], &ag.bridge.base[r][i]))
				goto next;
		ag.bridge.have[r] = true;
next:		;
	}
}

/* @ring's counter @i since bridge_start(); -1 if it cannot be read. */
static int delta(unsigned int ring, int i, uint64_t *d)
{
	uint64_t now;

	if (!ag.bridge.have[ring] || ring_sysfs_u64(ring, names[i], &now))
		return -1;	/* not there at start, or gone since */
	/* counters restart when the bridge is switched on again */
	*d = now >= ag.bridge.base[ring][i] ? now - ag.bridge.base[ring][i] : now;
	return 0;
}

void bridge_totals(uint64_t *tot)
{
	uint64_t d;

	memset(tot, 0, sizeof(*tot) * BRIDGE_C_COUNT);
	for (unsigned int r = 0; r < HMB_MAX_RINGS; r++)
		for (int i = 0; i < BRIDGE_C_COUNT; i++)
			if (!delta(r, i, &d))
				tot[i] += d;
}

void bridge_export(void)
{
	static char ring_name[HMB_MAX_RINGS][32];
	uint64_t d;

	for (unsigned int r = 0; r < HMB_MAX_RINGS; r++) {
		snprintf(ring_name[r], sizeof(ring_name[r]),
			 "nvme-hmb-trace%u", r);
		for (int i = 0; i < BRIDGE_C_COUNT; i++)
			if (!delta(r, i, &d))
				export_counter_ring("bridge", names[i],
						    ring_name[r], d);
	}
}
