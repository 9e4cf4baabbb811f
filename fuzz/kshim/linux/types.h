/* SPDX-License-Identifier: Apache-2.0 */
/* The uapi types (__u32, __le32, ...), then the kernel's own (kshim.h). */
#include_next <linux/types.h>
#include <kshim.h>
