-- SPDX-License-Identifier: Apache-2.0
-- nvme-hmb-trace fleet store: the ClickHouse DDL the project ships
-- (docs/fleet.md explains every choice).  Written for ClickHouse 18.16
-- (Debian 12) and later.  Apply it to EVERY server of the cluster: each
-- holds its shard's *_local tables and the Distributed tables over all
-- shards, so an exporter may talk to any of them.  The Distributed tables
-- name the cluster hmb_fleet (remote_servers in the server configuration);
-- scripts/fleet/ch-cluster schema URL applies this file statement by
-- statement over HTTP.
--
-- Every table:
--   day       UTC date the rows belong to: PARTITION BY day, so a day of a
--             fleet is dropped with ALTER TABLE ... DROP PARTITION on each
--             shard, and "last night" reads one partition.
--   host      the machine the rows come from; the sharding key of every
--             Distributed table is cityHash64(host): one host's rows always
--             live on one shard, so the ReplacingMergeTree key below meets
--             its duplicates there, and each batch an exporter sends lands
--             on one shard as one part (atomic).
--   trace_id  one export source: a dump (hash of its sidecar) or a live
--             agent run.  With the per-table row id it is the row's
--             identity: the exporter resumes after the rows the store holds
--             and never sends a row twice; ReplacingMergeTree collapses
--             what a second, racing exporter might still insert.
-- Times: *_ns columns are nanoseconds.  fw_* are the firmware's own clock
-- (not the host's); host_ns and the commands' host times are host wall clock
-- (CLOCK_REALTIME, ns since the epoch); 0 means "not known".

CREATE DATABASE IF NOT EXISTS hmb;

-- One row per firmware trace record (data records; wrap markers, records
-- with unknown flag bits and replayed duplicates are not rows: the losses
-- table counts them).
CREATE TABLE IF NOT EXISTS hmb.fw_records_local (
	day      Date,
	host     String,
	ring     String,   -- the ring's name (device or ring file)
	trace_id UInt64,
	rec_off  UInt64,   -- byte offset of the record in its source: row id
	epoch    UInt32,   -- ring re-initialisations before it (sidecar)
	seq      UInt32,
	fw_ns    UInt64,   -- the record's ts_ns
	host_ns  UInt64,   -- fw_ns mapped to host wall clock, 0 = not mapped
	opcode   UInt16,
	cpu      UInt8,
	flags    UInt8,
	payload  String
) ENGINE = ReplacingMergeTree
PARTITION BY day
ORDER BY (host, ring, opcode, fw_ns, trace_id, rec_off);

-- One row per NVMe command joined host side to firmware side.
CREATE TABLE IF NOT EXISTS hmb.commands_local (
	day            Date,    -- the export's day (one export, one partition)
	host           String,
	ctrl           String,  -- nvmeN
	serial         String,
	model          String,
	fw_rev         String,
	trace_id       UInt64,
	cmd_id         UInt64,  -- row id: the command's ordinal in its source
	qid            UInt16,
	cid            UInt16,  -- full 16-bit command id (genctr << 12 | tag)
	opcode         UInt8,
	nsid           UInt32,
	slba           UInt64,
	nlb            UInt32,
	status         UInt16,
	submit_ns      UInt64,  -- host: nvme_setup_cmd
	complete_ns    UInt64,  -- host: nvme_complete_rq
	fetch_ns       UInt64,  -- firmware phases mapped to host time, 0 = absent
	media_start_ns UInt64,
	media_end_ns   UInt64,
	xfer_done_ns   UInt64,
	cqe_ns         UInt64,
	bg_in_flight   Array(String),  -- background windows open during it (gc, thermal)
	match_class    String,  -- matched | partial | unmatched
	clock_off_ns   Float64, -- host - firmware offset used for the mapping
	clock_err_ns   Float64, -- its error bound
	pid            UInt32,  -- who issued it (the task that dispatched it;
	tid            UInt32,  -- a kworker when blk-mq dispatched from one),
	comm           String,  -- "" and 0 when not known
	cgroup         UInt64   -- cgroup v2 id
) ENGINE = ReplacingMergeTree
PARTITION BY day
ORDER BY (host, ctrl, submit_ns, qid, cid, trace_id, cmd_id);

-- Every loss counter of every layer, located in time: one row per seq gap,
-- one row per other non-zero counter over the range it covers.  Counts add
-- up: sum(count) per layer and counter is the total.
CREATE TABLE IF NOT EXISTS hmb.losses_local (
	day        Date,
	host       String,
	ring       String,
	trace_id   UInt64,
	loss_id    UInt64,  -- row id (docs/fleet.md)
	layer      String,  -- firmware | dump | bridge | bpf | agent | export
	counter    String,  -- lost | ignored | truncated | duplicates | unreadable | ...
	count      UInt64,
	fw_ns_from UInt64,  -- firmware time range it covers
	fw_ns_to   UInt64,
	host_ns_from UInt64, -- the same in host wall clock, 0 = not mapped
	host_ns_to   UInt64,
	seq_first  UInt32,  -- for seq gaps: the missing seqs
	seq_last   UInt32,
	detail     String
) ENGINE = ReplacingMergeTree
PARTITION BY day
ORDER BY (host, ring, layer, counter, trace_id, loss_id);

-- The clocks: the host's clocks at the start of a dump (kind host_open),
-- and the firmware -> host estimates and steps of the join (estimate, step).
CREATE TABLE IF NOT EXISTS hmb.clock_local (
	day           Date,
	host          String,
	ring          String,
	trace_id      UInt64,
	clk_id        UInt64,  -- row id: order in its source
	kind          String,  -- host_open | estimate | step
	fw_ns         UInt64,  -- firmware time the row refers to (0 for host_open)
	host_ns       UInt64,  -- host wall clock (CLOCK_REALTIME) at that moment
	monotonic_ns  UInt64,  -- CLOCK_MONOTONIC at that moment (0 = not known)
	boottime_ns   UInt64,  -- CLOCK_BOOTTIME at that moment (0 = not known)
	offset_ns     Float64, -- host - firmware (estimate, step: the step size)
	drift_ppm     Float64,
	err_ns        Float64, -- error bound of offset_ns
	drift_err_ppm Float64
) ENGINE = ReplacingMergeTree
PARTITION BY day
ORDER BY (host, ring, trace_id, clk_id);

CREATE TABLE IF NOT EXISTS hmb.fw_records AS hmb.fw_records_local
	ENGINE = Distributed(hmb_fleet, hmb, fw_records_local, cityHash64(host));
CREATE TABLE IF NOT EXISTS hmb.commands AS hmb.commands_local
	ENGINE = Distributed(hmb_fleet, hmb, commands_local, cityHash64(host));
CREATE TABLE IF NOT EXISTS hmb.losses AS hmb.losses_local
	ENGINE = Distributed(hmb_fleet, hmb, losses_local, cityHash64(host));
CREATE TABLE IF NOT EXISTS hmb.clock AS hmb.clock_local
	ENGINE = Distributed(hmb_fleet, hmb, clock_local, cityHash64(host));

-- The drive's Persistent Event Log (NVMe log page 0Dh), exported with the
-- dump it was read beside (export --pel FILE): one row per event, placed
-- on the host's clock like the commands (host_ns: wall clock through the
-- dump's sidecar) with its bound, or not placed and why.
CREATE TABLE IF NOT EXISTS hmb.pel_events_local (
	day        Date,
	host       String,
	ring       String,
	trace_id   UInt64,
	pel_id     UInt64,  -- row id: the event's index in its log
	serial     String,  -- the log header's serial and model numbers
	model      String,
	event_type UInt8,   -- Event Type (0Dh thermal excursion, ...)
	event      String,  -- its name: thermal_excursion, power_on_reset, ...
	ctrl_ms    UInt64,  -- the controller's timestamp (ms)
	ts_origin  UInt8,   -- its origin: 0 since reset, 1 set by the host
	place      String,  -- placed | before_epoch | other_origin | after_read | before_boot | no_clock
	host_ns    UInt64,  -- host time (as commands.submit_ns), 0 = not placed
	bound_ns   UInt64,  -- +/- bound of host_ns
	fields     String   -- the event's fields, "name=value ..." (cut at 120 bytes)
) ENGINE = ReplacingMergeTree
PARTITION BY day
ORDER BY (host, serial, host_ns, trace_id, pel_id);

CREATE TABLE IF NOT EXISTS hmb.pel_events AS hmb.pel_events_local
	ENGINE = Distributed(hmb_fleet, hmb, pel_events_local, cityHash64(host));
