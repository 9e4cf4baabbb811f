// SPDX-License-Identifier: GPL-2.0
/*
 * dict_blob.c - the shipped event dictionary (share/hmb-events.dict),
 * embedded so that hmb-trace-conform checks payload lengths without an installed share/ directory.
 * NUL-terminated; hmb_conform_dict_end points past the NUL.
 */
#ifndef HMB_DICT_PATH
#error "HMB_DICT_PATH must name share/hmb-events.dict"
#endif
__asm__(".section .rodata\n"
	".global hmb_conform_dict\n"
	".type hmb_conform_dict, @object\n"
	"hmb_conform_dict:\n"
	".incbin \"" HMB_DICT_PATH "\"\n"
	".byte 0\n"
	".global hmb_conform_dict_end\n"
	"hmb_conform_dict_end:\n"
	".previous\n");
