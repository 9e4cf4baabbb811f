/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * chpriv.h - what the fleet store's client shows its fuzz harness.  Not
 * installed.
 */
#ifndef HMBTRACE_CHPRIV_H
#define HMBTRACE_CHPRIV_H

#include "hmbtrace_ch.h"
#include "../format/internal.h"

/*
 * The libcurl handle of @c, for the fuzz harness of server answers
 * (fuzz/fuzz_chttp.c): it points the connection at its own socket, so
 * that libcurl and the client parse the answers it feeds as they would
 * a server's.
 */
HMB_HIDDEN void *hmb__ch_curl(struct hmb_ch_conn *c);

#endif /* HMBTRACE_CHPRIV_H */
