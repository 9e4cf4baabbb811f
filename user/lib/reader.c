// SPDX-License-Identifier: Apache-2.0
/*
 * Record iteration over files (format.md 12.3): dump streams ("RECT", or
 * empty) are
 * streamed through a fixed buffer so pipes and stdin work in constant
 * memory; ring images ("HMBT") are read whole and walked with the very
 * consumer code that drains live rings.
 */
#include <errno.h>
#include <stddef.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

#define DUMP_BUF (128 * 1024)

struct hmb_reader {
	int fd;
	char name[128];
	enum hmb_dialect dialect;
	/* dump stream */
	uint8_t *buf;
	size_t pos, len;	/* unread bytes are buf[pos..len) */
	uint64_t buf_off;	/* file offset of buf[0] */
	bool eof;
	/* ring image */
	uint8_t *img;
	size_t img_len;
	struct hmb_ring_hdr hdr;
	struct hmb_consumer *cons;
	/* a failed reader keeps failing the same way */
	int failed;
	struct hmb_error ferr;
};

/* Make at least @need bytes available at buf[pos] unless the file ends. */
static int fill(struct hmb_reader *r, size_t need, struct hmb_error *err)
{
	if (r->len - r->pos >= need || r->eof)
		return 0;
	if (r->pos) {
		memmove(r->buf, r->buf + r->pos, r->len - r->pos);
		r->buf_off += r->pos;
		r->len -= r->pos;
		r->pos = 0;
	}
	while (r->len < need && !r->eof) {
		ssize_t n = read(r->fd, r->buf + r->len, DUMP_BUF - r->len);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return hmb__err(err, HMB_E_IO, errno,
					r->buf_off + r->len,
					"%s: read failed at byte offset %" PRIu64 ": %s",
					r->name, r->buf_off + r->len,
					strerror(errno));
		}
		if (n == 0)
			r->eof = true;
		r->len += n;
	}
	return 0;
}

static int fail(struct hmb_reader *r, int rc, struct hmb_error *err)
{
	r->failed = rc;
	if (err)
		r->ferr = *err;
	else
		hmb__err(&r->ferr, rc, 0, 0, "%s: %s", r->name,
			 hmb_strerror(rc));
	return rc;
}

static void set_msg(struct hmb_error *err, const char *text)
{
	size_t n = strlen(text);

	if (n >= sizeof(err->msg))
		n = sizeof(err->msg) - 1;
	memcpy(err->msg, text, n);
	err->msg[n] = '\0';
}

/* Translate a consumer error on an image into file offsets. */
static int image_err(struct hmb_reader *r, int rc, struct hmb_error *err)
{
	char tmp[HMB_ERRMSG_LEN + sizeof(r->name) + 48];

	if (!err)
		return rc;
	switch (rc) {
	case HMB_E_REC_MAGIC:
	case HMB_E_REC_LEN:
	case HMB_E_REC_CROSS_LAP:
	case HMB_E_REC_BEYOND_HEAD:
	case HMB_E_MARKER_PAYLOAD:
	case HMB_E_HEAD_IN_GAP:
		err->offset = HMB_RECORD_AREA_OFF +
			      (err->offset & ((uint64_t)r->hdr.ring_size - 1));
		snprintf(tmp, sizeof(tmp), "%s: %s, file offset %" PRIu64,
			 r->name, err->msg, err->offset);
		break;
	default:
		snprintf(tmp, sizeof(tmp), "%s: %s", r->name, err->msg);
		break;
	}
	set_msg(err, tmp);
	return rc;
}

static int open_image(struct hmb_reader *r, struct hmb_error *err)
{
	size_t total, cap;
	int rc;

	rc = fill(r, HMB_RING_HDR_SIZE, err);
	if (rc)
		return rc;
	if (r->len < HMB_RING_HDR_SIZE)
		return hmb__err(err, HMB_E_RING_SHORT, 0, r->len,
				"%s: ring image of %zu bytes is shorter than the %d-byte ring header",
				r->name, r->len, HMB_RING_HDR_SIZE);
	memcpy(&r->hdr, r->buf, sizeof(r->hdr));
	/* Check the header fields before trusting ring_size for a size. */
	rc = hmb_ring_hdr_check(&r->hdr, SIZE_MAX, err);
	if (rc)
		return image_err(r, rc, err);
	total = HMB_RECORD_AREA_OFF + (size_t)r->hdr.ring_size;
	/* Grow as data arrives: a lying header must not cost 2 GiB. */
	cap = total < DUMP_BUF ? total : DUMP_BUF;
	if (cap < r->len)
		cap = r->len;
	r->img = malloc(cap);
	if (!r->img)
		return hmb__err(err, HMB_E_NOMEM, ENOMEM, 0,
				"%s: out of memory for the ring image", r->name);
	r->img_len = r->len < total ? r->len : total;
	memcpy(r->img, r->buf, r->img_len);
	while (r->img_len < total && !r->eof) {
		ssize_t n;

		if (r->img_len == cap) {
			size_t ncap = cap * 2 < total ? cap * 2 : total;
			uint8_t *p = realloc(r->img, ncap);

			if (!p)
				return hmb__err(err, HMB_E_NOMEM, ENOMEM, 0,
						"%s: out of memory for the ring image",
						r->name);
			r->img = p;
			cap = ncap;
		}
		n = read(r->fd, r->img + r->img_len, cap - r->img_len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return hmb__err(err, HMB_E_IO, errno, r->img_len,
					"%s: read failed at byte offset %zu: %s",
					r->name, r->img_len, strerror(errno));
		}
		if (n == 0)
			r->eof = true;
		r->img_len += n;
	}
	if (r->img_len < total)
		return hmb__err(err, HMB_E_RING_SHORT, 0, r->img_len,
				"%s: ring image is %zu bytes, its header needs 0x40 + ring_size %" PRIu32
				" = %zu", r->name, r->img_len, r->hdr.ring_size,
				total);
	rc = hmb_consumer_open(&r->cons, r->img, r->img_len, NULL, NULL, err);
	if (rc)
		return image_err(r, rc, err);
	return 0;
}

int hmb_reader_open(struct hmb_reader **out, int fd, const char *name,
		    struct hmb_error *err)
{
	struct hmb_reader *r;
	int rc;

	if (!out || fd < 0)
		return hmb__err(err, HMB_E_INVAL, 0, 0, "no reader or file");
	*out = NULL;
	r = calloc(1, sizeof(*r));
	if (!r || !(r->buf = malloc(DUMP_BUF))) {
		free(r);
		return hmb__err(err, HMB_E_NOMEM, ENOMEM, 0,
				"out of memory for the reader");
	}
	r->fd = fd;
	snprintf(r->name, sizeof(r->name), "%s", name ? name : "input");
	rc = fill(r, 4, err);
	if (rc)
		goto fail;
	if (r->len == 0 || !memcmp(r->buf, "RECT", r->len < 4 ? r->len : 4)) {
		/* Empty file, a dump, or a dump cut inside its first header. */
		r->dialect = HMB_DIALECT_DUMP;
	} else if (!memcmp(r->buf, "HMBT", r->len < 4 ? r->len : 4)) {
		r->dialect = HMB_DIALECT_RING;
		rc = open_image(r, err);
		if (rc)
			goto fail;
		free(r->buf);
		r->buf = NULL;
	} else {
		uint8_t m[4] = { 0 };

		memcpy(m, r->buf, r->len < 4 ? r->len : 4);
		rc = hmb__err(err, HMB_E_UNKNOWN_MAGIC, 0, 0,
			      "%s: unknown file magic %02x %02x %02x %02x at byte offset 0: neither a dump (\"RECT\") nor a ring image (\"HMBT\")",
			      r->name, m[0], m[1], m[2], m[3]);
		goto fail;
	}
	*out = r;
	return 0;
fail:
	hmb_reader_close(r);
	return rc;
}

void hmb_reader_close(struct hmb_reader *r)
{
	if (!r)
		return;
	hmb_consumer_close(r->cons);
	free(r->img);
	free(r->buf);
	free(r);
}

enum hmb_dialect hmb_reader_dialect(const struct hmb_reader *r)
{
	return r->dialect;
}

const struct hmb_ring_hdr *hmb_reader_ring_hdr(const struct hmb_reader *r)
{
	return r->dialect == HMB_DIALECT_RING ? &r->hdr : NULL;
}

int hmb_reader_next(struct hmb_reader *r, struct hmb_record *rec,
		    struct hmb_error *err)
{
	uint64_t off;
	int rc;

	if (!r || !rec)
		return hmb__err(err, HMB_E_INVAL, 0, 0, "no reader or record");
	if (r->failed) {
		if (err)
			*err = r->ferr;
		return r->failed;
	}
	if (r->dialect == HMB_DIALECT_RING) {
		rc = hmb__consumer_next(r->cons, rec, err);
		if (rc < 0)
			return fail(r, image_err(r, rc, err), err);
		if (rc > 0)
			rec->offset = HMB_RECORD_AREA_OFF +
				      (rec->offset & ((uint64_t)r->hdr.ring_size - 1));
		return rc;
	}
	/*
	 * Fast path, taken for almost every record of a dump: a valid header
	 * and the whole record already in the buffer.  Anything else goes
	 * the general way below, which refills and says what is wrong.
	 */
	if (r->len - r->pos >= HMB_RECORD_HDR_SIZE) {
		const uint8_t *p = r->buf + r->pos;
		uint16_t plen;
		uint32_t size;

		/*
		 * The length comes straight from the buffer, not from the
		 * copy stored just before: the next record's position depends
		 * on it, and a load forwarded from that store would lengthen
		 * the chain (about 10% of stats time).
		 */
		memcpy(&plen, p + offsetof(struct hmb_record_hdr, payload_len),
		       sizeof(plen));
		size = HMB_RECORD_SIZE(plen);
		memcpy(&rec->hdr, p, sizeof(rec->hdr));
		if (__builtin_expect(hmb__rec_hdr_ok(&rec->hdr) &&
				     r->len - r->pos >= size, 1)) {
			rec->payload = p + HMB_RECORD_HDR_SIZE;
			rec->raw = p;
			rec->raw_len = size;
			rec->kind = hmb__record_kind(&rec->hdr);
			rec->offset = r->buf_off + r->pos;
			r->pos += size;
			return 1;
		}
	}
	rc = fill(r, HMB_RECORD_HDR_SIZE, err);
	if (rc)
		return fail(r, rc, err);
	if (r->len == r->pos)
		return 0;
	off = r->buf_off + r->pos;
	if (r->len - r->pos >= HMB_RECORD_HDR_SIZE) {
		struct hmb_record_hdr h;

		memcpy(&h, r->buf + r->pos, sizeof(h));
		if (h.magic == HMB_RECORD_MAGIC &&
		    h.payload_len <= HMB_RECORD_MAX_PAYLOAD) {
			rc = fill(r, HMB_RECORD_SIZE(h.payload_len), err);
			if (rc)
				return fail(r, rc, err);
		}
	}
	rc = hmb__parse_dump_rec(r->buf + r->pos, r->len - r->pos, off,
				 r->name, rec, err);
	if (rc < 0)
		return fail(r, rc, err);
	r->pos += rec->raw_len;
	return 1;
}
