/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * passthru.h - an NVMe controller's Host Memory Buffer driven from user
 * space (root): admin passthrough on the controller's character device,
 * the HMB fields of Identify Controller, Get/Set Features 0Dh, and locked
 * memory with the bus address of its pages (/proc/self/pagemap: right with
 * an IOMMU in passthrough or off).  Shared by hmb-trace-conform and the VM
 * bench's vm-nvme-hmb (scripts/vm/guest), which both hand a controller
 * memory of their own.
 *
 * The program that links passthru.c defines die(): a failed system call
 * here (the ioctl, reading the pagemap, mmap, mlock) is reported and ends
 * the program as every other one of that program does.  What the caller
 * words itself (a page without a PFN, memory not contiguous) is returned.
 */
#ifndef HMB_PASSTHRU_H
#define HMB_PASSTHRU_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PAGE		4096u	/* CC.MPS 0: Linux's controller page size */
#define HUGE_PAGES	512u	/* pages of one 2 MiB transparent huge page */

#define OPC_GET_LOG	0x02
#define OPC_IDENTIFY	0x06
#define OPC_SET_FEAT	0x09
#define OPC_GET_FEAT	0x0a
#define FID_HMB		0x0d
#define FID_TIMESTAMP	0x0e

/* Prints "PROG: @what: strerror(errno)" and exits; the program's own. */
void die(const char *what) __attribute__((noreturn));

struct id_hmb {
	int status;
	uint32_t hmpre, hmmin, hmminds;
	uint16_t hmmaxd;
};

struct hmb_attrs {
	int status;
	uint32_t ehm, hsize, hmdlec;
	uint64_t hmdla;
	bool rest_nonzero;	/* bytes 16..4095 (reserved) not all 0 */
};

/* One admin command on controller @fd; the NVMe status (>= 0). */
int pt_admin(int fd, uint8_t opc, uint32_t nsid, void *data, uint32_t len,
	     const uint32_t cdw[6], uint32_t *result);
void pt_identify(int fd, struct id_hmb *id);
/*
 * Get Log Page: @len bytes (a multiple of 4, at least 4) of log @lid from
 * its byte @off (a multiple of 4), with log specific field @lsp; all
 * namespaces.  The NVMe status.
 */
int pt_get_log(int fd, uint8_t lid, uint8_t lsp, uint64_t off, void *buf,
	       uint32_t len);
/* Get Features 0Dh; a byte the controller does not write reads 0xff. */
void pt_get_hmb(int fd, struct hmb_attrs *a);
int pt_set_hmb(int fd, uint32_t cdw11, uint32_t hsize, uint64_t hmdla,
	       uint32_t hmdlec);

/* The bus address of the page at @va; 0 if not present or no PFN. */
uint64_t pt_phys_of(const void *va);

/* Locked zeroed pages. */
struct pt_mem {
	uint8_t *va;
	size_t pages;
	uint64_t pa;		/* of the first page */
	const void *bad;	/* PT_MEM_NO_PFN: the page */
};

enum {
	PT_MEM_TOO_BIG = 1,	/* contiguous, more than HUGE_PAGES */
	PT_MEM_NO_PFN,		/* a page without a bus address: not root */
	PT_MEM_SPLIT,		/* contiguous asked, not given (THP off?) */
};

/*
 * @pages locked zeroed pages at m->va; with @contig physically contiguous
 * (an aligned transparent huge page when more than one).  @each, if not
 * NULL, gets the bus address of every page.  0, or PT_MEM_*.
 */
int pt_mem_alloc(struct pt_mem *m, size_t pages, bool contig, uint64_t *each);

/* HMB descriptor list entry @i: @pages pages at @addr. */
void pt_put_desc(uint8_t *list, unsigned int i, uint64_t addr, uint32_t pages);

#endif
