/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * nvme_hmb_trace.h - v1 ABI of the NVMe Host Memory Buffer trace ring.
 *
 * One header for the kernel module, BPF programs and user space.  The
 * authoritative prose specification is docs/format.md; this header and that
 * document must agree byte for byte.  The ring and record headers live in
 * device memory and are little-endian on every host: their fields are
 * __le16/__le32/__le64 and are read and written through the hmb_le*() and
 * hmb_cpu_to_le*() accessors below (sparse checks that in the kernel).  The
 * ioctl structures are host-endian.  Every structure is naturally aligned
 * and contains no implicit padding; the compile-time checks at the end of
 * this file hold every size and offset to the specification on every side
 * that includes it.
 */
#ifndef _UAPI_LINUX_NVME_HMB_TRACE_H
#define _UAPI_LINUX_NVME_HMB_TRACE_H

/* BPF programs include vmlinux.h, which already defines __u32 and friends. */
#ifndef __VMLINUX_H__
#include <linux/types.h>
#include <linux/ioctl.h>
#endif

/*
 * Little-endian accessors for the fields of &struct hmb_ring_hdr and
 * &struct hmb_record_hdr, usable in the kernel, in BPF programs and in user
 * space alike (no libc or kernel byte-order header needed).
 */
#ifdef __CHECKER__
#define __hmb_force	__attribute__((force))
#else
#define __hmb_force
#endif
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
#define __hmb_swab(bits, x)	__builtin_bswap##bits(x)
#else
/* bits names the width on big-endian machines only */
#define __hmb_swab(bits, x)	((void)(bits), (x))
#endif

static __inline__ __u16 hmb_le16(__le16 v)
{
	return __hmb_swab(16, (__hmb_force __u16)v);
}

static __inline__ __u32 hmb_le32(__le32 v)
{
	return __hmb_swab(32, (__hmb_force __u32)v);
}

static __inline__ __u64 hmb_le64(__le64 v)
{
	return __hmb_swab(64, (__hmb_force __u64)v);
}

static __inline__ __le16 hmb_cpu_to_le16(__u16 v)
{
	return (__hmb_force __le16)__hmb_swab(16, v);
}

static __inline__ __le32 hmb_cpu_to_le32(__u32 v)
{
	return (__hmb_force __le32)__hmb_swab(32, v);
}

static __inline__ __le64 hmb_cpu_to_le64(__u64 v)
{
	return (__hmb_force __le64)__hmb_swab(64, v);
}

/** HMB_TRACE_ABI_VERSION - version of the ring and record layout below. */
#define HMB_TRACE_ABI_VERSION		1

/** HMB_RING_MAGIC - &struct hmb_ring_hdr.magic: "HMBT" read as a LE u32. */
#define HMB_RING_MAGIC			0x54424D48U
/** HMB_RECORD_MAGIC - &struct hmb_record_hdr.magic: "RECT" as a LE u32. */
#define HMB_RECORD_MAGIC		0x54434552U

#define HMB_RING_HDR_SIZE		64
#define HMB_RECORD_HDR_SIZE		32
/** HMB_RECORD_AREA_OFF - the only record_area_off that v1 allows. */
#define HMB_RECORD_AREA_OFF		0x40
/** HMB_RECORD_ALIGN - records start on this boundary; cursors advance by it. */
#define HMB_RECORD_ALIGN		8
/** HMB_RECORD_MAX_SIZE - header plus the largest payload, padded. */
#define HMB_RECORD_MAX_SIZE		4096
/** HMB_RECORD_MAX_PAYLOAD - the largest payload_len in v1 (4096 - 32). */
#define HMB_RECORD_MAX_PAYLOAD		(HMB_RECORD_MAX_SIZE - HMB_RECORD_HDR_SIZE)
/** HMB_RING_MIN_SIZE - smallest valid ring_size (power of two). */
#define HMB_RING_MIN_SIZE		64U
/** HMB_RING_MAX_SIZE - largest valid ring_size (power of two in a u32). */
#define HMB_RING_MAX_SIZE		0x80000000U

/* Ring flags (&struct hmb_ring_hdr.flags), written by the producer. */
/** HMB_RING_FLAG_OVERFLOWED - the producer is dropping records (ring full). */
#define HMB_RING_FLAG_OVERFLOWED	0x1U
/** HMB_RING_FLAG_FROZEN - the producer has stopped (reset, shutdown). */
#define HMB_RING_FLAG_FROZEN		0x2U
#define HMB_RING_FLAGS_KNOWN		(HMB_RING_FLAG_OVERFLOWED | \
					 HMB_RING_FLAG_FROZEN)

/* Record flags (&struct hmb_record_hdr.flags). */
/** HMB_REC_FLAG_WRAP_MARKER - skip to offset 0 of the next lap; no payload. */
#define HMB_REC_FLAG_WRAP_MARKER	0x1U
/** HMB_REC_FLAG_TRUNCATED - the firmware clipped this record's payload. */
#define HMB_REC_FLAG_TRUNCATED		0x2U
#define HMB_REC_FLAGS_KNOWN		(HMB_REC_FLAG_WRAP_MARKER | \
					 HMB_REC_FLAG_TRUNCATED)

/**
 * struct hmb_ring_hdr - header at offset 0 of the trace slice (64 bytes).
 * @magic: %HMB_RING_MAGIC.
 * @version: %HMB_TRACE_ABI_VERSION; a consumer refuses anything greater.
 * @ring_size: size of the record area in bytes, a power of two.
 * @record_area_off: offset of the record area from the slice base; 0x40.
 * @head: producer cursor, a monotonically increasing byte count.  Written
 *	only by the producer, with release semantics after the record bytes.
 * @tail: consumer cursor, a monotonically increasing byte count.  Written
 *	only on behalf of the consumer (directly, or by the kernel on
 *	%NVME_HMB_TRACE_SET_TAIL), with release semantics.
 * @flags: HMB_RING_FLAG_* bits, written by the producer.
 * @reserved0: must be zero when written, ignored when read.
 * @reserved1: must be zero when written, ignored when read.
 * @reserved2: must be zero when written, ignored when read.
 * @reserved3: must be zero when written, ignored when read.
 *
 * The offset of a cursor in the record area is ``cursor & (ring_size - 1)``;
 * ``head - tail`` is the number of unread bytes and never exceeds @ring_size.
 */
struct hmb_ring_hdr {
	__le32 magic;
	__le32 version;
	__le32 ring_size;
	__le32 record_area_off;
	__le64 head;
	__le64 tail;
	__le32 flags;
	__le32 reserved0;
	__le64 reserved1;
	__le64 reserved2;
	__le64 reserved3;
};

/**
 * struct hmb_record_hdr - header of every record (32 bytes, 8-byte aligned).
 * @magic: %HMB_RECORD_MAGIC.
 * @seq: record sequence number, +1 per record the producer creates
 *	(including records it drops), modulo 2^32.  A wrap marker carries the
 *	seq of the next record and consumes none.
 * @ts_ns: firmware monotonic clock in nanoseconds (not the host's clock).
 * @opcode: trace event id, defined by the firmware (see the event dictionary).
 * @cpu: firmware core that emitted the event.
 * @flags: HMB_REC_FLAG_* bits.
 * @payload_len: payload bytes that follow the header, before padding;
 *	at most %HMB_RECORD_MAX_PAYLOAD.
 * @reserved0: must be zero when written, ignored when read.
 * @reserved1: must be zero when written, ignored when read.
 *
 * The next record starts at the next 8-byte boundary after the payload; the
 * padding is written as zero.
 */
struct hmb_record_hdr {
	__le32 magic;
	__le32 seq;
	__le64 ts_ns;
	__le16 opcode;
	__u8   cpu;
	__u8   flags;
	__le16 payload_len;
	__le16 reserved0;
	__le64 reserved1;
};

/* Records in one hmb_trace:hmb_trace_records event at most. */
#define HMB_BRIDGE_BATCH	64
/* Payload bytes a &struct hmb_bridge_rec carries beside its header. */
#define HMB_BRIDGE_HEAD		24

/**
 * struct hmb_bridge_rec - one record of a hmb_trace:hmb_trace_records event
 *	(the kernel module's bridge to BPF; not read through the device).
 * @hdr: the header as the bridge copied it out of the ring and checked it.
 * @payload: kernel address of the record's @hdr.payload_len payload bytes
 *	in the ring, valid while the event runs; the device may rewrite them
 *	meanwhile (read them with bpf_probe_read_kernel(), check what is read).
 * @head: the payload's first min(payload_len, %HMB_BRIDGE_HEAD) bytes,
 *	copied right after the header, the rest zero.
 */
struct hmb_bridge_rec {
	struct hmb_record_hdr hdr;
	__u64 payload;
	__u8 head[HMB_BRIDGE_HEAD];
};

/** HMB_RECORD_SIZE - bytes a record with @len payload bytes occupies. */
#define HMB_RECORD_SIZE(len) \
	(HMB_RECORD_HDR_SIZE + (((len) + HMB_RECORD_ALIGN - 1) & \
				~(HMB_RECORD_ALIGN - 1)))

/* Provider kinds reported in &struct nvme_hmb_trace_info.provider. */
#define NVME_HMB_TRACE_PROVIDER_NVME_PCI	1
#define NVME_HMB_TRACE_PROVIDER_IVSHMEM		2
#define NVME_HMB_TRACE_PROVIDER_TEST		3

#define NVME_HMB_TRACE_NAME_LEN		32

/**
 * struct nvme_hmb_trace_info - answer of %NVME_HMB_TRACE_GET_INFO.
 * @abi_version: %HMB_TRACE_ABI_VERSION spoken by the module.
 * @ring_size: size of the record area (same as the ring header's).
 * @record_area_off: offset of the record area in the mapping (0x40).
 * @ring_id: N of /dev/nvme-hmb-traceN.
 * @mmap_len: bytes to map from offset 0: record_area_off + ring_size,
 *	rounded up to the page size.
 * @provider: NVME_HMB_TRACE_PROVIDER_* kind of the ring provider.
 * @reserved0: zero.
 * @name: NUL-terminated name of the ring given by its provider.
 * @ctrl: NUL-terminated name of the controller or parent device
 *	(for example "nvme0" or a PCI address).
 * @reserved: zero; room to grow without a new ioctl.
 */
struct nvme_hmb_trace_info {
	__u32 abi_version;
	__u32 ring_size;
	__u32 record_area_off;
	__u32 ring_id;
	__u64 mmap_len;
	__u32 provider;
	__u32 reserved0;
	char  name[NVME_HMB_TRACE_NAME_LEN];
	char  ctrl[NVME_HMB_TRACE_NAME_LEN];
	__u64 reserved[8];
};

/**
 * struct nvme_hmb_trace_tail - argument of %NVME_HMB_TRACE_SET_TAIL.
 * @tail: new consumer cursor: 8-byte aligned, not below the current tail,
 *	not above the current head (so within ring_size of it).
 * @flags: must be zero.
 */
struct nvme_hmb_trace_tail {
	__u64 tail;
	__u64 flags;
};

#define NVME_HMB_TRACE_IOC_MAGIC	0xB8

#ifdef _IOR
/**
 * NVME_HMB_TRACE_GET_INFO - fill a &struct nvme_hmb_trace_info.
 */
#define NVME_HMB_TRACE_GET_INFO \
	_IOR(NVME_HMB_TRACE_IOC_MAGIC, 0x01, struct nvme_hmb_trace_info)
/**
 * NVME_HMB_TRACE_SET_TAIL - publish the consumer cursor.
 *
 * The mapping is read-only, so the consumer hands its cursor to the kernel,
 * which validates it and stores it into &struct hmb_ring_hdr.tail with
 * release semantics (docs/format.md section 9.4).  Fails with %EBADF when
 * the file was not opened for writing (moving the tail drops data), with
 * %EINVAL when the cursor is unaligned, moves backwards or passes head
 * (compared as distances: cursors count modulo 2^64), or when @flags is not
 * zero.
 *
 * Fails with %ESTALE, storing nothing, when the producer side re-initialised
 * the ring (rewrote its header, for nvme-pci before re-enabling the HMB
 * after a controller reset) since this file last published: the cursor
 * belongs to an epoch that is over.  Publishing the tail the rewritten
 * header holds acknowledges the new epoch (it stores nothing) and later
 * tails are accepted again.
 */
#define NVME_HMB_TRACE_SET_TAIL \
	_IOW(NVME_HMB_TRACE_IOC_MAGIC, 0x02, struct nvme_hmb_trace_tail)
#endif

/* Compile-time layout checks, on every side that includes this header. */
#ifdef __cplusplus
#define __HMB_ASSERT(c, m) static_assert(c, m)
#else
#define __HMB_ASSERT(c, m) _Static_assert(c, m)
#endif
#define __HMB_OFF(t, f) __builtin_offsetof(struct t, f)

__HMB_ASSERT(sizeof(struct hmb_ring_hdr) == HMB_RING_HDR_SIZE, "ring hdr size");
__HMB_ASSERT(__HMB_OFF(hmb_ring_hdr, magic) == 0x00, "ring magic");
__HMB_ASSERT(__HMB_OFF(hmb_ring_hdr, version) == 0x04, "ring version");
__HMB_ASSERT(__HMB_OFF(hmb_ring_hdr, ring_size) == 0x08, "ring_size");
__HMB_ASSERT(__HMB_OFF(hmb_ring_hdr, record_area_off) == 0x0c, "area off");
__HMB_ASSERT(__HMB_OFF(hmb_ring_hdr, head) == 0x10, "head");
__HMB_ASSERT(__HMB_OFF(hmb_ring_hdr, tail) == 0x18, "tail");
__HMB_ASSERT(__HMB_OFF(hmb_ring_hdr, flags) == 0x20, "ring flags");
__HMB_ASSERT(__HMB_OFF(hmb_ring_hdr, reserved0) == 0x24, "ring reserved0");
__HMB_ASSERT(__HMB_OFF(hmb_ring_hdr, reserved1) == 0x28, "ring reserved1");
__HMB_ASSERT(__HMB_OFF(hmb_ring_hdr, reserved2) == 0x30, "ring reserved2");
__HMB_ASSERT(__HMB_OFF(hmb_ring_hdr, reserved3) == 0x38, "ring reserved3");
__HMB_ASSERT(sizeof(struct hmb_record_hdr) == HMB_RECORD_HDR_SIZE, "rec hdr");
__HMB_ASSERT(__HMB_OFF(hmb_record_hdr, magic) == 0x00, "rec magic");
__HMB_ASSERT(__HMB_OFF(hmb_record_hdr, seq) == 0x04, "rec seq");
__HMB_ASSERT(__HMB_OFF(hmb_record_hdr, ts_ns) == 0x08, "rec ts_ns");
__HMB_ASSERT(__HMB_OFF(hmb_record_hdr, opcode) == 0x10, "rec opcode");
__HMB_ASSERT(__HMB_OFF(hmb_record_hdr, cpu) == 0x12, "rec cpu");
__HMB_ASSERT(__HMB_OFF(hmb_record_hdr, flags) == 0x13, "rec flags");
__HMB_ASSERT(__HMB_OFF(hmb_record_hdr, payload_len) == 0x14, "rec len");
__HMB_ASSERT(__HMB_OFF(hmb_record_hdr, reserved0) == 0x16, "rec reserved0");
__HMB_ASSERT(__HMB_OFF(hmb_record_hdr, reserved1) == 0x18, "rec reserved1");
__HMB_ASSERT(HMB_RECORD_MAX_PAYLOAD == 4064, "max payload");
__HMB_ASSERT(HMB_RECORD_SIZE(HMB_RECORD_MAX_PAYLOAD) == 4096, "max record");
__HMB_ASSERT(HMB_RECORD_AREA_OFF == HMB_RING_HDR_SIZE, "record area off");
__HMB_ASSERT(sizeof(struct nvme_hmb_trace_info) == 160, "info size");
__HMB_ASSERT(__HMB_OFF(nvme_hmb_trace_info, mmap_len) == 16, "info mmap_len");
__HMB_ASSERT(__HMB_OFF(nvme_hmb_trace_info, name) == 32, "info name");
__HMB_ASSERT(__HMB_OFF(nvme_hmb_trace_info, reserved) == 96, "info reserved");
__HMB_ASSERT(sizeof(struct nvme_hmb_trace_tail) == 16, "tail arg size");

/* ABI-identical to the __u* layout: the __le types keep every width. */
__HMB_ASSERT(sizeof(__le16) == 2 && sizeof(__le32) == 4 &&
	     sizeof(__le64) == 8, "little-endian field widths");
#undef __HMB_OFF
#undef __HMB_ASSERT

#endif /* _UAPI_LINUX_NVME_HMB_TRACE_H */
