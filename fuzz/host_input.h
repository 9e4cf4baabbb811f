/* SPDX-License-Identifier: Apache-2.0 */
#ifndef HMB_FUZZ_HOST_INPUT_H
#define HMB_FUZZ_HOST_INPUT_H

#include <stddef.h>
#include <stdint.h>

struct host_cmd;

/* See host_input.c: parse --host input, call @each per command. */
long fuzz_host_parse(const uint8_t *data, size_t size,
		     void (*each)(const struct host_cmd *c, void *ctx),
		     void *ctx);

#endif
