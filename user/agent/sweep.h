/* SPDX-License-Identifier: GPL-2.0 */
/*
 * sweep.h - upkeep of the BPF join's maps from user space.
 */
#ifndef HMB_AGENT_SWEEP_H
#define HMB_AGENT_SWEEP_H

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
 * (@cmds_fd).  The programs never delete an entry, so without this the
 * index of command ids fills up for good once enough distinct ids
 * (queues x command ids) have been used; the agent calls it when the
 * index is three quarters full, with the program's kseq_epoch odd.
 * Returns 0, or -errno when no memory could be had.
 */
int hmb_sweep_stale_ids(int kseq_fd, int cmds_fd, unsigned int max,
			struct hmb_sweep_ids *res);

#endif /* HMB_AGENT_SWEEP_H */
