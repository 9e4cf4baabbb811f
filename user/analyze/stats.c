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

static void json_gaps(struct hmb_json *j, const struct input *in)
{
	hmb_json_key(j, "gaps");
	hmb_json_arr(j);
	for (size_t i = 0; i < in->ngaps; i++) {
		const struct hmb_gap *g = &in->gaps[i];

		hmb_json_obj(j);
		hmb_json_kv_u64(j, "first_seq", g->first_seq);
		hmb_json_kv_u64(j, "last_seq", g->last_seq);
		hmb_json_kv_u64(j, "count", g->count);
		hmb_json_kv_u64(j, "ts_before", g->ts_before);
		hmb_json_kv_u64(j, "ts_after", g->ts_after);
		hmb_json_kv_u64(j, "offset", g->offset);
		hmb_json_end(j);
	}
	hmb_json_end_arr(j);
}

static void json_source(struct hmb_json *j, const struct input *in)
{
	if (hmb_reader_dialect(in->reader) == HMB_DIALECT_RING) {
		const struct hmb_ring_hdr *h = hmb_reader_ring_hdr(in->reader);

		hmb_json_key(j, "ring");
		hmb_json_obj(j);
		hmb_json_kv_u64(j, "ring_size", h->ring_size);
		hmb_json_kv_u64(j, "head", h->head);
		hmb_json_kv_u64(j, "tail", h->tail);
		hmb_json_kv_u64(j, "flags", h->flags);
		hmb_json_end(j);
	}
	if (in->have_sidecar) {
		const struct hmb_sidecar *s = &in->sidecar;

		hmb_json_key(j, "sidecar");
		hmb_json_obj(j);
		hmb_json_kv_str(j, "path", in->meta_path);
		hmb_json_kv_u64(j, "abi_version", s->abi_version);
		hmb_json_kv_str(j, "source", s->source);
		hmb_json_kv_u64(j, "ring_size", s->ring_size);
		hmb_json_kv_u64(j, "realtime_ns", s->realtime_ns);
		hmb_json_kv_u64(j, "monotonic_ns", s->monotonic_ns);
		hmb_json_kv_u64(j, "boottime_ns", s->boottime_ns);
		hmb_json_end(j);
	}
}

static void print_json(struct hmb_outbuf *ob, const struct input *in)
{
	const struct hmb_acct *a = in->acct;
	struct hmb_opcode_iter it;
	struct hmb_json j;
	uint64_t n;
	uint16_t op;

	hmb_json_init(&j, ob);
	hmb_json_obj(&j);
	hmb_json_kv_str(&j, "file", in->name);
	hmb_json_kv_str(&j, "dialect",
			hmb_reader_dialect(in->reader) == HMB_DIALECT_RING ?
			"ring" : "dump");
	hmb_json_kv_u64(&j, "records", a->records);
	hmb_json_kv_u64(&j, "wrap_markers", a->wrap_markers);
	hmb_json_kv_u64(&j, "ignored", a->ignored);
	hmb_json_kv_u64(&j, "truncated", a->truncated);
	hmb_json_kv_u64(&j, "lost", a->lost);
	hmb_json_kv_u64(&j, "duplicates", a->duplicates);
	hmb_json_kv_u64(&j, "resets", a->resets);
	hmb_json_kv_u64(&j, "epochs", in->epochs);
	hmb_json_kv_u64(&j, "bytes", a->bytes);
	hmb_json_kv_u64(&j, "payload_bytes", a->payload_bytes);
	hmb_json_key(&j, "first_ts_ns");
	if (a->records)
		hmb_json_u64(&j, a->first_ts_ns);
	else
		hmb_json_null(&j);
	hmb_json_key(&j, "last_ts_ns");
	if (a->records)
		hmb_json_u64(&j, a->last_ts_ns);
	else
		hmb_json_null(&j);
	hmb_json_key(&j, "opcodes");
	hmb_json_obj(&j);
	hmb_acct_opcodes(a, &it);
	while (hmb_opcode_iter_next(&it, &op, &n)) {
		char key[8];

		snprintf(key, sizeof(key), "%u", op);
		hmb_json_key_str(&j, key);
		hmb_json_u64(&j, n);
	}
	hmb_json_end(&j);
	hmb_json_kv_u64(&j, "gaps_total", a->gaps);
	json_gaps(&j, in);
	hmb_json_kv_u64(&j, "gaps_omitted", in->gaps_omitted);
	json_source(&j, in);
	hmb_json_end(&j);
	hmb_json_nl(&j);
}

static const char *plural(uint64_t n, const char *one, const char *many)
{
	return n == 1 ? one : many;
}

static void print_ts(struct hmb_outbuf *ob, uint64_t ts)
{
	hmb_ob_printf(ob, "%llu.%09llu s", (unsigned long long)(ts / 1000000000u),
		  (unsigned long long)(ts % 1000000000u));
}

static void print_text(struct hmb_outbuf *ob, const struct input *in)
{
	const struct hmb_acct *a = in->acct;
	bool ring = hmb_reader_dialect(in->reader) == HMB_DIALECT_RING;
	struct hmb_opcode_iter it, all;
	unsigned int nops = 0;
	uint64_t n;
	uint16_t op;
	char src[4 * sizeof(in->sidecar.source)];

	hmb_ob_puts(ob, "file:          ");
	hmb_ob_puts(ob, in->name);
	hmb_ob_puts(ob, ring ? " (ring image)\n" : " (dump)\n");
	if (ring) {
		const struct hmb_ring_hdr *h = hmb_reader_ring_hdr(in->reader);

		hmb_ob_printf(ob, "ring:          size %u, tail %llu, head %llu, flags 0x%x%s%s\n",
			  h->ring_size, (unsigned long long)h->tail,
			  (unsigned long long)h->head, h->flags,
			  h->flags & HMB_RING_FLAG_OVERFLOWED ? " OVERFLOWED" : "",
			  h->flags & HMB_RING_FLAG_FROZEN ? " FROZEN" : "");
	}
	if (in->have_sidecar) {
		/* Paths can be long: no fixed-size formatting for them. */
		hmb_ob_puts(ob, "sidecar:       ");
		hmb_ob_puts(ob, in->meta_path);
		hmb_ob_puts(ob, " (source ");
		/* the sidecar is a file anyone may have written */
		hmb_ob_puts(ob, hmb_text_esc(src, sizeof(src),
					     in->sidecar.source));
		hmb_ob_printf(ob, ", ring size %u, %llu epoch%s)\n",
			  in->sidecar.ring_size,
			  (unsigned long long)in->epochs,
			  plural(in->epochs, "", "s"));
	}
	hmb_ob_printf(ob, "records:       %llu decoded (%llu truncated by the firmware)\n",
		  (unsigned long long)a->records,
		  (unsigned long long)a->truncated);
	hmb_ob_printf(ob, "bytes:         %llu (payload %llu)\n",
		  (unsigned long long)a->bytes,
		  (unsigned long long)a->payload_bytes);
	hmb_ob_printf(ob, "wrap markers:  %llu\n",
		  (unsigned long long)a->wrap_markers);
	hmb_ob_printf(ob, "ignored:       %llu (unknown flag bits)\n",
		  (unsigned long long)a->ignored);
	hmb_ob_printf(ob, "duplicates:    %llu (replayed, dropped)\n",
		  (unsigned long long)a->duplicates);
	if (a->resets)
		hmb_ob_printf(ob, "seq restarts:  %llu\n",
			  (unsigned long long)a->resets);
	if (a->records) {
		uint64_t span = a->last_ts_ns - a->first_ts_ns;

		hmb_ob_puts(ob, "time:          ");
		print_ts(ob, a->first_ts_ns);
		hmb_ob_puts(ob, " .. ");
		print_ts(ob, a->last_ts_ns);
		hmb_ob_puts(ob, " (");
		if (a->last_ts_ns >= a->first_ts_ns)
			print_ts(ob, span);
		else
			hmb_ob_puts(ob, "clock went backwards");
		hmb_ob_puts(ob, ", firmware clock)\n");
	}
	if (!a->lost) {
		hmb_ob_puts(ob, "lost:          0 records\n");
	} else {
		hmb_ob_printf(ob, "lost:          %llu record%s in %llu gap%s\n",
			  (unsigned long long)a->lost,
			  plural(a->lost, "", "s"),
			  (unsigned long long)a->gaps,
			  plural(a->gaps, "", "s"));
		for (size_t i = 0; i < in->ngaps; i++) {
			const struct hmb_gap *g = &in->gaps[i];

			hmb_ob_printf(ob, "  %llu lost, seq %u..%u, between ts_ns %llu and %llu (before offset %llu)\n",
				  (unsigned long long)g->count, g->first_seq,
				  g->last_seq,
				  (unsigned long long)g->ts_before,
				  (unsigned long long)g->ts_after,
				  (unsigned long long)g->offset);
		}
		if (in->gaps_omitted)
			hmb_ob_printf(ob, "  ... %llu more gap%s not listed (--max-gaps)\n",
				  (unsigned long long)in->gaps_omitted,
				  plural(in->gaps_omitted, "", "s"));
	}
	hmb_acct_opcodes(a, &it);
	all = it;	/* the same opcodes again, below */
	while (hmb_opcode_iter_next(&it, &op, &n))
		nops++;
	hmb_ob_printf(ob, "opcodes:       %u distinct\n", nops);
	while (hmb_opcode_iter_next(&all, &op, &n))
		hmb_ob_printf(ob, "  0x%04x %12llu\n", op,
			      (unsigned long long)n);
}

/*
 * Every record through the accounting, as input_next() would take them
 * (the same counts, gaps and errors), with the library's mapped walk; the
 * sidecar's epochs start where input_next() starts them.
 */
static int count_all(struct input *in, struct hmb_error *err)
{
	bool dump = hmb_reader_dialect(in->reader) == HMB_DIALECT_DUMP;
	int rc;

	for (;;) {
		uint64_t stop = UINT64_MAX, at;

		if (dump && in->next_epoch < in->n_epochs)
			stop = in->epoch_offs[in->next_epoch];
		rc = hmb_reader_acct(in->reader, in->acct, stop, err);
		if (rc == 0 && dump)
			input_epochs_end(in);
		if (rc != 1)
			return rc;
		at = hmb_reader_offset(in->reader);
		input_epochs_to(in, at);
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
	bool json = false;
	struct hmb_outbuf ob;
	struct input in;
	uint64_t v;
	int opt, rc;

	optind = 1;
	while ((opt = getopt_long(argc, argv, ":f:jh", stats_opts, NULL)) != -1) {
		switch (opt) {
		case 'f':
		case 'j':
			if (format_opt(opt, optarg, &json))
				return EXIT_USAGE;
			break;
		case 'G':
			if (parse_count("max-gaps", optarg, 0, 1000000, &v))
				return EXIT_USAGE;
			iopts.max_gaps = (size_t)v;
			break;
		case 'h':
			usage_stats(stdout);
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
	if (input_open(&in, argv[optind], &iopts))
		return EXIT_BADINPUT;
	rc = count_all(&in, &err);
	if (rc < 0) {
		/* No partial statistics: they would read as a complete file. */
		input_report(&in, &err);
		input_close(&in);
		return EXIT_BADINPUT;
	}
	if (hmb_ob_open(&ob, STDOUT_FILENO, "<stdout>", 1u << 16)) {
		errorf("out of memory");
		input_close(&in);
		return EXIT_BADINPUT;
	}
	if (json)
		print_json(&ob, &in);
	else
		print_text(&ob, &in);
	rc = hmb_ob_close(&ob);
	input_close(&in);
	if (rc) {
		errorf("<stdout>: write error: %s", strerror(rc));
		return EXIT_BADINPUT;
	}
	return 0;
}
