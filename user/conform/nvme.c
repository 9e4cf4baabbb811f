// SPDX-License-Identifier: GPL-2.0
/*
 * The controller side of hmb-trace-conform: locked physically contiguous
 * memory (through user/nvme/passthru.c, with scripts/vm/guest/vm-nvme-hmb.c:
 * the tool needs root and an IOMMU in passthrough or off), the
 * controller's BAR0 and namespace, and the I/O that makes it trace.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>
#include <linux/fs.h>
#include <linux/nvme_ioctl.h>

#include "conform.h"

void die(const char *what)
{
	fprintf(stderr, "hmb-trace-conform: %s: %s\n", what, strerror(errno));
	exit(3);
}

/* @pages locked zeroed pages, physically contiguous (a huge page). */
void chunk_alloc(struct chunk *c, uint32_t pages)
{
	struct pt_mem m;

	switch (pt_mem_alloc(&m, pages, true, NULL)) {
	case 0:
		break;
	case PT_MEM_TOO_BIG:
		fprintf(stderr, "hmb-trace-conform: a buffer of %u pages is more "
			"than one 2 MiB huge page\n", pages);
		exit(2);
	case PT_MEM_NO_PFN:
		fprintf(stderr, "hmb-trace-conform: page at %p not present or no "
			"PFN in /proc/self/pagemap (root needed)\n", m.bad);
		exit(3);
	default:
		fprintf(stderr, "hmb-trace-conform: no %u physically "
			"contiguous pages (transparent huge pages off? "
			"/sys/kernel/mm/transparent_hugepage/enabled)\n",
			pages);
		exit(3);
	}
	c->va = m.va;
	c->pages = pages;
	c->pa = m.pa;
}

/* BAR0's bus address: the first line of /sys/class/nvme/NAME/device/resource. */
uint64_t ctrl_bar0(const char *dev)
{
	const char *name = strrchr(dev, '/');
	char path[256];
	unsigned long long start = 0, end = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/sys/class/nvme/%s/device/resource",
		 name ? name + 1 : dev);
	f = fopen(path, "r");
	if (!f)
		return 0;
	if (fscanf(f, "%llx %llx", &start, &end) != 2 || end <= start)
		start = 0;
	fclose(f);
	return start;
}

/*
 * An address above everything /proc/iomem lists (RAM, every bridge's
 * window, every BAR), rounded up to 1 GiB: nothing answers a DMA read
 * there, or the IOMMU has nothing mapped.  0 when the addresses cannot
 * be read (they are shown as 0 to all but root).
 */
uint64_t nomem_addr(void)
{
	unsigned long long start, end, top = 0;
	char line[256];
	FILE *f = fopen("/proc/iomem", "r");

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%llx-%llx", &start, &end) == 2 && end > top)
			top = end;
	fclose(f);
	if (!top || top >= (1ull << 62))
		return 0;
	return (top + (1ull << 30)) & ~((1ull << 30) - 1);
}

/* The first namespace's block device of controller @dev: /dev/nvmeXnY. */
int find_ns(const char *dev, char *out, size_t len)
{
	const char *name = strrchr(dev, '/');
	char path[256], best[64] = "";
	unsigned ctrl, c2, sub, ns;
	struct dirent *e;
	DIR *d;

	name = name ? name + 1 : dev;
	if (sscanf(name, "nvme%u", &ctrl) != 1)
		return -1;
	snprintf(path, sizeof(path), "/sys/class/nvme/%s", name);
	d = opendir(path);
	if (!d)
		return -1;
	while ((e = readdir(d))) {
		/* nvme0n1, or nvme0c0n1 under native multipath (head nvme0n1) */
		if (sscanf(e->d_name, "nvme%uc%un%u", &c2, &sub, &ns) == 3 ||
		    sscanf(e->d_name, "nvme%un%u", &c2, &ns) == 2) {
			char cand[64];

			snprintf(cand, sizeof(cand), "/dev/nvme%un%u",
				 strchr(e->d_name, 'c') ? c2 : ctrl, ns);
			if (!best[0] || strcmp(cand, best) < 0)
				snprintf(best, sizeof(best), "%s", cand);
		}
	}
	closedir(d);
	if (!best[0])
		return -1;
	snprintf(out, len, "%s", best);
	return 0;
}

int ns_open(struct conform *cf)
{
	uint64_t bytes = 0;
	int lbs = 0;

	cf->nsfd = open(cf->ns, O_RDWR | O_DIRECT);
	if (cf->nsfd < 0)
		return -1;
	if (ioctl(cf->nsfd, BLKGETSIZE64, &bytes) || ioctl(cf->nsfd, BLKSSZGET, &lbs) ||
	    lbs <= 0 || lbs > 65536 || bytes < (uint64_t)lbs * 16)
		return -1;
	cf->lba_size = (uint32_t)lbs;
	cf->lba_count = bytes / (uint64_t)lbs;
	return 0;
}

/*
 * One read of a logical block and the write of the same bytes back: the
 * controller traces both commands and the namespace's data is unchanged
 * (unless something else writes that block at the same moment).
 */
int do_io(struct conform *cf)
{
	static uint8_t *buf;
	uint64_t lba = (cf->io_ops * 7919u) % (cf->lba_count < 2048 ? cf->lba_count : 2048);
	off_t off = (off_t)(lba * cf->lba_size);

	if (!buf && posix_memalign((void **)&buf, 4096, 65536))
		return -1;
	if (pread(cf->nsfd, buf, cf->lba_size, off) != (ssize_t)cf->lba_size)
		return -1;
	if (pwrite(cf->nsfd, buf, cf->lba_size, off) != (ssize_t)cf->lba_size)
		return -1;
	cf->io_ops++;
	return 0;
}

/* A controller reset (CC.EN 1 -> 0 -> 1) by the driver. */
int ctrl_reset(struct conform *cf)
{
	return ioctl(cf->fd, NVME_IOCTL_RESET);
}
