// SPDX-License-Identifier: Apache-2.0
/*
 * The analyzer's output files: libhmbtrace's buffered writer on a new file
 * or stdout, with the analyzer's error lines.  A file is written under a
 * temporary name in its directory and renamed over OUT only when the
 * command succeeds: a bad input never leaves a cut, unterminated file
 * (JSON without its closing bracket, a report without its end) under OUT,
 * nor replaces a good one.  What is not a regular file (/dev/null, a FIFO,
 * a symbolic link) is written through as before.
 */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "analyze.h"

/* The files being written: an analyzer command has one or two at most. */
static struct pending {
	const struct hmb_outbuf *ob;
	char tmp[4096];
} pending[4];

static struct pending *slot(const struct hmb_outbuf *ob)
{
	for (size_t i = 0; i < sizeof(pending) / sizeof(pending[0]); i++)
		if (pending[i].ob == ob)
			return &pending[i];
	return NULL;
}

/* A new temporary beside @path, with the mode a new @path would get. */
static int create_tmp(const char *path, char *tmp, size_t cap)
{
	char dir[4096], base[4096];
	mode_t mask;
	int fd;

	if ((size_t)snprintf(dir, sizeof(dir), "%s", path) >= sizeof(dir) ||
	    (size_t)snprintf(base, sizeof(base), "%s", path) >= sizeof(base) ||
	    (size_t)snprintf(tmp, cap, "%s/.%s.XXXXXX", dirname(dir),
			     basename(base)) >= cap) {
		errno = ENAMETOOLONG;
		return -1;
	}
	fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0)
		return -1;
	mask = umask(0);
	umask(mask);
	if (fchmod(fd, 0644 & ~mask)) {
		int e = errno;

		close(fd);
		unlink(tmp);
		errno = e;
		return -1;
	}
	return fd;
}

int ob_create(struct hmb_outbuf *ob, const char *path, size_t cap)
{
	bool std = strcmp(path, "-") == 0;
	struct pending *p = std ? NULL : slot(NULL);
	int fd = STDOUT_FILENO;
	struct stat st;

	/* /dev/null, a FIFO, a link: written through, as they are */
	if (!std && lstat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
		fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC);
		if (fd < 0) {
			errorf("%s: cannot create: %s", path, strerror(errno));
			return EXIT_BADINPUT;
		}
		p = NULL;
	} else if (!std) {
		if (!p) {
			errorf("%s: too many output files", path);
			return EXIT_BADINPUT;
		}
		fd = create_tmp(path, p->tmp, sizeof(p->tmp));
		if (fd < 0) {
			errorf("%s: cannot create: %s", path, strerror(errno));
			return EXIT_BADINPUT;
		}
	}
	if (hmb_ob_open(ob, fd, std ? "<stdout>" : path, cap)) {
		errorf("out of memory");
		if (!std)
			close(fd);
		if (p)
			unlink(p->tmp);
		return EXIT_BADINPUT;
	}
	if (p)
		p->ob = ob;
	return 0;
}

int ob_finish(struct hmb_outbuf *ob, int rc)
{
	struct pending *p = slot(ob);
	int fd = ob->fd;
	const char *name = ob->name;

	hmb_ob_close(ob);
	if (fd == STDOUT_FILENO)
		return rc;
	if (!p) {
		if (close(fd) && rc == 0) {
			errorf("%s: close: %s", name, strerror(errno));
			rc = EXIT_BADINPUT;
		}
		return rc;
	}
	if (close(fd) && rc == 0) {
		errorf("%s: close: %s", name, strerror(errno));
		rc = EXIT_BADINPUT;
	}
	if (rc == 0 && rename(p->tmp, name)) {
		errorf("%s: cannot rename %s to it: %s", name, p->tmp,
		       strerror(errno));
		rc = EXIT_BADINPUT;
	}
	if (rc) {
		unlink(p->tmp);
		errorf("%s: not written (the partial output was removed)", name);
	}
	p->ob = NULL;
	return rc;
}
