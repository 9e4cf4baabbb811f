// SPDX-License-Identifier: GPL-2.0
/*
 * log.c - hmb-trace-daemon's messages on stderr: one text line each, or
 * one JSON object per line with --log-format json.
 */
#include <stdarg.h>
#include <stdio.h>
#include <time.h>

#include "daemon.h"
#include "hmbtrace_util.h"

int log_verbosity = LOG_INFO;
bool log_json;

static const char *const level_name[] = { "error", "warning", "info", "debug" };

/* One JSON log line on stderr: {"ts","prog","level","msg"}; -1 if it
 * could not be written (no memory). */
static int log_line_json(int lvl, const char *msg)
{
	static struct hmb_outbuf ob;
	struct hmb_json j;

	if (!ob.buf && hmb_ob_open_file(&ob, stderr, "<stderr>", 4096))
		return -1;
	hmb_json_init(&j, &ob);
	hmb_json_obj(&j);
	hmb_json_key(&j, "ts");
	hmb_json_fixed(&j, hmb_now_ns(CLOCK_REALTIME) / 1000, 6);
	hmb_json_kv_str(&j, "prog", PROG);
	hmb_json_kv_str(&j, "level", level_name[lvl]);
	hmb_json_kv_str(&j, "msg", msg);
	hmb_json_end(&j);
	hmb_json_nl(&j);
	hmb_ob_flush(&ob);
	fflush(stderr);
	return 0;
}

void log_msg(enum log_level lvl, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	if ((int)lvl > log_verbosity)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (log_json && log_line_json(lvl, msg) == 0)
		return;
	if (log_json) {
		/* no memory for the writer: the message still goes out */
		fprintf(stderr, PROG ": %s\n", msg);
	} else {
		fprintf(stderr, PROG ": %s%s\n",
			lvl == LOG_ERR ? "error: " : lvl == LOG_WARN ? "warning: " : "",
			msg);
	}
}
