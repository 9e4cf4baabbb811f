/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * pel.h - the NVMe Persistent Event Log (log page 0Dh) decoded from its
 * bytes, as the NVM Express Base Specification lays it out: a 512-byte
 * header, then Total Number of Events events, each an event header
 * (3 + EHL bytes), Vendor Specific Information (VSIL bytes) and event data
 * (EL - VSIL bytes).  All fields little-endian.
 *
 * The bytes are untrusted (a drive's firmware, a file): every length is
 * checked against the bytes there are, nothing is read outside them, and
 * a refusal says at which byte of the log it stopped and why.  No
 * allocation; the decoded event points into the caller's buffer.
 */
#ifndef HMB_PEL_H
#define HMB_PEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PEL_LID		0x0d
#define PEL_HDR_LEN	512u	/* the header's defined bytes */
#define PEL_EHL_MIN	21u	/* event header: 3 + 21 = 24 defined bytes */

/* Event types (Event Type field). */
enum {
	PEL_SMART = 0x01, PEL_FW_COMMIT, PEL_TS_CHANGE, PEL_POR,
	PEL_HW_ERROR, PEL_CHANGE_NS, PEL_FORMAT_START, PEL_FORMAT_DONE,
	PEL_SANITIZE_START, PEL_SANITIZE_DONE, PEL_SET_FEATURE,
	PEL_TELEMETRY, PEL_THERMAL,
	PEL_VENDOR = 0xde,
};

/* A timestamp as the Timestamp feature defines it (ms since the epoch). */
struct pel_ts {
	uint64_t raw;
	uint64_t ms;		/* bits 47:0 */
	bool synch;		/* bit 48: the clock may have stopped */
	uint8_t origin;		/* bits 51:49: 0 reset, 1 Set Features */
};

struct pel_header {
	uint8_t lid;
	uint32_t tnev;		/* Total Number of Events */
	uint64_t tll;		/* Total Log Length, bytes */
	uint8_t rv;		/* Log Revision */
	uint16_t lhl;		/* Log Header Length: bytes after byte 19 */
	struct pel_ts ts;
	uint64_t poh_lo, poh_hi;	/* Power on Hours, 128 bits */
	uint64_t pcc;		/* Power Cycle Count */
	uint16_t vid, ssvid;
	char sn[21], mn[41], subnqn[257];	/* trailing spaces/NULs cut */
	uint16_t gen;		/* Generation Number */
	uint32_t rci;		/* Reporting Context Information */
	uint8_t seb[32];	/* Supported Events Bitmap, bit n: type n */
	size_t first;		/* byte of the first event: lhl + 20 */
	size_t end;		/* bytes of the log decoded: min(tll, length) */
};

struct pel_event {
	uint32_t index;		/* 0-based, in log order */
	size_t off;		/* byte of its first header byte */
	uint8_t type, rev, ehl, ehai;
	uint16_t cntlid, pelpid, vsil, el;
	struct pel_ts ts;
	const uint8_t *vsi;	/* vsil bytes */
	const uint8_t *data;	/* len bytes of event data */
	uint32_t len;		/* el - vsil */
};

/* Why decoding stopped: the byte of the log and what was wrong there. */
struct pel_err {
	size_t off;
	char msg[160];
};

/*
 * The header of the @len-byte log @buf.  0, or -1 with @e filled: shorter
 * than the header, not log 0Dh, LHL placing the first event inside the
 * header or a Total Log Length shorter than the header.
 */
int pel_header(const uint8_t *buf, size_t len, struct pel_header *h,
	       struct pel_err *e);

struct pel_iter {
	const uint8_t *buf;
	const struct pel_header *h;
	size_t off;
	uint32_t n;
};

void pel_iter_init(struct pel_iter *it, const uint8_t *buf,
		   const struct pel_header *h);
/*
 * The next event: 1 and @ev filled, 0 after TNEV events, -1 with @e filled
 * when the next event does not fit in the log's bytes (header, VSIL past
 * EL, EL past the end).  Event data too short for its type is reported by
 * pel_fields(), not here: the walk goes on.
 */
int pel_next(struct pel_iter *it, struct pel_event *ev, struct pel_err *e);

/* One decoded field of an event's data. */
enum pel_kind { PF_UINT, PF_U128, PF_STR, PF_HEX };

struct pel_field {
	const char *name;
	int idx;		/* position in a list (reset list, vendor
				   descriptors), -1 outside one */
	enum pel_kind kind;
	uint64_t u, hi;		/* PF_UINT: u; PF_U128: hi:u */
	const uint8_t *p;	/* PF_STR, PF_HEX: len bytes */
	size_t len;
};

typedef void (*pel_field_fn)(const struct pel_field *f, void *arg);

/*
 * Each field of @ev's data, in layout order, to @fn.  0, or -1 with @e
 * filled (the byte is the log's) when the data is shorter than its type's
 * layout or a list inside it runs past its end; the fields before the
 * fault have been given.  Types this decoder does not know give one
 * PF_HEX field "data".
 */
int pel_fields(const struct pel_event *ev, pel_field_fn fn, void *arg,
	       struct pel_err *e);

/* Log specific field of Get Log Page 0Dh. */
#define PEL_LSP_READ		0	/* read in the context */
#define PEL_LSP_ESTABLISH	1	/* establish a context and read */
#define PEL_LSP_RELEASE		2	/* release the context */

/*
 * pelread.c (links passthru.c): the log of controller @fd, read in a
 * context (establish, read Total Log Length bytes a page at a time,
 * release; released whatever happened once established).  0 with the
 * bytes in *@buf (malloc'd, the caller frees), *@len and @clk, or -1 with
 * @e naming the step and the NVMe status, or a Total Log Length under the
 * header's or over @max (e->off 8).
 */
int pel_read_dev(int fd, size_t max, uint8_t **buf, size_t *len,
		 struct pel_err *e);

/*
 * The controller's clock against the host's: its Timestamp feature read
 * between two reads of the host's CLOCK_MONOTONIC (the clock of dumps,
 * correlate and the agent), inside two reads of CLOCK_REALTIME (the clock
 * Linux sets the feature from), with CLOCK_BOOTTIME at the start (boot -
 * mono grows by every host suspend).
 */
struct pel_clock {
	uint64_t before_ns, after_ns;		/* CLOCK_REALTIME */
	uint64_t mono_before_ns, mono_after_ns;	/* CLOCK_MONOTONIC */
	uint64_t boot_ns;			/* CLOCK_BOOTTIME */
	struct pel_ts ctrl;
};

/* pelread.c: Get Features Timestamp (0Eh) of controller @fd into @c;
 * the NVMe status (0 when @c is filled). */
int pel_clock_dev(int fd, struct pel_clock *c);

/*
 * pelclock.c: the log on the host's clock, the one mapping every reader
 * of a log uses (analyze pel, correlate, report, convert, export).
 *
 * The controller's clock read at host monotonic time M (the midpoint of
 * the read's bracket) said C ms; an event stamped E ms on the same clock
 * (same origin, no power-on/reset or timestamp change since: from
 * pel_clock_epoch() on) happened at host monotonic
 *	M - (C - E) ms
 * within
 *	bracket/2 + 1 ms (both stamps are whole ms) + (C - E) * PEL_DRIFT_PPM
 * (the controller's oscillator against the host's over the event's age;
 * the specification bounds neither, this is a crystal's tolerance with
 * room).  A host suspend between the event and the read stops
 * CLOCK_MONOTONIC but not a controller that stays powered: such an event
 * lands early by the suspend's length (pel_clock.boot_ns tells).
 */
#define PEL_DRIFT_PPM	100u

struct pel_hostmap {
	bool valid;		/* a clock read: events can be placed */
	long epoch;		/* first event on the present clock; -1: none */
	uint8_t origin;		/* of the controller's clock at the read */
	uint64_t ctrl_ms;	/* the controller's clock at the read */
	uint64_t mono_ns;	/* host CLOCK_MONOTONIC then (midpoint) */
	uint64_t err_ns;	/* bracket/2 + 1 ms */
	int64_t real_off_ms;	/* CLOCK_REALTIME ms = controller ms + this */
	uint64_t real_err_ms;
};

/* Why an event has no host time (pel_place). */
enum pel_unplaced {
	PEL_PLACED = 0,
	PEL_NO_CLOCK,		/* the log came without a clock reading */
	PEL_BEFORE_EPOCH,	/* before the last reset or timestamp change */
	PEL_OTHER_ORIGIN,	/* stamped on a clock of another origin */
	PEL_AFTER_READ,		/* later than the clock read: inconsistent */
	PEL_BEFORE_BOOT,	/* before host monotonic 0 */
	PEL_UNPLACED_COUNT
};

/* "no_clock", "before_epoch", ...; "placed" for PEL_PLACED. */
const char *pel_unplaced_name(enum pel_unplaced r);

/*
 * @m from clock reading @c (NULL: none; m->valid false) of log @buf.
 */
void pel_hostmap_init(struct pel_hostmap *m, const struct pel_clock *c,
		      const uint8_t *buf, const struct pel_header *h);

/*
 * Event @ev on the host's clock: PEL_PLACED with *@mono_ns and *@bound_ns
 * (the bound above), or why not (*@mono_ns, *@bound_ns 0).
 */
enum pel_unplaced pel_place(const struct pel_hostmap *m,
			    const struct pel_event *ev, uint64_t *mono_ns,
			    uint64_t *bound_ns);

/*
 * The clock reading saved beside a log: "<log>.clock", text lines
 * key=value, the first "hmb_pel_clock=1" (docs/formats.md).  0, or -1
 * with @e filled (e->off: the line).  pel_clock_load() gives 1 when there
 * is no such file (a log saved by another tool: no host time).
 */
int pel_clock_save(const char *log_path, const struct pel_clock *c,
		   const char *device, struct pel_err *e);
int pel_clock_load(const char *log_path, struct pel_clock *c,
		   struct pel_err *e);

/*
 * The first event on the controller's present clock: the last
 * power-on/reset or timestamp change event (the clock starts again at
 * each), 0 if none; events from it on map to the host's clock by one
 * offset (pel_clock).  -1 when an event before TNEV cannot be walked.
 */
long pel_clock_epoch(const uint8_t *buf, const struct pel_header *h);

/*
 * @ev's fields as short text for a line or a table cell, "over_temp=3
 * threshold=75": the integers and strings of its data in layout order
 * (a list's first entry only; 128-bit counters and bytes left out), cut
 * with "..." to @n - 1 bytes.  The text's length.
 */
size_t pel_fields_text(const struct pel_event *ev, char *buf, size_t n);

/* "smart", "fw_commit", ...; NULL for an unknown type. */
const char *pel_type_name(uint8_t type);
/* Bytes of data @type needs at the least (0: no fixed part). */
uint32_t pel_type_min(uint8_t type);

#endif
