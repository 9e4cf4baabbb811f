/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The formats of hmb-trace-analyze convert (convert.c's table) and the
 * report command.
 */
#ifndef HMB_FORMATS_H
#define HMB_FORMATS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "analyze.h"

struct conv_format;

/* What convert was asked to do (convert.c). */
struct conv {
	const char *in, *out;
	const char *dict_path;		/* NULL: the shipped dictionary */
	bool names;			/* csv, jsonl: dictionary names */
	bool raw;			/* ctf: the dump as it is */
	const char *host;		/* perfetto: host events */
	const char *pel;		/* ... and a Persistent Event Log */
	long ctrl;			/* ... of controller nvmeN, -1: the one */
	struct input_opts iopts;
	unsigned int given;		/* options given, by kind */
};

/* --to perfetto-json (perfetto.c) */
int perfetto_convert(const struct conv *c, const struct conv_format *f);
/* --to perfetto (pftrace.c) */
int pftrace_convert(const struct conv *c, const struct conv_format *f);

/*
 * A flow from host command @id to its firmware fetch record (seq, ts),
 * kept until the record is written (perfetto.c, pftrace.c).
 */
struct pf_flow {
	uint64_t ts;
	uint32_t seq;
	uint32_t id;
};

/* Sort by (seq, ts), for pf_flow_find(). */
void pf_flow_sort(struct pf_flow *v, size_t n);
const struct pf_flow *pf_flow_find(const struct pf_flow *v, size_t n,
				   uint32_t seq, uint64_t ts);
/* --to ctf --raw (ctfraw.c): DIR/metadata and DIR/stream for FILE. */
int ctf_raw_convert(const char *path, const char *dir,
		    const struct hmb_dict *dict);

int cmd_report(int argc, char **argv);
void usage_report(FILE *f);

#endif /* HMB_FORMATS_H */
