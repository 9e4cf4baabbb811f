// SPDX-License-Identifier: GPL-2.0
/*
 * core.c - ring registration, the class device and its sysfs attributes,
 * and the head sampler that wakes pollers and the bridge.
 */
#include <linux/err.h>
#include <linux/fs.h>
#include <linux/idr.h>
#include <linux/kernel.h>
#include <linux/log2.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/sysfs.h>

#include "hmb_trace_priv.h"
#include "hmb_trace_events.h"

#define HMB_TRACE_MAX_RINGS	64
/* Idle back-off stops doubling the sampling interval at this factor. */
#define HMB_POLL_BACKOFF_MAX	64
#define HMB_POLL_MIN_US		10
#define HMB_POLL_MAX_US		1000000

static unsigned int poll_interval_us = 1000;
module_param(poll_interval_us, uint, 0644);
MODULE_PARM_DESC(poll_interval_us,
		 "default head sampling interval of new rings in microseconds (10..1000000)");

static dev_t hmb_devt;
static DEFINE_IDA(hmb_ida);

static char *hmb_devnode(hmb_class_dev *dev, umode_t *mode)
{
	/* Root only by default; packaging/udev may delegate it to a group. */
	if (mode)
		*mode = 0600;
	return NULL;
}

static struct class hmb_class = {
	.name = HMB_TRACE_DRV_NAME,
	.devnode = hmb_devnode,
};

static const char * const hmb_reason_names[] = {
	[HMB_CORRUPT_NONE] = "none",
	[HMB_CORRUPT_RING_MAGIC] = "ring magic changed",
	[HMB_CORRUPT_RING_VERSION] = "ring version changed",
	[HMB_CORRUPT_RING_GEOMETRY] = "ring size or record area offset changed",
	[HMB_CORRUPT_HEAD_UNALIGNED] = "head not 8-byte aligned",
	[HMB_CORRUPT_HEAD_BACKWARDS] = "head moved backwards",
	[HMB_CORRUPT_HEAD_AHEAD] = "head more than ring_size ahead of tail",
	[HMB_CORRUPT_REC_MAGIC] = "bad record magic",
	[HMB_CORRUPT_REC_LEN] = "payload_len above 4064",
	[HMB_CORRUPT_REC_STRADDLE] = "record crosses the end of the lap",
	[HMB_CORRUPT_REC_BEYOND_HEAD] = "record ends beyond head",
	[HMB_CORRUPT_SKIP_BEYOND_HEAD] = "lap skip ends beyond head",
	[HMB_CORRUPT_MARKER_LEN] = "wrap marker with a payload",
	[HMB_CORRUPT_TAIL_UNALIGNED] = "tail not 8-byte aligned",
};

const char *hmb_trace_reason_str(enum hmb_trace_corrupt_reason reason)
{
	if (reason >= ARRAY_SIZE(hmb_reason_names))
		return "unknown";
	return hmb_reason_names[reason];
}

/*
 * Cursor sanity against the values fixed at registration.  The ring is
 * written by a device (or a VM host process) that may be buggy, so every
 * sample is checked before anyone acts on it.
 */
enum hmb_trace_corrupt_reason hmb_trace_check_cursors(struct hmb_trace_ring *ring,
						      u64 head, u64 tail)
{
	if (head & (HMB_RECORD_ALIGN - 1))
		return HMB_CORRUPT_HEAD_UNALIGNED;
	if (hmb_cursor_before(head, tail))
		return HMB_CORRUPT_HEAD_BACKWARDS;
	if (head - tail > ring->prov.ring_size)
		return HMB_CORRUPT_HEAD_AHEAD;
	return HMB_CORRUPT_NONE;
}

static enum hmb_trace_corrupt_reason hmb_check_header(struct hmb_trace_ring *ring)
{
	struct hmb_ring_hdr *hdr = ring->prov.hdr;

	if (hmb_le32(READ_ONCE(hdr->magic)) != HMB_RING_MAGIC)
		return HMB_CORRUPT_RING_MAGIC;
	if (hmb_le32(READ_ONCE(hdr->version)) != HMB_TRACE_ABI_VERSION)
		return HMB_CORRUPT_RING_VERSION;
	if (hmb_le32(READ_ONCE(hdr->ring_size)) != ring->prov.ring_size ||
	    hmb_le32(READ_ONCE(hdr->record_area_off)) != HMB_RECORD_AREA_OFF)
		return HMB_CORRUPT_RING_GEOMETRY;
	return HMB_CORRUPT_NONE;
}

/*
 * A stopped ring (FROZEN) may be re-initialised by its producer side
 * (docs/format.md §11.2): head and tail go back to 0 and a new epoch
 * begins.  The rewrite is recognised by FROZEN, by a new sync generation
 * (nvme-pci and the test producer bump it) or by tail going backwards
 * (only the consumer side moves tail, and only forward); until FROZEN is
 * clear again the cursors are not checked.  Returns true if the ring may
 * be checked now.
 */
static bool hmb_sampler_epoch(struct hmb_trace_ring *ring, u32 flags, u64 head,
			      u64 tail, u32 gen, u64 pub)
{
	/*
	 * The consumer published @pub through the kernel: a header tail
	 * below it later in this epoch is a rewrite, even when the producer
	 * held FROZEN too briefly for the timer to see it.
	 */
	if (pub != HMB_NO_TAIL && !ring->smp.frozen &&
	    hmb_cursor_before(ring->smp.tail, pub))
		ring->smp.tail = pub;
	if ((flags & HMB_RING_FLAG_FROZEN) || gen != ring->smp.gen ||
	    hmb_cursor_before(tail, ring->smp.tail))
		ring->smp.frozen = true;
	if (!ring->smp.frozen)
		return true;
	if (flags & HMB_RING_FLAG_FROZEN)
		return false;
	/* FROZEN seen and clear again: thawed, or a new epoch. */
	if (hmb_trace_check_cursors(ring, head, tail) != HMB_CORRUPT_NONE)
		return true;	/* cleared over bad cursors: that is corrupt */
	if (gen != ring->smp.gen || hmb_cursor_before(tail, ring->smp.tail) ||
	    hmb_cursor_before(head, ring->smp.head)) {
		dev_info_ratelimited(&ring->dev, "ring re-initialised: head %llu tail %llu\n",
				     head, tail);
		WRITE_ONCE(ring->smp.head, head);
	}
	ring->smp.tail = tail;
	ring->smp.gen = gen;
	ring->smp.frozen = false;
	return true;
}

/*
 * The sampler: producers (firmware, a VM host process) cannot interrupt us,
 * so a timer looks at head.  It runs only while a consumer is attached, and
 * doubles its interval while nothing moves.
 */
static enum hrtimer_restart hmb_sampler_fn(struct hrtimer *t)
{
	struct hmb_trace_ring *ring = container_of(t, struct hmb_trace_ring, smp.timer);
	struct hmb_ring_hdr *hdr = ring->prov.hdr;
	enum hmb_trace_corrupt_reason reason;
	u64 base_ns = (u64)READ_ONCE(ring->smp.poll_interval_us) * NSEC_PER_USEC;
	u64 head, tail, pub;
	u32 flags, gen;
	bool active;

	/*
	 * Taken before the header is read (a full barrier): a tail published
	 * after this is in the header read below or left for the next run.
	 */
	pub = atomic64_xchg(&ring->smp.pub_tail, HMB_NO_TAIL);
	gen = READ_ONCE(ring->prov.sync->gen);
	/* Pairs with the release that clears FROZEN after a re-initialisation. */
	flags = hmb_le32(smp_load_acquire(&hdr->flags));
	head = hmb_hdr_head_acquire(hdr);
	tail = hmb_hdr_tail(hdr);

	reason = hmb_check_header(ring);
	if (reason == HMB_CORRUPT_NONE &&
	    hmb_sampler_epoch(ring, flags, head, tail, gen, pub)) {
		if (hmb_cursor_before(head, ring->smp.head))
			reason = HMB_CORRUPT_HEAD_BACKWARDS;
		else
			reason = hmb_trace_check_cursors(ring, head, tail);
	}
	if (reason != HMB_CORRUPT_NONE && ring->reason == HMB_CORRUPT_NONE) {
		WRITE_ONCE(ring->reason, reason);
		trace_hmb_trace_corrupt(ring->id, head,
					(u32)(head & (ring->prov.ring_size - 1)),
					hmb_trace_reason_str(reason));
		wake_up_interruptible_all(&ring->wq);
	}

	if ((flags & HMB_RING_FLAG_OVERFLOWED) &&
	    !(ring->smp.flags & HMB_RING_FLAG_OVERFLOWED))
		trace_hmb_trace_overflow(ring->id, head, tail, flags);
	if ((flags & HMB_RING_FLAG_FROZEN) &&
	    !(ring->smp.flags & HMB_RING_FLAG_FROZEN)) {
		trace_hmb_trace_frozen(ring->id, head, tail, flags);
		wake_up_interruptible_all(&ring->wq);
	}
	/* Thawed or re-initialised: a poller blocked on POLLPRI looks again. */
	if (!(flags & HMB_RING_FLAG_FROZEN) &&
	    (ring->smp.flags & HMB_RING_FLAG_FROZEN))
		wake_up_interruptible_all(&ring->wq);

	active = head != ring->smp.head;
	if (!ring->smp.frozen) {
		if (!hmb_cursor_before(head, ring->smp.head))
			WRITE_ONCE(ring->smp.head, head);
		if (!hmb_cursor_before(tail, ring->smp.tail))
			ring->smp.tail = tail;
	}
	WRITE_ONCE(ring->smp.flags, flags);

	if (head != tail) {
		if (READ_ONCE(ring->owner) == HMB_OWNER_BRIDGE)
			queue_work(system_unbound_wq, &ring->br.work);
		else
			wake_up_interruptible(&ring->wq);
	}

	if (active || head != tail)
		ring->smp.cur_interval_ns = base_ns;
	else if (ring->smp.cur_interval_ns < base_ns * HMB_POLL_BACKOFF_MAX)
		ring->smp.cur_interval_ns *= 2;
	hrtimer_forward_now(t, ns_to_ktime(ring->smp.cur_interval_ns));
	return HRTIMER_RESTART;
}

/* Caller holds ring->lock and has just set an owner. */
void hmb_trace_start_sampler(struct hmb_trace_ring *ring)
{
	ring->smp.cur_interval_ns = (u64)ring->smp.poll_interval_us * NSEC_PER_USEC;
	ring->smp.gen = READ_ONCE(ring->prov.sync->gen);
	ring->smp.head = hmb_hdr_head_acquire(ring->prov.hdr);
	ring->smp.tail = hmb_hdr_tail(ring->prov.hdr);
	atomic64_set(&ring->smp.pub_tail, HMB_NO_TAIL);
	ring->smp.flags = hmb_hdr_flags(ring->prov.hdr);
	ring->smp.frozen = false;
	ring->reason = HMB_CORRUPT_NONE;
	hrtimer_start(&ring->smp.timer, ns_to_ktime(ring->smp.cur_interval_ns),
		      HRTIMER_MODE_REL_SOFT);
}

/*
 * Caller holds ring->lock; afterwards no sampler touches the ring memory
 * and none queues the bridge.  Harmless when the sampler is not running.
 */
void hmb_trace_stop_sampler(struct hmb_trace_ring *ring)
{
	hrtimer_cancel(&ring->smp.timer);
}

/* ---- sysfs ---- */

static ssize_t ring_size_show(struct device *dev, struct device_attribute *attr,
			      char *buf)
{
	return sysfs_emit(buf, "%u\n", to_hmb_ring(dev)->prov.ring_size);
}
static DEVICE_ATTR_RO(ring_size);

enum hmb_hdr_field { HMB_F_HEAD, HMB_F_TAIL, HMB_F_FLAGS };

/* Live header values; the ring memory is valid only while not dead. */
static ssize_t hmb_show_hdr(struct device *dev, char *buf,
			    enum hmb_hdr_field f)
{
	struct hmb_trace_ring *ring = to_hmb_ring(dev);
	ssize_t ret;

	mutex_lock(&ring->lock);
	if (ring->dead)
		ret = -ENODEV;
	else if (f == HMB_F_FLAGS)
		ret = sysfs_emit(buf, "%u\n", hmb_hdr_flags(ring->prov.hdr));
	else
		ret = sysfs_emit(buf, "%llu\n", f == HMB_F_HEAD ?
				 hmb_le64(READ_ONCE(ring->prov.hdr->head)) :
				 hmb_hdr_tail(ring->prov.hdr));
	mutex_unlock(&ring->lock);
	return ret;
}

static ssize_t head_show(struct device *dev, struct device_attribute *attr,
			 char *buf)
{
	return hmb_show_hdr(dev, buf, HMB_F_HEAD);
}
static DEVICE_ATTR_RO(head);

static ssize_t tail_show(struct device *dev, struct device_attribute *attr,
			 char *buf)
{
	return hmb_show_hdr(dev, buf, HMB_F_TAIL);
}
static DEVICE_ATTR_RO(tail);

static ssize_t flags_show(struct device *dev, struct device_attribute *attr,
			  char *buf)
{
	return hmb_show_hdr(dev, buf, HMB_F_FLAGS);
}
static DEVICE_ATTR_RO(flags);

static ssize_t provider_show(struct device *dev, struct device_attribute *attr,
			     char *buf)
{
	static const char * const kinds[] = {
		[NVME_HMB_TRACE_PROVIDER_NVME_PCI] = "nvme-pci",
		[NVME_HMB_TRACE_PROVIDER_IVSHMEM] = "ivshmem",
		[NVME_HMB_TRACE_PROVIDER_TEST] = "test",
	};
	u32 p = to_hmb_ring(dev)->provider;

	return sysfs_emit(buf, "%s\n", p < ARRAY_SIZE(kinds) && kinds[p] ?
			  kinds[p] : "unknown");
}
static DEVICE_ATTR_RO(provider);

static ssize_t name_show(struct device *dev, struct device_attribute *attr,
			 char *buf)
{
	return sysfs_emit(buf, "%s\n", to_hmb_ring(dev)->name);
}
static DEVICE_ATTR_RO(name);

static ssize_t consumer_show(struct device *dev, struct device_attribute *attr,
			     char *buf)
{
	struct hmb_trace_ring *ring = to_hmb_ring(dev);
	ssize_t ret;

	mutex_lock(&ring->lock);
	switch (ring->owner) {
	case HMB_OWNER_CHARDEV:
		ret = sysfs_emit(buf, "%s %d\n", ring->chr.comm,
				 ring->chr.pid);
		break;
	case HMB_OWNER_BRIDGE:
	case HMB_OWNER_BRIDGE_STOPPING:
		ret = sysfs_emit(buf, "bridge\n");
		break;
	default:
		ret = sysfs_emit(buf, "none\n");
		break;
	}
	mutex_unlock(&ring->lock);
	return ret;
}
static DEVICE_ATTR_ADMIN_RO(consumer);	/* task name and pid: root only */

static ssize_t corrupt_show(struct device *dev, struct device_attribute *attr,
			    char *buf)
{
	return sysfs_emit(buf, "%s\n",
			  hmb_trace_reason_str(READ_ONCE(to_hmb_ring(dev)->reason)));
}
static DEVICE_ATTR_RO(corrupt);

static ssize_t poll_interval_us_show(struct device *dev,
				     struct device_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%u\n", READ_ONCE(to_hmb_ring(dev)->smp.poll_interval_us));
}

static ssize_t poll_interval_us_store(struct device *dev,
				      struct device_attribute *attr,
				      const char *buf, size_t count)
{
	u32 v;
	int ret;

	ret = kstrtou32(buf, 0, &v);
	if (ret)
		return ret;
	if (v < HMB_POLL_MIN_US || v > HMB_POLL_MAX_US)
		return -ERANGE;
	WRITE_ONCE(to_hmb_ring(dev)->smp.poll_interval_us, v);
	return count;
}
static DEVICE_ATTR_RW(poll_interval_us);

static ssize_t bridge_show(struct device *dev, struct device_attribute *attr,
			   char *buf)
{
	return sysfs_emit(buf, "%d\n",
			  READ_ONCE(to_hmb_ring(dev)->owner) == HMB_OWNER_BRIDGE);
}

static ssize_t bridge_store(struct device *dev, struct device_attribute *attr,
			    const char *buf, size_t count)
{
	struct hmb_trace_ring *ring = to_hmb_ring(dev);
	bool on;
	int ret;

	ret = kstrtobool(buf, &on);
	if (ret)
		return ret;
	if (on) {
		ret = hmb_bridge_enable(ring);
	} else {
		hmb_bridge_disable(ring);
		ret = 0;
	}
	return ret ? ret : count;
}
static DEVICE_ATTR_RW(bridge);

#define HMB_BRIDGE_ATTR(field)						\
static ssize_t bridge_##field##_show(struct device *dev,		\
				     struct device_attribute *attr,	\
				     char *buf)				\
{									\
	return sysfs_emit(buf, "%llu\n",				\
			  READ_ONCE(to_hmb_ring(dev)->br.stats.field));	\
}									\
static DEVICE_ATTR_RO(bridge_##field)

HMB_BRIDGE_ATTR(records);
HMB_BRIDGE_ATTR(bytes);
HMB_BRIDGE_ATTR(markers);
HMB_BRIDGE_ATTR(ignored);
HMB_BRIDGE_ATTR(lost);
HMB_BRIDGE_ATTR(overflows);
HMB_BRIDGE_ATTR(corrupt);
HMB_BRIDGE_ATTR(epochs);
HMB_BRIDGE_ATTR(duplicates);

static struct attribute *hmb_ring_attrs[] = {
	&dev_attr_ring_size.attr,
	&dev_attr_head.attr,
	&dev_attr_tail.attr,
	&dev_attr_flags.attr,
	&dev_attr_provider.attr,
	&dev_attr_name.attr,
	&dev_attr_consumer.attr,
	&dev_attr_corrupt.attr,
	&dev_attr_poll_interval_us.attr,
	&dev_attr_bridge.attr,
	&dev_attr_bridge_records.attr,
	&dev_attr_bridge_bytes.attr,
	&dev_attr_bridge_markers.attr,
	&dev_attr_bridge_ignored.attr,
	&dev_attr_bridge_lost.attr,
	&dev_attr_bridge_overflows.attr,
	&dev_attr_bridge_corrupt.attr,
	&dev_attr_bridge_epochs.attr,
	&dev_attr_bridge_duplicates.attr,
	NULL,
};

static const struct attribute_group hmb_ring_group = {
	.attrs = hmb_ring_attrs,
};

static const struct attribute_group *hmb_ring_groups[] = {
	&hmb_ring_group,
	NULL,
};

static const struct attribute_group *hmb_test_ring_groups[] = {
	&hmb_ring_group,
	&hmb_test_attr_group,
	NULL,
};

/* ---- registration ---- */

static void hmb_ring_release(struct device *dev)
{
	struct hmb_trace_ring *ring = to_hmb_ring(dev);

	ida_free(&hmb_ida, ring->id);
	kfree(ring);
}

/*
 * Only the test producer's ring is ours to initialise.  Every other
 * provider hands over a slice whose header its producer side wrote (nvme
 * before Set Features, the VM host for ivshmem) and that a controller may
 * be using right now: it is adopted after validation, never rewritten.
 */
static int hmb_ring_setup_header(struct device *parent, void *kaddr,
				 size_t size, u32 provider, u32 *ring_size)
{
	struct hmb_ring_hdr *hdr = kaddr;
	u32 magic, version, rsz, off;
	u64 head, tail;

	if (provider == NVME_HMB_TRACE_PROVIDER_TEST) {
		rsz = rounddown_pow_of_two(min_t(size_t, size - HMB_RING_HDR_SIZE,
						 HMB_RING_MAX_SIZE));
		hmb_ring_hdr_init(hdr, rsz);
		*ring_size = rsz;
		return 0;
	}

	magic = hmb_le32(READ_ONCE(hdr->magic));
	version = hmb_le32(READ_ONCE(hdr->version));
	rsz = hmb_le32(READ_ONCE(hdr->ring_size));
	off = hmb_le32(READ_ONCE(hdr->record_area_off));
	head = hmb_le64(READ_ONCE(hdr->head));
	tail = hmb_hdr_tail(hdr);
	if (magic != HMB_RING_MAGIC) {
		dev_err(parent, "no trace ring header (magic %#010x, want %#010x): %s\n",
			magic, HMB_RING_MAGIC,
			provider == NVME_HMB_TRACE_PROVIDER_IVSHMEM ?
			"initialise it first (hmb-fwsim on the VM host)" :
			"the provider must write it before handing the slice over");
		return -ENODATA;
	}
	if (version > HMB_TRACE_ABI_VERSION) {
		dev_err(parent, "trace ring version %u is newer than this module's %u; refusing to interpret it\n",
			version, HMB_TRACE_ABI_VERSION);
		return -EPROTONOSUPPORT;
	}
	if (version != HMB_TRACE_ABI_VERSION) {
		dev_err(parent, "trace ring version %u is invalid\n", version);
		return -EINVAL;
	}
	if (off != HMB_RECORD_AREA_OFF || !is_power_of_2(rsz) ||
	    rsz < HMB_RING_MIN_SIZE || (u64)off + rsz > size) {
		dev_err(parent, "trace ring geometry invalid: ring_size %u record_area_off %#x in a %zu-byte region\n",
			rsz, off, size);
		return -EINVAL;
	}
	if ((head | tail) & (HMB_RECORD_ALIGN - 1) ||
	    hmb_cursor_before(head, tail) || head - tail > rsz) {
		dev_err(parent, "trace ring cursors invalid: head %llu tail %llu ring_size %u\n",
			head, tail, rsz);
		return -EINVAL;
	}
	*ring_size = rsz;
	return 0;
}

struct hmb_trace_ring *hmb_ring_register(struct device *parent, void *kaddr,
					 dma_addr_t addr, size_t size,
					 const char *name, u32 provider,
					 struct hmb_test_producer *test,
					 struct hmb_trace_sync *sync)
{
	struct hmb_trace_ring *ring;
	u32 ring_size;
	int ret;

	if (!parent || !kaddr || !name || !PAGE_ALIGNED(kaddr) ||
	    size < HMB_RING_HDR_SIZE + HMB_RING_MIN_SIZE)
		return ERR_PTR(-EINVAL);
	if (provider < NVME_HMB_TRACE_PROVIDER_NVME_PCI ||
	    provider > NVME_HMB_TRACE_PROVIDER_TEST)
		return ERR_PTR(-EINVAL);

	ret = hmb_ring_setup_header(parent, kaddr, size, provider, &ring_size);
	if (ret)
		return ERR_PTR(ret);

	ring = kzalloc(sizeof(*ring), GFP_KERNEL);
	if (!ring)
		return ERR_PTR(-ENOMEM);

	ret = ida_alloc_max(&hmb_ida, HMB_TRACE_MAX_RINGS - 1, GFP_KERNEL);
	if (ret < 0) {
		kfree(ring);
		return ERR_PTR(ret);
	}
	ring->id = ret;
	ring->provider = provider;
	strscpy(ring->name, name, sizeof(ring->name));
	strscpy(ring->ctrl, dev_name(parent), sizeof(ring->ctrl));
	ring->prov.parent = parent;
	ring->prov.kaddr = kaddr;
	ring->prov.addr = addr;
	ring->prov.size = size;
	ring->prov.hdr = kaddr;
	ring->prov.area = (u8 *)kaddr + HMB_RECORD_AREA_OFF;
	ring->prov.ring_size = ring_size;
	ring->prov.mmap_len = PAGE_ALIGN(HMB_RECORD_AREA_OFF + (size_t)ring_size);
	ring->prov.test = test;
	spin_lock_init(&ring->prov.own_sync.lock);
	ring->prov.sync = sync ? sync : &ring->prov.own_sync;
	ring->smp.poll_interval_us = clamp_t(u32, poll_interval_us,
					     HMB_POLL_MIN_US, HMB_POLL_MAX_US);
	mutex_init(&ring->lock);
	INIT_LIST_HEAD(&ring->chr.vmas);
	INIT_LIST_HEAD(&ring->chr.map_mms);
	init_waitqueue_head(&ring->wq);
	hrtimer_init(&ring->smp.timer, CLOCK_MONOTONIC, HRTIMER_MODE_REL_SOFT);
	ring->smp.timer.function = hmb_sampler_fn;
	INIT_WORK(&ring->br.work, hmb_bridge_work);

	device_initialize(&ring->dev);
	ring->dev.class = &hmb_class;
	ring->dev.parent = parent;
	ring->dev.devt = MKDEV(MAJOR(hmb_devt), ring->id);
	ring->dev.groups = test ? hmb_test_ring_groups : hmb_ring_groups;
	ring->dev.release = hmb_ring_release;
	ret = dev_set_name(&ring->dev, HMB_TRACE_DRV_NAME "%d", ring->id);
	if (ret)
		goto err_put;

	cdev_init(&ring->chr.cdev, &hmb_trace_fops);
	ring->chr.cdev.owner = THIS_MODULE;
	ret = cdev_device_add(&ring->chr.cdev, &ring->dev);
	if (ret)
		goto err_put;

	dev_info(&ring->dev, "%s ring '%s' of %s: ring_size %u, mapping %zu bytes\n",
		 test ? "test" : provider == NVME_HMB_TRACE_PROVIDER_IVSHMEM ?
		 "ivshmem" : "nvme-pci", ring->name, ring->ctrl, ring_size,
		 ring->prov.mmap_len);
	return ring;

err_put:
	put_device(&ring->dev);	/* frees the id and the ring */
	return ERR_PTR(ret);
}

/**
 * hmb_trace_register_ring() - expose a trace slice as /dev/nvme-hmb-traceN.
 * @parent: the provider's device; also used for dma_mmap_coherent().
 * @kaddr: page-aligned kernel address of the slice (ring header first).
 * @addr: for %NVME_HMB_TRACE_PROVIDER_IVSHMEM the physical address of the
 *	slice (a RAM-backed BAR, mapped to users page by page as they touch
 *	it); for %NVME_HMB_TRACE_PROVIDER_NVME_PCI the DMA address that
 *	dma_alloc_coherent() returned with @kaddr for @parent (the whole
 *	allocation: users get it through dma_mmap_coherent()).
 * @size: bytes of the slice, a multiple of PAGE_SIZE.
 * @name: short name of the ring (for example "hmb" or "ivshmem").
 * @provider: NVME_HMB_TRACE_PROVIDER_NVME_PCI or _IVSHMEM.
 *
 * The ring header must already be valid: its producer side wrote it (the
 * VM host process for ivshmem, as firmware would; nvme-pci before Set
 * Features), and a controller may be using it, so it is validated and
 * adopted, never rewritten.  A version above %HMB_TRACE_ABI_VERSION is
 * refused with a message naming both versions.  nvme-pci itself does not
 * call this: its slices come through the auxiliary bus (nvmepci.c).
 *
 * The memory must stay valid until hmb_trace_unregister_ring() returns;
 * after that no user mapping or kernel path touches it.
 *
 * Context: process context, may sleep.
 * Return: the ring, or an ERR_PTR(): -EINVAL for bad arguments or a bad
 * header, -ENODATA when the ivshmem header has no magic, -EPROTONOSUPPORT
 * for a newer ring version, -ENOSPC when all ring ids are in use, -ENOMEM.
 */
struct hmb_trace_ring *hmb_trace_register_ring(struct device *parent,
					       void *kaddr, dma_addr_t addr,
					       size_t size, const char *name,
					       u32 provider)
{
	if (provider == NVME_HMB_TRACE_PROVIDER_TEST)
		return ERR_PTR(-EINVAL);
	return hmb_ring_register(parent, kaddr, addr, size, name, provider,
				 NULL, NULL);
}
EXPORT_SYMBOL_GPL(hmb_trace_register_ring);

/**
 * hmb_trace_unregister_ring() - withdraw a ring before its memory goes away.
 * @ring: a ring returned by hmb_trace_register_ring(); NULL or an ERR_PTR()
 *	is ignored.
 *
 * Stops the bridge and the sampler, zaps every user mapping of the slice
 * (later accesses get SIGBUS), wakes pollers with POLLHUP and removes the
 * device node.  Open files keep the (now dead) ring object alive and get
 * -ENODEV from ioctl() and mmap(); the slice itself is never touched again.
 *
 * Context: process context, may sleep.
 */
void hmb_trace_unregister_ring(struct hmb_trace_ring *ring)
{
	if (IS_ERR_OR_NULL(ring))
		return;

	/*
	 * One section: once dead is set no bridge=1 write, open or mmap can
	 * take the ring again, so nothing re-arms the sampler after this.
	 */
	mutex_lock(&ring->lock);
	ring->dead = true;
	if (ring->owner == HMB_OWNER_BRIDGE) {
		ring->owner = HMB_OWNER_NONE;
		trace_hmb_trace_consumer(ring->id, false, "bridge", 0);
	}
	hmb_trace_stop_sampler(ring);
	mutex_unlock(&ring->lock);
	/* Outside the lock: a batch that still runs must not block sysfs. */
	cancel_work_sync(&ring->br.work);
	hmb_trace_zap_mappings(ring);
	wake_up_interruptible_all(&ring->wq);
	dev_info(&ring->dev, "ring '%s' of %s removed\n", ring->name, ring->ctrl);
	cdev_device_del(&ring->chr.cdev, &ring->dev);
	put_device(&ring->dev);
}
EXPORT_SYMBOL_GPL(hmb_trace_unregister_ring);

static int __init hmb_trace_init(void)
{
	int ret;

	ret = alloc_chrdev_region(&hmb_devt, 0, HMB_TRACE_MAX_RINGS,
				  HMB_TRACE_DRV_NAME);
	if (ret)
		return ret;
	ret = class_register(&hmb_class);
	if (ret)
		goto err_chrdev;
	ret = hmb_ivshmem_init();
	if (ret)
		goto err_class;
	ret = hmb_test_init();
	if (ret)
		goto err_ivshmem;
	ret = hmb_nvmepci_init();
	if (ret)
		goto err_test;
	return 0;

err_test:
	hmb_test_exit();
err_ivshmem:
	hmb_ivshmem_exit();
err_class:
	class_unregister(&hmb_class);
err_chrdev:
	unregister_chrdev_region(hmb_devt, HMB_TRACE_MAX_RINGS);
	return ret;
}

static void __exit hmb_trace_exit(void)
{
	hmb_nvmepci_exit();
	hmb_test_exit();
	hmb_ivshmem_exit();
	class_unregister(&hmb_class);
	unregister_chrdev_region(hmb_devt, HMB_TRACE_MAX_RINGS);
	ida_destroy(&hmb_ida);
}

module_init(hmb_trace_init);
module_exit(hmb_trace_exit);

MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("NVMe HMB firmware trace ring: char device, tracepoints, bridge");
MODULE_AUTHOR("nvme-hmb-trace project");
