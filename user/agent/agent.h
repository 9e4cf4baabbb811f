/* SPDX-License-Identifier: GPL-2.0 */
/*
 * agent.h - what the parts of hmb-trace-agent share: its options, the
 * loaded BPF object and the command model (libhmbtrace's hmbtrace_live.h)
 * it feeds.  agent.c sets up and runs the loop, probe.c finds what the
 * kernel offers, print.c writes the reports.
 */
#ifndef HMB_AGENT_MAIN_H
#define HMB_AGENT_MAIN_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <linux/types.h>

#include "hmbtrace.h"
#include "hmbtrace_dict.h"
#include "hmbtrace_live.h"
#include "hmbtrace_util.h"
#include "hmb_agent.h"
#include "sweep.h"

#define PROG "hmb-trace-agent"
#define AGENT_VERSION HMB_VERSION	/* VERSION, from mk/common.mk */

/* Exit codes: 0 success, 1 an error, 2 bad usage. */
#define EXIT_FAIL	1
#define EXIT_USAGE	2

/* The values of -m, --issue-stamp and --fw-event in their words' order (options.c) */
enum mode { MODE_AUTO, MODE_NVME, MODE_BLOCK };
/* Block mode's start time: auto, the request's own stamp, or a program */
enum issue_stamp { STAMP_AUTO, STAMP_KERNEL, STAMP_BPF };
/* Which event brings the firmware records: auto, in batches, one by one */
enum fw_event { FWEV_AUTO, FWEV_BATCH, FWEV_RECORD };

/* The kernel bridge's loss counters the agent reports (bridge.c). */
enum bridge_counter {
	BRIDGE_C_LOST,		/* records missing by seq: never emitted */
	BRIDGE_C_IGNORED,	/* unknown flag bits: skipped, not emitted */
	BRIDGE_C_CORRUPT,	/* times the bridge stopped on a corrupt ring */
	BRIDGE_C_COUNT
};

struct env {
	const char *disk;
	enum mode mode;
	bool json;
	const char *output;
	uint64_t min_lat_us;
	unsigned int top_n;
	int opcode;
	const char *dict_path;
	unsigned int grace_ms;
	bool per_command;
	bool verbose;
	long interval;
	long times;
	unsigned int ring_ctrl[HMB_MAX_RINGS];	/* controller + 1, 0 unset */
	bool ring_ctrl_set;
	unsigned int clock_window;
	unsigned int ringbuf_mb;	/* BPF ring buffer, MiB */
	const char *dump_path;		/* -w: firmware records to this dump */
	enum issue_stamp issue_stamp;	/* --issue-stamp */
	enum fw_event fw_event;		/* --fw-event */
	const char *export_url;		/* --export: the fleet store */
	const char *pel_dev;		/* --pel: the controller's PEL */
	const char *export_credentials;	/* --export-credentials FILE */
	const char *export_host;
	size_t export_queue;		/* rows */
	unsigned int export_wait_ms;	/* at exit */
	const char *trig_expr[HMB_MAX_TRIGGERS];	/* --trigger, in order */
	unsigned int ntrig;
	/* the flight recorder (snap.c); snap_dir NULL: off */
	const char *snap_dir;
	double snap_pre_s, snap_post_s;
	size_t snap_window;		/* --window-mb, bytes */
	uint64_t snap_max;		/* --max-snapshots */
	unsigned int snap_holdoff_s;
	/* who issued a command: --pid, --comm, --cgroup (0, NULL: any) */
	uint32_t who_pid;
	const char *who_comm;
	const char *who_cgroup;
	int who_cgroup_fd;		/* its directory, opened; -1 */
};

/* -w: one dump per ring the records came from (dump.c). */
struct agent_dump {
	struct hmb_dump_writer *w[HMB_MAX_RINGS];
	uint64_t refused;		/* malformed, or a ring id >= 64 */
	uint64_t write_errors;		/* records a failed write lost */
	uint64_t export_ignored;	/* --export: unknown flags, no row */
	bool failed;			/* a write or close failed: exit 1 */
};

/* What the run found and set up. */
struct agent {
	struct env env;
	FILE *out;
	struct hmb_outbuf ob;		/* JSON lines, onto out */
	struct hmb_json j;
	struct hmb_dict *dict;
	struct hmb_live live;
	struct hmb_agent *skel;
	int nr_cpus;
	const char *mode_name;
	const char *attach;		/* "tp_btf" or "raw_tp" */
	const char *fw_event;		/* the records' tracepoint, or "" */
	const char *missing_msg;
	bool kernel_stamp;		/* block mode: no program at issue */
	const char *stamp_why;		/* ... and why (not) */
	bool fw_on, use_nvme;
	int ctrl;
	unsigned int nsid;
	__u32 devt;
	uint64_t counters_prev[HMB_C_COUNT];
	/* filtered commands the sweep took (read_counters() adds them) */
	uint64_t swept_filtered;
	/* the program's command table "cmds", mapped (sweep.c) */
	struct hmb_cmd_slot *cmd_slots;
	struct hmb_log2_hist bpf_hist_run[HMB_H_COUNT];
	/* the firmware's phases of this interval (print.c) */
	struct hmb_log2_hist fw_hist_iv[HMB_H_COUNT];
	struct agent_dump dump;
	/* bridge.c: the rings' sysfs counters when the programs attached */
	struct {
		bool have[HMB_MAX_RINGS];
		uint64_t base[HMB_MAX_RINGS][BRIDGE_C_COUNT];
	} bridge;
	bool export_failed;		/* a row did not reach the store */
};

extern struct agent ag;

/* pel.c: --pel, the Persistent Event Log in the live report */
struct hmb_cmd;
int agent_pel_open(void);
void agent_pel_cmd(const struct hmb_cmd *c);
void agent_pel_report(void);
void agent_pel_close(void);

/* probe.c */
const char *tracefs(void);
bool tp_exists(const char *cat, const char *ev);
bool tp_btf_exists(const char *tp, const char *mod);
/* Free the kernel BTF the questions above and below parsed (once). */
void probe_btf_release(void);
int resolve_nvme(const char *dev, int *ctrl, unsigned int *nsid);
/*
 * The shape of the program's command-id index for controller @targ (-1:
 * every controller there is): their queues and tags as sysfs shows them
 * (the disks' mq/N/nr_tags), or what nvme-pci may create where no disk
 * says.
 */
void kseq_geometry(int targ, struct hmb_kseq_geom *g);
int block_devt(const char *dev, __u32 *devt);
/*
 * Block mode: NULL if the kernel stamps each request's issue time itself,
 * exactly (ktime_get_ns in blk_mq_start_request, not a plug's cached
 * time), on the queue of @devt (0: every request-based disk); else why not.
 * *@readable: whether the programs can read the stamp at all (the field
 * exists), exact or not.
 */
const char *kernel_issue_stamp(__u32 devt, bool *readable);

/* options.c */
void parse_args(struct env *e, int argc, char **argv);

/* agent.c */
int handle_event(void *ctx, void *data, size_t len);	/* a BPF event */
/* Ring @ring's controller instance + 1 (0: none), as the programs map it. */
unsigned int ring_ctrl_of(unsigned int ring);

/* mapsweep.c: the join's maps kept (@all: everything left, at exit) */
void sweep(bool all);
int map_join_maps(void);
void unmap_join_maps(void);

/* bridge.c: the kernel bridge's losses on the agent's rings */
const char *bridge_counter_name(int i);
int ring_sysfs_u64(unsigned int ring, const char *attr, uint64_t *v);
void bridge_start(void);
void bridge_totals(uint64_t *tot);	/* BRIDGE_C_COUNT deltas since start */
void bridge_export(void);		/* a losses row per ring and counter */

/* dump.c (-w) */
/* The sidecar a dump of @ring starts with (-w's, and a snapshot's). */
void dump_sidecar(unsigned int ring, struct hmb_sidecar *sc);
int dump_open(void);
int dump_record(void *ctx, void *data, size_t len);
void dump_totals(uint64_t *records, uint64_t *bytes, uint64_t *lost);
int dump_close(void);

/* export.c (--export) */
int export_start(void);
void export_cmd(const struct hmb_cmd *c);
void export_record(unsigned int ring, const struct hmb_record_hdr *h,
		   const void *payload);
void export_clock(const struct hmb_clock *k, bool step);
/* A loss row at exit: @ring names the ring, or "agent" for the whole run. */
void export_counter(const char *layer, const char *name, uint64_t count);
void export_counter_ring(const char *layer, const char *name,
			 const char *ring, uint64_t count);
int export_stop(unsigned int wait_ms);
void export_json(struct hmb_json *j);
void export_free(void);

/* print.c */
extern const char *const counter_names[HMB_C_COUNT];
void read_counters(uint64_t *c);
uint64_t recursion_misses(void);
void print_start(void);
void print_report(const char *kind, bool final);
/* hmb_live's on_cmd: every judged command (--per-command). */
void print_cmd_line(void *ctx, const struct hmb_cmd *c);
/* @c's -j --per-command line (no newline) into @ob, emptied first. */
void print_cmd_json_to(struct hmb_outbuf *ob, const struct hmb_cmd *c);
/* The clock estimate now, a JSON object (for a snapshot's clock.json). */
void print_clock_json_to(struct hmb_outbuf *ob);
void json_line_end(void);

#endif /* HMB_AGENT_MAIN_H */
