// SPDX-License-Identifier: GPL-2.0
/*
 * sweep.c - upkeep of the BPF join's maps from user space: the command
 * table "cmds" mapped into the agent (commands taken out of it), and stale
 * entries of the command-id index "kseq".
 *
 * The programs never take a kseq entry out (a slot freed at once may be
 * claimed again under another CPU's pointer, see the map's comment in
 * hmb_agent.bpf.c), so ids accumulate: at most 16 x the queue depth per
 * queue, but with many queues enough to fill the index, after which every
 * new id is refused (HMB_C_DONE_FULL).  When the index fills up the agent
 * takes out here the ids with no command left (their tags marked
 * HMB_KSEQ_DEAD), and frees their slots at its next sweep.  A program may
 * submit a command of the same id while its entry is taken out: the
 * program re-checks its entry when kseq_epoch moved and turns it back,
 * and the take-out here is followed by the same check, so whichever comes
 * last sees the other's command.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <linux/types.h>
#include <bpf/bpf.h>

#include "hmb_agent.h"
#include "sweep.h"

static size_t cmds_bytes(void)
{
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);

	return (sizeof(struct hmb_cmd_slot) * HMB_CMD_SLOTS + pg - 1) / pg * pg;
}

struct hmb_cmd_slot *hmb_cmds_map(int cmds_fd)
{
	void *p = mmap(NULL, cmds_bytes(), PROT_READ | PROT_WRITE, MAP_SHARED,
		       cmds_fd, 0);

	return p == MAP_FAILED ? NULL : p;
}

void hmb_cmds_unmap(struct hmb_cmd_slot *slots)
{
	if (slots)
		munmap(slots, cmds_bytes());
}

struct hmb_cmd_slot *hmb_cmd_find(struct hmb_cmd_slot *slots,
				  const struct hmb_cmd_key *k, __u32 n)
{
	__u64 tag = hmb_slot_tag(k, n);
	__u32 h = hmb_slot_home(k);

	for (int p = 0; p < HMB_CMD_PROBE; p++) {
		struct hmb_cmd_slot *s = &slots[(h + (__u32)p) & (HMB_CMD_SLOTS - 1)];

		if (__atomic_load_n(&s->tag, __ATOMIC_ACQUIRE) == tag)
			return s;
	}
	return NULL;
}

int hmb_cmd_take(struct hmb_cmd_slot *s, __u64 tag, struct hmb_cmd_event *ev)
{
	__u64 want = tag;

	/* Busy: the program's lookups no longer find it. */
	if (!(tag & HMB_TAG_VALID) || (tag & HMB_TAG_BUSY) ||
	    !__atomic_compare_exchange_n(&s->tag, &want, tag | HMB_TAG_BUSY,
					 false, __ATOMIC_SEQ_CST,
					 __ATOMIC_SEQ_CST))
		return 0;
	/*
	 * A program that found it before may be reporting it: whoever sets
	 * DONE first reports it and frees the slot.
	 */
	if (__atomic_fetch_or(&s->st.sync, HMB_SYNC_DONE, __ATOMIC_SEQ_CST) &
	    HMB_SYNC_DONE)
		return 0;
	memset(ev, 0, sizeof(*ev));
	ev->type = HMB_EV_CMD;
	ev->ctrl = s->k.ctrl;
	ev->qid = s->k.qid;
	ev->cid = s->k.cid;
	memcpy(&ev->st, &s->st, sizeof(ev->st));
	__atomic_store_n(&s->tag, 0, __ATOMIC_RELEASE);
	return 1;
}

/* Does "cmds" still hold a command of @key numbered in [first, next)? */
static int has_cmds(struct hmb_cmd_slot *slots, const struct hmb_cmd_key *key,
		    __u32 first, __u32 next)
{
	__u32 n, span = next - first;

	/* The program keeps at most HMB_MAX_WAIT per id; more is not stale. */
	if (span > 2 * HMB_MAX_WAIT)
		return 1;
	for (n = 0; n < span; n++)
		if (hmb_cmd_find(slots, key, first + n))
			return 1;
	return 0;
}

static size_t kseq_bytes(unsigned int nslots)
{
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);

	return (sizeof(struct hmb_kseq) * nslots + pg - 1) / pg * pg;
}

struct hmb_kseq *hmb_kseq_map(int kseq_fd, unsigned int nslots)
{
	void *p = mmap(NULL, kseq_bytes(nslots), PROT_READ | PROT_WRITE,
		       MAP_SHARED, kseq_fd, 0);

	return p == MAP_FAILED ? NULL : p;
}

void hmb_kseq_unmap(struct hmb_kseq *idx, unsigned int nslots)
{
	if (idx)
		munmap(idx, kseq_bytes(nslots));
}

struct hmb_kseq *hmb_kseq_find(struct hmb_kseq *idx, unsigned int nslots,
			       const struct hmb_cmd_key *k)
{
	__u64 tag = hmb_kseq_tag(k);
	__u32 h = hmb_slot_home(k);

	for (int p = 0; p < HMB_KSEQ_PROBE; p++) {
		struct hmb_kseq *e = &idx[(h + (__u32)p) & (nslots - 1)];
		__u64 t = __atomic_load_n(&e->tag, __ATOMIC_ACQUIRE);

		if ((t & ~HMB_KSEQ_DEAD) == tag)
			return e;
		if (!t)
			return NULL;
	}
	return NULL;
}

unsigned long hmb_kseq_free_dead(struct hmb_kseq *idx, unsigned int nslots,
				 struct hmb_cmd_slot *slots)
{
	unsigned long freed = 0;

	for (unsigned int i = 0; i < nslots; i++) {
		struct hmb_kseq *e = &idx[i];
		__u64 t = __atomic_load_n(&e->tag, __ATOMIC_ACQUIRE);
		struct hmb_cmd_key key = hmb_kseq_key(t);

		/* Taken out, unless its id was used again since. */
		if (!(t & HMB_KSEQ_DEAD) || t == HMB_KSEQ_DEAD)
			continue;
		if (has_cmds(slots, &key, __atomic_load_n(&e->first, __ATOMIC_ACQUIRE),
			     __atomic_load_n(&e->next, __ATOMIC_ACQUIRE) + 1)) {
			__atomic_compare_exchange_n(&e->tag, &t, t & ~HMB_KSEQ_DEAD,
						    false, __ATOMIC_SEQ_CST,
						    __ATOMIC_SEQ_CST);
			continue;
		}
		/* Lookups no longer find it; a submission turning it back fails. */
		if (!__atomic_compare_exchange_n(&e->tag, &t, HMB_KSEQ_DEAD,
						 false, __ATOMIC_SEQ_CST,
						 __ATOMIC_SEQ_CST))
			continue;
		__atomic_store_n(&e->first, 0, __ATOMIC_RELAXED);
		__atomic_store_n(&e->next, 0, __ATOMIC_RELAXED);
		__atomic_store_n(&e->tag, HMB_KSEQ_REUSE, __ATOMIC_RELEASE);
		freed++;
	}
	return freed;
}

int hmb_sweep_stale_ids(struct hmb_kseq *idx, unsigned int nslots,
			struct hmb_cmd_slot *slots, __u32 *epoch,
			struct hmb_sweep_ids *res)
{
	memset(res, 0, sizeof(*res));
	__atomic_add_fetch(epoch, 1, __ATOMIC_SEQ_CST);		/* odd */
	for (unsigned int i = 0; i < nslots; i++) {
		struct hmb_kseq *e = &idx[i];
		__u64 t = __atomic_load_n(&e->tag, __ATOMIC_ACQUIRE);
		struct hmb_cmd_key key;
		__u32 first, next;

		if (!t || (t & (HMB_KSEQ_DEAD | HMB_KSEQ_REUSE)))
			continue;
		res->seen++;
		key = hmb_kseq_key(t);
		first = __atomic_load_n(&e->first, __ATOMIC_ACQUIRE);
		next = __atomic_load_n(&e->next, __ATOMIC_ACQUIRE);
		if (has_cmds(slots, &key, first, next))
			continue;
		/* No submission claims it now; lookups still find it. */
		if (!__atomic_compare_exchange_n(&e->tag, &t, t | HMB_KSEQ_DEAD,
						 false, __ATOMIC_SEQ_CST,
						 __ATOMIC_SEQ_CST))
			continue;
		res->removed++;
		/*
		 * A submission that raced it: its command is (key, next) and
		 * it moved next; it turns the entry back itself when it sees
		 * kseq_epoch move, and so does this, whichever comes last.
		 */
		if (__atomic_load_n(&e->next, __ATOMIC_SEQ_CST) != next ||
		    hmb_cmd_find(slots, &key, next)) {
			__u64 dead = t | HMB_KSEQ_DEAD;

			if (__atomic_compare_exchange_n(&e->tag, &dead, t, false,
							__ATOMIC_SEQ_CST,
							__ATOMIC_SEQ_CST))
				res->restored++;
		}
	}
	__atomic_add_fetch(epoch, 1, __ATOMIC_SEQ_CST);		/* even */
	return 0;
}
