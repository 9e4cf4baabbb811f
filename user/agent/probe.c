// SPDX-License-Identifier: GPL-2.0
/*
 * probe.c - what the running kernel offers hmb-trace-agent: tracefs, the
 * tracepoints, their BTF, NVMe controllers and block devices.
 */
#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <bpf/btf.h>

#include "agent.h"

const char *tracefs(void)
{
	static const char *const dirs[] = { "/sys/kernel/tracing",
					    "/sys/kernel/debug/tracing" };
	static char found[64];
	char p[128];
	size_t i;

	if (found[0])
		return found;
	for (i = 0; i < 2; i++) {
		snprintf(p, sizeof(p), "%s/events", dirs[i]);
		if (!access(p, F_OK)) {
			snprintf(found, sizeof(found), "%s", dirs[i]);
			return found;
		}
	}
	return NULL;
}

bool tp_exists(const char *cat, const char *ev)
{
	const char *t = tracefs();
	char p[256];

	if (!t)
		return false;
	snprintf(p, sizeof(p), "%s/events/%s/%s", t, cat, ev);
	return !access(p, F_OK);
}

/*
 * The kernel's BTF, and one module's split on it, parsed once for all the
 * questions the agent asks before it loads its programs (tp_btf_exists(),
 * kernel_issue_stamp(): each parse of vmlinux's takes milliseconds and
 * megabytes); probe_btf_release() frees them before libbpf parses its own.
 */
static struct btf *k_btf, *m_btf;
static bool k_tried;
static char m_name[64];

static struct btf *vmlinux_btf(void)
{
	if (!k_tried) {
		k_tried = true;
		k_btf = btf__load_vmlinux_btf();
	}
	return k_btf;
}

static struct btf *module_btf(const char *mod)
{
	char path[128];

	if (!vmlinux_btf())
		return NULL;
	if (strcmp(m_name, mod)) {
		btf__free(m_btf);
		snprintf(m_name, sizeof(m_name), "%s", mod);
		snprintf(path, sizeof(path), "/sys/kernel/btf/%s", mod);
		m_btf = btf__parse_split(path, k_btf);
	}
	return m_btf;
}

void probe_btf_release(void)
{
	btf__free(m_btf);
	btf__free(k_btf);
	m_btf = k_btf = NULL;
	m_name[0] = 0;
	k_tried = false;
}

/* Is there BTF for tracepoint @tp (vmlinux or module @mod)? */
bool tp_btf_exists(const char *tp, const char *mod)
{
	struct btf *vmlinux = vmlinux_btf(), *m;
	char name[128];

	if (!vmlinux)
		return false;
	snprintf(name, sizeof(name), "btf_trace_%s", tp);
	if (btf__find_by_name_kind(vmlinux, name, BTF_KIND_TYPEDEF) > 0)
		return true;
	m = mod ? module_btf(mod) : NULL;
	return m && btf__find_by_name_kind(m, name, BTF_KIND_TYPEDEF) > 0;
}

/* "nvmeN" at @s: N, and where it ends; -1 if @s is not that. */
static int nvme_num(const char *s, const char **end, unsigned int *n)
{
	uint64_t v;

	if (strncmp(s, "nvme", 4) || hmb_strtou64(s + 4, end, 10, &v) ||
	    v > INT_MAX)
		return -1;
	*n = (unsigned int)v;
	return 0;
}

/* The first line of sysfs file @path as "A" or "A:B" numbers; -1 if not. */
static int read_nums(const char *path, unsigned int *a, unsigned int *b)
{
	char line[64], *nl;
	const char *e;
	uint64_t x, y = 0;
	FILE *f = fopen(path, "r");
	bool ok;

	if (!f)
		return -1;
	ok = fgets(line, sizeof(line), f) != NULL;
	fclose(f);
	if (!ok)
		return -1;
	nl = strchr(line, '\n');
	if (nl)
		*nl = 0;
	if (hmb_strtou64(line, &e, 10, &x) || x > UINT32_MAX)
		return -1;
	if (b && (*e != ':' || hmb_strtou64(e + 1, &e, 10, &y) ||
		  y > UINT32_MAX))
		return -1;
	if (*e)
		return -1;
	*a = (unsigned int)x;
	if (b)
		*b = (unsigned int)y;
	return 0;
}

/* nvme0n1 / nvme0 -> controller instance 0 (and nsid for a namespace). */
int resolve_nvme(const char *dev, int *ctrl, unsigned int *nsid)
{
	char p[PATH_MAX], link[PATH_MAX];
	unsigned int c, n;
	const char *e;
	ssize_t len;

	*nsid = 0;
	if (!strncmp(dev, "/dev/", 5))
		dev += 5;
	if (nvme_num(dev, &e, &c))
		return -1;
	if (!*e) {
		*ctrl = (int)c;
		return 0;
	}
	if (*e != 'n' || hmb_strtou64(e + 1, &e, 10, &(uint64_t){ 0 }) || *e)
		return -1;
	/* the namespace's controller, as sysfs links it */
	snprintf(p, sizeof(p), "/sys/block/%s/device", dev);
	len = readlink(p, link, sizeof(link) - 1);
	if (len > 0) {
		const char *b;

		link[len] = 0;
		b = strrchr(link, '/');
		b = b ? b + 1 : link;
		nvme_num(b, &e, &c);
	}
	snprintf(p, sizeof(p), "/sys/block/%s/nsid", dev);
	if (read_nums(p, &n, NULL))
		n = 0;
	*ctrl = (int)c;
	*nsid = n;
	return 0;
}

int block_devt(const char *dev, __u32 *devt)
{
	char p[PATH_MAX];
	unsigned int ma, mi;
	struct stat st;

	if (strchr(dev, '/') && !stat(dev, &st) && S_ISBLK(st.st_mode)) {
		ma = major(st.st_rdev);
		mi = minor(st.st_rdev);
	} else {
		snprintf(p, sizeof(p), "/sys/class/block/%s/dev", dev);
		if (read_nums(p, &ma, &mi))
			return -1;
	}
	*devt = (ma << 20) | mi;
	return 0;
}

/* Has struct @st of @btf a member @m (at its top level)? */
static bool btf_has_member(const struct btf *btf, const char *st,
			   const char *m)
{
	int id = btf__find_by_name_kind(btf, st, BTF_KIND_STRUCT);
	const struct btf_type *t;
	const struct btf_member *mb;

	if (id <= 0)
		return false;
	t = btf__type_by_id(btf, id);
	mb = btf_members(t);
	for (unsigned int i = 0; i < btf_vlen(t); i++, mb++) {
		const char *n = btf__name_by_offset(btf, mb->name_off);

		if (n && !strcmp(n, m))
			return true;
	}
	return false;
}

/*
 * Does the request queue at sysfs directory @dir (a disk's, or a
 * partition's: its disk's) keep I/O statistics?  writeback throttling
 * registers a statistics callback when it is set up, which keeps
 * QUEUE_FLAG_STATS on; wbt_lat_usec > 0 says it is.  Without the file
 * (bio-based devices, a kernel without CONFIG_BLK_WBT): not known.
 */
static bool queue_has_stats(const char *dir)
{
	char p[PATH_MAX];
	unsigned int v;

	snprintf(p, sizeof(p), "%s/partition", dir);
	if (!access(p, F_OK))
		snprintf(p, sizeof(p), "%s/../queue/wbt_lat_usec", dir);
	else
		snprintf(p, sizeof(p), "%s/queue/wbt_lat_usec", dir);
	return !read_nums(p, &v, NULL) && v > 0;
}

const char *kernel_issue_stamp(__u32 devt, bool *readable)
{
	struct btf *vmlinux = vmlinux_btf();
	const char *why = NULL;
	char p[PATH_MAX];
	struct dirent *d;
	DIR *dir;

	*readable = false;
	if (!vmlinux)
		return "no kernel BTF";
	if (!btf_has_member(vmlinux, "request", "io_start_time_ns"))
		return "struct request has no io_start_time_ns";
	*readable = true;
	if (btf_has_member(vmlinux, "blk_plug", "cur_ktime"))
		why = "the kernel stamps requests with its plug's cached time (blk_plug.cur_ktime), not at issue";
	if (why)
		return why;
	if (devt) {
		snprintf(p, sizeof(p), "/sys/dev/block/%u:%u", devt >> 20,
			 devt & 0xfffff);
		return queue_has_stats(p) ? NULL :
		       "the disk's queue keeps no I/O statistics (queue/wbt_lat_usec 0 or missing)";
	}
	/* every request-based disk (those with an mq/ directory) */
	dir = opendir("/sys/block");
	if (!dir)
		return "cannot list /sys/block";
	while (!why && (d = readdir(dir))) {
		if (d->d_name[0] == '.')
			continue;
		snprintf(p, sizeof(p), "/sys/block/%s/mq", d->d_name);
		if (access(p, F_OK))
			continue;
		snprintf(p, sizeof(p), "/sys/block/%s", d->d_name);
		if (!queue_has_stats(p))
			why = "a disk's queue keeps no I/O statistics (queue/wbt_lat_usec 0 or missing)";
	}
	closedir(dir);
	return why;
}

/*
 * The controller instance the disk @name (under /sys/block) belongs to,
 * as its "device" link names it (nvmeN), or -1.
 */
static int disk_ctrl(const char *name)
{
	char p[PATH_MAX], link[PATH_MAX];
	const char *b, *e;
	unsigned int c;
	ssize_t len;

	snprintf(p, sizeof(p), "/sys/block/%s/device", name);
	len = readlink(p, link, sizeof(link) - 1);
	if (len <= 0)
		return -1;
	link[len] = 0;
	b = strrchr(link, '/');
	b = b ? b + 1 : link;
	return nvme_num(b, &e, &c) || *e ? -1 : (int)c;
}

/*
 * The largest hardware queue number + 1 and tag count of the request-based
 * disk @name's queues (its mq/N/nr_tags), into *@nhw and *@tags.
 */
static void disk_queues(const char *name, unsigned int *nhw,
			unsigned int *tags)
{
	char p[PATH_MAX];
	struct dirent *d;
	unsigned int n, t;
	const char *e;
	uint64_t v;
	DIR *dir;

	snprintf(p, sizeof(p), "/sys/block/%s/mq", name);
	dir = opendir(p);
	if (!dir)
		return;
	while ((d = readdir(dir))) {
		if (hmb_strtou64(d->d_name, &e, 10, &v) || *e || v >= 65535)
			continue;
		n = (unsigned int)v + 1;
		if (n > *nhw)
			*nhw = n;
		snprintf(p, sizeof(p), "/sys/block/%s/mq/%s/nr_tags", name,
			 d->d_name);
		if (!read_nums(p, &t, NULL) && t > *tags)
			*tags = t;
	}
	closedir(dir);
}

void kseq_geometry(int targ, struct hmb_kseq_geom *g)
{
	unsigned int lo = UINT_MAX, hi = 0, nhw = 0, tags = 32, c;
	struct dirent *d;
	const char *e;
	long cpus;
	DIR *dir;
	int dc;

	/* controllers: the one asked for, else every one there is */
	dir = opendir("/sys/class/nvme");
	while (targ < 0 && dir && (d = readdir(dir))) {
		if (nvme_num(d->d_name, &e, &c) || *e)
			continue;
		lo = c < lo ? c : lo;
		hi = c > hi ? c : hi;
	}
	if (dir)
		closedir(dir);
	if (targ >= 0)
		lo = hi = (unsigned int)targ;
	if (lo > hi)
		lo = hi = 0;
	/* their queues (qid = hardware queue number + 1) and tags */
	dir = opendir("/sys/block");
	while (dir && (d = readdir(dir))) {
		dc = disk_ctrl(d->d_name);
		if (dc >= 0 && (unsigned int)dc >= lo && (unsigned int)dc <= hi)
			disk_queues(d->d_name, &nhw, &tags);
	}
	if (dir)
		closedir(dir);
	if (!nhw) {
		/* no disk to read them from: what nvme-pci may create */
		cpus = sysconf(_SC_NPROCESSORS_CONF);
		nhw = cpus > 0 && cpus < 65535 ? (unsigned int)cpus : 64;
		tags = 4096;
	}
	g->ctrl0 = lo;
	g->nctrl = hi - lo + 1;
	g->nq = nhw + 1;
	for (g->tag_bits = 5; g->tag_bits < 12 && (1U << g->tag_bits) < tags;
	     g->tag_bits++)
		;
}
