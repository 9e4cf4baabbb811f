// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * cmdprint.c - the text and JSON printers of the command model
 * (hmbtrace_cmd.h): histograms, one command, totals, the clock estimate.
 * hmb-trace-agent and hmb-trace-analyze correlate print through these, so
 * the same thing reads the same in both.
 */
#include <string.h>

#include "hmbtrace_cmd.h"

/* -------------------------------------------------------------- histogram */

void hmb_hist_print(FILE *f, const struct hmb_log2_hist *h, const char *title)
{
	uint64_t max = 0;
	int i, last = -1;

	for (i = 0; i < HMB_HIST_SLOTS; i++) {
		if (h->slots[i])
			last = i;
		if (h->slots[i] > max)
			max = h->slots[i];
	}
	fprintf(f, "\n%s\n", title);
	if (last < 0) {
		fprintf(f, "     (no samples)\n");
		return;
	}
	fprintf(f, "%*s%-*s : count    distribution\n", 5, "", 19, "usecs");
	for (i = 0; i <= last; i++) {
		int stars = (int)(h->slots[i] * 40 / max);
		char bar[41];

		memset(bar, '*', (size_t)stars);
		memset(bar + stars, ' ', (size_t)(40 - stars));
		bar[40] = 0;
		fprintf(f, "%*llu -> %-*llu : %-8llu |%s|\n", 10,
			HMB_HIST_SLOT_LO(i), 10, HMB_HIST_SLOT_HI(i),
			(unsigned long long)h->slots[i], bar);
	}
}

void hmb_hist_json(struct hmb_json *j, const struct hmb_log2_hist *h)
{
	int i, last = -1;

	for (i = 0; i < HMB_HIST_SLOTS; i++)
		if (h->slots[i])
			last = i;
	hmb_json_arr(j);
	for (i = 0; i <= last; i++) {
		hmb_json_obj(j);
		hmb_json_kv_u64(j, "lo_us", HMB_HIST_SLOT_LO(i));
		hmb_json_kv_u64(j, "hi_us", HMB_HIST_SLOT_HI(i));
		hmb_json_kv_u64(j, "count", h->slots[i]);
		hmb_json_end(j);
	}
	hmb_json_end_arr(j);
}

/* ---------------------------------------------------------- percentiles */

/*
 * The held values are sorted in place the first time a percentile is
 * asked for: a cache, not a change of what the stats hold, so the
 * printers take them const.
 */
static struct hmb_quant *quant_of(const struct hmb_cmd_stats *s, int x)
{
	return (struct hmb_quant *)&s->xq[x];
}

void hmb_quant_print(FILE *f, const struct hmb_cmd_stats *s)
{
	bool title = false;

	for (int x = 0; x < HMB_X_COUNT; x++) {
		struct hmb_quant *q = quant_of(s, x);
		struct hmb_quant_val r;
		bool exact = true;

		if (!q->n)
			continue;
		if (!title)
			fprintf(f, "\npercentiles (us):\n");
		title = true;
		fprintf(f, "  %-22s", hmb_xphase_name((enum hmb_xphase)x));
		for (int i = 0; i < HMB_QUANT_NLEVELS; i++) {
			hmb_quant_at(q, hmb_quant_levels[i], &r);
			exact = exact && r.exact;
			fprintf(f, " %s %.1f", hmb_quant_level_names[i],
				(double)r.v / 1e3);
		}
		fprintf(f, " max %.1f (%s, %llu)\n", (double)q->max / 1e3,
			exact ? "exact" : "from buckets, within 3.2 %",
			(unsigned long long)q->n);
	}
}

void hmb_quant_json(struct hmb_json *j, const struct hmb_cmd_stats *s)
{
	char key[32];

	hmb_json_obj(j);
	for (int x = 0; x < HMB_X_COUNT; x++) {
		struct hmb_quant *q = quant_of(s, x);
		struct hmb_quant_val r[HMB_QUANT_NLEVELS];
		bool exact = true;

		if (!q->n)
			continue;
		for (int i = 0; i < HMB_QUANT_NLEVELS; i++) {
			hmb_quant_at(q, hmb_quant_levels[i], &r[i]);
			exact = exact && r[i].exact;
		}
		hmb_json_key_str(j, hmb_xphase_name((enum hmb_xphase)x));
		hmb_json_obj(j);
		hmb_json_kv_u64(j, "n", q->n);
		hmb_json_kv_bool(j, "exact", exact);
		for (int i = 0; i < HMB_QUANT_NLEVELS; i++) {
			snprintf(key, sizeof(key), "%s_ns",
				 hmb_quant_json_names[i]);
			hmb_json_key_str(j, key);
			hmb_json_u64(j, r[i].v);
			if (exact)
				continue;
			snprintf(key, sizeof(key), "%s_lo_ns",
				 hmb_quant_json_names[i]);
			hmb_json_key_str(j, key);
			hmb_json_u64(j, r[i].lo);
			snprintf(key, sizeof(key), "%s_hi_ns",
				 hmb_quant_json_names[i]);
			hmb_json_key_str(j, key);
			hmb_json_u64(j, r[i].hi);
		}
		hmb_json_kv_u64(j, "max_ns", q->max);
		hmb_json_end(j);
	}
	hmb_json_end(j);
}

/* ---------------------------------------------------------------- command */

/* "%.1f" of @x ns in us, or "-" when unknown. */
static const char *us(int64_t x, char *buf, size_t len)
{
	if (x < 0)
		return "-";
	snprintf(buf, len, "%.1f", (double)x / 1e3);
	return buf;
}

static void print_head(FILE *f, const struct hmb_cmd *c, int rank)
{
	const struct hmb_host_cmd *h = &c->h;
	char r[16] = "", t[32], opc[4 * sizeof(h->opc)];
	char comm[4 * sizeof(h->comm)], who[128] = "";

	if (rank)
		snprintf(r, sizeof(r), "#%-3d ", rank);
	us(c->x[HMB_X_HOST_TOTAL], t, sizeof(t));
	/* the opcode's name comes from the host's event file */
	hmb_text_esc(opc, sizeof(opc), h->opc);
	/* biosnoop's PID and COMM; the comm is the task's to choose */
	if (h->comm[0]) {
		hmb_text_esc(comm, sizeof(comm), h->comm);
		snprintf(who, sizeof(who), " pid %u (%s)", h->pid, comm);
	}
	if (h->flags & HMB_CMD_F_BLOCK)
		fprintf(f, "  %sdev %u:%u %-5s sector %llu bytes %u%s: total %s us\n",
			r, h->dev >> 20, h->dev & 0xfffff, opc,
			(unsigned long long)h->slba, h->nlb, who, t);
	else
		fprintf(f, "  %snvme%u q%u cid 0x%04x (gen %u tag %u) %-5s nsid %u slba %llu nlb %u%s [%s]: total %s us\n",
			r, h->ctrl, h->qid, h->cid, h->cid >> 12,
			h->cid & 0xfff, opc, h->nsid,
			(unsigned long long)h->slba, h->nlb, who,
			hmb_match_name(c->match), t);
}

void hmb_cmd_print(FILE *f, const struct hmb_cmd *c, int rank,
		   const struct hmb_dict *dict)
{
	const struct hmb_fw_side *fw = &c->fw;
	bool have_fetch = fw->mask & (1u << HMB_PHASE_FETCH);
	int ref = -1;

	print_head(f, c, rank);
	for (int p = HMB_PHASE_FETCH; p < HMB_PHASE_COUNT; p++) {
		const struct hmb_dict_event *ev;

		if (!(c->refused.mask & (1u << p)))
			continue;
		ev = dict ? hmb_dict_phase_event(dict, (enum hmb_phase)p) : NULL;
		fprintf(f, "      refused fw %-8s seq %-10u: its keys' record, outside this host window on the clock\n",
			ev ? ev->name : hmb_phase_name((enum hmb_phase)p),
			c->refused.seq[p]);
	}
	if (c->match != HMB_M_MATCHED && c->match != HMB_M_PARTIAL)
		return;
	if (c->placed) {
		char a[32], b[32], d[32];

		fprintf(f, "      = host submit->fw fetch %s + firmware %s + cqe posted->host complete %s us%s\n",
			us(c->x[HMB_X_SUBMIT_TO_FETCH], a, sizeof(a)),
			us(c->x[HMB_X_FW_TOTAL], b, sizeof(b)),
			us(c->x[HMB_X_CQE_TO_COMPLETE], d, sizeof(d)),
			c->in_window ? "" : c->in_window_err ?
			" (fw events at the edge of the host window, within the clock error)" :
			" (FW EVENTS OUTSIDE THE HOST WINDOW: clock estimate off or misattributed)");
	}
	for (int p = HMB_PHASE_FETCH; p < HMB_PHASE_COUNT; p++) {
		const struct hmb_dict_event *ev;

		if (!(fw->mask & (1u << p)))
			continue;
		if (ref < 0)
			ref = p;
		ev = dict ? hmb_dict_phase_event(dict, (enum hmb_phase)p) : NULL;
		fprintf(f, "      fw %-16s seq %-10u %+9.1f us from %s",
			ev ? ev->name : hmb_phase_name((enum hmb_phase)p),
			fw->seq[p],
			((double)fw->ts[p] - (double)fw->ts[ref]) / 1e3,
			have_fetch ? "fetch" : "first");
		if (c->placed)
			fprintf(f, "   host %+9.1f us from submit",
				(c->fw_host_ns[p] - (double)c->h.submit_ns) /
				1e3);
		fputc('\n', f);
	}
}

void hmb_cmd_json_members(struct hmb_json *j, const struct hmb_cmd *c)
{
	const struct hmb_host_cmd *h = &c->h;
	const struct hmb_fw_side *fw = &c->fw;
	char dev[24];

	hmb_json_kv_u64(j, "ctrl", h->ctrl);
	hmb_json_kv_u64(j, "qid", h->qid);
	hmb_json_kv_u64(j, "cid", h->cid);
	hmb_json_kv_str(j, "opc", h->opc);
	hmb_json_kv_u64(j, "nsid", h->nsid);
	hmb_json_kv_u64(j, "slba", h->slba);
	hmb_json_kv_u64(j, "nlb", h->nlb);
	snprintf(dev, sizeof(dev), "%u:%u", h->dev >> 20, h->dev & 0xfffff);
	hmb_json_kv_str(j, "dev", dev);
	hmb_json_kv_str(j, "match", hmb_match_name(c->match));
	hmb_json_kv_u64(j, "flags", h->flags);
	hmb_json_kv_u64(j, "submit_ns", h->submit_ns);
	hmb_json_kv_u64(j, "complete_ns", h->complete_ns);
	hmb_json_kv_u64(j, "status", h->status);
	if (h->comm[0]) {
		hmb_json_kv_u64(j, "pid", h->pid);
		hmb_json_kv_u64(j, "tid", h->tid);
		hmb_json_kv_str(j, "comm", h->comm);
		hmb_json_kv_u64(j, "cgroup", h->cgroup);
	}
	if (c->bg_groups) {
		hmb_json_key(j, "bg_in_flight");
		hmb_json_arr(j);
		for (unsigned int g = 0; g < HMB_CMD_BG_GROUPS; g++)
			if (c->bg & (1u << g))
				hmb_json_str(j, c->bg_groups[g]);
		hmb_json_end_arr(j);
	}
	if (h->line)
		hmb_json_kv_u64(j, "host_line", h->line);
	for (int i = 0; i < HMB_X_COUNT; i++) {
		char key[48];

		if (c->x[i] < 0)
			continue;
		snprintf(key, sizeof(key), "%s_ns",
			 hmb_xphase_name((enum hmb_xphase)i));
		hmb_json_key_str(j, key);
		hmb_json_i64(j, c->x[i]);
	}
	if (c->placed) {
		hmb_json_kv_bool(j, "in_window", c->in_window);
		hmb_json_kv_bool(j, "in_window_err", c->in_window_err);
	}
	hmb_json_key(j, "fw");
	hmb_json_arr(j);
	for (int p = HMB_PHASE_FETCH; p < HMB_PHASE_COUNT; p++) {
		if (!(fw->mask & (1u << p)))
			continue;
		hmb_json_obj(j);
		hmb_json_kv_str(j, "phase", hmb_phase_name((enum hmb_phase)p));
		hmb_json_kv_u64(j, "seq", fw->seq[p]);
		hmb_json_kv_u64(j, "ts_ns", fw->ts[p]);
		/* whole ns, truncated, as the phases are computed */
		if (c->placed)
			hmb_json_kv_i64(j, "host_ns", (int64_t)c->fw_host_ns[p]);
		if (c->fw_in_bracket & (1u << p))
			hmb_json_kv_bool(j, "step_bracket", true);
		hmb_json_end(j);
	}
	hmb_json_end_arr(j);
	if (!c->refused.mask)
		return;
	hmb_json_key(j, "fw_refused");
	hmb_json_arr(j);
	for (int p = HMB_PHASE_FETCH; p < HMB_PHASE_COUNT; p++) {
		if (!(c->refused.mask & (1u << p)))
			continue;
		hmb_json_obj(j);
		hmb_json_kv_str(j, "phase", hmb_phase_name((enum hmb_phase)p));
		hmb_json_kv_u64(j, "seq", c->refused.seq[p]);
		hmb_json_kv_u64(j, "ts_ns", c->refused.ts[p]);
		hmb_json_end(j);
	}
	hmb_json_end_arr(j);
}

/* ----------------------------------------------------------------- totals */

void hmb_cmd_totals_json_members(struct hmb_json *j,
				 const struct hmb_cmd_totals *t)
{
	hmb_json_kv_u64(j, "commands", t->cmds);
	hmb_json_kv_u64(j, "matched", t->matched);
	hmb_json_kv_u64(j, "partial", t->partial);
	hmb_json_kv_u64(j, "unmatched", t->unmatched);
	hmb_json_kv_u64(j, "host_only", t->host_only);
	hmb_json_kv_u64(j, "placed", t->placed);
	hmb_json_kv_u64(j, "in_window", t->in_window);
	hmb_json_kv_u64(j, "in_window_err", t->in_window_err);
	hmb_json_kv_u64(j, "outside_window", t->outside_window);
	hmb_json_kv_u64(j, "across_step", t->across_step);
	hmb_json_kv_u64(j, "reuse_flushed", t->reused);
	hmb_json_kv_u64(j, "swept", t->swept);
	hmb_json_kv_u64(j, "no_room", t->no_room);
	hmb_json_kv_u64(j, "no_complete", t->no_complete);
	hmb_json_kv_u64(j, "below_min_latency", t->below_min);
}

void hmb_cmd_totals_print(FILE *f, const struct hmb_cmd_totals *t)
{
	uint64_t fw = t->cmds - t->host_only;

	fprintf(f, "matched %llu (%.2f%%) partial %llu unmatched %llu; fw events inside host window %llu/%llu (%llu within clock error, %llu outside)",
		(unsigned long long)t->matched,
		fw ? 100.0 * (double)t->matched / (double)fw : 0,
		(unsigned long long)t->partial,
		(unsigned long long)t->unmatched,
		(unsigned long long)t->in_window,
		(unsigned long long)t->placed,
		(unsigned long long)t->in_window_err,
		(unsigned long long)t->outside_window);
}

/* ------------------------------------------------------------------ clock */

void hmb_clock_print(FILE *f, const struct hmb_clock *k)
{
	if (!k->valid) {
		fprintf(f, "clock fw->host: no estimate yet (%llu matched commands, %zu needed, %u step(s))\n",
			(unsigned long long)k->added, k->min_points, k->steps);
		return;
	}
	fprintf(f, "clock fw->host: host = fw %+.3f us (±%.3f us) at fw %.6f s, drift ",
		k->off_ns / 1e3, k->off_err_ns / 1e3, k->ref / 1e9);
	if (k->drift_err < 0)
		fprintf(f, "not estimated (matched span too short)");
	else
		fprintf(f, "%+.3f ppm (±%.3f)", k->drift * 1e6,
			k->drift_err * 1e6);
	fprintf(f, "; %zu commands, %zu trimmed per side%s, %u step(s)\n",
		k->used, k->trimmed,
		!k->consistent ? (k->shed_old ?
		", INCONSISTENT bounds: converging" : ", INCONSISTENT bounds") :
		k->shed_old && !hmb_clock_converged(k) ?
		", drift bound wider than 10 %: converging" : "",
		k->steps);
	if (k->shed)
		fprintf(f, "clock: %llu older commands shed from the window where it disagreed with the newer ones\n",
			(unsigned long long)k->shed);
	if (k->have_prev)
		fprintf(f, "clock step: %+.3f us (±%.3f) at firmware record seq %u (fw %.6f s); records before it keep the earlier estimate; %llu commands across it left out of the estimate\n",
			k->step_ns / 1e3, k->step_err_ns / 1e3, k->step_seq,
			(double)k->step_t / 1e9,
			(unsigned long long)k->skipped_before_step);
	if (k->have_prev && k->brk_on)
		fprintf(f, "clock step bracket: after seq %u, at or before seq %u (records between placed by the firmware times' jump)\n",
			k->brk_lo, k->brk_hi);
}

void hmb_clock_json_members(struct hmb_json *j, const struct hmb_clock *k)
{
	hmb_json_kv_bool(j, "valid", k->valid);
	if (k->valid) {
		hmb_json_kv_dbl(j, "offset_ns", k->off_ns, 0);
		hmb_json_kv_dbl(j, "offset_err_ns", k->off_err_ns, 0);
		if (k->drift_slack_ns > 0)
			hmb_json_kv_dbl(j, "offset_err_drift_ns",
					k->drift_slack_ns, 0);
		hmb_json_kv_dbl(j, "ref_fw_ns", k->ref, 0);
		hmb_json_kv_dbl(j, "drift_ppm", k->drift * 1e6, 3);
		hmb_json_kv_dbl(j, "drift_err_ppm",
				k->drift_err < 0 ? -1 : k->drift_err * 1e6, 3);
		hmb_json_kv_bool(j, "consistent", k->consistent);
		hmb_json_kv_bool(j, "converged", hmb_clock_converged(k));
		hmb_json_kv_u64(j, "points", k->used);
		hmb_json_kv_u64(j, "trimmed", k->trimmed);
	}
	if (k->shed_old)
		hmb_json_kv_u64(j, "shed", k->shed);
	hmb_json_kv_u64(j, "steps", k->steps);
	hmb_json_kv_u64(j, "matched_seen", k->added);
	if (k->have_prev) {
		hmb_json_kv_u64(j, "step_seq", k->step_seq);
		if (k->brk_on) {
			hmb_json_kv_u64(j, "step_lo_seq", k->brk_lo);
			hmb_json_kv_u64(j, "step_hi_seq", k->brk_hi);
		}
		hmb_json_kv_i64(j, "step_fw_ns", k->step_t);
		hmb_json_kv_dbl(j, "step_ns", k->step_ns, 0);
		hmb_json_kv_dbl(j, "step_err_ns", k->step_err_ns, 0);
		hmb_json_kv_u64(j, "skipped_before_step",
				k->skipped_before_step);
	}
}
