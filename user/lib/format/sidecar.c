// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The sidecar metadata file "<dump>.meta" (docs/format.md 12.4): dumps
 * carry no version, so the daemon records the ABI version, the source, the
 * ring size and the host clocks beside each dump, appends "epoch=<dump
 * offset>" lines when the ring is re-initialised and one "restart=" line
 * each time a daemon appends to an existing dump.  Text, "key=value" per
 * line.
 *
 * Every update is a whole new file: the old text (checked) plus the new
 * lines, written to "<path>.tmp" created with O_EXCL | O_NOFOLLOW (never
 * through a link someone planted there), fsync'ed, renamed over the
 * sidecar, then the directory fsync'ed: after a crash the sidecar is
 * either the old or the new one, whole, and nothing already in it is ever
 * dropped.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>

#include "internal.h"
#include "hmbtrace_util.h"

#define SIDECAR_LINE_MAX 1024
/* Header, epochs and restarts at their bounds fit in well under this. */
#define SIDECAR_FILE_MAX (16u << 20)
#define SIDECAR_DEFAULT_MODE 0600

static int write_all(int fd, const char *buf, size_t len)
{
	while (len) {
		ssize_t n = write(fd, buf, len);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		buf += n;
		len -= n;
	}
	return 0;
}

/* fsync the directory holding @path, so a rename or creation in it lasts. */
int hmb_fsync_dir_of(const char *path)
{
	char tmp[4096];
	int fd, rc = 0;

	if (snprintf(tmp, sizeof(tmp), "%s", path) >= (int)sizeof(tmp))
		return -ENAMETOOLONG;
	fd = open(dirname(tmp), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fsync(fd) && errno != EINVAL && errno != EROFS)
		rc = -errno;
	close(fd);
	return rc;
}

/*
 * renameat2's RENAME_NOREPLACE where the filesystem has it.  Where it
 * refuses the flag with EINVAL (9p, as the VM bench shares its results;
 * some NFS and FUSE filesystems), an lstat of @to and then rename(2): a
 * name taken between the two is lost to a file renamed over it, but a
 * directory (a snapshot bundle) is never renamed over a non-empty one.
 */
int hmb_rename_noreplace(const char *from, const char *to)
{
	struct stat st;

	if (!renameat2(AT_FDCWD, from, AT_FDCWD, to, RENAME_NOREPLACE))
		return 0;
	if (errno != EINVAL)
		return -errno;
	if (!lstat(to, &st))
		return -EEXIST;
	if (errno != ENOENT)
		return -errno;
	if (rename(from, to))
		return errno == ENOTEMPTY ? -EEXIST : -errno;
	return 0;
}

void hmb_snapshot_stem(char *buf, size_t len, const char *reason)
{
	struct timespec ts;
	struct tm tm;
	size_t n;

	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	n = strftime(buf, len, "SNAP-%Y%m%dT%H%M%S", &tm);
	snprintf(buf + n, len - n, ".%03ldZ-%s", ts.tv_nsec / 1000000, reason);
}

int hmb_publish_noreplace(const char *tmp, const char *dir, const char *stem,
			  char *out, size_t len)
{
	int rc = -EEXIST;

	for (int i = 1; i < 1000 && rc == -EEXIST; i++) {
		if (i == 1)
			snprintf(out, len, "%s/%s", dir, stem);
		else
			snprintf(out, len, "%s/%s-%d", dir, stem, i);
		rc = hmb_rename_noreplace(tmp, out);
	}
	return rc;
}

/*
 * Replace @path with @text atomically: "<path>.tmp" is created with
 * O_CREAT | O_EXCL | O_NOFOLLOW (a stale one, or a symlink planted there,
 * is unlinked first -- unlink never follows a link -- and the creation
 * retried; it never writes through it), given exactly @mode, written,
 * fsync'ed, renamed over @path, and the directory fsync'ed.
 */
static int replace_file(const char *path, const char *text, size_t len,
			unsigned int mode, struct hmb_error *err)
{
	char tmp[4096];
	int fd = -1, rc, tries;

	if ((size_t)snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= sizeof(tmp))
		return hmb__err(err, HMB_E_INVAL, 0, 0, "sidecar path too long");
	for (tries = 0; tries < 3; tries++) {
		fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW |
			  O_CLOEXEC, mode & 07777);
		if (fd >= 0 || errno != EEXIST)
			break;
		/* Left by a crash, or planted: remove the name, not a target. */
		if (unlink(tmp) && errno != ENOENT)
			return hmb__err(err, HMB_E_IO, errno, 0,
					"%s: exists and cannot be removed: %s",
					tmp, strerror(errno));
	}
	if (fd < 0)
		return hmb__err(err, HMB_E_IO, errno, 0, "%s: cannot create: %s",
				tmp, strerror(errno));
	/* The mode asked for, whatever the umask. */
	rc = fchmod(fd, mode & 07777) ? -errno : 0;
	if (!rc)
		rc = write_all(fd, text, len);
	if (!rc && fsync(fd))
		rc = -errno;
	if (close(fd) && !rc)
		rc = -errno;
	if (!rc && rename(tmp, path))
		rc = -errno;
	if (rc) {
		unlink(tmp);
		return hmb__err(err, HMB_E_IO, -rc, 0, "%s: cannot write: %s",
				path, strerror(-rc));
	}
	rc = hmb_fsync_dir_of(path);
	if (rc)
		return hmb__err(err, HMB_E_IO, -rc, 0,
				"%s: written, but its directory cannot be synced: %s",
				path, strerror(-rc));
	return 0;
}

static bool one_line(const char *s, size_t max)
{
	return memchr(s, '\0', max) != NULL && !strpbrk(s, "\r\n");
}

int hmb_sidecar_create(const char *path, const struct hmb_sidecar *sc,
		       uint64_t anchor_offset, unsigned int mode,
		       struct hmb_error *err)
{
	char text[1400];
	int len;

	if (!path || !sc)
		return hmb__err(err, HMB_E_INVAL, 0, 0, "no sidecar path or data");
	if (!one_line(sc->source, sizeof(sc->source)))
		return hmb__err(err, HMB_E_INVAL, 0, 0,
				"sidecar source must be one NUL-terminated line");
	len = snprintf(text, sizeof(text),
		       "hmb_trace_sidecar=1\n"
		       "abi_version=%" PRIu32 "\n"
		       "source=%s\n"
		       "ring_size=%" PRIu32 "\n"
		       "realtime_ns=%" PRIu64 "\n"
		       "monotonic_ns=%" PRIu64 "\n"
		       "boottime_ns=%" PRIu64 "\n",
		       sc->abi_version, sc->source, sc->ring_size,
		       sc->realtime_ns, sc->monotonic_ns, sc->boottime_ns);
	if (len > 0 && anchor_offset)
		len += snprintf(text + len, sizeof(text) - len,
				"anchor_offset=%" PRIu64 "\n", anchor_offset);
	if (len < 0 || (size_t)len >= sizeof(text))
		return hmb__err(err, HMB_E_INVAL, 0, 0, "sidecar text too long");
	return replace_file(path, text, len,
			    mode ? mode : SIDECAR_DEFAULT_MODE, err);
}

int hmb_sidecar_write(const char *path, const struct hmb_sidecar *sc,
		      struct hmb_error *err)
{
	return hmb_sidecar_create(path, sc, 0, SIDECAR_DEFAULT_MODE, err);
}

/*
 * Read all of @path (opened without following a symlink, and without
 * blocking: a FIFO or a device is refused, not waited on) into *@out.
 */
static int slurp(const char *path, char **out, size_t *len, unsigned int *mode,
		 struct hmb_error *err)
{
	struct stat st;
	char *buf;
	size_t n = 0;
	int fd;

	fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY |
		  O_CLOEXEC);
	if (fd < 0)
		return hmb__err(err, errno == ENOENT ? HMB_E_SIDECAR : HMB_E_IO,
				errno, 0, "%s: cannot open: %s", path,
				strerror(errno));
	if (fstat(fd, &st)) {
		int e = errno;

		close(fd);
		return hmb__err(err, HMB_E_IO, e, 0, "%s: fstat: %s", path,
				strerror(e));
	}
	if (!S_ISREG(st.st_mode) || (uint64_t)st.st_size > SIDECAR_FILE_MAX) {
		close(fd);
		return hmb__err(err, HMB_E_SIDECAR, 0, 0,
				"%s: not a regular file of at most %u bytes%s",
				path, SIDECAR_FILE_MAX,
				S_ISFIFO(st.st_mode) ? " (a FIFO)" : "");
	}
	if (mode)
		*mode = st.st_mode & 07777;
	buf = malloc((size_t)st.st_size + 1);
	if (!buf) {
		close(fd);
		return hmb__err(err, HMB_E_NOMEM, ENOMEM, 0,
				"%s: out of memory", path);
	}
	while (n < (size_t)st.st_size) {
		ssize_t r = read(fd, buf + n, (size_t)st.st_size - n);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			int e = r < 0 ? errno : 0;

			free(buf);
			close(fd);
			return hmb__err(err, HMB_E_IO, e, 0,
					"%s: read failed%s%s", path,
					e ? ": " : " (file shrank)",
					e ? strerror(e) : "");
		}
		n += (size_t)r;
	}
	close(fd);
	buf[n] = '\0';
	*out = buf;
	*len = n;
	return 0;
}

/*
 * Append @lines (whole lines) to the sidecar at @path: the old text is
 * read and checked (a malformed or newer sidecar is left alone and
 * refused: nothing in it is lost), then the file is replaced by old text +
 * @lines, keeping its permission bits.
 */
int hmb_sidecar_append(const char *path, const char *lines,
		       struct hmb_error *err)
{
	size_t olen, llen;
	unsigned int mode = SIDECAR_DEFAULT_MODE;
	char *old, *text;
	bool nl;
	int rc;

	if (!path || !lines)
		return hmb__err(err, HMB_E_INVAL, 0, 0, "no sidecar path or lines");
	rc = slurp(path, &old, &olen, &mode, err);
	if (rc)
		return rc;
	rc = hmb_sidecar_parse(old, olen, path, NULL, NULL,
			       HMB_SIDECAR_MAX_EPOCHS, NULL, err);
	if (rc) {
		free(old);
		return rc;
	}
	llen = strlen(lines);
	nl = olen && old[olen - 1] != '\n';	/* a last line without its \n */
	text = realloc(old, olen + nl + llen + 1);
	if (!text) {
		free(old);
		return hmb__err(err, HMB_E_NOMEM, ENOMEM, 0,
				"%s: out of memory", path);
	}
	if (nl)
		text[olen++] = '\n';
	memcpy(text + olen, lines, llen);
	/* Never write a sidecar this library would refuse (bounds, syntax). */
	rc = hmb_sidecar_parse(text, olen + llen, path, NULL, NULL,
			       HMB_SIDECAR_MAX_EPOCHS, NULL, err);
	if (!rc)
		rc = replace_file(path, text, olen + llen, mode, err);
	free(text);
	return rc;
}

int hmb_sidecar_append_epoch(const char *path, uint64_t dump_offset,
			     struct hmb_error *err)
{
	char line[64];

	snprintf(line, sizeof(line), "epoch=%" PRIu64 "\n", dump_offset);
	return hmb_sidecar_append(path, line, err);
}

int hmb_sidecar_append_restart(const char *path,
			       const struct hmb_sidecar_restart *r,
			       struct hmb_error *err)
{
	char line[SIDECAR_LINE_MAX + 2];
	int n;

	if (!r)
		return hmb__err(err, HMB_E_INVAL, 0, 0, "no restart data");
	if (!one_line(r->source, sizeof(r->source)))
		return hmb__err(err, HMB_E_INVAL, 0, 0,
				"restart source must be one NUL-terminated line");
	n = snprintf(line, sizeof(line),
		     "restart=%" PRIu64 " tail=%" PRIu64 " ring_size=%" PRIu32
		     " realtime_ns=%" PRIu64 " monotonic_ns=%" PRIu64
		     " boottime_ns=%" PRIu64 " source=%s\n",
		     r->dump_offset, r->tail, r->ring_size, r->realtime_ns,
		     r->monotonic_ns, r->boottime_ns, r->source);
	if (n < 0 || n > SIDECAR_LINE_MAX + 1)
		return hmb__err(err, HMB_E_INVAL, 0, 0,
				"restart line longer than %d bytes",
				SIDECAR_LINE_MAX);
	return hmb_sidecar_append(path, line, err);
}

static bool parse_u64(const char *s, uint64_t max, uint64_t *out)
{
	return hmb_parse_u64(s, HMB_NUM_DEC, 0, max, out) == 0;
}

/*
 * A restart value: "OFFSET" then " key=value" fields; source runs to the
 * end of the line.  Unknown fields are ignored (a newer daemon's).
 */
static bool parse_restart(char *val, struct hmb_sidecar_restart *r)
{
	char *sp = strchr(val, ' '), *f;
	uint64_t v;

	memset(r, 0, sizeof(*r));
	if (sp)
		*sp = '\0';
	if (!parse_u64(val, UINT64_MAX, &r->dump_offset))
		return false;
	for (f = sp ? sp + 1 : NULL; f && *f; ) {
		char *eq = strchr(f, '='), *next;

		if (!eq)
			return false;
		*eq = '\0';
		if (!strcmp(f, "source")) {
			snprintf(r->source, sizeof(r->source), "%s", eq + 1);
			break;
		}
		next = strchr(eq + 1, ' ');
		if (next)
			*next++ = '\0';
		if (!parse_u64(eq + 1, !strcmp(f, "ring_size") ? UINT32_MAX :
			       UINT64_MAX, &v))
			return false;
		if (!strcmp(f, "tail"))
			r->tail = v;
		else if (!strcmp(f, "ring_size"))
			r->ring_size = (uint32_t)v;
		else if (!strcmp(f, "realtime_ns"))
			r->realtime_ns = v;
		else if (!strcmp(f, "monotonic_ns"))
			r->monotonic_ns = v;
		else if (!strcmp(f, "boottime_ns"))
			r->boottime_ns = v;
		f = next;
	}
	return true;
}

static int parse(const char *text, size_t len, const char *name,
		 struct hmb_sidecar *sc, uint64_t *epochs,
		 unsigned int *epoch_lines, size_t max_epochs,
		 size_t *n_epochs, struct hmb_error *err);

int hmb_sidecar_parse(const char *text, size_t len, const char *name,
		      struct hmb_sidecar *sc, uint64_t *epochs,
		      size_t max_epochs, size_t *n_epochs,
		      struct hmb_error *err)
{
	return parse(text, len, name, sc, epochs, NULL, max_epochs, n_epochs,
		     err);
}

static int parse(const char *text, size_t len, const char *name,
		 struct hmb_sidecar *sc, uint64_t *epochs,
		 unsigned int *epoch_lines, size_t max_epochs,
		 size_t *n_epochs, struct hmb_error *err)
{
	char line[SIDECAR_LINE_MAX + 1], esc[128];
	struct hmb_sidecar tmp;
	bool have_abi = false;
	unsigned int lineno = 0;
	size_t pos = 0, ne = 0, nr = 0;

	if (!text && len)
		return hmb__err(err, HMB_E_INVAL, 0, 0, "no sidecar text");
	if (!name)
		name = "sidecar";
	memset(&tmp, 0, sizeof(tmp));
	while (pos < len) {
		const char *nlp = memchr(text + pos, '\n', len - pos);
		size_t l = (nlp ? (size_t)(nlp - text) : len) - pos;
		char *eq, *val;
		uint64_t v;

		lineno++;
		if (l > SIDECAR_LINE_MAX)
			return hmb__err(err, HMB_E_SIDECAR, 0, lineno,
					"%s:%u: line longer than %d bytes",
					name, lineno, SIDECAR_LINE_MAX);
		memcpy(line, text + pos, l);
		line[l] = '\0';
		pos += l + (nlp ? 1 : 0);
		if (memchr(line, '\0', l))
			return hmb__err(err, HMB_E_SIDECAR, 0, lineno,
					"%s:%u: NUL byte in line", name, lineno);
		if (lineno == 1) {
			if (!strncmp(line, "hmb_trace_sidecar=", 18) &&
			    parse_u64(line + 18, UINT32_MAX, &v) && v > 1)
				return hmb__err(err, HMB_E_SIDECAR_VERSION, 0, 1,
						"%s:1: sidecar format %" PRIu64
						" is newer than this library (1)",
						name, v);
			if (strcmp(line, "hmb_trace_sidecar=1"))
				return hmb__err(err, HMB_E_SIDECAR, 0, 1,
						"%s:1: not a sidecar (first line must be \"hmb_trace_sidecar=1\")",
						name);
			continue;
		}
		if (!l)
			continue;
		eq = strchr(line, '=');
		if (!eq)
			return hmb__err(err, HMB_E_SIDECAR, 0, lineno,
					"%s:%u: no '=' in line", name, lineno);
		*eq = '\0';
		val = eq + 1;
		if (!strcmp(line, "source")) {
			snprintf(tmp.source, sizeof(tmp.source), "%s", val);
			continue;
		}
		if (!strcmp(line, "restart")) {
			struct hmb_sidecar_restart r;

			if (!parse_restart(val, &r))
				return hmb__err(err, HMB_E_SIDECAR, 0, lineno,
						"%s:%u: malformed restart line",
						name, lineno);
			if (++nr > HMB_SIDECAR_MAX_RESTARTS)
				return hmb__err(err, HMB_E_SIDECAR, 0, lineno,
						"%s:%u: more than %d restart lines",
						name, lineno,
						HMB_SIDECAR_MAX_RESTARTS);
			continue;
		}
		if (strcmp(line, "abi_version") && strcmp(line, "ring_size") &&
		    strcmp(line, "realtime_ns") &&
		    strcmp(line, "monotonic_ns") &&
		    strcmp(line, "boottime_ns") && strcmp(line, "epoch") &&
		    strcmp(line, "anchor_offset"))
			continue;	/* unknown keys: forward compatible */
		if (!parse_u64(val, !strcmp(line, "abi_version") ||
				    !strcmp(line, "ring_size") ? UINT32_MAX :
				    UINT64_MAX, &v))
			return hmb__err(err, HMB_E_SIDECAR, 0, lineno,
					"%s:%u: %s=%s is not a valid number",
					name, lineno, line,
					hmb_text_esc(esc, sizeof(esc), val));
		if (!strcmp(line, "abi_version")) {
			if (v == 0 || v > HMB_TRACE_ABI_VERSION)
				return hmb__err(err, v ? HMB_E_SIDECAR_VERSION :
						HMB_E_SIDECAR, 0, lineno,
						"%s:%u: abi_version %" PRIu64
						" is not supported (this library reads version %d)",
						name, lineno, v,
						HMB_TRACE_ABI_VERSION);
			tmp.abi_version = v;
			have_abi = true;
		} else if (!strcmp(line, "ring_size")) {
			tmp.ring_size = v;
		} else if (!strcmp(line, "realtime_ns")) {
			tmp.realtime_ns = v;
		} else if (!strcmp(line, "monotonic_ns")) {
			tmp.monotonic_ns = v;
		} else if (!strcmp(line, "boottime_ns")) {
			tmp.boottime_ns = v;
		} else if (!strcmp(line, "anchor_offset")) {
			tmp.anchor_offset = v;
		} else {
			if (ne >= max_epochs)
				return hmb__err(err, HMB_E_SIDECAR, 0, lineno,
						"%s:%u: more than %zu epoch lines",
						name, lineno, max_epochs);
			if (epochs)
				epochs[ne] = v;
			if (epoch_lines)
				epoch_lines[ne] = lineno;
			ne++;
		}
	}
	if (lineno == 0)
		return hmb__err(err, HMB_E_SIDECAR, 0, 0, "%s: empty sidecar",
				name);
	if (!have_abi)
		return hmb__err(err, HMB_E_SIDECAR, 0, 0,
				"%s: no abi_version line", name);
	tmp.n_epochs = ne;
	tmp.n_restarts = nr;
	if (sc)
		*sc = tmp;
	if (n_epochs)
		*n_epochs = ne;
	return 0;
}

static int sidecar_parse_file(const char *path, struct hmb_sidecar *sc,
			      uint64_t *epochs, unsigned int *lines,
			      size_t max_epochs, size_t *n_epochs,
			      struct hmb_error *err)
{
	char *text;
	size_t len;
	int rc;

	rc = slurp(path, &text, &len, NULL, err);
	if (rc)
		return rc;
	rc = parse(text, len, path, sc, epochs, lines, max_epochs, n_epochs,
		   err);
	free(text);
	return rc;
}

int hmb_sidecar_read(const char *path, struct hmb_sidecar *sc,
		     struct hmb_error *err)
{
	if (!path || !sc)
		return hmb__err(err, HMB_E_INVAL, 0, 0, "no sidecar path or data");
	return sidecar_parse_file(path, sc, NULL, NULL, HMB_SIDECAR_MAX_EPOCHS,
				  NULL, err);
}

int hmb_sidecar_epochs(const char *path, uint64_t *offs, size_t max,
		       size_t *n, struct hmb_error *err)
{
	if (!path || !n || (max && !offs))
		return hmb__err(err, HMB_E_INVAL, 0, 0, "no sidecar path or list");
	*n = 0;
	if (max > HMB_SIDECAR_MAX_EPOCHS)
		max = HMB_SIDECAR_MAX_EPOCHS;
	return sidecar_parse_file(path, NULL, offs, NULL, max, n, err);
}

int hmb_sidecar_epoch_lines(const char *path, uint64_t *offs,
			    unsigned int *lines, size_t max, size_t *n,
			    struct hmb_error *err)
{
	if (!path || !n || (max && (!offs || !lines)))
		return hmb__err(err, HMB_E_INVAL, 0, 0, "no sidecar path or list");
	*n = 0;
	if (max > HMB_SIDECAR_MAX_EPOCHS)
		max = HMB_SIDECAR_MAX_EPOCHS;
	return sidecar_parse_file(path, NULL, offs, lines, max, n, err);
}
