/* SPDX-License-Identifier: GPL-2.0 */
/* fwhist.h - the firmware's phase histograms of a reported command. */
#ifndef HMB_AGENT_FWHIST_H
#define HMB_AGENT_FWHIST_H

#include <linux/types.h>

#include "hmbtrace_cmd.h"
#include "hmb_agent.h"

/* Adds @st's firmware phases to @h[HMB_H_FW_TOTAL .. HMB_H_COUNT - 1]. */
void hmb_fw_phase_hists(const struct hmb_cmd_state *st,
			struct hmb_log2_hist *h);

#endif
