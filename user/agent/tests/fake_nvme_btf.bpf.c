// SPDX-License-Identifier: GPL-2.0
/*
 * fake_nvme_btf.bpf.c - BTF for t_bpf_join's verifier check of the NVMe
 * programs on the build machine, whose kernel has no nvme_core: this
 * machine's kernel types plus struct nvme_request / nvme_ctrl laid out as
 * in Linux 6.1 (drivers/nvme/host/nvme.h).  Only its .BTF is used, as
 * libbpf's btf_custom_path for CO-RE relocations.
 */
#include "vmlinux.h"

struct nvme_ctrl {
	bool comp_seen;
	int state;
	bool identified;
	int instance;
};

struct nvme_request {
	void *cmd;
	__u64 result;
	__u8 genctr;
	__u8 retries;
	__u8 flags;
	__u16 status;
	unsigned long start_time;
	struct nvme_ctrl *ctrl;
};

struct nvme_request fake_nvme_request;
struct nvme_ctrl fake_nvme_ctrl;
struct request fake_request;
struct request_queue fake_request_queue;
struct blk_mq_hw_ctx fake_hctx;
struct gendisk fake_gendisk;
struct bpf_raw_tracepoint_args fake_raw_tp_args;
