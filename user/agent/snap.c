// SPDX-License-Identifier: GPL-2.0
/*
 * snap.c - hmb-trace-agent's flight recorder (--snapshot-dir).  One
 * window holds both the firmware records (their bytes as -w writes them)
 * and the host commands (as the agent hands them over, a struct hmb_cmd
 * each: only a bundle's writer formats them, as -j --per-command writes
 * them, and only those the bundle holds), each entry stamped with a
 * CLOCK_MONOTONIC time: a record with when it arrived (the agent drains
 * the rings as they fill), a command with its completion (the agent has
 * it when it judged it, up to a tick and HMB_LIVE_LAG commands later):
 * entries older than --pre are dropped, and when --window-mb is full the
 * oldest go first, whatever their kind, so both windows share the one
 * budget.  Each eviction is counted (by age or by budget), so a bundle
 * can say what went before it.
 *
 * On a request (a trigger's firing, SIGUSR1) the agent waits --post
 * seconds, keeping everything newer than --pre before the request, then
 * a child process writes the bundle: fork() hands it the window as it is
 * (copy-on-write), while the agent goes on draining its ring buffers.
 * Writing and fsyncing a bundle of tens of MiB takes longer than the BPF
 * ring buffer holds records at a high rate, and writing incrementally
 * from the loop would still put each write's latency in front of the
 * drain; the daemon's flight recorder (user/daemon/window.c) forks for
 * the same reason.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "hmb_agent.h"
#include "snap.h"

enum { ENT_FW = 1, ENT_HOST = 2 };

/* An entry in the window: this header, then @len bytes. */
struct ent {
	uint64_t t_ns;
	uint32_t len;
	uint16_t kind;
	uint16_t ring;
};

struct counts {
	uint64_t fw, host;
};

static struct {
	struct snap_opts o;
	uint8_t *map;
	size_t size;
	uint64_t head, tail;		/* stream offsets: tail <= head */
	struct counts held, in;
	struct counts reach;		/* the latest stamp of each side */
	struct counts ev_age, ev_budget;
	uint64_t too_big;
	uint32_t max_len;		/* the longest entry's */
	/* what a bundle's writer found it holds, for snapshot.json */
	uint64_t host_before;		/* lines of commands done before --pre */
	uint64_t fw_before;		/* records from before --pre */
	struct counts after;		/* entries past the window's end */
	bool have_fw_span, have_host_span;
	uint64_t fw_first, fw_last, host_first, host_last;
	/* the snapshot asked for, waiting for its --post */
	bool pending;
	uint64_t pend_ns;
	char stem[160];
	char reason[32];
	char *fired;
	/* the writer */
	pid_t child;
	char child_tmp[4096 + 192];
	bool have_last;
	uint64_t last_ns;		/* the last accepted request */
	uint64_t requests, accepted, written, failed;
	uint64_t sup_holdoff, sup_max, sup_pending;
} S;

bool snap_armed(void)
{
	return S.map != NULL;
}

int snap_init(const struct snap_opts *o)
{
	struct stat st;
	void *m;

	S.o = *o;
	if (stat(o->dir, &st)) {
		fprintf(stderr, "%s: --snapshot-dir %s: %s\n", o->prog, o->dir,
			strerror(errno));
		return -1;
	}
	if (!S_ISDIR(st.st_mode)) {
		fprintf(stderr, "%s: --snapshot-dir %s: not a directory\n",
			o->prog, o->dir);
		return -1;
	}
	/* Private: a snapshot's child keeps the window as it was at fork. */
	m = mmap(NULL, o->window, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED) {
		fprintf(stderr, "%s: cannot map a %zu-byte window: %s\n",
			o->prog, o->window, strerror(errno));
		return -1;
	}
	S.map = m;
	S.size = o->window;
	return 0;
}

static void put(uint64_t pos, const void *src, size_t n)
{
	size_t off = pos % S.size, first = n < S.size - off ? n : S.size - off;

	memcpy(S.map + off, src, first);
	memcpy(S.map, (const uint8_t *)src + first, n - first);
}

static void get(uint64_t pos, void *dst, size_t n)
{
	size_t off = pos % S.size, first = n < S.size - off ? n : S.size - off;

	memcpy(dst, S.map + off, first);
	memcpy((uint8_t *)dst + first, S.map, n - first);
}

static void evict_one(bool by_age)
{
	struct counts *c = by_age ? &S.ev_age : &S.ev_budget;
	struct ent e;

	get(S.tail, &e, sizeof(e));
	if (e.kind == ENT_FW) {
		c->fw++;
		S.held.fw--;
	} else {
		c->host++;
		S.held.host--;
	}
	S.tail += sizeof(e) + e.len;
}

static void add(uint16_t kind, uint16_t ring, const void *a, size_t alen,
		const void *b, size_t blen, uint64_t now_ns)
{
	struct ent e = { .t_ns = now_ns, .len = (uint32_t)(alen + blen),
			 .kind = kind, .ring = ring };
	size_t need = sizeof(e) + alen + blen;

	if (need > S.size) {
		S.too_big++;
		return;
	}
	while (S.head - S.tail + need > S.size)
		evict_one(false);
	if (e.len > S.max_len)
		S.max_len = e.len;
	put(S.head, &e, sizeof(e));
	put(S.head + sizeof(e), a, alen);
	if (blen)
		put(S.head + sizeof(e) + alen, b, blen);
	S.head += need;
	if (kind == ENT_FW) {
		S.in.fw++;
		S.held.fw++;
		if (now_ns > S.reach.fw)
			S.reach.fw = now_ns;
	} else {
		S.in.host++;
		S.held.host++;
		if (now_ns > S.reach.host)
			S.reach.host = now_ns;
	}
}

void snap_fw(unsigned int ring, const struct hmb_record_hdr *h,
	     const void *payload, uint64_t t_ns)
{
	if (S.map)
		add(ENT_FW, (uint16_t)ring, h, sizeof(*h), payload,
		    h->payload_len, t_ns);
}

void snap_host(const void *ent, size_t len, uint64_t now_ns)
{
	if (S.map)
		add(ENT_HOST, 0, ent, len, NULL, 0, now_ns);
}

/*
 * Drop what is older than --pre (before the pending request, if any),
 * and SNAP_CATCHUP_NS more: a trigger's request is for when it fired,
 * and the agent may take its event that much later.
 */
static void prune(uint64_t now_ns)
{
	uint64_t pre = (uint64_t)(S.o.pre_s * 1e9) + SNAP_CATCHUP_NS, cut;
	struct ent e;

	cut = now_ns > pre ? now_ns - pre : 0;
	if (S.pending && S.pend_ns - (S.pend_ns > pre ? pre : S.pend_ns) < cut)
		cut = S.pend_ns > pre ? S.pend_ns - pre : 0;
	while (S.tail < S.head) {
		get(S.tail, &e, sizeof(e));
		if (e.t_ns >= cut)
			break;
		evict_one(true);
	}
}

static uint64_t suppressed(void)
{
	return S.sup_holdoff + S.sup_max + S.sup_pending;
}

/* The writer, if any: count what became of it; @block: wait for it. */
static void reap(bool block)
{
	int st;
	pid_t r;

	if (!S.child)
		return;
	do
		r = waitpid(S.child, &st, block ? 0 : WNOHANG);
	while (r < 0 && errno == EINTR);
	if (!r)
		return;
	if (r == S.child && WIFEXITED(st) && WEXITSTATUS(st) == 0) {
		S.written++;
	} else {
		S.failed++;
		if (r == S.child && WIFSIGNALED(st))
			fprintf(stderr, "%s: snapshot %s: its writer was killed by %s\n",
				S.o.prog, S.child_tmp, strsignal(WTERMSIG(st)));
	}
	S.child = 0;
}

void snap_request(const char *reason, const char *fired, uint64_t now_ns)
{
	if (!S.map)
		return;
	S.requests++;
	if (S.pending) {
		S.sup_pending++;
		fprintf(stderr, "%s: %s: snapshot suppressed: the one for %s is waiting for its --post, and holds this moment (%" PRIu64 " suppressed so far)\n",
			S.o.prog, reason, S.reason, suppressed());
		return;
	}
	if (S.o.max_snaps && S.accepted >= S.o.max_snaps) {
		S.sup_max++;
		fprintf(stderr, "%s: %s: snapshot suppressed: %" PRIu64 " taken, --max-snapshots %" PRIu64 " (%" PRIu64 " suppressed so far)\n",
			S.o.prog, reason, S.accepted, S.o.max_snaps,
			suppressed());
		return;
	}
	if (S.have_last && (now_ns < S.last_ns ||
			    now_ns - S.last_ns < (uint64_t)S.o.holdoff_s * 1000000000ULL)) {
		S.sup_holdoff++;
		fprintf(stderr, "%s: %s: snapshot suppressed: the last one %.1f s ago, --holdoff %u (%" PRIu64 " suppressed so far)\n",
			S.o.prog, reason,
			now_ns < S.last_ns ? 0.0 : (double)(now_ns - S.last_ns) / 1e9,
			S.o.holdoff_s, suppressed());
		return;
	}
	S.accepted++;
	S.have_last = true;
	S.last_ns = now_ns;
	S.pending = true;
	S.pend_ns = now_ns;
	snprintf(S.reason, sizeof(S.reason), "%s", reason);
	free(S.fired);
	S.fired = fired ? strdup(fired) : NULL;
	/* named by the moment it was asked for, as the daemon's */
	hmb_snapshot_stem(S.stem, sizeof(S.stem), reason);
}

/* The window's end: the request plus --post. */
static uint64_t window_end(void)
{
	return S.pend_ns + (uint64_t)(S.o.post_s * 1e9);
}

bool snap_due(uint64_t now_ns)
{
	uint64_t end = window_end();

	if (!S.pending || now_ns < end)
		return false;
	if (now_ns - end >= SNAP_CATCHUP_NS)
		return true;
	/* a side that never had an entry (no firmware: -m block) has none to wait for */
	return (!S.in.fw || S.reach.fw >= end) &&
	       (!S.in.host || S.reach.host >= end);
}

/* ------------------------------------------------------ the writer (child) */

struct ring_sum {
	struct hmb_dump_writer *w;
	uint64_t records, lost;
	bool have_seq;
	bool past;		/* a record past the window's end came */
	uint32_t first_seq, last_seq;
};

static int write_text(const char *dir, const char *name, const char *text,
		      size_t len)
{
	char p[4096 + 256];
	size_t off = 0;
	int fd;

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	fd = open(p, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		goto fail;
	while (off < len) {
		ssize_t n = write(fd, text + off, len - off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			close(fd);
			goto fail;
		}
		off += (size_t)n;
	}
	if (fsync(fd) || close(fd))
		goto fail;
	return 0;
fail:
	fprintf(stderr, "%s: snapshot: %s: %s\n", S.o.prog, p, strerror(errno));
	return -1;
}

static void dump_name(const char *dir, unsigned int ring, char *buf,
		      size_t len)
{
	if (ring)
		snprintf(buf, len, "%s/" SNAP_DUMP_NAME ".ring%u", dir, ring);
	else
		snprintf(buf, len, "%s/" SNAP_DUMP_NAME, dir);
}

static int open_ring(const char *dir, unsigned int ring, struct ring_sum *r)
{
	struct hmb_sidecar sc;
	struct hmb_error err = { 0 };
	char p[4096 + 256];

	memset(&sc, 0, sizeof(sc));
	S.o.sidecar(ring, &sc);
	dump_name(dir, ring, p, sizeof(p));
	if (hmb_dump_writer_open(&r->w, p, &sc, 0, &err)) {
		fprintf(stderr, "%s: snapshot: %s\n", S.o.prog, err.msg);
		return -1;
	}
	return 0;
}

/* Records lost by the ring inside the dump written: its seq gaps. */
static int dump_lost(const char *dir, unsigned int ring, uint64_t *lost)
{
	struct hmb_error err = { 0 };
	struct hmb_reader *rd = NULL;
	struct hmb_acct *a = hmb_acct_new(0, NULL, NULL);
	char p[4096 + 256];
	int fd, rc = -1;

	dump_name(dir, ring, p, sizeof(p));
	fd = open(p, O_RDONLY | O_CLOEXEC);
	if (a && fd >= 0 && !hmb_reader_open(&rd, fd, p, &err) &&
	    !hmb_reader_acct(rd, a, UINT64_MAX, &err)) {
		*lost = a->lost;
		rc = 0;
	} else {
		fprintf(stderr, "%s: snapshot: reading %s back: %s\n", S.o.prog,
			p, err.msg[0] ? err.msg : strerror(errno));
	}
	hmb_reader_close(rd);
	if (fd >= 0)
		close(fd);
	hmb_acct_free(a);
	return rc;
}

static void counts_json(struct hmb_json *j, const char *key,
			const struct counts *c)
{
	hmb_json_key_str(j, key);
	hmb_json_obj(j);
	hmb_json_kv_u64(j, "fw_records", c->fw);
	hmb_json_kv_u64(j, "host_commands", c->host);
	hmb_json_end(j);
}

static void span(bool *have, uint64_t *first, uint64_t *last, uint64_t t)
{
	if (!*have || t < *first)
		*first = t;
	if (!*have || t > *last)
		*last = t;
	*have = true;
}

/* [first, last] of one side, or null: it has nothing. */
static void span_json(struct hmb_json *j, const char *key, bool have,
		      uint64_t first, uint64_t last)
{
	hmb_json_key_str(j, key);
	if (!have) {
		hmb_json_null(j);
		return;
	}
	hmb_json_arr(j);
	hmb_json_u64(j, first);
	hmb_json_u64(j, last);
	hmb_json_end_arr(j);
}

static int write_summary(const char *dir, struct ring_sum *rs,
			 uint64_t host_n, uint64_t t_ns)
{
	struct hmb_outbuf ob;
	struct hmb_json j;
	uint64_t pre = (uint64_t)(S.o.pre_s * 1e9);
	int rc;

	if (hmb_ob_open(&ob, -1, "snapshot.json", 1 << 16))
		return -1;
	hmb_json_init(&j, &ob);
	hmb_json_obj(&j);
	hmb_json_kv_str(&j, "type", "snapshot");
	hmb_json_kv_str(&j, "name", S.stem);
	hmb_json_kv_str(&j, "reason", S.reason);
	hmb_json_kv_u64(&j, "requested_monotonic_ns", S.pend_ns);
	hmb_json_kv_u64(&j, "written_monotonic_ns", t_ns);
	hmb_json_kv_dbl(&j, "pre_s", S.o.pre_s, 3);
	hmb_json_kv_dbl(&j, "post_s", S.o.post_s, 3);
	hmb_json_kv_u64(&j, "window_bytes", S.size);
	hmb_json_kv_u64(&j, "window_held_bytes", S.head - S.tail);
	hmb_json_key(&j, "fw");
	hmb_json_arr(&j);
	for (unsigned int r = 0; r < HMB_MAX_RINGS; r++) {
		char name[64];

		if (!rs[r].w && r)
			continue;
		hmb_json_obj(&j);
		hmb_json_kv_u64(&j, "ring", r);
		snprintf(name, sizeof(name), r ? SNAP_DUMP_NAME ".ring%u" :
			 SNAP_DUMP_NAME, r);
		hmb_json_kv_str(&j, "file", name);
		hmb_json_kv_u64(&j, "records", rs[r].records);
		hmb_json_key(&j, "first_seq");
		rs[r].have_seq ? hmb_json_u64(&j, rs[r].first_seq) :
				 hmb_json_null(&j);
		hmb_json_key(&j, "last_seq");
		rs[r].have_seq ? hmb_json_u64(&j, rs[r].last_seq) :
				 hmb_json_null(&j);
		hmb_json_kv_u64(&j, "lost_by_ring", rs[r].lost);
		hmb_json_end(&j);
	}
	hmb_json_end_arr(&j);
	hmb_json_kv_str(&j, "host_file", "host.jsonl");
	hmb_json_kv_u64(&j, "host_commands", host_n);
	hmb_json_kv_u64(&j, "host_commands_before_window", S.host_before);
	hmb_json_kv_u64(&j, "fw_records_before_window", S.fw_before);
	hmb_json_kv_u64(&j, "window_start_monotonic_ns",
			S.pend_ns > pre ? S.pend_ns - pre : 0);
	hmb_json_kv_u64(&j, "window_end_monotonic_ns", window_end());
	span_json(&j, "fw_records_monotonic_ns", S.have_fw_span, S.fw_first,
		  S.fw_last);
	span_json(&j, "host_completed_monotonic_ns", S.have_host_span,
		  S.host_first, S.host_last);
	counts_json(&j, "evicted_by_age", &S.ev_age);
	counts_json(&j, "evicted_by_budget", &S.ev_budget);
	counts_json(&j, "after_window", &S.after);
	counts_json(&j, "received", &S.in);
	hmb_json_kv_u64(&j, "too_big", S.too_big);
	hmb_json_end(&j);
	hmb_json_nl(&j);
	rc = write_text(dir, "snapshot.json", ob.buf, ob.len);
	hmb_ob_close(&ob);
	return rc;
}

static int write_bundle(const char *dir, const char *clock_json,
			uint64_t t_ns)
{
	struct ring_sum *rs = calloc(HMB_MAX_RINGS, sizeof(*rs));
	struct hmb_error err = { 0 };
	char lines[512], p[4096 + 256];
	uint64_t pos = S.tail, host_n = 0, fw_n = 0, lost = 0;
	uint64_t pre = (uint64_t)(S.o.pre_s * 1e9);
	uint64_t start = S.pend_ns > pre ? S.pend_ns - pre : 0;
	uint64_t end = window_end();
	uint8_t *buf = malloc(S.max_len + 1);
	struct hmb_outbuf line = { 0 };
	FILE *host = NULL;
	int fd, rc = 0;

	snprintf(p, sizeof(p), "%s/host.jsonl", dir);
	fd = open(p, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd >= 0 && !(host = fdopen(fd, "w")))
		close(fd);
	/* a line as long as the agent's own (its -j output buffer) */
	if (!rs || !buf || !host || hmb_ob_open(&line, -1, "host.jsonl", 1 << 16) ||
	    open_ring(dir, 0, &rs[0])) {
		fprintf(stderr, "%s: snapshot: %s: %s\n", S.o.prog, p,
			strerror(errno));
		return -1;
	}
	while (pos < S.head && !rc) {
		struct ent e;

		get(pos, &e, sizeof(e));
		get(pos + sizeof(e), buf, e.len);
		pos += sizeof(e) + e.len;
		if (e.kind == ENT_HOST) {
			/* what came while the bundle waited: past its end */
			if (e.t_ns > end) {
				S.after.host++;
				continue;
			}
			/*
			 * Stamped with its completion, a command judged late
			 * comes behind newer entries, which kept it from the
			 * prune: before the window, it has no records here.
			 */
			if (e.t_ns < start) {
				S.host_before++;
				continue;
			}
			line.len = 0;
			line.err = 0;
			S.o.host_line(&line, buf, e.len);
			if (line.err) {
				S.too_big++;
				continue;
			}
			span(&S.have_host_span, &S.host_first, &S.host_last,
			     e.t_ns);
			fwrite(line.buf, 1, line.len, host);
			fputc('\n', host);
			host_n++;
			continue;
		}
		struct hmb_record_hdr h;
		struct ring_sum *r = &rs[e.ring % HMB_MAX_RINGS];

		/*
		 * A ring's dump stays whole, a gap in it being a loss: it
		 * starts at the ring's first record from the window's start
		 * and ends before its first past the end, whatever a record
		 * between says (a stamp from before the clock estimate, or
		 * across a step, need not be in order).
		 */
		if (r->past || e.t_ns > end) {
			r->past = true;
			S.after.fw++;
			continue;
		}
		if (!r->have_seq && e.t_ns < start) {
			S.fw_before++;
			continue;
		}
		memcpy(&h, buf, sizeof(h));
		if (!r->w && open_ring(dir, e.ring, r))
			rc = -1;
		else if (hmb_dump_writer_add(r->w, &h, buf + sizeof(h), &err)) {
			fprintf(stderr, "%s: snapshot: %s\n", S.o.prog, err.msg);
			rc = err.code == HMB_E_IO ? -1 : 0;
		} else {
			span(&S.have_fw_span, &S.fw_first, &S.fw_last, e.t_ns);
			r->records++;
			fw_n++;
			if (!r->have_seq)
				r->first_seq = h.seq;
			r->have_seq = true;
			r->last_seq = h.seq;
		}
	}
	if (fflush(host) || fsync(fileno(host)))
		rc = -1;
	if (fclose(host))
		rc = -1;
	snprintf(lines, sizeof(lines),
		 "consumer=hmb-trace-agent\nsnapshot_reason=%s\nsnapshot_pre_s=%.3f\nsnapshot_post_s=%.3f\nwindow_bytes=%zu\nwindow_evicted_records=%" PRIu64 "\n",
		 S.reason, S.o.pre_s, S.o.post_s, S.size,
		 S.ev_age.fw + S.ev_budget.fw);
	for (unsigned int r = 0; r < HMB_MAX_RINGS; r++) {
		if (!rs[r].w)
			continue;
		if (hmb_dump_writer_close(rs[r].w, lines, &err)) {
			fprintf(stderr, "%s: snapshot: %s\n", S.o.prog, err.msg);
			rc = -1;
		} else if (!rc && dump_lost(dir, r, &rs[r].lost)) {
			rc = -1;
		}
		rs[r].w = (void *)1;	/* written: listed in snapshot.json */
		lost += rs[r].lost;
	}
	if (!rc)
		rc = write_text(dir, "clock.json", clock_json, strlen(clock_json));
	if (!rc) {
		const char *f = S.fired ? S.fired : "{}";

		rc = write_text(dir, "trigger.json", f, strlen(f));
	}
	if (!rc)
		rc = write_summary(dir, rs, host_n, t_ns);
	if (!rc)
		fprintf(stderr, "%s: snapshot %s/%s: %" PRIu64 " firmware records (%" PRIu64
			" lost by the ring inside it), %" PRIu64 " host commands; evicted before it: %"
			PRIu64 " records, %" PRIu64 " commands\n", S.o.prog,
			S.o.dir, S.stem, fw_n, lost, host_n,
			S.ev_age.fw + S.ev_budget.fw,
			S.ev_age.host + S.ev_budget.host);
	line.len = 0;	/* written: no fd to flush it to */
	hmb_ob_close(&line);
	free(buf);
	free(rs);
	return rc;
}

/* Remove a bundle the writer did not finish (its own files only). */
static void discard(const char *dir)
{
	static const char *const names[] = {
		SNAP_DUMP_NAME, SNAP_DUMP_NAME ".meta", SNAP_DUMP_NAME ".meta.tmp",
		"host.jsonl", "clock.json", "trigger.json", "snapshot.json",
	};
	char p[4096 + 256];

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		snprintf(p, sizeof(p), "%s/%s", dir, names[i]);
		unlink(p);
	}
	for (unsigned int r = 1; r < HMB_MAX_RINGS; r++) {
		snprintf(p, sizeof(p), "%s/" SNAP_DUMP_NAME ".ring%u", dir, r);
		unlink(p);
		snprintf(p, sizeof(p), "%s/" SNAP_DUMP_NAME ".ring%u.meta", dir, r);
		unlink(p);
	}
	rmdir(dir);
}

/* DIR/<stem>, or <stem>-2, -3, ... if taken: never over another bundle. */
static int publish(const char *tmp)
{
	char out[4096 + 192];
	int rc = hmb_publish_noreplace(tmp, S.o.dir, S.stem, out, sizeof(out));

	if (rc == -EEXIST)
		return -1;	/* 999 names taken */
	if (rc) {
		fprintf(stderr, "%s: snapshot: cannot rename %s to %s: %s\n",
			S.o.prog, tmp, out, strerror(-rc));
		return -1;
	}
	hmb_fsync_dir_of(out);
	return 0;
}

static int child_write(const char *clock_json, uint64_t t_ns)
{
	if (mkdir(S.child_tmp, 0700)) {
		fprintf(stderr, "%s: snapshot: cannot create %s: %s\n", S.o.prog,
			S.child_tmp, strerror(errno));
		return -1;
	}
	if (write_bundle(S.child_tmp, clock_json, t_ns) || publish(S.child_tmp)) {
		discard(S.child_tmp);
		return -1;
	}
	return 0;
}

void snap_take(uint64_t now_ns, const char *clock_json)
{
	pid_t pid;

	if (!S.pending)
		return;
	S.pending = false;
	reap(true);	/* one writer at a time */
	snprintf(S.child_tmp, sizeof(S.child_tmp), "%s/.%s.tmp", S.o.dir,
		 S.stem);
	fflush(NULL);	/* nothing buffered written twice */
	pid = fork();
	if (pid < 0) {
		fprintf(stderr, "%s: snapshot: cannot fork its writer: %s\n",
			S.o.prog, strerror(errno));
		S.failed++;
		return;
	}
	if (!pid)
		_exit(child_write(clock_json, now_ns) ? 1 : 0);
	S.child = pid;
}

void snap_tick(uint64_t now_ns)
{
	if (!S.map)
		return;
	prune(now_ns);
	reap(false);
}

void snap_finish(uint64_t now_ns, const char *clock_json)
{
	if (!S.map)
		return;
	if (S.pending) {
		fprintf(stderr, "%s: snapshot for %s taken at exit, before its --post was over\n",
			S.o.prog, S.reason);
		snap_take(now_ns, clock_json);
	}
	reap(true);
}

void snap_report_text(FILE *f)
{
	if (!S.map)
		return;
	fprintf(f, "snapshots: %" PRIu64 " requested, %" PRIu64 " written, %" PRIu64
		" failed, %" PRIu64 " suppressed (holdoff %" PRIu64 ", max %" PRIu64
		", pending %" PRIu64 "); window %zu bytes, evicted %" PRIu64
		" records and %" PRIu64 " commands by budget, %" PRIu64
		" records and %" PRIu64 " commands by age\n",
		S.requests, S.written, S.failed, suppressed(), S.sup_holdoff,
		S.sup_max, S.sup_pending, S.size, S.ev_budget.fw,
		S.ev_budget.host, S.ev_age.fw, S.ev_age.host);
}

void snap_report_json(struct hmb_json *j)
{
	if (!S.map)
		return;
	hmb_json_key(j, "snapshots");
	hmb_json_obj(j);
	hmb_json_kv_str(j, "dir", S.o.dir);
	hmb_json_kv_u64(j, "requests", S.requests);
	hmb_json_kv_u64(j, "written", S.written);
	hmb_json_kv_u64(j, "failed", S.failed);
	hmb_json_kv_u64(j, "suppressed", suppressed());
	hmb_json_kv_u64(j, "suppressed_holdoff", S.sup_holdoff);
	hmb_json_kv_u64(j, "suppressed_max", S.sup_max);
	hmb_json_kv_u64(j, "suppressed_pending", S.sup_pending);
	hmb_json_kv_u64(j, "window_bytes", S.size);
	hmb_json_kv_u64(j, "window_held_bytes", S.head - S.tail);
	counts_json(j, "evicted_by_age", &S.ev_age);
	counts_json(j, "evicted_by_budget", &S.ev_budget);
	counts_json(j, "received", &S.in);
	hmb_json_end(j);
}

void snap_free(void)
{
	if (S.map)
		munmap(S.map, S.size);
	S.map = NULL;
	free(S.fired);
	S.fired = NULL;
}
