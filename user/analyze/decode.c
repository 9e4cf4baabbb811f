// SPDX-License-Identifier: Apache-2.0
/*
 * decode (and convert's csv and jsonl): one output line per decoded record, in text (a
 * perf-script-like line), JSON Lines or CSV.  Output is streamed: what was
 * written before an input error stays, and the error line follows it.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <string.h>
#include <unistd.h>

#include "analyze.h"
#include "hmbtrace_fwmodel.h"

#define OUTBUF_SIZE	(1u << 20)
/* Upper bound of one formatted record: hex payload plus fixed fields. */
#define REC_OUT_MAX	(2 * HMB_RECORD_MAX_PAYLOAD + 4096)

void fmt_header(struct hmb_outbuf *ob, enum rec_format fmt,
		const struct hmb_dict *dict)
{
	if (fmt == FMT_CSV) {
		hmb_ob_reserve(ob, 64);
		hmb_ob_lit(ob, "seq,ts_ns,opcode,cpu,flags,payload_len,payload");
		if (dict)
			hmb_ob_lit(ob, ",name");
		hmb_ob_putc(ob, '\n');
	}
}

static void fmt_jsonl(struct hmb_outbuf *ob, const struct hmb_dict_event *ev,
		      const struct hmb_record *rec)
{
	const struct hmb_record_hdr *h = &rec->hdr;
	struct hmb_json j;

	hmb_json_init(&j, ob);
	hmb_json_obj(&j);
	hmb_json_kv_u64(&j, "seq", h->seq);
	hmb_json_kv_u64(&j, "ts_ns", h->ts_ns);
	hmb_json_kv_u64(&j, "opcode", h->opcode);
	hmb_json_kv_u64(&j, "cpu", h->cpu);
	hmb_json_kv_u64(&j, "flags", h->flags);
	hmb_json_kv_u64(&j, "payload_len", h->payload_len);
	hmb_json_key(&j, "payload");
	hmb_json_hex(&j, rec->payload, h->payload_len);
	/* Names and fields come next to the raw keys, never instead. */
	if (ev)
		fmt_dict_json(&j, ev, rec);
	hmb_json_end(&j);
	hmb_json_nl(&j);
}

static void fmt_csv(struct hmb_outbuf *ob, const struct hmb_dict *dict,
		    const struct hmb_dict_event *ev,
		    const struct hmb_record *rec)
{
	const struct hmb_record_hdr *h = &rec->hdr;

	hmb_ob_u64(ob, h->seq);
	hmb_ob_putc(ob, ',');
	hmb_ob_u64(ob, h->ts_ns);
	hmb_ob_putc(ob, ',');
	hmb_ob_u64(ob, h->opcode);
	hmb_ob_putc(ob, ',');
	hmb_ob_u64(ob, h->cpu);
	hmb_ob_putc(ob, ',');
	hmb_ob_u64(ob, h->flags);
	hmb_ob_putc(ob, ',');
	hmb_ob_u64(ob, h->payload_len);
	hmb_ob_putc(ob, ',');
	hmb_ob_hexbytes(ob, rec->payload, h->payload_len);
	if (dict) {
		hmb_ob_putc(ob, ',');
		if (ev)
			hmb_ob_puts_n(ob, ev->name, strlen(ev->name));
	}
	hmb_ob_putc(ob, '\n');
}

/*
 * "[cpu] seconds.nanoseconds: seq op len flags payload", the shape of a
 * perf script line; the timestamp is the firmware clock, not the host's.
 */
static void fmt_text(struct hmb_outbuf *ob, const struct hmb_dict_event *ev,
		     const struct hmb_record *rec)
{
	const struct hmb_record_hdr *h = &rec->hdr;

	hmb_ob_lit(ob, "[");
	hmb_ob_u64_pad(ob, h->cpu, 3, '0');
	hmb_ob_lit(ob, "] ");
	hmb_ob_u64_pad(ob, h->ts_ns / 1000000000u, 6, ' ');
	hmb_ob_putc(ob, '.');
	hmb_ob_u64_pad(ob, h->ts_ns % 1000000000u, 9, '0');
	hmb_ob_lit(ob, ": seq=");
	hmb_ob_u64(ob, h->seq);
	hmb_ob_lit(ob, " opcode=0x");
	hmb_ob_hex_fixed(ob, h->opcode, 4);
	hmb_ob_lit(ob, " len=");
	hmb_ob_u64(ob, h->payload_len);
	if (h->flags & HMB_REC_FLAG_TRUNCATED)
		hmb_ob_lit(ob, " TRUNCATED");
	if (ev)
		fmt_dict_text(ob, ev, rec);
	else if (h->payload_len) {
		hmb_ob_lit(ob, " payload=");
		hmb_ob_hexbytes(ob, rec->payload, h->payload_len);
	}
	hmb_ob_putc(ob, '\n');
}

void fmt_record(struct hmb_outbuf *ob, enum rec_format fmt,
		const struct hmb_dict *dict, const struct hmb_record *rec)
{
	const struct hmb_dict_event *ev =
		dict ? hmb_dict_lookup(dict, rec->hdr.opcode) : NULL;

	switch (fmt) {
	case FMT_JSONL:
		fmt_jsonl(ob, ev, rec);
		break;
	case FMT_CSV:
		fmt_csv(ob, dict, ev, rec);
		break;
	case FMT_TEXT:
		fmt_text(ob, ev, rec);
		break;
	case FMT_CTF:
		break;
	}
}

/* Text mode shows a loss where it happened, as perf script shows LOST. */
static void fmt_text_gap(struct hmb_outbuf *ob, const struct hmb_gap *g)
{
	hmb_ob_reserve(ob, 256);
	hmb_ob_lit(ob, "LOST ");
	hmb_ob_u64(ob, g->count);
	if (g->count == 1)
		hmb_ob_lit(ob, " record (seq ");
	else
		hmb_ob_lit(ob, " records (seq ");
	hmb_ob_u64(ob, g->first_seq);
	if (g->count > 1) {
		hmb_ob_lit(ob, "..");
		hmb_ob_u64(ob, g->last_seq);
	}
	hmb_ob_lit(ob, ") between ts_ns ");
	hmb_ob_u64(ob, g->ts_before);
	hmb_ob_lit(ob, " and ");
	hmb_ob_u64(ob, g->ts_after);
	hmb_ob_putc(ob, '\n');
}

/*
 * Stream every new data record of @in into @ob.  Returns 0, or
 * EXIT_BADINPUT after printing the one error line (input or output).
 */
int stream_records(struct input *in, struct hmb_outbuf *ob,
		   enum rec_format fmt, const struct hmb_dict *dict)
{
	struct hmb_error err = { 0 };
	struct hmb_record rec;
	uint64_t gaps_seen = 0;
	int rc;

	fmt_header(ob, fmt, dict);
	while ((rc = input_next(in, &rec, &err)) > 0) {
		if (hmb_ob_reserve(ob, REC_OUT_MAX))
			break;
		if (fmt == FMT_TEXT && in->acct->gaps != gaps_seen) {
			gaps_seen = in->acct->gaps;
			fmt_text_gap(ob, &in->last_gap);
		}
		fmt_record(ob, fmt, dict, &rec);
	}
	/* Output written so far stays; the error line comes after it. */
	hmb_ob_flush(ob);
	if (ob->err) {
		errorf("%s: write error: %s", ob->name, strerror(ob->err));
		return EXIT_BADINPUT;
	}
	if (rc < 0) {
		input_report(in, &err);
		return EXIT_BADINPUT;
	}
	return 0;
}

static int parse_format(const char *s, enum rec_format *fmt, bool allow_text,
			const char *opt)
{
	if (allow_text && strcmp(s, "text") == 0)
		*fmt = FMT_TEXT;
	else if (strcmp(s, "jsonl") == 0)
		*fmt = FMT_JSONL;
	else if (!allow_text && strcmp(s, "csv") == 0)
		*fmt = FMT_CSV;
	else if (!allow_text && strcmp(s, "ctf") == 0)
		*fmt = FMT_CTF;
	else {
		usagef("%s: unknown format '%s' (expected %s)", opt, s,
		       allow_text ? "text or jsonl" : "csv, jsonl or ctf");
		return -1;
	}
	return 0;
}

void usage_decode(FILE *f)
{
	fprintf(f,
"Usage: " PROG " decode FILE [--format text|jsonl] [OPTIONS]\n"
"\n"
"Decode every record of a dump or ring image (FILE, or - for stdin), one\n"
"line per record, in stream order.  Wrap markers, records with unknown flag\n"
"bits and replayed duplicates are not printed (stats counts them).\n"
"\n"
"Options:\n"
"  -f, --format FMT     text (default): [cpu] seconds.ns: seq opcode len, then\n"
"                       the event name and payload fields from the event\n"
"                       dictionary (raw payload hex for unknown opcodes)\n"
"                       jsonl: one JSON object per line with exactly the keys\n"
"                       seq, ts_ns, opcode, cpu, flags, payload_len, payload\n"
"                       (hex); with --names or --dict also name and fields\n"
"  -j, --json           same as --format jsonl\n"
"  -n, --names          use the shipped event dictionary (share/hmb-events.dict,\n"
"                       built in): the default for text; for jsonl it adds\n"
"                       \"name\" and \"fields\" after the raw keys\n"
"  -d, --dict FILE      the same with the dictionary FILE (docs/events.md)\n"
"      --raw            text without the dictionary: payload as hex\n"
"      --meta PATH      read this sidecar instead of FILE.meta\n"
"      --no-meta        ignore FILE.meta\n"
"      --dup-window N   a seq at most N behind the highest seen is a replayed\n"
"                       duplicate; a larger jump back is a producer restart\n"
"  -h, --help           this help\n"
"\n"
"Examples:\n"
"  " PROG " decode /var/log/hmb/trace.bin | less\n"
"  " PROG " decode trace.bin --format jsonl | jq 'select(.opcode == 18)'\n"
"  " PROG " decode trace.bin              # cmd_fetch sqid=1 cid=64 ...\n"
"  " PROG " decode trace.bin --raw        # payload as hex\n"
"  hmb-trace-daemon --ring-file /dev/shm/ring -o - | " PROG " decode -\n");
}

#define DICT_LONGOPTS \
	{ "names", no_argument, NULL, 'n' }, \
	{ "dict", required_argument, NULL, 'd' }

#define OPT_RAW 0x200

static const struct option decode_opts[] = {
	{ "format", required_argument, NULL, 'f' },
	{ "json", no_argument, NULL, 'j' },
	DICT_LONGOPTS,
	{ "raw", no_argument, NULL, OPT_RAW },
	{ "help", no_argument, NULL, 'h' },
	INPUT_LONGOPTS,
	{ NULL, 0, NULL, 0 }
};

int cmd_decode(int argc, char **argv)
{
	struct input_opts iopts = { .max_gaps = 0 };
	enum rec_format fmt = FMT_TEXT;
	struct hmb_dict *dict = NULL;
	const char *dict_path = NULL;
	int names = -1;		/* -1: the format's default */
	struct hmb_outbuf ob;
	struct input in;
	int opt, rc;

	optind = 1;
	while ((opt = getopt_long(argc, argv, ":f:jnd:h", decode_opts, NULL)) != -1) {
		switch (opt) {
		case 'n':
			names = true;
			break;
		case OPT_RAW:
			names = false;
			break;
		case 'd':
			names = true;
			dict_path = optarg;
			break;
		case 'f':
			if (parse_format(optarg, &fmt, true, "--format"))
				return EXIT_USAGE;
			break;
		case 'j':
			fmt = FMT_JSONL;
			break;
		case 'h':
			usage_decode(stdout);
			return 0;
		default:
			if (input_opt_or_usage(&iopts, opt, optarg, argv))
				return EXIT_USAGE;
		}
	}
	if (argc - optind != 1) {
		usagef("expected one FILE");
		return EXIT_USAGE;
	}
	/*
	 * Text is for people: names and fields by default.  JSON Lines
	 * keeps exactly the raw keys unless asked, so scripts
	 * and the independent Python decoder see one stable shape.
	 */
	if (names < 0)
		names = fmt == FMT_TEXT;
	if (names && dict_open(dict_path, &dict))
		return EXIT_BADINPUT;
	if (input_open(&in, argv[optind], &iopts)) {
		hmb_dict_free(dict);
		return EXIT_BADINPUT;
	}
	if (hmb_ob_open(&ob, STDOUT_FILENO, "<stdout>", OUTBUF_SIZE)) {
		errorf("out of memory");
		input_close(&in);
		hmb_dict_free(dict);
		return EXIT_BADINPUT;
	}
	rc = stream_records(&in, &ob, fmt, dict);
	hmb_ob_close(&ob);
	input_close(&in);
	hmb_dict_free(dict);
	return rc;
}
