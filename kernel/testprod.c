// SPDX-License-Identifier: GPL-2.0
/*
 * testprod.c - in-kernel test producer: its own ring in vmalloc memory and a
 * kthread that writes records by the v1 producer rules (docs/format.md):
 * overflow drops the record, sets OVERFLOWED and still consumes its seq; a
 * record never straddles the end of the lap (wrap marker when >= 32 bytes
 * are left, implicit skip otherwise); head is published with release.
 */
#include <linux/delay.h>
#include <linux/err.h>
#include <linux/kthread.h>
#include <linux/log2.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/sched.h>
#include <linux/sizes.h>
#include <linux/slab.h>
#include <linux/vmalloc.h>

#include "hmb_trace_priv.h"

#define HMB_TEST_MAX_RINGS	4
/* Records produced between two checks for stop/resched at full rate. */
#define HMB_TEST_BATCH		256
#define HMB_TEST_TICK_US	1000

static unsigned int test_rings;
module_param(test_rings, uint, 0444);
MODULE_PARM_DESC(test_rings, "number of test producer rings to create (0..4)");

static unsigned int test_ring_kb = 1024;
module_param(test_ring_kb, uint, 0444);
MODULE_PARM_DESC(test_ring_kb,
		 "record area size of each test ring in KiB (power of two, 8..65536)");

/**
 * struct hmb_test_producer - one test ring and its producer.
 * @ring: the registered ring.
 * @mem: vmalloc_user() memory of the slice.
 * @memsz: its size.
 * @hdr: ring header in @mem.
 * @area: record area in @mem.
 * @ring_size: record area size.
 * @task: producer thread.
 * @wq: wakes @task when @running changes.
 * @lock: serialises producing, configuration and reset.
 * @running: the thread produces.
 * @rate: records per second, 0 for as fast as possible.
 * @payload_min: smallest payload.
 * @payload_max: largest payload.
 * @head: producer cursor (published copy lives in @hdr).
 * @start_cursor: where reset puts head and tail (cursors count modulo 2^64,
 *	so a test can start just below the wrap of the counter itself).
 * @seq: next sequence number.
 * @rnd: xorshift state for payload lengths.
 * @produced: records written.
 * @dropped: records dropped because the ring was full.
 * @markers: wrap markers written.
 * @skips: implicit lap skips (fewer than 32 bytes left).
 * @bytes: bytes head advanced by.
 */
struct hmb_test_producer {
	struct hmb_trace_ring *ring;
	void *mem;
	size_t memsz;
	struct hmb_ring_hdr *hdr;
	u8 *area;
	u32 ring_size;
	struct task_struct *task;
	wait_queue_head_t wq;
	struct mutex lock;	/* see kernel-doc above */
	bool running;
	u32 rate;
	u32 payload_min;
	u32 payload_max;
	u64 head;
	u64 start_cursor;
	u32 seq;
	u32 rnd;
	u64 produced;
	u64 dropped;
	u64 markers;
	u64 skips;
	u64 bytes;
};

static struct device *hmb_test_parent;
static struct hmb_test_producer *hmb_tests[HMB_TEST_MAX_RINGS];

static u32 hmb_test_rand(struct hmb_test_producer *tp)
{
	u32 x = tp->rnd;

	x ^= x << 13;
	x ^= x >> 17;
	x ^= x << 5;
	tp->rnd = x;
	return x;
}

static void hmb_test_set_flags(struct hmb_test_producer *tp, u32 set, u32 clear)
{
	u32 f = hmb_hdr_flags(tp->hdr);

	WRITE_ONCE(tp->hdr->flags, hmb_cpu_to_le32((f | set) & ~clear));
}

static void hmb_test_fill(struct hmb_test_producer *tp, u32 off, u32 seq,
			  u8 flags, u16 len)
{
	struct hmb_record_hdr *rh = (struct hmb_record_hdr *)(tp->area + off);
	u8 *p = tp->area + off + HMB_RECORD_HDR_SIZE;
	u32 i;

	rh->magic = hmb_cpu_to_le32(HMB_RECORD_MAGIC);
	rh->seq = hmb_cpu_to_le32(seq);
	rh->ts_ns = hmb_cpu_to_le64(ktime_get_ns());
	rh->opcode = hmb_cpu_to_le16(flags ? 0 : 0x100 + (seq & 7));
	rh->cpu = raw_smp_processor_id() & 0xff;
	rh->flags = flags;
	rh->payload_len = hmb_cpu_to_le16(len);
	rh->reserved0 = 0;
	rh->reserved1 = 0;
	/* A pattern the consumer side can verify: byte i is (seq + i). */
	for (i = 0; i < len; i++)
		p[i] = (u8)(seq + i);
	for (; i < HMB_RECORD_SIZE(len) - HMB_RECORD_HDR_SIZE; i++)
		p[i] = 0;
}

/* Caller holds tp->lock.  Returns true if the record was written. */
static bool hmb_test_produce_one(struct hmb_test_producer *tp)
{
	struct hmb_ring_hdr *hdr = tp->hdr;
	u32 span = tp->payload_max - tp->payload_min + 1;
	u16 len = tp->payload_min + hmb_test_rand(tp) % span;
	u32 size = HMB_RECORD_SIZE(len);
	u32 off = (u32)(tp->head & (tp->ring_size - 1));
	u32 left = tp->ring_size - off;
	u32 need = size > left ? left + size : size;
	u64 tail;

	/* Pairs with the consumer's release of tail. */
	tail = hmb_le64(smp_load_acquire(&hdr->tail));
	if (tp->head - tail + need > tp->ring_size) {
		/* Never overwrite: drop, flag it, and burn the seq. */
		hmb_test_set_flags(tp, HMB_RING_FLAG_OVERFLOWED, 0);
		tp->seq++;
		tp->dropped++;
		return false;
	}
	if (size > left) {
		if (left >= HMB_RECORD_HDR_SIZE) {
			/* The marker carries the next record's seq. */
			hmb_test_fill(tp, off, tp->seq,
				      HMB_REC_FLAG_WRAP_MARKER, 0);
			tp->markers++;
		} else {
			tp->skips++;
		}
		tp->head += left;
		tp->bytes += left;
		off = 0;
	}
	hmb_test_fill(tp, off, tp->seq, 0, len);
	tp->seq++;
	tp->head += size;
	tp->bytes += size;
	tp->produced++;
	if (hmb_hdr_flags(hdr) & HMB_RING_FLAG_OVERFLOWED)
		hmb_test_set_flags(tp, 0, HMB_RING_FLAG_OVERFLOWED);
	/* Pairs with the consumer's acquire of head: record bytes first. */
	smp_store_release(&hdr->head, hmb_cpu_to_le64(tp->head));
	return true;
}

static int hmb_test_thread(void *data)
{
	struct hmb_test_producer *tp = data;
	u64 start_ns = 0, done = 0;
	bool was_running = false;

	while (!kthread_should_stop()) {
		u64 quota, now;
		u32 rate, i;

		wait_event_interruptible(tp->wq, READ_ONCE(tp->running) ||
					 kthread_should_stop());
		if (kthread_should_stop())
			break;
		if (!READ_ONCE(tp->running)) {
			was_running = false;
			continue;
		}
		rate = READ_ONCE(tp->rate);
		now = ktime_get_ns();
		if (!was_running) {
			start_ns = now;
			done = 0;
			was_running = true;
		}
		if (rate) {
			quota = div_u64((now - start_ns) * rate, NSEC_PER_SEC);
			quota = quota > done ? quota - done : 0;
		} else {
			quota = HMB_TEST_BATCH;
		}
		mutex_lock(&tp->lock);
		for (i = 0; i < quota && READ_ONCE(tp->running); i++)
			hmb_test_produce_one(tp);
		mutex_unlock(&tp->lock);
		done += i;
		if (!READ_ONCE(tp->running))
			was_running = false;
		if (rate)
			usleep_range(HMB_TEST_TICK_US, HMB_TEST_TICK_US + 100);
		else
			cond_resched();
	}
	return 0;
}

/* ---- sysfs: the "producer" group of a test ring ---- */

static struct hmb_test_producer *to_tp(struct device *dev)
{
	return to_hmb_ring(dev)->prov.test;
}

static ssize_t hmb_test_show_counter(struct device *dev, char *buf,
				     size_t off)
{
	struct hmb_test_producer *tp = to_tp(dev);
	u64 v;

	mutex_lock(&tp->lock);
	v = *(u64 *)((u8 *)tp + off);
	mutex_unlock(&tp->lock);
	return sysfs_emit(buf, "%llu\n", v);
}

#define HMB_TEST_COUNTER(fname, off)					\
static ssize_t fname##_show(struct device *dev,				\
			    struct device_attribute *attr, char *buf)	\
{									\
	return hmb_test_show_counter(dev, buf, off);			\
}									\
static DEVICE_ATTR_RO(fname)

#define HMB_TP_OFF(f) offsetof(struct hmb_test_producer, f)
HMB_TEST_COUNTER(produced, HMB_TP_OFF(produced));
HMB_TEST_COUNTER(dropped, HMB_TP_OFF(dropped));
HMB_TEST_COUNTER(wrap_markers, HMB_TP_OFF(markers));
HMB_TEST_COUNTER(implicit_skips, HMB_TP_OFF(skips));
HMB_TEST_COUNTER(bytes, HMB_TP_OFF(bytes));

static ssize_t next_seq_show(struct device *dev, struct device_attribute *attr,
			     char *buf)
{
	struct hmb_test_producer *tp = to_tp(dev);
	u32 v;

	mutex_lock(&tp->lock);
	v = tp->seq;
	mutex_unlock(&tp->lock);
	return sysfs_emit(buf, "%u\n", v);
}

/* Set the next seq: replays (duplicates) and restarts for the consumers. */
static ssize_t next_seq_store(struct device *dev, struct device_attribute *attr,
			      const char *buf, size_t count)
{
	struct hmb_test_producer *tp = to_tp(dev);
	u32 v;
	int ret;

	ret = kstrtou32(buf, 0, &v);
	if (ret)
		return ret;
	mutex_lock(&tp->lock);
	tp->seq = v;
	mutex_unlock(&tp->lock);
	return count;
}
static DEVICE_ATTR_RW(next_seq);

static ssize_t running_show(struct device *dev, struct device_attribute *attr,
			    char *buf)
{
	return sysfs_emit(buf, "%d\n", READ_ONCE(to_tp(dev)->running));
}

static ssize_t running_store(struct device *dev, struct device_attribute *attr,
			     const char *buf, size_t count)
{
	struct hmb_test_producer *tp = to_tp(dev);
	bool on;
	int ret;

	ret = kstrtobool(buf, &on);
	if (ret)
		return ret;
	WRITE_ONCE(tp->running, on);
	/*
	 * Stopping is synchronous: the thread produces its batch under
	 * tp->lock and checks running before each record, so once the lock
	 * is free no record comes after this write returns (a reader that
	 * stops the producer and then compares produced with what was
	 * consumed does not race its last record).
	 */
	if (!on) {
		mutex_lock(&tp->lock);
		mutex_unlock(&tp->lock);
	}
	wake_up(&tp->wq);
	return count;
}
static DEVICE_ATTR_RW(running);

static ssize_t rate_show(struct device *dev, struct device_attribute *attr,
			 char *buf)
{
	return sysfs_emit(buf, "%u\n", READ_ONCE(to_tp(dev)->rate));
}

static ssize_t rate_store(struct device *dev, struct device_attribute *attr,
			  const char *buf, size_t count)
{
	u32 v;
	int ret;

	ret = kstrtou32(buf, 0, &v);
	if (ret)
		return ret;
	WRITE_ONCE(to_tp(dev)->rate, v);
	return count;
}
static DEVICE_ATTR_RW(rate);

static ssize_t hmb_test_store_len(struct device *dev, const char *buf,
				  size_t count, bool max)
{
	struct hmb_test_producer *tp = to_tp(dev);
	u32 v;
	int ret;

	ret = kstrtou32(buf, 0, &v);
	if (ret)
		return ret;
	if (v > HMB_RECORD_MAX_PAYLOAD)
		return -ERANGE;
	mutex_lock(&tp->lock);
	if (max ? v < tp->payload_min : v > tp->payload_max)
		ret = -EINVAL;
	else if (max)
		tp->payload_max = v;
	else
		tp->payload_min = v;
	mutex_unlock(&tp->lock);
	return ret ? ret : count;
}

static ssize_t payload_min_show(struct device *dev,
				struct device_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%u\n", READ_ONCE(to_tp(dev)->payload_min));
}

static ssize_t payload_min_store(struct device *dev,
				 struct device_attribute *attr,
				 const char *buf, size_t count)
{
	return hmb_test_store_len(dev, buf, count, false);
}
static DEVICE_ATTR_RW(payload_min);

static ssize_t payload_max_show(struct device *dev,
				struct device_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%u\n", READ_ONCE(to_tp(dev)->payload_max));
}

static ssize_t payload_max_store(struct device *dev,
				 struct device_attribute *attr,
				 const char *buf, size_t count)
{
	return hmb_test_store_len(dev, buf, count, true);
}
static DEVICE_ATTR_RW(payload_max);

/* Write N: produce N records now, synchronously (drops count as produced). */
static ssize_t produce_store(struct device *dev, struct device_attribute *attr,
			     const char *buf, size_t count)
{
	struct hmb_test_producer *tp = to_tp(dev);
	u32 n, i;
	int ret;

	ret = kstrtou32(buf, 0, &n);
	if (ret)
		return ret;
	mutex_lock(&tp->lock);
	for (i = 0; i < n; i++) {
		hmb_test_produce_one(tp);
		if (i % HMB_TEST_BATCH == HMB_TEST_BATCH - 1)
			cond_resched();
	}
	mutex_unlock(&tp->lock);
	return count;
}
static DEVICE_ATTR_WO(produce);

static ssize_t frozen_show(struct device *dev, struct device_attribute *attr,
			   char *buf)
{
	struct hmb_test_producer *tp = to_tp(dev);

	return sysfs_emit(buf, "%d\n",
			  !!(hmb_hdr_flags(tp->hdr) & HMB_RING_FLAG_FROZEN));
}

/* Emulates a controller reset: the producer stops and says so. */
static ssize_t frozen_store(struct device *dev, struct device_attribute *attr,
			    const char *buf, size_t count)
{
	struct hmb_test_producer *tp = to_tp(dev);
	bool on;
	int ret;

	ret = kstrtobool(buf, &on);
	if (ret)
		return ret;
	mutex_lock(&tp->lock);
	hmb_test_set_flags(tp, on ? HMB_RING_FLAG_FROZEN : 0,
			   on ? 0 : HMB_RING_FLAG_FROZEN);
	mutex_unlock(&tp->lock);
	return count;
}
static DEVICE_ATTR_RW(frozen);

/*
 * Write N: what a controller reset does to an nvme-pci slice, while
 * consumers stay attached: the producer stops (FROZEN), the header is
 * re-initialised (docs/format.md §11.2, as nvme does before it re-enables
 * the HMB) and production resumes at cursor 0 with the seq continuing,
 * after N seqs lost across the reset (0: none).
 */
static ssize_t reinit_store(struct device *dev, struct device_attribute *attr,
			    const char *buf, size_t count)
{
	struct hmb_trace_ring *ring = to_hmb_ring(dev);
	struct hmb_test_producer *tp = ring->prov.test;
	u32 n;
	int ret;

	ret = kstrtou32(buf, 0, &n);
	if (ret)
		return ret;
	mutex_lock(&tp->lock);
	hmb_trace_hdr_write(ring->prov.sync, tp->hdr, tp->ring_size, true);
	tp->head = 0;
	tp->seq += n;
	tp->dropped += n;
	mutex_unlock(&tp->lock);
	return count;
}
static DEVICE_ATTR_WO(reinit);

static ssize_t start_cursor_show(struct device *dev,
				 struct device_attribute *attr, char *buf)
{
	struct hmb_test_producer *tp = to_tp(dev);
	u64 v;

	mutex_lock(&tp->lock);
	v = tp->start_cursor;
	mutex_unlock(&tp->lock);
	return sysfs_emit(buf, "%llu\n", v);
}

/* The next reset starts head and tail here (8-byte aligned, any value). */
static ssize_t start_cursor_store(struct device *dev,
				  struct device_attribute *attr,
				  const char *buf, size_t count)
{
	struct hmb_test_producer *tp = to_tp(dev);
	u64 v;
	int ret;

	ret = kstrtou64(buf, 0, &v);
	if (ret)
		return ret;
	if (v & (HMB_RECORD_ALIGN - 1))
		return -EINVAL;
	mutex_lock(&tp->lock);
	tp->start_cursor = v;
	mutex_unlock(&tp->lock);
	return count;
}
static DEVICE_ATTR_RW(start_cursor);

/*
 * Empty ring at start_cursor, counters zero; refused while a consumer is
 * attached.
 */
static ssize_t reset_store(struct device *dev, struct device_attribute *attr,
			   const char *buf, size_t count)
{
	struct hmb_trace_ring *ring = to_hmb_ring(dev);
	struct hmb_test_producer *tp = ring->prov.test;
	int ret = 0;

	mutex_lock(&ring->lock);
	mutex_lock(&tp->lock);
	if (ring->owner != HMB_OWNER_NONE || tp->running) {
		ret = -EBUSY;
	} else {
		WRITE_ONCE(tp->hdr->flags, 0);
		WRITE_ONCE(tp->hdr->tail, hmb_cpu_to_le64(tp->start_cursor));
		/* No consumer is attached; pairs with the next one's acquire. */
		smp_store_release(&tp->hdr->head,
				  hmb_cpu_to_le64(tp->start_cursor));
		memset(tp->area, 0, tp->ring_size);
		tp->head = tp->start_cursor;
		tp->seq = 0;
		tp->produced = 0;
		tp->dropped = 0;
		tp->markers = 0;
		tp->skips = 0;
		tp->bytes = 0;
	}
	mutex_unlock(&tp->lock);
	mutex_unlock(&ring->lock);
	return ret ? ret : count;
}
static DEVICE_ATTR_WO(reset);

static struct attribute *hmb_test_attrs[] = {
	&dev_attr_running.attr,
	&dev_attr_rate.attr,
	&dev_attr_payload_min.attr,
	&dev_attr_payload_max.attr,
	&dev_attr_produce.attr,
	&dev_attr_frozen.attr,
	&dev_attr_reset.attr,
	&dev_attr_reinit.attr,
	&dev_attr_start_cursor.attr,
	&dev_attr_produced.attr,
	&dev_attr_dropped.attr,
	&dev_attr_wrap_markers.attr,
	&dev_attr_implicit_skips.attr,
	&dev_attr_bytes.attr,
	&dev_attr_next_seq.attr,
	NULL,
};

const struct attribute_group hmb_test_attr_group = {
	.name = "producer",
	.attrs = hmb_test_attrs,
};

/* ---- setup ---- */

static void hmb_test_destroy(struct hmb_test_producer *tp)
{
	if (tp->task)
		kthread_stop(tp->task);
	hmb_trace_unregister_ring(tp->ring);
	vfree(tp->mem);
	kfree(tp);
}

static struct hmb_test_producer *hmb_test_create(unsigned int idx)
{
	struct hmb_test_producer *tp;
	char name[NVME_HMB_TRACE_NAME_LEN];
	int ret;

	tp = kzalloc(sizeof(*tp), GFP_KERNEL);
	if (!tp)
		return ERR_PTR(-ENOMEM);
	mutex_init(&tp->lock);
	init_waitqueue_head(&tp->wq);
	tp->payload_min = 16;
	tp->payload_max = 64;
	tp->rnd = 0x2545f491 + idx;
	tp->memsz = PAGE_ALIGN(HMB_RECORD_AREA_OFF + (size_t)test_ring_kb * SZ_1K);
	tp->mem = vmalloc_user(tp->memsz);
	if (!tp->mem) {
		kfree(tp);
		return ERR_PTR(-ENOMEM);
	}
	tp->hdr = tp->mem;
	tp->area = (u8 *)tp->mem + HMB_RECORD_AREA_OFF;

	snprintf(name, sizeof(name), "test%u", idx);
	tp->ring = hmb_ring_register(hmb_test_parent, tp->mem, 0, tp->memsz,
				     name, NVME_HMB_TRACE_PROVIDER_TEST, tp,
				     NULL);
	if (IS_ERR(tp->ring)) {
		ret = PTR_ERR(tp->ring);
		tp->ring = NULL;
		goto err;
	}
	tp->ring_size = tp->ring->prov.ring_size;

	tp->task = kthread_run(hmb_test_thread, tp, "hmb-testprod/%u", idx);
	if (IS_ERR(tp->task)) {
		ret = PTR_ERR(tp->task);
		tp->task = NULL;
		goto err;
	}
	return tp;
err:
	hmb_test_destroy(tp);
	return ERR_PTR(ret);
}

int hmb_test_init(void)
{
	unsigned int i;
	int ret;

	if (!test_rings)
		return 0;
	if (test_rings > HMB_TEST_MAX_RINGS || test_ring_kb < 8 ||
	    test_ring_kb > 65536 || !is_power_of_2(test_ring_kb)) {
		pr_err(HMB_TRACE_DRV_NAME ": test_rings must be 0..%u and test_ring_kb a power of two in 8..65536 (got %u, %u)\n",
		       HMB_TEST_MAX_RINGS, test_rings, test_ring_kb);
		return -EINVAL;
	}
	hmb_test_parent = root_device_register(HMB_TRACE_DRV_NAME "-test");
	if (IS_ERR(hmb_test_parent))
		return PTR_ERR(hmb_test_parent);
	for (i = 0; i < test_rings; i++) {
		hmb_tests[i] = hmb_test_create(i);
		if (IS_ERR(hmb_tests[i])) {
			ret = PTR_ERR(hmb_tests[i]);
			hmb_tests[i] = NULL;
			hmb_test_exit();
			return ret;
		}
	}
	return 0;
}

void hmb_test_exit(void)
{
	unsigned int i;

	for (i = 0; i < HMB_TEST_MAX_RINGS; i++) {
		if (hmb_tests[i])
			hmb_test_destroy(hmb_tests[i]);
		hmb_tests[i] = NULL;
	}
	if (!IS_ERR_OR_NULL(hmb_test_parent))
		root_device_unregister(hmb_test_parent);
	hmb_test_parent = NULL;
}
