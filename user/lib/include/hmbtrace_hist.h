/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * hmbtrace_hist.h - the bucket rule of every log2 latency histogram of
 * nvme-hmb-trace: the BPF programs' in-kernel histograms (bpf/) and
 * libhmbtrace's (hmbtrace_cmd.h) include this one definition, and the
 * static assertions below check it wherever it is compiled.
 *
 * The rule is biolatency's (libbpf-tools), so the agent's histograms read
 * like the tools its users know: a latency of US microseconds goes to
 * slot floor(log2(US)), with 0 and 1 us both in slot 0 ("0 -> 1"), then
 * "2 -> 3", "4 -> 7", ...; the last slot also takes everything longer.
 *
 * Plain C expressions of unsigned long long, no headers: it compiles after
 * vmlinux.h in BPF programs and in user space alike, and no loop reaches
 * the BPF verifier.
 */
#ifndef HMBTRACE_HIST_H
#define HMBTRACE_HIST_H

#define HMB_HIST_SLOTS		27	/* 0 us .. 2^26 us (67 s) and above */

/* floor(log2(v)) for v > 0, and 0 for v == 0. */
#define HMB__LOG2_8(v)							\
	((v) >= 0x80 ? 7 : (v) >= 0x40 ? 6 : (v) >= 0x20 ? 5 :		\
	 (v) >= 0x10 ? 4 : (v) >= 0x8 ? 3 : (v) >= 0x4 ? 2 :		\
	 (v) >= 0x2 ? 1 : 0)
#define HMB__LOG2_16(v)							\
	((v) >= 0x100 ? 8 + HMB__LOG2_8((v) >> 8) : HMB__LOG2_8(v))
#define HMB__LOG2_32(v)							\
	((v) >= 0x10000 ? 16 + HMB__LOG2_16((v) >> 16) : HMB__LOG2_16(v))
#define HMB_LOG2_U64(v)							\
	((unsigned long long)(v) >= 0x100000000ULL ?			\
	 32 + HMB__LOG2_32((unsigned long long)(v) >> 32) :		\
	 HMB__LOG2_32((unsigned long long)(v)))

/* The slot of a latency of @us microseconds. */
#define HMB_HIST_SLOT(us)						\
	(HMB_LOG2_U64(us) < HMB_HIST_SLOTS - 1 ? HMB_LOG2_U64(us) :	\
	 HMB_HIST_SLOTS - 1)

/* The lowest and highest latency (us) slot @s holds (the last: and up). */
#define HMB_HIST_SLOT_LO(s)	((s) ? 1ULL << (s) : 0ULL)
#define HMB_HIST_SLOT_HI(s)	((2ULL << (s)) - 1)

_Static_assert(HMB_HIST_SLOT(0ULL) == 0 && HMB_HIST_SLOT(1ULL) == 0 &&
	       HMB_HIST_SLOT(2ULL) == 1 && HMB_HIST_SLOT(3ULL) == 1 &&
	       HMB_HIST_SLOT(4ULL) == 2 && HMB_HIST_SLOT(7ULL) == 2 &&
	       HMB_HIST_SLOT(8ULL) == 3 && HMB_HIST_SLOT(255ULL) == 7 &&
	       HMB_HIST_SLOT(256ULL) == 8 && HMB_HIST_SLOT(65535ULL) == 15 &&
	       HMB_HIST_SLOT(65536ULL) == 16 &&
	       HMB_HIST_SLOT((1ULL << 26) - 1) == 25 &&
	       HMB_HIST_SLOT(1ULL << 26) == 26 &&
	       HMB_HIST_SLOT(1ULL << 40) == HMB_HIST_SLOTS - 1 &&
	       HMB_HIST_SLOT(~0ULL) == HMB_HIST_SLOTS - 1 &&
	       HMB_LOG2_U64(0x100000000ULL) == 32 &&
	       HMB_LOG2_U64(~0ULL) == 63,
	       "log2 histogram slots: biolatency's rule, 0 and 1 us together");
_Static_assert(HMB_HIST_SLOT_LO(0) == 0 && HMB_HIST_SLOT_HI(0) == 1 &&
	       HMB_HIST_SLOT_LO(1) == 2 && HMB_HIST_SLOT_HI(1) == 3 &&
	       HMB_HIST_SLOT_LO(5) == 32 && HMB_HIST_SLOT_HI(5) == 63,
	       "log2 histogram slot bounds match the slot rule");

#endif /* HMBTRACE_HIST_H */
