/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * pelbuild.h - Persistent Event Logs written byte by byte from the NVMe
 * base specification's layout, for the decoder's tests (t_pel) and the
 * cross-check against nvme-cli (pel-gen).
 */
#ifndef HMB_PELBUILD_H
#define HMB_PELBUILD_H

#include <stdint.h>
#include <string.h>

struct pb {
	uint8_t b[16384];
	size_t len;
	uint32_t n;
};

static inline void pb_put(uint8_t *p, uint64_t v, unsigned int bytes)
{
	for (unsigned int i = 0; i < bytes; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

/* The header; TNEV and TLL are set by pb_finish(). */
static inline void pb_init(struct pb *l)
{
	memset(l, 0, sizeof(*l));
	l->b[0] = 0x0d;
	l->b[16] = 1;				/* log revision */
	pb_put(l->b + 18, 512 - 20, 2);		/* LHL */
	pb_put(l->b + 20, 1700000000123ULL | 1ULL << 49, 8);
	pb_put(l->b + 28, 4321, 8);		/* power on hours */
	pb_put(l->b + 44, 77, 8);		/* power cycles */
	pb_put(l->b + 52, 0x1b36, 2);
	pb_put(l->b + 54, 0x1af4, 2);
	memcpy(l->b + 56, "SN-PEL-0001         ", 20);
	memcpy(l->b + 76, "HMB Trace Model PEL", 19);
	memcpy(l->b + 116, "nqn.2019-08.org.qemu:pel", 24);
	pb_put(l->b + 372, 5, 2);		/* generation */
	pb_put(l->b + 374, 1u << 18 | 1u << 16 | 3, 4);
	l->b[480] = 0xfe;			/* types 1..7 */
	l->b[481] = 0x3f;			/* types 8..13 */
	l->b[480 + 0xde / 8] = 1 << (0xde % 8);
	l->len = 512;
}

/* An event of @type with @vsil bytes of vendor information and @dlen of
 * data; returns its data for the caller to fill. */
static inline uint8_t *pb_event(struct pb *l, uint8_t type, uint64_t ts,
				uint16_t vsil, uint16_t dlen)
{
	uint8_t *p = l->b + l->len;

	p[0] = type;
	p[1] = 1;
	p[2] = 21;
	pb_put(p + 4, 1, 2);			/* controller id */
	pb_put(p + 6, ts, 8);
	pb_put(p + 20, vsil, 2);
	pb_put(p + 22, vsil + dlen, 2);
	memset(p + 24, 0xa5, vsil);
	l->len += 24 + vsil + dlen;
	l->n++;
	return p + 24 + vsil;
}

static inline void pb_finish(struct pb *l)
{
	pb_put(l->b + 4, l->n, 4);
	pb_put(l->b + 8, l->len, 8);
}

/* The event timestamps of pb_all(): ms since the epoch, synch clear,
 * origin 1 (set by the host). */
#define PB_TS0	1700000000000ULL
#define PB_TS(i)	((PB_TS0 + 1000ULL * (i)) | 1ULL << 49)

/* One event of every type the specification defines here, in type order,
 * then a vendor specific one: 14 events, no vendor information (nvme-cli
 * up to 2.x reads event data where the vendor information is). */
static inline void pb_all(struct pb *l)
{
	uint8_t *d;

	pb_init(l);
	d = pb_event(l, 0x01, PB_TS(1), 0, 512);	/* SMART / health */
	d[0] = 0x02;
	pb_put(d + 1, 318, 2);
	d[3] = 100;
	d[4] = 10;
	d[5] = 3;
	d[6] = 0;
	pb_put(d + 32, 5, 8);
	pb_put(d + 40, 1, 8);			/* data units read: 2^64 + 5 */
	pb_put(d + 48, 123456, 8);
	pb_put(d + 64, 1000, 8);
	pb_put(d + 80, 2000, 8);
	pb_put(d + 96, 33, 8);
	pb_put(d + 112, 77, 8);
	pb_put(d + 128, 4321, 8);
	pb_put(d + 144, 4, 8);
	pb_put(d + 160, 0, 8);
	pb_put(d + 176, 9, 8);
	pb_put(d + 192, 12, 4);
	pb_put(d + 196, 1, 4);
	pb_put(d + 200, 310, 2);
	pb_put(d + 202, 305, 2);
	pb_put(d + 216, 6, 4);
	pb_put(d + 220, 1, 4);
	pb_put(d + 224, 600, 4);
	pb_put(d + 228, 20, 4);
	d = pb_event(l, 0x02, PB_TS(2), 0, 22);	/* firmware commit */
	memcpy(d, "1.0.0   ", 8);
	memcpy(d + 8, "1.1.0   ", 8);
	d[16] = 3;
	d[17] = 2;
	pb_put(d + 20, 0x1234, 2);
	d = pb_event(l, 0x03, PB_TS(3), 0, 16);	/* timestamp change */
	pb_put(d, (PB_TS0 - 5000) | 1ULL << 48, 8);
	pb_put(d + 8, 98765, 8);
	d = pb_event(l, 0x04, PB_TS(4), 0, 8 + 2 * 36);	/* power-on/reset */
	memcpy(d, "1.1.0   ", 8);
	for (int i = 0; i < 2; i++) {
		uint8_t *r = d + 8 + 36 * i;

		pb_put(r, 1 + i, 2);
		r[2] = (uint8_t)i;
		r[3] = 0;
		pb_put(r + 16, 77 + i, 4);
		pb_put(r + 20, 3600000ULL * (i + 1), 8);
		pb_put(r + 28, (PB_TS0 + 3500 + i) | 1ULL << 49, 8);
	}
	d = pb_event(l, 0x05, PB_TS(5), 0, 8);	/* hardware error */
	pb_put(d, 0x0007, 2);
	pb_put(d + 4, 0xdeadbeef, 4);
	d = pb_event(l, 0x06, PB_TS(6), 0, 48);	/* change namespace */
	pb_put(d, 0, 4);
	pb_put(d + 8, 2097152, 8);
	pb_put(d + 24, 2097152, 8);
	d[32] = 0x10;
	d[33] = 1;
	d[34] = 1;
	pb_put(d + 36, 1, 4);
	pb_put(d + 40, 1, 2);
	pb_put(d + 44, 2, 4);
	d = pb_event(l, 0x07, PB_TS(7), 0, 12);	/* format start */
	pb_put(d, 1, 4);
	d[4] = 1;
	pb_put(d + 8, 0x201, 4);
	d = pb_event(l, 0x08, PB_TS(8), 0, 12);	/* format complete */
	pb_put(d, 1, 4);
	d[4] = 0;
	d[5] = 1;
	pb_put(d + 6, 0, 2);
	pb_put(d + 8, 0, 4);
	d = pb_event(l, 0x09, PB_TS(9), 0, 12);	/* sanitize start */
	pb_put(d, 0x60000007, 4);
	pb_put(d + 4, 0x2, 4);
	pb_put(d + 8, 0, 4);
	d = pb_event(l, 0x0a, PB_TS(10), 0, 8);	/* sanitize complete */
	pb_put(d, 0xffff, 2);
	pb_put(d + 2, 0x0101, 2);
	pb_put(d + 4, 0, 2);
	d = pb_event(l, 0x0b, PB_TS(11), 0, 4 + 8 + 4 + 4);	/* set feature */
	pb_put(d, 2 | 1 << 3 | 4 << 16, 4);
	pb_put(d + 4, 0x0d, 4);			/* CDW10: FID 0Dh (HMB) */
	pb_put(d + 8, 1, 4);			/* CDW11: EHM */
	pb_put(d + 12, 0, 4);			/* completion DW0 */
	pb_put(d + 16, 0x04030201, 4);		/* memory buffer */
	d = pb_event(l, 0x0c, PB_TS(12), 0, 512);	/* telemetry created */
	d[0] = 0x07;
	d[5] = 0x00;
	d[6] = 0x1b;
	d[7] = 0x36;
	pb_put(d + 8, 1, 2);
	pb_put(d + 10, 2, 2);
	pb_put(d + 12, 3, 2);
	d[382] = 1;
	d[383] = 4;
	d = pb_event(l, 0x0d, PB_TS(13), 0, 2);	/* thermal excursion */
	d[0] = 5;
	d[1] = 80;
	d = pb_event(l, 0xde, PB_TS(14), 0, 6 + 4 + 6 + 3);	/* vendor */
	pb_put(d, 0x0101, 2);
	d[2] = 3;
	d[3] = 0;
	pb_put(d + 4, 4, 2);
	pb_put(d + 6, 0x11223344, 4);
	pb_put(d + 10, 0x0202, 2);
	d[12] = 2;
	d[13] = 0;
	pb_put(d + 14, 3, 2);
	memcpy(d + 16, "abc", 3);
	pb_finish(l);
}

#endif
