/* SPDX-License-Identifier: GPL-2.0 */
/*
 * nvme-hmb-trace.h - in-kernel API of nvme-hmb-trace.ko: trace ring providers
 * (the nvme-pci HMB hook, the ivshmem driver, the test producer) register the
 * memory that holds a v1 trace slice and get a character device, sysfs
 * counters and the in-kernel bridge for it.
 *
 * nvme-pci does not call into the module: it writes the ring header itself
 * (the helpers below) and publishes its slice as an auxiliary device,
 * "nvme.hmb_trace.<controller instance>", which nvme-hmb-trace.ko binds to
 * whichever of the two is loaded first, and lets go of when either goes away.
 */
#ifndef _LINUX_NVME_HMB_TRACE_H
#define _LINUX_NVME_HMB_TRACE_H

#include <linux/auxiliary_bus.h>
#include <linux/compiler.h>
#include <linux/spinlock.h>
#include <linux/types.h>
#include <asm/barrier.h>
#include <linux/nvme_hmb_trace.h>

struct device;
struct hmb_trace_ring;

struct hmb_trace_ring *hmb_trace_register_ring(struct device *parent,
					       void *kaddr, dma_addr_t addr,
					       size_t size, const char *name,
					       u32 provider);
void hmb_trace_unregister_ring(struct hmb_trace_ring *ring);

/* Auxiliary device name: nvme-pci's KBUILD_MODNAME "nvme" + "." + this. */
#define NVME_HMB_TRACE_AUX_NAME		"hmb_trace"
#define NVME_HMB_TRACE_AUX_MATCH	"nvme." NVME_HMB_TRACE_AUX_NAME

/**
 * struct hmb_trace_sync - a header rewrite against the consumer's tail stores.
 * @lock: held by whoever rewrites the ring header (the host side of a
 *	re-initialisation) and by the consumer side while it stores ``tail``,
 *	so that an old epoch's tail never lands in a rewritten header.
 * @gen: incremented, under @lock, each time the header is (re)written; a
 *	consumer that saw another value knows the ring began a new epoch.
 */
struct hmb_trace_sync {
	spinlock_t lock;	/* see kernel-doc above */
	u32 gen;
};

/**
 * struct nvme_hmb_trace_slice - an nvme-pci HMB trace slice on the auxiliary bus.
 * @adev: the auxiliary device; its parent is the NVMe PCI function, which
 *	owns the DMA mapping (dma_mmap_coherent() goes through it).
 * @kaddr: kernel address of the slice (dma_alloc_coherent()).
 * @dma: its DMA address, the last descriptor of the HMB descriptor list.
 * @size: bytes of the slice, PAGE_ALIGN(64 + ring_size).
 * @ring_size: the record area nvme-pci wrote into the header.
 * @sync: nvme-pci's header rewrite lock and generation; valid as long as
 *	@adev is registered.
 * @ctrl: name of the controller ("nvme0").
 *
 * nvme-pci deletes the auxiliary device before it frees the slice: the
 * driver bound to it (nvme-hmb-trace.ko) has let go of it by then.
 */
struct nvme_hmb_trace_slice {
	struct auxiliary_device adev;
	void *kaddr;
	dma_addr_t dma;
	size_t size;
	u32 ring_size;
	struct hmb_trace_sync *sync;
	char ctrl[NVME_HMB_TRACE_NAME_LEN];
};

/**
 * hmb_ring_hdr_init() - write a complete, fresh v1 ring header.
 * @hdr: the slice, never handed to a controller before.
 * @ring_size: record area bytes, a power of two.
 *
 * Magic HMBT, version 1, @ring_size, record_area_off 0x40, head = tail = 0,
 * flags and reserved fields 0 (docs/format.md, "The HMB trace slice").
 * Nobody reads the slice yet, so the order of the stores does not matter
 * beyond the magic going last.
 */
static inline void hmb_ring_hdr_init(struct hmb_ring_hdr *hdr, u32 ring_size)
{
	WRITE_ONCE(hdr->version, hmb_cpu_to_le32(HMB_TRACE_ABI_VERSION));
	WRITE_ONCE(hdr->ring_size, hmb_cpu_to_le32(ring_size));
	WRITE_ONCE(hdr->record_area_off, hmb_cpu_to_le32(HMB_RECORD_AREA_OFF));
	WRITE_ONCE(hdr->head, 0);
	WRITE_ONCE(hdr->tail, 0);
	WRITE_ONCE(hdr->flags, 0);
	WRITE_ONCE(hdr->reserved0, 0);
	WRITE_ONCE(hdr->reserved1, 0);
	WRITE_ONCE(hdr->reserved2, 0);
	WRITE_ONCE(hdr->reserved3, 0);
	/* Pairs with the acquire of flags or head by a consumer that attaches. */
	smp_store_release(&hdr->magic, hmb_cpu_to_le32(HMB_RING_MAGIC));
}

/**
 * hmb_ring_hdr_reinit() - re-initialise a ring a consumer may still drain.
 * @hdr: the slice; the producer (controller) has stopped writing it.
 * @ring_size: record area bytes, a power of two.
 *
 * docs/format.md §11.2: FROZEN first, then the header rewritten with
 * tail = head = 0 (tail before head: a consumer that loads head and then
 * tail and sees the new head also sees the new tail, so it never takes the
 * reset head for a corrupt one), reserved fields zero, and FROZEN cleared
 * last with release.  Consumers then start a new epoch at cursor 0.
 */
static inline void hmb_ring_hdr_reinit(struct hmb_ring_hdr *hdr, u32 ring_size)
{
	WRITE_ONCE(hdr->flags, hmb_cpu_to_le32(hmb_le32(READ_ONCE(hdr->flags)) |
					  HMB_RING_FLAG_FROZEN));
	/* FROZEN is visible before any cursor changes (consumer: flags, head). */
	smp_wmb();
	WRITE_ONCE(hdr->tail, 0);
	/* Pairs with the consumer's acquire of head, then its load of tail. */
	smp_wmb();
	WRITE_ONCE(hdr->head, 0);
	WRITE_ONCE(hdr->magic, hmb_cpu_to_le32(HMB_RING_MAGIC));
	WRITE_ONCE(hdr->version, hmb_cpu_to_le32(HMB_TRACE_ABI_VERSION));
	WRITE_ONCE(hdr->ring_size, hmb_cpu_to_le32(ring_size));
	WRITE_ONCE(hdr->record_area_off, hmb_cpu_to_le32(HMB_RECORD_AREA_OFF));
	WRITE_ONCE(hdr->reserved0, 0);
	WRITE_ONCE(hdr->reserved1, 0);
	WRITE_ONCE(hdr->reserved2, 0);
	WRITE_ONCE(hdr->reserved3, 0);
	/* Pairs with the consumer's acquire of flags: the rewrite is complete. */
	smp_store_release(&hdr->flags, 0);
}

/**
 * hmb_trace_hdr_write() - (re)write a ring header under its sync lock.
 * @sync: the ring's &struct hmb_trace_sync.
 * @hdr: the slice.
 * @ring_size: record area bytes, a power of two.
 * @used: the slice was handed to a controller before (it may hold records
 *	and a FROZEN header a consumer is still draining): re-initialise it
 *	with hmb_ring_hdr_reinit(); otherwise hmb_ring_hdr_init().
 *
 * The generation is bumped in the same lock section, so a consumer that
 * stores tail under @sync->lock either stores it before the rewrite (and
 * the rewrite resets it) or sees the new generation and does not store.
 *
 * Context: any context that may take a spinlock; not from interrupts.
 */
static inline void hmb_trace_hdr_write(struct hmb_trace_sync *sync,
				       struct hmb_ring_hdr *hdr, u32 ring_size,
				       bool used)
{
	spin_lock(&sync->lock);
	if (used)
		hmb_ring_hdr_reinit(hdr, ring_size);
	else
		hmb_ring_hdr_init(hdr, ring_size);
	WRITE_ONCE(sync->gen, sync->gen + 1);
	spin_unlock(&sync->lock);
}

#endif /* _LINUX_NVME_HMB_TRACE_H */
