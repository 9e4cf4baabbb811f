// SPDX-License-Identifier: Apache-2.0
/*
 * qemutrace.c - hmb-fwsim --from-qemu-trace.
 *
 * QEMU's NVMe model traces what it does with each command the guest
 * submits (design §3).  Read those lines from a pipe or a file and produce,
 * per the event dictionary, the firmware records a real controller would
 * write for the same commands, with the real sqid and command id:
 *
 *   pci_nvme_io_cmd cid C nsid N sqid S opc O     -> cmd_fetch
 *   pci_nvme_read / pci_nvme_write cid C ...       -> cmd_media_start
 *   pci_nvme_rw_complete_cb cid C ...              -> cmd_media_end,
 *                                                     cmd_xfer_done
 *   pci_nvme_enqueue_req_completion cid C cqid Q   -> cmd_cqe_posted
 *
 * Records are timestamped on the simulator's own clock: the trace line's
 * time (QEMU's "PID@SEC.USEC:" prefix, else the time the line was read),
 * relative to the first line, times (1 + drift), plus an offset, plus an
 * optional step from a given time on -- so the agent's clock estimate can be
 * checked against known values.  Garbage-collection and thermal windows
 * are interleaved at a configurable rate.  --cmd-log names, for every
 * record, the QEMU command (line number of its pci_nvme_io_cmd) it came
 * from: the reference for "no record attributed to the wrong command".
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "hmbtrace_dict.h"
#include "qemutrace.h"
#include "hmbtrace_util.h"

#define QT_MAX_SQ 64		/* submission queues (QEMU: up to 64 pairs) */

void qt_defaults(struct qt_opts *q)
{
	memset(q, 0, sizeof(*q));
	q->offset_ns = 1e9;
	q->step_at_s = -1;
	q->seed = 1;
}

static int parse_num(const char *s, double *v)
{
	return hmb_parse_double(s, -1e300, 1e300, v);
}

int qt_opt(struct qt_opts *q, int opt, const char *arg, char *msg,
	   size_t msglen)
{
	double v;

	switch (opt) {
	case QT_O_INPUT:
		q->input = arg;
		return 0;
	case QT_O_OFFSET:
		if (parse_num(arg, &q->offset_ns))
			break;
		return 0;
	case QT_O_DRIFT:
		if (parse_num(arg, &q->drift_ppm) || q->drift_ppm <= -1e6)
			break;
		return 0;
	case QT_O_STEP: {
		char buf[64], *colon;

		snprintf(buf, sizeof(buf), "%s", arg);
		colon = strchr(buf, ':');
		if (!colon)
			break;
		*colon = 0;
		if (parse_num(buf, &q->step_at_s) || q->step_at_s < 0 ||
		    parse_num(colon + 1, &q->step_ns))
			break;
		return 0;
	}
	case QT_O_BG_RATE:
		if (parse_num(arg, &v) || v < 0)
			break;
		q->bg_rate = v;
		return 0;
	case QT_O_CMD_LOG:
		q->cmd_log = arg;
		return 0;
	case QT_O_DICT:
		q->dict = arg;
		return 0;
	}
	snprintf(msg, msglen, "bad value '%s' for --%s", arg,
		 opt == QT_O_OFFSET ? "clock-offset" :
		 opt == QT_O_DRIFT ? "clock-drift" :
		 opt == QT_O_STEP ? "clock-step (AT_SECONDS:NANOSECONDS)" :
		 opt == QT_O_BG_RATE ? "bg-rate" : "?");
	return -1;
}

const char *qt_usage(void)
{
	return
"Driven by QEMU's NVMe trace (instead of the synthetic load):\n"
"      --from-qemu-trace FILE  read QEMU trace lines (pci_nvme_io_cmd,\n"
"                           pci_nvme_read/write, pci_nvme_rw_complete_cb,\n"
"                           pci_nvme_enqueue_req_completion) from FILE or\n"
"                           '-' (stdin) and write the firmware records of\n"
"                           those commands (share/hmb-events.dict)\n"
"      --clock-offset NS    firmware clock = trace time since the first line\n"
"                           x (1 + drift) + NS (default 1e9)\n"
"      --clock-drift PPM    firmware clock rate error (default 0)\n"
"      --clock-step AT:NS   add NS to the clock from AT seconds on\n"
"      --bg-rate R          garbage-collection windows per second (thermal\n"
"                           windows: R/10); default 0\n"
"      --cmd-log FILE       per record: seq, opcode, ts, sqid, cid and the\n"
"                           line of the QEMU command it describes\n"
"      --event-dict FILE    event dictionary (default: ../share/hmb-events.dict\n"
"                           beside the binary's directory, or the source tree's)\n";
}

/* ----------------------------------------------------------------- state */

struct qt_cmd {
	bool used;
	uint16_t sqid, cid;
	uint64_t line;		/* line of its pci_nvme_io_cmd */
	uint32_t nsid;
	uint8_t opc;
	bool fetch_pending;	/* read/write: fetch waits for its LBA */
};

struct qt {
	const struct qt_opts *o;
	struct hmb_producer *p;
	struct hmb_dict *dict;
	const struct hmb_dict_event *ev[HMB_PHASE_COUNT];
	const struct hmb_dict_event *gc_b, *gc_e, *th_b, *th_e;
	struct qt_cmd *sq_cmds[QT_MAX_SQ];	/* per queue, indexed by cid */
	uint16_t max_sq;
	FILE *log;
	FILE *dump;		/* --log: the ring's bytes of every record written */
	struct qt_cmd *pend;	/* a read/write whose fetch waits for its LBA */
	uint64_t pend_fw;	/* ... fetched at this firmware time */
	bool have_t0;
	double t0;		/* seconds, first line */
	double last_rel;	/* seconds since t0 of the last line */
	uint64_t rng;
	double next_gc, gc_end, next_th, th_end;
	uint32_t gc_band;
	/* counts */
	uint64_t lines, events, unknown_lines, records, dropped, commands;
	uint64_t ambiguous, orphans, bad_lines, bg_windows, in_flight_full;
	/* the first record on the stepped clock (forward steps) */
	bool step_seen;
	uint32_t step_seq;
};

static double urand(struct qt *t)
{
	t->rng ^= t->rng >> 12;
	t->rng ^= t->rng << 25;
	t->rng ^= t->rng >> 27;
	return (double)((t->rng * 2685821657736338717ULL) >> 11) /
	       9007199254740992.0;
}

static uint64_t fw_clock(const struct qt *t, double rel)
{
	const struct qt_opts *o = t->o;
	double ns = rel * 1e9 * (1 + o->drift_ppm * 1e-6) + o->offset_ns;

	if (o->step_at_s >= 0 && rel >= o->step_at_s)
		ns += o->step_ns;
	/*
	 * A trace whose timestamps jump by centuries (a corrupt line) must not
	 * turn into an out-of-range conversion: the clock saturates.
	 */
	if (!(ns >= 0))
		return 0;
	if (ns >= 18446744073709551615.0)
		return UINT64_MAX;
	return (uint64_t)ns;
}

static struct qt_cmd *find(struct qt *t, uint16_t sqid, uint16_t cid)
{
	struct qt_cmd *c;

	if (sqid >= QT_MAX_SQ || !t->sq_cmds[sqid])
		return NULL;
	c = &t->sq_cmds[sqid][cid];
	return c->used ? c : NULL;
}

static struct qt_cmd *insert(struct qt *t, uint16_t sqid, uint16_t cid)
{
	if (sqid >= QT_MAX_SQ)
		return NULL;
	if (!t->sq_cmds[sqid]) {
		t->sq_cmds[sqid] = calloc(65536, sizeof(struct qt_cmd));
		if (!t->sq_cmds[sqid])
			return NULL;
	}
	return &t->sq_cmds[sqid][cid];
}

/* The in-flight command with this cid on any queue: the oldest if several. */
static struct qt_cmd *find_cid(struct qt *t, uint16_t cid)
{
	struct qt_cmd *best = NULL, *c;
	unsigned int n = 0, sq;

	for (sq = 0; sq <= t->max_sq; sq++) {
		c = find(t, (uint16_t)sq, cid);
		if (c) {
			n++;
			if (!best || c->line < best->line)
				best = c;
		}
	}
	if (n > 1)
		t->ambiguous++;
	return best;
}

/* Append the ring's bytes at cursor @cur, @len long, to the --log dump. */
static void dump_ring_bytes(struct qt *t, uint64_t cur, uint32_t len)
{
	uint32_t off = (uint32_t)(cur & (t->p->ring_size - 1));

	fwrite(t->p->area + off, 1, len, t->dump);
}

static int emit(struct qt *t, const struct hmb_dict_event *ev, uint64_t ts,
		const struct qt_cmd *c, uint64_t vals[][2], unsigned int nvals)
{
	uint8_t payload[256];
	struct hmb_event e = { 0 };
	uint64_t old_head, old_markers;
	unsigned int i;
	int r;

	if (!ev)
		return 0;
	memset(payload, 0, sizeof(payload));
	for (i = 0; i < nvals; i++) {
		const struct hmb_dict_field *f =
			hmb_dict_field(ev, (const char *)(uintptr_t)vals[i][0]);

		if (f)
			hmb_dict_set(f, payload, sizeof(payload), vals[i][1]);
	}
	e.ts_ns = ts;
	e.opcode = ev->opcode;
	e.cpu = c ? (uint8_t)(c->sqid % 4) : 0;
	e.payload_len = ev->min_len;
	e.payload = payload;
	old_head = t->p->head;
	old_markers = t->p->markers;
	r = hmb_producer_emit(t->p, &e, HMB_EMIT_DROP);
	/* the dump gets what the ring got: a wrap marker even before a drop */
	if (t->dump && t->p->markers != old_markers)
		dump_ring_bytes(t, old_head, HMB_RECORD_HDR_SIZE);
	if (r < 0) {
		fprintf(stderr, "hmb-fwsim: producing a record failed (%d)\n", r);
		return -1;
	}
	if (!t->step_seen && t->o->step_at_s >= 0 && t->o->step_ns > 0 &&
	    ts >= fw_clock(t, t->o->step_at_s)) {
		t->step_seen = true;
		t->step_seq = t->p->next_seq - 1;
	}
	if (r == HMB_EMIT_DROPPED) {
		t->dropped++;
	} else {
		t->records++;
		if (t->dump)
			dump_ring_bytes(t, t->p->head - HMB_RECORD_SIZE(e.payload_len),
					HMB_RECORD_SIZE(e.payload_len));
	}
	if (t->log)
		fprintf(t->log, "seq=%u op=0x%04x ts=%" PRIu64 " sqid=%u cid=%u qline=%" PRIu64 "%s\n",
			t->p->next_seq - 1, ev->opcode, ts,
			c ? c->sqid : 0, c ? c->cid : 0, c ? c->line : 0,
			r == HMB_EMIT_DROPPED ? " dropped" : "");
	return 0;
}

#define V(name, val) { (uint64_t)(uintptr_t)(name), (uint64_t)(val) }

/*
 * The fetch record of @c at firmware time @fw; with @have_lba, the LBA and
 * block count QEMU traced (nlb on the wire is 0-based).
 */
static int emit_fetch(struct qt *t, struct qt_cmd *c, uint64_t fw,
		      uint64_t lba, uint64_t nlb, bool have_lba)
{
	uint64_t vals[][2] = { V("sqid", c->sqid), V("cid", c->cid), V("nsid", c->nsid),
			       V("opc", c->opc), V("slba", lba),
			       V("nlb", have_lba && nlb ? nlb - 1 : 0) };

	c->fetch_pending = false;
	return emit(t, t->ev[HMB_PHASE_FETCH], fw, c, vals, have_lba ? 6 : 4);
}

static int field(const char *s, const char *key, uint64_t *v);

/*
 * Before line @ev (QEMU's event name and arguments) is handled: the fetch
 * of the read/write traced on the line before, at that line's time, with
 * the LBA if @ev is its pci_nvme_read/write (QEMU traces it next, in the
 * same call), so that records stay in time order.
 */
static int flush_pending(struct qt *t, const char *ev)
{
	struct qt_cmd *c = t->pend;
	uint64_t cid, lba, nlb;
	bool rw = !strncmp(ev, "pci_nvme_read ", 14) || !strncmp(ev, "pci_nvme_write ", 15);

	t->pend = NULL;
	if (!c->fetch_pending)
		return 0;
	if (rw && !field(ev, "cid", &cid) && cid == c->cid &&
	    !field(ev, "lba", &lba) && !field(ev, "nlb", &nlb))
		return emit_fetch(t, c, t->pend_fw, lba, nlb, true);
	return emit_fetch(t, c, t->pend_fw, 0, 0, false);
}

/* Background windows whose edges fall before @rel (seconds). */
static int background(struct qt *t, double rel)
{
	/*
	 * A trace that jumps ahead by more than a minute (a pause, or a
	 * corrupt timestamp) does not get its gap filled window by window --
	 * that could be billions of them: the synthetic background resumes
	 * at @rel.
	 */
	if (rel > 1e7) {
		/*
		 * Past 115 days of trace the microsecond steps below vanish in
		 * a double's precision and the loop would not advance: no more
		 * synthetic windows (open ones still end).
		 */
		t->next_gc = t->next_th = INFINITY;
	} else if (t->o->bg_rate > 0 && rel - 60 > t->next_gc &&
		   rel - 60 > t->next_th) {
		t->next_gc = rel - log(1 - urand(t)) / t->o->bg_rate;
		t->next_th = rel - log(1 - urand(t)) / (t->o->bg_rate / 10);
	}
	while (t->o->bg_rate > 0) {
		double next = t->next_gc;
		int which = 0;	/* 1 gc begin, 2 gc end, 3 th begin, 4 th end */

		if (t->gc_end >= 0 && t->gc_end < next) {
			next = t->gc_end;
			which = 2;
		} else {
			which = 1;
		}
		if (t->next_th < next) {
			next = t->next_th;
			which = 3;
		}
		if (t->th_end >= 0 && t->th_end < next) {
			next = t->th_end;
			which = 4;
		}
		if (next > rel)
			return 0;
		switch (which) {
		case 1: {
			uint64_t v[][2] = { V("band", t->gc_band), V("valid_pages", 1000 + (uint32_t)(urand(t) * 1000)) };

			if (t->gc_end >= 0) {	/* one window at a time */
				t->next_gc = t->gc_end + 1e-6;
				continue;
			}
			if (emit(t, t->gc_b, fw_clock(t, next), NULL, v, 2))
				return -1;
			t->gc_end = next + 0.0002 + urand(t) * 0.003;
			t->next_gc = next - log(1 - urand(t)) / t->o->bg_rate;
			t->bg_windows++;
			break;
		}
		case 2: {
			uint64_t v[][2] = { V("band", t->gc_band), V("pages_moved", 200 + (uint32_t)(urand(t) * 500)) };

			if (emit(t, t->gc_e, fw_clock(t, next), NULL, v, 2))
				return -1;
			t->gc_end = -1;
			t->gc_band++;
			break;
		}
		case 3: {
			uint64_t v[][2] = { V("temp_c", 70 + (int)(urand(t) * 10)), V("level", 1) };

			if (t->th_end >= 0) {
				t->next_th = t->th_end + 1e-6;
				continue;
			}
			if (emit(t, t->th_b, fw_clock(t, next), NULL, v, 2))
				return -1;
			t->th_end = next + 0.005 + urand(t) * 0.015;
			t->next_th = next - log(1 - urand(t)) / (t->o->bg_rate / 10);
			t->bg_windows++;
			break;
		}
		case 4: {
			uint64_t v[][2] = { V("temp_c", 65) };

			if (emit(t, t->th_e, fw_clock(t, next), NULL, v, 1))
				return -1;
			t->th_end = -1;
			break;
		}
		}
	}
	return 0;
}

/* "key value" after the event name: the value of @key, or -1. */
static int field(const char *s, const char *key, uint64_t *v)
{
	size_t kl = strlen(key);
	const char *p = s, *end;

	while ((p = strstr(p, key))) {
		if ((p == s || p[-1] == ' ') && p[kl] == ' ')
			return hmb_strtou64(p + kl + 1, &end, 0, v);
		p += kl;
	}
	return -1;
}

static int line(struct qt *t, char *s)
{
	char *ev = strstr(s, "pci_nvme_"), *args;
	uint64_t cid;
	double rel, ts;
	struct qt_cmd *c;
	uint64_t fw;

	t->lines++;
	if (!ev)
		return 0;
	/* "PID@SEC.USEC:pci_nvme_..." (QEMU's log backend with timestamps) */
	ts = 0;
	{
		const char *at = strchr(s, '@'), *e;

		if (at && at < ev && hmb_strtod(at + 1, &e, &ts))
			ts = 0;
	}
	/* No timestamp, or nonsense ("inf", "nan", negative): our own clock. */
	if (!isfinite(ts) || ts <= 0)
		ts = hmb_now_s(CLOCK_REALTIME);
	if (!t->have_t0) {
		t->t0 = ts;
		t->have_t0 = true;
		t->next_gc = t->o->bg_rate > 0 ? -log(1 - urand(t)) / t->o->bg_rate : 1e300;
		t->next_th = t->o->bg_rate > 0 ? -log(1 - urand(t)) / (t->o->bg_rate / 10) : 1e300;
	}
	rel = ts - t->t0;
	if (rel < t->last_rel)
		rel = t->last_rel;	/* never backwards on our clock */
	t->last_rel = rel;
	if (t->pend && flush_pending(t, ev))
		return -1;
	if (background(t, rel))
		return -1;
	fw = fw_clock(t, rel);
	args = strchr(ev, ' ');
	if (!args)
		return 0;
	*args++ = 0;
	if (field(args, "cid", &cid) || cid > 0xffff) {
		t->bad_lines++;
		return 0;
	}
	if (!strcmp(ev, "pci_nvme_io_cmd")) {
		uint64_t sq, opc = 0, nsid = 0;

		if (field(args, "sqid", &sq) || sq >= QT_MAX_SQ) {
			t->bad_lines++;
			return 0;
		}
		field(args, "opc", &opc);
		field(args, "nsid", &nsid);
		c = insert(t, (uint16_t)sq, (uint16_t)cid);
		if (!c) {
			t->in_flight_full++;	/* out of memory */
			return 0;
		}
		if (c->used)
			t->orphans++;	/* its completion was never traced */
		c->used = true;
		c->sqid = (uint16_t)sq;
		c->cid = (uint16_t)cid;
		c->line = t->lines;
		c->opc = (uint8_t)opc;
		c->nsid = (uint32_t)nsid;
		if (sq > t->max_sq)
			t->max_sq = (uint16_t)sq;
		t->commands++;
		t->events++;
		/*
		 * A read or write: QEMU traces its LBA on the next line
		 * (pci_nvme_read/write, same call); the fetch record carries
		 * slba and nlb like a real controller's, so it waits for it.
		 */
		c->fetch_pending = opc == 0x1 || opc == 0x2;
		if (c->fetch_pending) {
			t->pend = c;
			t->pend_fw = fw;
			return 0;
		}
		return emit_fetch(t, c, fw, 0, 0, false);
	}
	if (!strcmp(ev, "pci_nvme_read") || !strcmp(ev, "pci_nvme_write")) {
		uint64_t nlb = 0, lba = 0;

		c = find_cid(t, (uint16_t)cid);
		if (!c) {
			t->orphans++;
			return 0;
		}
		field(args, "nlb", &nlb);
		field(args, "lba", &lba);
		t->events++;
		{
			uint64_t vals[][2] = { V("sqid", c->sqid), V("cid", cid), V("die", lba % 8) };

			return emit(t, t->ev[HMB_PHASE_MEDIA_START], fw, c, vals, 3);
		}
	}
	if (!strcmp(ev, "pci_nvme_rw_complete_cb")) {
		c = find_cid(t, (uint16_t)cid);
		if (!c) {
			t->orphans++;
			return 0;
		}
		t->events++;
		if (c->fetch_pending && emit_fetch(t, c, fw, 0, 0, false))
			return -1;
		{
			uint64_t vals[][2] = { V("sqid", c->sqid), V("cid", cid), V("die", 0), V("status", 0) };
			uint64_t xv[][2] = { V("sqid", c->sqid), V("cid", cid), V("bytes", 4096) };

			if (emit(t, t->ev[HMB_PHASE_MEDIA_END], fw, c, vals, 4))
				return -1;
			return emit(t, t->ev[HMB_PHASE_XFER_DONE], fw + 1000, c, xv, 3);
		}
	}
	if (!strcmp(ev, "pci_nvme_enqueue_req_completion")) {
		uint64_t cq, status = 0;

		if (field(args, "cqid", &cq)) {
			t->bad_lines++;
			return 0;
		}
		field(args, "status", &status);
		c = find(t, (uint16_t)cq, (uint16_t)cid);
		if (!c) {
			t->orphans++;	/* admin queue or started before us */
			return 0;
		}
		t->events++;
		if (c->fetch_pending && emit_fetch(t, c, fw, 0, 0, false))
			return -1;
		{
			uint64_t vals[][2] = { V("sqid", cq), V("cid", cid), V("status", status), V("cqid", cq) };
			int r = emit(t, t->ev[HMB_PHASE_CQE_POSTED], fw + 2000, c, vals, 4);

			c->used = false;
			return r;
		}
	}
	t->unknown_lines++;
	return 0;
}

static int load_dict(struct qt *t)
{
	struct hmb_error err = { 0 };
	char exe[PATH_MAX], path[3][PATH_MAX + 64];
	const char *cands[5];
	ssize_t n;
	int i, nc = 0;

	if (t->o->dict) {
		cands[nc++] = t->o->dict;
	} else {
		n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
		if (n > 0) {
			char *slash;

			exe[n] = 0;
			slash = strrchr(exe, '/');
			if (slash)
				*slash = 0;
			/*
			 * build/bin/hmb-fwsim (or build/asan/bin/hmb-fwsim)
			 * -> share/ at the top of the tree
			 */
			snprintf(path[0], sizeof(path[0]), "%s/../../share/hmb-events.dict", exe);
			snprintf(path[1], sizeof(path[1]), "%s/../../../share/hmb-events.dict", exe);
			/* installed: PREFIX/bin -> PREFIX/share/nvme-hmb-trace */
			snprintf(path[2], sizeof(path[2]), "%s/../share/nvme-hmb-trace/hmb-events.dict", exe);
			cands[nc++] = path[0];
			cands[nc++] = path[1];
			cands[nc++] = path[2];
		}
		cands[nc++] = "/usr/share/nvme-hmb-trace/hmb-events.dict";
	}
	for (i = 0; i < nc; i++) {
		if (!hmb_dict_load(&t->dict, cands[i], &err))
			break;
		if (t->o->dict || i == nc - 1) {
			fprintf(stderr, "hmb-fwsim: event dictionary: %s\n", err.msg);
			return -1;
		}
	}
	for (i = HMB_PHASE_FETCH; i < HMB_PHASE_COUNT; i++) {
		t->ev[i] = hmb_dict_phase_event(t->dict, (enum hmb_phase)i);
		if (!t->ev[i]) {
			fprintf(stderr, "hmb-fwsim: the event dictionary has no event for phase %s\n",
				hmb_phase_name((enum hmb_phase)i));
			return -1;
		}
	}
	t->gc_b = hmb_dict_by_name(t->dict, "gc_start");
	t->gc_e = hmb_dict_by_name(t->dict, "gc_end");
	t->th_b = hmb_dict_by_name(t->dict, "thermal_throttle_start");
	t->th_e = hmb_dict_by_name(t->dict, "thermal_throttle_end");
	if (t->o->bg_rate > 0 && (!t->gc_b || !t->gc_e || !t->th_b || !t->th_e)) {
		fprintf(stderr, "hmb-fwsim: --bg-rate needs gc_start, gc_end, thermal_throttle_start and thermal_throttle_end in the dictionary\n");
		return -1;
	}
	return 0;
}

/* What --from-qemu-trace produced, as one JSON object on @f. */
static void report_json(FILE *f, const struct qt *t, const struct qt_opts *o,
			const struct hmb_producer *p)
{
	struct hmb_outbuf ob;
	struct hmb_json j;

	if (hmb_ob_open_file(&ob, f, "report", 1024)) {
		fprintf(stderr, "hmb-fwsim: out of memory\n");
		return;
	}
	hmb_json_init(&j, &ob);
	hmb_json_obj(&j);
	hmb_json_kv_str(&j, "mode", "from-qemu-trace");
	hmb_json_kv_u64(&j, "lines", t->lines);
	hmb_json_kv_u64(&j, "nvme_events", t->events);
	hmb_json_kv_u64(&j, "commands", t->commands);
	hmb_json_kv_u64(&j, "records", t->records);
	hmb_json_kv_u64(&j, "dropped", t->dropped);
	hmb_json_kv_u64(&j, "ambiguous_cid", t->ambiguous);
	hmb_json_kv_u64(&j, "orphan_events", t->orphans);
	hmb_json_kv_u64(&j, "bad_lines", t->bad_lines);
	hmb_json_kv_u64(&j, "unknown_events", t->unknown_lines);
	hmb_json_kv_u64(&j, "in_flight_full", t->in_flight_full);
	hmb_json_kv_u64(&j, "bg_windows", t->bg_windows);
	hmb_json_key(&j, "clock");
	hmb_json_obj(&j);
	hmb_json_kv_dbl(&j, "offset_ns", o->offset_ns, 0);
	hmb_json_kv_dbl(&j, "drift_ppm", o->drift_ppm, 3);
	hmb_json_kv_dbl(&j, "step_at_s", o->step_at_s, 6);
	hmb_json_kv_dbl(&j, "step_ns", o->step_ns, 0);
	hmb_json_kv_i64(&j, "step_first_seq",
			t->step_seen ? (int64_t)t->step_seq : -1);
	hmb_json_end(&j);
	hmb_json_kv_dbl(&j, "trace_seconds", t->last_rel, 6);
	hmb_json_kv_u64(&j, "next_seq", p->next_seq);
	hmb_json_end(&j);
	hmb_json_nl(&j);
	hmb_ob_close(&ob);
}

int qt_main(struct hmb_producer *p, const struct qt_opts *o,
	    volatile sig_atomic_t *stop, FILE *report)
{
	static struct qt t;
	char *buf = NULL;
	size_t cap = 0;
	ssize_t n;
	FILE *in;
	int rc = 0;

	memset(&t, 0, sizeof(t));
	t.o = o;
	t.p = p;
	t.rng = o->seed * 0x9E3779B97F4A7C15ULL + 1;
	t.gc_end = t.th_end = -1;
	if (load_dict(&t))
		return 1;
	if (!strcmp(o->input, "-")) {
		in = stdin;
	} else {
		in = fopen(o->input, "r");
		if (!in) {
			fprintf(stderr, "hmb-fwsim: cannot open QEMU trace %s: %s\n",
				o->input, strerror(errno));
			hmb_dict_free(t.dict);
			return 1;
		}
	}
	if (o->cmd_log) {
		t.log = fopen(o->cmd_log, "w");
		if (!t.log) {
			fprintf(stderr, "hmb-fwsim: cannot create %s: %s\n",
				o->cmd_log, strerror(errno));
			rc = 1;
			goto out;
		}
		setvbuf(t.log, NULL, _IOLBF, 0);
	}
	if (o->dump) {
		t.dump = fopen(o->dump, "w");
		if (!t.dump) {
			fprintf(stderr, "hmb-fwsim: cannot create log %s: %s\n",
				o->dump, strerror(errno));
			rc = 1;
			goto out;
		}
	}
	while (!*stop && (n = getline(&buf, &cap, in)) >= 0) {
		if (n && buf[n - 1] == '\n')
			buf[n - 1] = 0;
		if (line(&t, buf)) {
			rc = 1;
			break;
		}
	}
	if (!rc && t.pend && emit_fetch(&t, t.pend, t.pend_fw, 0, 0, false))
		rc = 1;
	if (ferror(in) && !*stop) {
		fprintf(stderr, "hmb-fwsim: reading %s: %s\n", o->input,
			strerror(errno));
		rc = 1;
	}
	if (t.log && fclose(t.log)) {
		fprintf(stderr, "hmb-fwsim: writing %s: %s\n", o->cmd_log,
			strerror(errno));
		rc = 1;
	}
	t.log = NULL;
	if (t.dump && (ferror(t.dump) | fclose(t.dump))) {
		fprintf(stderr, "hmb-fwsim: writing log %s: %s\n", o->dump,
			strerror(errno));
		rc = 1;
	}
	t.dump = NULL;
	report_json(report, &t, o, p);
	fflush(report);
out:
	if (t.log)
		fclose(t.log);
	free(buf);
	for (int i = 0; i < QT_MAX_SQ; i++)
		free(t.sq_cmds[i]);
	if (in != stdin)
		fclose(in);
	hmb_dict_free(t.dict);
	return rc;
}
