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

/**
 * struct hmb_sweep_ids - what hmb_sweep_stale_ids() did.
 * @seen: entries of "kseq" looked at.
 * @removed: stale entries deleted (none of their commands left in "cmds").
 * @restored: entries put back because a command of that id was submitted
 *	while the entry was being deleted.
 */
struct hmb_sweep_ids {
	unsigned long seen;
	unsigned long removed;
	unsigned long restored;
};

/*
 * Delete the entries of the BPF map "kseq" (fd @kseq_fd, at most @max
 * entries) none of whose commands [first, next) is still in "cmds"
 * (mapped at @slots).  The programs never delete an entry, so without this the
 * index of command ids fills up for good once enough distinct ids
 * (queues x command ids) have been used; the agent calls it when the
 * index is three quarters full, with the program's kseq_epoch odd.
 * Returns 0, or -errno when no memory could be had.
 */
int hmb_sweep_stale_ids(int kseq_fd, struct hmb_cmd_slot *slots,
			unsigned int max, struct hmb_sweep_ids *res);

#endif /* HMB_AGENT_SWEEP_H */
