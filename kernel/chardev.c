// SPDX-License-Identifier: GPL-2.0
/*
 * chardev.c - /dev/nvme-hmb-traceN: one exclusive consumer, a read-only
 * mapping of the slice, the tail publish ioctl (decision D1) and poll.
 */
#include <linux/dma-mapping.h>
#include <linux/fs.h>
#include <linux/mm.h>
#include <linux/poll.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <linux/vmalloc.h>

#include "hmb_trace_priv.h"
#include "hmb_trace_events.h"

/**
 * struct hmb_file - one open file of a ring.
 * @ring: the ring.
 * @filp: the file; its mapping is zapped when the provider goes away.
 * @node: entry in the ring's list of open files (under ring->lock).
 * @gen: the ring's sync generation (epoch) the consumer last agreed with.
 */
struct hmb_file {
	struct hmb_trace_ring *ring;
	struct file *filp;
	struct list_head node;
	u32 gen;
};

static int hmb_open(struct inode *inode, struct file *filp)
{
	struct hmb_trace_ring *ring = container_of(inode->i_cdev,
						   struct hmb_trace_ring, cdev);
	struct hmb_file *hf;
	int ret = 0;

	hf = kzalloc(sizeof(*hf), GFP_KERNEL);
	if (!hf)
		return -ENOMEM;

	mutex_lock(&ring->lock);
	if (ring->dead) {
		ret = -ENODEV;
	} else if (ring->owner != HMB_OWNER_NONE) {
		/* Single consumer (D7): another process or the bridge. */
		ret = -EBUSY;
	} else {
		ring->owner = HMB_OWNER_CHARDEV;
		get_task_comm(ring->owner_comm, current);
		ring->owner_pid = task_tgid_nr(current);
		hf->ring = ring;
		hf->filp = filp;
		hf->gen = READ_ONCE(ring->sync->gen);
		list_add(&hf->node, &ring->vmas);
		get_device(&ring->dev);
		hmb_trace_start_sampler(ring);
		trace_hmb_trace_consumer(ring->id, true, ring->owner_comm,
					 ring->owner_pid);
	}
	mutex_unlock(&ring->lock);
	if (ret) {
		kfree(hf);
		return ret;
	}
	filp->private_data = hf;
	return nonseekable_open(inode, filp);
}

/* Releases the consumer lock; the ring is not drained (001 §2). */
static int hmb_release(struct inode *inode, struct file *filp)
{
	struct hmb_file *hf = filp->private_data;
	struct hmb_trace_ring *ring = hf->ring;

	mutex_lock(&ring->lock);
	list_del(&hf->node);
	if (!ring->dead)
		hmb_trace_stop_sampler(ring);
	ring->owner = HMB_OWNER_NONE;
	trace_hmb_trace_consumer(ring->id, false, ring->owner_comm,
				 ring->owner_pid);
	mutex_unlock(&ring->lock);
	put_device(&ring->dev);
	kfree(hf);
	return 0;
}

static long hmb_get_info(struct hmb_trace_ring *ring, void __user *argp)
{
	struct nvme_hmb_trace_info info;

	memset(&info, 0, sizeof(info));
	info.abi_version = HMB_TRACE_ABI_VERSION;
	info.ring_size = ring->ring_size;
	info.record_area_off = HMB_RECORD_AREA_OFF;
	info.ring_id = ring->id;
	info.mmap_len = ring->mmap_len;
	info.provider = ring->provider;
	strscpy(info.name, ring->name, sizeof(info.name));
	strscpy(info.ctrl, ring->ctrl, sizeof(info.ctrl));
	if (copy_to_user(argp, &info, sizeof(info)))
		return -EFAULT;
	return 0;
}

/*
 * Caller holds ring->lock and checked that the ring is alive.  The sync
 * lock keeps a header rewrite by the producer side (docs/format.md §11.2)
 * out of the check-and-store.  After a rewrite the consumer's cursors
 * belong to an old epoch: a tail other than the header's own is refused
 * with -ESTALE; the header's own tail (the consumer re-read the header and
 * acknowledges the new epoch) is accepted and stores nothing.
 */
static long hmb_set_tail(struct hmb_file *hf,
			 const struct nvme_hmb_trace_tail *arg)
{
	struct hmb_trace_ring *ring = hf->ring;
	struct hmb_ring_hdr *hdr = ring->hdr;
	long ret = 0;
	u64 head, cur;
	u32 gen;

	if (arg->flags || arg->tail & (HMB_RECORD_ALIGN - 1))
		return -EINVAL;
	spin_lock(&ring->sync->lock);
	gen = READ_ONCE(ring->sync->gen);
	cur = READ_ONCE(hdr->tail);
	if (gen != hf->gen) {
		if (arg->tail == cur)
			hf->gen = gen;
		else
			ret = -ESTALE;
		goto out;
	}
	/* Pairs with the producer's release of head. */
	head = smp_load_acquire(&hdr->head);
	if (arg->tail < cur || arg->tail > head ||
	    head - arg->tail > ring->ring_size) {
		ret = -EINVAL;
		goto out;
	}
	/*
	 * Pairs with the producer's acquire of tail: our reads of the records
	 * below the new tail (done by the consumer through its mapping before
	 * this ioctl) complete before the producer may reuse those bytes.
	 */
	smp_store_release(&hdr->tail, arg->tail);
out:
	spin_unlock(&ring->sync->lock);
	return ret;
}

static long hmb_ioctl(struct file *filp, unsigned int cmd, unsigned long arg)
{
	struct hmb_file *hf = filp->private_data;
	struct hmb_trace_ring *ring = hf->ring;
	void __user *argp = (void __user *)arg;
	struct nvme_hmb_trace_tail t;
	long ret;

	switch (cmd) {
	case NVME_HMB_TRACE_GET_INFO:
		mutex_lock(&ring->lock);
		ret = ring->dead ? -ENODEV : 0;
		mutex_unlock(&ring->lock);
		return ret ? ret : hmb_get_info(ring, argp);
	case NVME_HMB_TRACE_SET_TAIL:
		if (copy_from_user(&t, argp, sizeof(t)))
			return -EFAULT;
		mutex_lock(&ring->lock);
		ret = ring->dead ? -ENODEV : hmb_set_tail(hf, &t);
		mutex_unlock(&ring->lock);
		return ret;
	default:
		return -ENOTTY;
	}
}

static __poll_t hmb_poll(struct file *filp, poll_table *wait)
{
	struct hmb_file *hf = filp->private_data;
	struct hmb_trace_ring *ring = hf->ring;
	__poll_t mask = 0;
	u64 head, tail;
	u32 flags;

	poll_wait(filp, &ring->wq, wait);
	mutex_lock(&ring->lock);
	if (ring->dead) {
		mutex_unlock(&ring->lock);
		return EPOLLHUP;
	}
	/* Pairs with the producer's release of head. */
	head = smp_load_acquire(&ring->hdr->head);
	tail = READ_ONCE(ring->hdr->tail);
	flags = READ_ONCE(ring->hdr->flags);
	if (head != tail)
		mask |= EPOLLIN | EPOLLRDNORM;
	if ((flags & HMB_RING_FLAG_FROZEN) ||
	    READ_ONCE(ring->reason) != HMB_CORRUPT_NONE)
		mask |= EPOLLPRI | EPOLLERR;
	mutex_unlock(&ring->lock);
	return mask;
}

/* No .fault: once the provider is gone and the PTEs are zapped, SIGBUS. */
static const struct vm_operations_struct hmb_vm_ops = {
};

static int hmb_mmap(struct file *filp, struct vm_area_struct *vma)
{
	struct hmb_file *hf = filp->private_data;
	struct hmb_trace_ring *ring = hf->ring;
	unsigned long len = vma->vm_end - vma->vm_start;
	unsigned long off = vma->vm_pgoff;
	int ret;

	/* The ring belongs to the producer; the consumer only reads (D1). */
	if (vma->vm_flags & VM_WRITE)
		return -EACCES;
	if (off >= ring->mmap_len >> PAGE_SHIFT ||
	    len > ring->mmap_len - (off << PAGE_SHIFT))
		return -EINVAL;

	mutex_lock(&ring->lock);
	if (ring->dead) {
		ret = -ENODEV;
		goto out;
	}
	vma->vm_flags &= ~VM_MAYWRITE;
	vma->vm_flags |= VM_DONTEXPAND | VM_DONTDUMP | VM_DONTCOPY;
	vma->vm_ops = &hmb_vm_ops;
	vma->vm_private_data = ring;

	switch (ring->provider) {
	case NVME_HMB_TRACE_PROVIDER_IVSHMEM:
		ret = remap_pfn_range(vma, vma->vm_start,
				      PHYS_PFN(ring->addr) + off, len,
				      vma->vm_page_prot);
		break;
	case NVME_HMB_TRACE_PROVIDER_NVME_PCI:
		ret = dma_mmap_coherent(ring->parent, vma, ring->kaddr,
					ring->addr, ring->size);
		break;
	default:
		ret = remap_vmalloc_range(vma, ring->kaddr, off);
		break;
	}
out:
	mutex_unlock(&ring->lock);
	return ret;
}

/*
 * The provider is going away: no user PTE may keep pointing at the slice
 * (its memory may be freed or handed back to a device).  Every mapping hangs
 * off the inode of a file that is still open (a mapping holds its file), so
 * walking the open files reaches all of them.
 */
void hmb_trace_zap_mappings(struct hmb_trace_ring *ring)
{
	struct hmb_file *hf;

	mutex_lock(&ring->lock);
	list_for_each_entry(hf, &ring->vmas, node)
		unmap_mapping_range(hf->filp->f_mapping, 0, 0, 1);
	mutex_unlock(&ring->lock);
}

const struct file_operations hmb_trace_fops = {
	.owner = THIS_MODULE,
	.open = hmb_open,
	.release = hmb_release,
	.unlocked_ioctl = hmb_ioctl,
	.compat_ioctl = compat_ptr_ioctl,
	.mmap = hmb_mmap,
	.poll = hmb_poll,
	.llseek = no_llseek,
};
