// SPDX-License-Identifier: Apache-2.0
/*
 * hmb-trace-analyze: decode, count and convert HMB trace dumps and ring
 * images.  A command table in the style of bpftool: "PROG CMD ARGS", with
 * "PROG help" and "PROG CMD --help".
 */
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "analyze.h"
#include "formats.h"
#include "correlate.h"

static int cmd_help(int argc, char **argv);

static const struct cmd cmds[] = {
	{ "decode", cmd_decode, "print every record (text or JSON Lines)",
	  usage_decode },
	{ "stats", cmd_stats, "count records, losses, duplicates, opcodes",
	  usage_stats },
	{ "convert", cmd_convert,
	  "write the records as CSV, JSON Lines, CTF or Perfetto JSON",
	  usage_convert },
	{ "report", cmd_report, "write a self-contained HTML report",
	  usage_report },
	{ "correlate", cmd_correlate,
	  "join a dump with host NVMe events (agent or perf)",
	  usage_correlate },
	{ "export", cmd_export,
	  "export records, losses and clocks to a ClickHouse cluster",
	  usage_export },
	{ "pel", cmd_pel,
	  "decode an NVMe Persistent Event Log (log page 0Dh)", usage_pel },
	{ "help", cmd_help, "show help for a command", NULL },
};

#define NCMDS (sizeof(cmds) / sizeof(cmds[0]))

static void usage(FILE *f)
{
	fprintf(f,
"Usage: " PROG " [-V|--version] [-h|--help] COMMAND [ARGS]\n"
"\n"
"Decode, count and convert NVMe HMB firmware trace files: dumps written by\n"
"hmb-trace-daemon (\"RECT\" record streams) and ring images (\"HMBT\"); and\n"
"decode the Persistent Event Log drives of today keep (pel).\n"
"FILE may be - for stdin.  A dump's sidecar FILE.meta is honoured.\n"
"\n"
"Commands:\n");
	for (size_t i = 0; i < NCMDS; i++)
		fprintf(f, "  %-9s %s\n", cmds[i].name, cmds[i].summary);
	fprintf(f,
"\n"
"Run '" PROG " COMMAND --help' for a command's options.\n"
"\n"
"Exit status: 0 on success, 1 on bad input or an I/O error (one line on\n"
"stderr names the file, the byte offset and the reason), 2 on bad usage.\n"
"\n"
"Examples:\n"
"  " PROG " decode trace.bin\n"
"  " PROG " decode trace.bin --format jsonl > trace.jsonl\n"
"  " PROG " stats trace.bin --format json\n"
"  " PROG " convert trace.bin trace.csv\n"
"  " PROG " stats /dev/shm/hmb-ring      # a ring image: tail to head\n"
"  " PROG " export --to clickhouse http://127.0.0.1:8123 trace.bin\n"
"  " PROG " pel pel.bin               # nvme persistent-event-log -b\n");
}

static const struct cmd *find_cmd(const char *name)
{
	for (size_t i = 0; i < NCMDS; i++)
		if (strcmp(cmds[i].name, name) == 0)
			return &cmds[i];
	return NULL;
}

static int cmd_help(int argc, char **argv)
{
	const struct cmd *c;

	if (argc < 2) {
		usage(stdout);
		return 0;
	}
	c = find_cmd(argv[1]);
	if (!c || !c->usage) {
		hmb_usage_error(PROG, NULL, "help: unknown command '%s'",
				argv[1]);
		return EXIT_USAGE;
	}
	c->usage(stdout);
	return 0;
}

int parse_u64(const char *s, uint64_t *v)
{
	return hmb_parse_u64(s, 0, 0, UINT64_MAX, v);
}

int main(int argc, char **argv)
{
	const struct cmd *c;

	if (argc < 2) {
		usagef("no command given");
		return EXIT_USAGE;
	}
	if (strcmp(argv[1], "-V") == 0 || strcmp(argv[1], "--version") == 0) {
		printf("%s %s (nvme-hmb-trace, trace format v%d)\n", PROG,
		       HMB_ANALYZE_VERSION, HMB_TRACE_ABI_VERSION);
		return 0;
	}
	if (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0) {
		usage(stdout);
		return 0;
	}
	c = find_cmd(argv[1]);
	if (!c) {
		usagef("unknown command '%s'", argv[1]);
		return EXIT_USAGE;
	}
	usage_cmd = c->usage ? c->name : NULL;
	opterr = 0;
	return c->fn(argc - 1, argv + 1);
}
