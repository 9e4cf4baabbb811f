// SPDX-License-Identifier: Apache-2.0
/*
 * convert --to ctf --raw: CTF 1.8 metadata that describes a dump's own byte
 * layout, with the dump itself as the stream (no conversion).  The
 * converting mode (convert --to ctf) is ctf.c.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "analyze.h"
#include "formats.h"
#include "hmbtrace_fwmodel.h"

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
	struct hmb_outbuf ob;
	int fd, rc;

	fd = openat(dirfd, "metadata", O_WRONLY | O_CREAT | O_TRUNC |
		    O_CLOEXEC, 0644);
	if (fd < 0) {
		errorf("%s/metadata: cannot create: %s", dir, strerror(errno));
		return -1;
	}
	if (hmb_ob_open(&ob, fd, "metadata", 1 << 16)) {
		close(fd);
		errorf("out of memory");
		return -1;
	}
	hmb_ob_puts(&ob,
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
		hmb_ob_reserve(&ob, 512);
		if (ev)
			hmb_ob_printf(&ob, "\nevent {\n\tname = \"%s\";\n\tid = %u;\n", ev->name, op);
		else
			hmb_ob_printf(&ob, "\nevent {\n\tname = \"op_0x%04x\";\n\tid = %u;\n", op, op);
		hmb_ob_lit(&ob, "\tfields := struct {\n"
		       "\t\tuint8_t payload[stream.event.header.payload_len];\n"
		       "\t};\n};\n");
	}
	rc = hmb_ob_close(&ob);
	if (rc || close(fd)) {
		errorf("%s/metadata: write error: %s", dir, strerror(rc ? rc : errno));
		return -1;
	}
	return 0;
}

int ctf_raw_convert(const char *path, const char *dir,
		       const struct hmb_dict *dict)
{
	struct hmb_error err = { 0 };
	struct hmb_reader *r = NULL;
	struct hmb_record rec;
	uint8_t *ops = calloc(65536 / 8, 1);
	uint64_t last = 0, n = 0;
	char abs[PATH_MAX], outdir[PATH_MAX], tmp[PATH_MAX];
	bool made = false;
	int fd = -1, dirfd = -1, rc = EXIT_BADINPUT, k;

	if (!ops) {
		errorf("out of memory");
		return EXIT_BADINPUT;
	}
	if (strcmp(path, "-") == 0) {
		usagef("--raw: the stream is FILE itself; give a file, not -");
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
	/* written whole or not at all, as convert --to ctf */
	if (od_create(dir, outdir, tmp, sizeof(tmp)))
		goto out;
	made = true;
	dirfd = open(tmp, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dirfd < 0) {
		errorf("%s: cannot open directory: %s", tmp, strerror(errno));
		goto out;
	}
	/* the dump itself: a hard link if we can, else a symbolic link */
	if (linkat(AT_FDCWD, abs, dirfd, "stream", 0) &&
	    symlinkat(abs, dirfd, "stream")) {
		errorf("%s/stream: cannot link to %s: %s", tmp, abs,
		       strerror(errno));
		goto out;
	}
	if (write_raw_metadata(dirfd, tmp, dict, ops))
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
	return made ? od_finish(dir, outdir, tmp, rc) : rc;
}
