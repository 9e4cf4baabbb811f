// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * t_rename.c - hmb_rename_noreplace() (TAP): a name is taken or not, for
 * files and for directories (the snapshot bundles of the agent and the
 * daemon), both where the filesystem has renameat2's RENAME_NOREPLACE and
 * where it refuses the flag with EINVAL as 9p does.  This program defines
 * renameat2 itself, so that the library calls it instead of libc's and
 * the refusal can be played on any filesystem.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include "hmbtrace.h"
#include "tap.h"

static int refuse_noreplace;	/* play a filesystem without the flag */
static int refused;		/* calls refused so */

int renameat2(int ofd, const char *from, int nfd, const char *to,
	      unsigned int flags)
{
	if (refuse_noreplace && (flags & RENAME_NOREPLACE)) {
		refused++;
		errno = EINVAL;
		return -1;
	}
	return (int)syscall(SYS_renameat2, ofd, from, nfd, to, flags);
}

static char top[] = "/tmp/t_rename.XXXXXX";

static const char *at(const char *name)
{
	static char p[4][256];
	static int n;
	char *s = p[n++ % 4];

	snprintf(s, sizeof(p[0]), "%s/%s", top, name);
	return s;
}

static void put(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	if (!f || fputs(text, f) < 0 || fclose(f))
		abort();
}

static int there(const char *path)
{
	struct stat st;

	return !lstat(path, &st);
}

static int rmtree(const char *path)
{
	char cmd[512];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", path);
	return system(cmd);
}

static void run(const char *mode)
{
	int rc;

	/* a bundle under a free name */
	mkdir(at("tmp1"), 0700);
	put(at("tmp1/trace.bin"), "a");
	rc = hmb_rename_noreplace(at("tmp1"), at("SNAP-a"));
	ok(rc == 0 && there(at("SNAP-a/trace.bin")) && !there(at("tmp1")),
	   "%s: a directory to a free name: %d (%s)", mode, rc,
	   strerror(rc < 0 ? -rc : 0));

	/* never over another bundle */
	mkdir(at("tmp2"), 0700);
	put(at("tmp2/trace.bin"), "b");
	rc = hmb_rename_noreplace(at("tmp2"), at("SNAP-a"));
	ok(rc == -EEXIST && there(at("tmp2/trace.bin")),
	   "%s: a directory onto a non-empty one: -EEXIST (%d), kept", mode,
	   rc);

	/* nor over an empty directory, which rename(2) would replace */
	mkdir(at("SNAP-empty"), 0700);
	rc = hmb_rename_noreplace(at("tmp2"), at("SNAP-empty"));
	ok(rc == -EEXIST && there(at("tmp2/trace.bin")),
	   "%s: a directory onto an empty one: -EEXIST (%d), kept", mode, rc);

	/* nor over a file */
	put(at("f1"), "1");
	put(at("f2"), "2");
	rc = hmb_rename_noreplace(at("f1"), at("f2"));
	ok(rc == -EEXIST && there(at("f1")), "%s: a file onto a file: -EEXIST (%d)",
	   mode, rc);

	/* what is not there is said as it is */
	rc = hmb_rename_noreplace(at("none"), at("f3"));
	ok(rc == -ENOENT, "%s: a name that is not there: -ENOENT (%d)", mode, rc);

	ok(!rmtree(at("SNAP-a")) && !rmtree(at("SNAP-empty")) &&
	   !rmtree(at("tmp2")) && !unlink(at("f1")) && !unlink(at("f2")),
	   "%s: cleaned up", mode);
}

int main(void)
{
	if (!mkdtemp(top))
		return 1;
	run("RENAME_NOREPLACE");
	ok(refused == 0, "the flag was not refused (%d)", refused);
	refuse_noreplace = 1;
	run("refused (EINVAL, as 9p)");
	ok(refused == 5, "the library asked for the flag each time (%d)",
	   refused);
	rmdir(top);
	return tap_done();
}
