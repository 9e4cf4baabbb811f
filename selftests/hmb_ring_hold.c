// SPDX-License-Identifier: GPL-2.0
/*
 * hmb_ring_hold DEVICE: hold /dev/nvme-hmb-traceN open and mapped while its
 * provider goes away, and check what a consumer must see then: POLLHUP,
 * ENODEV from ioctl and mmap, SIGBUS (never stale or freed memory) from the
 * old mapping.  Prints "ready" on stderr once mapped, TAP on stdout.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <linux/nvme_hmb_trace.h>

static sigjmp_buf jb;
static int n, failed;

static void on_sigbus(int sig)
{
	siglongjmp(jb, sig);
}

static void tap(int ok, const char *what, const char *why)
{
	printf("%sok %d - %s\n", ok ? "" : "not ", ++n, what);
	if (!ok) {
		printf("# %s\n", why);
		failed = 1;
	}
}

int main(int argc, char **argv)
{
	struct nvme_hmb_trace_info info;
	struct nvme_hmb_trace_tail t = { 0 };
	struct pollfd p;
	volatile unsigned int magic = 0;
	char why[256];
	void *map, *m2;
	int fd, r, timeout_ms;

	if (argc < 2) {
		fprintf(stderr, "usage: %s /dev/nvme-hmb-traceN [timeout_s]\n", argv[0]);
		return 2;
	}
	timeout_ms = (argc > 2 ? atoi(argv[2]) : 60) * 1000;
	fd = open(argv[1], O_RDWR | O_CLOEXEC);	/* SET_TAIL needs FMODE_WRITE */
	if (fd < 0) {
		fprintf(stderr, "hmb_ring_hold: open %s: %s\n", argv[1], strerror(errno));
		return 1;
	}
	if (ioctl(fd, NVME_HMB_TRACE_GET_INFO, &info)) {
		fprintf(stderr, "hmb_ring_hold: GET_INFO: %s\n", strerror(errno));
		return 1;
	}
	map = mmap(NULL, info.mmap_len, PROT_READ, MAP_SHARED, fd, 0);
	if (map == MAP_FAILED) {
		fprintf(stderr, "hmb_ring_hold: mmap: %s\n", strerror(errno));
		return 1;
	}
	magic = ((struct hmb_ring_hdr *)map)->magic;
	tap(magic == HMB_RING_MAGIC, "ring header readable through the mapping",
	    "bad magic");
	fprintf(stderr, "ready\n");

	/* Drain nothing; wait for the provider to disappear. */
	p.fd = fd;
	p.events = POLLIN;
	do {
		p.revents = 0;
		r = poll(&p, 1, timeout_ms);
	} while (r == 1 && !(p.revents & POLLHUP) && !usleep(100000));
	snprintf(why, sizeof(why), "poll returned %d revents %#x", r, p.revents);
	tap(r == 1 && (p.revents & POLLHUP), "POLLHUP after provider removal", why);

	r = ioctl(fd, NVME_HMB_TRACE_GET_INFO, &info);
	snprintf(why, sizeof(why), "ret %d errno %s", r, strerror(errno));
	tap(r == -1 && errno == ENODEV, "GET_INFO fails with ENODEV", why);
	r = ioctl(fd, NVME_HMB_TRACE_SET_TAIL, &t);
	snprintf(why, sizeof(why), "ret %d errno %s", r, strerror(errno));
	tap(r == -1 && errno == ENODEV, "SET_TAIL fails with ENODEV", why);
	m2 = mmap(NULL, info.mmap_len, PROT_READ, MAP_SHARED, fd, 0);
	snprintf(why, sizeof(why), "mmap %p errno %s", m2, strerror(errno));
	tap(m2 == MAP_FAILED && errno == ENODEV, "new mmap fails with ENODEV", why);

	signal(SIGBUS, on_sigbus);
	signal(SIGSEGV, on_sigbus);
	r = sigsetjmp(jb, 1);
	if (!r) {
		magic = ((volatile struct hmb_ring_hdr *)map)->magic;
		snprintf(why, sizeof(why), "read %#x from the old mapping", magic);
		tap(0, "old mapping faults (SIGBUS) after removal", why);
	} else {
		snprintf(why, sizeof(why), "signal %d", r);
		tap(r == SIGBUS, "old mapping faults (SIGBUS) after removal", why);
	}
	tap(munmap(map, info.mmap_len) == 0, "munmap after removal", strerror(errno));
	tap(close(fd) == 0, "close after removal", strerror(errno));
	printf("1..%d\n", n);
	return failed;
}
