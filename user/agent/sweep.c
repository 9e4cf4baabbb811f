// SPDX-License-Identifier: GPL-2.0
/*
 * sweep.c - upkeep of the BPF join's command table "cmds" from user
 * space: mapped into the agent, commands whose records never came taken
 * out of it (the index of command ids, "kseq", needs none: see
 * hmb_agent.h).
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
