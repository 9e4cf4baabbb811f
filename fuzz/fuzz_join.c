// SPDX-License-Identifier: Apache-2.0
/*
 * The offline join (user/lib/model/join*.c, hmbtrace_join.h) over host commands
 * and firmware records the fuzzer's bytes shape.  Raw bytes would almost
 * never make commands of both sides agree, so the bytes steer a workload
 * instead: each command takes a few bytes that pick its queue and tag
 * (ids recur), its opcode, its latencies on both sides, and whether the
 * firmware paused, lost records, stepped its clock either way or wrote a
 * record twice around it; the host side may miss the command.  Bytes
 * exhausted: an ordinary command.
 *
 * Asserted: the causality invariant (a placed command called matched or
 * partial has every record inside its host window within the clock's
 * error bound), no record on two host commands, and every record given
 * out is one the dump holds, with the dump's time.
 */
#include <hmbtrace.h>
#include <hmbtrace_dict.h>
#include <hmbtrace_join.h>

#include "analyze.h"
#include "fuzz.h"

#define MAX_CMDS	600
#define MAX_RECS	(MAX_CMDS * 5 * 2)

struct frec {
	uint32_t seq;
	uint64_t ts;
	uint16_t opcode;
	uint8_t payload[24];
	uint16_t len;
};

static struct frec recs[MAX_RECS];
static size_t nrec;
static struct hmb_host_cmd host[MAX_CMDS];
static size_t nhost;
static uint8_t given[MAX_RECS];

static void put_rec(uint32_t seq, uint64_t ts, int phase, uint16_t q,
		    uint16_t cid, uint8_t opc, uint64_t slba)
{
	struct frec *r;

	if (nrec == MAX_RECS)
		return;
	r = &recs[nrec++];
	memset(r, 0, sizeof(*r));
	r->seq = seq;
	r->ts = ts;
	r->opcode = (uint16_t)(0x100 + phase - 1);
	memcpy(r->payload, &q, 2);
	memcpy(r->payload + 2, &cid, 2);
	r->len = 8;
	if (phase == 1) {	/* cmd_fetch: nsid 4, opc 8, nlb 10, slba 16 */
		r->payload[8] = opc;
		memcpy(r->payload + 16, &slba, 8);
		r->len = 24;
	}
}

/* The firmware's records of command @q/@cid, in the order it wrote them. */
static void workload(struct fz *f)
{
	uint64_t t = 1000000000, off = 5000000000ull;
	uint32_t seq = fz_u32(f);
	uint16_t gen[4][8] = { { 0 } };

	nrec = nhost = 0;
	for (unsigned int i = 0; i < MAX_CMDS && f->n; i++) {
		uint8_t a = fz_u8(f), b = fz_u8(f), c = fz_u8(f);
		uint16_t q = (uint16_t)(1 + (a & 3)), tag = (uint16_t)((a >> 2) & 7);
		uint16_t cid = (uint16_t)(gen[q - 1][tag]++ << 12 | tag);
		uint8_t opc = (uint8_t)(b & 1 ? 2 : b & 2 ? 1 : 0);
		uint64_t slba = opc ? (uint64_t)fz_u16(f) : 0;
		uint64_t submit = t, fw, x;
		bool traced = !(c & 1), seen = !(c & 2) || i < 40;

		t += 2000 + (uint64_t)(b >> 2) * 700;
		if (c & 4)		/* the firmware clock steps */
			off += c & 8 ? 1500000 : (uint64_t)-1500000;
		if ((c & 0x30) == 0x30)	/* records lost before it */
			seq += 1 + (c >> 6);
		fw = submit + 1000 + (uint64_t)(a >> 5) * 3000;
		x = fw;
		for (int p = 1; p <= 5; p++) {
			if (p == 2 || p == 3) {
				if (!opc)
					continue;
				x += p == 3 ? 20000 : 500;
			} else if (p > 1) {
				x += 800;
			}
			if (traced && !((c & 0xc0) == 0x40 && p == 5))
				put_rec(seq++, x + off, p, q, cid, opc, slba);
		}
		if (seen && nhost < MAX_CMDS) {
			struct hmb_host_cmd *h = &host[nhost++];

			memset(h, 0, sizeof(*h));
			h->submit_ns = submit;
			h->complete_ns = x + 3000;
			h->qid = q;
			h->cid = cid;
			h->slba = slba;
			h->nsid = 1;
			snprintf(h->opc, sizeof(h->opc), "%s",
				 opc == 2 ? "read" : opc ? "write" : "flush");
		}
	}
}

static int check_cmd(void *ctx, const struct hmb_cmd *c)
{
	(void)ctx;
	if (c->placed && (c->match == HMB_M_MATCHED ||
			  c->match == HMB_M_PARTIAL))
		FZ_ASSERT(c->in_window_err);
	for (int p = HMB_PHASE_FETCH; p < HMB_PHASE_COUNT; p++) {
		size_t k;

		if (!(c->fw.mask & (1u << p)))
			continue;
		for (k = 0; k < nrec && recs[k].seq != c->fw.seq[p]; k++)
			;
		FZ_ASSERT(k < nrec);
		FZ_ASSERT(recs[k].ts == c->fw.ts[p]);
		FZ_ASSERT(!given[k]);
		given[k] = 1;
	}
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct hmb_dict *dict;
	struct fz f = { .p = data, .n = size };
	struct hmb_error err = { 0 };
	struct hmb_join *j;

	if (!dict && dict_open(NULL, &dict))
		abort();
	workload(&f);
	j = hmb_join_new(dict);
	if (!j)
		abort();
	for (size_t k = 0; k < nrec; k++) {
		struct hmb_record rec = { 0 };

		rec.hdr.magic = HMB_RECORD_MAGIC;
		rec.hdr.seq = recs[k].seq;
		rec.hdr.ts_ns = recs[k].ts;
		rec.hdr.opcode = recs[k].opcode;
		rec.hdr.payload_len = recs[k].len;
		rec.payload = recs[k].payload;
		rec.kind = HMB_KIND_DATA;
		FZ_ASSERT(hmb_join_record(j, &rec) == 0);
	}
	for (size_t i = 0; i < nhost; i++)
		FZ_ASSERT(hmb_join_host(j, &host[i]) == 0);
	memset(given, 0, sizeof(given));
	FZ_ASSERT(hmb_join_run(j, 0, 4, &err) == 0);
	hmb_join_foreach(j, check_cmd, NULL);
	hmb_join_free(j);
	return 0;
}
