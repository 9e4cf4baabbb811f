// SPDX-License-Identifier: Apache-2.0
/*
 * The sidecar metadata file "<dump>.meta" (format.md 12.4): dumps carry no
 * version, so
 * the daemon records the ABI version, the source, the ring size and the host
 * clocks at open beside each dump, and appends "epoch=<dump offset>" lines
 * when the ring is re-initialised.  Text, "key=value" per line.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

#define SIDECAR_LINE_MAX 1024

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

int hmb_sidecar_write(const char *path, const struct hmb_sidecar *sc,
		      struct hmb_error *err)
{
	char tmp[4096], text[1024];
	int fd, rc, len;

	if (!path || !sc)
		return hmb__err(err, HMB_E_INVAL, 0, 0, "no sidecar path or data");
	if (memchr(sc->source, '\0', sizeof(sc->source)) == NULL ||
	    strpbrk(sc->source, "\r\n"))
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
	if (len < 0 || (size_t)len >= sizeof(text))
		return hmb__err(err, HMB_E_INVAL, 0, 0, "sidecar text too long");
	if ((size_t)snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= sizeof(tmp))
		return hmb__err(err, HMB_E_INVAL, 0, 0, "sidecar path too long");
	/* Write beside and rename: a reader never sees half a sidecar. */
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return hmb__err(err, HMB_E_IO, errno, 0, "%s: cannot create: %s",
				tmp, strerror(errno));
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
	return 0;
}

int hmb_sidecar_append_epoch(const char *path, uint64_t dump_offset,
			     struct hmb_error *err)
{
	char line[64];
	int fd, rc, len;

	if (!path)
		return hmb__err(err, HMB_E_INVAL, 0, 0, "no sidecar path");
	len = snprintf(line, sizeof(line), "epoch=%" PRIu64 "\n", dump_offset);
	fd = open(path, O_WRONLY | O_APPEND | O_CLOEXEC);
	if (fd < 0)
		return hmb__err(err, HMB_E_IO, errno, 0, "%s: cannot open: %s",
				path, strerror(errno));
	rc = write_all(fd, line, len);
	if (!rc && fsync(fd))
		rc = -errno;
	if (close(fd) && !rc)
		rc = -errno;
	if (rc)
		return hmb__err(err, HMB_E_IO, -rc, 0, "%s: cannot append: %s",
				path, strerror(-rc));
	return 0;
}

static bool parse_u64(const char *s, uint64_t max, uint64_t *out)
{
	char *end;
	unsigned long long v;

	if (*s < '0' || *s > '9')
		return false;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || *end || v > max)
		return false;
	*out = v;
	return true;
}

/*
 * Parse @path; fill @sc (may be NULL) and the epoch list (@epochs may be
 * NULL, then they are only counted and bounded).
 */
static int sidecar_parse(const char *path, struct hmb_sidecar *sc,
			 uint64_t *epochs, size_t max_epochs, size_t *n_epochs,
			 struct hmb_error *err)
{
	char line[SIDECAR_LINE_MAX + 2];
	struct hmb_sidecar tmp;
	bool have_abi = false;
	unsigned lineno = 0;
	size_t ne = 0;
	int rc = 0;
	FILE *f;

	memset(&tmp, 0, sizeof(tmp));
	f = fopen(path, "re");
	if (!f)
		return hmb__err(err, errno == ENOENT ? HMB_E_SIDECAR : HMB_E_IO,
				errno, 0, "%s: cannot open: %s", path,
				strerror(errno));
	while (fgets(line, sizeof(line), f)) {
		size_t l = strlen(line);
		char *eq, *val;
		uint64_t v;

		lineno++;
		if (l && line[l - 1] == '\n')
			line[--l] = '\0';
		else if (!feof(f)) {
			rc = hmb__err(err, HMB_E_SIDECAR, 0, lineno,
				      "%s:%u: line longer than %d bytes",
				      path, lineno, SIDECAR_LINE_MAX);
			goto out;
		}
		if (lineno == 1) {
			if (!strncmp(line, "hmb_trace_sidecar=", 18) &&
			    parse_u64(line + 18, UINT32_MAX, &v) && v > 1) {
				rc = hmb__err(err, HMB_E_SIDECAR_VERSION, 0, 1,
					      "%s:1: sidecar format %" PRIu64
					      " is newer than this library (1)",
					      path, v);
				goto out;
			}
			if (strcmp(line, "hmb_trace_sidecar=1")) {
				rc = hmb__err(err, HMB_E_SIDECAR, 0, 1,
					      "%s:1: not a sidecar (first line must be \"hmb_trace_sidecar=1\")",
					      path);
				goto out;
			}
			continue;
		}
		if (!l)
			continue;
		eq = strchr(line, '=');
		if (!eq) {
			rc = hmb__err(err, HMB_E_SIDECAR, 0, lineno,
				      "%s:%u: no '=' in line", path, lineno);
			goto out;
		}
		*eq = '\0';
		val = eq + 1;
		if (!strcmp(line, "source")) {
			snprintf(tmp.source, sizeof(tmp.source), "%s", val);
			continue;
		}
		if (strcmp(line, "abi_version") && strcmp(line, "ring_size") &&
		    strcmp(line, "realtime_ns") &&
		    strcmp(line, "monotonic_ns") &&
		    strcmp(line, "boottime_ns") && strcmp(line, "epoch"))
			continue;	/* unknown keys: forward compatible */
		if (!parse_u64(val, !strcmp(line, "abi_version") ||
				    !strcmp(line, "ring_size") ? UINT32_MAX :
				    UINT64_MAX, &v)) {
			rc = hmb__err(err, HMB_E_SIDECAR, 0, lineno,
				      "%s:%u: %s=%s is not a valid number",
				      path, lineno, line, val);
			goto out;
		}
		if (!strcmp(line, "abi_version")) {
			if (v == 0 || v > HMB_TRACE_ABI_VERSION) {
				rc = hmb__err(err, v ? HMB_E_SIDECAR_VERSION :
					      HMB_E_SIDECAR, 0, lineno,
					      "%s:%u: abi_version %" PRIu64
					      " is not supported (this library reads version %d)",
					      path, lineno, v,
					      HMB_TRACE_ABI_VERSION);
				goto out;
			}
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
		} else {
			if (ne >= max_epochs) {
				rc = hmb__err(err, HMB_E_SIDECAR, 0, lineno,
					      "%s:%u: more than %zu epoch lines",
					      path, lineno, max_epochs);
				goto out;
			}
			if (epochs)
				epochs[ne] = v;
			ne++;
		}
	}
	if (ferror(f)) {
		rc = hmb__err(err, HMB_E_IO, errno, 0, "%s: read error: %s",
			      path, strerror(errno));
		goto out;
	}
	if (lineno == 0) {
		rc = hmb__err(err, HMB_E_SIDECAR, 0, 0, "%s: empty sidecar",
			      path);
		goto out;
	}
	if (!have_abi) {
		rc = hmb__err(err, HMB_E_SIDECAR, 0, 0,
			      "%s: no abi_version line", path);
		goto out;
	}
	tmp.n_epochs = ne;
	if (sc)
		*sc = tmp;
	if (n_epochs)
		*n_epochs = ne;
out:
	fclose(f);
	return rc;
}

int hmb_sidecar_read(const char *path, struct hmb_sidecar *sc,
		     struct hmb_error *err)
{
	if (!path || !sc)
		return hmb__err(err, HMB_E_INVAL, 0, 0, "no sidecar path or data");
	return sidecar_parse(path, sc, NULL, HMB_SIDECAR_MAX_EPOCHS, NULL,
			     err);
}

int hmb_sidecar_epochs(const char *path, uint64_t *offs, size_t max,
		       size_t *n, struct hmb_error *err)
{
	if (!path || !n || (max && !offs))
		return hmb__err(err, HMB_E_INVAL, 0, 0, "no sidecar path or list");
	*n = 0;
	if (max > HMB_SIDECAR_MAX_EPOCHS)
		max = HMB_SIDECAR_MAX_EPOCHS;
	return sidecar_parse(path, NULL, offs, max, n, err);
}
