// SPDX-License-Identifier: GPL-2.0
/*
 * nvmepci.c - trace slices of the patched nvme-pci driver as trace rings.
 *
 * nvme (kernel/patches) publishes each controller's HMB trace slice as the
 * auxiliary device "nvme.hmb_trace.<instance>" once the controller has it.
 * The driver core binds us to the slices that exist when this module is
 * loaded and to those that appear later, and unbinds us when the module is
 * unloaded or when nvme deletes the device (controller removal, HMB freed),
 * so either module can be loaded first and neither depends on the other.
 * nvme wrote the ring header and its controller may be producing into the
 * slice: it is adopted after validation, never rewritten (docs/format.md).
 */
#include <linux/auxiliary_bus.h>
#include <linux/err.h>
#include <linux/module.h>

#include "hmb_trace_priv.h"

static bool nvme_pci = true;
module_param(nvme_pci, bool, 0444);
MODULE_PARM_DESC(nvme_pci, "bind to the HMB trace slices of the patched nvme driver (nvme hmb_trace_kb=)");

static int hmb_nvmepci_probe(struct auxiliary_device *adev,
			     const struct auxiliary_device_id *id)
{
	struct nvme_hmb_trace_slice *s =
		container_of(adev, struct nvme_hmb_trace_slice, adev);
	struct hmb_trace_ring *ring;

	/* The PCI function owns the coherent mapping the consumers mmap. */
	ring = hmb_ring_register(adev->dev.parent, s->kaddr, s->dma, s->size,
				 s->ctrl, NVME_HMB_TRACE_PROVIDER_NVME_PCI,
				 NULL, s->sync);
	if (IS_ERR(ring)) {
		dev_err(&adev->dev, "HMB trace slice of %s not adopted (%ld)\n",
			s->ctrl, PTR_ERR(ring));
		return PTR_ERR(ring);
	}
	auxiliary_set_drvdata(adev, ring);
	return 0;
}

static void hmb_nvmepci_remove(struct auxiliary_device *adev)
{
	/* nvme frees the slice once this returns. */
	hmb_trace_unregister_ring(auxiliary_get_drvdata(adev));
}

static const struct auxiliary_device_id hmb_nvmepci_ids[] = {
	{ .name = NVME_HMB_TRACE_AUX_MATCH },
	{ }
};
MODULE_DEVICE_TABLE(auxiliary, hmb_nvmepci_ids);

static struct auxiliary_driver hmb_nvmepci_driver = {
	.name = "nvme-pci",
	.id_table = hmb_nvmepci_ids,
	.probe = hmb_nvmepci_probe,
	.remove = hmb_nvmepci_remove,
};

int hmb_nvmepci_init(void)
{
	if (!nvme_pci)
		return 0;
	return auxiliary_driver_register(&hmb_nvmepci_driver);
}

void hmb_nvmepci_exit(void)
{
	if (nvme_pci)
		auxiliary_driver_unregister(&hmb_nvmepci_driver);
}
