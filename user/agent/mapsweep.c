// SPDX-License-Identifier: GPL-2.0
/*
 * mapsweep.c - the main loop's upkeep of the BPF join's maps: commands
 * whose firmware records never came (or that never completed) taken out
 * of "cmds" and reported, and, when the command-id index fills up, its
 * ids with no command left (sweep.c's hmb_sweep_stale_ids()).
 */
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "agent.h"
#include "hmb_agent.skel.h"

/*
 * The program keeps an entry per full command id it has seen in "kseq"
 * (never deleting one under another CPU's pointer, see the map).  Only
 * when the index is three quarters full (many queues) does the sweep
 * delete the ids with no command left, bumping kseq_epoch around it so
 * that a submission racing a delete re-checks its entry.
 */
static void sweep_ids(void)
{
	struct bpf_map *m = ag.skel->maps.kseq;
	unsigned int max = bpf_map__max_entries(m);
	volatile __u32 *epoch = &ag.skel->bss->kseq_epoch;
	uint64_t c[HMB_C_COUNT], live;
	struct hmb_sweep_ids ids;
	int err;

	read_counters(c);
	live = c[HMB_C_IDS_NEW] - ag.ids_swept.removed + ag.ids_swept.restored;
	if (live < (uint64_t)max / 4 * 3)
		return;
	__atomic_add_fetch(epoch, 1, __ATOMIC_SEQ_CST);		/* odd */
	err = hmb_sweep_stale_ids(bpf_map__fd(m), ag.cmd_slots, max, &ids);
	__atomic_add_fetch(epoch, 1, __ATOMIC_SEQ_CST);		/* even */
	if (!err) {
		ag.ids_swept.removed += ids.removed;
		ag.ids_swept.restored += ids.restored;
	}
}

/*
 * Commands completed longer than the grace period ago whose firmware
 * records never came (or all of them, at exit), and commands that never
 * completed: take them out of the maps and count them.
 */
void sweep(bool all)
{
	uint64_t now = mono_ns(), grace = (uint64_t)ag.env.grace_ms * 1000000;
	struct hmb_cmd_event ev;

	if (!ag.fw_on || !ag.cmd_slots)
		return;
	for (unsigned int i = 0; i < HMB_CMD_SLOTS; i++) {
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
