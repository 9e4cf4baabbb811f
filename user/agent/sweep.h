/* SPDX-License-Identifier: GPL-2.0 */
/*
 * sweep.h - upkeep of the BPF join's maps from user space.
 */
#ifndef HMB_AGENT_SWEEP_H
#define HMB_AGENT_SWEEP_H

#include <linux/types.h>
#include "hmb_agent.h"

/*
 * The BPF map "cmds" (fd @cmds_fd, an array of HMB_CMD_SLOTS struct
 * hmb_cmd_slot) mapped into this process, read and write; NULL with errno
 * set when it cannot be.  hmb_cmds_unmap() undoes it.
 */
struct hmb_cmd_slot *hmb_cmds_map(int cmds_fd);
void hmb_cmds_unmap(struct hmb_cmd_slot *slots);

/* Command (@k, @n) in the mapped "cmds" @slots, or NULL (as the program). */
struct hmb_cmd_slot *hmb_cmd_find(struct hmb_cmd_slot *slots,
				  const struct hmb_cmd_key *k, __u32 n);

/*
 * Take the command in @s out of "cmds" if @s still holds the command
 * whose tag is @tag: hide it from the program's lookups, then win its
 * report from the program (HMB_SYNC_DONE), copy it into *@ev (an
 * HMB_EV_CMD event with its key) and free the slot.  Returns 1 if taken;
 * 0 if the slot no longer holds that command or the program reports it.
 */
int hmb_cmd_take(struct hmb_cmd_slot *s, __u64 tag, struct hmb_cmd_event *ev);

/*
 * The BPF map "kseq" (fd @kseq_fd, an array of @nslots struct hmb_kseq,
 * a power of 2) mapped into this process, read and write; NULL with errno
 * set when it cannot be.  hmb_kseq_unmap() undoes it.
 */
struct hmb_kseq *hmb_kseq_map(int kseq_fd, unsigned int nslots);
void hmb_kseq_unmap(struct hmb_kseq *idx, unsigned int nslots);

/* Key @k's entry in the mapped "kseq" @idx, or NULL (as the program). */
struct hmb_kseq *hmb_kseq_find(struct hmb_kseq *idx, unsigned int nslots,
			       const struct hmb_cmd_key *k);

/**
 * struct hmb_sweep_ids - what hmb_sweep_stale_ids() did.
 * @seen: entries of "kseq" looked at.
 * @removed: stale entries taken out (none of their commands left in
 *	"cmds").
 * @restored: entries turned back because a command of that id was
 *	submitted while the entry was being taken out.
 */
struct hmb_sweep_ids {
	unsigned long seen;
	unsigned long removed;
	unsigned long restored;
};

/*
 * Take out the entries of the mapped "kseq" @idx (@nslots) none of whose
 * commands [first, next) is still in "cmds" (mapped at @slots): their
 * tags get HMB_KSEQ_DEAD (lookups still find them, no new id claims
 * them).  The programs never take an entry out, so
 * without this the index of command ids fills up for good once enough
 * distinct ids (queues x command ids) have been used; the agent calls it
 * when the index fills up, and frees the slots with hmb_kseq_free_dead()
 * at its next sweep.  The program's kseq_epoch (@epoch, mapped) is odd
 * while it runs, bumped before and after.  Returns 0.
 */
int hmb_sweep_stale_ids(struct hmb_kseq *idx, unsigned int nslots,
			struct hmb_cmd_slot *slots, __u32 *epoch,
			struct hmb_sweep_ids *res);

/*
 * Free the slots of "kseq" (@idx, @nslots) taken out by an earlier
 * hmb_sweep_stale_ids() and not turned back since (none of the programs
 * can still hold them: a program runs for microseconds): first and next
 * zeroed, tag HMB_KSEQ_REUSE, claimable by the next new id.  One whose id
 * has a command in "cmds" (@slots) again is turned back instead.  Returns
 * how many were freed.
 */
unsigned long hmb_kseq_free_dead(struct hmb_kseq *idx, unsigned int nslots,
				 struct hmb_cmd_slot *slots);

#endif /* HMB_AGENT_SWEEP_H */
