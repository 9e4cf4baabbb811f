// SPDX-License-Identifier: Apache-2.0
/*
 * convert --to perfetto: a Trace Event JSON file (the "JSON trace format"
 * that ui.perfetto.dev and chrome://tracing open).
 *
 * Layout (process "SSD firmware"):
 *  - one thread track per firmware CPU, "fw cpu N": every record as a
 *    zero-length slice named after its dictionary event, its fields as
 *    args; background edges and points as instant events;
 *  - commands as nestable async slices (ph b/e, cat "cmd", one id per
 *    command), because commands overlap; the intervals between successive
 *    phases ("fetch->media_start", ...) nest inside them;
 *  - one track per background group ("bg gc"): its windows as slices;
 *  - track "lost records": every sequence gap as a "LOST N records" slice
 *    from the record before the gap to the record after it.
 * Timestamps are the firmware clock in microseconds with three decimals,
 * so no nanosecond is lost.  Output is streamed; the only state is the
 * bounded table of commands in flight (fwmodel).
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <string.h>
#include <unistd.h>

#include "analyze.h"
#include "formats.h"
#include "fwmodel.h"

#define OUTBUF_SIZE	(1u << 20)
#define PID_FW		1
#define TID_LOST	1000
#define TID_BG		1100
#define REC_OUT_MAX	(2 * HMB_RECORD_MAX_PAYLOAD + 64 * HMB_DICT_MAX_FIELDS + 512)

struct pf {
	struct outbuf *ob;
	const struct hmb_dict *dict;
	bool first;		/* no event written yet (comma handling) */
	bool cpu_named[256];
	char groups[FWM_MAX_GROUPS][HMB_DICT_NAME_LEN];
	unsigned int ngroups;
	uint64_t lost_end;	/* end of the last LOST slice (no overlap) */
	/* counts, written into the metadata */
	uint64_t n_records, n_cmds, n_steps, n_lost_slices, n_bg, n_instants;
	uint64_t lost_clamped;
};

static void ev_start(struct pf *p)
{
	struct outbuf *ob = p->ob;

	ob_reserve(ob, REC_OUT_MAX);
	if (!p->first)
		ob_lit(ob, ",\n");
	p->first = false;
}

/* Firmware ns as Trace Event microseconds, exactly. */
static void put_us(struct outbuf *ob, uint64_t ns)
{
	ob_u64(ob, ns / 1000);
	ob_putc(ob, '.');
	ob_u64_pad(ob, ns % 1000, 3, '0');
}

static void put_i64(struct outbuf *ob, int64_t v)
{
	if (v < 0) {
		ob_putc(ob, '-');
		ob_u64(ob, (uint64_t)0 - (uint64_t)v);
	} else {
		ob_u64(ob, (uint64_t)v);
	}
}

static void meta_name(struct pf *p, const char *what, int tid,
		      const char *name, int sort)
{
	ev_start(p);
	ob_lit(p->ob, "{\"ph\":\"M\",\"pid\":");
	ob_u64(p->ob, PID_FW);
	if (tid >= 0) {
		ob_lit(p->ob, ",\"tid\":");
		ob_u64(p->ob, (uint64_t)tid);
	}
	ob_lit(p->ob, ",\"name\":\"");
	ob_puts(p->ob, what);
	ob_lit(p->ob, "\",\"args\":{\"name\":\"");
	ob_json_str(p->ob, name);
	ob_lit(p->ob, "\"}}");
	if (tid >= 0) {
		ev_start(p);
		ob_lit(p->ob, "{\"ph\":\"M\",\"pid\":");
		ob_u64(p->ob, PID_FW);
		ob_lit(p->ob, ",\"tid\":");
		ob_u64(p->ob, (uint64_t)tid);
		ob_lit(p->ob, ",\"name\":\"thread_sort_index\",\"args\":{\"sort_index\":");
		ob_u64(p->ob, (uint64_t)sort);
		ob_lit(p->ob, "}}");
	}
}

static void cpu_track(struct pf *p, uint8_t cpu)
{
	char name[32];

	if (p->cpu_named[cpu])
		return;
	p->cpu_named[cpu] = true;
	snprintf(name, sizeof(name), "fw cpu %u", cpu);
	meta_name(p, "thread_name", cpu, name, 100 + cpu);
}

static void put_fields(struct outbuf *ob, const struct hmb_dict_event *ev,
		       const struct hmb_record *rec)
{
	for (unsigned int i = 0; i < ev->nfields; i++) {
		const struct hmb_dict_field *f = &ev->fields[i];
		uint64_t v;

		ob_lit(ob, ",\"");
		ob_puts(ob, f->name);
		ob_lit(ob, "\":");
		if (hmb_dict_get(f, rec->payload, rec->hdr.payload_len, &v))
			ob_lit(ob, "null");
		else if (f->type >= HMB_FT_S8)
			put_i64(ob, (int64_t)v);
		else
			ob_u64(ob, v);
	}
}

static void on_record(void *ctx, const struct hmb_record *rec,
		      const struct hmb_dict_event *ev)
{
	struct pf *p = ctx;
	struct outbuf *ob = p->ob;
	const struct hmb_record_hdr *h = &rec->hdr;
	bool instant = ev && ev->bg_edge != HMB_BG_NONE;

	cpu_track(p, h->cpu);
	ev_start(p);
	if (instant) {
		ob_lit(ob, "{\"ph\":\"i\",\"s\":\"t\",\"cat\":\"fw.bg\",\"name\":\"");
		p->n_instants++;
	} else {
		ob_lit(ob, "{\"ph\":\"X\",\"dur\":0,\"cat\":\"fw\",\"name\":\"");
		p->n_records++;
	}
	if (ev) {
		ob_puts(ob, ev->name);
	} else {
		ob_lit(ob, "op 0x");
		ob_hex_fixed(ob, h->opcode, 4);
	}
	ob_lit(ob, "\",\"pid\":");
	ob_u64(ob, PID_FW);
	ob_lit(ob, ",\"tid\":");
	ob_u64(ob, h->cpu);
	ob_lit(ob, ",\"ts\":");
	put_us(ob, h->ts_ns);
	ob_lit(ob, ",\"args\":{\"seq\":");
	ob_u64(ob, h->seq);
	ob_lit(ob, ",\"opcode\":");
	ob_u64(ob, h->opcode);
	if (h->flags & HMB_REC_FLAG_TRUNCATED)
		ob_lit(ob, ",\"truncated\":true");
	if (ev) {
		put_fields(ob, ev, rec);
	} else {
		ob_lit(ob, ",\"payload\":\"");
		ob_hexbytes(ob, rec->payload, h->payload_len);
		ob_putc(ob, '"');
	}
	ob_lit(ob, "}}");
}

static void async_ev(struct pf *p, char ph, const char *name,
		     const struct fwm_cmd *c, uint64_t ts)
{
	struct outbuf *ob = p->ob;

	ev_start(p);
	ob_lit(ob, "{\"ph\":\"");
	ob_putc(ob, ph);
	ob_lit(ob, "\",\"cat\":\"cmd\",\"id\":\"0x");
	ob_hex_fixed(ob, c->id, 8);
	ob_lit(ob, "\",\"name\":\"");
	ob_puts(ob, name);
	ob_lit(ob, "\",\"pid\":");
	ob_u64(ob, PID_FW);
	ob_lit(ob, ",\"tid\":");
	ob_u64(ob, c->cpu);
	ob_lit(ob, ",\"ts\":");
	put_us(ob, ts);
}

static void on_cmd_begin(void *ctx, const struct fwm_cmd *c)
{
	struct pf *p = ctx;
	struct outbuf *ob = p->ob;
	char buf[16];

	p->n_cmds++;
	async_ev(p, 'b', fwm_cmd_name(c, buf, sizeof(buf)), c, c->first_ts);
	ob_lit(ob, ",\"args\":{\"sqid\":");
	ob_u64(ob, c->sqid);
	ob_lit(ob, ",\"cid\":");
	ob_u64(ob, c->cid);
	if (c->mask & (1u << HMB_PHASE_FETCH)) {
		if (c->have_opc) {
			ob_lit(ob, ",\"opc\":");
			ob_u64(ob, c->opc);
		}
		ob_lit(ob, ",\"nsid\":");
		ob_u64(ob, c->nsid);
		ob_lit(ob, ",\"slba\":");
		ob_u64(ob, c->slba);
		ob_lit(ob, ",\"nlb\":");
		ob_u64(ob, c->nlb);
	} else {
		ob_lit(ob, ",\"first_phase\":\"");
		ob_puts(ob, hmb_phase_name(c->last_phase));
		ob_putc(ob, '"');
	}
	ob_lit(ob, "}}");
}

static void on_cmd_step(void *ctx, const struct fwm_cmd *c,
			enum hmb_phase from, uint64_t t0,
			enum hmb_phase to, uint64_t t1)
{
	struct pf *p = ctx;
	char name[2 * HMB_DICT_NAME_LEN + 8];

	p->n_steps++;
	snprintf(name, sizeof(name), "%s->%s", hmb_phase_name(from),
		 hmb_phase_name(to));
	async_ev(p, 'b', name, c, t0);
	ob_lit(p->ob, "}");
	async_ev(p, 'e', name, c, t1);
	ob_lit(p->ob, ",\"args\":{\"dur_ns\":");
	ob_u64(p->ob, t1 - t0);
	ob_lit(p->ob, "}}");
}

static void on_cmd_end(void *ctx, const struct fwm_cmd *c, enum fwm_end why)
{
	struct pf *p = ctx;
	char buf[16];

	async_ev(p, 'e', fwm_cmd_name(c, buf, sizeof(buf)), c, c->last_ts);
	ob_lit(p->ob, ",\"args\":{\"end\":\"");
	ob_puts(p->ob, fwm_end_name(why));
	ob_lit(p->ob, "\",\"fw_ns\":");
	ob_u64(p->ob, c->last_ts - c->first_ts);
	ob_lit(p->ob, "}}");
}

static void on_bg_window(void *ctx, const char *group, uint64_t t0,
			 uint64_t t1, unsigned int flags, uint8_t cpu)
{
	struct pf *p = ctx;
	struct outbuf *ob = p->ob;
	unsigned int g;

	for (g = 0; g < p->ngroups; g++)
		if (strcmp(p->groups[g], group) == 0)
			break;
	if (g == p->ngroups) {
		char name[HMB_DICT_NAME_LEN + 8];

		if (g == FWM_MAX_GROUPS)
			return;
		snprintf(p->groups[g], HMB_DICT_NAME_LEN, "%s", group);
		p->ngroups++;
		snprintf(name, sizeof(name), "bg %s", group);
		meta_name(p, "thread_name", TID_BG + (int)g, name,
			  50 + (int)g);
	}
	p->n_bg++;
	ev_start(p);
	ob_lit(ob, "{\"ph\":\"X\",\"cat\":\"fw.bg\",\"name\":\"");
	ob_puts(ob, group);
	ob_lit(ob, "\",\"pid\":");
	ob_u64(ob, PID_FW);
	ob_lit(ob, ",\"tid\":");
	ob_u64(ob, TID_BG + g);
	ob_lit(ob, ",\"ts\":");
	put_us(ob, t0);
	ob_lit(ob, ",\"dur\":");
	put_us(ob, t1 - t0);
	ob_lit(ob, ",\"args\":{\"cpu\":");
	ob_u64(ob, cpu);
	if (flags & FWM_BG_NO_BEGIN)
		ob_lit(ob, ",\"begin_missing\":true");
	if (flags & FWM_BG_NO_END)
		ob_lit(ob, ",\"end_missing\":true");
	ob_lit(ob, "}}");
}

static void lost_slice(struct pf *p, const struct hmb_gap *g)
{
	struct outbuf *ob = p->ob;
	uint64_t t0 = g->ts_before, t1 = g->ts_after;
	bool clamped = false;

	if (p->n_lost_slices == 0)
		meta_name(p, "thread_name", TID_LOST, "lost records", 0);
	/* One synchronous track: slices must not overlap. */
	if (t0 < p->lost_end) {
		t0 = p->lost_end;
		clamped = true;
		p->lost_clamped++;
	}
	if (t1 < t0)
		t1 = t0;
	p->lost_end = t1;
	p->n_lost_slices++;
	ev_start(p);
	ob_printf(ob, "{\"ph\":\"X\",\"cat\":\"loss\",\"name\":\"LOST %llu record%s\",\"pid\":%d,\"tid\":%d,\"ts\":",
		  (unsigned long long)g->count, g->count == 1 ? "" : "s",
		  PID_FW, TID_LOST);
	put_us(ob, t0);
	ob_lit(ob, ",\"dur\":");
	put_us(ob, t1 - t0);
	ob_printf(ob, ",\"args\":{\"count\":%llu,\"first_seq\":%u,\"last_seq\":%u,\"ts_before\":%llu,\"ts_after\":%llu%s}}",
		  (unsigned long long)g->count, g->first_seq, g->last_seq,
		  (unsigned long long)g->ts_before,
		  (unsigned long long)g->ts_after,
		  clamped ? ",\"clamped\":true" : "");
}

static const struct fwm_ops pf_ops = {
	.record = on_record,
	.cmd_begin = on_cmd_begin,
	.cmd_step = on_cmd_step,
	.cmd_end = on_cmd_end,
	.bg_window = on_bg_window,
};

static void metadata(struct pf *p, const struct input *in,
		     const struct fwmodel *m)
{
	const struct hmb_acct *a = in->acct;
	struct outbuf *ob = p->ob;

	ob_reserve(ob, 4096);
	ob_lit(ob, "\n],\n\"metadata\":{\"source\":\"");
	ob_json_str(ob, in->name);
	ob_reserve(ob, 4096);
	ob_printf(ob, "\",\"clock\":\"firmware ts_ns (not host time)\","
		  "\"records\":%llu,\"lost\":%llu,\"gaps\":%llu,"
		  "\"duplicates\":%llu,\"wrap_markers\":%llu,\"ignored\":%llu,"
		  "\"truncated\":%llu,",
		  (unsigned long long)a->records,
		  (unsigned long long)a->lost, (unsigned long long)a->gaps,
		  (unsigned long long)a->duplicates,
		  (unsigned long long)a->wrap_markers,
		  (unsigned long long)a->ignored,
		  (unsigned long long)a->truncated);
	ob_printf(ob, "\"commands\":%llu,\"commands_complete\":%llu,"
		  "\"commands_reused\":%llu,\"commands_open_at_end\":%llu,"
		  "\"commands_evicted\":%llu,\"commands_without_fetch\":%llu,"
		  "\"duplicate_phase_events\":%llu,\"unknown_opcode\":%llu,"
		  "\"short_payload\":%llu,\"backwards_clamped\":%llu,"
		  "\"bg_windows\":%llu,\"lost_slices\":%llu,"
		  "\"lost_slices_clamped\":%llu}\n}\n",
		  (unsigned long long)m->st.cmds,
		  (unsigned long long)m->st.complete,
		  (unsigned long long)m->st.reused,
		  (unsigned long long)m->st.eof_open,
		  (unsigned long long)m->st.evicted,
		  (unsigned long long)m->st.no_fetch,
		  (unsigned long long)m->st.dup_phase,
		  (unsigned long long)m->st.unknown_opcode,
		  (unsigned long long)m->st.short_payload,
		  (unsigned long long)m->st.backwards,
		  (unsigned long long)m->st.bg_windows,
		  (unsigned long long)p->n_lost_slices,
		  (unsigned long long)p->lost_clamped);
}

static int write_perfetto(struct input *in, struct outbuf *ob,
			  const struct hmb_dict *dict)
{
	struct hmb_error err = { 0 };
	struct hmb_record rec;
	struct fwmodel m;
	struct pf p = { .ob = ob, .dict = dict, .first = true };
	uint64_t gaps_seen = 0;
	char pname[300];
	int rc;

	if (fwm_init(&m, dict, &pf_ops, &p)) {
		errorf("out of memory");
		return EXIT_BADINPUT;
	}
	ob_lit(ob, "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n");
	snprintf(pname, sizeof(pname), "SSD firmware (%s)", in->name);
	meta_name(&p, "process_name", -1, pname, 0);
	while ((rc = input_next(in, &rec, &err)) > 0) {
		if (in->acct->gaps != gaps_seen) {
			gaps_seen = in->acct->gaps;
			lost_slice(&p, &in->last_gap);
		}
		fwm_add(&m, &rec);
		if (ob->err)
			break;
	}
	fwm_finish(&m);
	if (rc < 0) {
		ob_flush(ob);
		input_report(in, &err);
		return EXIT_BADINPUT;
	}
	metadata(&p, in, &m);
	ob_flush(ob);
	if (ob->err) {
		errorf("%s: write error: %s", ob->name, strerror(ob->err));
		return EXIT_BADINPUT;
	}
	return 0;
}

void usage_convert_ext(FILE *f)
{
	usage_convert(f);
	fprintf(f,
"\n"
"Perfetto / chrome://tracing:\n"
"  " PROG " convert FILE OUT.json --to perfetto [--dict FILE]\n"
"\n"
"  Writes a Trace Event JSON file for ui.perfetto.dev or chrome://tracing:\n"
"  a track per firmware CPU with every record (dictionary names and fields\n"
"  as args), NVMe commands as async slices with their phases nested inside,\n"
"  background windows (gc, thermal) on their own tracks, and every sequence\n"
"  gap as a \"LOST N records\" slice.  Times are the firmware clock.\n"
"      --dict FILE      event dictionary (default: the shipped one, or\n"
"                       $HMB_EVENTS_DICT)\n"
"\n"
"  Example:\n"
"  " PROG " convert trace.bin trace.json --to perfetto\n"
"      then open trace.json in https://ui.perfetto.dev\n");
}

static const struct option pf_opts[] = {
	{ "to", required_argument, NULL, 't' },
	{ "dict", required_argument, NULL, 'D' },
	{ "help", no_argument, NULL, 'h' },
	INPUT_LONGOPTS,
	{ NULL, 0, NULL, 0 }
};

static int cmd_perfetto(int argc, char **argv)
{
	struct input_opts iopts = { .max_gaps = 0 };
	const char *dict_path = NULL, *out;
	struct hmb_dict *dict = NULL;
	struct outbuf ob;
	struct input in;
	int opt, rc, fd;

	optind = 1;
	while ((opt = getopt_long(argc, argv, "t:h", pf_opts, NULL)) != -1) {
		switch (opt) {
		case 't':
			break;		/* perfetto: that is why we are here */
		case 'D':
			dict_path = optarg;
			break;
		case 'h':
			usage_convert_ext(stdout);
			return 0;
		default:
			rc = input_opt(&iopts, opt, optarg);
			if (rc < 0)
				return EXIT_USAGE;
			if (rc == 0) {
				usage_convert_ext(stderr);
				return EXIT_USAGE;
			}
		}
	}
	if (argc - optind != 2) {
		errorf("convert: expected FILE and OUT (try '" PROG " convert --help')");
		return EXIT_USAGE;
	}
	out = argv[optind + 1];
	if (dict_open(dict_path, &dict))
		return EXIT_BADINPUT;
	if (input_open(&in, argv[optind], &iopts)) {
		hmb_dict_free(dict);
		return EXIT_BADINPUT;
	}
	if (strcmp(out, "-") == 0) {
		fd = STDOUT_FILENO;
	} else {
		fd = open(out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		if (fd < 0) {
			errorf("%s: cannot create: %s", out, strerror(errno));
			rc = EXIT_BADINPUT;
			goto out;
		}
	}
	if (ob_open(&ob, fd, fd == STDOUT_FILENO ? "<stdout>" : out,
		    OUTBUF_SIZE)) {
		errorf("out of memory");
		rc = EXIT_BADINPUT;
		goto out;
	}
	rc = write_perfetto(&in, &ob, dict);
	ob_close(&ob);
	if (fd != STDOUT_FILENO && close(fd) && rc == 0) {
		errorf("%s: close: %s", out, strerror(errno));
		rc = EXIT_BADINPUT;
	}
	fd = STDOUT_FILENO;
out:
	if (fd != STDOUT_FILENO)
		close(fd);
	input_close(&in);
	hmb_dict_free(dict);
	return rc;
}

/* Which converter: --to perfetto (any spelling getopt accepts) is ours. */
static bool wants_perfetto(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = NULL;

		if (strcmp(a, "--") == 0)
			break;
		if ((strcmp(a, "--to") == 0 || strcmp(a, "-t") == 0) &&
		    i + 1 < argc)
			v = argv[++i];
		else if (strncmp(a, "--to=", 5) == 0)
			v = a + 5;
		else if (strncmp(a, "-t", 2) == 0 && a[2])
			v = a + 2;
		if (v && strcmp(v, "perfetto") == 0)
			return true;
	}
	return false;
}

int cmd_convert_ext(int argc, char **argv)
{
	for (int i = 1; i < argc; i++)
		if (strcmp(argv[i], "-h") == 0 ||
		    strcmp(argv[i], "--help") == 0) {
			usage_convert_ext(stdout);
			return 0;
		}
	if (wants_perfetto(argc, argv))
		return cmd_perfetto(argc, argv);
	return cmd_convert(argc, argv);
}
