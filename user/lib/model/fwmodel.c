// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * fwmodel: commands and background windows rebuilt from firmware records
 * with the event dictionary (hmbtrace_fwmodel.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hmbtrace_cmd.h"
#include "hmbtrace_fwmodel.h"
#include "fwmpriv.h"

#define TAB_MASK	(HMB_FWM_MAX_INFLIGHT - 1)
/* Keep probe chains short: evict above 3/4 full. */
#define TAB_LIMIT	(HMB_FWM_MAX_INFLIGHT / 4 * 3)

static uint32_t slot_of(uint32_t key)
{
	key *= 0x9E3779B1u;	/* Fibonacci hashing */
	return (key >> 16) & TAB_MASK;
}

static uint32_t key_of(uint16_t sqid, uint16_t cid)
{
	return (uint32_t)sqid << 16 | cid;
}

int hmb_fwm_init(struct hmb_fwmodel *m, const struct hmb_dict *d,
		 const struct hmb_fwm_ops *ops, void *ctx)
{
	memset(m, 0, sizeof(*m));
	m->dict = d;
	m->ops = ops;
	m->ctx = ctx;
	m->next_id = 1;
	m->tab = calloc(HMB_FWM_MAX_INFLIGHT, sizeof(*m->tab));
	return m->tab ? 0 : -1;
}

static struct hmb_fwm_cmd *lookup(struct hmb_fwmodel *m, uint32_t key)
{
	uint32_t i = slot_of(key);

	while (m->tab[i].used) {
		if (key_of(m->tab[i].sqid, m->tab[i].cid) == key)
			return &m->tab[i];
		i = (i + 1) & TAB_MASK;
	}
	return NULL;
}

/* Remove by backward shift, so probe chains never hold tombstones. */
static void tab_remove(struct hmb_fwmodel *m, struct hmb_fwm_cmd *c)
{
	uint32_t i = (uint32_t)(c - m->tab), j = i;

	m->tab[i].used = false;
	m->open--;
	for (;;) {
		uint32_t h;

		j = (j + 1) & TAB_MASK;
		if (!m->tab[j].used)
			return;
		h = slot_of(key_of(m->tab[j].sqid, m->tab[j].cid));
		/* Move j back to i unless its home lies cyclically in (i, j]. */
		if ((j > i && (h <= i || h > j)) || (j < i && (h <= i && h > j))) {
			m->tab[i] = m->tab[j];
			m->tab[j].used = false;
			i = j;
		}
	}
}

static void end_cmd(struct hmb_fwmodel *m, struct hmb_fwm_cmd *c, enum hmb_fwm_end why)
{
	switch (why) {
	case HMB_FWM_END_COMPLETE:
		m->st.complete++;
		break;
	case HMB_FWM_END_REUSED:
		m->st.reused++;
		break;
	case HMB_FWM_END_EOF:
		m->st.eof_open++;
		break;
	case HMB_FWM_END_EVICTED:
		m->st.evicted++;
		break;
	}
	if (m->ops->cmd_end)
		m->ops->cmd_end(m->ctx, c, why);
	tab_remove(m, c);
}

static struct hmb_fwm_cmd *new_cmd(struct hmb_fwmodel *m, uint32_t key,
			       const struct hmb_record *rec)
{
	struct hmb_fwm_cmd *c;
	uint32_t i;

	if (m->open >= TAB_LIMIT) {
		/*
		 * Close the open command at the new key's home slot or the
		 * first one after it.  The table stays 3/4 full at most, so
		 * both this scan and the probe below stay short (closing an
		 * empty home slot, as this once did, let the table fill up
		 * and the probe run forever).
		 */
		i = slot_of(key);
		while (!m->tab[i].used)
			i = (i + 1) & TAB_MASK;
		end_cmd(m, &m->tab[i], HMB_FWM_END_EVICTED);
	}
	i = slot_of(key);
	while (m->tab[i].used)
		i = (i + 1) & TAB_MASK;
	c = &m->tab[i];
	memset(c, 0, sizeof(*c));
	c->used = true;
	c->id = m->next_id++;
	c->sqid = (uint16_t)(key >> 16);
	c->cid = (uint16_t)key;
	c->cpu = rec->hdr.cpu;
	c->first_ts = c->last_ts = rec->hdr.ts_ns;
	c->first_seq = c->last_seq = rec->hdr.seq;
	c->last_phase = HMB_PHASE_NONE;
	c->gaps_at = m->seq_gaps;
	m->open++;
	m->st.cmds++;
	return c;
}

static bool get_u16(const struct hmb_record *rec, int off, uint16_t *v)
{
	if (off < 0 || (unsigned int)off + 2 > rec->hdr.payload_len)
		return false;
	*v = (uint16_t)(rec->payload[off] | rec->payload[off + 1] << 8);
	return true;
}

static bool get_named(const struct hmb_dict_event *ev,
		      const struct hmb_record *rec, const char *name,
		      uint64_t *v)
{
	const struct hmb_dict_field *f = hmb_dict_field(ev, name);

	return f && hmb_dict_get(f, rec->payload, rec->hdr.payload_len, v) == 0;
}

static int32_t seq_diff(uint32_t a, uint32_t b)
{
	return (int32_t)(a - b);
}

/*
 * Records lost in front of @seq: a forward step in the seqs.  A repeated
 * or earlier seq (a batch written twice) moves nothing, as in the join's
 * own gap list (join.c), which cuts commands merged across a loss.
 */
static void note_seq(struct hmb_fwmodel *m, uint32_t seq)
{
	if (m->have_seq && seq_diff(seq, m->seq_next) > 0)
		m->seq_gaps++;
	if (!m->have_seq || seq_diff(seq, m->seq_next) >= 0)
		m->seq_next = seq + 1;
	m->have_seq = true;
}

/*
 * A second record of @c's last phase: the same record again (a replay
 * the reader let through, no later than the highest seq) is a duplicate.
 * A later one after a loss is the id's next use, whose earlier records
 * were lost as @c's later ones were: @c ends there, or the record would
 * be dropped and the cut of the merged command (joincausal.c) could not
 * give it back.  Without a loss since, it stays a duplicate: nothing was
 * lost between, so the id's next use would have shown its fetch.
 */
static bool new_use(const struct hmb_fwmodel *m, const struct hmb_fwm_cmd *c,
		    uint32_t seq)
{
	return seq_diff(seq, c->last_seq) > 0 &&
	       seq_diff(seq + 1, m->seq_next) >= 0 &&
	       m->seq_gaps != c->gaps_at;
}

static void phase_event(struct hmb_fwmodel *m, const struct hmb_record *rec,
			const struct hmb_dict_event *ev)
{
	enum hmb_phase p = ev->phase;
	uint64_t ts = rec->hdr.ts_ns, v;
	uint16_t sqid, cid;
	struct hmb_fwm_cmd *c;
	uint32_t key;

	if (!get_u16(rec, ev->key_off[HMB_KEY_SQID], &sqid) ||
	    !get_u16(rec, ev->key_off[HMB_KEY_CID], &cid)) {
		m->st.short_payload++;
		return;
	}
	key = key_of(sqid, cid);
	c = lookup(m, key);
	if (c && p == c->last_phase && p != HMB_PHASE_FETCH &&
	    !new_use(m, c, rec->hdr.seq)) {
		m->st.dup_phase++;
		return;
	}
	if (c && (p == HMB_PHASE_FETCH || p <= c->last_phase)) {
		/* The id was reused: the old command's end went missing. */
		end_cmd(m, c, HMB_FWM_END_REUSED);
		c = NULL;
	}
	if (!c) {
		c = new_cmd(m, key, rec);
		if (p != HMB_PHASE_FETCH)
			m->st.no_fetch++;
		c->last_phase = p;
		c->mask |= 1u << p;
		c->ts[p] = ts;
		c->seq[p] = rec->hdr.seq;
		c->ecpu[p] = rec->hdr.cpu;
		if (p == HMB_PHASE_FETCH) {
			if (get_named(ev, rec, "opc", &v)) {
				c->have_opc = true;
				c->opc = (uint8_t)v;
			}
			if (get_named(ev, rec, "nsid", &v))
				c->nsid = (uint32_t)v;
			if (get_named(ev, rec, "slba", &v))
				c->slba = v;
			if (get_named(ev, rec, "nlb", &v))
				c->nlb = (uint32_t)v;
		}
		if (m->ops->cmd_begin)
			m->ops->cmd_begin(m->ctx, c);
	} else {
		uint64_t t0 = c->last_ts;

		/*
		 * A record's time is what the firmware wrote, always: one
		 * earlier than its predecessor's is a command in flight
		 * across a backward clock step (or a firmware bug), and the
		 * join places each record by its seq on its own side of the
		 * step.  No step of negative length is handed on.
		 */
		c->mask |= 1u << p;
		c->ts[p] = ts;
		c->seq[p] = rec->hdr.seq;
		c->ecpu[p] = rec->hdr.cpu;
		if (ts < t0)
			m->st.backwards++;
		else if (m->ops->cmd_step)
			m->ops->cmd_step(m->ctx, c, c->last_phase, t0, p, ts);
		c->last_phase = p;
		c->last_ts = ts;
		c->last_seq = rec->hdr.seq;
		c->gaps_at = m->seq_gaps;
	}
	if (p == HMB_PHASE_CQE_POSTED)
		end_cmd(m, c, HMB_FWM_END_COMPLETE);
}

/*
 * The consumer claimed the phases @mask of the open command (@sqid, @cid):
 * their host command completed, so no later record of theirs will come
 * (its cqe_posted was lost, and the id may not be used again for long, or
 * ever).  When they are a prefix of its phases (two uses of the id merged
 * across a loss), the rest stays open as the id's next use, to which its
 * later records still belong; else the whole command leaves the table.
 * No cmd_end: the consumer holds its copy.  true: nothing of it is left.
 */
bool hmb__fwm_take(struct hmb_fwmodel *m, uint16_t sqid, uint16_t cid,
		   uint8_t mask)
{
	struct hmb_fwm_cmd *c = m->tab ? lookup(m, key_of(sqid, cid)) : NULL;
	uint8_t rest;
	int q;

	if (!c)
		return true;
	mask &= c->mask;
	rest = (uint8_t)(c->mask & ~mask);
	if (!mask)
		return false;
	/* not a prefix: some phase left lies before a claimed one */
	if (!rest || __builtin_ctz(rest) < 31 - __builtin_clz(mask)) {
		tab_remove(m, c);
		return true;
	}
	for (q = HMB_PHASE_FETCH; q < HMB_PHASE_COUNT; q++)
		if (mask & (1u << q)) {
			c->ts[q] = 0;
			c->seq[q] = 0;
			c->ecpu[q] = 0;
		}
	if (mask & (1u << HMB_PHASE_FETCH)) {
		c->have_opc = false;
		c->opc = 0;
		c->nsid = c->nlb = 0;
		c->slba = 0;
	}
	c->mask = rest;
	q = __builtin_ctz(rest);
	c->first_ts = c->ts[q];
	c->first_seq = c->seq[q];
	c->cpu = c->ecpu[q];
	return false;
}

static int group_index(struct hmb_fwmodel *m, const char *name)
{
	for (unsigned int i = 0; i < m->ngroups; i++)
		if (strcmp(m->groups[i], name) == 0)
			return (int)i;
	if (m->ngroups == HMB_FWM_MAX_GROUPS)
		return -1;
	snprintf(m->groups[m->ngroups], HMB_DICT_NAME_LEN, "%s", name);
	return (int)m->ngroups++;
}

static void bg_emit(struct hmb_fwmodel *m, int g, uint64_t t0, uint64_t t1,
		    unsigned int flags, uint8_t cpu)
{
	if (t1 < t0) {
		m->st.backwards++;
		t1 = t0;
	}
	m->st.bg_windows++;
	if (flags)
		m->st.bg_unpaired++;
	if (m->ops->bg_window)
		m->ops->bg_window(m->ctx, m->groups[g], t0, t1, flags, cpu);
}

static void bg_event(struct hmb_fwmodel *m, const struct hmb_record *rec,
		     const struct hmb_dict_event *ev)
{
	uint64_t ts = rec->hdr.ts_ns;
	int g;

	m->st.bg_events++;
	if (ev->bg_edge == HMB_BG_POINT)
		return;
	g = group_index(m, ev->bg_group);
	if (g < 0)
		return;
	if (ev->bg_edge == HMB_BG_BEGIN) {
		if (m->bg_open[g])
			bg_emit(m, g, m->bg_t0[g], ts, HMB_FWM_BG_NO_END,
				m->bg_cpu[g]);
		m->bg_open[g] = true;
		m->bg_t0[g] = ts;
		m->bg_cpu[g] = rec->hdr.cpu;
	} else if (m->bg_open[g]) {
		bg_emit(m, g, m->bg_t0[g], ts, 0, m->bg_cpu[g]);
		m->bg_open[g] = false;
	} else {
		bg_emit(m, g, m->first_ts, ts, HMB_FWM_BG_NO_BEGIN, rec->hdr.cpu);
	}
}

void hmb_fwm_add(struct hmb_fwmodel *m, const struct hmb_record *rec)
{
	const struct hmb_dict_event *ev = hmb_dict_lookup(m->dict,
							  rec->hdr.opcode);

	m->st.records++;
	if (!m->have_ts) {
		m->first_ts = rec->hdr.ts_ns;
		m->have_ts = true;
	}
	if (rec->hdr.ts_ns > m->last_ts)
		m->last_ts = rec->hdr.ts_ns;
	note_seq(m, rec->hdr.seq);
	if (!ev) {
		m->st.unknown_opcode++;
	} else if (ev->phase != HMB_PHASE_NONE) {
		phase_event(m, rec, ev);
	} else if (ev->bg_edge != HMB_BG_NONE) {
		bg_event(m, rec, ev);
	}
	if (m->ops->record)
		m->ops->record(m->ctx, rec, ev);
}

void hmb_fwm_finish(struct hmb_fwmodel *m)
{
	if (m->tab) {
		for (uint32_t i = 0; i < HMB_FWM_MAX_INFLIGHT && m->open; ) {
			/* tab_remove may shift a later entry into slot i. */
			if (m->tab[i].used)
				end_cmd(m, &m->tab[i], HMB_FWM_END_EOF);
			else
				i++;
		}
	}
	for (unsigned int g = 0; g < m->ngroups; g++)
		if (m->bg_open[g]) {
			bg_emit(m, (int)g, m->bg_t0[g], m->last_ts,
				HMB_FWM_BG_NO_END, m->bg_cpu[g]);
			m->bg_open[g] = false;
		}
	free(m->tab);
	m->tab = NULL;
}

const char *hmb_fwm_cmd_name(const struct hmb_fwm_cmd *c, char *buf,
			     size_t len)
{
	if (!c->have_opc)
		return "cmd";
	return hmb_nvme_opc_name(c->opc, buf, len);
}

const char *hmb_fwm_end_name(enum hmb_fwm_end e)
{
	switch (e) {
	case HMB_FWM_END_COMPLETE:
		return "complete";
	case HMB_FWM_END_REUSED:
		return "reused";
	case HMB_FWM_END_EOF:
		return "open_at_end";
	case HMB_FWM_END_EVICTED:
		return "evicted";
	}
	return "?";
}
