// SPDX-License-Identifier: GPL-2.0
/*
 * sweep.c - upkeep of the BPF join's maps from user space: stale entries
 * of the command-id index "kseq".
 *
 * The programs never delete a kseq entry (a deleted hash element may be
 * reused at once under another CPU's pointer, see the map's comment in
 * hmb_agent.bpf.c), so ids accumulate: at most 16 x the queue depth per
 * queue, but with many queues enough to fill the index, after which every
 * new id is refused (HMB_C_DONE_FULL).  When the index is three quarters
 * full the agent deletes here the ids with no command left.  A program
 * may submit a command of the same id while its entry is deleted: the
 * program re-checks its entry when kseq_epoch moved and puts it back, and
 * the delete here is followed by the same check, so whichever comes last
 * sees the other's command.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <linux/types.h>
#include <bpf/bpf.h>

#include "hmb_agent.h"
#include "sweep.h"

struct stale {
	struct hmb_cmd_key key;
	struct hmb_kseq ks;
};

/* Does "cmds" still hold a command of @key numbered in [first, next)? */
static int has_cmds(int cmds_fd, const struct hmb_cmd_key *key,
		    const struct hmb_kseq *ks)
{
	struct hmb_wait_key wk = { .k = *key };
	struct hmb_cmd_state st;
	__u32 n, span = ks->next - ks->first;

	/* The program keeps at most HMB_MAX_WAIT per id; more is not stale. */
	if (span > 2 * HMB_MAX_WAIT)
		return 1;
	for (n = 0; n < span; n++) {
		wk.n = ks->first + n;
		if (!bpf_map_lookup_elem(cmds_fd, &wk, &st))
			return 1;
	}
	return 0;
}

int hmb_sweep_stale_ids(int kseq_fd, int cmds_fd, unsigned int max,
			struct hmb_sweep_ids *res)
{
	struct hmb_cmd_key key, next, *prev = NULL;
	struct stale *list;
	size_t n = 0, i;

	memset(res, 0, sizeof(*res));
	list = calloc(max ? max : 1, sizeof(*list));
	if (!list)
		return -ENOMEM;
	/* Collect first: deleting while walking restarts the walk. */
	while (n < max && !bpf_map_get_next_key(kseq_fd, prev, &next)) {
		key = next;
		prev = &key;
		res->seen++;
		if (bpf_map_lookup_elem(kseq_fd, &key, &list[n].ks))
			continue;
		list[n].key = key;
		if (!has_cmds(cmds_fd, &key, &list[n].ks))
			n++;
	}
	for (i = 0; i < n; i++) {
		struct hmb_wait_key wk = { .k = list[i].key, .n = list[i].ks.next };
		struct hmb_kseq now;
		struct hmb_cmd_state st;

		/* Skip an id that was used again since it was looked at. */
		if (bpf_map_lookup_elem(kseq_fd, &list[i].key, &now) ||
		    now.first != list[i].ks.first || now.next != list[i].ks.next)
			continue;
		if (bpf_map_delete_elem(kseq_fd, &list[i].key))
			continue;
		res->removed++;
		/* A submission that raced the delete: index it again. */
		if (!bpf_map_lookup_elem(cmds_fd, &wk, &st)) {
			struct hmb_kseq back = { .first = wk.n, .next = wk.n + 1 };

			if (!bpf_map_update_elem(kseq_fd, &list[i].key, &back,
						 BPF_NOEXIST))
				res->restored++;
		}
	}
	free(list);
	return 0;
}
