// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * t_window - the flight recorder's window (hmbtrace_window.h): whole
 * records evicted oldest first and counted by kind, the bytes held never
 * above its size, records straddling the end of the buffer read back
 * whole, epochs kept only while their first record is held, and a walk
 * that counts what the held bytes hold.
 */
#include <string.h>

#include "hmbtrace_window.h"
#include "tap.h"

/* A record of @len payload bytes at @p: its size. */
static size_t mk(uint8_t *p, uint32_t seq, uint16_t len, uint8_t flags)
{
	struct hmb_record_hdr h = {
		.magic = HMB_RECORD_MAGIC, .seq = seq, .ts_ns = 1000 + seq,
		.opcode = 7, .flags = flags, .payload_len = len,
	};
	size_t n = HMB_RECORD_SIZE(len);

	memset(p, 0, n);
	memcpy(p, &h, sizeof(h));
	for (uint16_t i = 0; i < len; i++)
		p[sizeof(h) + i] = (uint8_t)(seq + i);
	return n;
}

static void test_evict(void)
{
	struct hmb_window w;
	struct hmb_window_sum s;
	struct hmb_error err = { 0 };
	uint8_t buf[8192];
	uint64_t added = 0, n_added = 0;
	bool bounded = true, ok_add = true;
	struct iovec iov[2];
	size_t len;

	ok(hmb_window_open(&w, 0, &err) == HMB_E_INVAL, "a window of 0 bytes is refused");
	ok(!hmb_window_open(&w, 4096, &err), "a 4096-byte window opens");
	/* 100 records of 40..240 bytes: many times the window, wrapping */
	for (uint32_t seq = 0; seq < 100; seq++) {
		len = mk(buf, seq, (uint16_t)(8 + (seq * 37) % 200), 0);
		ok_add &= !hmb_window_add(&w, buf, len, &err);
		added += len;
		n_added++;
		bounded &= w.head - w.tail <= w.size;
	}
	ok(ok_add, "every add succeeds");
	ok(bounded, "the bytes held never exceed the window");
	ok(w.head == added, "head counts every byte added (%llu)", (unsigned long long)w.head);
	ok(w.ev_bytes == w.tail, "the bytes evicted are the tail");
	ok(!hmb_window_walk(&w, &s, &err), "the window walks");
	ok(s.acct->records + w.ev_records == n_added,
	   "records held + evicted = added (%llu + %llu)",
	   (unsigned long long)s.acct->records, (unsigned long long)w.ev_records);
	ok(s.have_seq && s.last_seq == 99 && s.first_seq == w.ev_last_seq + 1,
	   "held seqs %u..99 start after the last evicted (%u)", s.first_seq,
	   w.ev_last_seq);
	ok(s.acct->lost == 0, "nothing lost inside");
	hmb_acct_free(s.acct);
	ok(hmb_window_spans(&w, iov) >= 1 &&
	   iov[0].iov_len + iov[1].iov_len == w.head - w.tail,
	   "the spans cover what is held");
	/* a gap in the seqs inside is counted as the ring's loss */
	len = mk(buf, 105, 16, 0);
	hmb_window_add(&w, buf, len, &err);
	hmb_window_walk(&w, &s, &err);
	ok(s.acct->lost == 5, "a seq gap inside is lost by the ring (%llu)",
	   (unsigned long long)s.acct->lost);
	hmb_acct_free(s.acct);
	ok(hmb_window_add(&w, buf, 4097, &err) == HMB_E_INVAL,
	   "more bytes than the window are refused");
	hmb_window_close(&w);
}

static void test_kinds_and_epochs(void)
{
	struct hmb_window w;
	struct hmb_window_sum s;
	struct hmb_error err = { 0 };
	uint8_t buf[4096];
	size_t len;

	hmb_window_open(&w, 256, &err);
	len = mk(buf, 0, 0, HMB_REC_FLAG_WRAP_MARKER);
	hmb_window_add(&w, buf, len, &err);
	len = mk(buf, 1, 8, 0x80);	/* an unknown flag: ignored */
	hmb_window_add(&w, buf, len, &err);
	ok(!hmb_window_epoch(&w), "an epoch marked");
	ok(w.n_epochs == 1 && w.epochs[0] == w.head, "at the head");
	ok(!hmb_window_epoch(&w) && w.n_epochs == 1, "twice at one place: one epoch");
	for (uint32_t seq = 0; seq < 6; seq++) {
		len = mk(buf, seq, 24, 0);
		hmb_window_add(&w, buf, len, &err);
	}
	ok(w.ev_markers == 1 && w.ev_ignored == 1,
	   "a marker and an ignored record evicted, counted as such (%llu, %llu)",
	   (unsigned long long)w.ev_markers, (unsigned long long)w.ev_ignored);
	ok(!hmb_window_walk(&w, &s, &err), "walks");
	ok(s.acct->resets == 0 && s.first_seq <= 5, "the epoch's records held");
	hmb_acct_free(s.acct);
	hmb_window_epoch(&w);
	ok(w.n_epochs == 1, "an epoch whose first record was evicted is forgotten");
	hmb_window_close(&w);

	hmb_window_open(&w, 1 << 20, &err);
	int over = 0;

	for (int i = 0; i <= HMB_SIDECAR_MAX_EPOCHS; i++) {
		len = mk(buf, (uint32_t)i, 8, 0);
		hmb_window_add(&w, buf, len, &err);
		over += hmb_window_epoch(&w);
	}
	ok(over == 1 && w.n_epochs == HMB_SIDECAR_MAX_EPOCHS,
	   "one epoch more than the sidecar takes: the oldest forgotten, said once");
	hmb_window_close(&w);
}

static void test_corrupt(void)
{
	struct hmb_window w;
	struct hmb_error err = { 0 };
	uint8_t buf[256];
	size_t len;

	hmb_window_open(&w, 128, &err);
	len = mk(buf, 0, 24, 0);
	buf[0] ^= 0xff;		/* not a record: a caller's bug */
	hmb_window_add(&w, buf, len, &err);
	len = mk(buf, 1, 64, 0);
	ok(hmb_window_add(&w, buf, len, &err) == HMB_E_INVAL && err.msg[0],
	   "an oldest record that does not parse: an error saying why (%s)", err.msg);
	ok(w.head - w.tail == len, "the window was emptied, then took the bytes");
	hmb_window_close(&w);
}

int main(void)
{
	test_evict();
	test_kinds_and_epochs();
	test_corrupt();
	return tap_done();
}
