// SPDX-License-Identifier: GPL-2.0
/*
 * fwhist.c - the firmware's phase histograms of the commands the BPF join
 * reports.
 */
#include <linux/types.h>

#include "hmbtrace_cmd.h"
#include "hmb_agent.h"
#include "fwhist.h"

/*
 * The firmware's own phases of a command reported (its clock, no
 * mapping): from the latest earlier firmware event of the command to each
 * of media_start .. cqe_posted, and fetch -> cqe_posted.  Counted here,
 * once a command, from the timestamps the programs send with it (the
 * programs used to count them at each record: a per-CPU map lookup and an
 * update a record).  Filtered commands are not sent, so not counted.
 * Adds to @h, indexed by enum hmb_hist_id.
 */
void hmb_fw_phase_hists(const struct hmb_cmd_state *st,
			struct hmb_log2_hist *h)
{
	for (int ph = HMB_PH_MEDIA_START; ph <= HMB_PH_CQE_POSTED; ph++) {
		__u64 ts = st->fw_ts[ph], prev = 0;
		int have = 0;

		if (!(st->fw_mask & (1 << ph)))
			continue;
		for (int q = HMB_PH_FETCH; q < HMB_PH_COUNT; q++) {
			if (q == ph || !(st->fw_mask & (1 << q)) ||
			    st->fw_ts[q] > ts || (have && st->fw_ts[q] <= prev))
				continue;
			prev = st->fw_ts[q];
			have = 1;
		}
		if (have)
			hmb_hist_add(&h[HMB_H_FW_TO_MEDIA_START + ph -
				       HMB_PH_MEDIA_START], ts - prev);
	}
	if ((st->fw_mask & (1 << HMB_PH_FETCH)) &&
	    (st->fw_mask & (1 << HMB_PH_CQE_POSTED)) &&
	    st->fw_ts[HMB_PH_FETCH] <= st->fw_ts[HMB_PH_CQE_POSTED])
		hmb_hist_add(&h[HMB_H_FW_TOTAL],
			     st->fw_ts[HMB_PH_CQE_POSTED] -
			     st->fw_ts[HMB_PH_FETCH]);
}
