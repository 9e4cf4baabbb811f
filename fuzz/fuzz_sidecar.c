// SPDX-License-Identifier: Apache-2.0
/*
 * Sidecar parser (docs/format.md 12.4): hmb_sidecar_parse() on the input,
 * and through the file path (hmb_sidecar_read, hmb_sidecar_epochs) on the
 * same bytes: both must agree.  A sidecar that parses is then appended to
 * (an epoch and a restart line, as the daemon does) in a scratch
 * directory, and the result must parse again with one more epoch.
 */
#include <errno.h>
#include <fcntl.h>
#include <hmbtrace.h>

#include "fuzz.h"

static char dir[64];

static void write_file(const char *path, const uint8_t *d, size_t n)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

	if (fd < 0)
		abort();
	if (n && write(fd, d, n) != (ssize_t)n)
		abort();
	close(fd);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint64_t ep[HMB_SIDECAR_MAX_EPOCHS], ep2[HMB_SIDECAR_MAX_EPOCHS];
	struct hmb_sidecar a, b;
	struct hmb_error ea, eb;
	size_t na = 0, nb = 0;
	char path[128];
	int ra, rb;

	if (!dir[0]) {
		/* tmpfs: the fsyncs of every update cost nothing there. */
		snprintf(dir, sizeof(dir), "%s/hmb-fuzz-sidecar.XXXXXX",
			 access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp");
		if (!mkdtemp(dir))
			abort();
	}
	snprintf(path, sizeof(path), "%s/x.meta", dir);
	ra = hmb_sidecar_parse((const char *)data, size, path, &a, ep,
			       HMB_SIDECAR_MAX_EPOCHS, &na, &ea);
	write_file(path, data, size);
	rb = size <= (16u << 20) ? hmb_sidecar_read(path, &b, &eb) : ra;
	FZ_ASSERT(ra == rb);
	if (ra == 0) {
		struct hmb_sidecar_restart r = {
			.dump_offset = 4096, .tail = UINT64_MAX - 7,
			.ring_size = 4096, .source = "/dev/nvme-hmb-trace0",
		};

		FZ_ASSERT(a.n_epochs == b.n_epochs && a.n_epochs == na);
		FZ_ASSERT(hmb_sidecar_epochs(path, ep2, HMB_SIDECAR_MAX_EPOCHS,
					     &nb, &eb) == 0 && nb == na);
		FZ_ASSERT(!memcmp(ep, ep2, na * sizeof(ep[0])));
		rb = hmb_sidecar_append_epoch(path, 8192, &eb);
		if (rb == 0) {
			FZ_ASSERT(hmb_sidecar_append_restart(path, &r, &eb) == 0);
			FZ_ASSERT(hmb_sidecar_read(path, &b, &eb) == 0);
			FZ_ASSERT(b.n_epochs == a.n_epochs + 1);
			FZ_ASSERT(b.n_restarts == a.n_restarts + 1);
			FZ_ASSERT(b.realtime_ns == a.realtime_ns &&
				  b.abi_version == a.abi_version);
		} else {
			/* Only the epoch bound may refuse a valid sidecar. */
			FZ_ASSERT(na == HMB_SIDECAR_MAX_EPOCHS);
		}
	}
	unlink(path);
	return 0;
}
