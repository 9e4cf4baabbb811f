/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The kernel API that kernel/bridge.c and the sampler part of
 * kernel/core.c use, in user space, so that fuzz_kbridge runs the
 * module's own code on a ring in memory (docs/fuzzing.md).  Every
 * <linux/...> header those files include comes here.  Locks, timers and
 * wait queues do nothing (one thread); the work queue and the
 * tracepoints call the harness (kshim_*); log lines are formatted (their
 * format strings run under the sanitizers) and dropped.
 */
#ifndef HMB_KSHIM_H
#define HMB_KSHIM_H

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/types.h>
/* the kernel's __BIG_ENDIAN means big-endian; glibc's is a constant */
#undef __BIG_ENDIAN

typedef uint8_t u8;
typedef uint16_t u16;
typedef uint32_t u32;
typedef unsigned long long u64;
typedef int32_t s32;
typedef long long s64;
typedef uint64_t dma_addr_t;
typedef int64_t ktime_t;
typedef unsigned long vm_flags_t;
typedef unsigned short umode_t;

#define U64_MAX		UINT64_MAX
#define NSEC_PER_USEC	1000ULL
#define TASK_COMM_LEN	16
#define KERNEL_VERSION(a, b, c)	(((a) << 16) + ((b) << 8) + (c))
#define LINUX_VERSION_CODE	KERNEL_VERSION(6, 1, 0)

#define READ_ONCE(x)		(*(const volatile __typeof__(x) *)&(x))
#define WRITE_ONCE(x, v)	(*(volatile __typeof__(x) *)&(x) = (v))
#define smp_load_acquire(p)	__atomic_load_n(p, __ATOMIC_ACQUIRE)
#define smp_store_release(p, v)	__atomic_store_n(p, v, __ATOMIC_RELEASE)
#define smp_wmb()		__atomic_thread_fence(__ATOMIC_RELEASE)
#define container_of(ptr, type, member) \
	((type *)(void *)((char *)(ptr) - offsetof(type, member)))
#define min_t(t, a, b)		((t)(a) < (t)(b) ? (t)(a) : (t)(b))
#define ARRAY_SIZE(a)		(sizeof(a) / sizeof((a)[0]))

struct device { int unused; };
struct cdev { int unused; };
struct mutex { int unused; };
struct list_head { struct list_head *next, *prev; };
struct auxiliary_device { int unused; };
struct vm_area_struct { vm_flags_t vm_flags; };
struct workqueue_struct;
struct work_struct { int unused; };
typedef struct { int unused; } spinlock_t;
typedef struct { int unused; } wait_queue_head_t;
typedef struct { int64_t counter; } atomic64_t;
struct hrtimer { int unused; };
enum hrtimer_restart { HRTIMER_NORESTART, HRTIMER_RESTART };
enum hrtimer_mode { HRTIMER_MODE_REL_SOFT };

#define mutex_lock(m)		((void)(m))
#define mutex_unlock(m)		((void)(m))
#define spin_lock(l)		((void)(l))
#define spin_unlock(l)		((void)(l))
#define cond_resched()		((void)0)
#define wake_up_interruptible(q)	((void)(q))
#define wake_up_interruptible_all(q)	((void)(q))
#define cancel_work_sync(w)	((void)(w))
#define system_unbound_wq	((struct workqueue_struct *)NULL)
bool kshim_queue_work(struct work_struct *w);
#define queue_work(wq, w)	((void)(wq), (void)kshim_queue_work(w))

#define atomic64_set(a, v)	__atomic_store_n(&(a)->counter, (v), __ATOMIC_SEQ_CST)
#define atomic64_xchg(a, v)	__atomic_exchange_n(&(a)->counter, (v), __ATOMIC_SEQ_CST)
#define ns_to_ktime(ns)		((ktime_t)(ns))
#define hrtimer_start(t, k, m)	((void)(t), (void)(k), (void)(m))
#define hrtimer_cancel(t)	((void)(t))
#define hrtimer_forward_now(t, k)	((void)(t), (void)(k))

void kshim_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
#define dev_err(dev, ...)		((void)(dev), kshim_log(__VA_ARGS__))
#define dev_err_ratelimited(dev, ...)	((void)(dev), kshim_log(__VA_ARGS__))
#define dev_info_ratelimited(dev, ...)	((void)(dev), kshim_log(__VA_ARGS__))

#endif /* HMB_KSHIM_H */
