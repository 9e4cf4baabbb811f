/* SPDX-License-Identifier: GPL-2.0 */
/*
 * hmb-trace-conform: checks an NVMe controller's side of the HMB trace
 * contract (docs/format.md section 16 and the producer rules it refers
 * to) through admin passthrough.  docs/man/hmb-trace-conform.md.
 */
#ifndef HMB_CONFORM_H
#define HMB_CONFORM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hmbtrace.h"
#include "hmbtrace_conform.h"
#include "hmbtrace_dict.h"
#include "passthru.h"

#define CHUNK_MAX	HUGE_PAGES	/* a chunk is contiguous */

/* NVMe status as the ioctl returns it: SC | SCT << 8 | DNR 0x4000 */
#define ST_OK		0
#define ST_INVALID_FIELD 0x4002
#define ST_DATA_XFER	0x4004
#define ST_CMD_SEQ	0x400c

/* The checks this tool makes itself (the record rules are the library's). */
enum trule {
	T_ID_HMPRE, T_ID_HMMIN, T_ID_HMMINDS, T_ID_HMMAXD,
	T_SF_DISABLE, T_GF_DISABLED, T_SF_VALID, T_GF_ENABLED, T_SF_TWICE,
	T_SF_HMDLEC_ZERO, T_SF_HMDLEC_MAX, T_SF_LIST_ALIGN, T_SF_BELOW_HMMIN,
	T_SF_LIST_DMA,
	T_SF_BSIZE_ZERO, T_SF_BADD_ALIGN, T_SF_BADD_WRAP, T_SF_IOMEM,
	T_SF_HSIZE_SUM, T_SF_NOCHANGE,
	T_ADOPT, T_OVF_SET, T_OVF_KEEP, T_OVF_SEQ, T_OVF_CLEAR, T_BAD_TAIL,
	T_FROZEN_EHM0, T_FROZEN_QUIET, T_REINIT, T_FROZEN_RESET, T_FROZEN_SHUTDOWN,
	T_RULES
};

/* Locked memory in chunks, each physically contiguous. */
struct chunk {
	uint8_t *va;
	uint32_t pages;
	uint64_t pa;
};

struct conform {
	const char *dev, *ns, *json;
	uint32_t ring_size, io_secs;
	bool yes, no_shutdown;
	int fd, nsfd;
	uint64_t bar0;
	uint64_t nomem;			/* a bus address with nothing there */
	struct id_hmb id;
	struct hmb_attrs linux_hmb;	/* what the driver had set up */
	bool linux_back;		/* the driver has its HMB again */
	char bdf[64], drv[256];		/* the PCI function, its driver's sysfs */
	char no_shut[256];		/* why there is no shutdown, or "" */
	/* the HMB the tool hands over: filler chunks, the slice last */
	uint32_t nfill, chunk_pages, slice_pages, hsize;
	struct chunk *fill, slice, list;
	struct hmb_dict *dict;
	struct hmb_conform ck;
	struct hmb_cf_result res[T_RULES];
	uint64_t io_ops, lba_count;
	uint32_t lba_size;
	bool aborted;			/* a system error stopped the run */
	char abort_msg[256];
};

struct trule_info {
	const char *id, *section, *what;
};
extern const struct trule_info trules[T_RULES];

/* nvme.c (admin commands and memory: passthru.h) */
void chunk_alloc(struct chunk *c, uint32_t pages);
uint64_t ctrl_bar0(const char *dev);
uint64_t nomem_addr(void);
int find_ns(const char *dev, char *out, size_t len);
int ns_open(struct conform *cf);
int do_io(struct conform *cf);
int ctrl_reset(struct conform *cf);
int ns_busy(const char *dev, char *name, size_t len);
int ctrl_pci(struct conform *cf, char *msg, size_t len);
int ctrl_unbind(struct conform *cf, char *msg, size_t len);
int ctrl_rebind(struct conform *cf, char *msg, size_t len);

/* checks.c */
void tnote(struct conform *cf, int rule, bool ok, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
void check_identify(struct conform *cf);
void check_set_features(struct conform *cf);

/* ring.c */
void check_ring(struct conform *cf);

/* report.c */
int report(struct conform *cf);

#endif
