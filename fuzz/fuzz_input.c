// SPDX-License-Identifier: Apache-2.0
/*
 * fuzz_input: the analyzer's input side (user/analyze/input.c) as every
 * subcommand runs it: input_open() (the sidecar found next to the trace
 * as "<file>.meta", named with --meta, or ignored with --no-meta; its
 * version and epoch lines), the dialect detection of the trace (dump or
 * ring image) and input_next() to the end with the sidecar's epochs.
 *
 * Input: byte 0 chooses how the sidecar is found (bits 0-1: next to the
 * trace, --meta, --no-meta, none at all) and bits 2-7 the gaps kept (0 to
 * 63); bytes 1-2 the sidecar's length (little-endian), then the sidecar,
 * then the trace.  Both are real files in a private directory under
 * /dev/shm (the lookup is by path).
 * Oracles besides the sanitizers: a failed input_open() leaves nothing
 * open; a sidecar is used only when asked for, from the path asked for
 * (--meta wins over the file next to the trace); the sidecar's epoch
 * offsets are sorted; a dump's records come in increasing offsets; no more
 * epochs start than the sidecar lists, and none for a ring image; the gaps
 * kept never exceed the limit.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analyze.h"
#include "fuzz.h"

/* main.c's, which the harness cannot link (it holds main()). */
int parse_u64(const char *s, uint64_t *v)
{
	return hmb_parse_u64(s, 0, 0, UINT64_MAX, v);
}

static char dir[64], trace[128], meta[128], other[128];

static void put(const char *path, const uint8_t *p, size_t n)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	size_t off = 0;

	if (fd < 0)
		abort();
	while (off < n) {
		ssize_t w = write(fd, p + off, n - off);

		if (w <= 0)
			abort();
		off += (size_t)w;
	}
	close(fd);
}

static void cleanup(void)
{
	unlink(trace);
	unlink(meta);
	unlink(other);
	rmdir(dir);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	snprintf(dir, sizeof(dir), "/dev/shm/fuzz_input.XXXXXX");
	if (!mkdtemp(dir))
		abort();
	snprintf(trace, sizeof(trace), "%s/trace", dir);
	snprintf(meta, sizeof(meta), "%s/trace.meta", dir);
	snprintf(other, sizeof(other), "%s/other.meta", dir);
	atexit(cleanup);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct input_opts o = { 0 };
	struct input in;
	struct hmb_record rec;
	struct hmb_error err;
	size_t mlen;
	uint64_t last_off = 0;
	bool first = true, is_dump;
	int mode, rc;

	if (size < 3)
		return 0;
	mode = data[0] & 3;
	o.max_gaps = data[0] >> 2;
	mlen = (size_t)data[1] | (size_t)data[2] << 8;
	if (mlen > size - 3)
		mlen = size - 3;
	unlink(meta);
	unlink(other);
	put(trace, data + 3 + mlen, size - 3 - mlen);
	switch (mode) {
	case 0:		/* found next to the trace */
		put(meta, data + 3, mlen);
		break;
	case 1:		/* --meta, and a decoy next to the trace */
		put(other, data + 3, mlen);
		put(meta, (const uint8_t *)"not a sidecar\n", 14);
		o.meta = other;
		break;
	case 2:		/* --no-meta: a bad sidecar is not read */
		put(meta, (const uint8_t *)"\xff\xfe", 2);
		o.no_meta = true;
		break;
	default:	/* none */
		break;
	}

	rc = input_open(&in, trace, &o);
	if (rc) {
		FZ_ASSERT(rc == EXIT_BADINPUT);
		FZ_ASSERT(!in.reader && in.fd == -1);
		return 0;
	}
	FZ_ASSERT(mode < 2 || !in.have_sidecar);
	FZ_ASSERT(!in.have_sidecar || strcmp(in.meta_path, mode ? other : meta) == 0);
	for (size_t i = 1; i < in.n_epochs; i++)
		FZ_ASSERT(in.epoch_offs[i - 1] <= in.epoch_offs[i]);
	is_dump = hmb_reader_dialect(in.reader) == HMB_DIALECT_DUMP;
	memset(&err, 0, sizeof(err));
	while ((rc = input_next(&in, &rec, &err)) == 1) {
		/* a ring image's records wrap: their offsets are the ring's */
		FZ_ASSERT(!is_dump || first || rec.offset > last_off);
		first = false;
		last_off = rec.offset;
	}
	FZ_ASSERT(rc == 0 || rc < 0 || rc == EXIT_BADINPUT);
	if (rc)
		input_report(&in, &err);
	FZ_ASSERT(in.epochs <= in.n_epochs);
	FZ_ASSERT(is_dump || in.epochs == 0);
	FZ_ASSERT(in.ngaps <= in.max_gaps);
	input_close(&in);
	return 0;
}
