/* SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause) */
/*
 * nvme_core.h - the few nvme_core types the agent's BPF program reads, for
 * CO-RE.  The build machine's kernel has no NVMe driver, so these types are
 * not in its BTF (nor in the vmlinux.h dumped from it); libbpf relocates the
 * field offsets below against the target kernel's nvme_core module BTF at
 * load time.  The ___hmb suffix keeps them apart from any definition in
 * vmlinux.h; CO-RE ignores it when matching names.
 *
 * struct nvme_command itself is read by its wire layout (NVMe base spec),
 * which no kernel can change:
 */
#ifndef HMB_NVME_CORE_H
#define HMB_NVME_CORE_H

#define NVME_CMD_OPCODE_OFF	0	/* u8 */
#define NVME_CMD_CID_OFF	2	/* u16: genctr << 12 | tag on >= 5.15 */
#define NVME_CMD_NSID_OFF	4	/* u32 */
#define NVME_CMD_SLBA_OFF	40	/* u64 (read/write) */
#define NVME_CMD_NLB_OFF	48	/* u16, 0-based (read/write) */
#define NVME_CMD_HEAD		56	/* the bytes read at setup: through cdw13 */

struct nvme_ctrl___hmb {
	int instance;			/* N of /dev/nvmeN */
} __attribute__((preserve_access_index));

/* The per-request PDU (blk_mq_rq_to_pdu(req)), first in nvme_iod. */
struct nvme_request___hmb {
	void *cmd;			/* struct nvme_command * */
	__u16 status;
	struct nvme_ctrl___hmb *ctrl;
} __attribute__((preserve_access_index));

#endif /* HMB_NVME_CORE_H */
