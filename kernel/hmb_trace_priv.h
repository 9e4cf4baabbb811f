/* SPDX-License-Identifier: GPL-2.0 */
/*
 * hmb_trace_priv.h - state shared by the parts of nvme-hmb-trace.ko.
 */
#ifndef _HMB_TRACE_PRIV_H
#define _HMB_TRACE_PRIV_H

#include <linux/cdev.h>
#include <linux/device.h>
#include <linux/hrtimer.h>
#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/wait.h>
#include <linux/workqueue.h>
#include <linux/nvme-hmb-trace.h>

#include "compat.h"

#ifdef __BIG_ENDIAN
#error "nvme-hmb-trace reads the little-endian ring in place"
#endif

#define HMB_TRACE_DRV_NAME	"nvme-hmb-trace"

/*
 * Who holds the single consumer slot of a ring: one consumer at a time, a
 * process through the character device or the in-kernel bridge.
 * HMB_OWNER_BRIDGE_STOPPING: the bridge is being switched off and its last
 * batch may still run (ring->lock is dropped while waiting for it); the
 * slot is not free yet.
 */
enum hmb_trace_owner {
	HMB_OWNER_NONE,
	HMB_OWNER_CHARDEV,
	HMB_OWNER_BRIDGE,
	HMB_OWNER_BRIDGE_STOPPING,
};

/*
 * Cursors are byte counters modulo 2^64 (docs/format.md section 4): head may
 * have wrapped past 0 while tail has not.  Compare distances such as
 * head - tail, never two cursors or a cursor and a computed lap end.
 */
static inline bool hmb_cursor_before(u64 a, u64 b)
{
	return (s64)(a - b) < 0;
}

/*
 * The ring header is device memory and little-endian (docs/format.md
 * section 3); every access goes through the hmb_le*() accessors.  head and
 * tail order the record bytes between producer and consumer (section 6).
 */

static inline u64 hmb_hdr_head_acquire(const struct hmb_ring_hdr *h)
{
	/* Pairs with the producer's release of head after the records. */
	return hmb_le64(smp_load_acquire(&h->head));
}

static inline u64 hmb_hdr_tail(const struct hmb_ring_hdr *h)
{
	return hmb_le64(READ_ONCE(h->tail));
}

static inline u32 hmb_hdr_flags(const struct hmb_ring_hdr *h)
{
	return hmb_le32(READ_ONCE(h->flags));
}

static inline void hmb_hdr_publish_tail(struct hmb_ring_hdr *h, u64 tail)
{
	/*
	 * Pairs with the producer's acquire of tail: the consumer's reads of
	 * the records below @tail complete before the producer reuses them.
	 */
	smp_store_release(&h->tail, hmb_cpu_to_le64(tail));
}

/* Why a ring was found corrupt; also the text in tracepoints and dmesg. */
enum hmb_trace_corrupt_reason {
	HMB_CORRUPT_NONE,
	HMB_CORRUPT_RING_MAGIC,
	HMB_CORRUPT_RING_VERSION,
	HMB_CORRUPT_RING_GEOMETRY,
	HMB_CORRUPT_HEAD_UNALIGNED,
	HMB_CORRUPT_HEAD_BACKWARDS,
	HMB_CORRUPT_HEAD_AHEAD,
	HMB_CORRUPT_REC_MAGIC,
	HMB_CORRUPT_REC_LEN,
	HMB_CORRUPT_REC_STRADDLE,
	HMB_CORRUPT_REC_BEYOND_HEAD,
	HMB_CORRUPT_SKIP_BEYOND_HEAD,
	HMB_CORRUPT_MARKER_LEN,
	HMB_CORRUPT_TAIL_UNALIGNED,
};

const char *hmb_trace_reason_str(enum hmb_trace_corrupt_reason reason);

/**
 * struct hmb_bridge_stats - counters of the in-kernel consumer.
 * @records: data records emitted as hmb_trace_record.
 * @bytes: ring bytes consumed (records, padding, markers, skips).
 * @markers: wrap markers passed.
 * @ignored: records with unknown flag bits, skipped but seq-counted.
 * @lost: records missing by sequence number (forward gaps below 2^31,
 *	also across a re-initialisation).
 * @overflows: OVERFLOWED flag transitions 0 -> 1 seen.
 * @corrupt: times the bridge stopped on a corrupt ring.
 * @epochs: re-initialisations of the ring the bridge carried on across.
 * @duplicates: records whose seq was already seen (not emitted).
 */
struct hmb_bridge_stats {
	u64 records;
	u64 bytes;
	u64 markers;
	u64 ignored;
	u64 lost;
	u64 overflows;
	u64 corrupt;
	u64 epochs;
	u64 duplicates;
};

struct hmb_test_producer;

/* hmb_ring_sampler.pub_tail when no tail waits for the sampler */
#define HMB_NO_TAIL	U64_MAX

/**
 * struct hmb_ring_provider - the slice a provider registered, fixed until
 *	it goes.
 * @parent: the provider's device (nvme-pci: the one dma_mmap_coherent()
 *	maps the slice for).
 * @kaddr: kernel address of the slice (ring header first).
 * @addr: physical (ivshmem) or DMA (nvme-pci) address of the slice.
 * @size: bytes of the slice.
 * @hdr: @kaddr as the ring header.
 * @area: first byte of the record area.
 * @ring_size: record area size, validated once at registration.
 * @mmap_len: bytes a consumer may map.
 * @test: the test producer feeding this ring, if any.
 * @sync: header rewrite lock and generation: the provider's (nvme-pci) or
 *	@own_sync.  Tail stores hold its lock.
 * @own_sync: for providers without one (ivshmem, the test producer).
 */
struct hmb_ring_provider {
	struct device *parent;
	void *kaddr;
	dma_addr_t addr;
	size_t size;
	struct hmb_ring_hdr *hdr;
	u8 *area;
	u32 ring_size;
	size_t mmap_len;
	struct hmb_test_producer *test;
	struct hmb_trace_sync *sync;
	struct hmb_trace_sync own_sync;
};

/**
 * struct hmb_ring_chardev - /dev/nvme-hmb-traceN and its consumer.
 * @cdev: the character device.
 * @comm: task name of the char-device consumer.
 * @pid: its pid.
 * @vmas: user mappings of the ring, zapped on removal.
 * @map_mms: address spaces that mapped a DMA slice (struct hmb_map_mm).
 */
struct hmb_ring_chardev {
	struct cdev cdev;
	char comm[TASK_COMM_LEN];
	pid_t pid;
	struct list_head vmas;
	struct list_head map_mms;
};

/**
 * struct hmb_ring_sampler - the timer that looks at head while a consumer
 *	is attached.
 * @timer: the timer.
 * @poll_interval_us: base sampling interval.
 * @cur_interval_ns: current interval, doubled while idle.
 * @head: head seen by the last timer run.
 * @flags: ring flags seen by the last timer run.
 * @tail: highest tail seen by the timer in this epoch.
 * @pub_tail: the last tail a consumer stored with SET_TAIL that the timer
 *	has not taken yet (%HMB_NO_TAIL: none); the timer raises @tail to
 *	it, so that a re-initialisation it never saw FROZEN still shows as
 *	tail going backwards.
 * @gen: sync generation of the epoch the timer follows.
 * @frozen: FROZEN (or a rewrite) seen; waiting for it to clear.
 */
struct hmb_ring_sampler {
	struct hrtimer timer;
	u32 poll_interval_us;
	u64 cur_interval_ns;
	u64 head;
	u32 flags;
	u64 tail;
	atomic64_t pub_tail;
	u32 gen;
	bool frozen;
};

/**
 * struct hmb_ring_bridge - the in-kernel consumer that emits records as
 *	tracepoints.
 * @work: drains the ring when the bridge owns it.
 * @tail: bridge cursor.
 * @last_head: head read by the previous batch.
 * @flags: ring flags seen by the previous batch.
 * @seq: last sequence number seen.
 * @have_seq: @seq is valid.
 * @stopped: the bridge hit corruption and waits to be re-enabled.
 * @gen: sync generation of the epoch the bridge drains.
 * @frozen: FROZEN (or a rewrite) seen; drain what is valid, then wait for
 *	the ring to thaw or be re-initialised.
 * @new_epoch: the next record is the first of a new epoch.
 * @stats: bridge counters.
 * @batch: the records of the bridge's next hmb_trace_records event.
 */
struct hmb_ring_bridge {
	struct work_struct work;
	u64 tail;
	u64 last_head;
	u32 flags;
	u32 seq;
	bool have_seq;
	bool stopped;
	u32 gen;
	bool frozen;
	bool new_epoch;
	struct hmb_bridge_stats stats;
	struct hmb_bridge_rec batch[HMB_BRIDGE_BATCH];
};

/**
 * struct hmb_trace_ring - one registered trace slice.
 * @dev: the class device; its reference count is the ring's lifetime.
 * @id: N of /dev/nvme-hmb-traceN.
 * @provider: NVME_HMB_TRACE_PROVIDER_*.
 * @name: provider-given name.
 * @ctrl: name of the parent device.
 * @lock: serialises consumer changes, ioctls and removal.
 * @dead: the provider is gone; @prov.kaddr must not be touched.
 * @owner: the current consumer (a file, or the bridge).
 * @wq: pollers.
 * @reason: first corruption found by the sampler or the bridge.
 * @prov: the slice.
 * @chr: the character device and its consumer.
 * @smp: the sampler.
 * @br: the bridge.
 */
struct hmb_trace_ring {
	struct device dev;
	int id;
	u32 provider;
	char name[NVME_HMB_TRACE_NAME_LEN];
	char ctrl[NVME_HMB_TRACE_NAME_LEN];

	struct mutex lock;	/* see kernel-doc above */
	bool dead;
	enum hmb_trace_owner owner;
	wait_queue_head_t wq;
	enum hmb_trace_corrupt_reason reason;

	struct hmb_ring_provider prov;
	struct hmb_ring_chardev chr;
	struct hmb_ring_sampler smp;
	struct hmb_ring_bridge br;
};

static inline struct hmb_trace_ring *to_hmb_ring(struct device *dev)
{
	return container_of(dev, struct hmb_trace_ring, dev);
}

/* core.c */
struct hmb_trace_ring *hmb_ring_register(struct device *parent, void *kaddr,
					 dma_addr_t addr, size_t size,
					 const char *name, u32 provider,
					 struct hmb_test_producer *test,
					 struct hmb_trace_sync *sync);
void hmb_trace_start_sampler(struct hmb_trace_ring *ring);
void hmb_trace_stop_sampler(struct hmb_trace_ring *ring);
enum hmb_trace_corrupt_reason hmb_trace_check_cursors(struct hmb_trace_ring *ring,
						      u64 head, u64 tail);
extern const struct attribute_group hmb_test_attr_group;

/* chardev.c */
extern const struct file_operations hmb_trace_fops;
void hmb_trace_zap_mappings(struct hmb_trace_ring *ring);

/* bridge.c */
void hmb_bridge_work(struct work_struct *work);
int hmb_bridge_enable(struct hmb_trace_ring *ring);
void hmb_bridge_disable(struct hmb_trace_ring *ring);

/* testprod.c */
int hmb_test_init(void);
void hmb_test_exit(void);

/* ivshmem.c */
int hmb_ivshmem_init(void);
void hmb_ivshmem_exit(void);

/* nvmepci.c */
int hmb_nvmepci_init(void);
void hmb_nvmepci_exit(void);

#endif /* _HMB_TRACE_PRIV_H */
