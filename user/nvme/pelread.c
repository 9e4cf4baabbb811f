// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * pelread.c - the Persistent Event Log read from a controller by admin
 * passthrough (pel.h, pel_read_dev), in the specification's protocol:
 * establish a reporting context (log specific field 1) reading the header,
 * read the Total Log Length in that context (0), release it (2); and the
 * Timestamp feature that relates the controller's clock to the host's.
 */
#include <stdio.h>
#include <endian.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "passthru.h"
#include "pel.h"

#define CHUNK	4096u	/* one page a command: within any MDTS */

static int status(struct pel_err *e, const char *step, int st)
{
	e->off = 0;
	snprintf(e->msg, sizeof(e->msg), "Get Log Page 0Dh (%s): NVMe status "
		 "0x%03x (type %u, code 0x%02x)", step, st, (st >> 8) & 7,
		 st & 0xff);
	return -1;
}

static uint64_t now_ns(clockid_t id)
{
	struct timespec t;

	clock_gettime(id, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

int pel_clock_dev(int fd, struct pel_clock *c)
{
	uint32_t cdw[6] = { FID_TIMESTAMP, 0, 0, 0, 0, 0 };
	uint8_t ts[8];
	uint64_t raw;
	int st;

	memset(ts, 0, sizeof(ts));
	c->boot_ns = now_ns(CLOCK_BOOTTIME);
	c->mono_before_ns = now_ns(CLOCK_MONOTONIC);
	c->before_ns = now_ns(CLOCK_REALTIME);
	st = pt_admin(fd, OPC_GET_FEAT, 0, ts, sizeof(ts), cdw, NULL);
	c->after_ns = now_ns(CLOCK_REALTIME);
	c->mono_after_ns = now_ns(CLOCK_MONOTONIC);
	if (st)
		return st;
	memcpy(&raw, ts, 8);
	raw = le64toh(raw);
	c->ctrl.raw = raw;
	c->ctrl.ms = raw & ((1ULL << 48) - 1);
	c->ctrl.synch = (raw >> 48) & 1;
	c->ctrl.origin = (raw >> 49) & 7;
	return 0;
}

int pel_read_dev(int fd, size_t max, uint8_t **buf, size_t *len,
		 struct pel_err *e)
{
	uint8_t hdr[PEL_HDR_LEN];
	uint64_t tll, off;
	uint8_t *b;
	int st, rc = 0;

	*buf = NULL;
	*len = 0;
	st = pt_get_log(fd, PEL_LID, PEL_LSP_ESTABLISH, 0, hdr, sizeof(hdr));
	if (st)
		return status(e, "establish context", st);
	memcpy(&tll, hdr + 8, 8);
	tll = le64toh(tll);
	if (tll < PEL_HDR_LEN || tll > max) {
		e->off = 8;
		snprintf(e->msg, sizeof(e->msg), "total log length %llu: not "
			 "in %u..%zu", (unsigned long long)tll, PEL_HDR_LEN,
			 max);
		rc = -1;
		goto release;
	}
	b = malloc((tll + 3) & ~3ULL);
	if (!b) {
		e->off = 0;
		snprintf(e->msg, sizeof(e->msg), "out of memory for %llu bytes",
			 (unsigned long long)tll);
		rc = -1;
		goto release;
	}
	for (off = 0; off < tll; off += CHUNK) {
		uint32_t n = CHUNK;

		if (tll - off < CHUNK)
			n = (uint32_t)((tll - off + 3) & ~3ULL);

		st = pt_get_log(fd, PEL_LID, PEL_LSP_READ, off, b + off, n);
		if (st) {
			free(b);
			rc = status(e, "read", st);
			goto release;
		}
	}
	*buf = b;
	*len = (size_t)tll;
release:
	st = pt_get_log(fd, PEL_LID, PEL_LSP_RELEASE, 0, hdr, sizeof(hdr));
	if (st && !rc) {
		free(*buf);
		*buf = NULL;
		*len = 0;
		return status(e, "release context", st);
	}
	return rc;
}
