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
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>
#include <linux/fs.h>
#include <linux/nvme_ioctl.h>

#include "conform.h"
#include "hmbtrace_util.h"

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

/*
 * The namespaces' block devices of controller @dev (/dev/nvmeXnY, also
 * under native multipath, where the controller lists nvmeXcYnZ and the
 * block device is the head's): @each is called with each; a non-zero
 * return stops the walk and is returned.  -1 when @dev is not a
 * controller sysfs knows.
 */
static int ns_each(const char *dev, int (*each)(const char *ns, void *arg),
		   void *arg)
{
	const char *name = strrchr(dev, '/');
	char path[256];
	unsigned ctrl, c2, sub, ns;
	struct dirent *e;
	int rc = 0;
	DIR *d;

	name = name ? name + 1 : dev;
	if (sscanf(name, "nvme%u", &ctrl) != 1)
		return -1;
	snprintf(path, sizeof(path), "/sys/class/nvme/%s", name);
	d = opendir(path);
	if (!d)
		return -1;
	while (!rc && (e = readdir(d))) {
		/* nvme0n1, or nvme0c0n1 under native multipath (head nvme0n1) */
		if (sscanf(e->d_name, "nvme%uc%un%u", &c2, &sub, &ns) == 3 ||
		    sscanf(e->d_name, "nvme%un%u", &c2, &ns) == 2) {
			char cand[64];

			snprintf(cand, sizeof(cand), "/dev/nvme%un%u",
				 strchr(e->d_name, 'c') ? c2 : ctrl, ns);
			rc = each(cand, arg);
		}
	}
	closedir(d);
	return rc;
}

static int ns_first(const char *ns, void *arg)
{
	char *best = arg;

	if (!best[0] || strcmp(ns, best) < 0)
		snprintf(best, 64, "%s", ns);
	return 0;
}

/* The first namespace's block device of controller @dev: /dev/nvmeXnY. */
int find_ns(const char *dev, char *out, size_t len)
{
	char best[64] = "";

	if (ns_each(dev, ns_first, best) || !best[0])
		return -1;
	snprintf(out, len, "%s", best);
	return 0;
}

/*
 * In use: an exclusive open is refused (mounted, swap, a partition of it
 * mounted, held by device-mapper or md).  The name goes to @arg.
 */
static int ns_held(const char *ns, void *arg)
{
	int fd = open(ns, O_RDONLY | O_EXCL | O_NONBLOCK);

	if (fd >= 0) {
		close(fd);
		return 0;
	}
	if (errno != EBUSY)
		return 0;
	snprintf(arg, 64, "%s", ns);
	return 1;
}

/* 1 with the name in @name when a namespace of @dev is in use, else 0. */
int ns_busy(const char *dev, char *name, size_t len)
{
	char held[64] = "";

	if (ns_each(dev, ns_held, held) != 1)
		return 0;
	snprintf(name, len, "%s", held);
	return 1;
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

static int sysfs_write(const char *dir, const char *file, const char *val)
{
	char path[PATH_MAX + 16];
	ssize_t n = (ssize_t)strlen(val);
	int fd, rc = 0;

	snprintf(path, sizeof(path), "%s/%s", dir, file);
	fd = open(path, O_WRONLY);
	if (fd < 0)
		return -1;
	if (write(fd, val, (size_t)n) != n)
		rc = -1;
	if (close(fd))
		rc = -1;
	return rc;
}

/*
 * The controller's PCI function and its driver's sysfs directory into
 * cf->bdf and cf->drv; -1 with the reason in @msg when sysfs does not
 * name them.
 */
int ctrl_pci(struct conform *cf, char *msg, size_t len)
{
	const char *name = strrchr(cf->dev, '/');
	char path[256], real[PATH_MAX];

	name = name ? name + 1 : cf->dev;
	snprintf(path, sizeof(path), "/sys/class/nvme/%s/device", name);
	if (!realpath(path, real)) {
		snprintf(msg, len, "%s: %s", path, strerror(errno));
		return -1;
	}
	snprintf(cf->bdf, sizeof(cf->bdf), "%s", strrchr(real, '/') + 1);
	snprintf(path, sizeof(path), "/sys/class/nvme/%s/device/driver", name);
	if (!realpath(path, real) || strlen(real) >= sizeof(cf->drv)) {
		snprintf(msg, len, "%s: %s", path, strerror(errno));
		return -1;
	}
	snprintf(cf->drv, sizeof(cf->drv), "%s", real);
	return 0;
}

/*
 * A controller shutdown (CC.SHN 01b): the driver unbound from the PCI
 * function (ctrl_pci), whose remove shuts the controller down as at
 * power-off.  The tool's file descriptors are closed first.  -1 with the
 * reason in @msg when sysfs refuses.
 */
int ctrl_unbind(struct conform *cf, char *msg, size_t len)
{
	close(cf->nsfd);
	cf->nsfd = -1;
	close(cf->fd);
	cf->fd = -1;
	if (sysfs_write(cf->drv, "unbind", cf->bdf)) {
		snprintf(msg, len, "unbind %s from %s: %s", cf->bdf, cf->drv,
			 strerror(errno));
		return -1;
	}
	return 0;
}

/* The controller a driver made of PCI function @bdf is live: its name. */
static bool ctrl_live(const char *bdf, char *name, size_t len)
{
	char path[PATH_MAX], state[32] = "";
	struct dirent *e;
	bool live = false;
	FILE *f;
	DIR *d;

	snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/nvme", bdf);
	d = opendir(path);
	if (!d)
		return false;
	while (!live && (e = readdir(d))) {
		if (strncmp(e->d_name, "nvme", 4))
			continue;
		snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/nvme/%s/state",
			 bdf, e->d_name);
		f = fopen(path, "r");
		if (!f)
			continue;
		live = fgets(state, sizeof(state), f) && !strncmp(state, "live", 4);
		fclose(f);
		if (live)
			snprintf(name, len, "/dev/%s", e->d_name);
	}
	closedir(d);
	return live;
}

/*
 * The driver bound again and the controller live, with the namespace's
 * block device back, within 60 s; what came back, or why not, in @msg.
 */
int ctrl_rebind(struct conform *cf, char *msg, size_t len)
{
	uint64_t end = hmb_now_ns(CLOCK_MONOTONIC) + 60ull * 1000000000u;
	char name[300] = "";
	bool live = false;

	if (sysfs_write(cf->drv, "bind", cf->bdf)) {
		snprintf(msg, len, "bind %s to %s: %s", cf->bdf, cf->drv,
			 strerror(errno));
		return -1;
	}
	while (hmb_now_ns(CLOCK_MONOTONIC) < end) {
		live = ctrl_live(cf->bdf, name, sizeof(name));
		if (live && !access(cf->ns, F_OK))
			break;
		usleep(100000);
	}
	if (!live || access(cf->ns, F_OK)) {
		snprintf(msg, len, "%s bound to %s again, but after 60 s the "
			 "controller is %slive and %s %s", cf->bdf, cf->drv,
			 live ? "" : "not ", cf->ns,
			 access(cf->ns, F_OK) ? "is missing" : "is there");
		return -1;
	}
	snprintf(msg, len, "%s bound to %s again: %s live, %s back", cf->bdf,
		 cf->drv, name, cf->ns);
	return 0;
}
