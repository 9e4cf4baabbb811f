/* SPDX-License-Identifier: GPL-2.0 */
/*
 * evdesc.h - the BPF map "evdesc" from the event dictionary: how the
 * programs read each opcode's records.  One definition for the agent and
 * the tests that load its programs.
 */
#ifndef HMB_AGENT_EVDESC_H
#define HMB_AGENT_EVDESC_H

#include <linux/types.h>
#include "hmbtrace_dict.h"

/*
 * Put every event of @dict into the BPF map "evdesc" (fd @fd).  Returns 0,
 * or -errno with *@bad_op the opcode that could not be stored.
 */
int hmb_evdesc_load(int fd, const struct hmb_dict *dict, __u32 *bad_op);

/*
 * --trigger: mark the @n opcodes @ops in "evdesc" (loaded) as firing
 * trigger @bit.  0 or -errno.
 */
int hmb_evdesc_mark_trig(int fd, const __u16 *ops, unsigned int n,
			 unsigned int bit);

#endif /* HMB_AGENT_EVDESC_H */
