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
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
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

/*
 * An output directory (convert --to ctf): new, or an existing empty one.
 * Refused before any input is read when it is something else.
 */
static int od_check(const char *path)
{
	struct dirent *e;
	bool trace = false, other = false;
	DIR *d = opendir(path);

	if (!d) {
		if (errno == ENOENT)
			return 0;
		errorf("%s: cannot open: %s", path, strerror(errno));
		return EXIT_BADINPUT;
	}
	while ((e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		if (!strcmp(e->d_name, "metadata"))
			trace = true;
		else
			other = true;
	}
	closedir(d);
	if (trace) {
		errorf("%s: already holds a trace (metadata); remove it or give a new directory",
		       path);
		return EXIT_BADINPUT;
	}
	if (other) {
		errorf("%s: not empty; give a new or an empty directory", path);
		return EXIT_BADINPUT;
	}
	return 0;
}

int od_create(const char *path, char *out, char *tmp, size_t cap)
{
	char dir[PATH_MAX], base[PATH_MAX];
	struct stat st;
	mode_t mask;
	int rc;

	/* a link to a directory: the directory is the output, as it was */
	if (lstat(path, &st) == 0 && S_ISLNK(st.st_mode) &&
	    stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
		if (!realpath(path, out)) {
			errorf("%s: %s", path, strerror(errno));
			return EXIT_BADINPUT;
		}
	} else if ((size_t)snprintf(out, PATH_MAX, "%s", path) >= PATH_MAX) {
		errorf("%s: %s", path, strerror(ENAMETOOLONG));
		return EXIT_BADINPUT;
	}
	rc = od_check(out);
	if (rc)
		return rc;
	snprintf(dir, sizeof(dir), "%s", out);
	snprintf(base, sizeof(base), "%s", out);
	if ((size_t)snprintf(tmp, cap, "%s/.%s.XXXXXX", dirname(dir),
			     basename(base)) >= cap) {
		errorf("%s: cannot create: %s", path, strerror(ENAMETOOLONG));
		return EXIT_BADINPUT;
	}
	if (!mkdtemp(tmp)) {
		errorf("%s: cannot create: %s", path, strerror(errno));
		return EXIT_BADINPUT;
	}
	mask = umask(0);
	umask(mask);
	if (chmod(tmp, 0755 & ~mask)) {
		errorf("%s: cannot create: %s", path, strerror(errno));
		rmdir(tmp);
		return EXIT_BADINPUT;
	}
	return 0;
}

/* The converters write only files, no subdirectories. */
static void od_remove(const char *tmp)
{
	struct dirent *e;
	DIR *d = opendir(tmp);

	if (d) {
		while ((e = readdir(d)))
			if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
				unlinkat(dirfd(d), e->d_name, 0);
		closedir(d);
	}
	rmdir(tmp);
}

int od_finish(const char *path, const char *out, const char *tmp, int rc)
{
	/* rename() replaces an empty directory, never a full one */
	if (rc == 0 && rename(tmp, out)) {
		errorf("%s: cannot rename %s to it: %s", path, tmp,
		       strerror(errno));
		rc = EXIT_BADINPUT;
	}
	if (rc) {
		od_remove(tmp);
		errorf("%s: not written (the partial output was removed)", path);
	}
	return rc;
}
