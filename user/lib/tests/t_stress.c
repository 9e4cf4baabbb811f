// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Stress: a producer thread and a consumer thread on one shared ring.
 *
 * TRY mode (nothing may drop): for ring sizes 4 KiB..4 MiB, every record
 * must arrive exactly once, in order, byte-identical (the consumer
 * regenerates each payload from its seq), and both wrap cases (marker;
 * fewer than 32 bytes left) must be hit in every ring size: the producer
 * steers one lap in four towards each case; all other sizes are random.
 *
 * DROP mode with a slow consumer: the loss the consumer's accounting finds
 * in the seq gaps equals what the producer dropped.
 *
 * Env: HMB_STRESS_RECORDS (total TRY-mode records over all ring sizes;
 * default 10M, 2M under ASan), HMB_STRESS_SEED (default: time).
 */
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "hmbtrace.h"
#include "hmbtrace_util.h"
#include "tap.h"

#if defined(__SANITIZE_ADDRESS__)
#define DEFAULT_RECORDS 2000000ULL
#else
#define DEFAULT_RECORDS 10000000ULL
#endif

static uint64_t splitmix(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static uint64_t g_seed;

/* The payload of record @seq: a function of the seed and seq only. */
static void gen_payload(uint8_t *p, uint32_t seq, unsigned len)
{
	uint64_t s = g_seed ^ ((uint64_t)seq << 20), v;
	unsigned i = 0;

	for (; i + 8 <= len; i += 8) {
		v = splitmix(&s);
		memcpy(p + i, &v, 8);
	}
	if (i < len) {
		v = splitmix(&s);
		memcpy(p + i, &v, len - i);
	}
}

struct run {
	uint8_t *ring;
	uint32_t rs;
	uint64_t n;		/* records to produce (TRY) or attempt (DROP) */
	int mode;
	uint16_t *lens;		/* payload_len by seq */
	useconds_t consumer_nap;
	/* producer results */
	struct hmb_producer p;
	/* consumer results */
	uint64_t got, markers, errors, cursor;
	struct hmb_consumer_counts cn;	/* the consumer's own counts */
	bool overflow_seen;
	struct hmb_acct acct;
	char first_error[400];
};

static unsigned choose_len(struct run *r, uint64_t *rng, int64_t *steered)
{
	uint64_t head = r->p.head, rem = r->rs - (head & (r->rs - 1));
	int64_t lap = head / r->rs;
	uint64_t x = splitmix(rng);

	if (lap != *steered && !(lap & 1) && rem <= HMB_RECORD_MAX_SIZE + 64) {
		*steered = lap;
		if (!(lap & 2)) {
			/* Leave 8, 16 or 24 bytes: the next record wraps
			 * implicitly (it is at least 32 bytes). */
			uint64_t left = 8 * (1 + x % 3), s = rem - left;

			if (rem > left && s >= 32 && s <= HMB_RECORD_MAX_SIZE) {
				unsigned len = s - 32, k = (x >> 8) % 8;

				return len >= 8 ? len - k : len;
			}
		} else if (rem >= 32 && rem < HMB_RECORD_MAX_SIZE) {
			/* Too big for the rest of the lap: a marker. */
			uint64_t lo = rem - 32 + 1;

			return lo + (x >> 8) % (HMB_RECORD_MAX_PAYLOAD + 1 - lo);
		}
	}
	if (x % 8 == 0)
		return (x >> 8) % (HMB_RECORD_MAX_PAYLOAD + 1);
	return (x >> 8) % 257;
}

static void *producer(void *arg)
{
	struct run *r = arg;
	static __thread uint8_t pl[HMB_RECORD_MAX_PAYLOAD];
	uint64_t rng = g_seed ^ r->rs;
	int64_t steered = -1;

	for (uint64_t i = 0; i < r->n; i++) {
		uint32_t seq = r->p.next_seq;
		unsigned len = choose_len(r, &rng, &steered);
		struct hmb_event ev = {
			.ts_ns = (uint64_t)seq * 3 + 7,
			.opcode = (uint16_t)(seq * 7),
			.cpu = (uint8_t)(seq & 7),
			.payload_len = len,
			.payload = pl,
		};
		int rc;

		if (r->mode == HMB_EMIT_TRY && r->rs < HMB_RECORD_SIZE(len))
			ev.payload_len = len = r->rs - 32;
		r->lens[seq] = len;
		gen_payload(pl, seq, len);
		while ((rc = hmb_producer_emit(&r->p, &ev, r->mode)) ==
		       HMB_EMIT_FULL)
			sched_yield();
		if (rc < 0)
			abort();
	}
	if (r->mode == HMB_EMIT_DROP) {
		/* One last record that must get through: makes the drops at
		 * the end visible as a gap. */
		uint32_t seq = r->p.next_seq;
		struct hmb_event ev = { .ts_ns = (uint64_t)seq * 3 + 7,
					.opcode = (uint16_t)(seq * 7),
					.cpu = (uint8_t)(seq & 7) };

		r->lens[seq] = 0;
		while (hmb_producer_emit(&r->p, &ev, HMB_EMIT_TRY) ==
		       HMB_EMIT_FULL)
			sched_yield();
	}
	return NULL;
}

static void fail(struct run *r, const char *what, uint64_t seq)
{
	if (!r->errors++)
		snprintf(r->first_error, sizeof(r->first_error),
			 "%.300s at seq %" PRIu64, what, seq);
}

static void *consumer(void *arg)
{
	struct run *r = arg;
	size_t cap = 256 * 1024, len;
	uint8_t *buf = malloc(cap), *exp = malloc(HMB_RECORD_MAX_PAYLOAD);
	uint32_t expected = 0;
	uint64_t last_seq = r->n + (r->mode == HMB_EMIT_DROP ? 1 : 0);
	struct hmb_consumer *c;
	struct hmb_error e;
	int rc;

	if (hmb_consumer_open(&c, r->ring, HMB_RECORD_AREA_OFF + r->rs,
			      hmb_publish_store, r->ring, &e)) {
		fail(r, e.msg, 0);
		goto out;
	}
	while (expected < last_seq) {
		struct hmb_buf_iter it;
		struct hmb_record rec;
		uint64_t avail;

		if (hmb_consumer_poll(c, &avail, &e)) {
			fail(r, e.msg, expected);
			break;
		}
		if (hmb_consumer_flags(c) & HMB_RING_FLAG_OVERFLOWED)
			r->overflow_seen = true;
		if (!avail) {
			sched_yield();
			continue;
		}
		rc = hmb_consumer_read(c, buf, cap, &len, &e);
		if (rc) {
			fail(r, e.msg, expected);
			break;
		}
		hmb_buf_iter_init(&it, buf, len, 0);
		while ((rc = hmb_buf_iter_next(&it, &rec, &e)) == 1) {
			const struct hmb_record_hdr *h = &rec.hdr;
			enum hmb_acct_verdict v = hmb_acct_add(&r->acct, &rec);

			if (rec.kind == HMB_KIND_MARKER) {
				r->markers++;
				if (r->mode == HMB_EMIT_TRY && h->seq != expected)
					fail(r, "marker seq", h->seq);
				continue;
			}
			if (v != HMB_ACCT_NEW) {
				fail(r, "not a new record", h->seq);
				continue;
			}
			if (r->mode == HMB_EMIT_TRY ? h->seq != expected :
			    h->seq < expected)
				fail(r, "out of order", h->seq);
			expected = h->seq + 1;
			if (h->payload_len != r->lens[h->seq] ||
			    h->ts_ns != (uint64_t)h->seq * 3 + 7 ||
			    h->opcode != (uint16_t)(h->seq * 7) ||
			    h->cpu != (h->seq & 7) || h->flags)
				fail(r, "header differs", h->seq);
			gen_payload(exp, h->seq, h->payload_len);
			if (memcmp(exp, rec.payload, h->payload_len))
				fail(r, "payload differs", h->seq);
			r->got++;
		}
		if (rc) {
			fail(r, e.msg, expected);
			break;
		}
		if (hmb_consumer_commit(c, &e)) {
			fail(r, e.msg, expected);
			break;
		}
		if (r->consumer_nap)
			usleep(r->consumer_nap);
	}
	r->cursor = hmb_consumer_cursor(c);
	hmb_consumer_counts(c, &r->cn);
	hmb_consumer_close(c);
out:
	free(buf);
	free(exp);
	return NULL;
}

static void run_one(struct run *r)
{
	pthread_t pt, ct;
	struct hmb_error e;

	r->ring = aligned_alloc(64, HMB_RECORD_AREA_OFF + r->rs);
	memset(r->ring, 0, HMB_RECORD_AREA_OFF + r->rs);
	r->lens = calloc(r->n + 2, sizeof(*r->lens));
	hmb_acct_init(&r->acct, 0, NULL, NULL);
	hmb_producer_init(&r->p, r->ring, HMB_RECORD_AREA_OFF + r->rs, r->rs,
			  0, &e);
	pthread_create(&ct, NULL, consumer, r);
	pthread_create(&pt, NULL, producer, r);
	pthread_join(pt, NULL);
	pthread_join(ct, NULL);
	free(r->lens);
	free(r->ring);
}

int main(void)
{
	static const uint32_t sizes[] = { 4096, 16384, 65536, 262144,
					  1048576, 4194304 };
	const unsigned nsizes = sizeof(sizes) / sizeof(sizes[0]);
	const char *env = getenv("HMB_STRESS_RECORDS");
	uint64_t total = env ? strtoull(env, NULL, 0) : DEFAULT_RECORDS;
	uint64_t all = 0;
	static struct run r;

	env = getenv("HMB_STRESS_SEED");
	g_seed = env ? strtoull(env, NULL, 0) : (uint64_t)time(NULL);
	diag("seed %" PRIu64 " (HMB_STRESS_SEED=%" PRIu64
	     " to repeat), %" PRIu64 " records", g_seed, g_seed, total);
	for (unsigned i = 0; i < nsizes; i++) {
		double t0, t1;

		memset(&r, 0, sizeof(r));
		r.rs = sizes[i];
		r.n = total / nsizes;
		r.mode = HMB_EMIT_TRY;
		t0 = hmb_now_s(CLOCK_MONOTONIC);
		run_one(&r);
		t1 = hmb_now_s(CLOCK_MONOTONIC);
		all += r.got;
		diag("ring %u: %" PRIu64 " records, %" PRIu64
		     " bytes, %" PRIu64 " markers, %" PRIu64
		     " implicit wraps, %.2f s", r.rs, r.got, r.p.bytes,
		     r.p.markers, r.p.implicit_wraps,
		     t1 - t0);
		ok(r.errors == 0, "ring %u: every record once, in order, "
		   "byte-identical (%" PRIu64 " errors%s%s)", r.rs, r.errors,
		   r.errors ? ", first: " : "", r.first_error);
		ok(r.got == r.n && r.got == r.p.produced && r.p.dropped == 0 &&
		   r.acct.records == r.n && r.acct.lost == 0 &&
		   r.acct.duplicates == 0 && r.acct.resets == 0,
		   "ring %u: consumer counts equal the producer's (%" PRIu64
		   " of %" PRIu64 ")", r.rs, r.got, r.p.produced);
		ok(r.cn.records == r.p.produced && r.cn.markers == r.p.markers &&
		   r.cn.ignored == 0,
		   "ring %u: hmb_consumer_counts equals the producer's counts",
		   r.rs);
		ok(r.markers == r.p.markers && r.acct.wrap_markers == r.p.markers &&
		   r.cursor == r.p.head &&
		   r.acct.bytes == r.p.bytes + 32 * r.p.markers,
		   "ring %u: markers and bytes agree, cursor == head %" PRIu64,
		   r.rs, r.p.head);
		ok(r.p.markers > 0 && r.p.implicit_wraps > 0,
		   "ring %u: both wrap cases hit (%" PRIu64 " markers, %" PRIu64
		   " implicit)", r.rs, r.p.markers, r.p.implicit_wraps);
	}
	ok(all >= total - nsizes, "%" PRIu64 " records in total", all);

	/* DROP mode, slow consumer: lost == dropped. */
	memset(&r, 0, sizeof(r));
	r.rs = 16384;
	r.n = total / 50 < 20000 ? 20000 : total / 50;
	r.mode = HMB_EMIT_DROP;
	r.consumer_nap = 100;
	run_one(&r);
	diag("drop run: %" PRIu64 " produced, %" PRIu64 " dropped, %" PRIu64
	     " lost in %" PRIu64 " gaps", r.p.produced, r.p.dropped,
	     r.acct.lost, r.acct.gaps);
	ok(r.errors == 0, "drop run: no corruption (%s)", r.first_error);
	ok(r.p.dropped > 0 && r.acct.lost == r.p.dropped &&
	   r.acct.records == r.p.produced && r.acct.gaps > 0,
	   "drop run: lost %" PRIu64 " == dropped %" PRIu64,
	   r.acct.lost, r.p.dropped);
	ok(r.overflow_seen, "drop run: consumer saw OVERFLOWED");
	return tap_done();
}
