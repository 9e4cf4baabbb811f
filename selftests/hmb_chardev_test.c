// SPDX-License-Identifier: GPL-2.0
/*
 * hmb_chardev_test - one test per contract of /dev/nvme-hmb-traceN.
 *
 * Runs as root in the VM guest with nvme-hmb-trace.ko loaded.  Variants:
 *   test     the module's in-kernel test producer ring (test_rings=1);
 *            records are made through sysfs producer/produce.
 *   ivshmem  the ivshmem-plain BAR; this program plays the firmware and
 *            writes records through the PCI resource2 mapping.
 * A variant whose ring is absent is skipped, not failed.  The fw fixture
 * runs on the ivshmem ring alone: it writes ring bytes no producer of the
 * module would.
 */
#include <dirent.h>
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <linux/nvme_hmb_trace.h>

#include "kselftest_harness.h"

#define CLASS_DIR "/sys/class/nvme-hmb-trace"

static int sysfs_read(const char *dev, const char *attr, char *buf, size_t len)
{
	char path[PATH_MAX];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), CLASS_DIR "/%s/%s", dev, attr);
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n < 0)
		return -errno;
	buf[n] = 0;
	if (n && buf[n - 1] == '\n')
		buf[n - 1] = 0;
	return 0;
}

/* Returns 0 or -errno of the write, as the kernel reported it. */
static int sysfs_write(const char *dev, const char *attr, const char *val)
{
	char path[PATH_MAX];
	int fd, ret = 0;

	snprintf(path, sizeof(path), CLASS_DIR "/%s/%s", dev, attr);
	fd = open(path, O_WRONLY);
	if (fd < 0)
		return -errno;
	if (write(fd, val, strlen(val)) < 0)
		ret = -errno;
	close(fd);
	return ret;
}

static unsigned long long sysfs_u64(const char *dev, const char *attr)
{
	char buf[64];

	if (sysfs_read(dev, attr, buf, sizeof(buf)))
		return ~0ULL;
	return strtoull(buf, NULL, 0);
}

/* Finds the ring whose provider attribute is @provider. */
static int find_ring(const char *provider, char *dev, size_t len)
{
	struct dirent *de;
	char buf[64];
	DIR *d;
	int ret = -ENOENT;

	d = opendir(CLASS_DIR);
	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		if (sysfs_read(de->d_name, "provider", buf, sizeof(buf)))
			continue;
		if (!strcmp(buf, provider)) {
			snprintf(dev, len, "%s", de->d_name);
			ret = 0;
			break;
		}
	}
	closedir(d);
	return ret;
}

FIXTURE(ring) {
	char dev[256];
	char node[300];
	int fd;
	struct nvme_hmb_trace_info info;
	void *map;		/* consumer's read-only mapping */
	uint8_t *fw;		/* ivshmem: the producer's writable view */
	size_t fw_len;
	uint32_t seq;
};

FIXTURE_VARIANT(ring) {
	const char *provider;
	uint32_t kind;
};

FIXTURE_VARIANT_ADD(ring, test) {
	.provider = "test",
	.kind = NVME_HMB_TRACE_PROVIDER_TEST,
};

FIXTURE_VARIANT_ADD(ring, ivshmem) {
	.provider = "ivshmem",
	.kind = NVME_HMB_TRACE_PROVIDER_IVSHMEM,
};

static struct hmb_ring_hdr *fw_hdr(FIXTURE_DATA(ring) *self)
{
	return (struct hmb_ring_hdr *)self->fw;
}

/* ivshmem: this process is the firmware; start from an empty ring. */
static int fw_open(FIXTURE_DATA(ring) *self)
{
	char path[PATH_MAX], link[PATH_MAX];
	struct hmb_ring_hdr *h;
	struct stat st;
	ssize_t n;
	off_t sz;
	int fd;

	snprintf(path, sizeof(path), CLASS_DIR "/%s/device", self->dev);
	n = readlink(path, link, sizeof(link) - 1);
	if (n < 0)
		return -errno;
	link[n] = 0;
	snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/resource2",
		 strrchr(link, '/') + 1);
	fd = open(path, O_RDWR);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st)) {
		close(fd);
		return -errno;
	}
	sz = st.st_size;
	self->fw = mmap(NULL, sz, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (self->fw == MAP_FAILED)
		return -errno;
	self->fw_len = sz;
	h = fw_hdr(self);
	__atomic_store_n(&h->tail, 0, __ATOMIC_RELEASE);
	__atomic_store_n(&h->head, 0, __ATOMIC_RELEASE);
	h->flags = 0;
	return 0;
}

/* Make @n records of 16-byte payload (no wrap: tests stay in lap 0). */
static int produce(FIXTURE_DATA(ring) *self,
		   const FIXTURE_VARIANT(ring) *variant, unsigned int n)
{
	struct hmb_ring_hdr *h;
	char buf[32];
	unsigned int i;

	if (variant->kind == NVME_HMB_TRACE_PROVIDER_TEST) {
		snprintf(buf, sizeof(buf), "%u", n);
		sysfs_write(self->dev, "producer/payload_min", "16");
		sysfs_write(self->dev, "producer/payload_max", "16");
		return sysfs_write(self->dev, "producer/produce", buf);
	}
	h = fw_hdr(self);
	for (i = 0; i < n; i++) {
		uint64_t head = h->head;
		struct hmb_record_hdr *r = (void *)(self->fw + HMB_RECORD_AREA_OFF +
						    (head & (h->ring_size - 1)));

		memset(r, 0, HMB_RECORD_SIZE(16));
		r->magic = HMB_RECORD_MAGIC;
		r->seq = self->seq++;
		r->payload_len = 16;
		__atomic_store_n(&h->head, head + HMB_RECORD_SIZE(16),
				 __ATOMIC_RELEASE);
	}
	return 0;
}

static uint64_t map_head(FIXTURE_DATA(ring) *self)
{
	return __atomic_load_n(&((struct hmb_ring_hdr *)self->map)->head,
			       __ATOMIC_ACQUIRE);
}

static uint64_t map_tail(FIXTURE_DATA(ring) *self)
{
	return __atomic_load_n(&((struct hmb_ring_hdr *)self->map)->tail,
			       __ATOMIC_ACQUIRE);
}

FIXTURE_SETUP(ring)
{
	self->fd = -1;
	self->map = MAP_FAILED;
	self->fw = NULL;
	if (find_ring(variant->provider, self->dev, sizeof(self->dev)))
		SKIP(return, "no %s ring registered", variant->provider);
	snprintf(self->node, sizeof(self->node), "/dev/%s", self->dev);
	sysfs_write(self->dev, "bridge", "0");
	if (variant->kind == NVME_HMB_TRACE_PROVIDER_TEST) {
		sysfs_write(self->dev, "producer/running", "0");
		sysfs_write(self->dev, "producer/frozen", "0");
		ASSERT_EQ(0, sysfs_write(self->dev, "producer/reset", "1"));
	} else {
		ASSERT_EQ(0, fw_open(self));
	}
	/* SET_TAIL moves the ring: it needs a file opened for writing. */
	self->fd = open(self->node, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, self->fd) TH_LOG("open %s: %s", self->node, strerror(errno));
	memset(&self->info, 0xff, sizeof(self->info));
	ASSERT_EQ(0, ioctl(self->fd, NVME_HMB_TRACE_GET_INFO, &self->info));
	self->map = mmap(NULL, self->info.mmap_len, PROT_READ, MAP_SHARED,
			 self->fd, 0);
	ASSERT_NE(MAP_FAILED, self->map) TH_LOG("mmap: %s", strerror(errno));
}

FIXTURE_TEARDOWN(ring)
{
	if (self->map != MAP_FAILED)
		munmap(self->map, self->info.mmap_len);
	if (self->fd >= 0)
		close(self->fd);
	if (self->fw)
		munmap(self->fw, self->fw_len);
}

/*
 * Close the consumer, put head and tail at @cursor (an empty ring) and open
 * and map it again.  The sampler takes its first head at open, so the
 * cursors are moved while nobody consumes.
 */
static int reopen_at(FIXTURE_DATA(ring) *self,
		     const FIXTURE_VARIANT(ring) *variant, uint64_t cursor)
{
	char buf[32];
	int ret;

	if (self->map != MAP_FAILED)
		munmap(self->map, self->info.mmap_len);
	self->map = MAP_FAILED;
	close(self->fd);
	self->fd = -1;
	if (variant->kind == NVME_HMB_TRACE_PROVIDER_TEST) {
		snprintf(buf, sizeof(buf), "%llu", (unsigned long long)cursor);
		ret = sysfs_write(self->dev, "producer/start_cursor", buf);
		if (!ret)
			ret = sysfs_write(self->dev, "producer/reset", "1");
		sysfs_write(self->dev, "producer/start_cursor", "0");
		if (ret)
			return ret;
	} else {
		__atomic_store_n(&fw_hdr(self)->tail, cursor, __ATOMIC_RELEASE);
		__atomic_store_n(&fw_hdr(self)->head, cursor, __ATOMIC_RELEASE);
	}
	self->fd = open(self->node, O_RDWR | O_CLOEXEC);
	if (self->fd < 0)
		return -errno;
	self->map = mmap(NULL, self->info.mmap_len, PROT_READ, MAP_SHARED,
			 self->fd, 0);
	return self->map == MAP_FAILED ? -errno : 0;
}

TEST_F(ring, second_open_is_ebusy)
{
	int fd = open(self->node, O_RDONLY);

	ASSERT_EQ(-1, fd);
	ASSERT_EQ(EBUSY, errno);
}

TEST_F(ring, close_releases_lock)
{
	int fd;

	ASSERT_EQ(0, produce(self, variant, 2));
	/* A mapping holds the open file, and with it the lock, too. */
	munmap(self->map, self->info.mmap_len);
	self->map = MAP_FAILED;
	close(self->fd);
	fd = open(self->node, O_RDONLY);
	ASSERT_LE(0, fd) TH_LOG("reopen: %s", strerror(errno));
	self->fd = fd;
	/* Closing did not drain: the records are still there. */
	EXPECT_EQ(0, sysfs_u64(self->dev, "tail"));
	EXPECT_EQ(2 * HMB_RECORD_SIZE(16), sysfs_u64(self->dev, "head"));
}

TEST_F(ring, get_info_fields)
{
	struct nvme_hmb_trace_info *i = &self->info;
	long page = sysconf(_SC_PAGESIZE);
	unsigned int id;
	size_t k;

	EXPECT_EQ(HMB_TRACE_ABI_VERSION, i->abi_version);
	EXPECT_EQ(sysfs_u64(self->dev, "ring_size"), i->ring_size);
	EXPECT_EQ(HMB_RECORD_AREA_OFF, i->record_area_off);
	ASSERT_EQ(1, sscanf(self->dev, "nvme-hmb-trace%u", &id));
	EXPECT_EQ(id, i->ring_id);
	EXPECT_EQ((HMB_RECORD_AREA_OFF + i->ring_size + page - 1) & ~(page - 1),
		  i->mmap_len);
	EXPECT_EQ(variant->kind, i->provider);
	EXPECT_EQ(0, i->reserved0);
	EXPECT_NE(NULL, memchr(i->name, 0, sizeof(i->name)));
	EXPECT_NE(NULL, memchr(i->ctrl, 0, sizeof(i->ctrl)));
	EXPECT_NE(0, i->name[0]);
	EXPECT_NE(0, i->ctrl[0]);
	for (k = 0; k < sizeof(i->reserved) / sizeof(i->reserved[0]); k++)
		EXPECT_EQ(0, i->reserved[k]);
	/* Bytes after the NUL are zero too: nothing of the kernel leaks. */
	for (k = strlen(i->name); k < sizeof(i->name); k++)
		EXPECT_EQ(0, i->name[k]);
}

TEST_F(ring, mmap_ro_sees_header)
{
	struct hmb_ring_hdr *h = self->map;

	EXPECT_EQ(HMB_RING_MAGIC, h->magic);
	EXPECT_EQ(HMB_TRACE_ABI_VERSION, h->version);
	EXPECT_EQ(self->info.ring_size, h->ring_size);
	EXPECT_EQ(HMB_RECORD_AREA_OFF, h->record_area_off);
	ASSERT_EQ(0, produce(self, variant, 2));
	EXPECT_EQ(2 * HMB_RECORD_SIZE(16), map_head(self));
	EXPECT_EQ(HMB_RECORD_MAGIC,
		  ((struct hmb_record_hdr *)((char *)self->map + 0x40))->magic);
}

TEST_F(ring, mmap_writable_refused)
{
	int fd;
	void *p;

	close(self->fd);
	munmap(self->map, self->info.mmap_len);
	self->map = MAP_FAILED;
	fd = open(self->node, O_RDWR);
	ASSERT_LE(0, fd);
	self->fd = fd;
	p = mmap(NULL, self->info.mmap_len, PROT_READ | PROT_WRITE, MAP_SHARED,
		 fd, 0);
	EXPECT_EQ(MAP_FAILED, p);
	EXPECT_EQ(EACCES, errno);
	p = mmap(NULL, self->info.mmap_len, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE, fd, 0);
	EXPECT_EQ(MAP_FAILED, p);
	EXPECT_EQ(EACCES, errno);
}

TEST_F(ring, mprotect_write_refused)
{
	EXPECT_EQ(-1, mprotect(self->map, self->info.mmap_len,
			       PROT_READ | PROT_WRITE));
	EXPECT_EQ(EACCES, errno);
}

TEST_F(ring, mmap_bad_offset_or_length)
{
	long page = sysconf(_SC_PAGESIZE);
	size_t len = self->info.mmap_len;
	void *p;

	p = mmap(NULL, page, PROT_READ, MAP_SHARED, self->fd, len);
	EXPECT_EQ(MAP_FAILED, p);
	EXPECT_EQ(EINVAL, errno);
	p = mmap(NULL, len + page, PROT_READ, MAP_SHARED, self->fd, 0);
	EXPECT_EQ(MAP_FAILED, p);
	EXPECT_EQ(EINVAL, errno);
	p = mmap(NULL, len, PROT_READ, MAP_SHARED, self->fd, page);
	EXPECT_EQ(MAP_FAILED, p);
	EXPECT_EQ(EINVAL, errno);
	/* The last page alone is inside the region. */
	p = mmap(NULL, page, PROT_READ, MAP_SHARED, self->fd, len - page);
	ASSERT_NE(MAP_FAILED, p);
	munmap(p, page);
}

TEST_F(ring, set_tail_valid)
{
	struct nvme_hmb_trace_tail t = { 0 };

	ASSERT_EQ(0, produce(self, variant, 3));
	t.tail = HMB_RECORD_SIZE(16);
	ASSERT_EQ(0, ioctl(self->fd, NVME_HMB_TRACE_SET_TAIL, &t));
	EXPECT_EQ(t.tail, map_tail(self));
	t.tail = map_head(self);
	ASSERT_EQ(0, ioctl(self->fd, NVME_HMB_TRACE_SET_TAIL, &t));
	EXPECT_EQ(t.tail, map_tail(self));
	/* Republishing the same tail is fine. */
	EXPECT_EQ(0, ioctl(self->fd, NVME_HMB_TRACE_SET_TAIL, &t));
}

TEST_F(ring, set_tail_unaligned)
{
	struct nvme_hmb_trace_tail t = { .tail = 4 };

	ASSERT_EQ(0, produce(self, variant, 1));
	EXPECT_EQ(-1, ioctl(self->fd, NVME_HMB_TRACE_SET_TAIL, &t));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(0, map_tail(self));
}

TEST_F(ring, set_tail_backwards)
{
	struct nvme_hmb_trace_tail t = { 0 };

	ASSERT_EQ(0, produce(self, variant, 2));
	t.tail = 2 * HMB_RECORD_SIZE(16);
	ASSERT_EQ(0, ioctl(self->fd, NVME_HMB_TRACE_SET_TAIL, &t));
	t.tail -= 8;
	EXPECT_EQ(-1, ioctl(self->fd, NVME_HMB_TRACE_SET_TAIL, &t));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(2 * HMB_RECORD_SIZE(16), map_tail(self));
}

TEST_F(ring, set_tail_beyond_head)
{
	struct nvme_hmb_trace_tail t = { 0 };

	ASSERT_EQ(0, produce(self, variant, 1));
	t.tail = map_head(self) + 8;
	EXPECT_EQ(-1, ioctl(self->fd, NVME_HMB_TRACE_SET_TAIL, &t));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(0, map_tail(self));
}

TEST_F(ring, set_tail_flags_nonzero)
{
	struct nvme_hmb_trace_tail t = { .tail = 0, .flags = 1 };

	EXPECT_EQ(-1, ioctl(self->fd, NVME_HMB_TRACE_SET_TAIL, &t));
	EXPECT_EQ(EINVAL, errno);
}

/*
 * Cursors are byte counts modulo 2^64: 384 bytes before the counter wraps,
 * eight 48-byte records end the lap exactly at 2^64 and eight more start
 * the next one at cursor 0.  Head has wrapped past 0, tail has not; the
 * sampler must not call that "head moved backwards" and SET_TAIL must
 * accept a tail on either side of 0.
 */
TEST_F(ring, cursors_near_2_64)
{
	const uint64_t start = -(uint64_t)(8 * HMB_RECORD_SIZE(16));
	struct pollfd p = { .fd = -1, .events = POLLIN | POLLPRI };
	struct nvme_hmb_trace_tail t = { 0 };
	char buf[64];

	ASSERT_EQ(0, reopen_at(self, variant, start));
	EXPECT_EQ(start, map_head(self));
	EXPECT_EQ(start, map_tail(self));
	ASSERT_EQ(0, produce(self, variant, 4));
	t.tail = start + 2 * HMB_RECORD_SIZE(16);
	ASSERT_EQ(0, ioctl(self->fd, NVME_HMB_TRACE_SET_TAIL, &t))
		TH_LOG("SET_TAIL %#llx below 2^64: %s",
		       (unsigned long long)t.tail, strerror(errno));
	ASSERT_EQ(0, produce(self, variant, 12));
	EXPECT_EQ(8 * HMB_RECORD_SIZE(16), map_head(self));
	/* The first record of the new lap sits at offset 0. */
	EXPECT_EQ(HMB_RECORD_MAGIC,
		  ((struct hmb_record_hdr *)((char *)self->map + 0x40))->magic);
	/* Give the sampler time to look at the wrapped head. */
	p.fd = self->fd;
	ASSERT_EQ(1, poll(&p, 1, 30000));
	usleep(50000);
	p.revents = 0;
	ASSERT_EQ(1, poll(&p, 1, 0));
	EXPECT_TRUE(p.revents & POLLIN);
	EXPECT_FALSE(p.revents & (POLLERR | POLLPRI))
		TH_LOG("revents %#x: the wrapped head was taken for corruption",
		       p.revents);
	ASSERT_EQ(0, sysfs_read(self->dev, "corrupt", buf, sizeof(buf)));
	EXPECT_STREQ("none", buf);
	/* A tail still below 2^64, then one past 0, then head itself. */
	t.tail = start + 6 * HMB_RECORD_SIZE(16);
	EXPECT_EQ(0, ioctl(self->fd, NVME_HMB_TRACE_SET_TAIL, &t));
	t.tail = 2 * HMB_RECORD_SIZE(16);
	EXPECT_EQ(0, ioctl(self->fd, NVME_HMB_TRACE_SET_TAIL, &t))
		TH_LOG("SET_TAIL %#llx past 0: %s",
		       (unsigned long long)t.tail, strerror(errno));
	EXPECT_EQ(t.tail, map_tail(self));
	/* Backwards across 0 is still backwards. */
	t.tail = start + 7 * HMB_RECORD_SIZE(16);
	EXPECT_EQ(-1, ioctl(self->fd, NVME_HMB_TRACE_SET_TAIL, &t));
	EXPECT_EQ(EINVAL, errno);
	t.tail = map_head(self);
	EXPECT_EQ(0, ioctl(self->fd, NVME_HMB_TRACE_SET_TAIL, &t));
	EXPECT_EQ(t.tail, map_tail(self));
	/* Beyond head, just past 0. */
	t.tail += 8;
	EXPECT_EQ(-1, ioctl(self->fd, NVME_HMB_TRACE_SET_TAIL, &t));
	EXPECT_EQ(EINVAL, errno);
}

/* Moving the tail drops data: a read-only file may not do it. */
TEST_F(ring, set_tail_needs_write_access)
{
	struct nvme_hmb_trace_tail t = { 0 };
	int fd;

	ASSERT_EQ(0, produce(self, variant, 2));
	munmap(self->map, self->info.mmap_len);
	self->map = MAP_FAILED;
	close(self->fd);
	self->fd = -1;
	fd = open(self->node, O_RDONLY | O_CLOEXEC);
	ASSERT_LE(0, fd) TH_LOG("open O_RDONLY: %s", strerror(errno));
	self->fd = fd;
	t.tail = HMB_RECORD_SIZE(16);
	EXPECT_EQ(-1, ioctl(fd, NVME_HMB_TRACE_SET_TAIL, &t));
	EXPECT_EQ(EBADF, errno);
	EXPECT_EQ(0, sysfs_u64(self->dev, "tail"));
	/* Reading stays allowed. */
	EXPECT_EQ(0, ioctl(fd, NVME_HMB_TRACE_GET_INFO, &self->info));
	self->map = mmap(NULL, self->info.mmap_len, PROT_READ, MAP_SHARED,
			 fd, 0);
	ASSERT_NE(MAP_FAILED, self->map);
	EXPECT_EQ(2 * HMB_RECORD_SIZE(16), map_head(self));
}

/* Who holds the ring (comm and pid) is for root only. */
TEST_F(ring, consumer_attr_root_only)
{
	char path[PATH_MAX];
	struct stat st;

	snprintf(path, sizeof(path), CLASS_DIR "/%s/consumer", self->dev);
	ASSERT_EQ(0, stat(path, &st));
	EXPECT_EQ(0400, st.st_mode & 07777);
}

/* ---- misuse from user space: each refused or harmless ---- */

static sigjmp_buf fault_jb;

static void on_fault(int sig)
{
	siglongjmp(fault_jb, sig);
}

/* 0 if *@p could be read, else the signal the read raised. */
static int read_signal(const volatile uint32_t *p)
{
	volatile uint32_t v;
	int sig;

	signal(SIGBUS, on_fault);
	signal(SIGSEGV, on_fault);
	sig = sigsetjmp(fault_jb, 1);
	if (!sig)
		v = *p;
	signal(SIGBUS, SIG_DFL);
	signal(SIGSEGV, SIG_DFL);
	(void)v;
	return sig;
}

/*
 * /proc/self/mem and process_vm_writev write through the kernel's
 * get_user_pages with FOLL_FORCE: the read-only mapping without
 * VM_MAYWRITE must refuse both, and the ring must stay as it was.
 */
TEST_F(ring, proc_self_mem_write_refused)
{
	struct hmb_ring_hdr *h = self->map;
	char junk[8] = "XXXXXXX";
	struct iovec local = { junk, sizeof(junk) };
	struct iovec remote;
	ssize_t n;
	int fd;

	ASSERT_EQ(0, produce(self, variant, 1));
	fd = open("/proc/self/mem", O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, fd);
	n = pwrite(fd, junk, sizeof(junk), (off_t)(uintptr_t)self->map);
	EXPECT_EQ(-1, n);
	EXPECT_TRUE(errno == EIO || errno == EFAULT)
		TH_LOG("header: pwrite /proc/self/mem: %s", strerror(errno));
	n = pwrite(fd, junk, sizeof(junk),
		   (off_t)(uintptr_t)self->map + HMB_RECORD_AREA_OFF);
	EXPECT_EQ(-1, n);
	EXPECT_TRUE(errno == EIO || errno == EFAULT)
		TH_LOG("record: pwrite /proc/self/mem: %s", strerror(errno));
	close(fd);
	remote.iov_base = (char *)self->map + HMB_RECORD_AREA_OFF;
	remote.iov_len = sizeof(junk);
	n = process_vm_writev(getpid(), &local, 1, &remote, 1, 0);
	EXPECT_EQ(-1, n);
	EXPECT_EQ(EFAULT, errno);
	EXPECT_EQ(HMB_RING_MAGIC, h->magic);
	EXPECT_EQ(HMB_RECORD_MAGIC,
		  ((struct hmb_record_hdr *)((char *)self->map + 0x40))->magic);
	EXPECT_EQ(0, sysfs_u64(self->dev, "tail"));
}

/*
 * fork: the mapping is not inherited (VM_DONTCOPY), the file is: the child
 * shares the parent's consumer slot, which stays taken until both are done
 * with the file.
 */
TEST_F(ring, fork_with_the_mapping)
{
	int go[2], done[2], st, fd;
	char c = 0;
	pid_t pid;

	ASSERT_EQ(0, pipe(go));
	ASSERT_EQ(0, pipe(done));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		struct nvme_hmb_trace_info info;
		int ret = 0;

		/* The parent's address holds nothing in the child. */
		if (read_signal(self->map) != SIGSEGV)
			ret |= 1;
		/* The file came along: the same consumer, still usable. */
		if (ioctl(self->fd, NVME_HMB_TRACE_GET_INFO, &info))
			ret |= 2;
		if (write(done[1], &c, 1) != 1 || read(go[0], &c, 1) != 1)
			ret |= 4;
		_exit(ret);
	}
	ASSERT_EQ(1, read(done[0], &c, 1));
	/* The parent's mapping is unaffected by the child. */
	EXPECT_EQ(HMB_RING_MAGIC, ((struct hmb_ring_hdr *)self->map)->magic);
	munmap(self->map, self->info.mmap_len);
	self->map = MAP_FAILED;
	close(self->fd);
	self->fd = -1;
	/* The child still holds the file: the slot is still taken. */
	fd = open(self->node, O_RDWR);
	EXPECT_EQ(-1, fd);
	EXPECT_EQ(EBUSY, errno);
	ASSERT_EQ(1, write(go[1], &c, 1));
	ASSERT_EQ(pid, waitpid(pid, &st, 0));
	EXPECT_TRUE(WIFEXITED(st));
	EXPECT_EQ(0, WEXITSTATUS(st))
		TH_LOG("child: %s%s%s", WEXITSTATUS(st) & 1 ? "mapping readable; " : "",
		       WEXITSTATUS(st) & 2 ? "GET_INFO failed; " : "",
		       WEXITSTATUS(st) & 4 ? "pipe failed" : "");
	/* Both are done with it: the slot is free. */
	self->fd = open(self->node, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, self->fd) TH_LOG("open after the child exited: %s",
				      strerror(errno));
	close(go[0]);
	close(go[1]);
	close(done[0]);
	close(done[1]);
}

/*
 * The same binary is also built with -m32: then every test of this file
 * goes through the compat ioctl path (compat_ptr_ioctl) and a 32-bit mmap.
 */
TEST(abi_word_size)
{
	TH_LOG("%zu-bit process", sizeof(void *) * 8);
#ifdef HMB_EXPECT_32BIT
	ASSERT_EQ(4, sizeof(void *));
#else
	ASSERT_EQ(8, sizeof(void *));
#endif
}

TEST_F(ring, unknown_ioctl_enotty)
{
	struct nvme_hmb_trace_info info;

	EXPECT_EQ(-1, ioctl(self->fd, _IO(NVME_HMB_TRACE_IOC_MAGIC, 0x7f)));
	EXPECT_EQ(ENOTTY, errno);
	/* Same number, wrong size: a different command. */
	EXPECT_EQ(-1, ioctl(self->fd, _IOR(NVME_HMB_TRACE_IOC_MAGIC, 0x01,
					   __u64), &info));
	EXPECT_EQ(ENOTTY, errno);
}

TEST_F(ring, poll_pollin)
{
	struct pollfd p = { .fd = self->fd, .events = POLLIN };

	ASSERT_EQ(0, poll(&p, 1, 0));
	ASSERT_EQ(0, produce(self, variant, 1));
	/* The head sampler wakes us: a deadline, generous for a loaded TCG guest. */
	ASSERT_EQ(1, poll(&p, 1, 30000));
	EXPECT_TRUE(p.revents & POLLIN);
	EXPECT_FALSE(p.revents & (POLLERR | POLLHUP));
}

TEST_F(ring, poll_frozen_pollpri)
{
	struct pollfd p = { .fd = self->fd, .events = POLLIN | POLLPRI };

	if (variant->kind == NVME_HMB_TRACE_PROVIDER_TEST) {
		ASSERT_EQ(0, sysfs_write(self->dev, "producer/frozen", "1"));
	} else {
		fw_hdr(self)->flags |= HMB_RING_FLAG_FROZEN;
	}
	ASSERT_EQ(1, poll(&p, 1, 30000));
	EXPECT_TRUE(p.revents & POLLPRI);
	EXPECT_TRUE(p.revents & POLLERR);
	if (variant->kind == NVME_HMB_TRACE_PROVIDER_TEST)
		sysfs_write(self->dev, "producer/frozen", "0");
	else
		fw_hdr(self)->flags &= ~HMB_RING_FLAG_FROZEN;
}

TEST_F(ring, bridge_refused_while_open)
{
	EXPECT_EQ(-EBUSY, sysfs_write(self->dev, "bridge", "1"));
	EXPECT_EQ(0, sysfs_u64(self->dev, "bridge"));
}

TEST_F(ring, open_refused_while_bridge_on)
{
	int fd;

	munmap(self->map, self->info.mmap_len);
	self->map = MAP_FAILED;
	close(self->fd);
	self->fd = -1;
	ASSERT_EQ(0, sysfs_write(self->dev, "bridge", "1"));
	fd = open(self->node, O_RDONLY);
	EXPECT_EQ(-1, fd);
	EXPECT_EQ(EBUSY, errno);
	ASSERT_EQ(0, sysfs_write(self->dev, "bridge", "0"));
	fd = open(self->node, O_RDONLY);
	ASSERT_LE(0, fd);
	self->fd = fd;
}

/* Waits up to @ms for sysfs @attr to read @want; 0 when it did. */
static int wait_u64(const char *dev, const char *attr, unsigned long long want,
		    int ms)
{
	for (; ms > 0; ms -= 20) {
		if (sysfs_u64(dev, attr) == want)
			return 0;
		usleep(20000);
	}
	return sysfs_u64(dev, attr) == want ? 0 : -ETIMEDOUT;
}

/*
 * What a controller reset does to an nvme-pci slice (docs/format.md §11.2):
 * the producer stops and sets FROZEN, the header is rewritten with head =
 * tail = 0, FROZEN is cleared, and production resumes at cursor 0 with the
 * seq continuing, @lost seqs further on.  The test producer does it in
 * the kernel (and bumps the ring's generation, as nvme does); for ivshmem
 * this process does it, FROZEN held for a while as a controller would.
 */
/*
 * Re-initialise the ring as its producer side does (docs/format.md 11.2),
 * holding FROZEN for @hold_us: 0 is a producer that rewrites the header at
 * once, which a sampling consumer may never see frozen.
 */
static int reinit_hold(FIXTURE_DATA(ring) *self,
		       const FIXTURE_VARIANT(ring) *variant, unsigned int lost,
		       unsigned int hold_us)
{
	struct hmb_ring_hdr *h;
	char buf[32];

	if (variant->kind == NVME_HMB_TRACE_PROVIDER_TEST) {
		snprintf(buf, sizeof(buf), "%u", lost);
		return sysfs_write(self->dev, "producer/reinit", buf);
	}
	h = fw_hdr(self);
	__atomic_or_fetch(&h->flags, HMB_RING_FLAG_FROZEN, __ATOMIC_RELEASE);
	/*
	 * A sleep that fails (ENOSYS from a kernel without 32-bit time
	 * syscalls, CONFIG_COMPAT_32BIT_TIME) would silently shorten the hold.
	 */
	if (hold_us && usleep(hold_us)) {
		fprintf(stderr, "reinit: usleep(%u): %s\n", hold_us, strerror(errno));
		return -errno;
	}
	__atomic_store_n(&h->tail, 0, __ATOMIC_RELEASE);
	__atomic_store_n(&h->head, 0, __ATOMIC_RELEASE);
	self->seq += lost;
	__atomic_and_fetch(&h->flags, ~HMB_RING_FLAG_FROZEN, __ATOMIC_RELEASE);
	return 0;
}

static int reinit(FIXTURE_DATA(ring) *self, const FIXTURE_VARIANT(ring) *variant,
		  unsigned int lost)
{
	return reinit_hold(self, variant, lost, 100000);
}

static int set_next_seq(FIXTURE_DATA(ring) *self,
			const FIXTURE_VARIANT(ring) *variant, uint32_t seq)
{
	char buf[32];

	if (variant->kind == NVME_HMB_TRACE_PROVIDER_TEST) {
		snprintf(buf, sizeof(buf), "%u", seq);
		return sysfs_write(self->dev, "producer/next_seq", buf);
	}
	self->seq = seq;
	return 0;
}

/* The bridge is the other consumer: give up the device first. */
static void close_device(FIXTURE_DATA(ring) *self)
{
	munmap(self->map, self->info.mmap_len);
	self->map = MAP_FAILED;
	close(self->fd);
	self->fd = -1;
}

/*
 * Three records read and their tail published, then the ring re-initialised
 * holding FROZEN for @hold_us (after @settle_us, so that the sampler has taken
 * head) and one record made: poll reports data, not POLLERR, and the ring is
 * not found corrupt.
 */
static void reinit_after_set_tail(struct __test_metadata *_metadata,
				  FIXTURE_DATA(ring) *self,
				  const FIXTURE_VARIANT(ring) *variant,
				  unsigned int settle_us, unsigned int hold_us)
{
	struct pollfd p = { .fd = self->fd, .events = POLLIN | POLLPRI };
	struct nvme_hmb_trace_tail t = { 0 };
	char buf[64];
	int i;

	ASSERT_EQ(0, produce(self, variant, 3));
	ASSERT_EQ(1, poll(&p, 1, 5000));
	ASSERT_TRUE(p.revents & POLLIN);
	if (settle_us)
		ASSERT_EQ(0, usleep(settle_us));
	t.tail = map_head(self);
	ASSERT_EQ(0, ioctl(self->fd, NVME_HMB_TRACE_SET_TAIL, &t));
	ASSERT_EQ(0, reinit_hold(self, variant, 0, hold_us));
	ASSERT_EQ(0, produce(self, variant, 1));
	for (i = 0; i < 50; i++) {
		p.revents = 0;
		poll(&p, 1, 100);
		if ((p.revents & POLLIN) && !(p.revents & POLLERR))
			break;
	}
	/* Let the head sampler look (its idle interval is 64 ms at most). */
	usleep(500000);
	p.revents = 0;
	EXPECT_EQ(1, poll(&p, 1, 0));
	EXPECT_TRUE(p.revents & POLLIN);
	EXPECT_FALSE(p.revents & POLLERR) TH_LOG("revents %#x", p.revents);
	EXPECT_EQ(HMB_RECORD_SIZE(16), map_head(self));
	ASSERT_EQ(0, sysfs_read(self->dev, "corrupt", buf, sizeof(buf)));
	EXPECT_STREQ("none", buf);
}

/* A re-initialisation is no corruption: poll reports data, not POLLERR. */
TEST_F(ring, poll_across_reinit)
{
	reinit_after_set_tail(_metadata, self, variant, 0, 100000);
}

/*
 * A producer that re-initialises at once, right after the consumer moved
 * tail: the sampler may never see FROZEN, but the tail the consumer
 * published through SET_TAIL is the kernel's own knowledge, so tail going
 * back to 0 still tells a new epoch from a head that moved backwards.  The
 * 300 ms before SET_TAIL let the sampler take head (its interval is 64 ms
 * at most) and back off: it is unlikely to run between SET_TAIL and the
 * rewrite, which is the case tested.
 */
TEST_F(ring, poll_across_fast_reinit)
{
	reinit_after_set_tail(_metadata, self, variant, 300000, 0);
}

/*
 * After a re-initialisation a tail of the old epoch must not land in the
 * new header.  Rings whose producer side bumps the generation (nvme-pci,
 * the test producer) refuse it with ESTALE until the consumer acknowledges
 * the new epoch by publishing the header's own tail; an ivshmem ring has
 * no generation, so only the cursor checks apply.
 */
TEST_F(ring, set_tail_stale_after_reinit)
{
	struct nvme_hmb_trace_tail t = { 0 };

	ASSERT_EQ(0, produce(self, variant, 3));
	ASSERT_EQ(0, reinit(self, variant, 0));
	ASSERT_EQ(0, produce(self, variant, 1));
	t.tail = 2 * HMB_RECORD_SIZE(16);
	EXPECT_EQ(-1, ioctl(self->fd, NVME_HMB_TRACE_SET_TAIL, &t));
	EXPECT_EQ(0, map_tail(self));
	if (variant->kind != NVME_HMB_TRACE_PROVIDER_TEST) {
		EXPECT_EQ(EINVAL, errno);	/* beyond the new head */
		return;
	}
	EXPECT_EQ(ESTALE, errno);
	t.tail = HMB_RECORD_SIZE(16);
	EXPECT_EQ(-1, ioctl(self->fd, NVME_HMB_TRACE_SET_TAIL, &t));
	EXPECT_EQ(ESTALE, errno);
	t.tail = 0;
	EXPECT_EQ(0, ioctl(self->fd, NVME_HMB_TRACE_SET_TAIL, &t));
	t.tail = HMB_RECORD_SIZE(16);
	EXPECT_EQ(0, ioctl(self->fd, NVME_HMB_TRACE_SET_TAIL, &t));
	EXPECT_EQ(HMB_RECORD_SIZE(16), map_tail(self));
}

/* The bridge carries on across a re-initialisation, counting the gap. */
TEST_F(ring, bridge_across_reinit)
{
	char buf[64];

	close_device(self);
	ASSERT_EQ(0, sysfs_write(self->dev, "bridge", "1"));
	ASSERT_EQ(0, produce(self, variant, 10));
	ASSERT_EQ(0, wait_u64(self->dev, "bridge_records", 10, 5000));
	ASSERT_EQ(0, reinit(self, variant, 5));
	ASSERT_EQ(0, produce(self, variant, 10));
	EXPECT_EQ(0, wait_u64(self->dev, "bridge_records", 20, 5000))
		TH_LOG("bridge_records %llu",
		       sysfs_u64(self->dev, "bridge_records"));
	EXPECT_EQ(0, wait_u64(self->dev, "tail", 10 * HMB_RECORD_SIZE(16),
			      5000));
	EXPECT_EQ(5, sysfs_u64(self->dev, "bridge_lost"));
	EXPECT_EQ(1, sysfs_u64(self->dev, "bridge_epochs"));
	EXPECT_EQ(0, sysfs_u64(self->dev, "bridge_corrupt"));
	EXPECT_EQ(0, sysfs_u64(self->dev, "bridge_duplicates"));
	ASSERT_EQ(0, sysfs_read(self->dev, "corrupt", buf, sizeof(buf)));
	EXPECT_STREQ("none", buf);
	/* And once more: every re-initialisation is an epoch. */
	ASSERT_EQ(0, reinit(self, variant, 0));
	ASSERT_EQ(0, produce(self, variant, 1));
	EXPECT_EQ(0, wait_u64(self->dev, "bridge_records", 21, 5000));
	EXPECT_EQ(2, sysfs_u64(self->dev, "bridge_epochs"));
	EXPECT_EQ(5, sysfs_u64(self->dev, "bridge_lost"));
	EXPECT_EQ(0, sysfs_write(self->dev, "bridge", "0"));
}

/* A seq seen again is a duplicate: not emitted, and no ~2^32 lost. */
TEST_F(ring, bridge_duplicate_seq)
{
	close_device(self);
	ASSERT_EQ(0, sysfs_write(self->dev, "bridge", "1"));
	ASSERT_EQ(0, produce(self, variant, 5));
	ASSERT_EQ(0, wait_u64(self->dev, "bridge_records", 5, 5000));
	ASSERT_EQ(0, set_next_seq(self, variant, 3));
	ASSERT_EQ(0, produce(self, variant, 2));
	ASSERT_EQ(0, set_next_seq(self, variant, 5));
	ASSERT_EQ(0, produce(self, variant, 1));
	EXPECT_EQ(0, wait_u64(self->dev, "bridge_records", 6, 5000));
	EXPECT_EQ(2, sysfs_u64(self->dev, "bridge_duplicates"));
	EXPECT_EQ(0, sysfs_u64(self->dev, "bridge_lost"));
	EXPECT_EQ(0, sysfs_u64(self->dev, "bridge_corrupt"));
	EXPECT_EQ(0, sysfs_write(self->dev, "bridge", "0"));
}

/* The ivshmem ring alone, with bytes written as no good producer would. */
FIXTURE(fw) {
	FIXTURE_DATA(ring) r;
};

FIXTURE_SETUP(fw)
{
	if (find_ring("ivshmem", self->r.dev, sizeof(self->r.dev)))
		SKIP(return, "no ivshmem ring registered");
	sysfs_write(self->r.dev, "bridge", "0");
	ASSERT_EQ(0, fw_open(&self->r));
}

FIXTURE_TEARDOWN(fw)
{
	if (self->r.fw) {
		sysfs_write(self->r.dev, "bridge", "0");
		fw_hdr(&self->r)->tail = 0;
		fw_hdr(&self->r)->head = 0;
		munmap(self->r.fw, self->r.fw_len);
	}
}

/* A wrap marker has no payload: one that claims one stops the bridge. */
TEST_F(fw, bridge_marker_with_payload)
{
	struct hmb_ring_hdr *h = fw_hdr(&self->r);
	uint64_t at = h->ring_size - 64;
	struct hmb_record_hdr *m = (void *)(self->r.fw + HMB_RECORD_AREA_OFF + at);
	char buf[64];

	h->tail = at;
	h->head = at;
	memset(m, 0, 64);
	m->magic = HMB_RECORD_MAGIC;
	m->flags = HMB_REC_FLAG_WRAP_MARKER;
	m->payload_len = 8;
	ASSERT_EQ(0, sysfs_write(self->r.dev, "bridge", "1"));
	__atomic_store_n(&h->head, (uint64_t)h->ring_size, __ATOMIC_RELEASE);
	EXPECT_EQ(0, wait_u64(self->r.dev, "bridge_corrupt", 1, 5000));
	EXPECT_EQ(0, sysfs_u64(self->r.dev, "bridge_markers"));
	EXPECT_EQ(at, sysfs_u64(self->r.dev, "tail"));
	ASSERT_EQ(0, sysfs_read(self->r.dev, "corrupt", buf, sizeof(buf)));
	EXPECT_STREQ("wrap marker with a payload", buf);
}

/* The bridge walks 8-byte records from the tail: an odd tail is refused. */
TEST_F(fw, bridge_tail_unaligned)
{
	struct hmb_ring_hdr *h = fw_hdr(&self->r);

	self->r.seq = 0;
	h->head = 0;
	h->tail = 0;
	ASSERT_EQ(0, produce(&self->r, &(FIXTURE_VARIANT(ring)){
		.provider = "ivshmem", .kind = NVME_HMB_TRACE_PROVIDER_IVSHMEM },
		1));
	h->tail = 4;
	EXPECT_EQ(-EINVAL, sysfs_write(self->r.dev, "bridge", "1"));
	EXPECT_EQ(0, sysfs_u64(self->r.dev, "bridge"));
	h->tail = 0;
	EXPECT_EQ(0, sysfs_write(self->r.dev, "bridge", "1"));
	EXPECT_EQ(0, wait_u64(self->r.dev, "bridge_records", 1, 5000));
}

TEST_HARNESS_MAIN
