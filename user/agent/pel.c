// SPDX-License-Identifier: GPL-2.0
/*
 * --pel DEV: the drive's Persistent Event Log in the live report.  Read at
 * start and at each report (user/nvme: establish a context, read, release
 * it -- a context holds the log as it was when established, so each read
 * is a context of its own), each event placed on host CLOCK_MONOTONIC by
 * pel_place(), the mapping every reader of the log uses; the events not
 * in the previous read are printed with the commands the agent judged
 * around them, kept in a ring of the most recent ones.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent.h"
#include "pel.h"

#define PEL_MAX_BYTES	(256u << 20)
#define RECENT		16384	/* commands kept to find an event's */
#define LIST_MAX	16	/* listed per event in JSON */

struct recent {
	uint64_t s, e;
	uint16_t qid, cid;
	char opc[16];
};

static struct {
	int fd;
	const char *dev;
	uint64_t *seen;		/* hashes of the previous read's events */
	size_t nseen;
	struct recent *r;	/* ring of the latest commands */
	size_t head, n;
	uint64_t reads, read_errors, new_events;
} P = { .fd = -1 };

/* passthru.c's end for a failed system call: the agent cannot go on. */
void die(const char *what)
{
	fprintf(stderr, PROG ": --pel %s: %s: %s\n", P.dev, what,
		strerror(errno));
	exit(EXIT_FAIL);
}

static uint64_t ev_hash(const struct pel_event *ev, const uint8_t *buf)
{
	const uint8_t *b = buf + ev->off;
	size_t n = (size_t)3 + ev->ehl + ev->el;
	uint64_t h = 0xcbf29ce484222325ull;

	for (size_t i = 0; i < n; i++) {
		h ^= b[i];
		h *= 0x100000001b3ull;
	}
	return h;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

void agent_pel_cmd(const struct hmb_cmd *c)
{
	struct recent *x;

	if (P.fd < 0 || !P.r)
		return;
	x = &P.r[P.head];
	P.head = (P.head + 1) % RECENT;
	if (P.n < RECENT)
		P.n++;
	x->s = c->h.submit_ns;
	x->e = c->h.complete_ns ? c->h.complete_ns : c->h.submit_ns;
	x->qid = c->h.qid;
	x->cid = c->h.cid;
	memcpy(x->opc, c->h.opc, sizeof(x->opc));
	x->opc[sizeof(x->opc) - 1] = 0;
}

/* One new event, with the kept commands its time +- bound meets. */
static void show(const struct pel_event *ev, enum pel_unplaced why,
		 uint64_t t, uint64_t b)
{
	const char *name = pel_type_name(ev->type);
	const struct recent *slow = NULL;
	uint64_t over = 0, fly = 0;
	char fields[120], nb[16];
	struct hmb_json *j = &ag.j;
	size_t listed = 0;

	snprintf(nb, sizeof(nb), "type_%02x", ev->type);
	pel_fields_text(ev, fields, sizeof(fields));
	if (ag.env.json) {
		hmb_json_obj(j);
		hmb_json_kv_str(j, "type", "pel");
		hmb_json_kv_str(j, "device", P.dev);
		hmb_json_kv_u64(j, "index", ev->index);
		hmb_json_kv_u64(j, "event_type", ev->type);
		hmb_json_kv_str(j, "event", name ? name : nb);
		hmb_json_kv_u64(j, "ctrl_timestamp_ms", ev->ts.ms);
		hmb_json_kv_str(j, "fields", fields);
		hmb_json_kv_str(j, "place", pel_unplaced_name(why));
		hmb_json_key(j, "host_ns");
		if (why == PEL_PLACED)
			hmb_json_u64(j, t);
		else
			hmb_json_null(j);
		hmb_json_kv_u64(j, "bound_ns", b);
		hmb_json_key(j, "commands");
		hmb_json_arr(j);
	}
	for (size_t k = 0; why == PEL_PLACED && k < P.n; k++) {
		const struct recent *x = &P.r[k];

		if (x->s > t + b || x->e + b < t)
			continue;
		over++;
		if (x->s <= t && t <= x->e)
			fly++;
		if (!slow || x->e - x->s > slow->e - slow->s)
			slow = x;
		if (ag.env.json && listed++ < LIST_MAX) {
			hmb_json_obj(j);
			hmb_json_kv_u64(j, "qid", x->qid);
			hmb_json_kv_u64(j, "cid", x->cid);
			hmb_json_kv_str(j, "opc", x->opc);
			hmb_json_kv_u64(j, "submit_ns", x->s);
			hmb_json_kv_u64(j, "complete_ns", x->e);
			hmb_json_end(j);
		}
	}
	if (ag.env.json) {
		hmb_json_end_arr(j);
		hmb_json_kv_u64(j, "commands_overlapped", over);
		hmb_json_kv_u64(j, "commands_in_flight", fly);
		hmb_json_end(j);
		json_line_end();
		return;
	}
	if (why != PEL_PLACED) {
		fprintf(ag.out, "  not placed (%s): #%u %s %s\n",
			pel_unplaced_name(why), ev->index, name ? name : nb,
			fields);
		return;
	}
	fprintf(ag.out, "  host %" PRIu64 ".%06" PRIu64 " s ±%.3f ms  #%u %s %s: %" PRIu64 " commands around it, %" PRIu64 " in flight",
		t / 1000000000u, t % 1000000000u / 1000, (double)b / 1e6,
		ev->index, name ? name : nb, fields, over, fly);
	if (slow)
		fprintf(ag.out, "; slowest q%u cid 0x%04x %s %.3f us", slow->qid,
			slow->cid, slow->opc, (double)(slow->e - slow->s) / 1e3);
	fputc('\n', ag.out);
}

/* Read the log; print its new events unless @quiet (the first read). */
static int pel_poll(bool quiet)
{
	struct pel_header h;
	struct pel_hostmap m;
	struct pel_clock clk;
	struct pel_iter it;
	struct pel_event ev;
	struct pel_err e;
	uint64_t *now_seen;
	size_t len, nnew = 0, n = 0;
	uint8_t *buf;
	int r;

	if (pel_read_dev(P.fd, PEL_MAX_BYTES, &buf, &len, &e) ||
	    pel_header(buf, len, &h, &e)) {
		P.read_errors++;
		fprintf(stderr, PROG ": --pel %s: %s\n", P.dev, e.msg);
		if (len)
			free(buf);
		return -1;
	}
	P.reads++;
	pel_hostmap_init(&m, pel_clock_dev(P.fd, &clk) ? NULL : &clk, buf, &h);
	now_seen = calloc(h.tnev ? h.tnev : 1, sizeof(*now_seen));
	if (!now_seen) {
		free(buf);
		return -1;
	}
	pel_iter_init(&it, buf, &h);
	while ((r = pel_next(&it, &ev, &e)) == 1) {
		uint64_t hsh = ev_hash(&ev, buf), t, b;
		enum pel_unplaced why;

		now_seen[n++] = hsh;
		if (quiet || bsearch(&hsh, P.seen, P.nseen, sizeof(hsh),
				     cmp_u64))
			continue;
		if (!nnew++ && !ag.env.json)
			fprintf(ag.out, "persistent event log %s: new events (%" PRIu32 " in the log)\n",
				P.dev, h.tnev);
		why = pel_place(&m, &ev, &t, &b);
		show(&ev, why, t, b);
	}
	if (r < 0)
		fprintf(stderr, PROG ": --pel %s: byte %zu: %s\n", P.dev, e.off,
			e.msg);
	P.new_events += nnew;
	qsort(now_seen, n, sizeof(*now_seen), cmp_u64);
	free(P.seen);
	P.seen = now_seen;
	P.nseen = n;
	if (quiet && !ag.env.json)
		fprintf(ag.out, "persistent event log %s: %zu events at start%s\n",
			P.dev, n, m.valid ? "" :
			" (no Timestamp feature: no host times)");
	fflush(ag.out);
	free(buf);
	return 0;
}

int agent_pel_open(void)
{
	P.dev = ag.env.pel_dev;
	if (!P.dev)
		return 0;
	P.fd = open(P.dev, O_RDONLY | O_CLOEXEC);
	if (P.fd < 0) {
		fprintf(stderr, PROG ": --pel %s: cannot open: %s\n", P.dev,
			strerror(errno));
		return -1;
	}
	P.r = calloc(RECENT, sizeof(*P.r));
	if (!P.r) {
		fprintf(stderr, PROG ": out of memory\n");
		return -1;
	}
	return pel_poll(true);
}

void agent_pel_report(void)
{
	if (P.fd >= 0)
		pel_poll(false);
}

void agent_pel_close(void)
{
	if (P.fd >= 0)
		close(P.fd);
	P.fd = -1;
	free(P.seen);
	free(P.r);
	P.seen = NULL;
	P.r = NULL;
}
