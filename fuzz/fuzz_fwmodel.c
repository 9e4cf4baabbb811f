// SPDX-License-Identifier: Apache-2.0
/*
 * The firmware command model (user/lib/model/fwmodel.c, hmbtrace_fwmodel.h)
 * over a dump stream of the shipped dictionary's events: commands joined
 * by (sqid, cid), phases, background windows, eviction when the in-flight
 * table is full.
 * The first input byte picks how many distinct keys the fuzzer's commands
 * are spread over, so that the table's limit is reached too.  Every
 * callback checks the model's own invariants (a step never runs
 * backwards: t0 <= t1; commands end once).
 */
#include <hmbtrace.h>
#include <hmbtrace_dict.h>

#include "analyze.h"
#include "hmbtrace_fwmodel.h"
#include "fuzz.h"

static uint64_t begun, ended;

static void cmd_begin(void *ctx, const struct hmb_fwm_cmd *c)
{
	(void)ctx;
	FZ_ASSERT(c->used);
	begun++;
}

static void cmd_step(void *ctx, const struct hmb_fwm_cmd *c,
		     enum hmb_phase from, uint64_t t0, enum hmb_phase to,
		     uint64_t t1)
{
	(void)ctx; (void)c; (void)from; (void)to;
	FZ_ASSERT(t0 <= t1);
}

static void cmd_end(void *ctx, const struct hmb_fwm_cmd *c,
		    enum hmb_fwm_end why)
{
	(void)ctx; (void)c;
	FZ_ASSERT(why <= HMB_FWM_END_EVICTED);
	ended++;
}

static void bg_window(void *ctx, const char *group, uint64_t t0, uint64_t t1,
		      unsigned int flags, uint8_t cpu)
{
	(void)ctx; (void)cpu; (void)flags;
	FZ_ASSERT(group && group[0]);
	FZ_ASSERT(t0 <= t1);
}

static const struct hmb_fwm_ops ops = {
	.cmd_begin = cmd_begin, .cmd_step = cmd_step, .cmd_end = cmd_end,
	.bg_window = bg_window,
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct hmb_dict *dict;
	struct hmb_buf_iter it;
	struct hmb_record rec;
	struct hmb_fwmodel m;
	unsigned int rep = 1;

	if (!dict && dict_open(NULL, &dict))
		abort();
	if (size < 1)
		return 0;
	/*
	 * Byte 0: repeat the stream this many times with the sqid bumped each
	 * time (many distinct keys from a small input: the eviction path).
	 */
	rep = 1 + (data[0] & 0x3f) * (data[0] & 0x40 ? 64 : 1);
	data++;
	size--;
	/* At most about 1 MiB of records per input: keep executions fast. */
	if (size && rep > (1u << 20) / size + 1)
		rep = (1u << 20) / size + 1;
	if (hmb_fwm_init(&m, dict, &ops, NULL))
		abort();
	begun = ended = 0;
	for (unsigned int k = 0; k < rep; k++) {
		uint8_t *copy = malloc(size ? size : 1);

		memcpy(copy, data, size);
		hmb_buf_iter_init(&it, copy, size, 0);
		while (hmb_buf_iter_next(&it, &rec, NULL) == 1) {
			const struct hmb_dict_event *ev =
				hmb_dict_lookup(dict, rec.hdr.opcode);

			if (rec.kind != HMB_KIND_DATA)
				continue;
			if (ev && ev->key_off[HMB_KEY_SQID] >= 0 &&
			    (size_t)ev->key_off[HMB_KEY_SQID] + 2 <= rec.hdr.payload_len) {
				uint8_t *q = (uint8_t *)rec.payload +
					     ev->key_off[HMB_KEY_SQID];
				uint16_t sq;

				memcpy(&sq, q, 2);
				sq = (uint16_t)(sq + k);
				memcpy(q, &sq, 2);
			}
			hmb_fwm_add(&m, &rec);
		}
		free(copy);
	}
	FZ_ASSERT(m.open <= HMB_FWM_MAX_INFLIGHT);
	hmb_fwm_finish(&m);
	FZ_ASSERT(begun == ended);
	return 0;
}
