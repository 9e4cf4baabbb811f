// SPDX-License-Identifier: GPL-2.0
/*
 * mapsweep.c - the main loop's upkeep of the BPF join's maps: commands
 * whose firmware records never came (or that never completed) taken out
 * of "cmds" and reported.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "agent.h"
#include "trigger.h"
#include "hmb_agent.skel.h"

/*
 * The program's command table "cmds" mapped into the agent: the sweep
 * reads it and takes commands out in place.  -1 (said) if it cannot be.
 */
int map_join_maps(void)
{
	ag.cmd_slots = hmb_cmds_map(bpf_map__fd(ag.skel->maps.cmds));
	if (!ag.cmd_slots) {
		fprintf(stderr, PROG ": cannot map the BPF map cmds: %s\n",
			strerror(errno));
		return -1;
	}
	return 0;
}

void unmap_join_maps(void)
{
	hmb_cmds_unmap(ag.cmd_slots);
	ag.cmd_slots = NULL;
}

/*
 * Commands completed longer than the grace period ago whose firmware
 * records never came (or all of them, at exit), and commands that never
 * completed: take them out of the maps and count them.
 */
void sweep(bool all)
{
	uint64_t now = hmb_now_ns(CLOCK_MONOTONIC);
	uint64_t grace = (uint64_t)ag.env.grace_ms * 1000000;
	struct hmb_cmd_event ev;

	if (!ag.cmd_slots)
		return;
	for (unsigned int i = 0; ag.fw_on && i < HMB_CMD_SLOTS; i++) {
		struct hmb_cmd_slot *s = &ag.cmd_slots[i];
		__u64 tag = __atomic_load_n(&s->tag, __ATOMIC_ACQUIRE), sub, cpl;

		if (!(tag & HMB_TAG_VALID) || (tag & HMB_TAG_BUSY))
			continue;
		sub = __atomic_load_n(&s->st.submit_ns, __ATOMIC_RELAXED);
		cpl = __atomic_load_n(&s->st.complete_ns, __ATOMIC_RELAXED);
		if (!(cpl ? (all || cpl + grace < now) :
		      ((all && sub + grace < now) ||
		       sub + 30000000000ULL < now)))
			continue;
		if (!hmb_cmd_take(s, tag, &ev))
			continue;	/* reported meanwhile */
		/* the program moves kseq past it at the key's next use */
		ev.st.flags |= HMB_CF_SWEPT;
		if (!ev.st.complete_ns)
			ev.st.flags |= HMB_CF_NO_COMPLETE;
		if (ev.st.flags & HMB_CF_FILTERED) {
			/* as the programs count one they report */
			ag.swept_filtered++;
			continue;
		}
		trig_swept(&ev);
		handle_event(NULL, &ev, sizeof(ev));
	}
}
