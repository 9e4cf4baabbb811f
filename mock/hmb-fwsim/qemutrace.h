/* SPDX-License-Identifier: Apache-2.0 */
/*
 * qemutrace.h - hmb-fwsim --from-qemu-trace: firmware records that describe
 * the very commands a guest issued, from QEMU's NVMe trace events.
 */
#ifndef HMB_FWSIM_QEMUTRACE_H
#define HMB_FWSIM_QEMUTRACE_H

#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <hmbtrace.h>

struct qt_opts {
	const char *input;	/* QEMU trace file or "-"; NULL: mode off */
	double offset_ns;	/* firmware clock = trace time * (1 + drift) */
	double drift_ppm;	/*   + offset (+ step after step_at) */
	double step_at_s;	/* seconds after the first line; < 0: no step */
	double step_ns;
	double bg_rate;		/* gc windows per second (thermal: a tenth) */
	const char *cmd_log;	/* one line per record: which QEMU command */
	const char *dict;	/* event dictionary (default: share/ next to bin/) */
	const char *dump;	/* --log: every record written, as a dump file */
	uint64_t seed;
};

enum {
	QT_O_INPUT = 512, QT_O_OFFSET, QT_O_DRIFT, QT_O_STEP, QT_O_BG_RATE,
	QT_O_CMD_LOG, QT_O_DICT,
};
#define QT_OPT_FIRST QT_O_INPUT
#define QT_OPT_LAST QT_O_DICT

#define QT_LONG_OPTIONS							\
	{ "from-qemu-trace", required_argument, NULL, QT_O_INPUT },	\
	{ "clock-offset", required_argument, NULL, QT_O_OFFSET },	\
	{ "clock-drift", required_argument, NULL, QT_O_DRIFT },		\
	{ "clock-step", required_argument, NULL, QT_O_STEP },		\
	{ "bg-rate", required_argument, NULL, QT_O_BG_RATE },		\
	{ "cmd-log", required_argument, NULL, QT_O_CMD_LOG },		\
	{ "event-dict", required_argument, NULL, QT_O_DICT }

void qt_defaults(struct qt_opts *q);
/* Parse one of the options above; 0 or -1 with @msg filled. */
int qt_opt(struct qt_opts *q, int opt, const char *arg, char *msg,
	   size_t msglen);
const char *qt_usage(void);
/*
 * Read the trace until its end or *@stop, producing into @p (firmware
 * rule: drop on overflow).  Prints a JSON report on @report.  Returns an
 * exit status (0 ok, 1 error with a message on stderr).
 */
int qt_main(struct hmb_producer *p, const struct qt_opts *q,
	    volatile sig_atomic_t *stop, FILE *report);

#endif /* HMB_FWSIM_QEMUTRACE_H */
