// SPDX-License-Identifier: Apache-2.0
/*
 * convert --to ctf: a CTF 1.8 trace directory that babeltrace2 (2.0) and
 * Trace Compass read with every record intact.
 *
 * Layout (all integers little-endian, byte-aligned):
 *   packet header   magic 0xc1fc1fc1, stream_id 0
 *   packet context  timestamp_begin, timestamp_end, content_size,
 *                   packet_size (bits), events_discarded, packet_seq_num
 *   event header    id (u32), timestamp (u64 on the firmware clock = ts_ns)
 *   event context   seq (u32), cpu (u8), flags (u8)
 *   event payload   the dictionary fields of the event, then payload_len
 *                   and the whole raw payload (so nothing is lost)
 *
 * Event class ids: the opcode for an event of the dictionary whose payload
 * holds all its fields; 0x10000 | opcode for a record decoded raw (an
 * opcode the dictionary lacks, "opcode_0xNNNN", or a payload too short for
 * its fields, "NAME_short").  Raw classes are declared for the opcodes
 * seen, so the metadata is written last.
 *
 * Losses (sequence gaps found by libhmbtrace's accounting) end the current
 * packet; the next packet's events_discarded counter carries them, so
 * babeltrace2 itself reports "discarded N events" between the timestamps
 * around the gap.  A stream's clock values must not go backwards in CTF:
 * when a record's ts_ns is below the previous one (another firmware core,
 * a re-initialised ring) a new stream file starts, and babeltrace2 merges
 * the streams by time.
 *
 * Memory is constant: one packet buffer and a bitmap of raw classes.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "analyze.h"

#define CTF_MAGIC		0xc1fc1fc1u
#define PKT_MAX			(256u * 1024)
#define PKT_HDR_SIZE		8
#define PKT_CTX_SIZE		48
#define EV_MAX			(4 + 8 + 4 + 1 + 1 + HMB_DICT_MAX_FIELDS * 8 + \
				 2 + HMB_RECORD_MAX_PAYLOAD)
#define MAX_STREAMS		4096
#define RAW_CLASS		0x10000u

struct ctf {
	const char *dir;
	int dirfd;
	const struct hmb_dict *dict;
	/* current stream and packet */
	int fd;
	unsigned int stream;	/* index of the stream file */
	uint8_t *pkt;
	size_t len;		/* bytes in pkt, header and context included */
	uint64_t nevents;	/* in the current packet */
	uint64_t ts_begin, ts_last;
	bool have_ts;		/* ts_last valid for the current stream */
	uint64_t pkt_seq;
	uint64_t discarded;	/* cumulative, in the current stream */
	uint64_t lost_base;	/* acct->lost when the stream started */
	bool gap_pkt;		/* the current packet follows a gap */
	uint8_t raw_seen[65536 / 8];
	uint64_t events, packets;
};

static void put_u16(uint8_t *p, uint16_t v)
{
	memcpy(p, &v, 2);
}

static void put_u32(uint8_t *p, uint32_t v)
{
	memcpy(p, &v, 4);
}

static void put_u64(uint8_t *p, uint64_t v)
{
	memcpy(p, &v, 8);
}

static int write_all(int fd, const void *buf, size_t n)
{
	const uint8_t *p = buf;

	while (n) {
		ssize_t w = write(fd, p, n);

		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

static int fail_io(const struct ctf *c, const char *what, int e)
{
	errorf("%s/%s: %s", c->dir, what, strerror(e));
	return EXIT_BADINPUT;
}

static int open_stream(struct ctf *c)
{
	char name[32];

	if (c->stream >= MAX_STREAMS) {
		errorf("%s: more than %d streams: the firmware timestamps go backwards too often for CTF",
		       c->dir, MAX_STREAMS);
		return EXIT_BADINPUT;
	}
	snprintf(name, sizeof(name), "stream_%u", c->stream);
	c->fd = openat(c->dirfd, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC,
		       0644);
	if (c->fd < 0)
		return fail_io(c, name, errno);
	c->have_ts = false;
	c->pkt_seq = 0;
	c->discarded = 0;
	c->len = PKT_HDR_SIZE + PKT_CTX_SIZE;
	c->nevents = 0;
	return 0;
}

/* Write the current packet if it holds events. */
static int flush_packet(struct ctf *c)
{
	uint8_t *p = c->pkt;
	char name[32];
	int rc;

	if (!c->nevents)
		return 0;
	put_u32(p, CTF_MAGIC);
	put_u32(p + 4, 0);			/* stream_id */
	put_u64(p + 8, c->ts_begin);
	put_u64(p + 16, c->ts_last);
	put_u64(p + 24, (uint64_t)c->len * 8);	/* content_size, bits */
	put_u64(p + 32, (uint64_t)c->len * 8);	/* packet_size, bits */
	put_u64(p + 40, c->discarded);
	put_u64(p + 48, c->pkt_seq++);
	rc = write_all(c->fd, p, c->len);
	if (rc) {
		snprintf(name, sizeof(name), "stream_%u", c->stream);
		return fail_io(c, name, -rc);
	}
	c->packets++;
	c->len = PKT_HDR_SIZE + PKT_CTX_SIZE;
	c->nevents = 0;
	return 0;
}

static int close_stream(struct ctf *c)
{
	char name[32];
	int rc = flush_packet(c);

	snprintf(name, sizeof(name), "stream_%u", c->stream);
	if (close(c->fd) && !rc)
		rc = fail_io(c, name, errno);
	c->fd = -1;
	c->stream++;
	return rc;
}

static int add_event(struct ctf *c, struct input *in,
		     const struct hmb_record *rec, uint64_t *gaps_seen)
{
	const struct hmb_record_hdr *h = &rec->hdr;
	const struct hmb_dict_event *ev = hmb_dict_lookup(c->dict, h->opcode);
	uint8_t *p;
	int rc;

	if (c->have_ts && h->ts_ns < c->ts_last) {
		/* A stream's clock must not go back: start another one. */
		rc = close_stream(c);
		if (!rc)
			rc = open_stream(c);
		if (rc)
			return rc;
		c->lost_base = in->acct->lost;
		*gaps_seen = in->acct->gaps;
	}
	if (in->acct->gaps != *gaps_seen) {
		/* A loss: end the packet, the next one carries the count. */
		*gaps_seen = in->acct->gaps;
		rc = flush_packet(c);
		if (rc)
			return rc;
		c->discarded = in->acct->lost - c->lost_base;
		/*
		 * babeltrace2 dates the loss from the previous packet's end to
		 * this packet's end: a packet of just the record after the
		 * gap makes that the two timestamps around it.
		 */
		c->gap_pkt = true;
	}
	if (c->len + EV_MAX > PKT_MAX) {
		rc = flush_packet(c);
		if (rc)
			return rc;
	}
	if (!c->nevents)
		c->ts_begin = h->ts_ns;
	p = c->pkt + c->len;
	if (ev && h->payload_len < ev->min_len)
		ev = NULL;		/* too short for its fields: raw */
	if (!ev)
		c->raw_seen[h->opcode / 8] |= (uint8_t)(1u << (h->opcode % 8));
	put_u32(p, ev ? h->opcode : RAW_CLASS | h->opcode);
	put_u64(p + 4, h->ts_ns);
	put_u32(p + 12, h->seq);
	p[16] = h->cpu;
	p[17] = h->flags;
	p += 18;
	if (ev) {
		for (unsigned int i = 0; i < ev->nfields; i++) {
			const struct hmb_dict_field *f = &ev->fields[i];

			/* Little-endian in the payload and in the stream. */
			memcpy(p, rec->payload + f->offset, f->size);
			p += f->size;
		}
	}
	put_u16(p, h->payload_len);
	memcpy(p + 2, rec->payload, h->payload_len);
	p += 2 + h->payload_len;
	c->len = (size_t)(p - c->pkt);
	c->nevents++;
	c->events++;
	c->ts_last = h->ts_ns;
	c->have_ts = true;
	if (c->gap_pkt) {
		c->gap_pkt = false;
		return flush_packet(c);
	}
	return 0;
}

/* TSDL string literal body. */
static void tsdl_str(struct hmb_outbuf *ob, const char *s)
{
	for (; *s; s++) {
		hmb_ob_reserve(ob, 4);
		if (*s == '"' || *s == '\\')
			hmb_ob_putc(ob, '\\');
		if ((unsigned char)*s >= 0x20)
			hmb_ob_putc(ob, *s);
	}
}

static const char *ctf_type(enum hmb_ftype t)
{
	static const char *const names[] = {
		[HMB_FT_U8] = "uint8_t", [HMB_FT_U16] = "uint16_t",
		[HMB_FT_U32] = "uint32_t", [HMB_FT_U64] = "uint64_t",
		[HMB_FT_S8] = "int8_t", [HMB_FT_S16] = "int16_t",
		[HMB_FT_S32] = "int32_t", [HMB_FT_S64] = "int64_t",
	};

	return names[t];
}

static void raw_fields(struct hmb_outbuf *ob)
{
	hmb_ob_puts(ob, "\t\tuint16_t _payload_len;\n"
		    "\t\tuint8_t _payload[_payload_len];\n");
}

static int write_metadata(struct ctf *c, struct input *in)
{
	struct hmb_outbuf ob;
	int fd, rc;

	fd = openat(c->dirfd, "metadata",
		    O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (fd < 0)
		return fail_io(c, "metadata", errno);
	if (hmb_ob_open(&ob, fd, "metadata", 1u << 16)) {
		close(fd);
		errorf("out of memory");
		return EXIT_BADINPUT;
	}
	hmb_ob_puts(&ob,
"/* CTF 1.8 */\n"
"/*\n"
" * Firmware trace records of nvme-hmb-trace, converted by hmb-trace-analyze.\n"
" * Every event: header (id, timestamp on the firmware clock = ts_ns),\n"
" * context (seq, cpu, flags), the dictionary fields of the event, then\n"
" * the whole raw payload.\n"
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
"\tminor = 8;\n"
"\tbyte_order = le;\n"
"\tpacket.header := struct {\n"
"\t\tuint32_t magic;\n"
"\t\tuint32_t stream_id;\n"
"\t};\n"
"};\n"
"\n"
"env {\n"
"\tdomain = \"nvme-hmb-trace\";\n"
"\ttracer_name = \"hmb-trace-analyze\";\n"
"\tinput = \"");
	tsdl_str(&ob, in->name);
	hmb_ob_puts(&ob, "\";\n");
	if (in->have_sidecar) {
		hmb_ob_puts(&ob, "\tsource = \"");
		tsdl_str(&ob, in->sidecar.source);
		hmb_ob_puts(&ob, "\";\n");
		hmb_ob_printf(&ob, "\thost_realtime_ns_at_open = %llu;\n",
			  (unsigned long long)in->sidecar.realtime_ns);
	}
	hmb_ob_printf(&ob, "\tlost_records = %llu;\n"
		  "\tduplicates_dropped = %llu;\n",
		  (unsigned long long)in->acct->lost,
		  (unsigned long long)in->acct->duplicates);
	hmb_ob_puts(&ob,
"};\n"
"\n"
"clock {\n"
"\tname = fw;\n"
"\tdescription = \"SSD firmware monotonic clock (record ts_ns; not the host clock)\";\n"
"\tfreq = 1000000000;\n"
"\tprecision = 1;\n"
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
"\t\tuint64_t events_discarded;\n"
"\t\tuint64_t packet_seq_num;\n"
"\t};\n"
"\tevent.header := struct {\n"
"\t\tuint32_t id;\n"
"\t\tfw_clock_t timestamp;\n"
"\t};\n"
"\tevent.context := struct {\n"
"\t\tuint32_t _seq;\n"
"\t\tuint8_t _cpu;\n"
"\t\tuint8_t _flags;\n"
"\t};\n"
"};\n");
	for (size_t i = 0; i < hmb_dict_count(c->dict); i++) {
		const struct hmb_dict_event *ev = hmb_dict_event_at(c->dict, i);

		hmb_ob_printf(&ob, "\nevent {\n\tname = \"%s\";\n\tid = %u;\n"
			  "\tstream_id = 0;\n\tfields := struct {\n",
			  ev->name, ev->opcode);
		for (unsigned int k = 0; k < ev->nfields; k++)
			/* A leading '_' keeps names clear of TSDL keywords;
			 * readers strip it. */
			hmb_ob_printf(&ob, "\t\t%s _%s;\n",
				  ctf_type(ev->fields[k].type),
				  ev->fields[k].name);
		raw_fields(&ob);
		hmb_ob_puts(&ob, "\t};\n};\n");
	}
	for (unsigned int op = 0; op < 65536; op++) {
		const struct hmb_dict_event *ev;

		if (!(c->raw_seen[op / 8] & (1u << (op % 8))))
			continue;
		ev = hmb_dict_lookup(c->dict, (uint16_t)op);
		if (ev)
			hmb_ob_printf(&ob, "\nevent {\n\tname = \"%s_short\";\n",
				  ev->name);
		else
			hmb_ob_printf(&ob, "\nevent {\n\tname = \"opcode_0x%04x\";\n",
				  op);
		hmb_ob_printf(&ob, "\tid = %u;\n\tstream_id = 0;\n"
			  "\tfields := struct {\n", RAW_CLASS | op);
		raw_fields(&ob);
		hmb_ob_puts(&ob, "\t};\n};\n");
	}
	rc = hmb_ob_close(&ob);
	if (close(fd) && !rc)
		rc = errno;
	return rc ? fail_io(c, "metadata", rc) : 0;
}

/* The dictionary must not name a field like the raw ones we append. */
static int check_dict(const struct hmb_dict *d)
{
	for (size_t i = 0; i < hmb_dict_count(d); i++) {
		const struct hmb_dict_event *ev = hmb_dict_event_at(d, i);

		for (unsigned int k = 0; k < ev->nfields; k++)
			if (!strcmp(ev->fields[k].name, "payload") ||
			    !strcmp(ev->fields[k].name, "payload_len")) {
				errorf("dictionary event '%s' has a field named '%s', which CTF output reserves for the raw payload",
				       ev->name, ev->fields[k].name);
				return EXIT_BADINPUT;
			}
	}
	return 0;
}

int ctf_convert(struct input *in, const char *dir,
		const struct hmb_dict *dict)
{
	struct hmb_error err = { 0 };
	struct hmb_record rec;
	struct ctf *c;
	uint64_t gaps_seen = 0;
	char outdir[PATH_MAX], tmp[PATH_MAX];
	int rc, in_rc;

	if (check_dict(dict))
		return EXIT_BADINPUT;
	c = calloc(1, sizeof(*c));
	if (!c || !(c->pkt = malloc(PKT_MAX))) {
		free(c);
		errorf("out of memory");
		return EXIT_BADINPUT;
	}
	/*
	 * A new directory, or an empty one, never mixing two traces; written
	 * whole or not at all: a cut trace reads as a complete one of fewer
	 * records.
	 */
	rc = od_create(dir, outdir, tmp, sizeof(tmp));
	if (rc) {
		free(c->pkt);
		free(c);
		return rc;
	}
	c->dir = tmp;
	c->dict = dict;
	c->fd = -1;
	c->dirfd = open(tmp, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (c->dirfd < 0) {
		errorf("%s: cannot open: %s", tmp, strerror(errno));
		rc = EXIT_BADINPUT;
		goto out;
	}
	rc = open_stream(c);
	if (rc)
		goto out;
	while ((in_rc = input_next(in, &rec, &err)) > 0) {
		rc = add_event(c, in, &rec, &gaps_seen);
		if (rc)
			goto out;
	}
	if (in_rc < 0) {
		input_report(in, &err);
		rc = EXIT_BADINPUT;
		goto out;
	}
	rc = close_stream(c);
	if (!rc)
		rc = write_metadata(c, in);
out:
	if (c->fd >= 0)
		close(c->fd);
	if (c->dirfd >= 0)
		close(c->dirfd);
	free(c->pkt);
	free(c);
	return od_finish(dir, outdir, tmp, rc);
}
