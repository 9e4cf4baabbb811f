// SPDX-License-Identifier: GPL-2.0
/*
 * mapsweep.c - the main loop's upkeep of the BPF join's maps: commands
 * whose firmware records never came (or that never completed) taken out
 * of "cmds" and reported, and, when the command-id index fills up, its
 * ids with no command left (sweep.c's hmb_sweep_stale_ids()).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "agent.h"
#include "hmb_agent.skel.h"

/*
 * The program's command table "cmds" and command-id index "kseq" mapped
 * into the agent: the sweep reads them and takes entries out in place.
 * -1 (said) if either cannot be.
 */
int map_join_maps(void)
{
	ag.cmd_slots = hmb_cmds_map(bpf_map__fd(ag.skel->maps.cmds));
	if (!ag.cmd_slots) {
		fprintf(stderr, PROG ": cannot map the BPF map cmds: %s\n",
			strerror(errno));
		return -1;
	}
	ag.kseq_slots = bpf_map__max_entries(ag.skel->maps.kseq);
	ag.kseq_idx = hmb_kseq_map(bpf_map__fd(ag.skel->maps.kseq),
				   ag.kseq_slots);
	if (!ag.kseq_idx) {
		fprintf(stderr, PROG ": cannot map the BPF map kseq: %s\n",
			strerror(errno));
		return -1;
	}
	return 0;
}

void unmap_join_maps(void)
{
	hmb_cmds_unmap(ag.cmd_slots);
	hmb_kseq_unmap(ag.kseq_idx, ag.kseq_slots);
	ag.cmd_slots = NULL;
	ag.kseq_idx = NULL;
}

/*
 * The program keeps an entry per full command id it has seen in "kseq"
 * (never taking one out under another CPU's pointer, see the map).  Only
 * when the index fills up (many queues: half its slots used, or a new id
 * found its probe run full since the last sweep) does the sweep take out
 * the ids with no command left, bumping kseq_epoch around it so that a
 * submission racing it re-checks its entry; their slots are freed at the
 * next sweep, when no program can still hold them.
 */
static void sweep_ids(void)
{
	uint64_t c[HMB_C_COUNT], live;
	struct hmb_sweep_ids ids;

	if (!ag.kseq_idx)
		return;
	if (ag.kseq_dead) {
		hmb_kseq_free_dead(ag.kseq_idx, ag.kseq_slots, ag.cmd_slots);
		ag.kseq_dead = false;
	}
	read_counters(c);
	live = c[HMB_C_IDS_NEW] - ag.ids_swept.removed + ag.ids_swept.restored;
	if (live < ag.kseq_slots / 2 && c[HMB_C_DONE_FULL] == ag.kseq_full_seen)
		return;
	ag.kseq_full_seen = c[HMB_C_DONE_FULL];
	hmb_sweep_stale_ids(ag.kseq_idx, ag.kseq_slots, ag.cmd_slots,
			    &ag.skel->bss->kseq_epoch, &ids);
	ag.ids_swept.removed += ids.removed;
	ag.ids_swept.restored += ids.restored;
	ag.kseq_dead = ids.removed > 0;
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
		if (!(ev.st.flags & HMB_CF_FILTERED))
			handle_event(NULL, &ev, sizeof(ev));
	}
	sweep_ids();
}
