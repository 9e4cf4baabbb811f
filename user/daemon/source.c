// SPDX-License-Identifier: GPL-2.0
/*
 * source.c - the two places a ring can come from: a file-backed ring (the
 * simulator, tests) mapped read-write only so the tail can be stored, or the
 * character device /dev/nvme-hmb-traceN mapped read-only, whose tail is
 * published with NVME_HMB_TRACE_SET_TAIL (format.md 9.4).  Everything after
 * the mapping is the same consumer core.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include "daemon.h"

/*
 * Ring file: the simulator may re-initialise the ring (head = tail = 0)
 * while FROZEN; never store a tail above the current head, which would
 * make the producer believe the ring is over-full.
 */
static int publish_ring_file(void *ctx, uint64_t tail)
{
	volatile struct hmb_ring_hdr *h = ctx;
	uint64_t head = __atomic_load_n(&h->head, __ATOMIC_ACQUIRE);

	/* Cursors count modulo 2^64: compare the distance, not the values. */
	if ((int64_t)(tail - head) > 0)
		return -ESTALE;
	return hmb_publish_store(ctx, tail);
}

static int publish_device(void *ctx, uint64_t tail)
{
	const struct source *s = ctx;
	struct nvme_hmb_trace_tail t = { .tail = tail, .flags = 0 };

	if (ioctl(s->fd, NVME_HMB_TRACE_SET_TAIL, &t) < 0)
		return -errno;
	return 0;
}

hmb_publish_fn source_publish_fn(const struct source *s)
{
	return s->kind == SRC_DEVICE ? publish_device : publish_ring_file;
}

static int open_ring_file(struct source *s, int *err_exit)
{
	struct hmb_ring_hdr hdr;
	struct hmb_error err;
	struct stat st;
	int fd;

	*err_exit = EXIT_ERR;
	fd = open(s->path, O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		log_msg(LOG_ERR, "cannot open ring file %s: %s", s->path,
			strerror(errno));
		return -1;
	}
	if (fstat(fd, &st)) {
		log_msg(LOG_ERR, "%s: fstat: %s", s->path, strerror(errno));
		goto err_close;
	}
	if (!S_ISREG(st.st_mode)) {
		log_msg(LOG_ERR, "%s is not a regular file (use --device for a trace device)",
			s->path);
		goto err_close;
	}
	if ((uint64_t)st.st_size < HMB_RING_HDR_SIZE) {
		log_msg(LOG_ERR, "%s: %lld bytes, too short for a ring header (64 bytes)",
			s->path, (long long)st.st_size);
		*err_exit = EXIT_VERSION;
		goto err_close;
	}
	s->map_len = (size_t)st.st_size;
	/* Writable only so the tail can be stored; records are only read. */
	s->map = mmap(NULL, s->map_len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (s->map == MAP_FAILED) {
		log_msg(LOG_ERR, "%s: mmap of %zu bytes: %s", s->path, s->map_len,
			strerror(errno));
		s->map = NULL;
		goto err_close;
	}
	/* Kept: the records are read with pread (hmb_consumer_set_fd). */
	s->fd = fd;
	memcpy(&hdr, s->map, sizeof(hdr));
	if (hmb_ring_hdr_check(&hdr, s->map_len, &err)) {
		if (err.code == HMB_E_RING_VERSION)
			log_msg(LOG_ERR, "ring %s has version %u; this daemon reads version %d only (refusing): %s",
				s->path, hdr.version, HMB_TRACE_ABI_VERSION, err.msg);
		else
			log_msg(LOG_ERR, "ring %s refused: %s", s->path, err.msg);
		*err_exit = EXIT_VERSION;
		munmap(s->map, s->map_len);
		s->map = NULL;
		close(fd);
		s->fd = -1;
		return -1;
	}
	s->ring_size = hdr.ring_size;
	return 0;

err_close:
	close(fd);
	return -1;
}

static int open_device(struct source *s, int *err_exit)
{
	struct nvme_hmb_trace_info info;
	struct hmb_ring_hdr hdr;
	struct hmb_error err;

	*err_exit = EXIT_ERR;
	/* Read and write: NVME_HMB_TRACE_SET_TAIL is refused on a read-only file. */
	s->fd = open(s->path, O_RDWR | O_CLOEXEC);
	if (s->fd < 0) {
		log_msg(LOG_ERR, "cannot open %s: %s%s", s->path, strerror(errno),
			errno == EBUSY ? " (another consumer holds it, or the in-kernel bridge is on)" :
			errno == ENOENT ? " (is nvme-hmb-trace.ko loaded?)" :
			errno == EACCES ? " (the daemon needs read and write access: publishing the tail moves the ring)" : "");
		return -1;
	}
	memset(&info, 0, sizeof(info));
	if (ioctl(s->fd, NVME_HMB_TRACE_GET_INFO, &info) < 0) {
		log_msg(LOG_ERR, "%s: NVME_HMB_TRACE_GET_INFO: %s", s->path,
			strerror(errno));
		goto err_close;
	}
	if (info.abi_version != HMB_TRACE_ABI_VERSION) {
		log_msg(LOG_ERR, "%s speaks trace ABI version %u; this daemon reads version %d only (refusing)",
			s->path, info.abi_version, HMB_TRACE_ABI_VERSION);
		*err_exit = EXIT_VERSION;
		goto err_close;
	}
	if (info.record_area_off != HMB_RECORD_AREA_OFF ||
	    info.mmap_len < (uint64_t)HMB_RECORD_AREA_OFF + info.ring_size ||
	    info.mmap_len > (uint64_t)HMB_RECORD_AREA_OFF + HMB_RING_MAX_SIZE + 65536) {
		log_msg(LOG_ERR, "%s: inconsistent ring info (ring_size %u, record_area_off %u, mmap_len %llu)",
			s->path, info.ring_size, info.record_area_off,
			(unsigned long long)info.mmap_len);
		*err_exit = EXIT_VERSION;
		goto err_close;
	}
	s->map_len = (size_t)info.mmap_len;
	s->map = mmap(NULL, s->map_len, PROT_READ, MAP_SHARED, s->fd, 0);
	if (s->map == MAP_FAILED) {
		log_msg(LOG_ERR, "%s: mmap of %zu bytes: %s", s->path, s->map_len,
			strerror(errno));
		s->map = NULL;
		goto err_close;
	}
	memcpy(&hdr, s->map, sizeof(hdr));
	if (hmb_ring_hdr_check(&hdr, s->map_len, &err)) {
		log_msg(LOG_ERR, "ring behind %s refused: %s", s->path, err.msg);
		*err_exit = EXIT_VERSION;
		munmap(s->map, s->map_len);
		s->map = NULL;
		goto err_close;
	}
	s->ring_size = hdr.ring_size;
	s->ring_id = info.ring_id;
	memcpy(s->name, info.name, sizeof(info.name));
	s->name[sizeof(info.name) - 1] = 0;
	return 0;

err_close:
	close(s->fd);
	s->fd = -1;
	return -1;
}

int source_open(struct source *s, enum source_kind kind, const char *path,
		int *err_exit)
{
	memset(s, 0, sizeof(*s));
	s->kind = kind;
	s->path = path;
	s->fd = -1;
	return kind == SRC_DEVICE ? open_device(s, err_exit) :
				    open_ring_file(s, err_exit);
}

void source_close(struct source *s)
{
	if (s->map)
		munmap(s->map, s->map_len);
	if (s->fd >= 0)
		close(s->fd);
	s->map = NULL;
	s->fd = -1;
}
