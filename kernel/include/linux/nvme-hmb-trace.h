/* SPDX-License-Identifier: GPL-2.0 */
/*
 * nvme-hmb-trace.h - in-kernel API of nvme-hmb-trace.ko: trace ring providers
 * (the nvme-pci HMB hook, the ivshmem driver, the test producer) register the
 * memory that holds a v1 trace slice and get a character device, sysfs
 * counters and the in-kernel bridge for it.
 */
#ifndef _LINUX_NVME_HMB_TRACE_H
#define _LINUX_NVME_HMB_TRACE_H

#include <linux/types.h>
#include <linux/nvme_hmb_trace.h>

struct device;
struct hmb_trace_ring;

struct hmb_trace_ring *hmb_trace_register_ring(struct device *parent,
					       void *kaddr, dma_addr_t addr,
					       size_t size, const char *name,
					       u32 provider);
void hmb_trace_unregister_ring(struct hmb_trace_ring *ring);

#endif /* _LINUX_NVME_HMB_TRACE_H */
