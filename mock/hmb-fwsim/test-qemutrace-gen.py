#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""test-qemutrace-gen.py FILE: the synthetic QEMU NVMe trace of
test-qemutrace.sh (two queues, reads, writes, a flush, an admin
completion, noise lines), seeded: the same file every run."""

import random, sys
random.seed(7)
out = open(sys.argv[1], "w")
t = 1795952118.000000
lines = []
def emit(s):
    global t
    lines.append("6131@%.6f:%s" % (t, s))
out_cmds = []
# 3000 commands over ~3 s, two queues; some cids in flight on both queues
inflight = []
for i in range(3000):
    t += 0.001
    sq = 1 + (i % 2)
    cid = ((i // 7) % 16) << 12 | (i % 40)
    opc = [0x2, 0x2, 0x1, 0x0][i % 4]
    emit("pci_nvme_io_cmd cid %d nsid 0x1 sqid %d opc 0x%x opname 'X'" % (cid, sq, opc))
    if opc == 0x2:
        emit("pci_nvme_read cid %d nsid 1 nlb 8 count 4096 lba 0x%x" % (cid, i * 8))
    elif opc == 0x1:
        emit("pci_nvme_write cid %d opname 'NVME_NVM_CMD_WRITE' nsid 1 nlb 8 count 4096 lba 0x%x" % (cid, i * 8))
    inflight.append((sq, cid, opc))
    if len(inflight) > 1 or i == 2999:
        for (s, c, o) in inflight:
            t += 0.0001
            if o != 0:
                emit("pci_nvme_rw_complete_cb cid %d blk 'drv0'" % c)
            emit("pci_nvme_enqueue_req_completion cid %d cqid %d dw0 0x0 dw1 0x0 status 0x0" % (c, s))
        inflight = []
    if i == 100:
        emit("pci_nvme_enqueue_req_completion cid 9 cqid 0 dw0 0x0 dw1 0x0 status 0x0")
        lines.append("some unrelated line")
out.write("\n".join(lines) + "\n")
