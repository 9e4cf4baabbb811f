// SPDX-License-Identifier: Apache-2.0
/*
 * hmb-fwsim --from-qemu-trace: QEMU's NVMe trace lines (pci_nvme_io_cmd,
 * pci_nvme_read/write, pci_nvme_rw_complete_cb,
 * pci_nvme_enqueue_req_completion, with -msg timestamp=on prefixes) turned
 * into firmware records in a ring (qt_main, through a memory file).  The
 * ring it produced must then read back cleanly through the consumer.
 */
#include <signal.h>
#include <hmbtrace.h>

#include "fuzz.h"
#include "qemutrace.h"

#ifndef HMB_DICT_PATH
#error "HMB_DICT_PATH must name share/hmb-events.dict"
#endif

#define RING (64u << 10)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t *region;
	static FILE *devnull;
	static uint8_t out[RING];
	volatile sig_atomic_t stop = 0;
	struct hmb_producer p;
	struct hmb_consumer *c;
	struct hmb_error err;
	struct qt_opts o;
	char path[64];
	uint64_t avail;
	size_t len;
	int fd;

	if (!region) {
		region = aligned_alloc(64, 64 + RING);
		devnull = fopen("/dev/null", "w");
		if (!region || !devnull)
			abort();
	}
	fd = fz_memfd(data, size);
	if (fd < 0)
		return 0;
	fz_fd_path(fd, path, sizeof(path));
	if (hmb_producer_init(&p, region, 64 + RING, RING, 0, &err))
		abort();
	qt_defaults(&o);
	o.input = path;
	o.dict = HMB_DICT_PATH;
	o.bg_rate = size && (data[0] & 1) ? 50 : 0;
	qt_main(&p, &o, &stop, devnull);
	close(fd);
	/* Whatever it wrote must be a valid ring (drop mode, no consumer). */
	FZ_ASSERT(hmb_consumer_open(&c, region, 64 + RING, hmb_publish_store,
				    region, &err) == 0);
	FZ_ASSERT(hmb_consumer_poll(c, &avail, &err) == 0);
	FZ_ASSERT(hmb_consumer_read(c, out, sizeof(out), &len, &err) == 0);
	FZ_ASSERT(len <= avail);
	hmb_consumer_close(c);
	return 0;
}
