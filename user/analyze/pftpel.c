// SPDX-License-Identifier: Apache-2.0
/*
 * convert --to perfetto --pel (pftrace.c): the Persistent Event Log's
 * events on the firmware time line (pelhost.c placed them through the
 * join's clock), instants on a track of their own with their host time,
 * bound and fields as args.
 */
#include <stdio.h>

#include "analyze.h"
#include "pelhost.h"
#include "pftw.h"

void pftrace_pel(struct pfw *w, struct pseq *s, const struct pelh *pel)
{
	uint64_t track = pfw_uuid(w);
	char name[300];

	snprintf(name, sizeof(name), "NVMe Persistent Event Log (%s, times mapped to the firmware clock)",
		 pel->path);
	pfw_track(w, track, 0, name, -1, 3, false);
	pfw_seq_init(w, s, track, 0);
	for (size_t k = 0; k < pel->n_fw; k++) {
		const struct pelh_ev *x = &pel->ev[pel->fw_order[k]];
		char nb[16];

		snprintf(nb, sizeof(nb), "type_%02x", x->type);
		pfw_ev_start(w, s, x->fw_ns, INSTANT);
		pfw_ev_name(w, x->name ? x->name : nb);
		pfw_ann_u64(w, "index", x->index);
		pfw_ann_u64(w, "host_ns", x->mono_ns);
		pfw_ann_u64(w, "bound_ns", x->bound_ns);
		pfw_ann_u64(w, "ctrl_timestamp_ms", x->ts.ms);
		pfw_ann_str(w, "fields", x->fields);
		pfw_ann_u64(w, "commands_overlapped", x->n_cmds);
		pfw_ev_put(w);
	}
}
