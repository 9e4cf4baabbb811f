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

#endif /* HMB_AGENT_SWEEP_H */
