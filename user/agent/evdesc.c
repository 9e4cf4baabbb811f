// SPDX-License-Identifier: GPL-2.0
/*
 * evdesc.c - the BPF map "evdesc" from the event dictionary.
 */
#include <errno.h>

#include <bpf/bpf.h>

#include "hmb_agent.h"
#include "evdesc.h"

/* What the programs need of event @e (struct hmb_evdesc, hmb_agent.h). */
static struct hmb_evdesc evdesc_of(const struct hmb_dict_event *e)
{
	const struct hmb_dict_field *sf = hmb_dict_field(e, "slba");
	struct hmb_evdesc d = {
		.phase = (__u8)e->phase,
		.bg_edge = (__u8)e->bg_edge,
		.sqid_off = (__u16)(e->key_off[HMB_KEY_SQID] < 0 ? 0 :
				    e->key_off[HMB_KEY_SQID]),
		.cid_off = (__u16)(e->key_off[HMB_KEY_CID] < 0 ? 0 :
				   e->key_off[HMB_KEY_CID]),
		.min_len = e->min_len,
		.slba_off = HMB_NO_OFF,
		.known = 1,
	};

	if (e->phase == HMB_PHASE_FETCH && sf && sf->size == 8)
		d.slba_off = sf->offset;
	if (e->key_off[HMB_KEY_SQID] >= 0 &&
	    e->key_off[HMB_KEY_CID] == e->key_off[HMB_KEY_SQID] + 2) {
		d.keys_read = HMB_KEYS_4;
		if (d.slba_off == d.sqid_off + 8)
			d.keys_read |= HMB_KEYS_16;
		else if (d.slba_off == d.sqid_off + 16)
			d.keys_read |= HMB_KEYS_24;
	}
	return d;
}

int hmb_evdesc_load(int fd, const struct hmb_dict *dict, __u32 *bad_op)
{
	for (size_t i = 0; i < hmb_dict_count(dict); i++) {
		const struct hmb_dict_event *e = hmb_dict_event_at(dict, i);
		struct hmb_evdesc d = evdesc_of(e);
		__u32 op = e->opcode;

		if (bpf_map_update_elem(fd, &op, &d, BPF_ANY)) {
			*bad_op = op;
			return -errno;
		}
	}
	return 0;
}

int hmb_evdesc_mark_trig(int fd, const __u16 *ops, unsigned int n,
			 unsigned int bit)
{
	struct hmb_evdesc d;

	for (unsigned int k = 0; k < n; k++) {
		__u32 op = ops[k];

		if (bpf_map_lookup_elem(fd, &op, &d))
			return -errno;
		d.trig |= (__u16)(1U << bit);
		if (bpf_map_update_elem(fd, &op, &d, BPF_EXIST))
			return -errno;
	}
	return 0;
}
