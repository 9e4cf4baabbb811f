/* SPDX-License-Identifier: GPL-2.0 */
/*
 * compat.h - the kernel API differences between the kernels nvme-hmb-trace.ko
 * is built and tested on: Debian 12's 6.1 and 6.12 from bookworm-backports
 * (scripts/kernels).  Every version test of the module lives here; the code
 * uses the newer API and this header supplies it on the older kernels.
 */
#ifndef _HMB_TRACE_COMPAT_H
#define _HMB_TRACE_COMPAT_H

#include <linux/device.h>
#include <linux/mm.h>
#include <linux/version.h>

/*
 * 6.3 made vma->vm_flags read-only: changes go through vm_flags_set() and
 * vm_flags_clear(), which also take the VMA write lock where one exists.
 * On 6.1 the mmap lock the caller holds is the whole protection.
 */
#if KERNEL_VERSION(6, 3, 0) > LINUX_VERSION_CODE
static inline void vm_flags_set(struct vm_area_struct *vma, vm_flags_t flags)
{
	vma->vm_flags |= flags;
}

static inline void vm_flags_clear(struct vm_area_struct *vma, vm_flags_t flags)
{
	vma->vm_flags &= ~flags;
}
#endif

/*
 * 6.2 made struct class's devnode() take a const struct device *:
 * hmb_class_dev is the device type of that callback on this kernel.
 */
#if KERNEL_VERSION(6, 2, 0) <= LINUX_VERSION_CODE
#define hmb_class_dev const struct device
#else
#define hmb_class_dev struct device
#endif

/*
 * 6.10 dropped __assign_str()'s source argument: the string is copied from
 * the source named in __string().  Tracepoints pass both, as 6.1 needs; the
 * (void) keeps the argument checked on the newer kernels.
 */
#if KERNEL_VERSION(6, 10, 0) <= LINUX_VERSION_CODE
#define hmb_assign_str(field, src)		\
	do {					\
		(void)(src);			\
		__assign_str(field);		\
	} while (0)
#else
#define hmb_assign_str(field, src) __assign_str(field, src)
#endif

#endif /* _HMB_TRACE_COMPAT_H */
