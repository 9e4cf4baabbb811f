// SPDX-License-Identifier: Apache-2.0
/*
 * stats: what a trace file holds and what it lacks.  Counts come from
 * libhmbtrace's sequence accounting; gaps are listed (bounded) with the
 * timestamps around them so a loss can be placed in time (format.md 10).
 */
#include <getopt.h>
#include <string.h>
#include <unistd.h>

#include "analyze.h"

#define DEFAULT_MAX_GAPS 100

void usage_stats(FILE *f)
{
	fprintf(f,
"Usage: " PROG " stats FILE [--format text|json] [OPTIONS]\n"
"\n"
"Count what FILE (a dump or ring image, or - for stdin) holds: decoded\n"
"records, wrap markers, records ignored for unknown flag bits, truncated\n"
"records, duplicates (replayed batches), records lost (sequence gaps, each\n"
"with the timestamps around it), bytes, time span and counts by opcode.\n"
"\n"
"Options:\n"
"  -f, --format FMT     text (default) or json\n"
"  -j, --json           same as --format json\n"
"      --max-gaps N     list at most N gaps (default %d); the rest are\n"
"                       counted in gaps_omitted\n"
"      --meta PATH      read this sidecar instead of FILE.meta\n"
"      --no-meta        ignore FILE.meta\n"
"      --dup-window N   see decode --help\n"
"  -h, --help           this help\n"
"\n"
"JSON keys: file, dialect (\"dump\" or \"ring\"), records, wrap_markers,\n"
"ignored, truncated, lost, duplicates, resets, epochs, bytes,\n"
"payload_bytes, first_ts_ns, last_ts_ns (null when there are no records),\n"
"opcodes (object keyed by decimal opcode), gaps_total, gaps (array of\n"
"{first_seq, last_seq, count, ts_before, ts_after, offset}), gaps_omitted,\n"
"and for a ring image ring {ring_size, head, tail, flags}; sidecar when\n"
"one was read.\n"
"\n"
"Examples:\n"
"  " PROG " stats trace.bin\n"
"  " PROG " stats trace.bin -j | jq .lost\n"
"  cat trace.bin | " PROG " stats - --format json\n",
		DEFAULT_MAX_GAPS);
}

static void json_key(struct outbuf *ob, const char *k, bool *first)
{
	ob_reserve(ob, 64);
	if (!*first)
		ob_lit(ob, ",");
	*first = false;
	ob_lit(ob, "\n  \"");
	ob_puts(ob, k);
	ob_lit(ob, "\": ");
}

static void json_u64(struct outbuf *ob, const char *k, uint64_t v, bool *first)
{
	json_key(ob, k, first);
	ob_reserve(ob, 24);
	ob_u64(ob, v);
}

static void print_json(struct outbuf *ob, const struct input *in)
{
	const struct hmb_acct *a = in->acct;
	bool first = true, f2;

	ob_reserve(ob, 16);
	ob_lit(ob, "{");
	json_key(ob, "file", &first);
	ob_lit(ob, "\"");
	ob_json_str(ob, in->name);
	ob_reserve(ob, 8);
	ob_lit(ob, "\"");
	json_key(ob, "dialect", &first);
	if (hmb_reader_dialect(in->reader) == HMB_DIALECT_RING)
		ob_lit(ob, "\"ring\"");
	else
		ob_lit(ob, "\"dump\"");
	json_u64(ob, "records", a->records, &first);
	json_u64(ob, "wrap_markers", a->wrap_markers, &first);
	json_u64(ob, "ignored", a->ignored, &first);
	json_u64(ob, "truncated", a->truncated, &first);
	json_u64(ob, "lost", a->lost, &first);
	json_u64(ob, "duplicates", a->duplicates, &first);
	json_u64(ob, "resets", a->resets, &first);
	json_u64(ob, "epochs", in->epochs, &first);
	json_u64(ob, "bytes", a->bytes, &first);
	json_u64(ob, "payload_bytes", a->payload_bytes, &first);
	if (a->records) {
		json_u64(ob, "first_ts_ns", a->first_ts_ns, &first);
		json_u64(ob, "last_ts_ns", a->last_ts_ns, &first);
	} else {
		json_key(ob, "first_ts_ns", &first);
		ob_lit(ob, "null");
		json_key(ob, "last_ts_ns", &first);
		ob_lit(ob, "null");
	}
	json_key(ob, "opcodes", &first);
	ob_lit(ob, "{");
	f2 = true;
	for (unsigned int op = 0; op < 65536; op++) {
		if (!a->opcodes[op])
			continue;
		ob_reserve(ob, 64);
		if (!f2)
			ob_lit(ob, ", ");
		f2 = false;
		ob_putc(ob, '"');
		ob_u64(ob, op);
		ob_lit(ob, "\": ");
		ob_u64(ob, a->opcodes[op]);
	}
	ob_lit(ob, "}");
	json_u64(ob, "gaps_total", a->gaps, &first);
	json_key(ob, "gaps", &first);
	ob_lit(ob, "[");
	for (size_t i = 0; i < in->ngaps; i++) {
		const struct hmb_gap *g = &in->gaps[i];

		ob_reserve(ob, 256);
		if (i)
			ob_lit(ob, ",");
		ob_lit(ob, "\n    ");
		ob_lit(ob, "{\"first_seq\": ");
		ob_u64(ob, g->first_seq);
		ob_lit(ob, ", \"last_seq\": ");
		ob_u64(ob, g->last_seq);
		ob_lit(ob, ", \"count\": ");
		ob_u64(ob, g->count);
		ob_lit(ob, ", \"ts_before\": ");
		ob_u64(ob, g->ts_before);
		ob_lit(ob, ", \"ts_after\": ");
		ob_u64(ob, g->ts_after);
		ob_lit(ob, ", \"offset\": ");
		ob_u64(ob, g->offset);
		ob_lit(ob, "}");
	}
	ob_reserve(ob, 16);
	if (in->ngaps)
		ob_lit(ob, "\n  ]");
	else
		ob_lit(ob, "]");
	json_u64(ob, "gaps_omitted", in->gaps_omitted, &first);
	if (hmb_reader_dialect(in->reader) == HMB_DIALECT_RING) {
		const struct hmb_ring_hdr *h = hmb_reader_ring_hdr(in->reader);

		json_key(ob, "ring", &first);
		ob_reserve(ob, 160);
		ob_lit(ob, "{\"ring_size\": ");
		ob_u64(ob, h->ring_size);
		ob_lit(ob, ", \"head\": ");
		ob_u64(ob, h->head);
		ob_lit(ob, ", \"tail\": ");
		ob_u64(ob, h->tail);
		ob_lit(ob, ", \"flags\": ");
		ob_u64(ob, h->flags);
		ob_lit(ob, "}");
	}
	if (in->have_sidecar) {
		const struct hmb_sidecar *s = &in->sidecar;

		json_key(ob, "sidecar", &first);
		ob_lit(ob, "{\"path\": \"");
		ob_json_str(ob, in->meta_path);
		ob_reserve(ob, 40);
		ob_lit(ob, "\", \"abi_version\": ");
		ob_u64(ob, s->abi_version);
		ob_lit(ob, ", \"source\": \"");
		ob_json_str(ob, s->source);
		ob_reserve(ob, 200);
		ob_lit(ob, "\", \"ring_size\": ");
		ob_u64(ob, s->ring_size);
		ob_lit(ob, ", \"realtime_ns\": ");
		ob_u64(ob, s->realtime_ns);
		ob_lit(ob, ", \"monotonic_ns\": ");
		ob_u64(ob, s->monotonic_ns);
		ob_lit(ob, ", \"boottime_ns\": ");
		ob_u64(ob, s->boottime_ns);
		ob_lit(ob, "}");
	}
	ob_reserve(ob, 8);
	ob_lit(ob, "\n}\n");
}

static const char *plural(uint64_t n, const char *one, const char *many)
{
	return n == 1 ? one : many;
}

static void print_ts(struct outbuf *ob, uint64_t ts)
{
	ob_printf(ob, "%llu.%09llu s", (unsigned long long)(ts / 1000000000u),
		  (unsigned long long)(ts % 1000000000u));
}

static void print_text(struct outbuf *ob, const struct input *in)
{
	const struct hmb_acct *a = in->acct;
	bool ring = hmb_reader_dialect(in->reader) == HMB_DIALECT_RING;
	unsigned int nops = 0;

	ob_puts(ob, "file:          ");
	ob_puts(ob, in->name);
	ob_puts(ob, ring ? " (ring image)\n" : " (dump)\n");
	if (ring) {
		const struct hmb_ring_hdr *h = hmb_reader_ring_hdr(in->reader);

		ob_printf(ob, "ring:          size %u, tail %llu, head %llu, flags 0x%x%s%s\n",
			  h->ring_size, (unsigned long long)h->tail,
			  (unsigned long long)h->head, h->flags,
			  h->flags & HMB_RING_FLAG_OVERFLOWED ? " OVERFLOWED" : "",
			  h->flags & HMB_RING_FLAG_FROZEN ? " FROZEN" : "");
	}
	if (in->have_sidecar) {
		/* Paths can be long: no fixed-size formatting for them. */
		ob_puts(ob, "sidecar:       ");
		ob_puts(ob, in->meta_path);
		ob_puts(ob, " (source ");
		ob_puts(ob, in->sidecar.source);
		ob_printf(ob, ", ring size %u, %llu epoch%s)\n",
			  in->sidecar.ring_size,
			  (unsigned long long)in->epochs,
			  plural(in->epochs, "", "s"));
	}
	ob_printf(ob, "records:       %llu decoded (%llu truncated by the firmware)\n",
		  (unsigned long long)a->records,
		  (unsigned long long)a->truncated);
	ob_printf(ob, "bytes:         %llu (payload %llu)\n",
		  (unsigned long long)a->bytes,
		  (unsigned long long)a->payload_bytes);
	ob_printf(ob, "wrap markers:  %llu\n",
		  (unsigned long long)a->wrap_markers);
	ob_printf(ob, "ignored:       %llu (unknown flag bits)\n",
		  (unsigned long long)a->ignored);
	ob_printf(ob, "duplicates:    %llu (replayed, dropped)\n",
		  (unsigned long long)a->duplicates);
	if (a->resets)
		ob_printf(ob, "seq restarts:  %llu\n",
			  (unsigned long long)a->resets);
	if (a->records) {
		uint64_t span = a->last_ts_ns - a->first_ts_ns;

		ob_puts(ob, "time:          ");
		print_ts(ob, a->first_ts_ns);
		ob_puts(ob, " .. ");
		print_ts(ob, a->last_ts_ns);
		ob_puts(ob, " (");
		if (a->last_ts_ns >= a->first_ts_ns)
			print_ts(ob, span);
		else
			ob_puts(ob, "clock went backwards");
		ob_puts(ob, ", firmware clock)\n");
	}
	if (!a->lost) {
		ob_puts(ob, "lost:          0 records\n");
	} else {
		ob_printf(ob, "lost:          %llu record%s in %llu gap%s\n",
			  (unsigned long long)a->lost,
			  plural(a->lost, "", "s"),
			  (unsigned long long)a->gaps,
			  plural(a->gaps, "", "s"));
		for (size_t i = 0; i < in->ngaps; i++) {
			const struct hmb_gap *g = &in->gaps[i];

			ob_printf(ob, "  %llu lost, seq %u..%u, between ts_ns %llu and %llu (before offset %llu)\n",
				  (unsigned long long)g->count, g->first_seq,
				  g->last_seq,
				  (unsigned long long)g->ts_before,
				  (unsigned long long)g->ts_after,
				  (unsigned long long)g->offset);
		}
		if (in->gaps_omitted)
			ob_printf(ob, "  ... %llu more gap%s not listed (--max-gaps)\n",
				  (unsigned long long)in->gaps_omitted,
				  plural(in->gaps_omitted, "", "s"));
	}
	for (unsigned int op = 0; op < 65536; op++)
		nops += a->opcodes[op] != 0;
	ob_printf(ob, "opcodes:       %u distinct\n", nops);
	for (unsigned int op = 0; op < 65536; op++) {
		if (!a->opcodes[op])
			continue;
		ob_printf(ob, "  0x%04x %12llu\n", op,
			  (unsigned long long)a->opcodes[op]);
	}
}

static const struct option stats_opts[] = {
	{ "format", required_argument, NULL, 'f' },
	{ "json", no_argument, NULL, 'j' },
	{ "max-gaps", required_argument, NULL, 'G' },
	{ "help", no_argument, NULL, 'h' },
	INPUT_LONGOPTS,
	{ NULL, 0, NULL, 0 }
};

int cmd_stats(int argc, char **argv)
{
	struct input_opts iopts = { .max_gaps = DEFAULT_MAX_GAPS };
	struct hmb_error err = { 0 };
	struct hmb_record rec;
	bool json = false;
	struct outbuf ob;
	struct input in;
	uint64_t v;
	int opt, rc;

	optind = 1;
	while ((opt = getopt_long(argc, argv, "f:jh", stats_opts, NULL)) != -1) {
		switch (opt) {
		case 'f':
			if (parse_text_json(optarg, &json))
				return EXIT_USAGE;
			break;
		case 'j':
			json = true;
			break;
		case 'G':
			if (parse_u64(optarg, &v) || v > 1000000) {
				errorf("--max-gaps: '%s' is not a count in 0..1000000",
				       optarg);
				return EXIT_USAGE;
			}
			iopts.max_gaps = (size_t)v;
			break;
		case 'h':
			usage_stats(stdout);
			return 0;
		default:
			if (input_opt_or_usage(&iopts, opt, optarg, usage_stats))
				return EXIT_USAGE;
		}
	}
	if (argc - optind != 1) {
		errorf("stats: expected one FILE (try '" PROG " stats --help')");
		return EXIT_USAGE;
	}
	if (input_open(&in, argv[optind], &iopts))
		return EXIT_BADINPUT;
	while ((rc = input_next(&in, &rec, &err)) > 0)
		;
	if (rc < 0) {
		/* No partial statistics: they would read as a complete file. */
		input_report(&in, &err);
		input_close(&in);
		return EXIT_BADINPUT;
	}
	if (ob_open(&ob, STDOUT_FILENO, "<stdout>", 1u << 16)) {
		errorf("out of memory");
		input_close(&in);
		return EXIT_BADINPUT;
	}
	if (json)
		print_json(&ob, &in);
	else
		print_text(&ob, &in);
	rc = ob_close(&ob);
	input_close(&in);
	if (rc) {
		errorf("<stdout>: write error: %s", strerror(rc));
		return EXIT_BADINPUT;
	}
	return 0;
}
