/* SPDX-License-Identifier: Apache-2.0 */
/*
 * pelhost: a saved Persistent Event Log (pel --device --save FILE: the log
 * and FILE.clock) loaded for the commands that put it on the join's
 * timeline (correlate, report, convert, export --pel).  Each event placed
 * on host CLOCK_MONOTONIC by user/nvme's pel_place(), the one mapping;
 * the commands it overlapped gathered as the join hands them out.
 */
#ifndef HMB_PELHOST_H
#define HMB_PELHOST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "pel.h"

struct hmb_cmd;
struct hmb_json;

/* Commands listed per event in correlate's JSON (all are counted). */
#define PELH_LIST_MAX	64

struct pelh_cmd {
	uint64_t submit_ns, complete_ns;
	uint16_t qid, cid;
	char opc[16];
};

struct pelh_ev {
	uint32_t index;
	uint8_t type;
	const char *name;		/* pel_type_name(); NULL: unknown */
	struct pel_ts ts;
	enum pel_unplaced why;		/* PEL_PLACED: mono_ns, bound_ns */
	uint64_t mono_ns, bound_ns;
	char fields[120];		/* "over_temp=3 threshold=75", cut */
	/* the commands it overlapped: [submit, complete] meets
	 * [mono - bound, mono + bound] */
	uint64_t n_cmds, n_in_flight;	/* in flight: submit <= mono <= complete */
	struct pelh_cmd list[PELH_LIST_MAX];
	uint32_t nlist;
	struct pelh_cmd slowest;	/* n_cmds > 0 */
	/* convert, report: on the firmware time line (pelh_fw_cmd) */
	bool on_fw;
	uint64_t fw_ns;
};

struct pelh {
	const char *path;
	uint8_t *buf;
	size_t len;
	struct pel_header h;
	bool have_clock;		/* FILE.clock was there */
	struct pel_clock clk;
	struct pel_hostmap map;
	struct pelh_ev *ev;		/* in log order */
	size_t n;
	size_t *order;			/* placed events by mono_ns */
	size_t nplaced;
	uint64_t max_bound;
	uint64_t unplaced[PEL_UNPLACED_COUNT];
	bool walk_err;			/* the walk stopped early (said) */
	/* pelh_fw_cmd: the next placed event (in order) without a firmware
	 * time, the host - fw offset of the last command seen */
	size_t fw_next;
	bool fw_have;
	double fw_delta;
	size_t *fw_order;		/* on_fw events by fw_ns (pelh_fw_end) */
	size_t n_fw;
};

/*
 * The log @path and its clock reading (FILE.clock, pel_clock_load): every
 * event decoded and placed.  0, or EXIT_BADINPUT with the line said.
 * A log without FILE.clock loads, no event placed (PEL_NO_CLOCK).
 */
int pelh_load(struct pelh *p, const char *path);
void pelh_free(struct pelh *p);

/* Command @c (host times: CLOCK_MONOTONIC) against every placed event. */
void pelh_cmd(struct pelh *p, const struct hmb_cmd *c);

/*
 * convert, report: the firmware time of each placed event, through the
 * join's clock at the command handed out next after it (@i, @c: during
 * the join's callback, whose clock is valid); pelh_fw_end() gives the
 * events after the last command the last command's clock, and sorts the
 * events on the firmware time line into fw_order.  0, or -1 out of memory.
 */
struct hmb_join;
void pelh_fw_cmd(struct pelh *p, const struct hmb_join *j, size_t i,
		 const struct hmb_cmd *c);
int pelh_fw_end(struct pelh *p);

/* correlate's text section and JSON lines. */
void pelh_print(FILE *f, const struct pelh *p);
void pelh_json_lines(struct hmb_json *j, const struct pelh *p);
/* The "pel" member of a final JSON object: file, counts. */
void pelh_json_totals(struct hmb_json *j, const struct pelh *p);

/* pftpel.c: convert --to perfetto's track of the events on the firmware
 * time line (pelh_fw_end first), on sequence @s of writer @w. */
struct pfw;
struct pseq;
void pftrace_pel(struct pfw *w, struct pseq *s, const struct pelh *pel);

/* pel.c: the whole of @path ("-": stdin), at most 256 MiB. */
int pel_slurp(const char *path, const char *name, uint8_t **buf,
	      size_t *len);

#endif /* HMB_PELHOST_H */
