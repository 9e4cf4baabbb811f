// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * dictblob.c - share/hmb-events.dict as shipped, built into the library so
 * that every program decodes without an installed share/ directory.
 *
 * The text's labels are hidden and hmb_dict_builtin() hands it out: an
 * exported object would be copied into each executable that uses it at its
 * size when that one was linked, so a longer dictionary in a newer library
 * would be cut off there.
 */
#include "hmbtrace_dict.h"

#ifndef HMB_DICT_PATH
#error "HMB_DICT_PATH must name share/hmb-events.dict"
#endif

extern const char hmb_dict_text[] __attribute__((visibility("hidden")));
extern const size_t hmb_dict_text_len __attribute__((visibility("hidden")));

/* The text, a NUL after it, then its length without the NUL. */
__asm__(".section .rodata\n"
	".global hmb_dict_text\n"
	".hidden hmb_dict_text\n"
	".type hmb_dict_text, @object\n"
	"hmb_dict_text:\n"
	".incbin \"" HMB_DICT_PATH "\"\n"
	".Lhmb_dict_text_end:\n"
	".byte 0\n"
	".size hmb_dict_text, . - hmb_dict_text\n"
	".balign 8\n"
	".global hmb_dict_text_len\n"
	".hidden hmb_dict_text_len\n"
	".type hmb_dict_text_len, @object\n"
	"hmb_dict_text_len:\n"
	".quad .Lhmb_dict_text_end - hmb_dict_text\n"
	".size hmb_dict_text_len, 8\n"
	".previous\n");

const char *hmb_dict_builtin(size_t *len)
{
	if (len)
		*len = hmb_dict_text_len;
	return hmb_dict_text;
}
