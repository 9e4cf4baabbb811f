// SPDX-License-Identifier: Apache-2.0
/*
 * fsync-spy.so - an LD_PRELOAD observer for the durability tests
 * (tests/classic/t10-durability.sh): every write, writev, fsync,
 * fdatasync, rename and open-with-O_CREAT the program makes is logged to
 * $HMB_SPY_LOG, one line each, with the path the file descriptor names and
 * the ring's published tail at that moment (read from $HMB_SPY_RING, a
 * file-backed ring, mapped read-only):
 *
 *   write /path/to/out.bin tail=4096
 *   fdatasync /path/to/out.bin tail=4096
 *   rename /path/x.meta.tmp /path/x.meta tail=...
 *   fsync /path (a directory) tail=...
 *
 * The test then checks the order: under --fsync batch, every write to the
 * dump is followed by an fdatasync before the tail moves.  Calls are
 * passed on unchanged.
 *
 * With HMB_SPY_MUTATE=1 it also plays a device that rewrites a record
 * between the daemon's check and its write (t12-write-mode.sh): at the
 * first writev(2) it sets flag bit 7 in the header of the record its first
 * buffer starts with -- in the ring, which that buffer points into under
 * --write-mode spans -- before passing the call on.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>

static int log_fd = -2;
static const volatile uint64_t *tail_p;

static void spy_init(void)
{
	const char *lp, *rp;
	int fd;

	if (log_fd != -2)
		return;
	log_fd = -1;
	lp = getenv("HMB_SPY_LOG");
	rp = getenv("HMB_SPY_RING");
	if (!lp)
		return;
	log_fd = (int)syscall(SYS_openat, AT_FDCWD, lp,
			      O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
	if (rp) {
		fd = (int)syscall(SYS_openat, AT_FDCWD, rp, O_RDONLY | O_CLOEXEC);
		if (fd >= 0) {
			void *m = mmap(NULL, 64, PROT_READ, MAP_SHARED, fd, 0);

			if (m != MAP_FAILED)
				tail_p = (const volatile uint64_t *)((char *)m + 0x18);
			syscall(SYS_close, fd);
		}
	}
}

static void fd_path(int fd, char *buf, size_t len)
{
	char link[64];
	ssize_t n;

	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	n = readlink(link, buf, len - 1);
	if (n < 0)
		n = snprintf(buf, len, "fd%d", fd);
	buf[n] = '\0';
}

static void spy_log(const char *fmt, ...)
{
	char line[8400];
	va_list ap;
	int n;

	spy_init();
	if (log_fd < 0)
		return;
	va_start(ap, fmt);
	n = vsnprintf(line, sizeof(line) - 40, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if (n > (int)sizeof(line) - 40)
		n = (int)sizeof(line) - 40;
	n += snprintf(line + n, 40, " tail=%" PRIu64 "\n",
		      tail_p ? __atomic_load_n(tail_p, __ATOMIC_ACQUIRE) : 0);
	syscall(SYS_write, log_fd, line, (size_t)n);
}

static void log_fd_call(const char *what, int fd)
{
	char p[4096];
	int e = errno;

	fd_path(fd, p, sizeof(p));
	spy_log("%s %s", what, p);
	errno = e;
}

#define REAL(name) \
	static __typeof__(name) *real_##name; \
	if (!real_##name) \
		real_##name = (__typeof__(name) *)dlsym(RTLD_NEXT, #name)

ssize_t write(int fd, const void *buf, size_t n)
{
	REAL(write);
	if (fd > 2)
		log_fd_call("write", fd);
	return real_write(fd, buf, n);
}

ssize_t writev(int fd, const struct iovec *iov, int cnt)
{
	static int mutated;

	REAL(writev);
	if (fd > 2)
		log_fd_call("writev", fd);
	if (fd > 2 && cnt > 0 && !mutated && getenv("HMB_SPY_MUTATE") &&
	    iov[0].iov_len >= 32) {
		mutated = 1;
		((volatile uint8_t *)iov[0].iov_base)[19] |= 0x80;
		spy_log("mutated flags of the record at %p", iov[0].iov_base);
	}
	return real_writev(fd, iov, cnt);
}

int fsync(int fd)
{
	REAL(fsync);
	log_fd_call("fsync", fd);
	return real_fsync(fd);
}

int fdatasync(int fd)
{
	REAL(fdatasync);
	log_fd_call("fdatasync", fd);
	return real_fdatasync(fd);
}

int rename(const char *from, const char *to)
{
	int rc, e;

	REAL(rename);
	rc = real_rename(from, to);
	e = errno;
	if (rc == 0)
		spy_log("rename %s %s", from, to);
	errno = e;
	return rc;
}
