// SPDX-License-Identifier: Apache-2.0
/*
 * vm-nvme-hmb: drive the Host Memory Buffer of the VM bench's NVMe
 * controller model from inside the guest, by admin passthrough on the
 * controller's character device (root).  See scripts/vm/README.md.
 *
 *   vm-nvme-hmb id DEV          Identify Controller: HMPRE, HMMIN, HMMINDS, HMMAXD
 *   vm-nvme-hmb get DEV         Get Features 0Dh: EHM and the attributes
 *   vm-nvme-hmb set DEV CDW11 HSIZE HMDLA HMDLEC
 *                               a raw Set Features 0Dh
 *   vm-nvme-hmb craft DEV CASE  Set Features 0Dh EHM=1 with a descriptor list
 *                               built in locked memory (CASE below); a list
 *                               the controller takes is disabled again at once
 *   vm-nvme-hmb clock DEV [N]   the controller's clocks (vendor Get Features
 *                               C0h) against CLOCK_MONOTONIC, best of N
 *   vm-nvme-hmb step DEV DELAY_US STEP_NS
 *                               arm a firmware clock step (vendor Set Features C0h)
 *   vm-nvme-hmb timestamp DEV [MS [N]]
 *                               Set Features Timestamp (0Eh) to MS (default:
 *                               CLOCK_REALTIME in ms, read just before); N
 *                               times (MS, MS + 1, ...), stopping at an error
 *   vm-nvme-hmb ring DEV [OPTIONS]
 *                               hand the controller an HMB whose trace slice
 *                               is this process's locked memory and consume
 *                               its ring with libhmbtrace (see usage())
 *
 * Every answer is one JSON object on stdout.  "status" is the NVMe status
 * the ioctl returned (SC | SCT << 8 | DNR 0x4000; 0 = success).  Exit 0
 * when the commands completed (whatever their status), 1 on a system error
 * (named on stderr), 2 on bad usage.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "hmbtrace.h"
#include "hmbtrace_util.h"
#include "passthru.h"

#define FID_CLOCK	0xc0

static const char *prog = "vm-nvme-hmb";

static void usage(void)
{
	fprintf(stderr,
"usage: vm-nvme-hmb id DEV\n"
"       vm-nvme-hmb get DEV\n"
"       vm-nvme-hmb set DEV CDW11 HSIZE HMDLA HMDLEC\n"
"       vm-nvme-hmb craft DEV CASE\n"
"           CASE: valid twice zero-entries too-many zero-size hsize-mismatch\n"
"                 below-hmmin unaligned list-unaligned iomem\n"
"       vm-nvme-hmb clock DEV [N]\n"
"       vm-nvme-hmb step DEV DELAY_US STEP_NS\n"
"       vm-nvme-hmb timestamp DEV [MS [N]]\n"
"       vm-nvme-hmb ring DEV [--ring-size N] [--seconds S] [--dump FILE]\n"
"                   [--pause-ms M] [--pause-until-overflow] [--laps L]\n"
"                   [--until-frozen] [--ready FILE]\n"
"  ring: the HMB the controller gets is filler pages plus a trace slice in\n"
"  this process's locked memory (Linux's own HMB is disabled first and\n"
"  given back at the end); the ring (--ring-size, default 2048) is consumed\n"
"  with libhmbtrace and its records written verbatim to --dump.  It ends\n"
"  after --seconds (default 10; then Set Features EHM=0 must set FROZEN),\n"
"  on SIGINT/SIGTERM, or with --until-frozen when the controller sets FROZEN\n"
"  itself (a reset or shutdown the caller causes; Linux then owns the HMB\n"
"  again), or with --laps once the controller's head has gone L times\n"
"  round the ring and a wrap marker was read (--seconds is then the\n"
"  deadline).  --pause-ms stops\n"
"  consuming for M ms at the start (overflow); with --pause-until-overflow\n"
"  the pause ends as soon as the controller sets OVERFLOWED (M: its limit).\n"
"  --ready FILE is written once the controller has the ring.\n"
"examples:\n"
"  vm-nvme-hmb id /dev/nvme0\n"
"  vm-nvme-hmb set /dev/nvme0 0 0 0 0        # disable the HMB (EHM=0)\n"
"  vm-nvme-hmb craft /dev/nvme0 zero-size    # expect status 16386 (0x4002)\n"
"  vm-nvme-hmb clock /dev/nvme0 50\n"
"  vm-nvme-hmb ring /dev/nvme0 --seconds 5 --dump /results/x/ring.bin\n");
	exit(2);
}

static uint64_t num(const char *s, const char *what)
{
	uint64_t v;

	if (hmb_parse_u64(s, 0, 0, UINT64_MAX, &v)) {
		fprintf(stderr, "%s: bad %s '%s'\n", prog, what, s);
		exit(2);
	}
	return v;
}

static int64_t snum(const char *s, const char *what)
{
	char *end;
	long long v;

	errno = 0;
	v = strtoll(s, &end, 0);
	if (errno || end == s || *end) {
		fprintf(stderr, "%s: bad %s '%s'\n", prog, what, s);
		exit(2);
	}
	return v;
}

void die(const char *what)
{
	fprintf(stderr, "%s: %s: %s\n", prog, what, strerror(errno));
	exit(1);
}

/* ------------------------ the controller (admin commands: passthru.h) */

static int dev_fd;
static const char *dev_path;

/* ---------------------------------------------- locked, physical memory */

struct pmem {
	uint8_t *va;
	size_t len;
	uint64_t *pa;		/* per page */
};

/* @pages locked pages, zeroed; with @contig, physically contiguous. */
static void pmem_alloc(struct pmem *m, size_t pages, bool contig)
{
	struct pt_mem pm;

	m->pa = calloc(pages, sizeof(*m->pa));
	if (!m->pa)
		die("calloc");
	switch (pt_mem_alloc(&pm, pages, contig, m->pa)) {
	case 0:
		break;
	case PT_MEM_TOO_BIG:
		fprintf(stderr, "%s: at most 2 MiB of contiguous memory\n", prog);
		exit(2);
	case PT_MEM_NO_PFN:
		fprintf(stderr, "%s: page at %p not present or no PFN (root needed)\n",
			prog, pm.bad);
		exit(1);
	default:
		fprintf(stderr, "%s: no physically contiguous %zu pages "
			"(transparent huge pages off?); use a smaller --ring-size\n",
			prog, pages);
		exit(1);
	}
	m->va = pm.va;
	m->len = pages * PAGE;
}

/* ---------------------------------------------------------- subcommands */

static int cmd_id(void)
{
	struct id_hmb id;

	pt_identify(dev_fd, &id);
	printf("{\"status\":%d,\"hmpre\":%" PRIu32 ",\"hmmin\":%" PRIu32
	       ",\"hmminds\":%" PRIu32 ",\"hmmaxd\":%u}\n", id.status, id.hmpre,
	       id.hmmin, id.hmminds, id.hmmaxd);
	return 0;
}

static int cmd_get(void)
{
	struct hmb_attrs a;

	pt_get_hmb(dev_fd, &a);
	printf("{\"status\":%d,\"ehm\":%" PRIu32 ",\"hsize\":%" PRIu32
	       ",\"hmdla\":%" PRIu64 ",\"hmdlec\":%" PRIu32 "}\n", a.status,
	       a.ehm, a.hsize, a.hmdla, a.hmdlec);
	return 0;
}

/*
 * The bus address of the controller's BAR0 (its registers), from sysfs:
 * the first line of /sys/class/nvme/NAME/device/resource.
 */
static uint64_t ctrl_bar0(void)
{
	const char *name = strrchr(dev_path, '/');
	char path[256];
	unsigned long long start = 0, end = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/sys/class/nvme/%s/device/resource",
		 name ? name + 1 : dev_path);
	f = fopen(path, "r");
	if (!f)
		die(path);
	if (fscanf(f, "%llx %llx", &start, &end) != 2 || !start || end <= start) {
		fprintf(stderr, "%s: %s: no BAR0 in its first line\n", prog, path);
		exit(1);
	}
	fclose(f);
	return start;
}

/*
 * One defect per CASE, everything else valid: HSIZE >= HMMIN, entries
 * page-aligned and one page each, HSIZE the sum of their sizes.  iomem:
 * the last entry (the trace slice) is the controller's own BAR0.
 */
static int cmd_craft(const char *which)
{
	struct id_hmb id;
	struct pmem list, bufs;
	uint32_t n, i, hsize = 0, maxd;
	uint64_t hmdla;
	int st, st2 = -1, st_off = -1;

	pt_identify(dev_fd, &id);
	maxd = id.hmmaxd ? id.hmmaxd : 4096;
	n = id.hmmin > 1 ? id.hmmin : 2;
	if (!strcmp(which, "too-many")) {
		n = maxd + 1;
	} else if (!strcmp(which, "zero-size")) {
		n = (id.hmmin ? id.hmmin : 1) + 1;	/* one entry of 0 pages */
	} else if (!strcmp(which, "below-hmmin")) {
		if (id.hmmin < 2) {
			fprintf(stderr, "%s: below-hmmin needs HMMIN >= 2 (it is %u)\n",
				prog, id.hmmin);
			return 1;
		}
		n = id.hmmin - 1;
	} else if (strcmp(which, "valid") && strcmp(which, "twice") &&
		   strcmp(which, "zero-entries") && strcmp(which, "hsize-mismatch") &&
		   strcmp(which, "unaligned") && strcmp(which, "list-unaligned") &&
		   strcmp(which, "iomem")) {
		fprintf(stderr, "%s: unknown case '%s'\n", prog, which);
		usage();
	}
	if (n > maxd && strcmp(which, "too-many")) {
		fprintf(stderr, "%s: HMMIN %u pages need more than HMMAXD %u entries\n",
			prog, id.hmmin, maxd);
		return 1;
	}
	pmem_alloc(&bufs, n, false);
	pmem_alloc(&list, (n * 16 + 8 + PAGE - 1) / PAGE, true);
	for (i = 0; i < n; i++) {
		pt_put_desc(list.va, i, bufs.pa[i], 1);
		hsize++;
	}
	hmdla = list.pa[0];
	if (!strcmp(which, "zero-entries")) {
		n = 0;
	} else if (!strcmp(which, "zero-size")) {
		/* HSIZE stays the sum of the sizes and at least HMMIN */
		pt_put_desc(list.va, n - 1, bufs.pa[n - 1], 0);
		hsize = n - 1;
	} else if (!strcmp(which, "hsize-mismatch")) {
		hsize += 1;
	} else if (!strcmp(which, "unaligned")) {
		pt_put_desc(list.va, n / 2, bufs.pa[n / 2] + 512, 1);
	} else if (!strcmp(which, "list-unaligned")) {
		memmove(list.va + 8, list.va, (size_t)n * 16);
		hmdla += 8;
	} else if (!strcmp(which, "iomem")) {
		pt_put_desc(list.va, n - 1, ctrl_bar0(), 1);
	}
	st = pt_set_hmb(dev_fd, 1, hsize, hmdla, n);
	if (!st && !strcmp(which, "twice"))
		st2 = pt_set_hmb(dev_fd, 1, hsize, hmdla, n);
	if (!st)	/* the controller took our memory: take it back now */
		st_off = pt_set_hmb(dev_fd, 0, 0, 0, 0);
	printf("{\"case\":\"%s\",\"status\":%d,\"second_status\":%d,"
	       "\"disable_status\":%d,\"hsize\":%" PRIu32 ",\"hmdlec\":%" PRIu32
	       ",\"hmdla\":%" PRIu64 "}\n", which, st, st2, st_off, hsize, n, hmdla);
	return 0;
}

static int cmd_clock(unsigned n)
{
	static uint8_t buf[4096] __attribute__((aligned(4096)));
	uint32_t cdw[6] = { FID_CLOCK, 0, 0, 0, 0, 0 };
	uint64_t best_rtt = UINT64_MAX, b0 = 0, b1 = 0, virt = 0, fw = 0, v0 = 0;
	uint32_t seq = 0, flags = 0;
	unsigned i;
	int st = 0;

	for (i = 0; i < n; i++) {
		uint64_t t0 = hmb_now_ns(CLOCK_MONOTONIC), t1;

		st = pt_admin(dev_fd, OPC_GET_FEAT, 0, buf, 32, cdw, NULL);
		t1 = hmb_now_ns(CLOCK_MONOTONIC);
		if (st)
			break;
		if (t1 - t0 < best_rtt) {
			best_rtt = t1 - t0;
			b0 = t0;
			b1 = t1;
			memcpy(&virt, buf, 8);
			memcpy(&fw, buf + 8, 8);
			memcpy(&v0, buf + 16, 8);
			memcpy(&seq, buf + 24, 4);
			memcpy(&flags, buf + 28, 4);
		}
	}
	printf("{\"status\":%d,\"samples\":%u,\"mono_ns\":%" PRIu64 ",\"rtt_ns\":%"
	       PRIu64 ",\"virt_ns\":%" PRIu64 ",\"fw_ns\":%" PRIu64 ",\"v0_ns\":%"
	       PRIu64 ",\"next_seq\":%" PRIu32 ",\"flags\":%" PRIu32 "}\n", st, i,
	       b0 / 2 + b1 / 2, best_rtt == UINT64_MAX ? 0 : best_rtt, virt, fw,
	       v0, seq, flags);
	return 0;
}

static int cmd_step(uint32_t delay_us, int64_t step_ns)
{
	uint32_t cdw[6] = { FID_CLOCK, delay_us, (uint32_t)step_ns,
			    (uint32_t)((uint64_t)step_ns >> 32), 0, 0 };

	printf("{\"status\":%d}\n", pt_admin(dev_fd, OPC_SET_FEAT, 0, NULL, 0, cdw, NULL));
	return 0;
}

/*
 * Set Features Timestamp: MS (48 bits), or the host's realtime clock now;
 * N times, MS + i the i-th.  "ms" is the last value set, "done" how many.
 */
static int cmd_timestamp(int argc, char **argv)
{
	static uint8_t buf[4096] __attribute__((aligned(4096)));
	uint32_t cdw[6] = { FID_TIMESTAMP, 0, 0, 0, 0, 0 };
	uint64_t ms = argc > 3 ? num(argv[3], "MS") :
		      hmb_now_ns(CLOCK_REALTIME) / 1000000;
	uint64_t n = argc > 4 ? num(argv[4], "N") : 1, i, v = ms;
	int st = 0;

	for (i = 0; i < n && !st; i++) {
		v = ms + i;
		memset(buf, 0, 8);
		memcpy(buf, &v, 6);
		st = pt_admin(dev_fd, OPC_SET_FEAT, 0, buf, 8, cdw, NULL);
	}
	printf("{\"status\":%d,\"ms\":%" PRIu64 ",\"done\":%" PRIu64 "}\n",
	       st, v, st ? i - 1 : i);
	return 0;
}

/* ------------------------------------------------------------ ring mode */

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

struct ring_run {
	struct hmb_consumer *c;
	struct hmb_acct *acct;
	FILE *dump;
	uint64_t dump_bytes;
};

/* Copy what is there; returns bytes or exits on a validation error. */
static uint64_t drain(struct ring_run *r)
{
	struct hmb_error err = { 0 };
	struct hmb_record rec;
	uint64_t avail, got = 0;
	int k;

	if (hmb_consumer_poll(r->c, &avail, &err) < 0) {
		fprintf(stderr, "%s: ring: %s\n", prog, err.msg);
		exit(1);
	}
	while ((k = hmb_consumer_next(r->c, &rec, &err)) == 1) {
		if (r->dump && fwrite(rec.raw, 1, rec.raw_len, r->dump) != rec.raw_len)
			die("writing the dump");
		r->dump_bytes += rec.raw_len;
		got += rec.raw_len;
		hmb_acct_add(r->acct, &rec);
	}
	if (k < 0) {
		fprintf(stderr, "%s: ring: %s\n", prog, err.msg);
		exit(1);
	}
	if (got && hmb_consumer_commit(r->c, &err) < 0) {
		fprintf(stderr, "%s: ring: %s\n", prog, err.msg);
		exit(1);
	}
	return got;
}

static int cmd_ring(int argc, char **argv)
{
	uint32_t rs = 2048, secs = 10, pause_ms = 0, laps = 0;
	bool pause_until_overflow = false;
	const char *dump_path = NULL, *ready = NULL;
	bool until_frozen = false;
	struct hmb_producer prod;
	struct hmb_error err = { 0 };
	struct ring_run r = { 0 };
	struct hmb_attrs linux_hmb;
	struct id_hmb id;
	struct pmem filler, slice, list;
	uint32_t slice_pages, nfill, maxd, hsize, i, flags;
	uint64_t t0, deadline;
	int st_off_linux, st_on, st_off = -1, st_restore = -1;
	bool frozen_by_ctrl = false, frozen = false, overflowed = false;
	const char *ended = "seconds";

	for (i = 0; i < (uint32_t)argc; i++) {
		const char *a = argv[i];

		if (!strcmp(a, "--until-frozen")) {
			until_frozen = true;
			continue;
		}
		if (!strcmp(a, "--pause-until-overflow")) {
			pause_until_overflow = true;
			continue;
		}
		if (i + 1 >= (uint32_t)argc)
			usage();
		if (!strcmp(a, "--ring-size"))
			rs = num(argv[++i], "--ring-size");
		else if (!strcmp(a, "--seconds"))
			secs = num(argv[++i], "--seconds");
		else if (!strcmp(a, "--pause-ms"))
			pause_ms = num(argv[++i], "--pause-ms");
		else if (!strcmp(a, "--laps"))
			laps = num(argv[++i], "--laps");
		else if (!strcmp(a, "--dump"))
			dump_path = argv[++i];
		else if (!strcmp(a, "--ready"))
			ready = argv[++i];
		else
			usage();
	}
	if (rs < 64 || (rs & (rs - 1)) || rs > (2u << 20) - 64) {
		fprintf(stderr, "%s: --ring-size must be a power of two, 64 .. 1 MiB\n", prog);
		return 2;
	}
	pt_identify(dev_fd, &id);
	if (!id.hmpre) {
		fprintf(stderr, "%s: the controller asks for no HMB (HMPRE 0)\n", prog);
		return 1;
	}
	maxd = id.hmmaxd ? id.hmmaxd : 4096;
	slice_pages = (64 + rs + PAGE - 1) / PAGE;
	nfill = id.hmmin > slice_pages ? id.hmmin - slice_pages : 1;
	if (nfill + 1 > maxd) {
		fprintf(stderr, "%s: HMMIN %u pages take more than HMMAXD %u entries of a page\n",
			prog, id.hmmin, maxd);
		return 1;
	}
	pmem_alloc(&filler, nfill, false);
	pmem_alloc(&slice, slice_pages, true);
	pmem_alloc(&list, 1 + (nfill + 1) * 16 / PAGE, true);
	for (i = 0; i < nfill; i++)
		pt_put_desc(list.va, i, filler.pa[i], 1);
	pt_put_desc(list.va, nfill, slice.pa[0], slice_pages);	/* the last */
	hsize = nfill + slice_pages;
	if (hmb_producer_init(&prod, slice.va, slice.len, rs, 0, &err)) {
		fprintf(stderr, "%s: ring header: %s\n", prog, err.msg);
		return 1;
	}
	r.acct = calloc(1, sizeof(*r.acct));
	if (!r.acct)
		die("calloc");
	hmb_acct_init(r.acct, 0, NULL, NULL);
	if (dump_path) {
		r.dump = fopen(dump_path, "w");
		if (!r.dump)
			die(dump_path);
	}
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	signal(SIGHUP, on_signal);

	pt_get_hmb(dev_fd, &linux_hmb);
	st_off_linux = pt_set_hmb(dev_fd, 0, 0, 0, 0);
	st_on = pt_set_hmb(dev_fd, 1, hsize, list.pa[0], nfill + 1);
	if (st_on) {
		if (linux_hmb.ehm)
			st_restore = pt_set_hmb(dev_fd, 3, linux_hmb.hsize,
						linux_hmb.hmdla, linux_hmb.hmdlec);
		printf("{\"error\":\"the controller refused the HMB\",\"disable_status\":%d,"
		       "\"enable_status\":%d,\"restore_status\":%d}\n", st_off_linux,
		       st_on, st_restore);
		return 1;
	}
	if (hmb_consumer_open(&r.c, slice.va, 64 + rs, hmb_publish_store,
			      (void *)slice.va, &err)) {
		fprintf(stderr, "%s: consumer: %s\n", prog, err.msg);
		pt_set_hmb(dev_fd, 0, 0, 0, 0);
		return 1;
	}
	if (ready) {
		FILE *f = fopen(ready, "w");

		if (!f || fprintf(f, "{\"slice\":%" PRIu64 ",\"ring_size\":%" PRIu32 "}\n",
				  slice.pa[0], rs) < 0 || fclose(f))
			die(ready);
	}
	t0 = hmb_now_ns(CLOCK_MONOTONIC);
	deadline = t0 + (uint64_t)secs * 1000000000u;
	while (!stop) {
		uint64_t now = hmb_now_ns(CLOCK_MONOTONIC);

		if (now >= deadline)
			break;
		flags = hmb_consumer_flags(r.c);
		overflowed |= flags & HMB_RING_FLAG_OVERFLOWED;
		if (pause_ms && now < t0 + (uint64_t)pause_ms * 1000000u &&
		    !(pause_until_overflow && overflowed)) {
			usleep(1000);
			continue;
		}
		pause_ms = 0;	/* a pause that ended does not come back */
		if (laps && hmb_consumer_head(r.c) >= (uint64_t)laps * rs &&
		    r.acct->wrap_markers) {
			ended = "laps";
			break;
		}
		if (!drain(&r)) {
			if (flags & HMB_RING_FLAG_FROZEN) {
				/* the controller stopped (reset, shutdown) */
				frozen_by_ctrl = frozen = true;
				if (until_frozen) {
					ended = "frozen";
					break;
				}
			}
			usleep(2000);
		}
	}
	if (stop)
		ended = "signal";
	if (!frozen_by_ctrl) {
		/* we end it: EHM=0 must freeze the ring, then Linux's HMB back */
		st_off = pt_set_hmb(dev_fd, 0, 0, 0, 0);
		frozen = hmb_consumer_flags(r.c) & HMB_RING_FLAG_FROZEN;
		if (linux_hmb.ehm)
			st_restore = pt_set_hmb(dev_fd, 3, linux_hmb.hsize,
						linux_hmb.hmdla, linux_hmb.hmdlec);
	}
	while (drain(&r))
		;
	if (r.dump && fclose(r.dump))
		die(dump_path);
	flags = hmb_consumer_flags(r.c);
	printf("{\"ended\":\"%s\",\"frozen\":%s,\"frozen_by_controller\":%s,"
	       "\"overflowed_seen\":%s,"
	       "\"flags\":%" PRIu32 ",\"head\":%" PRIu64 ",\"ring_size\":%" PRIu32
	       ",\"slice\":%" PRIu64 ",\"hsize\":%" PRIu32 ",\"hmdlec\":%" PRIu32
	       ",\"records\":%" PRIu64 ",\"markers\":%" PRIu64 ",\"lost\":%" PRIu64
	       ",\"gaps\":%" PRIu64 ",\"duplicates\":%" PRIu64 ",\"resets\":%" PRIu64
	       ",\"dump_bytes\":%" PRIu64 ",\"enable_status\":%d,\"disable_status\":%d"
	       ",\"restore_status\":%d,\"linux_ehm\":%" PRIu32 "}\n",
	       ended, frozen ? "true" : "false", frozen_by_ctrl ? "true" : "false",
	       overflowed ? "true" : "false",
	       flags, hmb_consumer_head(r.c), rs, slice.pa[0], hsize, nfill + 1,
	       r.acct->records, r.acct->wrap_markers, r.acct->lost, r.acct->gaps,
	       r.acct->duplicates, r.acct->resets, r.dump_bytes, st_on, st_off,
	       st_restore, linux_hmb.ehm);
	hmb_consumer_close(r.c);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 3)
		usage();
	dev_path = argv[2];
	dev_fd = open(argv[2], O_RDONLY);
	if (dev_fd < 0)
		die(argv[2]);
	if (!strcmp(argv[1], "id") && argc == 3)
		return cmd_id();
	if (!strcmp(argv[1], "get") && argc == 3)
		return cmd_get();
	if (!strcmp(argv[1], "set") && argc == 7) {
		int st = pt_set_hmb(dev_fd, num(argv[3], "CDW11"),
				    num(argv[4], "HSIZE"), num(argv[5], "HMDLA"),
				    num(argv[6], "HMDLEC"));

		printf("{\"status\":%d}\n", st);
		return 0;
	}
	if (!strcmp(argv[1], "craft") && argc == 4)
		return cmd_craft(argv[3]);
	if (!strcmp(argv[1], "clock") && (argc == 3 || argc == 4))
		return cmd_clock(argc == 4 ? num(argv[3], "N") : 20);
	if (!strcmp(argv[1], "step") && argc == 5)
		return cmd_step(num(argv[3], "DELAY_US"), snum(argv[4], "STEP_NS"));
	if (!strcmp(argv[1], "timestamp") && argc >= 3 && argc <= 5)
		return cmd_timestamp(argc, argv);
	if (!strcmp(argv[1], "ring"))
		return cmd_ring(argc - 3, argv + 3);
	usage();
	return 2;
}
