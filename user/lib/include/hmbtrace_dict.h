/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * hmbtrace_dict.h - the firmware event dictionary (share/hmb-events.dict,
 * format in docs/events.md): which opcode is which event, the payload fields
 * of each event with their types and offsets, which fields are the
 * correlation keys of an NVMe command (ctrl, sqid, cid), which phase of a
 * command an event marks, and which background window (gc, thermal, ...) it
 * opens or closes.
 *
 * Same rules as hmbtrace.h: no function prints, aborts or exits; errors
 * return HMB_E_DICT (HMB_E_IO, HMB_E_NOMEM, HMB_E_INVAL) and fill the
 * struct hmb_error with "NAME:LINE: what" and the byte offset of the line.
 */
#ifndef HMBTRACE_DICT_H
#define HMBTRACE_DICT_H

#include <stddef.h>
#include <stdint.h>
#include "hmbtrace.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The format version this parser reads ("dict 1"). */
#define HMB_DICT_VERSION	1
#define HMB_DICT_NAME_LEN	32	/* names: [a-z_][a-z0-9_]*, < 32 chars */
#define HMB_DICT_MAX_FIELDS	32	/* per event */

/* Command phases, in the order a command goes through them. */
enum hmb_phase {
	HMB_PHASE_NONE = 0,
	HMB_PHASE_FETCH,	/* SQ entry fetched by the controller */
	HMB_PHASE_MEDIA_START,	/* media operation started */
	HMB_PHASE_MEDIA_END,	/* media operation done */
	HMB_PHASE_XFER_DONE,	/* data transfer over the bus done */
	HMB_PHASE_CQE_POSTED,	/* completion queue entry posted */
	HMB_PHASE_COUNT
};

/* Background event edges. */
enum hmb_bg_edge {
	HMB_BG_NONE = 0,
	HMB_BG_BEGIN,		/* opens a window of GROUP */
	HMB_BG_END,		/* closes the window of GROUP */
	HMB_BG_POINT,		/* an instant */
};

enum hmb_ftype {
	HMB_FT_U8 = 0, HMB_FT_U16, HMB_FT_U32, HMB_FT_U64,
	HMB_FT_S8, HMB_FT_S16, HMB_FT_S32, HMB_FT_S64,
};

enum hmb_key {
	HMB_KEY_NONE = 0,
	HMB_KEY_CTRL,		/* controller id as the firmware knows it */
	HMB_KEY_SQID,		/* submission queue id */
	HMB_KEY_CID,		/* full 16-bit command id */
	HMB_KEY_COUNT
};

struct hmb_dict_field {
	char name[HMB_DICT_NAME_LEN];
	enum hmb_ftype type;
	uint16_t offset;	/* in the payload */
	uint8_t size;		/* bytes: 1, 2, 4 or 8 */
	enum hmb_key key;
};

struct hmb_dict_event {
	uint16_t opcode;
	char name[HMB_DICT_NAME_LEN];
	enum hmb_phase phase;		/* HMB_PHASE_NONE if not a command phase */
	enum hmb_bg_edge bg_edge;	/* HMB_BG_NONE if not background */
	char bg_group[HMB_DICT_NAME_LEN];
	uint16_t min_len;	/* payload bytes the fields need (or len=) */
	/* offset of each key field, -1 if the event has none */
	int key_off[HMB_KEY_COUNT];
	unsigned int nfields;
	struct hmb_dict_field fields[HMB_DICT_MAX_FIELDS];
	unsigned int line;	/* where it was defined */
};

struct hmb_dict;

/*
 * Parse a dictionary from @len bytes of @text; @name (a file name) is used
 * in error messages ("NAME:LINE: ...").  Every problem is an error: unknown
 * statement, type, key, phase or attribute, duplicate opcode, event name or
 * field name, overlapping fields, a field outside the payload limit (4064),
 * a command-phase event without both sqid and cid keys, keys that are not
 * u16 (sqid, cid) ... .
 */
int hmb_dict_parse(struct hmb_dict **out, const char *text, size_t len,
		   const char *name, struct hmb_error *err);
/* Read and parse the file at @path. */
int hmb_dict_load(struct hmb_dict **out, const char *path,
		  struct hmb_error *err);
void hmb_dict_free(struct hmb_dict *d);
/*
 * share/hmb-events.dict as shipped with this library, built into it: the
 * text (NUL-terminated), its length without the NUL in *@len.  What a
 * program parses with hmb_dict_parse() when it is given no dictionary file.
 */
const char *hmb_dict_builtin(size_t *len);

size_t hmb_dict_count(const struct hmb_dict *d);
/* Events in file order, 0 <= @i < hmb_dict_count(). */
const struct hmb_dict_event *hmb_dict_event_at(const struct hmb_dict *d,
					       size_t i);
/* NULL if @opcode / @name is not in the dictionary. */
const struct hmb_dict_event *hmb_dict_lookup(const struct hmb_dict *d,
					     uint16_t opcode);
const struct hmb_dict_event *hmb_dict_by_name(const struct hmb_dict *d,
					      const char *name);
/* The event of @ev's field called @name, or NULL. */
const struct hmb_dict_field *hmb_dict_field(const struct hmb_dict_event *ev,
					    const char *name);
/* The event marking command phase @phase (first defined), or NULL. */
const struct hmb_dict_event *hmb_dict_phase_event(const struct hmb_dict *d,
						  enum hmb_phase phase);

/*
 * Read field @f from a payload of @len bytes.  Signed types are sign-
 * extended into *@val (reinterpret as int64_t).  HMB_E_INVAL if the payload
 * is too short for the field.
 */
int hmb_dict_get(const struct hmb_dict_field *f, const void *payload,
		 size_t len, uint64_t *val);
/* Store @val (truncated to the field's width) into a payload of @len. */
int hmb_dict_set(const struct hmb_dict_field *f, void *payload, size_t len,
		 uint64_t val);
/*
 * Format the fields of @ev found in the payload as "a=1 b=2 ..." into @buf
 * (always NUL-terminated).  Fields beyond @len are shown as "a=?".
 * Returns the length it wanted (like snprintf).
 */
int hmb_dict_format(const struct hmb_dict_event *ev, const void *payload,
		    size_t len, char *buf, size_t buflen);

const char *hmb_phase_name(enum hmb_phase p);	/* "fetch", ... */
const char *hmb_bg_edge_name(enum hmb_bg_edge e);	/* "begin", ... */
const char *hmb_ftype_name(enum hmb_ftype t);	/* "u16", ... */
const char *hmb_key_name(enum hmb_key k);	/* "sqid", ... */

#ifdef __cplusplus
}
#endif
#endif /* HMBTRACE_DICT_H */
