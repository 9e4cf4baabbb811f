// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * passthru.c - admin passthrough and memory with bus addresses for the
 * programs that hand an NVMe controller a Host Memory Buffer (passthru.h).
 */
#include <fcntl.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>
#include <linux/nvme_ioctl.h>

#include "passthru.h"

#define PM_PRESENT	(1ULL << 63)
#define PM_PFN		((1ULL << 55) - 1)

int pt_admin(int fd, uint8_t opc, uint32_t nsid, void *data, uint32_t len,
	     const uint32_t cdw[6], uint32_t *result)
{
	struct nvme_admin_cmd c;
	int r;

	memset(&c, 0, sizeof(c));
	c.opcode = opc;
	c.nsid = nsid;
	c.addr = (uint64_t)(uintptr_t)data;
	c.data_len = len;
	c.cdw10 = cdw[0];
	c.cdw11 = cdw[1];
	c.cdw12 = cdw[2];
	c.cdw13 = cdw[3];
	c.cdw14 = cdw[4];
	c.cdw15 = cdw[5];
	c.timeout_ms = 10000;
	r = ioctl(fd, NVME_IOCTL_ADMIN_CMD, &c);
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

void pt_identify(int fd, struct id_hmb *id)
{
	static uint8_t buf[4096] __attribute__((aligned(4096)));
	uint32_t cdw[6] = { 1, 0, 0, 0, 0, 0 };	/* CNS 1: controller */

	memset(buf, 0, sizeof(buf));
	id->status = pt_admin(fd, OPC_IDENTIFY, 0, buf, sizeof(buf), cdw, NULL);
	id->hmpre = le32(buf + 272);
	id->hmmin = le32(buf + 276);
	id->hmminds = le32(buf + 332);
	id->hmmaxd = (uint16_t)(buf[336] | buf[337] << 8);
}

int pt_get_log(int fd, uint8_t lid, uint8_t lsp, uint64_t off, void *buf,
	       uint32_t len)
{
	uint32_t numd = len / 4 - 1;
	uint32_t cdw[6] = {
		lid | (uint32_t)(lsp & 0x7f) << 8 | (numd & 0xffff) << 16,
		numd >> 16, (uint32_t)off, (uint32_t)(off >> 32), 0, 0,
	};

	return pt_admin(fd, OPC_GET_LOG, 0xffffffff, buf, len, cdw, NULL);
}

void pt_get_hmb(int fd, struct hmb_attrs *a)
{
	static uint8_t buf[4096] __attribute__((aligned(4096)));
	uint32_t cdw[6] = { FID_HMB, 0, 0, 0, 0, 0 };
	uint32_t res = 0, i;

	memset(buf, 0xff, sizeof(buf));
	a->status = pt_admin(fd, OPC_GET_FEAT, 0, buf, sizeof(buf), cdw, &res);
	a->ehm = res & 1;
	a->hsize = le32(buf);
	a->hmdla = (uint64_t)le32(buf + 4) | (uint64_t)le32(buf + 8) << 32;
	a->hmdlec = le32(buf + 12);
	a->rest_nonzero = false;
	for (i = 16; i < sizeof(buf); i++)
		if (buf[i])
			a->rest_nonzero = true;
}

int pt_set_hmb(int fd, uint32_t cdw11, uint32_t hsize, uint64_t hmdla,
	       uint32_t hmdlec)
{
	uint32_t cdw[6] = { FID_HMB, cdw11, hsize, (uint32_t)hmdla,
			    (uint32_t)(hmdla >> 32), hmdlec };

	return pt_admin(fd, OPC_SET_FEAT, 0, NULL, 0, cdw, NULL);
}

uint64_t pt_phys_of(const void *va)
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
	if (!(e & PM_PRESENT))
		return 0;
	return (e & PM_PFN) * PAGE;
}

int pt_mem_alloc(struct pt_mem *m, size_t pages, bool contig, uint64_t *each)
{
	size_t huge = (size_t)HUGE_PAGES * PAGE, len = pages * PAGE, i;
	uint64_t pa;
	uint8_t *raw;

	if (contig && pages > HUGE_PAGES)
		return PT_MEM_TOO_BIG;
	if (contig && pages > 1) {
		/* a transparent huge page is physically contiguous */
		raw = mmap(NULL, 2 * huge, PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (raw == MAP_FAILED)
			die("mmap");
		m->va = (uint8_t *)(((uintptr_t)raw + huge - 1) & ~(uintptr_t)(huge - 1));
		madvise(m->va, huge, MADV_HUGEPAGE);
	} else {
		m->va = mmap(NULL, len, PROT_READ | PROT_WRITE,
			     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (m->va == MAP_FAILED)
			die("mmap");
	}
	memset(m->va, 0, len);
	if (mlock(m->va, len))
		die("mlock");
	m->pages = pages;
	for (i = 0; i < pages; i++) {
		pa = pt_phys_of(m->va + i * PAGE);
		if (!pa) {
			m->bad = m->va + i * PAGE;
			return PT_MEM_NO_PFN;
		}
		if (!i)
			m->pa = pa;
		else if (contig && pa != m->pa + i * PAGE)
			return PT_MEM_SPLIT;
		if (each)
			each[i] = pa;
	}
	return 0;
}

void pt_put_desc(uint8_t *list, unsigned int i, uint64_t addr, uint32_t pages)
{
	uint8_t *d = list + 16 * i;

	memset(d, 0, 16);
	memcpy(d, &addr, 8);
	memcpy(d + 8, &pages, 4);
}
