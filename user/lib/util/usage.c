// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * usage.c - the one usage-error line of every nvme-hmb-trace tool
 * (hmbtrace_util.h), so that a script or a user reads the same shape from
 * each: one line, the tool's name first, where to look last.
 */
#include <ctype.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hmbtrace_util.h"

void hmb_usage_verror(const char *prog, const char *sub, const char *fmt,
		      va_list ap)
{
	char what[1024];

	/* One fprintf: lines of tools writing to one stderr do not mix. */
	vsnprintf(what, sizeof(what), fmt, ap);
	if (sub)
		fprintf(stderr, "%s: %s: %s (try '%s %s --help')\n", prog, sub,
			what, prog, sub);
	else
		fprintf(stderr, "%s: %s (try '%s --help')\n", prog, what, prog);
	fflush(stderr);
}

void hmb_usage_error(const char *prog, const char *sub, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	hmb_usage_verror(prog, sub, fmt, ap);
	va_end(ap);
}

void hmb_usage_exit(const char *prog, const char *sub, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	hmb_usage_verror(prog, sub, fmt, ap);
	va_end(ap);
	exit(HMB_EXIT_USAGE);
}

/*
 * getopt moves optind past an element once it is used up, so a long
 * option and a short one that ends its element are argv[optind - 1]; a
 * bad short option inside a cluster ("-Zj") leaves optind alone, which is
 * why a short option is named from optopt, never from argv.
 */
void hmb_usage_getopt(const char *prog, const char *sub, int opt,
		      char *const argv[])
{
	const char *a = optind > 0 ? argv[optind - 1] : "";
	bool is_long = strncmp(a, "--", 2) == 0 && a[2];
	int len = (int)strcspn(a, "=");

	if (opt == ':') {
		if (is_long)
			hmb_usage_error(prog, sub, "option '%.*s' needs an argument",
					len, a);
		else
			hmb_usage_error(prog, sub, "option '-%c' needs an argument",
					optopt);
	} else if (optopt == 0) {
		hmb_usage_error(prog, sub, "unknown option '%.*s'", len, a);
	} else if (is_long && a[len] == '=') {
		hmb_usage_error(prog, sub, "option '%.*s' takes no argument",
				len, a);
	} else if (isprint(optopt)) {
		hmb_usage_error(prog, sub, "unknown option '-%c'", optopt);
	} else {
		hmb_usage_error(prog, sub, "unknown option '%s'", a);
	}
}
