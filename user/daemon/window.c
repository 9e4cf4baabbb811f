// SPDX-License-Identifier: GPL-2.0
/*
 * window.c - hmb-trace-daemon's flight recorder (--snapshot-on SIG): the
 * ring is drained as always, but the records go into a window of the last
 * --window-mb bytes of whole records in memory, the oldest records evicted
 * first.  On the signal the window is written out as a snapshot,
 * DIR/SNAP-<UTC time>-<signal>/trace.bin with its sidecar, which says
 * which seqs it holds and what the window evicted before them.
 *
 * The window itself is libhmbtrace's (hmbtrace_window.h): records are
 * parsed there only.
 *
 * A snapshot is written by a child process: fork() gives it the window
 * as it is (copy-on-write private memory), while the daemon goes on
 * draining the ring; writing and syncing a large window takes far longer
 * than a ring holds records at a high rate.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "daemon.h"

int window_open(struct daemon *d)
{
	struct hmb_error err = { 0 };

	memset(&d->win, 0, sizeof(d->win));
	if (hmb_window_open(&d->win.rw, d->o.window, &err)) {
		log_msg(LOG_ERR, "%s", err.msg);
		return -1;
	}
	return 0;
}

void window_close(struct daemon *d)
{
	hmb_window_close(&d->win.rw);
}

int window_add(struct daemon *d, const void *buf, size_t len)
{
	struct hmb_error err = { 0 };

	/* --batch-bytes <= --window-mb (opts.c): the batch always fits. */
	if (hmb_window_add(&d->win.rw, buf, len, &err))
		/* Only checked records go in: this is a bug, not the ring. */
		log_msg(LOG_ERR, "window: cannot step over its oldest record: %s; emptying it",
			err.msg[0] ? err.msg : "none");
	return 0;
}

void window_epoch(struct daemon *d)
{
	if (hmb_window_epoch(&d->win.rw))
		log_msg(LOG_WARN, "window: more than %d ring re-initialisations in it; a snapshot will not mark the oldest",
			HMB_SIDECAR_MAX_EPOCHS);
}

/* What a snapshot holds (format.md 10), logged if it cannot be known. */
static int snap_walk(const struct hmb_window *w, struct hmb_window_sum *s)
{
	struct hmb_error err = { 0 };
	int r = hmb_window_walk(w, s, &err);

	if (r == HMB_E_NOMEM)
		log_msg(LOG_ERR, "snapshot: cannot allocate its accounting: %s",
			strerror(errno));
	else if (r)
		log_msg(LOG_ERR, "snapshot: the window does not parse: %s",
			err.msg[0] ? err.msg : "a record runs past its end");
	return r ? -1 : 0;
}

/* The snapshot's own sidecar lines: what it holds, what went before. */
static char *snap_lines(const struct daemon *d, const struct hmb_window_sum *s,
			const char *reason)
{
	const struct hmb_window *w = &d->win.rw;
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
	int rc = hmb_publish_noreplace(tmp, d->o.snap_dir, stem, out, len);

	if (rc == -EEXIST) {
		log_msg(LOG_ERR, "cannot name the snapshot %s: 999 names taken", stem);
		return -1;
	}
	if (rc) {
		log_msg(LOG_ERR, "cannot rename %s to %s: %s", tmp, out,
			strerror(-rc));
		return -1;
	}
	rc = hmb_fsync_dir_of(out);
	if (rc)
		log_msg(LOG_WARN, "snapshot %s: cannot sync its directory: %s", out,
			strerror(-rc));
	return 0;
}

/*
 * In the child: write the window out as DIR/@stem through @tmp.  0, or -1
 * (logged, nothing left behind).
 */
static int snapshot_write(struct daemon *d, const char *stem, const char *tmp)
{
	struct hmb_window *w = &d->win.rw;
	unsigned int dmode = d->o.file_mode | ((d->o.file_mode & 0444) >> 2);
	size_t len = w->head - w->tail;
	char reason[32], final[4096 + 8], *lines;
	struct hmb_window_sum s = { 0 };
	struct iovec iov[2];
	int r, niov;

	sig_reason(d->o.snap_name, reason, sizeof(reason));
	if (snap_walk(w, &s))
		return -1;
	lines = snap_lines(d, &s, reason);
	if (!lines) {
		log_msg(LOG_ERR, "snapshot: out of memory");
		hmb_acct_free(s.acct);
		return -1;
	}
	/* The records from the oldest: up to the end of the buffer, then on. */
	niov = hmb_window_spans(w, iov);
	if (mkdir(tmp, dmode)) {
		log_msg(LOG_ERR, "cannot create %s: %s", tmp, strerror(errno));
		r = -1;
	} else {
		/* --file-mode exactly, as for the files: no umask. */
		if (chmod(tmp, dmode))
			log_msg(LOG_WARN, "cannot set mode %04o on %s: %s", dmode,
				tmp, strerror(errno));
		r = output_snapshot(d, tmp, iov, niov, len, lines);
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
			s.acct->lost, len, w->ev_records);
	}
	free(lines);
	hmb_acct_free(s.acct);
	return r;
}

/*
 * The snapshot being written, if any: count what became of it.  @block:
 * wait for it to finish.  A child killed before it finished leaves its
 * temporary directory: removed here.
 */
void window_reap(struct daemon *d, bool block)
{
	struct window *w = &d->win;
	int st;
	pid_t r;

	if (!w->child)
		return;
	do
		r = waitpid(w->child, &st, block ? 0 : WNOHANG);
	while (r < 0 && errno == EINTR);
	if (!r)
		return;
	if (r == w->child && WIFEXITED(st) && WEXITSTATUS(st) == 0) {
		w->written++;
		w->last_written = w->child_started;
	} else {
		w->failed++;
		if (r == w->child && WIFSIGNALED(st)) {
			log_msg(LOG_ERR, "snapshot %s: its writer was killed by %s",
				w->child_tmp, strsignal(WTERMSIG(st)));
			snap_discard(w->child_tmp);
		}
	}
	w->child = 0;
}

/* Start writing the window in a child.  -1 (logged) if it cannot start. */
static int snapshot_start(struct daemon *d, double t)
{
	struct window *w = &d->win;
	char reason[32], stem[128];
	pid_t pid;

	sig_reason(d->o.snap_name, reason, sizeof(reason));
	hmb_snapshot_stem(stem, sizeof(stem), reason);
	snprintf(w->child_tmp, sizeof(w->child_tmp), "%s/.%s.tmp",
		 d->o.snap_dir, stem);
	pid = fork();
	if (pid < 0) {
		log_msg(LOG_ERR, "snapshot: cannot fork its writer: %s", strerror(errno));
		return -1;
	}
	if (!pid)
		_exit(snapshot_write(d, stem, w->child_tmp) ? 1 : 0);
	w->child = pid;
	w->child_started = t;
	return 0;
}

void window_requests(struct daemon *d)
{
	struct window *w = &d->win;
	unsigned int n = w->pending;
	double t;

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
	/* Whether the one being written succeeds decides the limits. */
	window_reap(d, true);
	t = hmb_now_s(CLOCK_MONOTONIC);
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
	if (snapshot_start(d, t))
		w->failed++;
}

void window_stats_json(const struct daemon *d, struct hmb_json *j)
{
	const struct window *w = &d->win;
	const struct hmb_window *rw = &w->rw;

	hmb_json_kv_u64(j, "window_bytes", rw->size);
	hmb_json_kv_u64(j, "window_held_bytes", rw->head - rw->tail);
	hmb_json_kv_u64(j, "window_evicted_records", rw->ev_records);
	hmb_json_kv_u64(j, "window_evicted_ignored", rw->ev_ignored);
	hmb_json_kv_u64(j, "window_evicted_markers", rw->ev_markers);
	hmb_json_kv_u64(j, "window_evicted_bytes", rw->ev_bytes);
	hmb_json_kv_u64(j, "snapshot_requests", w->requests);
	hmb_json_kv_u64(j, "snapshots_written", w->written);
	hmb_json_kv_u64(j, "snapshots_failed", w->failed);
	hmb_json_kv_u64(j, "snapshots_suppressed_holdoff", w->sup_holdoff);
	hmb_json_kv_u64(j, "snapshots_suppressed_max", w->sup_max);
	hmb_json_kv_u64(j, "snapshots_suppressed_pending", w->sup_pending);
}
