// SPDX-License-Identifier: Apache-2.0
/*
 * convert --to ctf: a CTF 1.8 trace directory that babeltrace2 and Trace
 * Compass read: "metadata" (TSDL) and one stream file per firmware CPU.
 *
 * Why this shape:
 *  - one stream per CPU, because a CTF stream's timestamps must not go
 *    backwards and records of different firmware cores interleave with
 *    small disorder; within one CPU the firmware clock is monotonic.  If a
 *    CPU's clock does go backwards anyway, a new stream instance is opened
 *    for it (counted, never reordered or clamped);
 *  - one event class per dictionary event, its payload fields typed as the
 *    dictionary says, followed by the record header fields and the raw
 *    payload bytes, so nothing of a record is lost; records of opcodes the
 *    dictionary does not know (or too short for their fields) become
 *    "hmb_raw" events with the same header fields and raw payload;
 *  - timestamps are the record's ts_ns on a clock "fw" declared in the
 *    metadata (1 GHz, the firmware's monotonic clock: not host time, D10);
 *  - every sequence gap closes the packet of the stream that continues
 *    after it and raises events_discarded in the next packet's context, so
 *    babeltrace2 itself reports "discarded N events between ... and ...".
 *
 * Packets are built in memory (at most PKT_MAX bytes plus one event per
 * stream) and written whole; memory is bounded by the number of streams.
 */
#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "analyze.h"
#include "formats.h"
#include "fwmodel.h"

#define CTF_MAGIC	0xC1FC1FC1u
#define PKT_MAX		(64u << 10)
#define MAX_STREAMS	1024
#define HDR_BYTES	32	/* packet header: magic, uuid, stream_id, instance */
#define CTX_BYTES	52	/* packet context, see metadata */
/* Largest event: header + record fields + dictionary fields + payload. */
#define EV_MAX		(10 + 10 + 8 * HMB_DICT_MAX_FIELDS + HMB_RECORD_MAX_PAYLOAD)

struct cstream {
	int fd;
	uint8_t cpu;
	uint32_t instance;
	uint64_t pkt_seq;
	uint64_t discarded;	/* cumulative, as CTF wants it */
	uint64_t ts_begin, ts_end, last_ts;
	bool have_ts;
	uint8_t *buf;
	size_t len;		/* 0: no packet open */
	char path[64];
};

struct ctfw {
	const char *dir;
	int dirfd;
	struct hmb_dict *dict;
	uint8_t uuid[16];
	struct cstream *st[MAX_STREAMS];
	unsigned int nst;
	struct cstream *cur[256];	/* current stream of each CPU */
	uint64_t events, raw_events, short_events, backwards;
	uint64_t pending_lost;		/* lost before the next record */
	uint64_t lost_ts_before;	/* ts of the record before that gap */
	uint16_t raw_id;		/* event id of hmb_raw */
};

static void put_le(uint8_t *p, uint64_t v, unsigned int n)
{
	for (unsigned int i = 0; i < n; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static int write_all(int fd, const uint8_t *p, size_t n)
{
	while (n) {
		ssize_t w = write(fd, p, n);

		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

static void pkt_begin(struct ctfw *c, struct cstream *s, uint64_t ts)
{
	uint8_t *p = s->buf;

	put_le(p, CTF_MAGIC, 4);
	memcpy(p + 4, c->uuid, 16);
	put_le(p + 20, 0, 4);			/* stream_id */
	put_le(p + 24, s->instance, 8);	/* stream_instance_id */
	memset(p + HDR_BYTES, 0, CTX_BYTES);	/* patched at the end */
	s->len = HDR_BYTES + CTX_BYTES;
	s->ts_begin = s->ts_end = ts;
}

static int pkt_end(struct ctfw *c, struct cstream *s)
{
	uint8_t *p = s->buf + HDR_BYTES;

	if (!s->len)
		return 0;
	put_le(p, s->ts_begin, 8);
	put_le(p + 8, s->ts_end, 8);
	put_le(p + 16, (uint64_t)s->len * 8, 8);	/* content_size */
	put_le(p + 24, (uint64_t)s->len * 8, 8);	/* packet_size */
	put_le(p + 32, s->pkt_seq++, 8);
	put_le(p + 40, s->discarded, 8);
	put_le(p + 48, s->cpu, 4);
	if (write_all(s->fd, s->buf, s->len)) {
		errorf("%s/%s: write error: %s", c->dir, s->path,
		       strerror(errno));
		return -1;
	}
	s->len = 0;
	return 0;
}

static struct cstream *stream_new(struct ctfw *c, uint8_t cpu)
{
	struct cstream *s;
	uint32_t inst = 0;

	if (c->nst == MAX_STREAMS) {
		errorf("%s: more than %d CTF streams needed (the firmware clock went backwards too often)",
		       c->dir, MAX_STREAMS);
		return NULL;
	}
	if (c->cur[cpu])
		inst = c->cur[cpu]->instance + 256;
	else
		inst = cpu;
	s = calloc(1, sizeof(*s));
	if (s)
		s->buf = malloc(PKT_MAX + EV_MAX);
	if (!s || !s->buf) {
		if (s)
			free(s);
		errorf("out of memory");
		return NULL;
	}
	s->cpu = cpu;
	s->instance = inst;
	if (inst < 256)
		snprintf(s->path, sizeof(s->path), "cpu%u", cpu);
	else
		snprintf(s->path, sizeof(s->path), "cpu%u_%u", cpu, inst / 256);
	s->fd = openat(c->dirfd, s->path, O_WRONLY | O_CREAT | O_TRUNC |
		       O_CLOEXEC, 0644);
	if (s->fd < 0) {
		errorf("%s/%s: cannot create: %s", c->dir, s->path,
		       strerror(errno));
		free(s->buf);
		free(s);
		return NULL;
	}
	c->st[c->nst++] = s;
	c->cur[cpu] = s;
	return s;
}

/* CTF 1.8 reserved words: a field named so gets a leading underscore,
 * which readers strip again when they show it. */
static bool tsdl_keyword(const char *s)
{
	static const char *const kw[] = {
		"align", "callsite", "const", "char", "clock", "double",
		"enum", "env", "event", "floating_point", "float", "integer",
		"int", "long", "short", "signed", "stream", "string", "struct",
		"trace", "typealias", "typedef", "unsigned", "variant", "void",
		"_Bool", "_Complex", "_Imaginary",
	};

	for (size_t i = 0; i < sizeof(kw) / sizeof(kw[0]); i++)
		if (strcmp(s, kw[i]) == 0)
			return true;
	return false;
}

/* Record header fields every event carries. */
static const char *const hdr_fields[] = {
	"seq", "opcode", "cpu", "flags", "payload_len", "payload",
};

static void field_name(const char *name, char *buf, size_t len)
{
	for (size_t i = 0; i < sizeof(hdr_fields) / sizeof(hdr_fields[0]); i++)
		if (strcmp(name, hdr_fields[i]) == 0) {
			snprintf(buf, len, "f_%s", name);
			return;
		}
	snprintf(buf, len, "%s%s", tsdl_keyword(name) ? "_" : "", name);
}

static int write_metadata(struct ctfw *c, const struct input *in)
{
	static const char *const tname[] = {
		"uint8_t", "uint16_t", "uint32_t", "uint64_t",
		"int8_t", "int16_t", "int32_t", "int64_t",
	};
	char uuid[40], fname[HMB_DICT_NAME_LEN + 4];
	struct outbuf ob;
	size_t n = hmb_dict_count(c->dict);
	int fd, rc;

	fd = openat(c->dirfd, "metadata", O_WRONLY | O_CREAT | O_TRUNC |
		    O_CLOEXEC, 0644);
	if (fd < 0) {
		errorf("%s/metadata: cannot create: %s", c->dir,
		       strerror(errno));
		return -1;
	}
	if (ob_open(&ob, fd, "metadata", 1 << 16)) {
		close(fd);
		errorf("out of memory");
		return -1;
	}
	snprintf(uuid, sizeof(uuid),
		 "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
		 c->uuid[0], c->uuid[1], c->uuid[2], c->uuid[3], c->uuid[4],
		 c->uuid[5], c->uuid[6], c->uuid[7], c->uuid[8], c->uuid[9],
		 c->uuid[10], c->uuid[11], c->uuid[12], c->uuid[13],
		 c->uuid[14], c->uuid[15]);
	ob_puts(&ob,
"/* CTF 1.8 */\n"
"/*\n"
" * nvme-hmb-trace firmware records converted by " PROG " convert --to ctf.\n"
" * One stream per firmware CPU; event classes from the event dictionary.\n"
" */\n"
"typealias integer { size = 8; align = 8; signed = false; } := uint8_t;\n"
"typealias integer { size = 16; align = 8; signed = false; } := uint16_t;\n"
"typealias integer { size = 32; align = 8; signed = false; } := uint32_t;\n"
"typealias integer { size = 64; align = 8; signed = false; } := uint64_t;\n"
"typealias integer { size = 8; align = 8; signed = true; } := int8_t;\n"
"typealias integer { size = 16; align = 8; signed = true; } := int16_t;\n"
"typealias integer { size = 32; align = 8; signed = true; } := int32_t;\n"
"typealias integer { size = 64; align = 8; signed = true; } := int64_t;\n"
"\n"
"trace {\n"
"\tmajor = 1;\n"
"\tminor = 8;\n");
	ob_printf(&ob, "\tuuid = \"%s\";\n", uuid);
	ob_puts(&ob,
"\tbyte_order = le;\n"
"\tpacket.header := struct {\n"
"\t\tuint32_t magic;\n"
"\t\tuint8_t uuid[16];\n"
"\t\tuint32_t stream_id;\n"
"\t\tuint64_t stream_instance_id;\n"
"\t};\n"
"};\n"
"\n"
"env {\n"
"\tdomain = \"nvme-hmb-trace\";\n"
"\ttracer_name = \"nvme-hmb-trace\";\n"
"\ttracer_major = 1;\n"
"\ttracer_minor = 0;\n");
	ob_lit(&ob, "\tinput = \"");
	for (const char *s = in->name; *s; s++) {
		ob_reserve(&ob, 4);
		if (*s == '"' || *s == '\\')
			ob_putc(&ob, '\\');
		if ((unsigned char)*s >= 0x20)
			ob_putc(&ob, *s);
	}
	ob_lit(&ob, "\";\n");
	if (in->have_sidecar)
		ob_printf(&ob, "\thost_monotonic_ns_at_open = %llu;\n"
			  "\thost_realtime_ns_at_open = %llu;\n",
			  (unsigned long long)in->sidecar.monotonic_ns,
			  (unsigned long long)in->sidecar.realtime_ns);
	ob_puts(&ob,
"};\n"
"\n"
"clock {\n"
"\tname = fw;\n");
	ob_printf(&ob, "\tuuid = \"%s\";\n", uuid);
	ob_puts(&ob,
"\tdescription = \"SSD firmware monotonic clock (record ts_ns), not host time\";\n"
"\tfreq = 1000000000;\n"
"\tprecision = 0;\n"
"\toffset_s = 0;\n"
"\toffset = 0;\n"
"\tabsolute = false;\n"
"};\n"
"\n"
"typealias integer { size = 64; align = 8; signed = false; map = clock.fw.value; } := fw_clock_t;\n"
"\n"
"stream {\n"
"\tid = 0;\n"
"\tpacket.context := struct {\n"
"\t\tfw_clock_t timestamp_begin;\n"
"\t\tfw_clock_t timestamp_end;\n"
"\t\tuint64_t content_size;\n"
"\t\tuint64_t packet_size;\n"
"\t\tuint64_t packet_seq_num;\n"
"\t\tuint64_t events_discarded;\n"
"\t\tuint32_t cpu_id;\n"
"\t};\n"
"\tevent.header := struct {\n"
"\t\tuint16_t id;\n"
"\t\tfw_clock_t timestamp;\n"
"\t};\n"
"};\n");
	for (size_t i = 0; i <= n; i++) {
		const struct hmb_dict_event *ev = i < n ?
			hmb_dict_event_at(c->dict, i) : NULL;

		ob_reserve(&ob, 1024);
		ob_printf(&ob, "\nevent {\n\tname = \"%s\";\n\tid = %zu;\n\tstream_id = 0;\n",
			  ev ? ev->name : "hmb_raw", i);
		if (ev)
			ob_printf(&ob, "\tmodel.emf.uri = \"opcode:0x%04x\";\n",
				  ev->opcode);
		ob_lit(&ob, "\tfields := struct {\n"
		       "\t\tuint32_t seq;\n\t\tuint16_t opcode;\n"
		       "\t\tuint8_t cpu;\n\t\tuint8_t flags;\n");
		for (unsigned int k = 0; ev && k < ev->nfields; k++) {
			field_name(ev->fields[k].name, fname, sizeof(fname));
			ob_reserve(&ob, 128);
			ob_printf(&ob, "\t\t%s %s;\n",
				  tname[ev->fields[k].type], fname);
		}
		ob_lit(&ob, "\t\tuint16_t payload_len;\n"
		       "\t\tuint8_t payload[payload_len];\n\t};\n};\n");
	}
	rc = ob_close(&ob);
	if (rc || close(fd)) {
		errorf("%s/metadata: write error: %s", c->dir,
		       strerror(rc ? rc : errno));
		return -1;
	}
	return 0;
}

static int add_event(struct ctfw *c, const struct hmb_record *rec)
{
	const struct hmb_record_hdr *h = &rec->hdr;
	const struct hmb_dict_event *ev = hmb_dict_lookup(c->dict, h->opcode);
	struct cstream *s = c->cur[h->cpu];
	uint16_t id = c->raw_id;
	uint8_t *p;

	if (ev && h->payload_len < ev->min_len) {
		c->short_events++;
		ev = NULL;
	}
	if (ev)
		id = (uint16_t)(ev - hmb_dict_event_at(c->dict, 0));
	else
		c->raw_events++;
	if (s && s->have_ts && h->ts_ns < s->last_ts) {
		/* Never reorder or clamp: continue in a new stream. */
		c->backwards++;
		if (pkt_end(c, s))
			return -1;
		s = NULL;
	}
	if (!s) {
		s = stream_new(c, h->cpu);
		if (!s)
			return -1;
	}
	if (c->pending_lost) {
		/*
		 * The gap is reported by the stream the trace continues in: an
		 * empty packet from that stream's last event (or the record
		 * before the gap) to the record after it carries the raised
		 * count, so readers place the loss between those two times.
		 */
		if (pkt_end(c, s))
			return -1;
		if (!s->pkt_seq) {
			/* A count needs a previous packet to be relative to. */
			pkt_begin(c, s, c->lost_ts_before);
			if (pkt_end(c, s))
				return -1;
		}
		s->discarded += c->pending_lost;
		pkt_begin(c, s, s->have_ts ? s->last_ts : c->lost_ts_before);
		s->ts_end = h->ts_ns > s->ts_begin ? h->ts_ns : s->ts_begin;
		if (pkt_end(c, s))
			return -1;
		c->pending_lost = 0;
	}
	if (s->len + EV_MAX > PKT_MAX && pkt_end(c, s))
		return -1;
	if (!s->len)
		pkt_begin(c, s, h->ts_ns);
	p = s->buf + s->len;
	put_le(p, id, 2);
	put_le(p + 2, h->ts_ns, 8);
	put_le(p + 10, h->seq, 4);
	put_le(p + 14, h->opcode, 2);
	p[16] = h->cpu;
	p[17] = h->flags;
	p += 18;
	for (unsigned int k = 0; ev && k < ev->nfields; k++) {
		const struct hmb_dict_field *f = &ev->fields[k];

		/* min_len covers every field: the raw bytes, little-endian */
		memcpy(p, rec->payload + f->offset, f->size);
		p += f->size;
	}
	put_le(p, h->payload_len, 2);
	memcpy(p + 2, rec->payload, h->payload_len);
	p += 2 + h->payload_len;
	s->len = (size_t)(p - s->buf);
	s->ts_end = s->last_ts = h->ts_ns;
	s->have_ts = true;
	c->events++;
	return 0;
}

static int write_ctf(struct ctfw *c, struct input *in)
{
	struct hmb_error err = { 0 };
	struct hmb_record rec;
	uint64_t gaps_seen = 0;
	int rc, ret = 0;

	bool out_err = false;

	while ((rc = input_next(in, &rec, &err)) > 0) {
		if (in->acct->gaps != gaps_seen) {
			gaps_seen = in->acct->gaps;
			if (!c->pending_lost)
				c->lost_ts_before = in->last_gap.ts_before;
			c->pending_lost += in->last_gap.count;
		}
		if (add_event(c, &rec)) {
			out_err = true;
			break;
		}
	}
	/*
	 * Like the other converters, a bad record keeps what came before it:
	 * the trace is completed (packets, metadata) for the good prefix and
	 * the error line follows.  An output error leaves no metadata.
	 */
	for (unsigned int i = 0; i < c->nst; i++) {
		if (!out_err && pkt_end(c, c->st[i]))
			out_err = true;
		if (close(c->st[i]->fd) && !out_err) {
			errorf("%s/%s: close: %s", c->dir, c->st[i]->path,
			       strerror(errno));
			out_err = true;
		}
		free(c->st[i]->buf);
		free(c->st[i]);
	}
	c->nst = 0;
	if (!out_err && write_metadata(c, in))
		out_err = true;
	if (out_err)
		ret = EXIT_BADINPUT;
	if (rc < 0) {
		input_report(in, &err);
		ret = EXIT_BADINPUT;
	}
	if (!ret && c->backwards)
		fprintf(stderr, PROG ": %s: note: the firmware clock went backwards %llu times within a CPU; continued in new streams\n",
			in->name, (unsigned long long)c->backwards);
	return ret;
}


/* ------------------------------------------------------------ --raw */

/*
 * --raw: a trace directory whose metadata describes the dump's own bytes,
 * so babeltrace2 reads the dump as it is (DIR/stream is a link to it, not
 * a copy).  The event header is the 32-byte record header (id = opcode,
 * timestamp = ts_ns on clock fw, aligned to 8 bytes), the payload a byte
 * sequence of header.payload_len.  Every record is an event, wrap markers,
 * ignored records and replayed duplicates included (this is the raw view;
 * the converted trace is the decoded one), so every opcode in the dump
 * needs an event class: the dump is scanned first.  One stream, so the
 * timestamps must not go backwards: such a dump is refused.
 */
static int write_raw_metadata(int dirfd, const char *dir,
			      const struct hmb_dict *dict, const uint8_t *ops)
{
	struct outbuf ob;
	int fd, rc;

	fd = openat(dirfd, "metadata", O_WRONLY | O_CREAT | O_TRUNC |
		    O_CLOEXEC, 0644);
	if (fd < 0) {
		errorf("%s/metadata: cannot create: %s", dir, strerror(errno));
		return -1;
	}
	if (ob_open(&ob, fd, "metadata", 1 << 16)) {
		close(fd);
		errorf("out of memory");
		return -1;
	}
	ob_puts(&ob,
"/* CTF 1.8 */\n"
"/*\n"
" * The byte layout of an nvme-hmb-trace v1 dump (docs/format.md), written\n"
" * by " PROG " convert --to ctf --raw: DIR/stream is the dump itself.\n"
" */\n"
"typealias integer { size = 8; align = 8; signed = false; } := uint8_t;\n"
"typealias integer { size = 16; align = 8; signed = false; } := uint16_t;\n"
"typealias integer { size = 32; align = 8; signed = false; } := uint32_t;\n"
"typealias integer { size = 64; align = 8; signed = false; } := uint64_t;\n"
"\n"
"trace {\n"
"\tmajor = 1;\n"
"\tminor = 8;\n"
"\tbyte_order = le;\n"
"};\n"
"\n"
"env {\n"
"\tdomain = \"nvme-hmb-trace\";\n"
"\ttracer_name = \"nvme-hmb-trace\";\n"
"\tlayout = \"v1 dump, raw\";\n"
"};\n"
"\n"
"clock {\n"
"\tname = fw;\n"
"\tdescription = \"SSD firmware monotonic clock (record ts_ns), not host time\";\n"
"\tfreq = 1000000000;\n"
"\tabsolute = false;\n"
"};\n"
"\n"
"typealias integer { size = 64; align = 8; signed = false; map = clock.fw.value; } := fw_clock_t;\n"
"\n"
"stream {\n"
"\tevent.header := struct {\n"
"\t\tuint32_t magic;\n"
"\t\tuint32_t seq;\n"
"\t\tfw_clock_t timestamp;\n"
"\t\tuint16_t id;\n"
"\t\tuint8_t cpu;\n"
"\t\tuint8_t flags;\n"
"\t\tuint16_t payload_len;\n"
"\t\tuint16_t reserved0;\n"
"\t\tuint64_t reserved1;\n"
"\t} align(64);\n"
"};\n");
	for (unsigned int op = 0; op < 65536; op++) {
		const struct hmb_dict_event *ev;

		if (!(ops[op >> 3] & (1u << (op & 7))))
			continue;
		ev = hmb_dict_lookup(dict, (uint16_t)op);
		ob_reserve(&ob, 512);
		if (ev)
			ob_printf(&ob, "\nevent {\n\tname = \"%s\";\n\tid = %u;\n", ev->name, op);
		else
			ob_printf(&ob, "\nevent {\n\tname = \"op_0x%04x\";\n\tid = %u;\n", op, op);
		ob_lit(&ob, "\tfields := struct {\n"
		       "\t\tuint8_t payload[stream.event.header.payload_len];\n"
		       "\t};\n};\n");
	}
	rc = ob_close(&ob);
	if (rc || close(fd)) {
		errorf("%s/metadata: write error: %s", dir, strerror(rc ? rc : errno));
		return -1;
	}
	return 0;
}

static int cmd_ctf_raw(const char *path, const char *dir,
		       const struct hmb_dict *dict)
{
	struct hmb_error err = { 0 };
	struct hmb_reader *r = NULL;
	struct hmb_record rec;
	uint8_t *ops = calloc(65536 / 8, 1);
	uint64_t last = 0, n = 0;
	char abs[PATH_MAX];
	int fd = -1, dirfd = -1, rc = EXIT_BADINPUT, k;

	if (!ops) {
		errorf("out of memory");
		return EXIT_BADINPUT;
	}
	if (strcmp(path, "-") == 0) {
		errorf("convert --raw: the stream is FILE itself; give a file, not -");
		free(ops);
		return EXIT_USAGE;
	}
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		errorf("%s: cannot open: %s", path, strerror(errno));
		goto out;
	}
	if (hmb_reader_open(&r, fd, path, &err)) {
		errorf("%s", err.msg);
		goto out;
	}
	if (hmb_reader_dialect(r) != HMB_DIALECT_DUMP) {
		errorf("%s: a ring image, not a dump: --raw describes dumps; use --to ctf without --raw",
		       path);
		goto out;
	}
	while ((k = hmb_reader_next(r, &rec, &err)) > 0) {
		if (n && rec.hdr.ts_ns < last) {
			errorf("%s: offset %llu: ts_ns goes backwards (%llu after %llu): one CTF stream cannot hold that; use --to ctf without --raw",
			       path, (unsigned long long)rec.offset,
			       (unsigned long long)rec.hdr.ts_ns,
			       (unsigned long long)last);
			goto out;
		}
		last = rec.hdr.ts_ns;
		ops[rec.hdr.opcode >> 3] |= (uint8_t)(1u << (rec.hdr.opcode & 7));
		n++;
	}
	if (k < 0) {
		errorf("%s", err.msg);
		goto out;
	}
	if (!realpath(path, abs)) {
		errorf("%s: %s", path, strerror(errno));
		goto out;
	}
	if (mkdir(dir, 0755) && errno != EEXIST) {
		errorf("%s: cannot create directory: %s", dir, strerror(errno));
		goto out;
	}
	dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dirfd < 0) {
		errorf("%s: cannot open directory: %s", dir, strerror(errno));
		goto out;
	}
	if (faccessat(dirfd, "metadata", F_OK, 0) == 0) {
		errorf("%s: already holds a trace (metadata); remove it or give a new directory",
		       dir);
		goto out;
	}
	/* the dump itself: a hard link if we can, else a symbolic link */
	if (linkat(AT_FDCWD, abs, dirfd, "stream", 0) &&
	    symlinkat(abs, dirfd, "stream")) {
		errorf("%s/stream: cannot link to %s: %s", dir, abs,
		       strerror(errno));
		goto out;
	}
	if (write_raw_metadata(dirfd, dir, dict, ops))
		goto out;
	rc = 0;
out:
	if (r)
		hmb_reader_close(r);
	if (fd >= 0)
		close(fd);
	if (dirfd >= 0)
		close(dirfd);
	free(ops);
	return rc;
}

static const struct option ctf_opts[] = {
	{ "to", required_argument, NULL, 't' },
	{ "dict", required_argument, NULL, 'D' },
	{ "raw", no_argument, NULL, 'R' },
	{ "help", no_argument, NULL, 'h' },
	INPUT_LONGOPTS,
	{ NULL, 0, NULL, 0 }
};

int cmd_ctf(int argc, char **argv)
{
	struct input_opts iopts = { .max_gaps = 0 };
	const char *dict_path = NULL;
	bool raw = false;
	struct ctfw *c;
	struct input in;
	int opt, rc;

	optind = 1;
	while ((opt = getopt_long(argc, argv, "t:h", ctf_opts, NULL)) != -1) {
		switch (opt) {
		case 't':
			break;
		case 'D':
			dict_path = optarg;
			break;
		case 'R':
			raw = true;
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
		errorf("convert: expected FILE and DIR (try '" PROG " convert --help')");
		return EXIT_USAGE;
	}
	c = calloc(1, sizeof(*c));
	if (!c) {
		errorf("out of memory");
		return EXIT_BADINPUT;
	}
	c->dir = argv[optind + 1];
	c->dirfd = -1;
	if (dict_open(dict_path, &c->dict)) {
		free(c);
		return EXIT_BADINPUT;
	}
	if (raw) {
		rc = cmd_ctf_raw(argv[optind], c->dir, c->dict);
		hmb_dict_free(c->dict);
		free(c);
		return rc;
	}
	c->raw_id = (uint16_t)hmb_dict_count(c->dict);
	if (getrandom(c->uuid, sizeof(c->uuid), 0) != sizeof(c->uuid)) {
		errorf("getrandom: %s", strerror(errno));
		rc = EXIT_BADINPUT;
		goto out;
	}
	c->uuid[6] = (c->uuid[6] & 0x0f) | 0x40;	/* version 4 */
	c->uuid[8] = (c->uuid[8] & 0x3f) | 0x80;
	if (input_open(&in, argv[optind], &iopts)) {
		rc = EXIT_BADINPUT;
		goto out;
	}
	if (mkdir(c->dir, 0755) && errno != EEXIST) {
		errorf("%s: cannot create directory: %s", c->dir,
		       strerror(errno));
		rc = EXIT_BADINPUT;
		goto out_in;
	}
	c->dirfd = open(c->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (c->dirfd < 0) {
		errorf("%s: cannot open directory: %s", c->dir,
		       strerror(errno));
		rc = EXIT_BADINPUT;
		goto out_in;
	}
	if (faccessat(c->dirfd, "metadata", F_OK, 0) == 0) {
		errorf("%s: already holds a trace (metadata); remove it or give a new directory",
		       c->dir);
		rc = EXIT_BADINPUT;
		goto out_in;
	}
	rc = write_ctf(c, &in);
out_in:
	input_close(&in);
out:
	if (c->dirfd >= 0)
		close(c->dirfd);
	hmb_dict_free(c->dict);
	free(c);
	return rc;
}
