// SPDX-License-Identifier: GPL-2.0
/*
 * sweep.c - upkeep of the BPF join's maps from user space: the command
 * table "cmds" mapped into the agent (commands taken out of it), and stale
 * entries of the command-id index "kseq".
 *
 * The programs never delete a kseq entry (a deleted hash element may be
 * reused at once under another CPU's pointer, see the map's comment in
 * hmb_agent.bpf.c), so ids accumulate: at most 16 x the queue depth per
 * queue, but with many queues enough to fill the index, after which every
 * new id is refused (HMB_C_DONE_FULL).  When the index is three quarters
 * full the agent deletes here the ids with no command left.  A program
 * may submit a command of the same id while its entry is deleted: the
 * program re-checks its entry when kseq_epoch moved and puts it back, and
 * the delete here is followed by the same check, so whichever comes last
 * sees the other's command.
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

struct stale {
	struct hmb_cmd_key key;
	struct hmb_kseq ks;
};

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
		    const struct hmb_kseq *ks)
{
	__u32 n, span = ks->next - ks->first;

	/* The program keeps at most HMB_MAX_WAIT per id; more is not stale. */
	if (span > 2 * HMB_MAX_WAIT)
		return 1;
	for (n = 0; n < span; n++)
		if (hmb_cmd_find(slots, key, ks->first + n))
			return 1;
	return 0;
}

int hmb_sweep_stale_ids(int kseq_fd, struct hmb_cmd_slot *slots,
			unsigned int max, struct hmb_sweep_ids *res)
{
	struct hmb_cmd_key key, next, *prev = NULL;
	struct stale *list;
	size_t n = 0, i;

	memset(res, 0, sizeof(*res));
	list = calloc(max ? max : 1, sizeof(*list));
	if (!list)
		return -ENOMEM;
	/* Collect first: deleting while walking restarts the walk. */
	while (n < max && !bpf_map_get_next_key(kseq_fd, prev, &next)) {
		key = next;
		prev = &key;
		res->seen++;
		if (bpf_map_lookup_elem(kseq_fd, &key, &list[n].ks))
			continue;
		list[n].key = key;
		if (!has_cmds(slots, &key, &list[n].ks))
			n++;
	}
	for (i = 0; i < n; i++) {
		__u32 next = list[i].ks.next;
		struct hmb_kseq now;

		/* Skip an id that was used again since it was looked at. */
		if (bpf_map_lookup_elem(kseq_fd, &list[i].key, &now) ||
		    now.first != list[i].ks.first || now.next != list[i].ks.next)
			continue;
		if (bpf_map_delete_elem(kseq_fd, &list[i].key))
			continue;
		res->removed++;
		/* A submission that raced the delete: index it again. */
		if (hmb_cmd_find(slots, &list[i].key, next)) {
			struct hmb_kseq back = { .first = next, .next = next + 1 };

			if (!bpf_map_update_elem(kseq_fd, &list[i].key, &back,
						 BPF_NOEXIST))
				res->restored++;
		}
	}
	free(list);
	return 0;
}
