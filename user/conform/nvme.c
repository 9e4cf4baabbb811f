// SPDX-License-Identifier: GPL-2.0
/*
 * The controller side of hmb-trace-conform: admin passthrough on the
 * controller's character device, locked physically contiguous memory
 * (its bus address from /proc/self/pagemap: the tool needs root and an
 * IOMMU in passthrough or off, like scripts/vm/guest/vm-nvme-hmb.c),
 * and the I/O that makes the controller trace.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>
#include <linux/fs.h>
#include <linux/nvme_ioctl.h>

#include "conform.h"

#define OPC_IDENTIFY	0x06
#define OPC_SET_FEAT	0x09
#define OPC_GET_FEAT	0x0a
#define FID_HMB		0x0d

void die(const char *what)
{
	fprintf(stderr, "hmb-trace-conform: %s: %s\n", what, strerror(errno));
	exit(3);
}

uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* One admin command; the NVMe status (>= 0), or exits on an errno. */
int admin(struct conform *cf, uint8_t opc, void *data, uint32_t len,
	  const uint32_t cdw[6], uint32_t *result)
{
	struct nvme_admin_cmd c;
	int r;

	memset(&c, 0, sizeof(c));
	c.opcode = opc;
	c.addr = (uint64_t)(uintptr_t)data;
	c.data_len = len;
	c.cdw10 = cdw[0];
	c.cdw11 = cdw[1];
	c.cdw12 = cdw[2];
	c.cdw13 = cdw[3];
	c.cdw14 = cdw[4];
	c.cdw15 = cdw[5];
	c.timeout_ms = 10000;
	r = ioctl(cf->fd, NVME_IOCTL_ADMIN_CMD, &c);
	if (r < 0)
		die("admin command (NVME_IOCTL_ADMIN_CMD)");
	if (result)
		*result = c.result;
	return r;
}

static uint32_t le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

void identify(struct conform *cf, struct id_hmb *id)
{
	static uint8_t buf[4096] __attribute__((aligned(4096)));
	uint32_t cdw[6] = { 1, 0, 0, 0, 0, 0 };	/* CNS 1: controller */

	memset(buf, 0, sizeof(buf));
	id->status = admin(cf, OPC_IDENTIFY, buf, sizeof(buf), cdw, NULL);
	id->hmpre = le32(buf + 272);
	id->hmmin = le32(buf + 276);
	id->hmminds = le32(buf + 332);
	id->hmmaxd = (uint16_t)(buf[336] | buf[337] << 8);
}

int set_hmb(struct conform *cf, uint32_t cdw11, uint32_t hsize,
	    uint64_t hmdla, uint32_t hmdlec)
{
	uint32_t cdw[6] = { FID_HMB, cdw11, hsize, (uint32_t)hmdla,
			    (uint32_t)(hmdla >> 32), hmdlec };

	return admin(cf, OPC_SET_FEAT, NULL, 0, cdw, NULL);
}

void get_hmb(struct conform *cf, struct hmb_attrs *a)
{
	static uint8_t buf[4096] __attribute__((aligned(4096)));
	uint32_t cdw[6] = { FID_HMB, 0, 0, 0, 0, 0 };
	uint32_t res = 0, i;

	memset(buf, 0xff, sizeof(buf));
	a->status = admin(cf, OPC_GET_FEAT, buf, sizeof(buf), cdw, &res);
	a->ehm = res & 1;
	a->hsize = le32(buf);
	a->hmdla = (uint64_t)le32(buf + 4) | (uint64_t)le32(buf + 8) << 32;
	a->hmdlec = le32(buf + 12);
	a->rest_nonzero = false;
	for (i = 16; i < sizeof(buf); i++)
		if (buf[i])
			a->rest_nonzero = true;
}

static uint64_t phys_of(const void *va)
{
	static int pm = -1;
	uint64_t e;
	off_t off = (off_t)((uintptr_t)va / PAGE) * 8;

	if (pm < 0) {
		pm = open("/proc/self/pagemap", O_RDONLY);
		if (pm < 0)
			die("open /proc/self/pagemap");
	}
	if (pread(pm, &e, 8, off) != 8)
		die("read /proc/self/pagemap");
	if (!(e & (1ULL << 63)) || !(e & ((1ULL << 55) - 1))) {
		fprintf(stderr, "hmb-trace-conform: page at %p not present or no "
			"PFN in /proc/self/pagemap (root needed)\n", va);
		exit(3);
	}
	return (e & ((1ULL << 55) - 1)) * PAGE;
}

/* @pages locked zeroed pages, physically contiguous (a huge page). */
void chunk_alloc(struct chunk *c, uint32_t pages)
{
	size_t huge = 2u << 20, len = (size_t)pages * PAGE, i;
	uint8_t *raw;

	if (pages > CHUNK_MAX) {
		fprintf(stderr, "hmb-trace-conform: a buffer of %u pages is more "
			"than one 2 MiB huge page\n", pages);
		exit(2);
	}
	if (pages > 1) {
		raw = mmap(NULL, 2 * huge, PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (raw == MAP_FAILED)
			die("mmap");
		c->va = (uint8_t *)(((uintptr_t)raw + huge - 1) & ~(uintptr_t)(huge - 1));
		madvise(c->va, huge, MADV_HUGEPAGE);
	} else {
		c->va = mmap(NULL, len, PROT_READ | PROT_WRITE,
			     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (c->va == MAP_FAILED)
			die("mmap");
	}
	memset(c->va, 0, len);
	if (mlock(c->va, len))
		die("mlock");
	c->pages = pages;
	c->pa = phys_of(c->va);
	for (i = 1; i < pages; i++)
		if (phys_of(c->va + i * PAGE) != c->pa + i * PAGE) {
			fprintf(stderr, "hmb-trace-conform: no %u physically "
				"contiguous pages (transparent huge pages off? "
				"/sys/kernel/mm/transparent_hugepage/enabled)\n",
				pages);
			exit(3);
		}
}

void put_desc(uint8_t *list, unsigned i, uint64_t addr, uint32_t pages)
{
	uint8_t *d = list + 16 * i;

	memset(d, 0, 16);
	memcpy(d, &addr, 8);
	memcpy(d + 8, &pages, 4);
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
