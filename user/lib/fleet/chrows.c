// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * chrows: the fleet store's rows (share/fleet/schema.sql, docs/fleet.md:
 * commands, losses, fw_records, clock) in RowBinary, one encoder per table
 * for every exporter:
 * hmb-trace-analyze export (offline, from the join) and hmb-trace-agent
 * --export (live, from the command model).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hmbtrace.h"
#include "hmbtrace_ch.h"
#include "hmbtrace_cmd.h"

const char hmb_ch_commands_cols[] =
	"day, host, ctrl, serial, model, fw_rev, trace_id, cmd_id, qid, cid, "
	"opcode, nsid, slba, nlb, status, submit_ns, complete_ns, fetch_ns, "
	"media_start_ns, media_end_ns, xfer_done_ns, cqe_ns, bg_in_flight, "
	"match_class, clock_off_ns, clock_err_ns, pid, tid, comm, cgroup";

const char hmb_ch_losses_cols[] =
	"day, host, ring, trace_id, loss_id, layer, counter, count, "
	"fw_ns_from, fw_ns_to, host_ns_from, host_ns_to, seq_first, seq_last, "
	"detail";

const char hmb_ch_fw_records_cols[] =
	"day, host, ring, trace_id, rec_off, epoch, seq, fw_ns, host_ns, "
	"opcode, cpu, flags, payload";

const char hmb_ch_clock_cols[] =
	"day, host, ring, trace_id, clk_id, kind, fw_ns, host_ns, "
	"monotonic_ns, boottime_ns, offset_ns, drift_ppm, err_ns, drift_err_ppm";

/* The NVMe opcode of a command's name (hmb_nvme_opc_name's); 0xff for a
 * block request's name, which has none. */
static uint8_t opc_of(const char *name)
{
	char buf[16];
	unsigned int v;

	if (!strncmp(name, "opc 0x", 6) && sscanf(name + 6, "%x", &v) == 1 &&
	    v < 256)
		return (uint8_t)v;
	for (unsigned int o = 0; o < 16; o++)
		if (!strcmp(hmb_nvme_opc_name(o, buf, sizeof(buf)), name))
			return (uint8_t)o;
	return 0xff;
}

/* A host time on the wall clock; 0 ("not known") stays 0. */
static uint64_t wall(int64_t wall_off, double t)
{
	if (t <= 0)
		return 0;
	return (uint64_t)((int64_t)t + wall_off);
}

int hmb_ch_row_command(struct hmb_ch_sink *s, const struct hmb_ch_ident *k,
		       uint64_t cmd_id, const struct hmb_cmd *c,
		       int64_t wall_off, double clock_err)
{
	static const int ph[] = { HMB_PHASE_FETCH, HMB_PHASE_MEDIA_START,
				  HMB_PHASE_MEDIA_END, HMB_PHASE_XFER_DONE,
				  HMB_PHASE_CQE_POSTED };
	char ctrl[16];
	double off = 0;
	int rc = hmb_ch_sink_admit(s, cmd_id);

	if (rc <= 0)
		return rc;
	snprintf(ctrl, sizeof(ctrl), "nvme%u", c->h.ctrl);
	hmb_rb_u16(s, k->day);
	hmb_rb_str(s, k->host);
	hmb_rb_str(s, ctrl);
	hmb_rb_str(s, k->serial ? k->serial : "");
	hmb_rb_str(s, k->model ? k->model : "");
	hmb_rb_str(s, k->fw_rev ? k->fw_rev : "");
	hmb_rb_u64(s, k->trace_id);
	hmb_rb_u64(s, cmd_id);
	hmb_rb_u16(s, c->h.qid);
	hmb_rb_u16(s, c->h.cid);
	hmb_rb_u8(s, opc_of(c->h.opc));
	hmb_rb_u32(s, c->h.nsid);
	hmb_rb_u64(s, c->h.slba);
	hmb_rb_u32(s, c->h.nlb);
	hmb_rb_u16(s, c->h.status);
	hmb_rb_u64(s, wall(wall_off, (double)c->h.submit_ns));
	hmb_rb_u64(s, wall(wall_off, (double)c->h.complete_ns));
	for (size_t i = 0; i < sizeof(ph) / sizeof(ph[0]); i++) {
		bool have = c->placed && (c->fw.mask & (1u << ph[i]));

		/* truncated as hmb_cmd_judge truncates the phases */
		hmb_rb_u64(s, have ? wall(wall_off, (double)(int64_t)
					  c->fw_host_ns[ph[i]]) : 0);
		if (have && off == 0)
			off = c->fw_host_ns[ph[i]] - (double)c->fw.ts[ph[i]];
	}
	/* bg_in_flight: Array(String), LEB128 count then the names */
	hmb_rb_u8(s, (uint8_t)__builtin_popcount(c->bg_groups ? c->bg : 0));
	for (unsigned int g = 0; c->bg_groups && g < HMB_CMD_BG_GROUPS; g++)
		if (c->bg & (1u << g))
			hmb_rb_bytes(s, c->bg_groups[g],
				     strnlen(c->bg_groups[g], HMB_DICT_NAME_LEN));
	hmb_rb_str(s, hmb_match_name(c->match));
	hmb_rb_f64(s, off);
	hmb_rb_f64(s, c->placed ? clock_err : 0);
	hmb_rb_u32(s, c->h.pid);
	hmb_rb_u32(s, c->h.tid);
	hmb_rb_bytes(s, c->h.comm, strnlen(c->h.comm, sizeof(c->h.comm)));
	hmb_rb_u64(s, c->h.cgroup);
	hmb_ch_sink_commit_row(s);
	return 1;
}

/*
 * The columns the fw_records, losses and clock rows start with (day,
 * host, ring, trace_id, the row's id), once the sink admits the row: 1, or
 * the sink's verdict (0: already in the store, -1: error).
 */
static int row_head(struct hmb_ch_sink *s, const struct hmb_ch_ident *k,
		    const char *ring, uint64_t id)
{
	int rc = hmb_ch_sink_admit(s, id);

	if (rc <= 0)
		return rc;
	hmb_rb_u16(s, k->day);
	hmb_rb_str(s, k->host);
	hmb_rb_str(s, ring ? ring : "");
	hmb_rb_u64(s, k->trace_id);
	hmb_rb_u64(s, id);
	return 1;
}

int hmb_ch_row_loss(struct hmb_ch_sink *s, const struct hmb_ch_ident *k,
		    const struct hmb_ch_loss *l)
{
	int rc = row_head(s, k, l->ring, l->id);

	if (rc <= 0)
		return rc;
	hmb_rb_str(s, l->layer);
	hmb_rb_str(s, l->counter);
	hmb_rb_u64(s, l->count);
	hmb_rb_u64(s, l->fw_from);
	hmb_rb_u64(s, l->fw_to);
	hmb_rb_u64(s, l->host_from);
	hmb_rb_u64(s, l->host_to);
	hmb_rb_u32(s, l->seq_first);
	hmb_rb_u32(s, l->seq_last);
	hmb_rb_bytes(s, l->detail ? l->detail : "",
		     l->detail ? strnlen(l->detail, 1024) : 0);
	hmb_ch_sink_commit_row(s);
	return 1;
}

int hmb_ch_row_record(struct hmb_ch_sink *s, const struct hmb_ch_ident *k,
		      const char *ring, uint64_t rec_off, uint32_t epoch,
		      uint64_t host_ns, const struct hmb_record_hdr *hdr,
		      const void *payload)
{
	size_t len = hdr->payload_len;
	int rc = row_head(s, k, ring, rec_off);

	if (rc <= 0)
		return rc;
	if (len > HMB_RECORD_MAX_PAYLOAD)	/* the caller's check failed: clip */
		len = HMB_RECORD_MAX_PAYLOAD;
	hmb_rb_u32(s, epoch);
	hmb_rb_u32(s, hdr->seq);
	hmb_rb_u64(s, hdr->ts_ns);
	hmb_rb_u64(s, host_ns);
	hmb_rb_u16(s, hdr->opcode);
	hmb_rb_u8(s, hdr->cpu);
	hmb_rb_u8(s, hdr->flags);
	hmb_rb_bytes(s, payload, len);
	hmb_ch_sink_commit_row(s);
	return 1;
}

int hmb_ch_row_clock(struct hmb_ch_sink *s, const struct hmb_ch_ident *k,
		     const struct hmb_ch_clock *c)
{
	int rc = row_head(s, k, c->ring, c->id);

	if (rc <= 0)
		return rc;
	hmb_rb_str(s, c->kind);
	hmb_rb_u64(s, c->fw_ns);
	hmb_rb_u64(s, c->host_ns);
	hmb_rb_u64(s, c->monotonic_ns);
	hmb_rb_u64(s, c->boottime_ns);
	hmb_rb_f64(s, c->offset_ns);
	hmb_rb_f64(s, c->drift_ppm);
	hmb_rb_f64(s, c->err_ns);
	hmb_rb_f64(s, c->drift_err_ppm);
	hmb_ch_sink_commit_row(s);
	return 1;
}
