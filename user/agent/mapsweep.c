// SPDX-License-Identifier: GPL-2.0
/*
 * mapsweep.c - the main loop's upkeep of the BPF join's maps: commands
 * whose firmware records never came (or that never completed) taken out
 * of "cmds" and reported, and, when the command-id index fills up, its
 * ids with no command left (sweep.c's hmb_sweep_stale_ids()).
 */
#include <stdlib.h>
#include <string.h>

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
static void sweep_ids(int cmds_fd)
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
	err = hmb_sweep_stale_ids(bpf_map__fd(m), cmds_fd, max, &ids);
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
	struct hmb_wait_key key, next, *prev = NULL, *keys;
	size_t n = 0, cap = 65536 + 1024;
	uint64_t now = mono_ns(), grace = (uint64_t)ag.env.grace_ms * 1000000;
	struct hmb_cmd_event ev;
	int fd;

	if (!ag.fw_on)
		return;
	keys = malloc(cap * sizeof(*keys));
	if (!keys)
		return;
	fd = bpf_map__fd(ag.skel->maps.cmds);
	while (n < cap && !bpf_map_get_next_key(fd, prev, &next)) {
		struct hmb_cmd_state st;

		key = next;
		prev = &key;
		if (bpf_map_lookup_elem(fd, &key, &st))
			continue;
		if (st.complete_ns ? (all || st.complete_ns + grace < now) :
		    ((all && st.submit_ns + grace < now) ||
		     st.submit_ns + 30000000000ULL < now))
			keys[n++] = key;
	}
	for (size_t i = 0; i < n; i++) {
		memset(&ev, 0, sizeof(ev));
		if (bpf_map_lookup_and_delete_elem(fd, &keys[i], &ev.st))
			continue;	/* reported meanwhile */
		ev.type = HMB_EV_CMD;
		ev.ctrl = keys[i].k.ctrl;
		ev.qid = keys[i].k.qid;
		ev.cid = keys[i].k.cid;
		/* the program moves kseq past it at the key's next use */
		ev.st.flags |= HMB_CF_SWEPT;
		if (!ev.st.complete_ns)
			ev.st.flags |= HMB_CF_NO_COMPLETE;
		if (!(ev.st.flags & HMB_CF_FILTERED))
			handle_event(NULL, &ev, sizeof(ev));
	}
	free(keys);
	sweep_ids(fd);
}
