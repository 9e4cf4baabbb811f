// SPDX-License-Identifier: GPL-2.0
/*
 * hmb_race - the user-space side of the race suite (kernel/vm-suite/race.sh).
 * Each mode hammers one interface of /dev/nvme-hmb-traceN for a bounded
 * time while the suite removes, rebinds or re-initialises the ring under
 * it, and checks that every result it gets is one of the allowed ones.
 * It prints one summary line and exits 0 (allowed), 1 (a forbidden
 * outcome, named on stderr) or 2 (usage or setup error).
 *
 *   hmb_race mmap DEV SECS         two threads map, read, unmap in a loop
 *                                  until the provider goes away; afterwards every
 *                                  mapping left must fault (SIGBUS), never
 *                                  return ring bytes, and mmap is ENODEV
 *   hmb_race settail DEV ITERS     a thread publishes the tail in a loop
 *                                  while the main thread closes the file
 *                                  (the mapping then drops the last
 *                                  reference: release)
 *   hmb_race openclose DEV SECS N  N processes open, map and close at once;
 *                                  at most one holds the ring, and sysfs
 *                                  "consumer" names the holder
 *   hmb_race bridge ATTR SECS N    N threads write 1 and 0 to the bridge
 *                                  attribute ATTR, following the device
 *                                  as it goes and comes back
 *   hmb_race poll DEV SECS         poll and drain a ring whose producer
 *                                  freezes and re-initialises it
 *   hmb_race fw RESOURCE SECS      play that producer on an ivshmem BAR:
 *                                  records, FROZEN, re-initialisation
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <linux/nvme_hmb_trace.h>

#define MAXMAPS 4

/*
 * Not libhmbtrace's hmb_now_s(): the selftests are built as the kernel's
 * are, static and against the uapi header alone, and link no library of
 * this tree, so that they test the module's contract on its own.
 */
static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void die(const char *what)
{
	fprintf(stderr, "hmb_race: %s: %s\n", what, strerror(errno));
	exit(2);
}

static int forbidden(const char *fmt, const char *a, long b)
{
	fprintf(stderr, "hmb_race: FORBIDDEN: ");
	fprintf(stderr, fmt, a, b);
	fprintf(stderr, "\n");
	return 1;
}

/* ---- reads that may fault ---------------------------------------------- */

/* A fault is delivered to the thread that took it: per-thread state. */
static __thread sigjmp_buf jb;
static __thread volatile sig_atomic_t guarded;

static void on_fault(int sig)
{
	if (!guarded) {
		signal(sig, SIG_DFL);
		raise(sig);
	}
	siglongjmp(jb, sig);
}

/* 0: read @p into *@v; else the signal that the read raised. */
static int try_read(const volatile uint32_t *p, uint32_t *v)
{
	int sig;

	guarded = 1;
	sig = sigsetjmp(jb, 1);
	if (!sig)
		*v = *p;
	guarded = 0;
	return sig;
}

static void catch_faults(void)
{
	signal(SIGBUS, on_fault);
	signal(SIGSEGV, on_fault);
}

static int open_ring(const char *dev, struct nvme_hmb_trace_info *info)
{
	int fd = open(dev, O_RDWR | O_CLOEXEC);

	if (fd < 0)
		return -1;
	if (ioctl(fd, NVME_HMB_TRACE_GET_INFO, info)) {
		close(fd);
		return -1;
	}
	return fd;
}

/* ---- mmap against removal ------------------------------------------------ */

#define MMAP_THREADS 2

struct mm_arg {
	int fd;
	size_t len;
	double end;
	volatile int *gone;
	void *maps[MAXMAPS];
	unsigned long nmap, nread, nfault, bad_magic, other_errno;
};

/* Map, read, unmap (keeping the last MAXMAPS) until the ring goes away. */
static void *mmap_thread(void *a)
{
	struct mm_arg *m = a;
	struct pollfd p;
	uint32_t v;

	while (!*m->gone && now_s() < m->end) {
		void *map = mmap(NULL, m->len, PROT_READ, MAP_SHARED, m->fd, 0);
		unsigned long k;

		if (map == MAP_FAILED) {
			if (errno != ENODEV)
				m->other_errno = errno;
			*m->gone = 1;
			break;
		}
		m->nmap++;
		k = m->nmap % MAXMAPS;
		if (m->maps[k])
			munmap(m->maps[k], m->len);
		m->maps[k] = map;
		if (try_read(map, &v))
			m->nfault++;	/* removal under way: allowed */
		else if (m->nread++, v != HMB_RING_MAGIC)
			m->bad_magic++;
		p.fd = m->fd;
		p.events = POLLIN;
		if (poll(&p, 1, 0) == 1 && (p.revents & POLLHUP))
			*m->gone = 1;
	}
	return NULL;
}

/*
 * MMAP_THREADS threads map in a loop while the suite removes the provider.
 * Once POLLHUP says the removal is complete, every mapping left must
 * fault: a PTE that the removal's zap did not find would still show the
 * (freed) ring.
 */
static int do_mmap(const char *dev, double secs)
{
	struct mm_arg m[MMAP_THREADS];
	pthread_t th[MMAP_THREADS];
	struct nvme_hmb_trace_info info;
	unsigned long nmap = 0, nread = 0, nfault = 0, stale = 0;
	volatile int gone = 0;
	int fd, i, k, ret = 0;
	struct pollfd p;
	uint32_t v;

	fd = open_ring(dev, &info);
	if (fd < 0)
		die(dev);
	catch_faults();
	fprintf(stderr, "ready\n");
	for (i = 0; i < MMAP_THREADS; i++) {
		memset(&m[i], 0, sizeof(m[i]));
		m[i].fd = fd;
		m[i].len = info.mmap_len;
		m[i].end = now_s() + secs;
		m[i].gone = &gone;
		if (pthread_create(&th[i], NULL, mmap_thread, &m[i]))
			die("pthread_create");
	}
	for (i = 0; i < MMAP_THREADS; i++) {
		pthread_join(th[i], NULL);
		nmap += m[i].nmap;
		nread += m[i].nread;
		nfault += m[i].nfault;
		if (m[i].other_errno)
			ret = forbidden("mmap failed with %s (%ld)",
					strerror(m[i].other_errno), m[i].other_errno);
		if (m[i].bad_magic)
			ret = forbidden("%s%ld reads of a live mapping without the ring magic",
					"", m[i].bad_magic);
	}
	if (!gone) {
		printf("mmap: %lu maps, %lu reads, no removal within %.0f s\n",
		       nmap, nread, secs);
		return 3;
	}
	/* Removal is complete once POLLHUP is seen: every mapping must fault. */
	p.fd = fd;
	p.events = POLLIN;
	if (poll(&p, 1, 60000) != 1 || !(p.revents & POLLHUP))
		return forbidden("%sno POLLHUP after removal (revents %#lx)", "",
				 p.revents);
	for (i = 0; i < MMAP_THREADS; i++)
		for (k = 0; k < MAXMAPS; k++) {
			char *map = m[i].maps[k];

			if (map && (!try_read((uint32_t *)map, &v) ||
				    !try_read((uint32_t *)(map + info.mmap_len - 4), &v)))
				stale++;
		}
	if (stale)
		ret = forbidden("%s%ld mappings still readable after the provider went away",
				"", (long)stale);
	if (mmap(NULL, info.mmap_len, PROT_READ, MAP_SHARED, fd, 0) != MAP_FAILED ||
	    errno != ENODEV)
		ret = forbidden("%smmap after removal did not fail with ENODEV (%ld)",
				"", errno);
	printf("mmap: %d threads, %lu maps, %lu reads, %lu faults while going away, %lu stale mappings after removal\n",
	       MMAP_THREADS, nmap, nread, nfault, stale);
	return ret;
}

/* ---- SET_TAIL against close ---------------------------------------------- */

struct st_arg {
	int fd;
	const struct hmb_ring_hdr *hdr;
	volatile int stop;
	unsigned long ok, einval, ebadf, enodev, other;
	int other_errno;
};

static void *settail_thread(void *a)
{
	struct st_arg *s = a;
	struct nvme_hmb_trace_tail t = { 0 };

	while (!s->stop) {
		t.tail = __atomic_load_n(&s->hdr->head, __ATOMIC_ACQUIRE);
		if (!ioctl(s->fd, NVME_HMB_TRACE_SET_TAIL, &t))
			s->ok++;
		else if (errno == EINVAL)
			s->einval++;	/* head moved on or the ring reset */
		else if (errno == EBADF)
			s->ebadf++;	/* the file is closed */
		else if (errno == ENODEV)
			s->enodev++;
		else {
			s->other++;
			s->other_errno = errno;
		}
	}
	return NULL;
}

static int do_settail(const char *dev, long iters)
{
	unsigned long ok = 0, einval = 0, ebadf = 0, busy = 0;
	struct nvme_hmb_trace_info info;
	long i;

	for (i = 0; i < iters; i++) {
		struct st_arg s = { 0 };
		pthread_t th;
		void *m;

		s.fd = open_ring(dev, &info);
		if (s.fd < 0) {
			if (errno != EBUSY)
				return forbidden("open: %s (%ld)", strerror(errno), errno);
			busy++;	/* the last mapping's release still running */
			usleep(1000);
			continue;
		}
		m = mmap(NULL, info.mmap_len, PROT_READ, MAP_SHARED, s.fd, 0);
		if (m == MAP_FAILED)
			die("mmap");
		s.hdr = m;
		if (pthread_create(&th, NULL, settail_thread, &s))
			die("pthread_create");
		usleep(rand() % 2000);
		close(s.fd);	/* the thread may be inside the ioctl */
		usleep(rand() % 1000);
		s.stop = 1;
		pthread_join(th, NULL);
		munmap(m, info.mmap_len);	/* the last reference: release */
		if (s.other)
			return forbidden("SET_TAIL failed with %s (%ld)",
					 strerror(s.other_errno), s.other_errno);
		if (s.enodev)
			return forbidden("%sSET_TAIL said ENODEV %ld times on a live ring",
					 "", s.enodev);
		ok += s.ok;
		einval += s.einval;
		ebadf += s.ebadf;
	}
	printf("settail: %ld rounds, SET_TAIL ok %lu, EINVAL %lu, EBADF after close %lu, open EBUSY %lu\n",
	       iters, ok, einval, ebadf, busy);
	return ok ? 0 : forbidden("%sno SET_TAIL succeeded in %ld rounds", "", iters);
}

/* ---- several processes racing open/close ---------------------------------- */

static int openclose_child(const char *dev, const char *attr, double end)
{
	unsigned long got = 0, busy = 0;
	struct nvme_hmb_trace_info info;
	char buf[128], want[32];
	int fd, afd;
	ssize_t n;
	void *m;

	snprintf(want, sizeof(want), " %d\n", getpid());
	while (now_s() < end) {
		fd = open(dev, O_RDWR | O_CLOEXEC);
		if (fd < 0) {
			if (errno != EBUSY)
				return forbidden("open: %s (%ld)", strerror(errno), errno);
			busy++;
			continue;
		}
		got++;
		afd = open(attr, O_RDONLY);
		n = afd < 0 ? -1 : read(afd, buf, sizeof(buf) - 1);
		if (afd >= 0)
			close(afd);
		if (n <= 0)
			return forbidden("reading %s: %ld", attr, (long)n);
		buf[n] = 0;
		if (!strstr(buf, want))
			return forbidden("consumer is '%s' while pid %ld holds the ring",
					 buf, getpid());
		if (ioctl(fd, NVME_HMB_TRACE_GET_INFO, &info))
			return forbidden("GET_INFO: %s (%ld)", strerror(errno), errno);
		m = mmap(NULL, info.mmap_len, PROT_READ, MAP_SHARED, fd, 0);
		if (m == MAP_FAILED)
			return forbidden("mmap: %s (%ld)", strerror(errno), errno);
		munmap(m, info.mmap_len);
		close(fd);
	}
	printf("openclose: pid %d held the ring %lu times, EBUSY %lu\n", getpid(),
	       got, busy);
	return got ? 0 : 4;
}

static int do_openclose(const char *dev, const char *attr, double secs, int n)
{
	double end = now_s() + secs;
	int i, st, bad = 0, starved = 0;

	for (i = 0; i < n; i++) {
		pid_t pid = fork();

		if (pid < 0)
			die("fork");
		if (!pid) {
			fflush(stdout);
			_exit(openclose_child(dev, attr, end));
		}
	}
	for (i = 0; i < n; i++) {
		if (wait(&st) < 0)
			die("wait");
		if (!WIFEXITED(st) || (WEXITSTATUS(st) && WEXITSTATUS(st) != 4))
			bad++;
		else if (WEXITSTATUS(st) == 4)
			starved++;
	}
	printf("openclose: %d processes for %.0f s, %d with a forbidden outcome, %d never got the ring\n",
	       n, secs, bad, starved);
	return bad || starved == n;
}

/* ---- bridge on/off from several threads ---------------------------------- */

struct br_arg {
	const char *attr;
	double end;
	unsigned long on, off, busy, gone, other;
	int other_errno;
};

static void *bridge_thread(void *a)
{
	struct br_arg *b = a;
	int fd = -1, i = 0;

	while (now_s() < b->end) {
		const char *v = i++ & 1 ? "0" : "1";

		if (fd < 0) {
			fd = open(b->attr, O_WRONLY | O_CLOEXEC);
			if (fd < 0) {
				b->gone++;	/* the ring is away */
				usleep(500);
				continue;
			}
		}
		if (pwrite(fd, v, 1, 0) == 1) {
			if (*v == '1')
				b->on++;
			else
				b->off++;
		} else if (errno == EBUSY) {
			b->busy++;	/* a consumer holds it, or it is stopping */
		} else if (errno == ENODEV || errno == ENOENT) {
			b->gone++;	/* removed under us: follow the new one */
			close(fd);
			fd = -1;
		} else {
			b->other++;
			b->other_errno = errno;
		}
	}
	if (fd >= 0)
		close(fd);
	return NULL;
}

static int do_bridge(const char *attr, double secs, int n)
{
	struct br_arg b[8];
	pthread_t th[8];
	unsigned long on = 0, off = 0, busy = 0, gone = 0;
	int i, ret = 0;

	if (n < 1 || n > 8)
		n = 2;
	for (i = 0; i < n; i++) {
		memset(&b[i], 0, sizeof(b[i]));
		b[i].attr = attr;
		b[i].end = now_s() + secs;
		if (pthread_create(&th[i], NULL, bridge_thread, &b[i]))
			die("pthread_create");
	}
	for (i = 0; i < n; i++) {
		pthread_join(th[i], NULL);
		if (b[i].other)
			ret = forbidden("writing the bridge attribute: %s (%ld)",
					strerror(b[i].other_errno), b[i].other_errno);
		on += b[i].on;
		off += b[i].off;
		busy += b[i].busy;
		gone += b[i].gone;
	}
	printf("bridge: %d threads, on %lu, off %lu, EBUSY %lu, device away %lu\n",
	       n, on, off, busy, gone);
	return ret;
}

/* ---- poll across FROZEN and re-initialisation ----------------------------- */

static int do_poll(const char *dev, double secs)
{
	unsigned long polls = 0, in = 0, pri = 0, none = 0, ok = 0, einval = 0;
	struct nvme_hmb_trace_tail t = { 0 };
	struct nvme_hmb_trace_info info;
	double end = now_s() + secs, t0, worst = 0;
	const struct hmb_ring_hdr *h;
	struct pollfd p;
	int fd;

	fd = open_ring(dev, &info);
	if (fd < 0)
		die(dev);
	h = mmap(NULL, info.mmap_len, PROT_READ, MAP_SHARED, fd, 0);
	if (h == MAP_FAILED)
		die("mmap");
	fprintf(stderr, "ready\n");
	while (now_s() < end) {
		p.fd = fd;
		p.events = POLLIN | POLLPRI;
		t0 = now_s();
		if (poll(&p, 1, 200) < 0)
			return forbidden("poll: %s (%ld)", strerror(errno), errno);
		if (now_s() - t0 > worst)
			worst = now_s() - t0;
		polls++;
		if (p.revents & (POLLHUP | POLLNVAL))
			return forbidden("%spoll revents %#lx on a ring that stays",
					 "", p.revents);
		if (!p.revents)
			none++;
		if (p.revents & POLLPRI) {
			pri++;	/* frozen, or flagged corrupt: allowed here */
			usleep(1000);
		}
		if (p.revents & POLLIN) {
			in++;
			t.tail = __atomic_load_n(&h->head, __ATOMIC_ACQUIRE);
			if (!ioctl(fd, NVME_HMB_TRACE_SET_TAIL, &t))
				ok++;
			else if (errno == EINVAL)
				einval++;	/* a re-initialisation overtook it */
			else
				return forbidden("SET_TAIL: %s (%ld)",
						 strerror(errno), errno);
		}
	}
	printf("poll: %lu polls (POLLIN %lu, POLLPRI %lu, timeouts %lu), SET_TAIL ok %lu EINVAL %lu, longest poll %.3f s\n",
	       polls, in, pri, none, ok, einval, worst);
	/*
	 * The longest poll is reported, not judged: a loaded host can stall
	 * the guest for seconds.  A poll that never comes back keeps this
	 * loop from ending, and the suite's deadline reports that.
	 */
	return ok ? 0 : forbidden("%sno tail published in %ld s", "", (long)secs);
}

static void fw_record(uint8_t *area, uint32_t rs, uint64_t head, uint32_t seq)
{
	struct hmb_record_hdr *r = (void *)(area + (head & (rs - 1)));

	memset(r, 0, HMB_RECORD_SIZE(16));
	r->magic = HMB_RECORD_MAGIC;
	r->seq = seq;
	r->opcode = 0x100;
	r->payload_len = 16;
}

/*
 * The firmware's side: records of 48 bytes (they tile every lap exactly),
 * and every 2000 records, or when the ring is full, a FROZEN
 * re-initialisation in the order of docs/format.md section 11.2.
 */
static int do_fw(const char *res, double secs)
{
	unsigned long recs = 0, reinits = 0, full = 0;
	double end = now_s() + secs;
	struct hmb_ring_hdr *h;
	uint32_t rs, seq = 0;
	struct stat st;
	uint8_t *base;
	int fd;

	fd = open(res, O_RDWR);
	if (fd < 0 || fstat(fd, &st))
		die(res);
	base = mmap(NULL, st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (base == MAP_FAILED)
		die("mmap resource");
	h = (void *)base;
	rs = h->ring_size;
	if (h->magic != HMB_RING_MAGIC || rs < 4096 || rs & (rs - 1))
		return forbidden("%sno valid ring header in the BAR (ring_size %ld)",
				 "", rs);
	while (now_s() < end) {
		uint64_t head = h->head;
		uint64_t tail = __atomic_load_n(&h->tail, __ATOMIC_ACQUIRE);

		if (head - tail + HMB_RECORD_SIZE(16) > rs || recs % 2000 == 1999) {
			full += head - tail + HMB_RECORD_SIZE(16) > rs;
			__atomic_store_n(&h->flags, h->flags | HMB_RING_FLAG_FROZEN,
					 __ATOMIC_RELEASE);
			usleep(2000);
			h->tail = 0;
			h->head = 0;
			__atomic_store_n(&h->flags, 0, __ATOMIC_RELEASE);
			reinits++;
			recs++;
			continue;
		}
		fw_record(base + HMB_RECORD_AREA_OFF, rs, head, seq++);
		__atomic_store_n(&h->head, head + HMB_RECORD_SIZE(16),
				 __ATOMIC_RELEASE);
		recs++;
		if (recs % 64 == 0)
			usleep(200);
	}
	printf("fw: %lu records, %lu re-initialisations (%lu with the ring full)\n",
	       recs - reinits, reinits, full);
	return 0;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	srand(getpid());
	if (argc == 4 && !strcmp(argv[1], "mmap"))
		return do_mmap(argv[2], atof(argv[3]));
	if (argc == 4 && !strcmp(argv[1], "settail"))
		return do_settail(argv[2], atol(argv[3]));
	if (argc == 6 && !strcmp(argv[1], "openclose"))
		return do_openclose(argv[2], argv[3], atof(argv[4]), atoi(argv[5]));
	if (argc == 5 && !strcmp(argv[1], "bridge"))
		return do_bridge(argv[2], atof(argv[3]), atoi(argv[4]));
	if (argc == 4 && !strcmp(argv[1], "poll"))
		return do_poll(argv[2], atof(argv[3]));
	if (argc == 4 && !strcmp(argv[1], "fw"))
		return do_fw(argv[2], atof(argv[3]));
	fprintf(stderr, "usage: hmb_race mmap DEV SECS | settail DEV ITERS | openclose DEV CONSUMER_ATTR SECS N |\n"
		"       bridge ATTR SECS N | poll DEV SECS | fw RESOURCE SECS\n");
	return 2;
}
