// SPDX-License-Identifier: GPL-2.0
/*
 * trigger.c - the armed agent (--trigger): the programs' trigger table
 * and the dictionary events marked, the percentile thresholds kept fresh
 * from the host histogram of the last seconds, and one line per firing.
 * The programs decide (bpf/hmb_agent_trig.bpf.h); this side only arms and
 * tells, so a firing never waits for a command to cross to user space.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "agent.h"
#include "evdesc.h"
#include "snap.h"
#include "trigger.h"
#include "hmb_agent.skel.h"

static struct trig_spec specs[HMB_MAX_TRIGGERS];
static unsigned int nspec;
static uint64_t received[HMB_MAX_TRIGGERS];	/* firings that came across */
static uint64_t by_sweep[HMB_MAX_TRIGGERS];	/* ... on commands swept */

/*
 * The host histogram per second of the last win_n seconds, for the
 * percentile thresholds: the program's map counts every command, and the
 * agent adds what it gained since the last look.
 */
struct win_sec {
	uint64_t sec;
	uint64_t slots[HMB_HIST_SLOTS];
};
static struct win_sec *win;
static unsigned int win_n;
static uint64_t seen[HMB_HIST_SLOTS];	/* of the map's sums, already added */

void trig_compile(void)
{
	char why[256];
	int col;

	for (unsigned int i = 0; i < ag.env.ntrig; i++) {
		col = trig_parse(ag.env.trig_expr[i], ag.dict, &specs[i], why,
				 sizeof(why));
		if (col) {
			hmb_usage_error(PROG, NULL, "--trigger '%s': column %d: %s",
					ag.env.trig_expr[i], col, why);
			exit(EXIT_USAGE);
		}
		if (specs[i].pct && specs[i].window_s > win_n)
			win_n = specs[i].window_s;
	}
	nspec = ag.env.ntrig;
}

__u32 trig_armed_bits(void)
{
	__u32 b = 0;

	for (unsigned int i = 0; i < nspec; i++)
		b |= specs[i].kind == HMB_TK_LAT ? HMB_TRIG_ARM_LAT :
		     specs[i].kind == HMB_TK_EVENT ? HMB_TRIG_ARM_EV :
		     HMB_TRIG_ARM_RESET;
	return b;
}

bool trig_reset_armed(void)
{
	return trig_armed_bits() & HMB_TRIG_ARM_RESET;
}

/* Block mode: the filter's names as REQ_OP (read 0, write 1, flush 2). */
static int trig_opc(const struct trig_spec *t)
{
	if (ag.use_nvme || !t->opc_name[0])
		return t->opc;
	return !strcmp(t->opc_name, "read") ? 0 :
	       !strcmp(t->opc_name, "write") ? 1 : 2;
}

/* Why trigger @t cannot fire in the mode chosen, or NULL. */
static const char *cannot_fire(const struct trig_spec *t)
{
	if (t->kind == HMB_TK_LAT &&
	    ((t->from != HMB_TP_SUBMIT && t->from != HMB_TP_COMPLETE) ||
	     (t->to != HMB_TP_SUBMIT && t->to != HMB_TP_COMPLETE)) &&
	    !ag.fw_on)
		return "it needs firmware records";
	if (t->kind == HMB_TK_EVENT && !ag.fw_on)
		return "firmware events need firmware records";
	if (t->kind == HMB_TK_RESET &&
	    !(ag.fw_on && tp_exists("hmb_trace", "hmb_trace_frozen")))
		return "no hmb_trace:hmb_trace_frozen (nvme-hmb-trace.ko not loaded)";
	return NULL;
}

int trig_start(void)
{
	const char *why;
	int err;

	for (unsigned int i = 0; i < nspec; i++) {
		const struct trig_spec *t = &specs[i];
		struct hmb_trig *b = &ag.skel->bss->trig[i];

		why = cannot_fire(t);
		if (why)
			fprintf(stderr, PROG ": trigger %u '%s' cannot fire in %s mode: %s\n",
				i + 1, t->expr, ag.mode_name, why);
		trig_to_bpf(t, trig_opc(t), b);
		if (t->kind == HMB_TK_EVENT &&
		    (err = hmb_evdesc_mark_trig(bpf_map__fd(ag.skel->maps.evdesc),
						t->ops, t->nops, i))) {
			fprintf(stderr, PROG ": trigger %u: cannot mark its events in the BPF map: %s\n",
				i + 1, strerror(-err));
			return -1;
		}
	}
	if (win_n) {
		win = calloc(win_n, sizeof(*win));
		if (!win) {
			fprintf(stderr, PROG ": out of memory\n");
			return -1;
		}
	}
	return 0;
}

/* Add what the map counted since the last look (@sums: its counts). */
static void win_add(const uint64_t *sums, uint64_t now_ns)
{
	uint64_t sec = now_ns / 1000000000ULL;
	struct win_sec *w = &win[sec % win_n];

	if (w->sec != sec) {
		memset(w, 0, sizeof(*w));
		w->sec = sec;
	}
	/* the map's counts only grow (print.c, take_bpf_hist()) */
	for (int s = 0; s < HMB_HIST_SLOTS; s++) {
		w->slots[s] += sums[s] - seen[s];
		seen[s] = sums[s];
	}
}

/* The map's host histogram summed over the CPUs. */
static int host_sums(uint64_t *sums)
{
	size_t vsz = sizeof(struct hmb_log2_hist);
	char *vals = calloc((size_t)ag.nr_cpus, vsz);
	__u32 id = HMB_H_HOST_TOTAL;
	int rc = -1;

	memset(sums, 0, sizeof(uint64_t) * HMB_HIST_SLOTS);
	if (vals && !bpf_map_lookup_elem(bpf_map__fd(ag.skel->maps.hists),
					 &id, vals)) {
		for (int cpu = 0; cpu < ag.nr_cpus; cpu++) {
			const struct hmb_log2_hist *p =
				(const void *)(vals + (size_t)cpu * vsz);

			for (int s = 0; s < HMB_HIST_SLOTS; s++)
				sums[s] += p->slots[s];
		}
		rc = 0;
	}
	free(vals);
	return rc;
}

void trig_tick(uint64_t now_ns)
{
	uint64_t sums[HMB_HIST_SLOTS], sec = now_ns / 1000000000ULL;

	if (!win || host_sums(sums))
		return;
	win_add(sums, now_ns);
	for (unsigned int i = 0; i < nspec; i++) {
		uint64_t h[HMB_HIST_SLOTS] = { 0 };

		if (!specs[i].pct)
			continue;
		for (unsigned int k = 0; k < win_n; k++)
			if (win[k].sec + specs[i].window_s > sec &&
			    win[k].sec <= sec)
				for (int s = 0; s < HMB_HIST_SLOTS; s++)
					h[s] += win[k].slots[s];
		__atomic_store_n(&ag.skel->bss->trig[i].thresh_ns,
				 trig_hist_pct_ns(h, specs[i].pct),
				 __ATOMIC_RELAXED);
	}
}

static const char *kind_name(enum hmb_trig_kind k)
{
	return k == HMB_TK_LAT ? "latency" : k == HMB_TK_EVENT ? "event" :
	       "reset";
}

static const char *opc_name(const struct hmb_cmd_state *st, char *buf,
			    size_t len)
{
	static const char *const blk[] = { "read", "write", "flush", "discard" };

	if (!(st->flags & HMB_CF_BLOCK))
		return hmb_nvme_opc_name(st->opc, buf, len);
	if (st->opc < 4)
		return blk[st->opc];
	snprintf(buf, len, "op%u", st->opc);
	return buf;
}

static void fired_obj(struct hmb_json *j, const struct trig_spec *t,
		      const struct hmb_trig_event *ev)
{
	const struct hmb_dict_event *d;
	char buf[24], comm[HMB_COMM_LEN + 1] = "";

	hmb_json_obj(j);
	hmb_json_kv_str(j, "type", "trigger");
	hmb_json_kv_u64(j, "trigger", ev->trig + 1);
	hmb_json_kv_str(j, "expr", t->expr);
	hmb_json_kv_str(j, "kind", kind_name(t->kind));
	hmb_json_kv_u64(j, "host_ns", ev->host_ns);
	if (t->kind == HMB_TK_LAT) {
		hmb_json_kv_u64(j, "value_ns", ev->value_ns);
		hmb_json_kv_u64(j, "threshold_ns", ev->thresh_ns);
		hmb_json_key(j, "cmd");
		hmb_json_obj(j);
		if (ev->st.flags & HMB_CF_BLOCK) {
			snprintf(buf, sizeof(buf), "%u:%u", ev->st.dev >> 20,
				 ev->st.dev & 0xfffff);
			hmb_json_kv_str(j, "dev", buf);
		} else {
			hmb_json_kv_u64(j, "ctrl", ev->ctrl);
			hmb_json_kv_u64(j, "qid", ev->qid);
			hmb_json_kv_u64(j, "cid", ev->cid);
		}
		hmb_json_kv_str(j, "opc", opc_name(&ev->st, buf, sizeof(buf)));
		hmb_json_kv_u64(j, "nsid", ev->st.nsid);
		hmb_json_kv_u64(j, "slba", ev->st.slba);
		hmb_json_kv_u64(j, "nlb", ev->st.nlb);
		hmb_json_kv_u64(j, "status", ev->st.status);
		hmb_json_kv_u64(j, "flags", ev->st.flags);
		hmb_json_kv_u64(j, "submit_ns", ev->st.submit_ns);
		hmb_json_kv_u64(j, "complete_ns", ev->st.complete_ns);
		hmb_json_kv_u64(j, "ring", ev->st.ring);
		if (ev->st.who.comm[0]) {	/* who issued it, where known */
			memcpy(comm, ev->st.who.comm, sizeof(comm) - 1);
			hmb_json_kv_u64(j, "pid", ev->st.who.tgid);
			hmb_json_kv_u64(j, "tid", ev->st.who.tid);
			hmb_json_kv_str(j, "comm", comm);
			hmb_json_kv_u64(j, "cgroup", ev->st.who.cgid);
		}
		hmb_json_key(j, "fw_ts");
		hmb_json_obj(j);
		for (int p = HMB_PH_FETCH; p < HMB_PH_COUNT; p++) {
			if (!(ev->st.fw_mask & (1u << p)))
				continue;
			hmb_json_key_str(j, hmb_phase_name((enum hmb_phase)p));
			hmb_json_u64(j, ev->st.fw_ts[p]);
		}
		hmb_json_end(j);
		hmb_json_end(j);
	} else {
		hmb_json_kv_u64(j, "ring", ev->ring);
	}
	if (t->kind == HMB_TK_EVENT) {
		d = hmb_dict_lookup(ag.dict, ev->opcode);
		hmb_json_kv_str(j, "event", d ? d->name : "?");
		hmb_json_kv_u64(j, "opcode", ev->opcode);
		hmb_json_kv_u64(j, "seq", ev->seq);
		hmb_json_kv_u64(j, "ts_ns", ev->ts_ns);
	}
	hmb_json_end(j);
}

static void fired_json(const struct trig_spec *t, const struct hmb_trig_event *ev)
{
	fired_obj(&ag.j, t, ev);
	json_line_end();
}

/* --snapshot-dir: a snapshot for the firing, with its line as trigger.json */
static void fired_snapshot(const struct trig_spec *t,
			   const struct hmb_trig_event *ev)
{
	static struct hmb_outbuf ob;
	struct hmb_json j;
	char reason[24];
	uint64_t now;

	if (!ob.buf && hmb_ob_open(&ob, -1, "trigger.json", 1 << 14))
		return;
	ob.len = 0;
	hmb_json_init(&j, &ob);
	fired_obj(&j, t, ev);
	hmb_json_nl(&j);
	if (!hmb_ob_reserve(&ob, 1))
		hmb_ob_putc(&ob, 0);	/* a C string */
	snprintf(reason, sizeof(reason), "trigger%u", ev->trig + 1);
	/*
	 * Asked for at the moment it fired, not when the agent took the
	 * event, which can be seconds later: the window is the firing's.
	 */
	now = hmb_now_ns(CLOCK_MONOTONIC);
	snap_request(reason, ob.err ? NULL : ob.buf,
		     ev->host_ns && ev->host_ns < now ? ev->host_ns : now);
}

/* @ns in the unit that shows it (a threshold may be 1ns or 10s). */
static const char *dur(uint64_t ns, char *buf, size_t len)
{
	if (ns < 10000)
		snprintf(buf, len, "%llu ns", (unsigned long long)ns);
	else if (ns < 10000000)
		snprintf(buf, len, "%.3f us", (double)ns / 1e3);
	else if (ns < 10000000000ULL)
		snprintf(buf, len, "%.3f ms", (double)ns / 1e6);
	else
		snprintf(buf, len, "%.3f s", (double)ns / 1e9);
	return buf;
}

static void fired_text(const struct trig_spec *t, const struct hmb_trig_event *ev)
{
	const struct hmb_dict_event *d;
	char ts[16], buf[16], v[32], th[32], who[128] = "";
	char comm[HMB_COMM_LEN + 1] = "", esc[4 * HMB_COMM_LEN + 1];
	time_t now = time(NULL);

	strftime(ts, sizeof(ts), "%H:%M:%S", localtime(&now));
	fprintf(ag.out, "%s trigger %u '%s' fired: ", ts, ev->trig + 1, t->expr);
	if (t->kind == HMB_TK_LAT) {
		if (ev->st.flags & HMB_CF_BLOCK)
			fprintf(ag.out, "dev %u:%u", ev->st.dev >> 20,
				ev->st.dev & 0xfffff);
		else
			fprintf(ag.out, "nvme%u q%u cid 0x%04x", ev->ctrl,
				ev->qid, ev->cid);
		if (ev->st.who.comm[0]) {	/* the task's own name: escaped */
			memcpy(comm, ev->st.who.comm, sizeof(comm) - 1);
			hmb_text_esc(esc, sizeof(esc), comm);
			snprintf(who, sizeof(who), " pid %u (%s)",
				 ev->st.who.tgid, esc);
		}
		fprintf(ag.out, " %s slba %llu %s %u%s: %s_to_%s %s > %s\n",
			opc_name(&ev->st, buf, sizeof(buf)),
			(unsigned long long)ev->st.slba,
			ev->st.flags & HMB_CF_BLOCK ? "bytes" : "nlb", ev->st.nlb,
			who,
			trig_point_name(t->from), trig_point_name(t->to),
			dur(ev->value_ns, v, sizeof(v)),
			dur(ev->thresh_ns, th, sizeof(th)));
	} else if (t->kind == HMB_TK_EVENT) {
		d = hmb_dict_lookup(ag.dict, ev->opcode);
		fprintf(ag.out, "ring %u seq %u %s (0x%04x) at firmware time %llu ns\n",
			ev->ring, ev->seq, d ? d->name : "?", ev->opcode,
			(unsigned long long)ev->ts_ns);
	} else {
		fprintf(ag.out, "ring %u of nvme%u frozen (controller reset or shutdown)\n",
			ev->ring, ev->ctrl);
	}
	fflush(ag.out);
}

/*
 * A trigger fired: said on the output, and a snapshot asked for.  The one
 * place that learns of every firing that reaches user space.
 */
static void trigger_fired(const struct trig_spec *t,
			  const struct hmb_trig_event *ev)
{
	if (ag.env.json)
		fired_json(t, ev);
	else
		fired_text(t, ev);
	if (ag.env.snap_dir)
		fired_snapshot(t, ev);
}

void trig_event(const struct hmb_trig_event *ev)
{
	if (ev->trig >= nspec)
		return;
	received[ev->trig]++;
	trigger_fired(&specs[ev->trig], ev);
}

void trig_swept(const struct hmb_cmd_event *c)
{
	struct hmb_trig_event ev;
	__u64 v;

	for (unsigned int i = 0; i < nspec; i++) {
		const struct hmb_trig *t = &ag.skel->bss->trig[i];

		if (!hmb_trig_lat_fires(t, &c->st, &ag.skel->bss->clk, &v))
			continue;
		memset(&ev, 0, sizeof(ev));
		ev.type = HMB_EV_TRIGGER;
		ev.trig = i;
		ev.host_ns = hmb_now_ns(CLOCK_MONOTONIC);
		ev.value_ns = v;
		ev.thresh_ns = t->thresh_ns;
		ev.ctrl = c->ctrl;
		ev.qid = c->qid;
		ev.cid = c->cid;
		ev.ring = c->st.ring;
		ev.st = c->st;
		by_sweep[i]++;
		trig_event(&ev);
	}
}

void trig_report_text(FILE *f)
{
	for (unsigned int i = 0; i < nspec; i++) {
		uint64_t th = ag.skel->bss->trig[i].thresh_ns;
		char b[32];

		fprintf(f, "trigger %u '%s': fired %llu, reported %llu", i + 1,
			specs[i].expr,
			(unsigned long long)(ag.skel->bss->trig_fired[i] +
					     by_sweep[i]),
			(unsigned long long)received[i]);
		if (by_sweep[i])
			fprintf(f, " (%llu on commands swept)",
				(unsigned long long)by_sweep[i]);
		if (specs[i].pct && th)
			fprintf(f, ", threshold now %s\n", dur(th, b, sizeof(b)));
		else if (specs[i].pct)
			fputs(", threshold not known yet (too few commands)\n", f);
		else
			fputc('\n', f);
	}
}

void trig_report_json(struct hmb_json *j)
{
	if (!nspec)
		return;
	hmb_json_key(j, "triggers");
	hmb_json_arr(j);
	for (unsigned int i = 0; i < nspec; i++) {
		hmb_json_obj(j);
		hmb_json_kv_u64(j, "trigger", i + 1);
		hmb_json_kv_str(j, "expr", specs[i].expr);
		hmb_json_kv_str(j, "kind", kind_name(specs[i].kind));
		hmb_json_kv_u64(j, "fired",
				ag.skel->bss->trig_fired[i] + by_sweep[i]);
		hmb_json_kv_u64(j, "reported", received[i]);
		hmb_json_kv_u64(j, "swept", by_sweep[i]);
		if (specs[i].kind == HMB_TK_LAT)
			hmb_json_kv_u64(j, "threshold_ns",
					ag.skel->bss->trig[i].thresh_ns);
		hmb_json_end(j);
	}
	hmb_json_end_arr(j);
}
