// SPDX-License-Identifier: GPL-2.0
/*
 * hmb-trace-conform: point it at an NVMe controller (/dev/nvmeX) and it
 * checks the controller's side of the HMB trace contract
 * (docs/format.md 16 and the producer rules of sections 4 to 11),
 * printing TAP and, with --json, a verdict to attach to a bug.  It says
 * what it would write where and does nothing without --yes.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "conform.h"
#include "hmbtrace_util.h"

#define PROG "hmb-trace-conform"

static void usage(void)
{
	printf(
"usage: hmb-trace-conform /dev/nvmeX [--yes] [--json FILE] [--io-secs N]\n"
"                         [--ring-size BYTES] [--ns /dev/nvmeXnY] [--dict FILE]\n"
"                         [--no-shutdown]\n"
"Check an NVMe controller's Host Memory Buffer trace ring against\n"
"docs/format.md (section 16 and the producer rules): Identify (HMPRE, HMMIN,\n"
"HMMINDS, HMMAXD), Set/Get Features 0Dh with a correct and with malformed\n"
"descriptor lists, a trace ring in this process's locked memory adopted by\n"
"the controller, I/O, every record checked, OVERFLOWED with a stalled\n"
"consumer, a tail it must not use, FROZEN on EHM=0, on a controller reset\n"
"and on a shutdown, re-initialisation.\n"
"Needs root.  Without --yes it only says what it would write where.\n"
"  --yes             go on: hand the controller this process's memory as its\n"
"                    HMB (the driver's own HMB is disabled for the run and\n"
"                    set up again by the reset at the end), read blocks of\n"
"                    the namespace and write the same bytes back, reset the\n"
"                    controller, then unbind the driver from the PCI function\n"
"                    (a shutdown: the namespaces' block devices go away) and\n"
"                    bind it again\n"
"  --json FILE       write the verdict as JSON (rule, section, first failing\n"
"                    record's seq and cursor)\n"
"  --io-secs N       seconds of I/O with the ring adopted (default 3)\n"
"  --ring-size BYTES record area, a power of two, 64 .. 1 MiB (default 16384)\n"
"  --ns DEV          the namespace's block device (default: the controller's\n"
"                    first, /dev/nvmeXnY)\n"
"  --dict FILE       event dictionary for payload lengths (default: the\n"
"                    shipped share/hmb-events.dict, built in)\n"
"  --no-shutdown     leave the driver bound: FROZEN on shutdown not checked\n"
"                    (also so when a namespace is mounted or held)\n"
"  --help            this text\n"
"  --version         the version\n"
"Exit: 0 every rule held, 1 a rule failed, 2 refused (usage, not root, no\n"
"HMB, no --yes), 3 a system error stopped the run.\n"
"examples:\n"
"  hmb-trace-conform /dev/nvme1                 # what it would do, nothing written\n"
"  hmb-trace-conform /dev/nvme1 --yes --json verdict.json\n"
"  hmb-trace-conform /dev/nvme1 --yes --io-secs 10 --ring-size 65536\n");
}

static uint32_t num(const char *s, const char *what, uint64_t lo, uint64_t hi)
{
	uint64_t v;

	if (hmb_parse_u64(s, 0, lo, hi, &v))
		hmb_usage_exit(PROG, NULL, "%s must be a number from %llu to %llu, "
			       "not '%s'", what, (unsigned long long)lo,
			       (unsigned long long)hi, s);
	return (uint32_t)v;
}

static void parse(struct conform *cf, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "yes", no_argument, NULL, 'y' },
		{ "json", required_argument, NULL, 'j' },
		{ "io-secs", required_argument, NULL, 'i' },
		{ "ring-size", required_argument, NULL, 'r' },
		{ "ns", required_argument, NULL, 'n' },
		{ "dict", required_argument, NULL, 'd' },
		{ "no-shutdown", no_argument, NULL, 's' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 }
	};
	const char *dict = NULL, *text;
	struct hmb_error err;
	size_t len;
	int o;

	opterr = 0;
	while ((o = getopt_long(argc, argv, ":", opts, NULL)) != -1) {
		switch (o) {
		case 'y': cf->yes = true; break;
		case 'j': cf->json = optarg; break;
		case 'i': cf->io_secs = num(optarg, "--io-secs", 1, 3600); break;
		case 'r': cf->ring_size = num(optarg, "--ring-size", 64, 1u << 20); break;
		case 'n': cf->ns = optarg; break;
		case 'd': dict = optarg; break;
		case 's': cf->no_shutdown = true; break;
		case 'h': usage(); exit(0);
		case 'V': printf("hmb-trace-conform %s\n", HMB_VERSION); exit(0);
		default: hmb_usage_getopt(PROG, NULL, o, argv); exit(2);
		}
	}
	if (optind == argc)
		hmb_usage_exit(PROG, NULL, "the controller's device (/dev/nvmeX) is required");
	if (optind < argc - 1)
		hmb_usage_exit(PROG, NULL, "one controller only: '%s' is one too many",
			       argv[optind + 1]);
	cf->dev = argv[optind];
	if (cf->ring_size & (cf->ring_size - 1))
		hmb_usage_exit(PROG, NULL, "--ring-size must be a power of two, not %u",
			       cf->ring_size);
	text = hmb_dict_builtin(&len);
	if (dict ? hmb_dict_load(&cf->dict, dict, &err) :
		   hmb_dict_parse(&cf->dict, text, len, "hmb-events.dict", &err)) {
		fprintf(stderr, "hmb-trace-conform: %s\n", err.msg);
		exit(2);
	}
}

/* How the tool's HMB is cut: filler chunks for HMMIN, the slice last. */
static void size_hmb(struct conform *cf)
{
	const struct id_hmb *id = &cf->id;
	uint32_t maxd = id->hmmaxd ? id->hmmaxd : 4096, need, lpages, ents;

	cf->slice_pages = (HMB_RECORD_AREA_OFF + cf->ring_size + PAGE - 1) / PAGE;
	need = id->hmmin > cf->slice_pages ? id->hmmin - cf->slice_pages : 1;
	if (maxd < 2) {
		fprintf(stderr, "hmb-trace-conform: HMMAXD %u leaves no descriptor "
			"for a trace slice\n", id->hmmaxd);
		exit(2);
	}
	cf->chunk_pages = (need + maxd - 2) / (maxd - 1);
	if (cf->chunk_pages < id->hmminds)
		cf->chunk_pages = id->hmminds;
	if (cf->chunk_pages > CHUNK_MAX || cf->slice_pages > CHUNK_MAX) {
		fprintf(stderr, "hmb-trace-conform: HMMIN %u pages in at most %u "
			"descriptors needs buffers of %u pages; this tool's buffers "
			"are at most one 2 MiB huge page\n", id->hmmin, maxd,
			cf->chunk_pages);
		exit(2);
	}
	cf->nfill = (need + cf->chunk_pages - 1) / cf->chunk_pages;
	cf->hsize = cf->nfill * cf->chunk_pages + cf->slice_pages;
	ents = (cf->nfill + 2 > (uint32_t)id->hmmaxd + 1) ? cf->nfill + 2 :
	       (uint32_t)id->hmmaxd + 1;
	lpages = (ents * 16 + 16 + PAGE - 1) / PAGE;
	cf->fill = calloc(cf->nfill, sizeof(*cf->fill));
	if (!cf->fill)
		die("calloc");
	for (uint32_t i = 0; i < cf->nfill; i++)
		chunk_alloc(&cf->fill[i], cf->chunk_pages);
	chunk_alloc(&cf->slice, cf->slice_pages);
	chunk_alloc(&cf->list, lpages);
}

static void plan(const struct conform *cf)
{
	printf("# %s: HMPRE %u, HMMIN %u, HMMINDS %u pages, HMMAXD %u\n", cf->dev,
	       cf->id.hmpre, cf->id.hmmin, cf->id.hmminds, cf->id.hmmaxd);
	printf("# the driver's HMB now: EHM %u, HSIZE %u pages, list 0x%llx, %u "
	       "descriptors\n", cf->linux_hmb.ehm, cf->linux_hmb.hsize,
	       (unsigned long long)cf->linux_hmb.hmdla, cf->linux_hmb.hmdlec);
	printf("# would disable it (Set Features 0Dh EHM=0) and give the controller\n"
	       "#   a descriptor list of %u entries (%u bytes) at bus address 0x%llx:\n"
	       "#   %u buffer(s) of %u pages (first at 0x%llx) and last the trace\n"
	       "#   slice, %u pages at 0x%llx (ring header there, ring_size %u);\n"
	       "#   HSIZE %u pages; plus malformed lists at the same addresses, one\n"
	       "#   with an entry over BAR0 0x%llx (the controller must refuse it),\n"
	       "#   and the list's address once 0x%llx, where there is no memory\n",
	       cf->nfill + 1, (cf->nfill + 1) * 16, (unsigned long long)cf->list.pa,
	       cf->nfill, cf->chunk_pages, (unsigned long long)cf->fill[0].pa,
	       cf->slice_pages, (unsigned long long)cf->slice.pa, cf->ring_size,
	       cf->hsize, (unsigned long long)cf->bar0,
	       (unsigned long long)cf->nomem);
	printf("# would read blocks of %s (%u-byte blocks, the first 2048) and\n"
	       "#   write the same bytes back, for %u s and more, then reset the\n"
	       "#   controller (NVME_IOCTL_RESET) so the driver sets its HMB up again\n",
	       cf->ns, cf->lba_size, cf->io_secs);
	if (cf->no_shut[0])
		printf("# would not shut the controller down: %s\n", cf->no_shut);
	else
		printf("# would then take the HMB again (the same list), and unbind\n"
		       "#   %s from %s (the driver shuts the controller\n"
		       "#   down; the namespaces' block devices go away) and bind it\n"
		       "#   again (--no-shutdown: not)\n", cf->bdf, cf->drv);
}

int main(int argc, char **argv)
{
	static struct conform cf = { .ring_size = 16384, .io_secs = 3,
				     .fd = -1, .nsfd = -1 };
	static char nsbuf[64];
	int rc;

	parse(&cf, argc, argv);
	if (geteuid() != 0) {
		fprintf(stderr, "hmb-trace-conform: needs root (admin passthrough, "
			"/proc/self/pagemap, locked memory)\n");
		return 2;
	}
	cf.fd = open(cf.dev, O_RDONLY);
	if (cf.fd < 0)
		die(cf.dev);
	pt_identify(cf.fd, &cf.id);
	if (cf.id.status || !cf.id.hmpre) {
		fprintf(stderr, "hmb-trace-conform: %s does not advertise a Host "
			"Memory Buffer: Identify status 0x%x, HMPRE %u, HMMIN %u, "
			"HMMINDS %u, HMMAXD %u; nothing to check, nothing written\n",
			cf.dev, cf.id.status, cf.id.hmpre, cf.id.hmmin,
			cf.id.hmminds, cf.id.hmmaxd);
		return 2;
	}
	if (!cf.ns) {
		if (find_ns(cf.dev, nsbuf, sizeof(nsbuf))) {
			fprintf(stderr, "hmb-trace-conform: %s has no namespace "
				"block device; name one with --ns\n", cf.dev);
			return 2;
		}
		cf.ns = nsbuf;
	}
	if (ns_open(&cf))
		die(cf.ns);
	cf.bar0 = ctrl_bar0(cf.dev);
	cf.nomem = nomem_addr();
	pt_get_hmb(cf.fd, &cf.linux_hmb);
	if (cf.no_shutdown)
		snprintf(cf.no_shut, sizeof(cf.no_shut), "--no-shutdown");
	else
		ctrl_pci(&cf, cf.no_shut, sizeof(cf.no_shut));
	size_hmb(&cf);
	plan(&cf);
	if (!cf.yes) {
		fprintf(stderr, "hmb-trace-conform: nothing written; add --yes to run\n");
		return 2;
	}
	hmb_conform_init(&cf.ck, cf.ring_size, cf.dict);
	check_identify(&cf);
	check_set_features(&cf);
	check_ring(&cf);
	if (!cf.linux_back) {
		/* no reset happened: give the driver its HMB back as it was */
		pt_set_hmb(cf.fd, 0, 0, 0, 0);
		if (cf.linux_hmb.ehm)
			pt_set_hmb(cf.fd, 3, cf.linux_hmb.hsize,
				   cf.linux_hmb.hmdla, cf.linux_hmb.hmdlec);
	}
	rc = report(&cf);
	hmb_dict_free(cf.dict);
	return rc;
}
