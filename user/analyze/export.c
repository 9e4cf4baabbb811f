// SPDX-License-Identifier: Apache-2.0
/*
 * export: what a dump (or ring image) holds, into the fleet store
 * (ClickHouse; schema in share/fleet/schema.sql, docs/fleet.md):
 *   fw_records  every data record, read through libhmbtrace (input.c);
 *   losses      one row per sequence gap as it is found, then one per
 *               other non-zero counter (ignored, truncated, duplicates,
 *               an unreadable tail);
 *   clock       the host's clocks when the daemon opened the dump (sidecar);
 *   commands    with --host: every host command joined with its firmware
 *               records by libhmbtrace's offline join (hmb_join_stream),
 *               as `correlate` joins and judges them;
 *   pel_events  with --pel: the drive's Persistent Event Log, each event
 *               placed on the host's clock as correlate --pel places it.
 * Streaming: memory is one batch buffer per table, whatever the input size;
 * the join (--host) holds one window of commands (hmb_join_stream).
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "analyze.h"
#include "correlate.h"
#include "hmbtrace_ch.h"
#include "pelhost.h"

#define NS_PER_DAY (86400ull * 1000000000ull)
/* Row ids of the per-trace counters: above every record offset. */
#define LOSS_ID_COUNTERS (1ull << 62)
#define NAME_MAX_LEN 255

enum { T_RECORDS, T_LOSSES, T_CLOCK, T_COMMANDS, T_PEL, T_COUNT };
static const char *const tnames[T_COUNT] = { "fw_records", "losses", "clock",
					     "commands", "pel_events" };
static const char pel_events_cols[] =
	"day, host, ring, trace_id, pel_id, serial, model, event_type, event, "
	"ctrl_ms, ts_origin, place, host_ns, bound_ns, fields";


struct exporter {
	struct hmb_ch_export x;
	struct hmb_ch_sink sink[T_COUNT];
	bool open;		/* sinks opened */
	const char *host, *ring;
	uint16_t day;		/* days since 1970-01-01 (ClickHouse Date) */
	char day_str[16];
	char where[1024];
	struct input *in;
	bool failed;		/* a sink failed: count, do not send */
	/* --host: the commands table */
	bool cmds;
	const char *serial, *model, *fw_rev;
	int64_t wall_off;	/* host events' clock -> wall clock (sidecar) */
	double clock_err;	/* the join's offset error bound */
	uint64_t cmd_id;
	struct hmb_ch_ident id;	/* day, host, trace_id, the drive */
	/* --pel: the pel_events table, the log loaded before any row */
	const char *pel_path;
	struct pelh pel;
};

/* Whether table @t is written by this export. */
static bool table_on(const struct exporter *e, int t)
{
	return (t != T_COMMANDS || e->cmds) && (t != T_PEL || e->pel_path);
}

void usage_export(FILE *f)
{
	fprintf(f,
"Usage: " PROG " export --to clickhouse URL FILE [--host HOSTFILE] [OPTIONS]\n"
"\n"
"Export what FILE (a dump or ring image) holds into the fleet store, a\n"
"ClickHouse cluster with the shipped schema (share/fleet/schema.sql,\n"
"docs/fleet.md): every data record into fw_records, every loss counter\n"
"(each sequence gap with its time range; ignored, truncated, duplicate\n"
"records; an unreadable tail) into losses, the host clocks of the sidecar\n"
"into clock; with --host, every host command joined with its firmware\n"
"records (as correlate joins them) into commands.  Batched RowBinary\n"
"inserts over HTTP through the Distributed tables, each retried with\n"
"backoff until the store has it exactly once.\n"
"\n"
"Idempotent: re-running the same export sends nothing the store already\n"
"holds (an interrupted export resumes where the store stops).  The export\n"
"is identified by (day, host, trace_id); rows by their offset or ordinal.\n"
"At the end the store is asked for its row counts, which must match.\n"
"\n"
"Options:\n"
"      --to clickhouse   the store (the only one for now)\n"
"      --host HOSTFILE   the host's view of the same commands (agent JSON\n"
"                        lines or perf script, as correlate takes it):\n"
"                        the joined commands into the commands table; host\n"
"                        times become wall clock through the sidecar's\n"
"                        realtime_ns - monotonic_ns (kept as they are\n"
"                        without a sidecar).  Not with FILE '-'\n"
"      --ctrl N          with --host: the controller (nvmeN) the dump\n"
"                        belongs to (default: the only one in HOSTFILE)\n"
"      --dict FILE       with --host: event dictionary (default: the\n"
"                        shipped one)\n"
"      --pel PELFILE     the drive's Persistent Event Log saved by 'pel\n"
"                        --device DEV --save PELFILE': each event into\n"
"                        pel_events, placed on the host's clock by\n"
"                        PELFILE.clock (host times on the wall clock as the\n"
"                        commands' are), with its bound, or not placed and why\n"
"      --serial S, --model M, --fw-rev R   the drive, for the commands rows\n"
"                        (default empty)\n"
"      --hostname NAME   host the trace comes from (default: this host's\n"
"                        name)\n"
"      --ring NAME       ring name (default: the sidecar's source, without\n"
"                        its directory; \"unknown\" without a sidecar)\n"
"      --day YYYY-MM-DD  UTC date of the trace, its partition (default: the\n"
"                        date the daemon opened it, from the sidecar;\n"
"                        required without one)\n"
"      --trace-id N      the export's identity (default: a hash of the\n"
"                        sidecar, or of the file's first 4 KiB without one;\n"
"                        required for stdin)\n"
"      --database DB     default hmb\n"
"      --batch-rows N    rows per insert (default 131072, at most 1000000)\n"
"      --batch-bytes N   bytes per insert (default 16 MiB)\n"
"      --retries N       retries per request (default 10; backoff from\n"
"                        --backoff-ms, doubling up to 5 s)\n"
"      --backoff-ms N    first wait before a retry (default 100)\n"
"      --timeout SECS    per request (default 60)\n"
"      --export-credentials FILE  the store's user and password: lines\n"
"                        user=NAME and password=SECRET; FILE must be\n"
"                        readable by its owner only (chmod 600)\n"
"  -f, --format FMT      summary as text (default) or json\n"
"  -j, --json            same as --format json\n"
"  -q, --quiet           no line per retry on stderr\n"
"      --meta PATH, --no-meta, --dup-window N   see decode --help\n"
"  -h, --help            this help\n"
"\n"
"URL is the HTTP interface of any server of the cluster, e.g.\n"
"http://127.0.0.1:8123.  The user and the password are each taken from\n"
"the first that has it of: --export-credentials FILE, the URL\n"
"(http://U:P@host:8123 or ?user=U&password=P: visible to every user in\n"
"ps), $CLICKHOUSE_USER and $CLICKHOUSE_PASSWORD.  No message shows the\n"
"password.\n"
"\n"
"Exit status: 0 when every row is in the store; 1 when the input is bad\n"
"(the rows before the bad record are exported, the unreadable tail is a\n"
"losses row) or the store failed or refused (the summary counts the rows\n"
"not exported; run again to finish); 2 on bad usage.\n"
"\n"
"JSON keys: file, url, database, host, ring, day, trace_id (hex string),\n"
"tables {fw_records, losses, clock (and commands with --host, pel_events\n"
"with --pel): {rows,\n"
"present, inserted, batches, not_exported, verified}}, retries, error (null\n"
"or the message).\n"
"\n"
"Examples:\n"
"  " PROG " export --to clickhouse http://127.0.0.1:8123 trace.bin\n"
"  " PROG " export --to clickhouse http://ch1:8123 --hostname db7 \\\n"
"      /var/lib/hmb-trace/nvme0.bin -j | jq .tables.fw_records\n"
"  " PROG " export --to clickhouse http://127.0.0.1:8123 fw.bin \\\n"
"      --host agent.jsonl --serial S123 --fw-rev 1.2.3   # and the commands\n"
"  " PROG " export --to clickhouse http://127.0.0.1:8123 --day \"$(date -u +%%F)\" \\\n"
"      --ring nvme0 --trace-id 7 - < trace.bin\n");
}

/* ---------------------------------------------------------------- rows */

/* Returns 0, or -1 when a sink failed (x.err says why). */
static int row_record(struct exporter *e, const struct hmb_record *rec)
{
	/* host_ns: not mapped offline (no join) */
	return hmb_ch_row_record(&e->sink[T_RECORDS], &e->id, e->ring,
				 rec->offset, (uint32_t)e->in->epochs, 0,
				 &rec->hdr, rec->payload) < 0 ? -1 : 0;
}

/* A losses row of this dump's ring. */
static int row_loss(struct exporter *e, struct hmb_ch_loss *l)
{
	l->ring = e->ring;
	return hmb_ch_row_loss(&e->sink[T_LOSSES], &e->id, l);
}

static void on_gap(void *ctx, const struct hmb_gap *g)
{
	struct exporter *e = ctx;
	struct hmb_ch_loss l = {
		.id = g->offset, .layer = "firmware", .counter = "lost",
		.detail = "sequence gap", .count = g->count,
		.fw_from = g->ts_before, .fw_to = g->ts_after,
		.seq_first = g->first_seq, .seq_last = g->last_seq,
	};

	/* Failures are counted in the sink and reported at the end. */
	if (e->open)
		row_loss(e, &l);
}

/* The counters stats prints, as rows over the whole trace. */
static void row_counters(struct exporter *e, uint64_t bad_bytes,
			 const char *bad_msg)
{
	const struct hmb_acct *a = e->in->acct;
	struct hmb_ch_loss c[] = {
		{ .layer = "dump", .counter = "ignored",
		  .detail = "records with unknown flag bits, not decoded",
		  .count = a->ignored },
		{ .layer = "firmware", .counter = "truncated",
		  .detail = "records whose payload the firmware clipped",
		  .count = a->truncated },
		{ .layer = "daemon", .counter = "duplicates",
		  .detail = "replayed records dropped (not lost)",
		  .count = a->duplicates },
		{ .layer = "dump", .counter = "unreadable",
		  .detail = bad_msg ? bad_msg : "", .count = bad_bytes },
	};

	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		if (!c[i].count)
			continue;
		c[i].id = LOSS_ID_COUNTERS + i;
		if (a->records) {
			c[i].fw_from = a->first_ts_ns;
			c[i].fw_to = a->last_ts_ns;
		}
		row_loss(e, &c[i]);
	}
}

static void row_clock(struct exporter *e)
{
	const struct hmb_sidecar *sc = &e->in->sidecar;
	struct hmb_ch_clock c = {
		.id = 0, .ring = e->ring, .kind = "host_open",
		.host_ns = sc->realtime_ns, .monotonic_ns = sc->monotonic_ns,
		.boottime_ns = sc->boottime_ns,
	};

	if (e->in->have_sidecar)
		hmb_ch_row_clock(&e->sink[T_CLOCK], &e->id, &c);
}

/*
 * corr_run's callback: one commands row, as the join hands the command
 * out (the clock error is its window's).  0, or -1 on a failed sink.
 */
static int row_command(void *ctx, const struct hmb_join *j, size_t i,
		       const struct hmb_cmd *c)
{
	struct exporter *e = ctx;
	const struct hmb_clock *k = hmb_join_clock(j);

	(void)i;
	e->clock_err = k->valid ? k->off_err_ns : 0;
	return hmb_ch_row_command(&e->sink[T_COMMANDS], &e->id, e->cmd_id++,
				  c, e->wall_off, e->clock_err) < 0 ? -1 : 0;
}

/* --host: the join of the dump and the host events, into commands. */
static int export_commands(struct exporter *e, const char *file,
			   const char *host, const char *dict_path, long ctrl)
{
	struct hmb_dict *dict = NULL;
	struct corr c;
	int rc;

	if (dict_open(dict_path, &dict))
		return EXIT_USAGE;
	if (e->in->have_sidecar)
		e->wall_off = (int64_t)(e->in->sidecar.realtime_ns -
					e->in->sidecar.monotonic_ns);
	/* a failed sink stops the rows; the sink says so itself */
	rc = corr_run(&c, file, host, dict, ctrl, 0, NULL, row_command, e);
	if (rc < 0)
		rc = 0;
	if (rc) {
		hmb_dict_free(dict);
		return rc;
	}
	corr_free(&c);
	hmb_dict_free(dict);
	return 0;
}

/* --pel: one pel_events row per event of the log (a failed sink counts). */
static void export_pel(struct exporter *e)
{
	struct hmb_ch_sink *s = &e->sink[T_PEL];
	const struct pelh *p = &e->pel;
	int64_t wall_off = 0;

	if (e->in->have_sidecar)
		wall_off = (int64_t)(e->in->sidecar.realtime_ns -
				     e->in->sidecar.monotonic_ns);
	for (size_t i = 0; i < p->n; i++) {
		const struct pelh_ev *x = &p->ev[i];
		char nb[16];

		if (hmb_ch_sink_admit(s, x->index) <= 0)
			continue;	/* present, or a failure counted */
		snprintf(nb, sizeof(nb), "type_%02x", x->type);
		hmb_rb_u16(s, e->id.day);
		hmb_rb_str(s, e->host);
		hmb_rb_str(s, e->ring);
		hmb_rb_u64(s, e->x.trace_id);
		hmb_rb_u64(s, x->index);
		hmb_rb_str(s, p->h.sn);
		hmb_rb_str(s, p->h.mn);
		hmb_rb_u8(s, x->type);
		hmb_rb_str(s, x->name ? x->name : nb);
		hmb_rb_u64(s, x->ts.ms);
		hmb_rb_u8(s, x->ts.origin);
		hmb_rb_str(s, pel_unplaced_name(x->why));
		hmb_rb_u64(s, x->why == PEL_PLACED ?
			   (uint64_t)((int64_t)x->mono_ns + wall_off) : 0);
		hmb_rb_u64(s, x->bound_ns);
		hmb_rb_str(s, x->fields);
		hmb_ch_sink_commit_row(s);
	}
}

/* ------------------------------------------------------------ identity */

static uint64_t fnv1a(uint64_t h, const void *p, size_t n)
{
	const uint8_t *b = p;

	for (size_t i = 0; i < n; i++) {
		h ^= b[i];
		h *= 0x100000001b3ull;
	}
	return h;
}

#define FNV_INIT 0xcbf29ce484222325ull

/*
 * The export's identity: the sidecar names one daemon output (source and
 * the host clocks at open); without one, the file's first 4 KiB (which hold
 * the first records, their seqs and firmware times).
 */
static int trace_identity(struct exporter *e, const char *path, bool *have)
{
	const struct hmb_sidecar *sc = &e->in->sidecar;
	uint8_t buf[4096];
	ssize_t n;
	uint64_t h = FNV_INIT;

	*have = false;
	if (e->in->have_sidecar) {
		h = fnv1a(h, "sidecar", 7);
		h = fnv1a(h, sc->source, strnlen(sc->source, sizeof(sc->source)));
		h = fnv1a(h, &sc->realtime_ns, 8);
		h = fnv1a(h, &sc->monotonic_ns, 8);
		h = fnv1a(h, &sc->boottime_ns, 8);
		h = fnv1a(h, &sc->ring_size, 4);
	} else {
		if (strcmp(path, "-") == 0)
			return 0;
		n = pread(e->in->fd, buf, sizeof(buf), 0);
		if (n < 0) {
			errorf("%s: cannot read: %s", path, strerror(errno));
			return -1;
		}
		h = fnv1a(h, "content", 7);
		h = fnv1a(h, buf, (size_t)n);
	}
	e->x.trace_id = h;
	*have = true;
	return 0;
}

static void format_day(uint16_t day, char *out, size_t n);

static int parse_day(const char *s, uint16_t *day)
{
	char back[16];
	struct tm tm = { 0 };
	const char *end = strptime(s, "%Y-%m-%d", &tm);
	time_t t;

	if (!end || *end)
		return -1;
	t = timegm(&tm);
	if (t < 0 || t / 86400 > UINT16_MAX)
		return -1;
	*day = (uint16_t)(t / 86400);
	/* timegm() takes February 30 as March 2: only real dates pass. */
	format_day(*day, back, sizeof(back));
	return strcmp(back, s) ? -1 : 0;
}

static void format_day(uint16_t day, char *out, size_t n)
{
	time_t t = (time_t)day * 86400;
	struct tm tm;

	gmtime_r(&t, &tm);
	strftime(out, n, "%Y-%m-%d", &tm);
}

/* 'text' as a ClickHouse string literal body: \ and ' escaped. */
static int sql_quote(char *out, size_t cap, const char *s)
{
	size_t n = 0;

	for (; *s; s++) {
		if (n + 3 > cap)
			return -1;
		if (*s == '\\' || *s == '\'')
			out[n++] = '\\';
		out[n++] = *s;
	}
	out[n] = 0;
	return 0;
}

static bool name_ok(const char *what, const char *s)
{
	size_t n = strlen(s);

	if (!n || n > NAME_MAX_LEN) {
		char esc[4 * NAME_MAX_LEN + 1];

		usagef("%s: '%s' must be 1 to %d bytes", what,
		       hmb_text_esc(esc, sizeof(esc), s), NAME_MAX_LEN);
		return false;
	}
	for (; *s; s++) {
		if ((unsigned char)*s < 0x20 || *s == 0x7f) {
			usagef("%s: control characters are not allowed", what);
			return false;
		}
	}
	return true;
}

/* -------------------------------------------------------------- summary */

static void summary_json(struct hmb_outbuf *ob, struct exporter *e,
			 const char *file, int rc)
{
	struct hmb_json j;
	char id[24];

	snprintf(id, sizeof(id), "0x%016" PRIx64, e->x.trace_id);
	hmb_json_init(&j, ob);
	hmb_json_obj(&j);
	hmb_json_kv_str(&j, "file", strcmp(file, "-") ? file : "<stdin>");
	hmb_json_kv_str(&j, "url", e->x.conn ? hmb_ch_url(e->x.conn) : "");
	hmb_json_kv_str(&j, "database", e->x.database);
	hmb_json_kv_str(&j, "host", e->host);
	hmb_json_kv_str(&j, "ring", e->ring);
	hmb_json_kv_str(&j, "day", e->day_str);
	hmb_json_kv_str(&j, "trace_id", id);
	hmb_json_key(&j, "tables");
	hmb_json_obj(&j);
	for (int t = 0; t < T_COUNT; t++) {
		const struct hmb_ch_sink *s = &e->sink[t];

		if (!table_on(e, t))
			continue;
		hmb_json_key_str(&j, tnames[t]);
		hmb_json_obj(&j);
		hmb_json_kv_u64(&j, "rows", s->rows);
		hmb_json_kv_u64(&j, "present", s->present);
		hmb_json_kv_u64(&j, "inserted", s->sent);
		hmb_json_kv_u64(&j, "batches", s->batches);
		hmb_json_kv_u64(&j, "not_exported", s->unsent);
		hmb_json_kv_bool(&j, "verified", s->verified);
		hmb_json_end(&j);
	}
	hmb_json_end(&j);
	hmb_json_kv_u64(&j, "retries", e->x.retried);
	hmb_json_key(&j, "error");
	if (e->x.err[0])
		hmb_json_str(&j, e->x.err);
	else if (rc)
		hmb_json_str(&j, "input error (see stderr)");
	else
		hmb_json_null(&j);
	hmb_json_end(&j);
	hmb_json_nl(&j);
}

static void summary(struct exporter *e, const char *file, bool json, int rc)
{
	struct hmb_outbuf ob;

	if (hmb_ob_open(&ob, STDOUT_FILENO, "<stdout>", 1u << 14))
		return;
	if (json) {
		summary_json(&ob, e, file, rc);
	} else {
		hmb_ob_printf(&ob, "%s -> %s, database %s: host %s, ring %s, day %s, trace_id 0x%016" PRIx64 "\n",
			      strcmp(file, "-") ? file : "<stdin>",
			      e->x.conn ? hmb_ch_url(e->x.conn) : "?",
			      e->x.database, e->host, e->ring, e->day_str,
			      e->x.trace_id);
		for (int t = 0; t < T_COUNT; t++) {
			const struct hmb_ch_sink *s = &e->sink[t];

			if (!table_on(e, t))
				continue;
			hmb_ob_printf(&ob, "  %-10s %10" PRIu64 " rows: %" PRIu64 " inserted in %" PRIu64
				      " batch%s, %" PRIu64 " already there",
				      tnames[t], s->rows, s->sent, s->batches,
				      s->batches == 1 ? "" : "es", s->present);
			if (s->unsent)
				hmb_ob_printf(&ob, ", %" PRIu64 " NOT EXPORTED",
					      s->unsent);
			hmb_ob_puts(&ob, s->verified ? "; store verified\n" :
				    "\n");
		}
		hmb_ob_printf(&ob, "  retries    %10" PRIu64 "\n", e->x.retried);
	}
	hmb_ob_close(&ob);
}

/* ------------------------------------------------------------- command */

static const struct option export_opts[] = {
	{ "to", required_argument, NULL, 't' },
	{ "hostname", required_argument, NULL, 'H' },
	{ "ring", required_argument, NULL, 'r' },
	{ "day", required_argument, NULL, 'D' },
	{ "trace-id", required_argument, NULL, 'I' },
	{ "database", required_argument, NULL, 'B' },
	{ "batch-rows", required_argument, NULL, 'R' },
	{ "batch-bytes", required_argument, NULL, 'Y' },
	{ "retries", required_argument, NULL, 'T' },
	{ "backoff-ms", required_argument, NULL, 'O' },
	{ "timeout", required_argument, NULL, 'S' },
	{ "format", required_argument, NULL, 'f' },
	{ "json", no_argument, NULL, 'j' },
	{ "quiet", no_argument, NULL, 'q' },
	{ "help", no_argument, NULL, 'h' },
	{ "host", required_argument, NULL, 'o' },
	{ "ctrl", required_argument, NULL, 'c' },
	{ "dict", required_argument, NULL, 'd' },
	{ "serial", required_argument, NULL, 's' },
	{ "model", required_argument, NULL, 'm' },
	{ "fw-rev", required_argument, NULL, 'w' },
	{ "export-credentials", required_argument, NULL, 'C' },
	{ "pel", required_argument, NULL, 'P' },
	INPUT_LONGOPTS,
	{ NULL, 0, NULL, 0 }
};

struct export_args {
	struct input_opts iopts;
	const char *to, *url, *file, *day, *trace_id;
	const char *host, *dict;
	long ctrl;
	struct hmb_ch_opts copts;
	bool json;
};

static int parse_args(int argc, char **argv, struct exporter *e,
		      struct export_args *a)
{
	uint64_t v;
	int opt;

	optind = 1;
	while ((opt = getopt_long(argc, argv, ":f:jqh", export_opts, NULL)) != -1) {
		switch (opt) {
		case 't': a->to = optarg; break;
		case 'H': e->host = optarg; break;
		case 'r': e->ring = optarg; break;
		case 'D': a->day = optarg; break;
		case 'I': a->trace_id = optarg; break;
		case 'B': e->x.database = optarg; break;
		case 'R':
			if (parse_count("batch-rows", optarg, 1, 1000000, &v))
				return EXIT_USAGE;
			e->x.batch_rows = v;
			break;
		case 'Y':
			if (parse_count("batch-bytes", optarg, 4096, 1u << 30, &v))
				return EXIT_USAGE;
			e->x.batch_bytes = (size_t)v;
			break;
		case 'T':
			if (parse_count("retries", optarg, 0, 1000, &v))
				return EXIT_USAGE;
			e->x.retries = (unsigned int)v;
			break;
		case 'O':
			if (parse_count("backoff-ms", optarg, 1, 60000, &v))
				return EXIT_USAGE;
			e->x.backoff_ms = (unsigned int)v;
			break;
		case 'S':
			if (parse_count("timeout", optarg, 1, 86400, &v))
				return EXIT_USAGE;
			a->copts.timeout_s = (long)v;
			break;
		case 'f':
		case 'j':
			if (format_opt(opt, optarg, &a->json))
				return EXIT_USAGE;
			break;
		case 'q': e->x.quiet = true; break;
		case 'o': a->host = optarg; break;
		case 'c':
			if (parse_count("ctrl", optarg, 0, 0x7fffffff, &v))
				return EXIT_USAGE;
			a->ctrl = (long)v;
			break;
		case 'd': a->dict = optarg; break;
		case 's': e->serial = optarg; break;
		case 'm': e->model = optarg; break;
		case 'w': e->fw_rev = optarg; break;
		case 'C': a->copts.credentials = optarg; break;
		case 'P': e->pel_path = optarg; break;
		case 'h':
			usage_export(stdout);
			exit(0);
		default:
			if (input_opt_or_usage(&a->iopts, opt, optarg, argv))
				return EXIT_USAGE;
		}
	}
	if (!a->to) {
		usagef("--to clickhouse is required");
		return EXIT_USAGE;
	}
	if (strcmp(a->to, "clickhouse")) {
		usagef("--to: unknown store '%s' (expected clickhouse)", a->to);
		return EXIT_USAGE;
	}
	if (argc - optind != 2) {
		usagef("expected URL and FILE");
		return EXIT_USAGE;
	}
	a->url = argv[optind];
	a->file = argv[optind + 1];
	if (a->host && !strcmp(a->file, "-")) {
		usagef("--host needs FILE to be a file (the join reads it again), not stdin");
		return EXIT_USAGE;
	}
	if (!a->host && (a->ctrl >= 0 || a->dict || e->serial || e->model ||
			 e->fw_rev)) {
		usagef("--ctrl, --dict, --serial, --model and --fw-rev go with --host");
		return EXIT_USAGE;
	}
	e->cmds = a->host != NULL;
	if ((e->serial && !name_ok("--serial", e->serial)) ||
	    (e->model && !name_ok("--model", e->model)) ||
	    (e->fw_rev && !name_ok("--fw-rev", e->fw_rev)))
		return EXIT_USAGE;
	if (a->day && parse_day(a->day, &e->day)) {
		usagef("--day: '%s' is not a date YYYY-MM-DD from 1970 to 2149", a->day);
		return EXIT_USAGE;
	}
	if (a->trace_id && parse_u64(a->trace_id, &e->x.trace_id)) {
		usagef("--trace-id: '%s' is not a number", a->trace_id);
		return EXIT_USAGE;
	}
	if (!name_ok("--database", e->x.database))
		return EXIT_USAGE;
	for (const char *p = e->x.database; *p; p++)
		if (!(*p == '_' || (*p >= '0' && *p <= '9') ||
		      (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z'))) {
			usagef("--database: '%s' is not a plain identifier", e->x.database);
			return EXIT_USAGE;
		}
	return 0;
}

/* Everything that needs the input open: names, day, identity.  0 or 1. */
static int resolve_identity(struct exporter *e, struct export_args *a,
			    char *hostbuf, size_t hostcap, char *ringbuf,
			    size_t ringcap)
{
	char qh[2 * NAME_MAX_LEN + 8];
	bool have;

	if (!e->host) {
		if (gethostname(hostbuf, hostcap - 1)) {
			errorf("export: cannot read this host's name: %s (give --hostname)",
			       strerror(errno));
			return EXIT_BADINPUT;
		}
		hostbuf[hostcap - 1] = 0;
		e->host = hostbuf;
	}
	if (!e->ring) {
		const char *src = e->in->sidecar.source, *slash = strrchr(src, '/');

		snprintf(ringbuf, ringcap, "%s",
			 e->in->have_sidecar && src[0] ? (slash ? slash + 1 : src) :
			 "unknown");
		e->ring = ringbuf;
	}
	if (!name_ok("--hostname", e->host) || !name_ok("--ring", e->ring))
		return EXIT_USAGE;
	if (!a->day) {
		if (!e->in->have_sidecar) {
			usagef("%s: no sidecar to date the trace: give --day YYYY-MM-DD (the UTC date it was taken)",
			       e->in->name);
			return EXIT_USAGE;
		}
		e->day = (uint16_t)(e->in->sidecar.realtime_ns / NS_PER_DAY);
	}
	format_day(e->day, e->day_str, sizeof(e->day_str));
	if (!a->trace_id) {
		if (trace_identity(e, a->file, &have))
			return EXIT_BADINPUT;
		if (!have) {
			usagef("stdin without a sidecar: give --trace-id N (the export's identity, for re-runs)");
			return EXIT_USAGE;
		}
	}
	if (sql_quote(qh, sizeof(qh), e->host))
		return EXIT_USAGE;
	snprintf(e->where, sizeof(e->where),
		 "day = toDate('%s') AND host = '%s' AND trace_id = %" PRIu64,
		 e->day_str, qh, e->x.trace_id);
	return 0;
}

/* Stream the input into the sinks.  Returns 0 or EXIT_BADINPUT. */
static int stream(struct exporter *e)
{
	struct hmb_error err = { 0 };
	struct hmb_record rec;
	uint64_t bad_bytes = 0;
	char bad_msg[HMB_ERRMSG_LEN + 64] = "";
	int rc;

	while ((rc = input_next(e->in, &rec, &err)) > 0)
		row_record(e, &rec);
	if (rc < 0) {
		struct stat st;

		input_report(e->in, &err);
		if (fstat(e->in->fd, &st) == 0 && S_ISREG(st.st_mode) &&
		    (uint64_t)st.st_size > err.offset)
			bad_bytes = (uint64_t)st.st_size - err.offset;
		else
			bad_bytes = 1;	/* a pipe: at least the bad byte */
		snprintf(bad_msg, sizeof(bad_msg), "%s",
			 err.msg[0] ? err.msg : hmb_strerror(err.code));
	}
	row_counters(e, bad_bytes, rc < 0 ? bad_msg : NULL);
	row_clock(e);
	return rc < 0 ? EXIT_BADINPUT : 0;
}

static void on_retry(void *ctx, const char *msg)
{
	(void)ctx;
	errorf("%s", msg);
}

int cmd_export(int argc, char **argv)
{
	struct exporter e = { 0 };
	struct export_args a = { 0 };
	struct input in;
	char hostbuf[NAME_MAX_LEN + 1], ringbuf[NAME_MAX_LEN + 1];
	int rc, t, in_rc;
	bool sink_err = false;

	e.x.database = "hmb";
	e.x.batch_rows = 131072;
	e.x.batch_bytes = 16u << 20;
	e.x.retries = 10;
	e.x.backoff_ms = 100;
	e.x.on_retry = on_retry;
	e.serial = e.model = e.fw_rev = NULL;
	a.ctrl = -1;
	a.iopts.max_gaps = 0;
	rc = parse_args(argc, argv, &e, &a);
	if (rc)
		return rc;
	if (!e.serial)
		e.serial = "";
	if (!e.model)
		e.model = "";
	if (!e.fw_rev)
		e.fw_rev = "";
	if (hmb_ch_open(&e.x.conn, a.url, &a.copts, e.x.err)) {
		usagef("%s", e.x.err);
		return EXIT_USAGE;
	}
	if (input_open(&in, a.file, &a.iopts)) {
		hmb_ch_close(e.x.conn);
		return EXIT_BADINPUT;
	}
	e.in = &in;
	in.gap_hook = on_gap;
	in.gap_hook_ctx = &e;
	rc = resolve_identity(&e, &a, hostbuf, sizeof(hostbuf), ringbuf,
			      sizeof(ringbuf));
	if (rc)
		goto out;
	if (e.pel_path && pelh_load(&e.pel, e.pel_path)) {
		e.pel_path = NULL;
		rc = EXIT_BADINPUT;
		goto out;
	}
	e.x.where = e.where;
	e.id = (struct hmb_ch_ident){
		.day = e.day, .host = e.host, .trace_id = e.x.trace_id,
		.serial = e.serial, .model = e.model, .fw_rev = e.fw_rev,
	};
	for (t = 0; t < T_COUNT; t++) {
		static const char *const cols[T_COUNT] = { hmb_ch_fw_records_cols,
							   hmb_ch_losses_cols,
							   hmb_ch_clock_cols,
							   hmb_ch_commands_cols,
							   pel_events_cols };
		static const char *const ids[T_COUNT] = { "rec_off", "loss_id",
							  "clk_id", "cmd_id",
							  "pel_id" };

		if (!table_on(&e, t))
			continue;
		/* A failure is reported at the end, with every row counted. */
		if (hmb_ch_sink_open(&e.sink[t], &e.x, tnames[t], cols[t], ids[t]) &&
		    !e.sink[t].buf) {
			errorf("export: %s", e.x.err);
			rc = EXIT_BADINPUT;
			goto out;
		}
	}
	e.open = true;
	in_rc = stream(&e);
	if (!in_rc && e.cmds) {
		rc = export_commands(&e, a.file, a.host, a.dict, a.ctrl);
		if (rc == EXIT_USAGE) {
			summary(&e, a.file, a.json, rc);
			goto out;
		}
		in_rc = rc;
	}
	if (!in_rc && e.pel_path)
		export_pel(&e);
	for (t = 0; t < T_COUNT; t++) {
		if (!table_on(&e, t))
			continue;
		if (!e.sink[t].failed && hmb_ch_sink_finish(&e.sink[t]))
			sink_err = true;
		sink_err |= e.sink[t].failed;
	}
	if (sink_err)
		errorf("export: %s", e.x.err);
	summary(&e, a.file, a.json, in_rc);
	rc = in_rc || sink_err ? EXIT_BADINPUT : 0;
out:
	for (t = 0; t < T_COUNT; t++)
		hmb_ch_sink_free(&e.sink[t]);
	if (e.pel_path)
		pelh_free(&e.pel);
	input_close(&in);
	hmb_ch_close(e.x.conn);
	return rc;
}
