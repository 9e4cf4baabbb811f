// SPDX-License-Identifier: GPL-2.0
/*
 * ivshmem.c - QEMU ivshmem-plain (1af4:1110) as a trace ring provider.
 *
 * BAR2 is a file shared with the VM host; a process there (hmb-fwsim)
 * initialises the ring header and produces records exactly as firmware
 * would DMA them into the HMB.  On the host side it is ordinary RAM, so it
 * is mapped write-back.
 */
#include <linux/io.h>
#include <linux/module.h>
#include <linux/pci.h>

#include "hmb_trace_priv.h"

#define HMB_IVSHMEM_BAR		2

static bool ivshmem = true;
module_param(ivshmem, bool, 0444);
MODULE_PARM_DESC(ivshmem, "bind to ivshmem-plain devices (1af4:1110) as trace ring providers");

/**
 * struct hmb_ivshmem - one bound ivshmem device.
 * @kaddr: write-back mapping of BAR2.
 * @ring: the registered ring.
 */
struct hmb_ivshmem {
	void *kaddr;
	struct hmb_trace_ring *ring;
};

static int hmb_ivshmem_probe(struct pci_dev *pdev,
			     const struct pci_device_id *id)
{
	resource_size_t start = pci_resource_start(pdev, HMB_IVSHMEM_BAR);
	resource_size_t len = pci_resource_len(pdev, HMB_IVSHMEM_BAR);
	struct hmb_ivshmem *iv;
	int ret;

	if (!len || !(pci_resource_flags(pdev, HMB_IVSHMEM_BAR) & IORESOURCE_MEM)) {
		dev_err(&pdev->dev, "no shared memory BAR%d\n", HMB_IVSHMEM_BAR);
		return -ENODEV;
	}
	iv = devm_kzalloc(&pdev->dev, sizeof(*iv), GFP_KERNEL);
	if (!iv)
		return -ENOMEM;
	ret = pcim_enable_device(pdev);
	if (ret)
		return ret;
	/*
	 * BAR2 is deliberately not claimed with pci_request_region(): on
	 * kernels with IO_STRICT_DEVMEM that would forbid mapping resource2,
	 * through which the guest-side tests play the firmware.  The memory
	 * is shared with the VM host anyway.
	 */
	iv->kaddr = memremap(start, len, MEMREMAP_WB);
	if (!iv->kaddr)
		return -ENOMEM;
	iv->ring = hmb_trace_register_ring(&pdev->dev, iv->kaddr, start, len,
					   "ivshmem",
					   NVME_HMB_TRACE_PROVIDER_IVSHMEM);
	if (IS_ERR(iv->ring)) {
		ret = PTR_ERR(iv->ring);
		dev_err(&pdev->dev, "not registering the shared memory as a trace ring (%d)\n",
			ret);
		memunmap(iv->kaddr);
		return ret;
	}
	pci_set_drvdata(pdev, iv);
	return 0;
}

static void hmb_ivshmem_remove(struct pci_dev *pdev)
{
	struct hmb_ivshmem *iv = pci_get_drvdata(pdev);

	/* After this no user mapping or kernel path touches BAR2. */
	hmb_trace_unregister_ring(iv->ring);
	memunmap(iv->kaddr);
}

static const struct pci_device_id hmb_ivshmem_ids[] = {
	{ PCI_DEVICE(PCI_VENDOR_ID_REDHAT_QUMRANET, 0x1110) },
	{ }
};
MODULE_DEVICE_TABLE(pci, hmb_ivshmem_ids);

static struct pci_driver hmb_ivshmem_driver = {
	.name = HMB_TRACE_DRV_NAME "-ivshmem",
	.id_table = hmb_ivshmem_ids,
	.probe = hmb_ivshmem_probe,
	.remove = hmb_ivshmem_remove,
};

int hmb_ivshmem_init(void)
{
	if (!ivshmem)
		return 0;
	return pci_register_driver(&hmb_ivshmem_driver);
}

void hmb_ivshmem_exit(void)
{
	if (ivshmem)
		pci_unregister_driver(&hmb_ivshmem_driver);
}
