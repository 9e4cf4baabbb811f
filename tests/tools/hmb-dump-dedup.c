// SPDX-License-Identifier: Apache-2.0
/*
 * hmb-dump-dedup - test helper: copy a dump to stdout without the records a
 * restarted daemon wrote twice (format.md 9.4), using libhmbtrace's sequence
 * accounting, so the result can be compared byte for byte with what the
 * simulator wrote.  Wrap markers of a replayed batch are dropped too (a
 * marker carries the seq of the record after it).  Prints the number of
 * duplicates dropped on stderr.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <hmbtrace.h>

static struct hmb_acct ac;

int main(int argc, char **argv)
{
	struct hmb_reader *r;
	struct hmb_record rec;
	struct hmb_error err;
	uint64_t dup_markers = 0;
	int fd, rc;

	if (argc != 2) {
		fprintf(stderr, "usage: hmb-dump-dedup DUMP > OUT\n");
		return 2;
	}
	fd = open(argv[1], O_RDONLY);
	if (fd < 0) {
		fprintf(stderr, "hmb-dump-dedup: %s: %s\n", argv[1], strerror(errno));
		return 1;
	}
	if (hmb_reader_open(&r, fd, argv[1], &err)) {
		fprintf(stderr, "hmb-dump-dedup: %s\n", err.msg);
		return 1;
	}
	hmb_acct_init(&ac, 0, NULL, NULL);
	while ((rc = hmb_reader_next(r, &rec, &err)) == 1) {
		bool keep;

		if (rec.kind == HMB_KIND_MARKER) {
			keep = !ac.have_seq ||
			       (uint32_t)(rec.hdr.seq - ac.max_seq - 1) < 0x80000000u;
			hmb_acct_add(&ac, &rec);
			if (!keep)
				dup_markers++;
		} else {
			keep = hmb_acct_add(&ac, &rec) != HMB_ACCT_DUPLICATE;
		}
		if (keep && fwrite(rec.raw, rec.raw_len, 1, stdout) != 1) {
			fprintf(stderr, "hmb-dump-dedup: write: %s\n", strerror(errno));
			return 1;
		}
	}
	if (rc < 0) {
		fprintf(stderr, "hmb-dump-dedup: %s\n", err.msg);
		return 1;
	}
	if (fflush(stdout)) {
		fprintf(stderr, "hmb-dump-dedup: write: %s\n", strerror(errno));
		return 1;
	}
	fprintf(stderr, "duplicates=%" PRIu64 " duplicate_markers=%" PRIu64
		" records=%" PRIu64 " lost=%" PRIu64 "\n", ac.duplicates,
		dup_markers, ac.records, ac.lost);
	hmb_reader_close(r);
	return 0;
}
