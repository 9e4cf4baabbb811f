// SPDX-License-Identifier: GPL-2.0
/*
 * output.c - hmb-trace-daemon's output: the dump file (created, reopened
 * at SIGHUP, recovered after an error, cut back to a record boundary,
 * synced by the --fsync policy) and its sidecar.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/uio.h>

#include "daemon.h"
#include "hmbtrace_util.h"

/*
 * What kinds of file the daemon refuses to open as its output or sidecar:
 * opening a FIFO blocks until the other end opens, a socket cannot be
 * opened, and neither can hold a dump to append to.  A character device
 * (/dev/null) is an output; a symbolic link is refused by O_NOFOLLOW.
 */
static const char *odd_type(mode_t m)
{
	if (S_ISFIFO(m))
		return "a FIFO";
	if (S_ISSOCK(m))
		return "a socket";
	if (S_ISDIR(m))
		return "a directory";
	if (S_ISBLK(m))
		return "a block device";
	return NULL;
}

static void sidecar_path(const struct daemon *d, char *path, size_t len)
{
	snprintf(path, len, "%s.meta", d->o.output);
}

/* A new sidecar's header for this source, with the host clocks of now. */
static void sidecar_new(const struct daemon *d, struct hmb_sidecar *sc)
{
	memset(sc, 0, sizeof(*sc));
	sc->abi_version = HMB_TRACE_ABI_VERSION;
	sc->ring_size = d->src.ring_size;
	snprintf(sc->source, sizeof(sc->source), "%s", d->src.path);
	sc->realtime_ns = hmb_now_ns(CLOCK_REALTIME);
	sc->monotonic_ns = hmb_now_ns(CLOCK_MONOTONIC);
	sc->boottime_ns = hmb_now_ns(CLOCK_BOOTTIME);
}

/*
 * Describe the output in FILE.meta (docs/format.md 12.4).  A new sidecar
 * gets the header with the host clocks of now (and anchor_offset when the
 * dump already held bytes: its start's clocks are unknown).  An existing
 * one is never rewritten from scratch: its epoch lines and first clock
 * anchors stay, and one restart= line records this start.  A sidecar that
 * cannot be parsed (or is newer than this daemon) is left alone and the
 * daemon refuses to start: appending records it cannot describe would
 * lose their meaning.
 */
static int write_sidecar(struct daemon *d)
{
	struct hmb_sidecar sc;
	struct hmb_error err;
	char path[4096];
	int rc;

	if (!d->out_is_file)
		return 0;
	sidecar_path(d, path, sizeof(path));
	{
		const char *odd;
		struct stat st;

		/* Neither read (it would block) nor renamed over. */
		if (!lstat(path, &st) && (odd = odd_type(st.st_mode))) {
			log_msg(LOG_ERR, "sidecar %s is %s, not a regular file; refusing it (move it away)",
				path, odd);
			return -1;
		}
	}
	/* A sidecar beside an empty dump describes nothing that is left. */
	if (d->out_size && (access(path, F_OK) == 0 || errno != ENOENT)) {
		struct hmb_sidecar_restart r;

		memset(&r, 0, sizeof(r));
		r.dump_offset = d->out_size;
		r.tail = hmb_consumer_cursor(d->c);
		r.ring_size = d->src.ring_size;
		r.realtime_ns = hmb_now_ns(CLOCK_REALTIME);
		r.monotonic_ns = hmb_now_ns(CLOCK_MONOTONIC);
		r.boottime_ns = hmb_now_ns(CLOCK_BOOTTIME);
		snprintf(r.source, sizeof(r.source), "%s", d->src.path);
		rc = hmb_sidecar_append_restart(path, &r, &err);
		if (rc) {
			log_msg(LOG_ERR, "cannot record this start in the existing sidecar %s: %s (left as it was; move it away or fix it)",
				path, err.msg);
			return -1;
		}
		log_msg(LOG_DEBUG, "sidecar %s: restart at dump offset %" PRIu64 " recorded",
			path, d->out_size);
		return 0;
	}
	sidecar_new(d, &sc);
	if (hmb_sidecar_create(path, &sc, d->out_size, d->o.file_mode, &err)) {
		log_msg(LOG_ERR, "cannot write sidecar %s: %s", path, err.msg);
		return -1;
	}
	return 0;
}

/* @msg without the "@name: " the library's messages start with. */
static const char *unprefixed(const char *msg, const char *name)
{
	size_t n = strlen(name);

	return !strncmp(msg, name, n) && !strncmp(msg + n, ": ", 2) ?
	       msg + n + 2 : msg;
}

/*
 * Before anything is appended to an existing FILE it must be a dump up to
 * a record boundary (hmb_dump_check, docs/format.md 12.1): appending to a
 * ring image, a text file or a dump corrupt in the middle would put the
 * records where no reader finds them, and their ring space is gone once
 * the tail is published.  Such a FILE is refused before a byte is drained.
 * A daemon killed in the middle of a write (kill -9) can leave a torn
 * record at the end (the records of that batch are still in the ring and
 * will be written again), a crash zero bytes: FILE is cut back to its last
 * whole record.  Returns 0, EXIT_NOT_DUMP or EXIT_ERR (logged).
 */
static int output_check(struct daemon *d, const struct stat *out_st)
{
	struct hmb_dump_state ds;
	struct hmb_error err;
	struct stat st;
	int fd, rc;

	fd = open(d->o.output, O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) || st.st_dev != out_st->st_dev ||
	    st.st_ino != out_st->st_ino) {
		log_msg(LOG_ERR, "cannot read output %s to check it before appending: %s (--no-output-check appends unchecked)",
			d->o.output, fd < 0 ? strerror(errno) :
			"it was replaced while being opened");
		if (fd >= 0)
			close(fd);
		return EXIT_ERR;
	}
	rc = hmb_dump_check(fd, d->o.output, &ds, &err);
	close(fd);
	if (rc == HMB_E_IO || rc == HMB_E_NOMEM || rc == HMB_E_INVAL) {
		log_msg(LOG_ERR, "cannot check output %s before appending: %s",
			d->o.output, unprefixed(err.msg, d->o.output));
		return EXIT_ERR;
	}
	if (rc) {
		log_msg(LOG_ERR, "output %s is not a dump to append to: %s; refusing it: nothing written, the records stay in the ring",
			d->o.output, unprefixed(err.msg, d->o.output));
		return EXIT_NOT_DUMP;
	}
	if (ds.tail == HMB_DUMP_END_CLEAN)
		return 0;
	log_msg(LOG_WARN, "output %s ends with %s (%s); cutting it back from %" PRIu64
		" to %" PRIu64 " bytes%s", d->o.output,
		ds.tail == HMB_DUMP_END_TORN ? "a torn record" : "zero bytes",
		unprefixed(err.msg, d->o.output), d->out_size, ds.end,
		ds.tail == HMB_DUMP_END_TORN ? " (the record is still in the ring)" : "");
	if (ftruncate(d->out_fd, (off_t)ds.end)) {
		log_msg(LOG_ERR, "cannot cut %s back: %s", d->o.output,
			strerror(errno));
		return EXIT_ERR;
	}
	d->out_size = ds.end;
	return 0;
}

/*
 * Open FILE for appending, never through a symbolic link (O_NOFOLLOW): a
 * new file is created with O_EXCL and given exactly --file-mode; an
 * existing one keeps its mode.  O_NONBLOCK: a FIFO put there after
 * output_open() looked must not block the open (the caller refuses it and
 * clears the flag for anything else).  Sets *@created.
 */
static int open_output_file(struct daemon *d, bool *created)
{
	const int fl = O_WRONLY | O_APPEND | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK;
	int fd, tries;

	for (tries = 0; tries < 8; tries++) {
		fd = open(d->o.output, fl | O_CREAT | O_EXCL, d->o.file_mode);
		if (fd >= 0) {
			*created = true;
			if (fchmod(fd, d->o.file_mode))
				log_msg(LOG_WARN, "cannot set mode %04o on %s: %s",
					d->o.file_mode, d->o.output, strerror(errno));
			return fd;
		}
		if (errno != EEXIST)
			break;
		fd = open(d->o.output, fl);
		if (fd >= 0 || errno != ENOENT) {
			*created = false;
			return fd;
		}
		/* Removed between the two opens: try again. */
	}
	return -1;
}

int output_open(struct daemon *d, bool reopen)
{
	bool created = false;
	const char *odd;
	struct stat st;
	int rc;

	if (!strcmp(d->o.output, "-")) {
		d->out_fd = STDOUT_FILENO;
		d->out_is_file = false;
		d->out_size = 0;
		return 0;
	}
	if (!lstat(d->o.output, &st) && (odd = odd_type(st.st_mode))) {
		log_msg(LOG_ERR, "output %s is %s, not a regular file; refusing it (-o - writes to standard output, for a pipe)",
			d->o.output, odd);
		return EXIT_ERR;
	}
	d->out_fd = open_output_file(d, &created);
	if (d->out_fd < 0) {
		log_msg(LOG_ERR, "cannot open output %s: %s%s", d->o.output,
			strerror(errno),
			errno == ELOOP ? " (it is a symbolic link; the daemon does not follow links for its output)" :
			errno == ENXIO ? " (a FIFO or socket put there meanwhile?)" : "");
		return EXIT_ERR;
	}
	if (fstat(d->out_fd, &st)) {
		log_msg(LOG_ERR, "output %s: fstat: %s", d->o.output, strerror(errno));
		goto fail;
	}
	if ((odd = odd_type(st.st_mode))) {
		log_msg(LOG_ERR, "output %s is %s, not a regular file; refusing it",
			d->o.output, odd);
		goto fail;
	}
	/* A character device may block in write(2) like any output. */
	rc = fcntl(d->out_fd, F_GETFL);
	if (rc < 0 || fcntl(d->out_fd, F_SETFL, rc & ~O_NONBLOCK)) {
		log_msg(LOG_ERR, "output %s: fcntl: %s", d->o.output, strerror(errno));
		goto fail;
	}
	d->out_is_file = S_ISREG(st.st_mode);
	d->out_size = d->out_is_file ? (uint64_t)st.st_size : 0;
	d->synced_size = d->out_size;
	d->last_sync = hmb_now_s(CLOCK_MONOTONIC);
	/* A new name in the directory survives a power loss only once the
	 * directory is synced. */
	if (created && d->o.fsync != FSYNC_NONE) {
		rc = hmb_fsync_dir_of(d->o.output);
		if (rc)
			log_msg(LOG_WARN, "output %s: cannot sync its directory: %s",
				d->o.output, strerror(-rc));
	}
	if (d->out_size && !d->o.no_recover) {
		rc = output_check(d, &st);
		if (rc)
			goto fail_rc;
		d->synced_size = d->out_size;
	}
	if (reopen && d->out_is_file && st.st_dev == d->out_dev &&
	    st.st_ino == d->out_ino) {
		/* SIGHUP, FILE not moved away: the same dump goes on. */
		return 0;
	}
	d->out_dev = st.st_dev;
	d->out_ino = st.st_ino;
	return write_sidecar(d) ? EXIT_ERR : 0;

fail:
	rc = EXIT_ERR;
fail_rc:
	close(d->out_fd);
	d->out_fd = -1;
	return rc;
}

/*
 * fdatasync the dump if bytes were written since the last one.  Returns 0,
 * or -1 on failure (logged; the tail is then not published under batch).
 */
int output_sync(struct daemon *d)
{
	if (!d->out_is_file || d->out_size == d->synced_size)
		return 0;
	while (fdatasync(d->out_fd)) {
		if (errno == EINTR)
			continue;
		log_msg(LOG_ERR, "output %s: fdatasync: %s", d->o.output,
			strerror(errno));
		return -1;
	}
	d->st.fsyncs++;
	d->synced_size = d->out_size;
	d->last_sync = hmb_now_s(CLOCK_MONOTONIC);
	return 0;
}

/* --fsync interval: sync once the oldest unsynced byte waited long enough. */
void output_sync_due(struct daemon *d)
{
	if (d->o.fsync == FSYNC_INTERVAL && d->out_size != d->synced_size &&
	    (hmb_now_s(CLOCK_MONOTONIC) - d->last_sync) * 1000 >=
	    d->o.fsync_interval_ms)
		output_sync(d);
}

void output_close(struct daemon *d)
{
	if (d->out_fd >= 0 && d->o.fsync != FSYNC_NONE)
		output_sync(d);
	if (d->out_fd >= 0 && d->out_fd != STDOUT_FILENO && close(d->out_fd))
		log_msg(LOG_WARN, "closing output %s: %s", d->o.output,
			strerror(errno));
	d->out_fd = -1;
}

/* ---------------------------------------------------------- writing out */

static bool errno_retryable(int e)
{
	return e == ENOSPC || e == EIO || e == EDQUOT || e == EFBIG ||
	       e == EAGAIN || e == EINTR;
}

/* Cut FILE back to @size bytes (a record boundary). */
int output_cut(struct daemon *d, uint64_t size)
{
	if (!d->out_is_file || d->out_size == size)
		return 0;
	if (ftruncate(d->out_fd, (off_t)size)) {
		log_msg(LOG_ERR, "output %s: cannot cut back to %" PRIu64 ": %s",
			d->o.output, size, strerror(errno));
		return -1;
	}
	d->out_size = size;
	return 0;
}

/*
 * Where write_iov() writes: the dump FILE (retrying) or a snapshot's dump
 * (not retrying: the records stay in the window for the next request).
 */
struct target {
	int fd;
	const char *name;
	uint64_t *size;		/* bytes in the file, advanced as written */
	bool retry;
};

/*
 * Write the @n buffers of @iov (@len bytes in all) with writev(2) to @t.
 * Partial writes are continued where they stopped; with @t->retry,
 * ENOSPC/EIO and friends are retried with exponential back-off (1 ms to
 * 1 s) for as long as it takes, logged once per episode.  The tail is not
 * touched here, so nothing unwritten is ever published.  Returns 0, -1
 * when the daemon was told to stop while the output still failed or on an
 * error that cannot get better (or any error without @t->retry), or -2
 * when the ring's memory itself is gone (EFAULT reading the spans: device
 * removed, ring file truncated).  @iov is consumed.
 */
static int write_iov(struct daemon *d, const struct target *t,
		     struct iovec *iov, int n, size_t len)
{
	size_t done = 0;
	double delay_ms = 1, t_fail = 0;
	bool episode = false;
	int last_err = 0;
	ssize_t w;

	while (done < len) {
		w = writev(t->fd, iov, n > IOV_MAX ? IOV_MAX : n);
		if (w > 0) {
			done += (size_t)w;
			*t->size += (uint64_t)w;
			/* Step over what was written, into a partial buffer. */
			while (n && (size_t)w >= iov->iov_len) {
				w -= (ssize_t)iov->iov_len;
				iov++;
				n--;
			}
			if (n && w) {
				iov->iov_base = (uint8_t *)iov->iov_base + w;
				iov->iov_len -= (size_t)w;
			}
			continue;
		}
		last_err = w < 0 ? errno : EIO;
		if (last_err == EINTR)
			continue;
		if (last_err == EFAULT && t->retry) {
			log_msg(LOG_ERR, "%s %s gone: its memory is no longer there (EFAULT writing from the ring)",
				d->src.kind == SRC_DEVICE ? "device" : "ring file",
				d->src.path);
			return -2;
		}
		if (!t->retry || !errno_retryable(last_err)) {
			log_msg(LOG_ERR, "output %s: %s; %zu bytes of this batch unwritten",
				t->name, strerror(last_err), len - done);
			return -1;
		}
		if (!episode) {
			episode = true;
			t_fail = hmb_now_s(CLOCK_MONOTONIC);
			d->st.output_errors++;
			log_msg(LOG_WARN, "output %s: %s; holding the ring tail at %" PRIu64
				", %zu bytes pending; retrying",
				t->name, strerror(last_err), d->published,
				len - done);
		}
		d->st.output_retries++;
		signals_read(d);
		if (d->stop) {
			log_msg(LOG_ERR, "output %s: still failing (%s) when told to stop; %zu bytes stay in the ring",
				t->name, strerror(last_err), len - done);
			return -1;
		}
		sleep_ms(d, delay_ms);
		delay_ms = delay_ms * 2 > BACKOFF_CAP_MS ? BACKOFF_CAP_MS : delay_ms * 2;
	}
	if (episode)
		log_msg(LOG_INFO, "output %s: writing again after %.1f s (%s)",
			t->name, hmb_now_s(CLOCK_MONOTONIC) - t_fail, strerror(last_err));
	return 0;
}

/*
 * Write a batch to the dump FILE (write_iov).  On failure FILE is cut back
 * to the last record boundary it had before this batch, so the batch stays
 * in the ring.
 */
int output_write(struct daemon *d, struct iovec *iov, int n, size_t len)
{
	const struct target t = { .fd = d->out_fd, .name = d->o.output,
				  .size = &d->out_size, .retry = true };
	uint64_t start_size = d->out_size;
	int r = write_iov(d, &t, iov, n, len);

	if (r)
		output_cut(d, start_size);
	return r;
}

/*
 * A snapshot's dump and sidecar, through the same writer as FILE's.  The
 * sidecar's clocks are read now, when every record of the dump has been
 * drained: anchor_offset says so (docs/format.md 12.4).
 */
int output_snapshot(struct daemon *d, const char *dir, struct iovec *iov,
		    int n, size_t len, const char *lines)
{
	char path[4096], meta[4096 + 8];
	uint64_t size = 0;
	struct target t = { .name = path, .size = &size, .retry = false };
	struct hmb_sidecar sc;
	struct hmb_error err;
	int r;

	snprintf(path, sizeof(path), "%s/%s", dir, SNAP_DUMP_NAME);
	snprintf(meta, sizeof(meta), "%s.meta", path);
	t.fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
		    d->o.file_mode);
	if (t.fd < 0) {
		log_msg(LOG_ERR, "cannot create %s: %s", path, strerror(errno));
		return -1;
	}
	if (fchmod(t.fd, d->o.file_mode))
		log_msg(LOG_WARN, "cannot set mode %04o on %s: %s",
			d->o.file_mode, path, strerror(errno));
	r = write_iov(d, &t, iov, n, len);
	while (!r && fdatasync(t.fd)) {
		if (errno == EINTR)
			continue;
		log_msg(LOG_ERR, "output %s: fdatasync: %s", path, strerror(errno));
		r = -1;
	}
	if (close(t.fd) && !r) {
		log_msg(LOG_ERR, "output %s: close: %s", path, strerror(errno));
		r = -1;
	}
	if (r)
		return -1;
	sidecar_new(d, &sc);
	if (hmb_sidecar_create(meta, &sc, size, d->o.file_mode, &err) ||
	    hmb_sidecar_append(meta, lines, &err)) {
		log_msg(LOG_ERR, "cannot write sidecar %s: %s", meta, err.msg);
		return -1;
	}
	return 0;
}
