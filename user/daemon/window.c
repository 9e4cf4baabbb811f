// SPDX-License-Identifier: GPL-2.0
/*
 * window.c - hmb-trace-daemon's flight recorder (--snapshot-on SIG): the
 * ring is drained as always, but the records go into a window of the last
 * --window-mb bytes of whole records in memory, the oldest records evicted
 * first.  On the signal the window is written out as a snapshot,
 * DIR/SNAP-<UTC time>-<signal>/trace.bin with its sidecar, which says
 * which seqs it holds and what the window evicted before them.
 *
 * Records are parsed by libhmbtrace only (hmb_buf_iter, hmb_acct): the
 * window is mapped twice back to back, so the records it holds always lie
 * contiguous in memory, as a dump stream, however the window has wrapped.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include "daemon.h"

int window_open(struct daemon *d)
{
	struct window *w = &d->win;
	size_t sz = d->o.window;
	uint8_t *m;
	int fd;

	memset(w, 0, sizeof(*w));
	w->epochs = calloc(HMB_SIDECAR_MAX_EPOCHS, sizeof(*w->epochs));
	if (!w->epochs) {
		log_msg(LOG_ERR, "cannot allocate the window's epoch list");
		return -1;
	}
	fd = memfd_create("hmb-trace-window", MFD_CLOEXEC);
	if (fd < 0 || ftruncate(fd, (off_t)sz)) {
		log_msg(LOG_ERR, "cannot create a %zu-byte window: %s", sz,
			strerror(errno));
		goto fail;
	}
	m = mmap(NULL, 2 * sz, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED)
		goto fail_map;
	if (mmap(m, sz, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd, 0) == MAP_FAILED ||
	    mmap(m + sz, sz, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd, 0) == MAP_FAILED) {
		munmap(m, 2 * sz);
		goto fail_map;
	}
	close(fd);
	w->map = m;
	w->size = sz;
	return 0;

fail_map:
	log_msg(LOG_ERR, "cannot map a %zu-byte window: %s", sz, strerror(errno));
fail:
	if (fd >= 0)
		close(fd);
	free(w->epochs);
	w->epochs = NULL;
	return -1;
}

void window_close(struct daemon *d)
{
	struct window *w = &d->win;

	if (w->map)
		munmap(w->map, 2 * w->size);
	w->map = NULL;
	free(w->epochs);
	w->epochs = NULL;
}

static const uint8_t *window_data(const struct window *w)
{
	return w->map + w->tail % w->size;
}

/* Drop the oldest record.  -1 if the window holds none it can parse. */
static int evict_one(struct daemon *d)
{
	struct window *w = &d->win;
	struct hmb_buf_iter it;
	struct hmb_record rec;
	struct hmb_error err;
	int r;

	hmb_buf_iter_init(&it, window_data(w), w->head - w->tail, w->tail);
	r = hmb_buf_iter_next(&it, &rec, &err);
	if (r <= 0) {
		/* Only checked records go in: this is a bug, not the ring. */
		log_msg(LOG_ERR, "window: cannot step over its oldest record: %s; emptying it",
			r ? err.msg : "none");
		w->ev_bytes += w->head - w->tail;
		w->tail = w->head;
		return -1;
	}
	switch (rec.kind) {
	case HMB_KIND_MARKER:
		w->ev_markers++;
		break;
	case HMB_KIND_IGNORED:
		w->ev_ignored++;
		break;
	default:
		w->ev_records++;
		break;
	}
	if (rec.kind != HMB_KIND_MARKER) {
		w->ev_have_seq = true;
		w->ev_last_seq = rec.hdr.seq;
	}
	w->ev_bytes += rec.raw_len;
	w->tail += rec.raw_len;
	return 0;
}

int window_add(struct daemon *d, const void *buf, size_t len)
{
	struct window *w = &d->win;

	/* --batch-bytes <= --window-mb (opts.c): the batch always fits. */
	while (w->head - w->tail + len > w->size)
		if (evict_one(d))
			break;
	memcpy(w->map + w->head % w->size, buf, len);
	w->head += len;
	return 0;
}

void window_epoch(struct daemon *d)
{
	struct window *w = &d->win;
	size_t i, n = 0;

	/* Epochs whose first record was evicted need no line any more. */
	for (i = 0; i < w->n_epochs; i++)
		if (w->epochs[i] > w->tail)
			w->epochs[n++] = w->epochs[i];
	if (n && w->epochs[n - 1] == w->head) {
		w->n_epochs = n;
		return;
	}
	if (n == HMB_SIDECAR_MAX_EPOCHS) {
		log_msg(LOG_WARN, "window: more than %d ring re-initialisations in it; a snapshot will not mark the oldest",
			HMB_SIDECAR_MAX_EPOCHS);
		memmove(w->epochs, w->epochs + 1, --n * sizeof(*w->epochs));
	}
	w->epochs[n++] = w->head;
	w->n_epochs = n;
}

/* What a snapshot holds, by libhmbtrace's accounting (format.md 10). */
struct snap_sum {
	struct hmb_acct *acct;
	bool have_seq;
	uint32_t first_seq, last_seq;
	size_t n_epochs;
};

static int snap_walk(const struct window *w, struct snap_sum *s)
{
	struct hmb_buf_iter it;
	struct hmb_record rec;
	struct hmb_error err;
	size_t e = 0;
	int r;

	s->acct = hmb_acct_new(0, NULL, NULL);
	if (!s->acct) {
		log_msg(LOG_ERR, "snapshot: cannot allocate its accounting: %s",
			strerror(errno));
		return -1;
	}
	hmb_buf_iter_init(&it, window_data(w), w->head - w->tail, 0);
	while ((r = hmb_buf_iter_next(&it, &rec, &err)) > 0) {
		while (e < w->n_epochs && w->epochs[e] <= w->tail + rec.offset) {
			if (w->epochs[e] == w->tail + rec.offset && rec.offset)
				hmb_acct_new_epoch(s->acct);
			e++;
		}
		hmb_acct_add(s->acct, &rec);
		if (rec.kind == HMB_KIND_MARKER)
			continue;
		if (!s->have_seq)
			s->first_seq = rec.hdr.seq;
		s->have_seq = true;
		s->last_seq = rec.hdr.seq;
	}
	if (r < 0) {
		log_msg(LOG_ERR, "snapshot: the window does not parse: %s", err.msg);
		hmb_acct_free(s->acct);
		return -1;
	}
	return 0;
}

/* The snapshot's own sidecar lines: what it holds, what went before. */
static char *snap_lines(const struct daemon *d, const struct snap_sum *s,
			const char *reason)
{
	const struct window *w = &d->win;
	const struct hmb_acct *a = s->acct;
	size_t i, cap = 2048 + w->n_epochs * 32, n;
	char *t = malloc(cap);

	if (!t)
		return NULL;
	n = (size_t)snprintf(t, cap,
		"snapshot_reason=%s\nsnapshot_records=%" PRIu64 "\nsnapshot_ignored=%" PRIu64
		"\nsnapshot_markers=%" PRIu64 "\nsnapshot_lost=%" PRIu64
		"\nwindow_bytes=%zu\nwindow_evicted_records=%" PRIu64
		"\nwindow_evicted_ignored=%" PRIu64 "\nwindow_evicted_markers=%" PRIu64
		"\nwindow_evicted_bytes=%" PRIu64 "\ndrained_records=%" PRIu64
		"\ndrained_ignored=%" PRIu64 "\n",
		reason, a->records, a->ignored, a->wrap_markers, a->lost, w->size,
		w->ev_records, w->ev_ignored, w->ev_markers, w->ev_bytes,
		d->st.records, d->st.ignored);
	if (s->have_seq)
		n += (size_t)snprintf(t + n, cap - n,
			"snapshot_first_seq=%" PRIu32 "\nsnapshot_last_seq=%" PRIu32 "\n",
			s->first_seq, s->last_seq);
	if (w->ev_have_seq)
		n += (size_t)snprintf(t + n, cap - n,
			"window_evicted_last_seq=%" PRIu32 "\n", w->ev_last_seq);
	for (i = 0; i < w->n_epochs; i++)
		if (w->epochs[i] > w->tail && w->epochs[i] < w->head)
			n += (size_t)snprintf(t + n, cap - n, "epoch=%" PRIu64 "\n",
					      w->epochs[i] - w->tail);
	return t;
}

/* "sigusr1" for SIGUSR1: the reason in a snapshot's name and sidecar. */
static void sig_reason(const char *name, char *buf, size_t len)
{
	size_t i;

	for (i = 0; name[i] && i + 1 < len; i++)
		buf[i] = (char)(name[i] >= 'A' && name[i] <= 'Z' ?
				name[i] - 'A' + 'a' : name[i]);
	buf[i] = 0;
}

/* Remove a snapshot directory this daemon was writing (its files only). */
static void snap_discard(const char *dir)
{
	char p[4096 + 64];

	snprintf(p, sizeof(p), "%s/%s.meta", dir, SNAP_DUMP_NAME);
	unlink(p);
	snprintf(p, sizeof(p), "%s/%s.meta.tmp", dir, SNAP_DUMP_NAME);
	unlink(p);
	snprintf(p, sizeof(p), "%s/%s", dir, SNAP_DUMP_NAME);
	unlink(p);
	if (rmdir(dir) && errno != ENOENT)
		log_msg(LOG_WARN, "cannot remove %s: %s", dir, strerror(errno));
}

/*
 * Move the finished snapshot from @tmp to DIR/SNAP-<time>-<reason>, with
 * "-2", "-3", ... after it if that name is taken: never over another.
 * The name goes to @out.
 */
static int snap_publish(const struct daemon *d, const char *tmp,
			const char *stem, char *out, size_t len)
{
	int i, rc;

	for (i = 1; i < 1000; i++) {
		if (i == 1)
			snprintf(out, len, "%s/%s", d->o.snap_dir, stem);
		else
			snprintf(out, len, "%s/%s-%d", d->o.snap_dir, stem, i);
		if (!renameat2(AT_FDCWD, tmp, AT_FDCWD, out, RENAME_NOREPLACE))
			break;
		if (errno != EEXIST) {
			log_msg(LOG_ERR, "cannot rename %s to %s: %s", tmp, out,
				strerror(errno));
			return -1;
		}
	}
	if (i == 1000) {
		log_msg(LOG_ERR, "cannot name the snapshot %s: 999 names taken", stem);
		return -1;
	}
	rc = hmb_fsync_dir_of(out);
	if (rc)
		log_msg(LOG_WARN, "snapshot %s: cannot sync its directory: %s", out,
			strerror(-rc));
	return 0;
}

/* Write the window out.  0, or -1 (logged, nothing left behind). */
static int snapshot_take(struct daemon *d)
{
	struct window *w = &d->win;
	char reason[32], stem[128], tmp[4096], final[4096 + 8], *lines;
	unsigned int dmode = d->o.file_mode | ((d->o.file_mode & 0444) >> 2);
	struct snap_sum s = { 0 };
	struct timespec ts;
	struct tm tm;
	size_t n;
	int r;

	sig_reason(d->o.snap_name, reason, sizeof(reason));
	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	n = strftime(stem, sizeof(stem), "SNAP-%Y%m%dT%H%M%S", &tm);
	snprintf(stem + n, sizeof(stem) - n, ".%03ldZ-%s", ts.tv_nsec / 1000000,
		 reason);
	snprintf(tmp, sizeof(tmp), "%s/.%s.tmp", d->o.snap_dir, stem);
	if (snap_walk(w, &s))
		return -1;
	lines = snap_lines(d, &s, reason);
	if (!lines) {
		log_msg(LOG_ERR, "snapshot: out of memory");
		hmb_acct_free(s.acct);
		return -1;
	}
	if (mkdir(tmp, dmode)) {
		log_msg(LOG_ERR, "cannot create %s: %s", tmp, strerror(errno));
		r = -1;
	} else {
		/* --file-mode exactly, as for the files: no umask. */
		if (chmod(tmp, dmode))
			log_msg(LOG_WARN, "cannot set mode %04o on %s: %s", dmode,
				tmp, strerror(errno));
		r = output_snapshot(d, tmp, window_data(w), w->head - w->tail, lines);
		if (!r)
			r = snap_publish(d, tmp, stem, final, sizeof(final));
		if (r)
			snap_discard(tmp);
	}
	if (!r) {
		char seqs[64] = "no seqs";

		if (s.have_seq)
			snprintf(seqs, sizeof(seqs), "seqs %" PRIu32 "..%" PRIu32,
				 s.first_seq, s.last_seq);
		log_msg(LOG_INFO, "snapshot %s: %" PRIu64 " records, %s (%" PRIu64
			" lost by the ring), %" PRIu64 " bytes; the window evicted %"
			PRIu64 " records before them", final, s.acct->records, seqs,
			s.acct->lost, w->head - w->tail, w->ev_records);
	}
	free(lines);
	hmb_acct_free(s.acct);
	return r;
}

void window_requests(struct daemon *d)
{
	struct window *w = &d->win;
	unsigned int n = w->pending;
	double t = now_s();

	if (!n)
		return;
	w->pending = 0;
	w->requests += n;
	if (n > 1) {
		w->sup_pending += n - 1;
		log_msg(LOG_WARN, "%s: %u requests arrived together, one snapshot for them (%" PRIu64
			" suppressed so far)", d->o.snap_name, n,
			w->sup_pending + w->sup_holdoff + w->sup_max);
	}
	if (d->o.max_snaps && w->written >= d->o.max_snaps) {
		w->sup_max++;
		log_msg(LOG_WARN, "%s: snapshot suppressed: %" PRIu64 " written, --max-snapshots %" PRIu64
			" (%" PRIu64 " suppressed so far)", d->o.snap_name,
			w->written, d->o.max_snaps,
			w->sup_pending + w->sup_holdoff + w->sup_max);
		return;
	}
	if (w->written && (t - w->last_written) < d->o.holdoff_s) {
		w->sup_holdoff++;
		log_msg(LOG_WARN, "%s: snapshot suppressed: the last one %.1f s ago, --holdoff %u (%"
			PRIu64 " suppressed so far)", d->o.snap_name,
			t - w->last_written, d->o.holdoff_s,
			w->sup_pending + w->sup_holdoff + w->sup_max);
		return;
	}
	if (snapshot_take(d)) {
		w->failed++;
		return;
	}
	w->written++;
	w->last_written = now_s();
}

void window_stats_json(const struct daemon *d, struct hmb_json *j)
{
	const struct window *w = &d->win;

	hmb_json_kv_u64(j, "window_bytes", w->size);
	hmb_json_kv_u64(j, "window_held_bytes", w->head - w->tail);
	hmb_json_kv_u64(j, "window_evicted_records", w->ev_records);
	hmb_json_kv_u64(j, "window_evicted_ignored", w->ev_ignored);
	hmb_json_kv_u64(j, "window_evicted_markers", w->ev_markers);
	hmb_json_kv_u64(j, "window_evicted_bytes", w->ev_bytes);
	hmb_json_kv_u64(j, "snapshot_requests", w->requests);
	hmb_json_kv_u64(j, "snapshots_written", w->written);
	hmb_json_kv_u64(j, "snapshots_failed", w->failed);
	hmb_json_kv_u64(j, "snapshots_suppressed_holdoff", w->sup_holdoff);
	hmb_json_kv_u64(j, "snapshots_suppressed_max", w->sup_max);
	hmb_json_kv_u64(j, "snapshots_suppressed_pending", w->sup_pending);
}
