// SPDX-License-Identifier: Apache-2.0
/*
 * nvme-getlog-shim.so: LD_PRELOAD under nvme-cli or `hmb-trace-analyze
 * pel --device` so that they read a log page from a file instead of a
 * drive (pel-nvmecli.py, pel-device.py).  Their admin passthrough ioctl
 * on any file (pointed at /dev/null, a character device as nvme-cli
 * wants; 32- or 64-bit result) is answered here: Get Log Page (02h) for
 * log $PEL_SHIM_LID gets the bytes of $PEL_SHIM_FILE at the command's log
 * page offset, zeroes past its end; every other command fails with
 * Invalid Opcode, and so does Get Log Page with the log specific field
 * $PEL_SHIM_FAIL_LSP when set (Invalid Field in Command, 02h).  Get
 * Features Timestamp (0Ah, FID 0Eh) gets the host's CLOCK_REALTIME in ms
 * plus $PEL_SHIM_TS_SKEW_MS, origin 1 (set by the host), unless
 * $PEL_SHIM_NO_TS is set (Invalid Field).  Each command is logged to
 * stderr as "shim: opc 0xNN lid 0xNN lsp N offset N len N" (lid: the low
 * byte of CDW10).
 */
#include <dlfcn.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/ioctl.h>
#include <linux/nvme_ioctl.h>

int ioctl(int fd, unsigned long req, ...)
{
	int (*real)(int, unsigned long, void *);
	struct nvme_passthru_cmd *c;
	const char *path, *lid, *fail;
	uint64_t off;
	va_list ap;
	void *arg;
	FILE *f;

	va_start(ap, req);
	arg = va_arg(ap, void *);
	va_end(ap);
	if (req != NVME_IOCTL_ADMIN_CMD && req != NVME_IOCTL_ADMIN64_CMD) {
		real = (int (*)(int, unsigned long, void *))dlsym(RTLD_NEXT,
								  "ioctl");
		return real(fd, req, arg);
	}
	c = arg;
	off = c->cdw12 | (uint64_t)c->cdw13 << 32;
	fprintf(stderr, "shim: opc 0x%02x lid 0x%02x lsp %u offset %llu len "
		"%u\n", c->opcode, c->cdw10 & 0xff, (c->cdw10 >> 8) & 0x7f,
		(unsigned long long)off, c->data_len);
	if (c->opcode == 0x0a && (c->cdw10 & 0xff) == 0x0e && c->data_len >= 8) {
		const char *skew = getenv("PEL_SHIM_TS_SKEW_MS");
		struct timespec t;
		uint64_t ms;

		if (getenv("PEL_SHIM_NO_TS"))
			return 0x02;
		clock_gettime(CLOCK_REALTIME, &t);
		ms = (uint64_t)t.tv_sec * 1000 + (uint64_t)t.tv_nsec / 1000000;
		ms += (uint64_t)(skew ? strtoll(skew, NULL, 0) : 0);
		ms = (ms & ((1ULL << 48) - 1)) | 1ULL << 49;
		memcpy((void *)(uintptr_t)c->addr, &ms, 8);
		return 0;
	}
	path = getenv("PEL_SHIM_FILE");
	lid = getenv("PEL_SHIM_LID");
	if (c->opcode != 0x02 || !path || !lid ||
	    (c->cdw10 & 0xff) != strtoul(lid, NULL, 0))
		return 0x01;		/* Invalid Command Opcode */
	fail = getenv("PEL_SHIM_FAIL_LSP");
	if (fail && ((c->cdw10 >> 8) & 0x7f) == strtoul(fail, NULL, 0))
		return 0x02;		/* Invalid Field in Command */
	memset((void *)(uintptr_t)c->addr, 0, c->data_len);
	f = fopen(path, "rb");
	if (!f)
		return 0x06;		/* Internal Error */
	if (fseek(f, (long)off, SEEK_SET) == 0 &&
	    fread((void *)(uintptr_t)c->addr, 1, c->data_len, f) == 0 &&
	    ferror(f)) {
		fclose(f);
		return 0x06;
	}
	fclose(f);
	if (req == NVME_IOCTL_ADMIN64_CMD)
		((struct nvme_passthru_cmd64 *)arg)->result = 0;
	else
		c->result = 0;
	return 0;
}
