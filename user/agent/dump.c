// SPDX-License-Identifier: GPL-2.0
/*
 * dump.c - hmb-trace-agent -w FILE: every firmware record the BPF side
 * received from the bridge (map "rawrb"), written as the daemon's dump
 * format with its sidecar through libhmbtrace's dump writer, so a live run
 * can be re-read offline (correlate, report, convert, stats).  The records
 * of ring 0 go to FILE, those of ring R > 0 to FILE.ringR.  A record the
 * BPF side could not hand over (rawrb full) is counted there per ring; it
 * shows in the dump as a seq gap (docs/format.md section 10) and the
 * sidecar's closing line consumer_lost=N says how many of a ring's losses
 * were the agent's own.  With --export the same records also go to the
 * fleet store's fw_records table (export.c).
 */
#include <errno.h>
#include <stddef.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "agent.h"
#include "snap.h"
#include "hmb_agent.skel.h"

static void dump_path(unsigned int ring, char *buf, size_t len)
{
	if (ring)
		snprintf(buf, len, "%s.ring%u", ag.env.dump_path, ring);
	else
		snprintf(buf, len, "%s", ag.env.dump_path);
}

/* The ring's size from sysfs (0 when the ring is not there). */
static uint32_t ring_size_of(unsigned int ring)
{
	uint64_t v;

	if (ring_sysfs_u64(ring, "ring_size", &v) || v > UINT32_MAX)
		return 0;
	return (uint32_t)v;
}

void dump_sidecar(unsigned int ring, struct hmb_sidecar *sc)
{
	memset(sc, 0, sizeof(*sc));
	sc->abi_version = HMB_TRACE_ABI_VERSION;
	sc->ring_size = ring_size_of(ring);
	snprintf(sc->source, sizeof(sc->source), "/dev/nvme-hmb-trace%u", ring);
	sc->realtime_ns = hmb_now_ns(CLOCK_REALTIME);
	sc->monotonic_ns = hmb_now_ns(CLOCK_MONOTONIC);
	sc->boottime_ns = hmb_now_ns(CLOCK_BOOTTIME);
}

static int open_ring(unsigned int ring)
{
	struct hmb_sidecar sc;
	struct hmb_error err = { 0 };
	char path[4096];

	dump_sidecar(ring, &sc);
	dump_path(ring, path, sizeof(path));
	if (hmb_dump_writer_open(&ag.dump.w[ring], path, &sc, 0, &err)) {
		fprintf(stderr, PROG ": -w: %s\n", err.msg);
		ag.dump.failed = true;
		return -1;
	}
	return 0;
}

/* FILE (ring 0's dump) exists from the start, even if no record comes. */
int dump_open(void)
{
	if (!ag.env.dump_path)
		return 0;
	if (!ag.fw_on)
		fprintf(stderr, PROG ": -w %s: no firmware records in this mode (%s): the dump stays empty\n",
			ag.env.dump_path, ag.mode_name);
	return open_ring(0);
}

/*
 * A record's time in the flight recorder's window: its own, mapped to the
 * host clock, while the estimate is valid, for the agent may take it
 * seconds after it came (its loop held up by a solve or a report) and the
 * window goes by when things happened; else, and never later than, now.
 */
static uint64_t snap_stamp(const struct hmb_record_hdr *h)
{
	uint64_t now = hmb_now_ns(CLOCK_MONOTONIC);
	double t;

	if (!ag.live.clk.valid)
		return now;
	t = hmb_clock_map(&ag.live.clk, h->ts_ns, h->seq);
	return t > 0 && t < (double)now ? (uint64_t)t : now;
}

/* One record of ring @ring, checked by libhmbtrace's iterator. */
static void dump_one(unsigned int ring, const struct hmb_record *rec)
{
	struct hmb_error err = { 0 };
	struct agent_dump *d = &ag.dump;

	if (ag.env.export_url) {
		if (rec->kind != HMB_KIND_DATA)
			d->export_ignored++;	/* not a row, as offline */
		else
			export_record(ring, &rec->hdr, rec->payload);
	}
	/* --snapshot-dir: the window takes what -w would write */
	if (ag.env.snap_dir)
		snap_fw(ring, &rec->hdr, rec->payload, snap_stamp(&rec->hdr));
	if (!ag.env.dump_path)
		return;
	if (!d->w[ring]) {
		if (d->failed || open_ring(ring)) {
			d->write_errors++;
			return;
		}
	}
	if (hmb_dump_writer_add(d->w[ring], &rec->hdr, rec->payload, &err)) {
		if (err.code == HMB_E_IO) {
			if (!d->failed)
				fprintf(stderr, PROG ": -w: %s\n", err.msg);
			d->failed = true;
			d->write_errors++;
		} else {
			if (!d->refused)
				fprintf(stderr, PROG ": -w: record refused: %s\n",
					err.msg);
			d->refused++;
		}
	}
}

/*
 * ring_buffer callback for map "rawrb": a batch of records (struct
 * hmb_raw_event), walked with libhmbtrace's checks.  A record that fails
 * them ends the walk: it and the ones after it are refused.
 */
int dump_record(void *ctx, void *data, size_t len)
{
	const struct hmb_raw_event *ev = data;
	const size_t hdr = offsetof(struct hmb_raw_event, rec);
	struct hmb_error err = { 0 };
	struct agent_dump *d = &ag.dump;
	struct hmb_buf_iter it;
	struct hmb_record rec;
	uint32_t n = 0;
	int rc;

	(void)ctx;
	if (len < hdr || ev->type != HMB_EV_RAW || ev->ring >= HMB_MAX_RINGS ||
	    ev->len > len - hdr) {
		d->refused += len >= hdr && ev->nrec ? ev->nrec : 1;
		return 0;
	}
	hmb_buf_iter_init(&it, ev->rec, ev->len, 0);
	while ((rc = hmb_buf_iter_next(&it, &rec, &err)) > 0) {
		dump_one(ev->ring, &rec);
		n++;
	}
	if (rc < 0 || n != ev->nrec) {
		if (!d->refused)
			fprintf(stderr, PROG ": -w: records refused: %u of %u: %s\n",
				ev->nrec > n ? ev->nrec - n : 1, ev->nrec,
				rc < 0 ? err.msg : "the event's count is wrong");
		d->refused += ev->nrec > n ? ev->nrec - n : 1;
	}
	return 0;
}

/* Records the BPF side could not hand over for @ring (per-CPU sum). */
static uint64_t ring_lost(unsigned int ring)
{
	uint64_t *v, sum = 0;
	__u32 key = ring;

	if (!ag.skel || ag.nr_cpus <= 0)
		return 0;
	v = calloc((size_t)ag.nr_cpus, sizeof(*v));
	if (v && !bpf_map_lookup_elem(bpf_map__fd(ag.skel->maps.dump_lost),
				      &key, v))
		for (int c = 0; c < ag.nr_cpus; c++)
			sum += v[c];
	free(v);
	return sum;
}

void dump_totals(uint64_t *records, uint64_t *bytes, uint64_t *lost)
{
	*records = *bytes = *lost = 0;
	for (unsigned int r = 0; r < HMB_MAX_RINGS; r++) {
		*records += hmb_dump_writer_records(ag.dump.w[r]);
		*bytes += hmb_dump_writer_size(ag.dump.w[r]);
		*lost += ring_lost(r);
	}
}

/*
 * Close every dump; its sidecar gets the agent's own losses of that ring.
 * A ring that lost records before its dump could be opened gets its dump
 * now, empty, so the loss is written down.  -1 if any write failed.
 */
int dump_close(void)
{
	char lines[160];
	struct hmb_error err = { 0 };

	if (!ag.env.dump_path)
		return 0;
	for (unsigned int r = 0; r < HMB_MAX_RINGS; r++) {
		uint64_t lost = ring_lost(r);

		if (!ag.dump.w[r] && lost && !ag.dump.failed)
			open_ring(r);
		if (!ag.dump.w[r])
			continue;
		snprintf(lines, sizeof(lines),
			 "consumer=hmb-trace-agent\nconsumer_lost=%llu\n",
			 (unsigned long long)lost);
		if (hmb_dump_writer_close(ag.dump.w[r], lines, &err)) {
			fprintf(stderr, PROG ": -w: %s\n", err.msg);
			ag.dump.failed = true;
		}
		ag.dump.w[r] = NULL;
	}
	return ag.dump.failed ? -1 : 0;
}
