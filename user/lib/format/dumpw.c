// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Dump writer: a dump stream (docs/format.md 12.1) built record by record,
 * with its sidecar (12.4), for a consumer that gets records one at a time
 * rather than as spans of a mapped ring (hmb-trace-agent -w receives them
 * from the bridge's tracepoint through a BPF ring buffer).  Each record is
 * checked like any record read from a file (records are hostile input,
 * docs/format.md: whoever handed them over may be wrong) and written
 * verbatim with its zero padding.  The sidecar is
 * written before the first record, so a dump is never without one.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"
#include "hmbtrace_util.h"

struct hmb_dump_writer {
	struct hmb_outbuf ob;
	int fd;
	int failed;		/* first error code, sticky */
	uint64_t size;		/* bytes accepted */
	uint64_t records;	/* records accepted */
	char path[4096];
	char meta[4096 + 8];
};

#define DUMPW_BUF (1u << 20)

int hmb_dump_writer_open(struct hmb_dump_writer **out, const char *path,
			 const struct hmb_sidecar *sc, unsigned int mode,
			 struct hmb_error *err)
{
	struct hmb_dump_writer *w;
	int rc;

	if (!out || !path || !*path || !sc)
		return hmb__err(err, HMB_E_INVAL, 0, 0, "dump writer: no path");
	*out = NULL;
	w = calloc(1, sizeof(*w));
	if (!w)
		return hmb__err(err, HMB_E_NOMEM, ENOMEM, 0, "%s: out of memory",
				path);
	if (snprintf(w->path, sizeof(w->path), "%s", path) >=
	    (int)sizeof(w->path)) {
		free(w);
		return hmb__err(err, HMB_E_INVAL, ENAMETOOLONG, 0,
				"dump path too long");
	}
	snprintf(w->meta, sizeof(w->meta), "%s.meta", path);
	w->fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW |
		     O_CLOEXEC, mode ? mode : 0600);
	if (w->fd < 0) {
		rc = errno;
		free(w);
		return hmb__err(err, HMB_E_IO, rc, 0, "cannot create %s: %s",
				path, strerror(rc));
	}
	rc = hmb_sidecar_create(w->meta, sc, 0, mode, err);
	if (rc)
		goto fail;
	if (hmb_ob_open(&w->ob, w->fd, w->path, DUMPW_BUF)) {
		rc = hmb__err(err, HMB_E_NOMEM, ENOMEM, 0, "%s: out of memory",
			      path);
		goto fail;
	}
	*out = w;
	return 0;
fail:
	close(w->fd);
	free(w);
	return rc;
}

int hmb_dump_writer_add(struct hmb_dump_writer *w,
			const struct hmb_record_hdr *hdr, const void *payload,
			struct hmb_error *err)
{
	static const uint8_t zero[HMB_RECORD_ALIGN];
	char where[4200];
	size_t len, pad;
	int rc;

	if (!w || !hdr || (hdr->payload_len && !payload))
		return hmb__err(err, HMB_E_INVAL, 0, 0, "dump writer: no record");
	if (w->failed)
		return hmb__err(err, w->failed, w->ob.err, w->size,
				"%s: an earlier write failed", w->path);
	snprintf(where, sizeof(where), "for %s at byte offset %" PRIu64,
		 w->path, w->size);
	rc = hmb__rec_validate(hdr, w->size, where, err);
	if (rc)
		return rc;	/* refused; the dump stays as it was */
	len = hdr->payload_len;
	pad = HMB_RECORD_SIZE(len) - HMB_RECORD_HDR_SIZE - len;
	hmb_ob_write(&w->ob, (const char *)hdr, HMB_RECORD_HDR_SIZE);
	hmb_ob_write(&w->ob, payload, len);
	hmb_ob_write(&w->ob, (const char *)zero, pad);
	if (w->ob.err) {
		w->failed = HMB_E_IO;
		return hmb__err(err, HMB_E_IO, w->ob.err, w->size,
				"writing %s: %s", w->path,
				strerror(w->ob.err));
	}
	w->size += HMB_RECORD_SIZE(len);
	w->records++;
	return 0;
}

uint64_t hmb_dump_writer_records(const struct hmb_dump_writer *w)
{
	return w ? w->records : 0;
}

uint64_t hmb_dump_writer_size(const struct hmb_dump_writer *w)
{
	return w ? w->size : 0;
}

int hmb_dump_writer_close(struct hmb_dump_writer *w, const char *lines,
			  struct hmb_error *err)
{
	int rc = 0, e;

	if (!w)
		return 0;
	if (hmb_ob_close(&w->ob) && !rc)
		rc = hmb__err(err, HMB_E_IO, w->ob.err, w->size,
			      "writing %s: %s", w->path, strerror(w->ob.err));
	if (!rc && fsync(w->fd)) {
		e = errno;
		rc = hmb__err(err, HMB_E_IO, e, w->size, "fsync %s: %s",
			      w->path, strerror(e));
	}
	if (close(w->fd) && !rc) {
		e = errno;
		rc = hmb__err(err, HMB_E_IO, e, w->size, "closing %s: %s",
			      w->path, strerror(e));
	}
	if (lines && *lines) {
		struct hmb_error e2;
		int r2 = hmb_sidecar_append(w->meta, lines, &e2);

		if (r2 && !rc) {
			rc = r2;
			if (err)
				*err = e2;
		}
	}
	free(w);
	return rc;
}
