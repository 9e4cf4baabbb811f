// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * hmb-vector-json FILE: decode FILE (dump or ring image) through
 * libhmbtrace and print the canonical expected-output document of
 * docs/test-vectors (the same text docs/test-vectors/gen.py writes).
 * Exit 0 when the document was printed (a decoding error is part of the
 * document), 2 on usage or an unreadable file.
 */
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hmbtrace.h"

struct item {
	struct hmb_record_hdr hdr;
	uint64_t offset;
	uint8_t payload[HMB_RECORD_MAX_PAYLOAD];
};

int main(int argc, char **argv)
{
	static struct hmb_acct a;
	const struct hmb_ring_hdr *rh = NULL;
	struct item *items = NULL;
	size_t n = 0, cap = 0;
	struct hmb_reader *r = NULL;
	struct hmb_record rec;
	struct hmb_error e;
	const char *dialect = "null";
	int fd, rc;

	if (argc != 2) {
		fprintf(stderr, "usage: %s FILE\n", argv[0]);
		return 2;
	}
	fd = open(argv[1], O_RDONLY);
	if (fd < 0) {
		perror(argv[1]);
		return 2;
	}
	hmb_acct_init(&a, 0, NULL, NULL);
	rc = hmb_reader_open(&r, fd, argv[1], &e);
	if (rc == 0) {
		dialect = hmb_reader_dialect(r) == HMB_DIALECT_RING ?
			  "\"ring\"" : "\"dump\"";
		rh = hmb_reader_ring_hdr(r);
		while ((rc = hmb_reader_next(r, &rec, &e)) == 1) {
			if (hmb_acct_add(&a, &rec) != HMB_ACCT_NEW)
				continue;
			if (n == cap) {
				cap = cap ? cap * 2 : 16;
				items = realloc(items, cap * sizeof(*items));
				if (!items)
					return 2;
			}
			items[n].hdr = rec.hdr;
			items[n].offset = rec.offset;
			memcpy(items[n].payload, rec.payload,
			       rec.hdr.payload_len);
			n++;
		}
	} else if (rc != HMB_E_UNKNOWN_MAGIC && rc != HMB_E_IO) {
		dialect = "\"ring\"";	/* only an image can fail to open */
	}
	printf("{\n  \"dialect\": %s,\n", dialect);
	if (rh)
		printf("  \"ring\": {\"magic\": %u, \"version\": %u, "
		       "\"ring_size\": %u, \"record_area_off\": %u, "
		       "\"head\": %" PRIu64 ", \"tail\": %" PRIu64
		       ", \"flags\": %u},\n", rh->magic, rh->version,
		       rh->ring_size, rh->record_area_off, (uint64_t)rh->head,
		       (uint64_t)rh->tail, rh->flags);
	else
		printf("  \"ring\": null,\n");
	printf("  \"records\": [%s", n ? "\n" : "],\n");
	for (size_t i = 0; i < n; i++) {
		const struct hmb_record_hdr *h = &items[i].hdr;

		printf("    {\"offset\": %" PRIu64 ", \"seq\": %u, \"ts_ns\": %"
		       PRIu64 ", \"opcode\": %u, \"cpu\": %u, \"flags\": %u, "
		       "\"payload_len\": %u, \"payload\": \"", items[i].offset,
		       h->seq, (uint64_t)h->ts_ns, h->opcode, h->cpu, h->flags,
		       h->payload_len);
		for (unsigned k = 0; k < h->payload_len; k++)
			printf("%02x", items[i].payload[k]);
		printf("\"}%s\n", i + 1 < n ? "," : "");
	}
	if (n)
		printf("  ],\n");
	printf("  \"stats\": {\"records\": %" PRIu64 ", \"wrap_markers\": %"
	       PRIu64 ", \"ignored\": %" PRIu64 ", \"truncated\": %" PRIu64
	       ", \"lost\": %" PRIu64 ", \"gaps\": %" PRIu64
	       ", \"duplicates\": %" PRIu64 ", \"resets\": %" PRIu64
	       ", \"bytes\": %" PRIu64 ", \"payload_bytes\": %" PRIu64 "},\n",
	       a.records, a.wrap_markers, a.ignored, a.truncated, a.lost,
	       a.gaps, a.duplicates, a.resets, a.bytes, a.payload_bytes);
	if (rc < 0)
		printf("  \"error\": {\"code\": \"%s\", \"offset\": %" PRIu64
		       "}\n", hmb_errname(rc), e.offset);
	else
		printf("  \"error\": null\n");
	printf("}\n");
	if (rc < 0)
		fprintf(stderr, "%s\n", e.msg);
	hmb_reader_close(r);
	free(items);
	close(fd);
	return 0;
}
