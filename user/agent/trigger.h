/* SPDX-License-Identifier: GPL-2.0 */
/*
 * trigger.h - hmb-trace-agent's --trigger: the expression language
 * (trigparse.c, on its own so that its test needs no BPF) and the armed
 * agent's side of it (trigger.c).  docs/agent.md, "Triggers".
 */
#ifndef HMB_AGENT_TRIGGER_H
#define HMB_AGENT_TRIGGER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <linux/types.h>

#include "hmbtrace_dict.h"
#include "hmbtrace_util.h"
#include "hmb_agent.h"

/* Opcodes of the dictionary one event trigger fires on (a group's edges). */
#define TRIG_MAX_OPS		16
/* Percentile windows: whole seconds, at most an hour. */
#define TRIG_WINDOW_MAX_S	3600
#define TRIG_WINDOW_DEF_S	10

struct trig_spec {
	const char *expr;		/* as given */
	enum hmb_trig_kind kind;
	unsigned int from, to;		/* HMB_TP_*: a latency's points */
	int opc;			/* opcode filter, -1: none */
	char opc_name[16];		/* the filter as written, "" if none */
	uint64_t thresh_ns;		/* a fixed threshold, else 0 */
	double pct;			/* a percentile threshold (0 < pct < 100) */
	unsigned int window_s;		/* ... of the last window_s seconds */
	char name[HMB_DICT_NAME_LEN];	/* event: the name given */
	uint16_t ops[TRIG_MAX_OPS];	/* event: the opcodes it fires on */
	unsigned int nops;
};

/*
 * Parse @expr into @t, names resolved in @dict.  0, or the column (from 1)
 * where it goes wrong with why in @why.
 */
int trig_parse(const char *expr, const struct hmb_dict *dict,
	       struct trig_spec *t, char *why, size_t whylen);
/* @t as the programs' table entry @b, with opcode filter @opc. */
void trig_to_bpf(const struct trig_spec *t, int opc, struct hmb_trig *b);
/* The name of point HMB_TP_* @p ("host_submit", "fw_fetch", ...). */
const char *trig_point_name(unsigned int p);
/* The threshold of a log2 histogram's @pct percentile (0: too few values). */
uint64_t trig_hist_pct_ns(const uint64_t *slots, double pct);

/* trigger.c: the agent armed (its globals in agent.h) */
void trig_compile(void);		/* the --trigger options; exit 2 */
__u32 trig_armed_bits(void);		/* rodata trig_armed */
bool trig_reset_armed(void);
int trig_start(void);			/* after load: table and evdesc */
void trig_tick(uint64_t now_ns);	/* percentile thresholds */
void trig_event(const struct hmb_trig_event *ev);
/*
 * A command the sweep took out (its records never came, or it never
 * completed): the latency triggers, by the programs' rule, since no
 * program reports it.
 */
void trig_swept(const struct hmb_cmd_event *c);
void trig_report_text(FILE *f);
void trig_report_json(struct hmb_json *j);

#endif /* HMB_AGENT_TRIGGER_H */
