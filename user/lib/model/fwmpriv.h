/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * fwmpriv.h - the firmware command model's entry for the streaming join
 * (joinstream.c).  Not installed.
 */
#ifndef HMBTRACE_FWMPRIV_H
#define HMBTRACE_FWMPRIV_H

#include "hmbtrace_fwmodel.h"
#include "../format/internal.h"

/*
 * fwmodel.c: the phases @mask of the open command (@sqid, @cid) claimed by
 * its consumer (the streaming join), out of the model; true when nothing
 * of the command stays open.
 */
HMB_HIDDEN bool hmb__fwm_take(struct hmb_fwmodel *m, uint16_t sqid,
			      uint16_t cid, uint8_t mask);

#endif /* HMBTRACE_FWMPRIV_H */
