/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The formats subcommands of hmb-trace-analyze: convert --to perfetto,
 * report, correlate.  Hooked into the command table in main.c.
 */
#ifndef HMB_FORMATS_H
#define HMB_FORMATS_H

#include <stdio.h>

/* convert: --to perfetto here, everything else to cmd_convert(). */
int cmd_convert_ext(int argc, char **argv);
void usage_convert_ext(FILE *f);

int cmd_report(int argc, char **argv);
void usage_report(FILE *f);

#endif /* HMB_FORMATS_H */
