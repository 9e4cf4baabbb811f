/* SPDX-License-Identifier: Apache-2.0 */
/* kshim.h has what the module takes from here (fuzz_kbridge). */
#include <kshim.h>
