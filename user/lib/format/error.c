// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Error codes, their names and fixed descriptions, and the helper that
 * fills struct hmb_error.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"

static const struct {
	int code;
	const char *name;
	const char *desc;
} errtab[] = {
	{ HMB_OK, "HMB_OK", "success" },
	{ HMB_E_INVAL, "HMB_E_INVAL", "invalid argument" },
	{ HMB_E_IO, "HMB_E_IO", "input/output error" },
	{ HMB_E_NOMEM, "HMB_E_NOMEM", "out of memory" },
	{ HMB_E_RING_MAGIC, "HMB_E_RING_MAGIC", "bad ring header magic" },
	{ HMB_E_RING_VERSION, "HMB_E_RING_VERSION", "unsupported ring version" },
	{ HMB_E_RING_SIZE, "HMB_E_RING_SIZE", "bad ring size" },
	{ HMB_E_RING_AREA_OFF, "HMB_E_RING_AREA_OFF", "bad record area offset" },
	{ HMB_E_RING_SHORT, "HMB_E_RING_SHORT",
	  "mapping or image shorter than the ring" },
	{ HMB_E_HEAD_BACKWARDS, "HMB_E_HEAD_BACKWARDS", "head moved backwards" },
	{ HMB_E_HEAD_AHEAD, "HMB_E_HEAD_AHEAD",
	  "head more than ring_size ahead of tail" },
	{ HMB_E_HEAD_MISALIGNED, "HMB_E_HEAD_MISALIGNED",
	  "cursor not 8-byte aligned" },
	{ HMB_E_HEAD_IN_GAP, "HMB_E_HEAD_IN_GAP", "head inside a wrap gap" },
	{ HMB_E_REC_MAGIC, "HMB_E_REC_MAGIC", "bad record magic" },
	{ HMB_E_REC_LEN, "HMB_E_REC_LEN", "record payload_len over 4064" },
	{ HMB_E_REC_CROSS_LAP, "HMB_E_REC_CROSS_LAP",
	  "record crosses the end of the lap" },
	{ HMB_E_REC_BEYOND_HEAD, "HMB_E_REC_BEYOND_HEAD",
	  "record extends past head" },
	{ HMB_E_MARKER_PAYLOAD, "HMB_E_MARKER_PAYLOAD",
	  "wrap marker with a payload" },
	{ HMB_E_RING_CHANGED, "HMB_E_RING_CHANGED",
	  "ring record changed between validation and write" },
	{ HMB_E_TRUNC_HDR, "HMB_E_TRUNC_HDR",
	  "end of file inside a record header" },
	{ HMB_E_TRUNC_PAYLOAD, "HMB_E_TRUNC_PAYLOAD",
	  "end of file inside a record payload" },
	{ HMB_E_UNKNOWN_MAGIC, "HMB_E_UNKNOWN_MAGIC",
	  "neither a dump (RECT) nor a ring image (HMBT)" },
	{ HMB_E_SIDECAR, "HMB_E_SIDECAR", "bad sidecar metadata file" },
	{ HMB_E_SIDECAR_VERSION, "HMB_E_SIDECAR_VERSION",
	  "unsupported sidecar abi_version" },
	{ HMB_E_NOT_DUMP, "HMB_E_NOT_DUMP", "a ring image, not a dump" },
	{ HMB_E_DICT, "HMB_E_DICT", "bad event dictionary" },
};

const char *hmb_strerror(int code)
{
	for (size_t i = 0; i < sizeof(errtab) / sizeof(errtab[0]); i++)
		if (errtab[i].code == code)
			return errtab[i].desc;
	return "unknown error";
}

const char *hmb_errname(int code)
{
	for (size_t i = 0; i < sizeof(errtab) / sizeof(errtab[0]); i++)
		if (errtab[i].code == code)
			return errtab[i].name;
	return "HMB_E_UNKNOWN";
}

int hmb__err(struct hmb_error *err, int code, int sys_errno, uint64_t offset,
	     const char *fmt, ...)
{
	va_list ap;

	if (!err)
		return code;
	err->code = code;
	err->sys_errno = sys_errno;
	err->offset = offset;
	va_start(ap, fmt);
	vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
	va_end(ap);
	/* One line, always: a hostile name must not break the log format. */
	for (char *p = err->msg; *p; p++)
		if (*p == '\n' || *p == '\r')
			*p = ' ';
	return code;
}
