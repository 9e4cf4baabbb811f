/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Shared helpers of the libFuzzer harnesses (fuzz/README.md): a reader
 * that hands out the fuzzer's bytes as small integers, and a memory file
 * for the parsers that read from a file descriptor or a path.
 */
#ifndef HMB_FUZZ_H
#define HMB_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>

/* The fuzzer's bytes, consumed from the front; zeroes once exhausted. */
struct fz {
	const uint8_t *p;
	size_t n;
};

static inline uint64_t fz_bytes(struct fz *f, unsigned int k)
{
	uint64_t v = 0;

	for (unsigned int i = 0; i < k; i++) {
		v |= (uint64_t)(f->n ? *f->p : 0) << (8 * i);
		if (f->n) {
			f->p++;
			f->n--;
		}
	}
	return v;
}

static inline uint8_t fz_u8(struct fz *f) { return (uint8_t)fz_bytes(f, 1); }
static inline uint16_t fz_u16(struct fz *f) { return (uint16_t)fz_bytes(f, 2); }
static inline uint32_t fz_u32(struct fz *f) { return (uint32_t)fz_bytes(f, 4); }
static inline uint64_t fz_u64(struct fz *f) { return fz_bytes(f, 8); }

/* A file holding @data (memfd), positioned at 0; -1 on failure. */
static inline int fz_memfd(const uint8_t *data, size_t len)
{
	int fd = memfd_create("fuzz", MFD_CLOEXEC);
	size_t off = 0;

	if (fd < 0)
		return -1;
	while (off < len) {
		ssize_t w = write(fd, data + off, len - off);

		if (w <= 0) {
			close(fd);
			return -1;
		}
		off += (size_t)w;
	}
	if (lseek(fd, 0, SEEK_SET) != 0) {
		close(fd);
		return -1;
	}
	return fd;
}

/* "/proc/self/fd/N" for the parsers that take a path. */
static inline void fz_fd_path(int fd, char *buf, size_t len)
{
	snprintf(buf, len, "/proc/self/fd/%d", fd);
}

/* An invariant of the code under test failed: make it a finding. */
#define FZ_ASSERT(cond)							\
	do {								\
		if (!(cond)) {						\
			fprintf(stderr, "%s:%d: invariant failed: %s\n",	\
				__FILE__, __LINE__, #cond);		\
			abort();					\
		}							\
	} while (0)

#endif
