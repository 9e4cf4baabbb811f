// SPDX-License-Identifier: Apache-2.0
/*
 * The shipped event dictionary (share/hmb-events.dict) built into the
 * analyzer, so --names and CTF conversion work without an installed share/
 * directory.  NUL-terminated; hmb_analyze_dict_end points past the NUL.
 */
#ifndef HMB_DICT_PATH
#error "HMB_DICT_PATH must name share/hmb-events.dict"
#endif
__asm__(".section .rodata\n"
	".global hmb_analyze_dict\n"
	".type hmb_analyze_dict, @object\n"
	"hmb_analyze_dict:\n"
	".incbin \"" HMB_DICT_PATH "\"\n"
	".byte 0\n"
	".global hmb_analyze_dict_end\n"
	"hmb_analyze_dict_end:\n"
	".previous\n"
	".section .note.GNU-stack,\"\",@progbits\n");
