// SPDX-License-Identifier: Apache-2.0
/*
 * The analyzer's output files: libhmbtrace's buffered writer on a new file
 * or stdout, with the analyzer's error lines.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analyze.h"

int ob_create(struct hmb_outbuf *ob, const char *path, size_t cap)
{
	bool std = strcmp(path, "-") == 0;
	int fd = std ? STDOUT_FILENO :
		 open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

	if (fd < 0) {
		errorf("%s: cannot create: %s", path, strerror(errno));
		return EXIT_BADINPUT;
	}
	if (hmb_ob_open(ob, fd, std ? "<stdout>" : path, cap)) {
		errorf("out of memory");
		if (!std)
			close(fd);
		return EXIT_BADINPUT;
	}
	return 0;
}

int ob_finish(struct hmb_outbuf *ob, int rc)
{
	int fd = ob->fd;

	hmb_ob_close(ob);
	if (fd != STDOUT_FILENO && close(fd) && rc == 0) {
		errorf("%s: close: %s", ob->name, strerror(errno));
		rc = EXIT_BADINPUT;
	}
	return rc;
}

