// SPDX-License-Identifier: GPL-2.0
/*
 * chardev.c - /dev/nvme-hmb-traceN: one exclusive consumer, a read-only
 * mapping of the slice, the tail publish ioctl (docs/format.md section 9.4)
 * and poll.
 */
#include <linux/dma-mapping.h>
#include <linux/fs.h>
#include <linux/mm.h>
#include <linux/sched/mm.h>
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
						   struct hmb_trace_ring, chr.cdev);
	struct hmb_file *hf;
	int ret = 0;

	hf = kzalloc(sizeof(*hf), GFP_KERNEL);
	if (!hf)
		return -ENOMEM;

	mutex_lock(&ring->lock);
	if (ring->dead) {
		ret = -ENODEV;
	} else if (ring->owner != HMB_OWNER_NONE) {
		/* One consumer at a time: another process or the bridge. */
		ret = -EBUSY;
	} else {
		ring->owner = HMB_OWNER_CHARDEV;
		get_task_comm(ring->chr.comm, current);
		ring->chr.pid = task_tgid_nr(current);
		hf->ring = ring;
		hf->filp = filp;
		hf->gen = READ_ONCE(ring->prov.sync->gen);
		list_add(&hf->node, &ring->chr.vmas);
		get_device(&ring->dev);
		hmb_trace_start_sampler(ring);
		trace_hmb_trace_consumer(ring->id, true, ring->chr.comm,
					 ring->chr.pid);
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
	trace_hmb_trace_consumer(ring->id, false, ring->chr.comm,
				 ring->chr.pid);
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
	info.ring_size = ring->prov.ring_size;
	info.record_area_off = HMB_RECORD_AREA_OFF;
	info.ring_id = ring->id;
	info.mmap_len = ring->prov.mmap_len;
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
	struct hmb_ring_hdr *hdr = ring->prov.hdr;
	long ret = 0;
	u64 head, cur;
	u32 gen;

	if (arg->flags || arg->tail & (HMB_RECORD_ALIGN - 1))
		return -EINVAL;
	spin_lock(&ring->prov.sync->lock);
	gen = READ_ONCE(ring->prov.sync->gen);
	cur = hmb_hdr_tail(hdr);
	if (gen != hf->gen) {
		if (arg->tail == cur)
			hf->gen = gen;
		else
			ret = -ESTALE;
		goto out;
	}
	head = hmb_hdr_head_acquire(hdr);
	/*
	 * cur <= new tail <= head, within ring_size, measured as distances
	 * from cur: cursors count modulo 2^64 and head may have wrapped.
	 */
	if (head - cur > ring->prov.ring_size || arg->tail - cur > head - cur) {
		ret = -EINVAL;
		goto out;
	}
	/*
	 * The consumer read the records below the new tail through its
	 * mapping before this ioctl; the release orders those reads first.
	 */
	hmb_hdr_publish_tail(hdr, arg->tail);
	/* For the sampler's epoch rule; ordered after the header's tail. */
	atomic64_set_release(&ring->smp.pub_tail, arg->tail);
out:
	spin_unlock(&ring->prov.sync->lock);
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
		/* Moving the tail drops data: only a writer may do it. */
		if (!(filp->f_mode & FMODE_WRITE))
			return -EBADF;
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
	head = hmb_hdr_head_acquire(ring->prov.hdr);
	tail = hmb_hdr_tail(ring->prov.hdr);
	flags = hmb_hdr_flags(ring->prov.hdr);
	if (head != tail)
		mask |= EPOLLIN | EPOLLRDNORM;
	if ((flags & HMB_RING_FLAG_FROZEN) ||
	    READ_ONCE(ring->reason) != HMB_CORRUPT_NONE)
		mask |= EPOLLPRI | EPOLLERR;
	mutex_unlock(&ring->lock);
	return mask;
}

/**
 * struct hmb_map_mm - an address space that mapped a DMA slice.
 * @node: entry in ring->chr.map_mms (under ring->lock).
 * @mm: the address space, held with mmgrab().
 */
struct hmb_map_mm {
	struct list_head node;
	struct mm_struct *mm;
};

/*
 * The page frame behind page @pgoff of a mapping made at fault time: the
 * ivshmem BAR (RAM-backed, mapped by physical address) and the test
 * producer's vmalloc_user() memory.  Coherent DMA memory is never mapped
 * here: only the DMA API knows its page protection (decrypted on hosts with
 * memory encryption, uncached on non-coherent devices) and its pages (an
 * IOMMU's allocation is not in the linear map).
 */
static unsigned long hmb_ring_pfn(struct hmb_trace_ring *ring, pgoff_t pgoff)
{
	if (ring->provider == NVME_HMB_TRACE_PROVIDER_IVSHMEM)
		return PHYS_PFN(ring->prov.addr) + pgoff;
	return vmalloc_to_pfn((u8 *)ring->prov.kaddr + (pgoff << PAGE_SHIFT));
}

static bool hmb_ring_is_dma(struct hmb_trace_ring *ring)
{
	return ring->provider == NVME_HMB_TRACE_PROVIDER_NVME_PCI;
}

/*
 * ivshmem and the test producer: PTEs are made here, on first access,
 * never in ->mmap: a VMA can fault only once it is linked into the file's
 * i_mmap, so the zap in hmb_trace_zap_mappings() always finds every PTE.
 * ring->lock orders the dead check and the insert against unregistering: a
 * fault either inserts before the provider starts going away (and is
 * zapped) or sees dead and gets SIGBUS.  A DMA slice has every PTE from
 * ->mmap; a fault there comes after the zap (or after munmap of part of
 * the VMA): SIGBUS.
 */
static vm_fault_t hmb_vm_fault(struct vm_fault *vmf)
{
	struct hmb_trace_ring *ring = vmf->vma->vm_private_data;
	vm_fault_t ret;

	if (vmf->pgoff >= ring->prov.mmap_len >> PAGE_SHIFT || hmb_ring_is_dma(ring))
		return VM_FAULT_SIGBUS;
	mutex_lock(&ring->lock);
	if (ring->dead)
		ret = VM_FAULT_SIGBUS;
	else
		ret = vmf_insert_pfn(vmf->vma, vmf->address,
				     hmb_ring_pfn(ring, vmf->pgoff));
	mutex_unlock(&ring->lock);
	return ret;
}

static const struct vm_operations_struct hmb_vm_ops = {
	.fault = hmb_vm_fault,
};

/*
 * Remember that current->mm is mapping the DMA slice (once per address
 * space; those whose processes are gone are forgotten here).  Called with
 * ring->lock held, from ->mmap, with the mmap lock of current->mm held for
 * writing.
 */
static int hmb_note_map_mm(struct hmb_trace_ring *ring)
{
	struct hmb_map_mm *e, *n;
	bool found = false;

	list_for_each_entry_safe(e, n, &ring->chr.map_mms, node) {
		if (e->mm == current->mm) {
			found = true;
		} else if (!atomic_read(&e->mm->mm_users)) {
			list_del(&e->node);
			mmdrop(e->mm);
			kfree(e);
		}
	}
	if (found)
		return 0;
	e = kmalloc(sizeof(*e), GFP_KERNEL);
	if (!e)
		return -ENOMEM;
	mmgrab(current->mm);
	e->mm = current->mm;
	list_add(&e->node, &ring->chr.map_mms);
	return 0;
}

static int hmb_mmap(struct file *filp, struct vm_area_struct *vma)
{
	struct hmb_file *hf = filp->private_data;
	struct hmb_trace_ring *ring = hf->ring;
	unsigned long len = vma->vm_end - vma->vm_start;
	unsigned long off = vma->vm_pgoff;
	int ret = 0;

	/* The ring belongs to the producer; the consumer only reads. */
	if (vma->vm_flags & VM_WRITE)
		return -EACCES;
	if (off >= ring->prov.mmap_len >> PAGE_SHIFT ||
	    len > ring->prov.mmap_len - (off << PAGE_SHIFT))
		return -EINVAL;

	mutex_lock(&ring->lock);
	if (ring->dead) {
		ret = -ENODEV;
		goto out;
	}
	/*
	 * No VM_MAYWRITE: mprotect() cannot make it writable and FOLL_FORCE
	 * (/proc/PID/mem) cannot write it.  Raw page frames, no struct page
	 * references: VM_PFNMAP | VM_IO.
	 */
	vm_flags_clear(vma, VM_MAYWRITE);
	vm_flags_set(vma, VM_PFNMAP | VM_IO | VM_DONTEXPAND | VM_DONTDUMP |
		     VM_DONTCOPY);
	vma->vm_ops = &hmb_vm_ops;
	vma->vm_private_data = ring;
	if (hmb_ring_is_dma(ring)) {
		/*
		 * Coherent DMA memory is mapped by the DMA API, with the
		 * protection it chose for the kernel's mapping, all at once.
		 * The VMA joins the file's i_mmap only after ->mmap returns,
		 * so the zap on unregistering could miss these PTEs: it first
		 * waits for this mmap lock (hmb_trace_zap_mappings()).
		 */
		ret = hmb_note_map_mm(ring);
		if (!ret)
			ret = dma_mmap_coherent(ring->prov.parent, vma, ring->prov.kaddr,
						ring->prov.addr, ring->prov.size);
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
	struct hmb_map_mm *e, *n;
	struct hmb_file *hf;
	LIST_HEAD(mms);

	/*
	 * A DMA slice is mapped in ->mmap (dma_mmap_coherent()), before the
	 * VMA is in i_mmap.  Every mmap that got past the dead check noted
	 * its address space, and holds its mmap lock until the VMA is
	 * linked: taking each lock once means unmap_mapping_range() below
	 * finds them all.  ring->lock is not held meanwhile (->mmap takes it
	 * inside the mmap lock).
	 */
	mutex_lock(&ring->lock);
	list_splice_init(&ring->chr.map_mms, &mms);
	mutex_unlock(&ring->lock);
	list_for_each_entry_safe(e, n, &mms, node) {
		mmap_read_lock(e->mm);
		mmap_read_unlock(e->mm);
		list_del(&e->node);
		mmdrop(e->mm);
		kfree(e);
	}

	mutex_lock(&ring->lock);
	list_for_each_entry(hf, &ring->chr.vmas, node)
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
};
