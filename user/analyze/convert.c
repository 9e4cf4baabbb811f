// SPDX-License-Identifier: Apache-2.0
/*
 * convert: one option parser, then one table of formats.  Each format
 * names the options that apply to it and the function that writes it;
 * the format comes from --to or OUT's extension.
 */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "analyze.h"
#include "formats.h"

#define OUTBUF_SIZE	(1u << 20)

/* struct conv.given and struct conv_format.opts */
enum {
	CO_NAMES = 1 << 0,	/* -n, --names */
	CO_DICT = 1 << 1,	/* -d, --dict */
	CO_HOST = 1 << 2,	/* --host, --ctrl */
	CO_RAW = 1 << 3,	/* --raw */
	CO_INPUT = 1 << 4,	/* --meta, --no-meta, --dup-window */
};

struct conv_format {
	const char *name;		/* --to */
	const char *ext[3];		/* OUT's extensions that imply it */
	unsigned int opts;		/* CO_* that apply */
	enum rec_format fmt;		/* csv, jsonl: the record formatter */
	int (*run)(const struct conv *c, const struct conv_format *f);
};

static int conv_records(const struct conv *c, const struct conv_format *f)
{
	struct hmb_dict *dict = NULL;
	struct hmb_outbuf ob;
	struct input in;
	int rc;

	if (c->names && dict_open(c->dict_path, &dict))
		return EXIT_BADINPUT;
	if (input_open(&in, c->in, &c->iopts)) {
		hmb_dict_free(dict);
		return EXIT_BADINPUT;
	}
	rc = ob_create(&ob, c->out, OUTBUF_SIZE);
	if (!rc) {
		rc = stream_records(&in, &ob, f->fmt, dict);
		rc = ob_finish(&ob, rc);
	}
	input_close(&in);
	hmb_dict_free(dict);
	return rc;
}

static int conv_ctf(const struct conv *c, const struct conv_format *f)
{
	struct hmb_dict *dict = NULL;
	struct input in;
	int rc;

	(void)f;
	if (dict_open(c->dict_path, &dict))
		return EXIT_BADINPUT;
	if (c->raw) {
		rc = ctf_raw_convert(c->in, c->out, dict);
	} else if (input_open(&in, c->in, &c->iopts)) {
		rc = EXIT_BADINPUT;
	} else {
		rc = ctf_convert(&in, c->out, dict);
		input_close(&in);
	}
	hmb_dict_free(dict);
	return rc;
}

static const struct conv_format formats[] = {
	{ "csv", { ".csv" }, CO_NAMES | CO_DICT | CO_INPUT, FMT_CSV,
	  conv_records },
	{ "jsonl", { ".jsonl", ".json" }, CO_NAMES | CO_DICT | CO_INPUT,
	  FMT_JSONL, conv_records },
	{ "ctf", { NULL }, CO_NAMES | CO_DICT | CO_RAW | CO_INPUT, FMT_CTF,
	  conv_ctf },
	{ "perfetto", { ".pftrace", ".perfetto-trace" },
	  CO_DICT | CO_HOST | CO_INPUT, FMT_JSONL, pftrace_convert },
	{ "perfetto-json", { NULL }, CO_DICT | CO_HOST | CO_INPUT, FMT_JSONL,
	  perfetto_convert },
};

#define NFORMATS (sizeof(formats) / sizeof(formats[0]))

void usage_convert(FILE *f)
{
	fprintf(f,
"Usage: " PROG " convert FILE OUT [--to csv|jsonl|ctf|perfetto|perfetto-json]\n"
"       [OPTIONS]\n"
"\n"
"Convert the records of FILE (a dump or ring image, or - for stdin) into\n"
"OUT (a path, or - for stdout; a directory for ctf).\n"
"\n"
"Formats (-t, --to; default: from OUT's extension, .csv, .jsonl or .json,\n"
"  .pftrace or .perfetto-trace):\n"
"  csv       a header line, then seq,ts_ns,opcode,cpu,flags,payload_len,\n"
"            payload (payload in lowercase hex); the records decode prints\n"
"  jsonl     the same lines as decode --format jsonl\n"
"  ctf       OUT is a directory to create, a CTF 1.8 trace (metadata +\n"
"            stream files) for babeltrace2 and Trace Compass: one event\n"
"            class per dictionary event, the firmware clock, losses as\n"
"            discarded events.  With --raw: DIR/metadata describes the\n"
"            dump's own bytes and DIR/stream links to FILE, so babeltrace2\n"
"            reads the dump as written (every record, wrap markers and\n"
"            duplicates included, payload raw); a ring image, or a dump\n"
"            whose timestamps go backwards, is refused\n"
"  perfetto  Perfetto's own protobuf trace (a TracePacket stream) for\n"
"            ui.perfetto.dev and trace_processor: a lane per command in\n"
"            flight under its queue (\"fw sqN\"), each command a slice\n"
"            named after its NVMe opcode with the intervals between its\n"
"            phases nested inside and its records' fields as args;\n"
"            background windows (gc, thermal) as slices and 0/1\n"
"            counters; commands in flight as a counter; the other\n"
"            records as instants on a track per firmware CPU; every\n"
"            sequence gap as a \"LOST N records\" slice.  About 1/10 of\n"
"            the JSON's size.  Times are the firmware clock\n"
"  perfetto-json  a Trace Event JSON file (ui.perfetto.dev,\n"
"            chrome://tracing): a track per firmware CPU with every record\n"
"            (dictionary names and fields as args), NVMe commands as async\n"
"            slices with their phases nested inside, background windows\n"
"            on their own tracks, every sequence gap a \"LOST\" slice\n"
"\n"
"Options:\n"
"  -t, --to FMT         the format (above)\n"
"  -n, --names          csv, jsonl: add event names (and fields) from the\n"
"                       shipped event dictionary\n"
"  -d, --dict FILE      csv, jsonl, ctf, perfetto(-json): the event\n"
"                       dictionary FILE\n"
"                       (default: the shipped one, or $HMB_EVENTS_DICT)\n"
"      --raw            ctf: describe the dump as it is (above)\n"
"      --host FILE      perfetto(-json): also the host's commands (the output of\n"
"                       hmb-trace-agent -j --per-command, or perf script of\n"
"                       the nvme tracepoints; see correlate --help), placed\n"
"                       on the firmware time line by the clock estimate, with\n"
"                       a flow arrow from each host command to its firmware\n"
"                       command (perfetto) or fetch record (perfetto-json);\n"
"                       perfetto adds host lanes per queue and a counter of\n"
"                       host commands in flight\n"
"      --ctrl N         perfetto(-json): the host controller of FILE (see correlate\n"
"                       --help)\n"
"      --pel PELFILE    perfetto(-json), with --host: the drive's Persistent\n"
"                       Event Log saved by 'pel --device DEV --save PELFILE',\n"
"                       each event placed on the host clock (PELFILE.clock)\n"
"                       then on the firmware time line by the join's clock:\n"
"                       instants on a track \"NVMe Persistent Event Log\" with\n"
"                       the host time, bound and fields as args\n"
"      --meta PATH      read this sidecar instead of FILE.meta\n"
"      --no-meta        ignore FILE.meta\n"
"      --dup-window N   see decode --help\n"
"  -h, --help           this help\n"
"\n"
"An option the format does not take is a usage error.  A file OUT is\n"
"written under a temporary name in its directory and renamed to OUT at\n"
"the end: on a bad record (one error line naming the byte offset) the\n"
"temporary is removed, a second line says OUT was not written, an OUT\n"
"already there is left as it was, and the exit status is 1.  With OUT -\n"
"(or /dev/null, a FIFO) the records before the bad one are written.  ctf's\n"
"directory is written the same way, as a temporary directory beside OUT;\n"
"OUT must be new or empty.\n"
"\n"
"Examples:\n"
"  " PROG " convert trace.bin trace.csv\n"
"  " PROG " convert trace.bin - --to jsonl | gzip > trace.jsonl.gz\n"
"  " PROG " convert trace.bin trace-ctf --to ctf && babeltrace2 trace-ctf\n"
"  " PROG " convert trace.bin raw-ctf --to ctf --raw && babeltrace2 raw-ctf\n"
"  " PROG " convert trace.bin trace.pftrace\n"
"      then open trace.pftrace in https://ui.perfetto.dev\n"
"  " PROG " convert trace.bin both.pftrace --host agent.jsonl\n"
"  " PROG " convert trace.bin trace.json --to perfetto-json\n");
}

enum { OPT_RAW = 0x200, OPT_HOST, OPT_CTRL, OPT_PEL };

static const struct option convert_opts[] = {
	{ "to", required_argument, NULL, 't' },
	{ "names", no_argument, NULL, 'n' },
	{ "dict", required_argument, NULL, 'd' },
	{ "raw", no_argument, NULL, OPT_RAW },
	{ "host", required_argument, NULL, OPT_HOST },
	{ "ctrl", required_argument, NULL, OPT_CTRL },
	{ "pel", required_argument, NULL, OPT_PEL },
	{ "help", no_argument, NULL, 'h' },
	INPUT_LONGOPTS,
	{ NULL, 0, NULL, 0 }
};

static const struct conv_format *find_format(const char *name)
{
	for (size_t i = 0; i < NFORMATS; i++)
		if (strcmp(formats[i].name, name) == 0)
			return &formats[i];
	return NULL;
}

static const struct conv_format *format_of_out(const char *out)
{
	size_t n = strlen(out);

	for (size_t i = 0; i < NFORMATS; i++)
		for (size_t k = 0; k < 3 && formats[i].ext[k]; k++) {
			size_t m = strlen(formats[i].ext[k]);

			if (n >= m && strcmp(out + n - m, formats[i].ext[k]) == 0)
				return &formats[i];
		}
	return NULL;
}

/* One option into @c; 0, 1 for --help, or EXIT_USAGE (said). */
static int option(struct conv *c, int opt, const char *arg,
		  const struct conv_format **f, char **argv)
{
	switch (opt) {
	case 't':
		*f = find_format(arg);
		if (!*f) {
			usagef("--to: unknown format '%s' (expected csv, jsonl, ctf, perfetto or perfetto-json)",
			       arg);
			return EXIT_USAGE;
		}
		return 0;
	case 'n': c->names = true; c->given |= CO_NAMES; return 0;
	case 'd':
		c->names = true;
		c->dict_path = arg;
		c->given |= CO_DICT;
		return 0;
	case OPT_RAW: c->raw = true; c->given |= CO_RAW; return 0;
	case OPT_HOST: c->host = arg; c->given |= CO_HOST; return 0;
	case OPT_PEL: c->pel = arg; c->given |= CO_HOST; return 0;
	case OPT_CTRL:
		c->given |= CO_HOST;
		return parse_ctrl(arg, &c->ctrl);
	case 'h':
		usage_convert(stdout);
		return 1;
	}
	c->given |= CO_INPUT;
	return input_opt_or_usage(&c->iopts, opt, arg, argv);
}

static const char *const opt_names[] = {
	"--names", "--dict", "--host/--ctrl/--pel", "--raw",
	"--meta/--no-meta/--dup-window",
};

int cmd_convert(int argc, char **argv)
{
	struct conv c = { .ctrl = -1 };
	const struct conv_format *f = NULL;
	unsigned int extra;
	int opt, rc;

	optind = 1;
	while ((opt = getopt_long(argc, argv, ":t:nd:h", convert_opts,
				  NULL)) != -1)
		if ((rc = option(&c, opt, optarg, &f, argv)))
			return rc == 1 ? 0 : rc;
	if (argc - optind != 2) {
		usagef("expected FILE and OUT");
		return EXIT_USAGE;
	}
	c.in = argv[optind];
	c.out = argv[optind + 1];
	if (!f)
		f = format_of_out(c.out);
	if (!f) {
		usagef("cannot tell the format from '%s'; give --to csv, jsonl, ctf, perfetto or perfetto-json",
		       c.out);
		return EXIT_USAGE;
	}
	extra = c.given & ~f->opts;
	for (size_t k = 0; extra && k < 5; k++)
		if (extra & (1u << k)) {
			usagef("--to %s: %s does not apply to this format",
			       f->name, opt_names[k]);
			return EXIT_USAGE;
		}
	if (c.pel && !c.host) {
		usagef("--pel needs --host: the join's clock places the log on the firmware time line");
		return EXIT_USAGE;
	}
	if (c.raw && (c.given & CO_INPUT)) {
		usagef("--to ctf --raw: the dump is described as it is; --meta, --no-meta and --dup-window do not apply");
		return EXIT_USAGE;
	}
	return f->run(&c, f);
}
