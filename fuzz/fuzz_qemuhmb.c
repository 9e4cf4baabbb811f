// SPDX-License-Identifier: Apache-2.0
/*
 * fuzz_qemuhmb: the controller model's checks of host-written bytes
 * (scripts/vm/qemu/patches/0002-*: hw/nvme/hmb-rules.h, extracted from the
 * patch by fuzz/Makefile, so this is the code QEMU runs): the Set Features
 * 0Dh descriptor list, the ring header at adoption and the tail the
 * controller reads while it produces.
 *
 * Input byte 0 picks the target:
 *   0  a descriptor list: page size 2^(12 + b1 % 16), HSIZE (4 bytes),
 *      then 16-byte entries, against a guest memory map with RAM, a
 *      device's BAR and unassigned space;
 *   1  a ring header: the buffer's length (8 bytes), then 64 header bytes
 *      (the first two bytes choose raw fields or plausible ones);
 *   2  a ring produced into and consumed from, the cursors starting at the
 *      input's value, in the last laps before 2^64 or at 0: the consumer
 *      publishes honest tails (each must be taken) or the input's (taken
 *      exactly when they lie between the cached tail and head).
 * Oracles: the verdict equals the rules computed here another way
 * (unwrapped 128-bit cursors for the tail); a list that passes has every
 * buffer in RAM and the last entry's buffer returned; a refusal says why.
 */
#include <assert.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "hmb-rules.h"
#include "fuzz.h"

/* An invariant failed: say which, and make the input a finding. */
static void fuzz_fail(const char *what)
{
	fprintf(stderr, "fuzz_qemuhmb: invariant failed: %s\n", what);
	abort();
}

static uint64_t ld(const uint8_t *p, size_t n)
{
	uint64_t v = 0;

	while (n--)
		v = v << 8 | p[n];
	return v;
}

/* ------------------------------------------------------ descriptor list */

/* The guest's memory map: RAM below 3 GiB and from 4 to 5 GiB, a BAR. */
#define BAR_START 0xfebf0000ull
#define BAR_END   0xfebf4000ull
static const struct { uint64_t start, end; } ram[] = {
	{ 0, 0xc0000000ull }, { 0x100000000ull, 0x140000000ull },
};

static int ram_calls;

static bool in_ram(uint64_t addr, uint64_t len)
{
	size_t i;

	for (i = 0; i < sizeof(ram) / sizeof(ram[0]); i++)
		if (addr >= ram[i].start && len <= ram[i].end - addr)
			return true;
	return false;
}

static bool fake_is_ram(void *opaque, uint64_t addr, uint64_t len)
{
	(void)opaque;
	/* asked only about buffers that passed the size and wrap checks */
	if (!len || addr + len - 1 < addr)
		fuzz_fail("is_ram asked about an empty or wrapping buffer");
	ram_calls++;
	return in_ram(addr, len);
}

static void one_list(const uint8_t *d, size_t n)
{
	uint64_t page, sum = 0, la, ll;
	uint32_t hsize, cnt, i;
	bool want = true, got;
	uint8_t *list;
	char why[200];

	if (n < 5)
		return;
	page = 1ull << (12 + d[0] % 16);
	hsize = (uint32_t)ld(d + 1, 4);
	cnt = (uint32_t)((n - 5) / 16);
	if (cnt > 4096)
		cnt = 4096;
	/* an exact-size block: ASan sees a read past the last entry */
	list = malloc(cnt ? (size_t)cnt * 16 : 1);
	if (!list)
		abort();
	memcpy(list, d + 5, (size_t)cnt * 16);
	/* the entries' addresses land in RAM, the BAR or nowhere */
	for (i = 0; i < cnt; i++) {
		uint64_t badd = ld(list + 16 * i, 8), bsize = ld(list + 16 * i + 8, 4);

		if (list[16 * i + 15] & 1) {
			badd = (list[16 * i + 15] & 2 ? BAR_START : 0x100000000ull) +
			       (badd & 0xffff) * page;
			memcpy(list + 16 * i, &badd, 8);
		}
		if (!bsize || (badd & (page - 1)) || badd + bsize * page - 1 < badd ||
		    !in_ram(badd, bsize * page))
			want = false;
		sum += bsize;
	}
	if (sum != hsize)
		want = false;
	memset(why, 0, sizeof(why));
	ram_calls = 0;
	got = hmb_rules_check_list(list, cnt, page, hsize, fake_is_ram, NULL,
				   &la, &ll, why, sizeof(why));
	if (got != want)
		fuzz_fail(got ? "a bad descriptor list passed" :
			  "a good descriptor list was refused");
	if (got && cnt) {
		if (la != ld(list + 16 * (cnt - 1), 8) ||
		    ll != ld(list + 16 * (cnt - 1) + 8, 4) * page)
			fuzz_fail("the last buffer returned is not the last entry's");
		if ((uint32_t)ram_calls != cnt)
			fuzz_fail("a buffer of a list that passed was not checked for RAM");
	}
	if (!got && (!why[0] || memchr(why, 0, sizeof(why)) == NULL))
		fuzz_fail("a refusal without a reason");
	free(list);
}

/* ------------------------------------------------------------ ring header */

static void one_header(const uint8_t *d, size_t n)
{
	uint8_t hdr[64] = { 0 };
	uint64_t len, head, tail;
	uint32_t magic, ver, rs, area;
	HmbRulesRing r = { 0 };
	bool want, got;
	char why[200] = { 0 };

	if (n < 10)
		return;
	len = ld(d + 2, 8);
	memcpy(hdr, d + 10, n - 10 < 64 ? n - 10 : 64);
	if (d[0] & 1) {		/* plausible: a valid header, then one change */
		uint32_t v[4] = { HMBT_RING_MAGIC, HMBT_VERSION, 64u << (d[1] % 26),
				  HMBT_AREA_OFF };

		memcpy(hdr, v, sizeof(v));
		memcpy(hdr + 0x18, hdr + 0x10, 8);
		if (d[0] & 2)
			len = (len & 0xffff) + 64 + (64ull << (d[1] % 26)) - 0x8000;
		if (d[0] & 4)
			hdr[(d[0] >> 3) % 0x28] ^= (uint8_t)(1u << (d[1] >> 5));
	}
	magic = (uint32_t)ld(hdr, 4);
	ver = (uint32_t)ld(hdr + 4, 4);
	rs = (uint32_t)ld(hdr + 8, 4);
	area = (uint32_t)ld(hdr + 12, 4);
	head = ld(hdr + 16, 8);
	tail = ld(hdr + 24, 8);
	want = len >= 64 && magic == 0x54424d48u && ver == 1 && area == 64 &&
	       rs >= 64 && rs <= (1u << 31) && !(rs & (rs - 1)) &&
	       (unsigned __int128)rs + 64 <= len && head == tail && !(head % 8);
	got = hmb_rules_check_header(hdr, len, &r, why, sizeof(why));
	if (got != want)
		fuzz_fail(got ? "a bad ring header was adopted" :
			  "a fresh ring header was refused");
	if (got && (r.ring_size != rs || r.head != head || r.tail != tail ||
		    r.flags != (uint32_t)ld(hdr + 0x20, 4)))
		fuzz_fail("the adopted geometry is not the header's");
	if (!got && (!why[0] || memchr(why, 0, sizeof(why)) == NULL))
		fuzz_fail("a refusal without a reason");
}

/* ---------------------------------------------------------- the tail */

typedef unsigned __int128 u128;

/*
 * Whether the controller may take tail @t: computed on unwrapped cursors
 * (the cached tail's lap as the origin), not by the rules' distances.
 */
static bool tail_expected(uint64_t t, uint64_t tail, uint64_t head, uint32_t rs)
{
	u128 T = tail, H = T + (uint64_t)(head - tail);
	u128 t1 = t >= tail ? (u128)t : (u128)t + ((u128)1 << 64);

	return !(t % 8) && t1 >= T && t1 <= H && H - t1 <= rs;
}

static void one_tail(const uint8_t *d, size_t n)
{
	uint32_t rs;
	uint64_t head, tail, ctail;
	size_t i;

	if (n < 10)
		return;
	rs = 64u << (d[0] % 16);
	head = ld(d + 2, 8) & ~7ull;
	switch (d[1] % 4) {
	case 0:		/* in the last laps before 2^64 */
		head = -(uint64_t)((head % (4ull * rs)) & ~7ull) - 8;
		break;
	case 1:
		head %= 4ull * rs;
		break;
	default:	/* anywhere: the input's */
		break;
	}
	tail = ctail = head;	/* adopted: head == tail */
	for (i = 10; i < n; i++) {
		uint8_t op = d[i];
		uint64_t k = (uint64_t)(op >> 2) * 8;

		switch (op & 3) {
		case 0:		/* produce k bytes, reading the tail when full */
		case 1:
			if (head - tail + k > rs) {
				bool ok = hmb_rules_tail_ok(ctail, tail, head, rs);

				if (ctail != tail && !ok)
					fuzz_fail("an honest consumer's tail was refused");
				if (ok)
					tail = ctail;
			}
			if (head - tail + k <= rs)
				head += k;
			break;
		case 2:		/* the consumer reads k bytes and publishes */
			if (k > head - ctail)
				k = head - ctail;
			ctail += k;
			break;
		case 3: {	/* a hostile tail: the input's, or near the cursors */
			uint64_t t;
			bool ok;

			if (i + 8 >= n)
				return;
			t = ld(d + i + 1, 8);
			if (op & 4)
				t = head + (int8_t)(t & 0xff) * 8 + (t >> 8 & 7);
			i += 8;
			ok = hmb_rules_tail_ok(t, tail, head, rs);
			if (ok != tail_expected(t, tail, head, rs))
				fuzz_fail(ok ? "a tail outside [tail, head] was taken" :
					  "a tail within [tail, head] was refused");
			if (ok)
				tail = ctail = t;
			break;
		}
		}
		if (head - tail > rs || head - ctail > rs || ctail - tail > head - tail)
			fuzz_fail("the cursors broke head - tail <= ring_size");
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!size)
		return 0;
	switch (data[0] % 3) {
	case 0:
		one_list(data + 1, size - 1);
		break;
	case 1:
		one_header(data + 1, size - 1);
		break;
	default:
		one_tail(data + 1, size - 1);
		break;
	}
	return 0;
}
