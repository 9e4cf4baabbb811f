// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * dict.c - parser of the firmware event dictionary (docs/events.md).
 *
 * The format is line based so that an error can always name its line, and
 * declarative so that the same file drives the BPF join (which opcodes mark
 * which command phase, where the keys are), the simulator (how to encode a
 * record) and the decoders (how to print one).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hmbtrace_dict.h"
#include "hmbtrace_util.h"

#define DICT_MAX_FILE	(1U << 20)	/* a dictionary is a few KiB */
#define DICT_MAX_TOKENS	16

struct hmb_dict {
	size_t n, cap;
	struct hmb_dict_event *ev;
	int32_t *by_opcode;	/* 65536 entries: index into ev or -1 */
};

static const char *const phase_names[HMB_PHASE_COUNT] = {
	[HMB_PHASE_NONE] = "none",
	[HMB_PHASE_FETCH] = "fetch",
	[HMB_PHASE_MEDIA_START] = "media_start",
	[HMB_PHASE_MEDIA_END] = "media_end",
	[HMB_PHASE_XFER_DONE] = "xfer_done",
	[HMB_PHASE_CQE_POSTED] = "cqe_posted",
};

static const char *const edge_names[] = {
	[HMB_BG_NONE] = "none", [HMB_BG_BEGIN] = "begin",
	[HMB_BG_END] = "end", [HMB_BG_POINT] = "point",
};

static const struct {
	const char *name;
	uint8_t size;
} ftypes[] = {
	[HMB_FT_U8] = { "u8", 1 }, [HMB_FT_U16] = { "u16", 2 },
	[HMB_FT_U32] = { "u32", 4 }, [HMB_FT_U64] = { "u64", 8 },
	[HMB_FT_S8] = { "s8", 1 }, [HMB_FT_S16] = { "s16", 2 },
	[HMB_FT_S32] = { "s32", 4 }, [HMB_FT_S64] = { "s64", 8 },
};

static const char *const key_names[HMB_KEY_COUNT] = {
	[HMB_KEY_NONE] = "none", [HMB_KEY_CTRL] = "ctrl",
	[HMB_KEY_SQID] = "sqid", [HMB_KEY_CID] = "cid",
};

const char *hmb_phase_name(enum hmb_phase p)
{
	return (unsigned int)p < HMB_PHASE_COUNT ? phase_names[p] : "?";
}

const char *hmb_bg_edge_name(enum hmb_bg_edge e)
{
	return (unsigned int)e <= HMB_BG_POINT ? edge_names[e] : "?";
}

const char *hmb_ftype_name(enum hmb_ftype t)
{
	return (unsigned int)t <= HMB_FT_S64 ? ftypes[t].name : "?";
}

const char *hmb_key_name(enum hmb_key k)
{
	return (unsigned int)k < HMB_KEY_COUNT ? key_names[k] : "?";
}

/* Parser state: where we are, for messages. */
struct pstate {
	const char *name;
	unsigned int line;
	size_t line_off;
	struct hmb_error *err;
};

__attribute__((format(printf, 3, 4)))
static int fail(struct pstate *ps, int code, const char *fmt, ...)
{
	struct hmb_error *err = ps->err;
	va_list ap;
	int n;

	if (!err)
		return code;
	err->code = code;
	err->sys_errno = 0;
	err->offset = ps->line_off;
	n = snprintf(err->msg, sizeof(err->msg), "%s:%u: ", ps->name, ps->line);
	if (n < 0 || (size_t)n >= sizeof(err->msg))
		n = 0;
	va_start(ap, fmt);
	vsnprintf(err->msg + n, sizeof(err->msg) - n, fmt, ap);
	va_end(ap);
	return code;
}

static int valid_name(const char *s)
{
	size_t i, n = strlen(s);

	if (n == 0 || n >= HMB_DICT_NAME_LEN)
		return 0;
	if (!((s[0] >= 'a' && s[0] <= 'z') || s[0] == '_'))
		return 0;
	for (i = 1; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || s[i] == '_' ||
		      (s[i] >= '0' && s[i] <= '9')))
			return 0;
	return 1;
}

/* Unsigned number, decimal or 0x hex, no sign, all characters used. */
static int parse_uint(const char *s, unsigned long max, unsigned long *out)
{
	uint64_t v;

	if (hmb_parse_u64(s, 0, 0, max, &v))
		return -1;
	*out = (unsigned long)v;
	return 0;
}

static int find_ftype(const char *s)
{
	unsigned int i;

	for (i = 0; i <= HMB_FT_S64; i++)
		if (!strcmp(s, ftypes[i].name))
			return (int)i;
	return -1;
}

static int add_event(struct hmb_dict *d, struct pstate *ps, char **tok,
		     int ntok)
{
	struct hmb_dict_event *ev;
	unsigned long op, len;
	int i, k, have_len = 0;

	if (ntok < 3)
		return fail(ps, HMB_E_DICT,
			    "'event' needs an opcode and a name: event OPCODE NAME [phase=P|bg=G:E] [len=N]");
	if (parse_uint(tok[1], 0xffff, &op))
		return fail(ps, HMB_E_DICT,
			    "bad opcode '%s' (0 to 0xffff, decimal or 0x hex)",
			    tok[1]);
	if (!valid_name(tok[2]))
		return fail(ps, HMB_E_DICT,
			    "bad event name '%s' ([a-z_][a-z0-9_]*, at most %d characters)",
			    tok[2], HMB_DICT_NAME_LEN - 1);
	if (d->by_opcode[op] >= 0)
		return fail(ps, HMB_E_DICT,
			    "opcode 0x%04lx already defined as '%s' on line %u",
			    op, d->ev[d->by_opcode[op]].name,
			    d->ev[d->by_opcode[op]].line);
	for (size_t j = 0; j < d->n; j++)
		if (!strcmp(d->ev[j].name, tok[2]))
			return fail(ps, HMB_E_DICT,
				    "event name '%s' already used on line %u",
				    tok[2], d->ev[j].line);
	if (d->n == d->cap) {
		size_t cap = d->cap ? d->cap * 2 : 16;
		void *p = realloc(d->ev, cap * sizeof(*d->ev));

		if (!p)
			return fail(ps, HMB_E_NOMEM, "out of memory");
		d->ev = p;
		d->cap = cap;
	}
	ev = &d->ev[d->n];
	memset(ev, 0, sizeof(*ev));
	ev->opcode = (uint16_t)op;
	snprintf(ev->name, sizeof(ev->name), "%s", tok[2]);
	ev->line = ps->line;
	for (k = 0; k < HMB_KEY_COUNT; k++)
		ev->key_off[k] = -1;

	for (i = 3; i < ntok; i++) {
		char *eq = strchr(tok[i], '=');
		const char *val;

		if (!eq)
			return fail(ps, HMB_E_DICT,
				    "expected ATTR=VALUE, got '%s' (attributes: phase, bg, len)",
				    tok[i]);
		*eq = 0;
		val = eq + 1;
		if (!strcmp(tok[i], "phase")) {
			if (ev->phase || ev->bg_edge)
				return fail(ps, HMB_E_DICT,
					    "an event has at most one phase= or bg=");
			for (k = 1; k < HMB_PHASE_COUNT; k++)
				if (!strcmp(val, phase_names[k]))
					break;
			if (k == HMB_PHASE_COUNT)
				return fail(ps, HMB_E_DICT,
					    "unknown phase '%s' (fetch, media_start, media_end, xfer_done, cqe_posted)",
					    val);
			ev->phase = (enum hmb_phase)k;
		} else if (!strcmp(tok[i], "bg")) {
			const char *colon = strchr(val, ':');
			char group[HMB_DICT_NAME_LEN];
			size_t glen;

			if (ev->phase || ev->bg_edge)
				return fail(ps, HMB_E_DICT,
					    "an event has at most one phase= or bg=");
			if (!colon)
				return fail(ps, HMB_E_DICT,
					    "bg= needs GROUP:EDGE (EDGE: begin, end, point), got '%s'",
					    val);
			glen = (size_t)(colon - val);
			if (glen >= sizeof(group))
				glen = sizeof(group) - 1;
			memcpy(group, val, glen);
			group[glen] = 0;
			if ((size_t)(colon - val) >= sizeof(group) ||
			    !valid_name(group))
				return fail(ps, HMB_E_DICT,
					    "bad background group name in '%s'",
					    val);
			for (k = 1; k <= HMB_BG_POINT; k++)
				if (!strcmp(colon + 1, edge_names[k]))
					break;
			if (k > HMB_BG_POINT)
				return fail(ps, HMB_E_DICT,
					    "unknown background edge '%s' (begin, end, point)",
					    colon + 1);
			ev->bg_edge = (enum hmb_bg_edge)k;
			snprintf(ev->bg_group, sizeof(ev->bg_group), "%s",
				 group);
		} else if (!strcmp(tok[i], "len")) {
			if (have_len)
				return fail(ps, HMB_E_DICT, "len= given twice");
			if (parse_uint(val, HMB_RECORD_MAX_PAYLOAD, &len))
				return fail(ps, HMB_E_DICT,
					    "bad len '%s' (0 to %d)", val,
					    HMB_RECORD_MAX_PAYLOAD);
			ev->min_len = (uint16_t)len;
			have_len = 1;
		} else {
			return fail(ps, HMB_E_DICT,
				    "unknown event attribute '%s' (phase, bg, len)",
				    tok[i]);
		}
	}
	/* len= marks the field check below as "declared" with a high bit. */
	ev->nfields = 0;
	d->by_opcode[op] = (int32_t)d->n;
	d->n++;
	return have_len;
}

static int add_field(struct hmb_dict *d, struct pstate *ps, char **tok,
		     int ntok, int have_len)
{
	struct hmb_dict_event *ev;
	struct hmb_dict_field *f;
	unsigned long off;
	unsigned int i;
	int t, k = HMB_KEY_NONE;

	if (d->n == 0)
		return fail(ps, HMB_E_DICT,
			    "'field' before any 'event' (fields belong to the event above them)");
	ev = &d->ev[d->n - 1];
	if (ntok < 4 || ntok > 5)
		return fail(ps, HMB_E_DICT,
			    "'field' takes NAME TYPE OFFSET [key=ctrl|sqid|cid]");
	if (!valid_name(tok[1]))
		return fail(ps, HMB_E_DICT,
			    "bad field name '%s' ([a-z_][a-z0-9_]*, at most %d characters)",
			    tok[1], HMB_DICT_NAME_LEN - 1);
	t = find_ftype(tok[2]);
	if (t < 0)
		return fail(ps, HMB_E_DICT,
			    "unknown type '%s' (u8 u16 u32 u64 s8 s16 s32 s64)",
			    tok[2]);
	if (parse_uint(tok[3], HMB_RECORD_MAX_PAYLOAD, &off) ||
	    off + ftypes[t].size > HMB_RECORD_MAX_PAYLOAD)
		return fail(ps, HMB_E_DICT,
			    "bad offset '%s' for %s (the field must lie within %d payload bytes)",
			    tok[3], tok[2], HMB_RECORD_MAX_PAYLOAD);
	if (off % ftypes[t].size)
		return fail(ps, HMB_E_DICT,
			    "field '%s' at offset %lu is not aligned to its size %u",
			    tok[1], off, ftypes[t].size);
	if (ntok == 5) {
		if (strncmp(tok[4], "key=", 4))
			return fail(ps, HMB_E_DICT,
				    "expected key=ctrl|sqid|cid, got '%s'",
				    tok[4]);
		for (k = 1; k < HMB_KEY_COUNT; k++)
			if (!strcmp(tok[4] + 4, key_names[k]))
				break;
		if (k == HMB_KEY_COUNT)
			return fail(ps, HMB_E_DICT,
				    "unknown key '%s' (ctrl, sqid, cid)",
				    tok[4] + 4);
		if (ev->key_off[k] >= 0)
			return fail(ps, HMB_E_DICT,
				    "event '%s' already has a %s key",
				    ev->name, key_names[k]);
		if ((k == HMB_KEY_SQID || k == HMB_KEY_CID ||
		     k == HMB_KEY_CTRL) && t != HMB_FT_U16)
			return fail(ps, HMB_E_DICT,
				    "key %s must be u16 (NVMe %s is 16 bits)",
				    key_names[k], key_names[k]);
	}
	if (ev->nfields == HMB_DICT_MAX_FIELDS)
		return fail(ps, HMB_E_DICT, "event '%s' has more than %d fields",
			    ev->name, HMB_DICT_MAX_FIELDS);
	for (i = 0; i < ev->nfields; i++) {
		const struct hmb_dict_field *o = &ev->fields[i];

		if (!strcmp(o->name, tok[1]))
			return fail(ps, HMB_E_DICT,
				    "field '%s' defined twice in event '%s'",
				    tok[1], ev->name);
		if (off < (unsigned long)o->offset + o->size &&
		    o->offset < off + ftypes[t].size)
			return fail(ps, HMB_E_DICT,
				    "field '%s' (bytes %lu..%lu) overlaps field '%s' (bytes %u..%u)",
				    tok[1], off, off + ftypes[t].size - 1,
				    o->name, o->offset,
				    o->offset + o->size - 1);
	}
	if (have_len && off + ftypes[t].size > ev->min_len)
		return fail(ps, HMB_E_DICT,
			    "field '%s' ends at byte %lu, beyond the event's len=%u",
			    tok[1], off + ftypes[t].size, ev->min_len);
	f = &ev->fields[ev->nfields++];
	snprintf(f->name, sizeof(f->name), "%s", tok[1]);
	f->type = (enum hmb_ftype)t;
	f->offset = (uint16_t)off;
	f->size = ftypes[t].size;
	f->key = (enum hmb_key)k;
	if (k != HMB_KEY_NONE)
		ev->key_off[k] = (int)off;
	if (!have_len && off + f->size > ev->min_len)
		ev->min_len = (uint16_t)(off + f->size);
	return 0;
}

/* Checks that need the whole event: run when the next event starts or at EOF. */
static int finish_event(struct hmb_dict *d, struct pstate *ps)
{
	const struct hmb_dict_event *ev;

	if (d->n == 0)
		return 0;
	ev = &d->ev[d->n - 1];
	if (ev->phase != HMB_PHASE_NONE &&
	    (ev->key_off[HMB_KEY_SQID] < 0 || ev->key_off[HMB_KEY_CID] < 0)) {
		ps->line = ev->line;
		return fail(ps, HMB_E_DICT,
			    "event '%s' marks phase %s but lacks a %s key field (a command event needs key=sqid and key=cid)",
			    ev->name, phase_names[ev->phase],
			    ev->key_off[HMB_KEY_SQID] < 0 ? "sqid" : "cid");
	}
	return 0;
}

static int tokenize(char *s, char **tok)
{
	int n = 0;

	for (;;) {
		while (*s == ' ' || *s == '\t' || *s == '\r')
			*s++ = 0;
		if (!*s || *s == '#')
			break;
		if (n == DICT_MAX_TOKENS)
			return -1;
		tok[n++] = s;
		while (*s && *s != ' ' && *s != '\t' && *s != '\r' &&
		       *s != '#')
			s++;
		if (*s == '#') {
			*s = 0;
			break;
		}
	}
	return n;
}

int hmb_dict_parse(struct hmb_dict **out, const char *text, size_t len,
		   const char *name, struct hmb_error *err)
{
	struct pstate ps = { .name = name ? name : "<dict>", .err = err };
	struct hmb_dict *d;
	char *buf = NULL, *line, *next;
	int have_version = 0, have_len = 0, rc = 0;
	size_t i;

	if (!out || (!text && len))
		return fail(&ps, HMB_E_INVAL, "invalid argument");
	*out = NULL;
	d = calloc(1, sizeof(*d));
	if (d)
		d->by_opcode = malloc(65536 * sizeof(*d->by_opcode));
	if (d && d->by_opcode)
		buf = malloc(len + 1);
	if (!buf) {
		hmb_dict_free(d);
		return fail(&ps, HMB_E_NOMEM, "out of memory");
	}
	for (i = 0; i < 65536; i++)
		d->by_opcode[i] = -1;
	if (len)
		memcpy(buf, text, len);
	buf[len] = 0;
	if (memchr(buf, 0, len)) {
		ps.line = 1;
		for (i = 0; buf[i]; i++)
			if (buf[i] == '\n')
				ps.line++;
		ps.line_off = i;
		rc = fail(&ps, HMB_E_DICT, "NUL byte in a text file");
		goto out;
	}

	for (line = buf; line && *line; line = next) {
		char *tok[DICT_MAX_TOKENS];
		int ntok;

		ps.line++;
		ps.line_off = (size_t)(line - buf);
		next = strchr(line, '\n');
		if (next)
			*next++ = 0;
		ntok = tokenize(line, tok);
		if (ntok < 0) {
			rc = fail(&ps, HMB_E_DICT, "too many words on one line (at most %d)",
				  DICT_MAX_TOKENS);
			goto out;
		}
		if (ntok == 0)
			continue;
		if (!have_version) {
			unsigned long v;

			if (strcmp(tok[0], "dict") || ntok != 2) {
				rc = fail(&ps, HMB_E_DICT,
					  "the first statement must be 'dict %d' (format version)",
					  HMB_DICT_VERSION);
				goto out;
			}
			if (parse_uint(tok[1], 0xffffffffUL, &v) || v == 0 ||
			    v > HMB_DICT_VERSION) {
				rc = fail(&ps, HMB_E_DICT,
					  "dictionary format version '%s' not supported (this parser reads version %d)",
					  tok[1], HMB_DICT_VERSION);
				goto out;
			}
			have_version = 1;
		} else if (!strcmp(tok[0], "event")) {
			unsigned int here = ps.line;

			rc = finish_event(d, &ps);
			if (rc)
				goto out;
			ps.line = here;
			rc = add_event(d, &ps, tok, ntok);
			if (rc < 0)
				goto out;
			have_len = rc;
			rc = 0;
		} else if (!strcmp(tok[0], "field")) {
			rc = add_field(d, &ps, tok, ntok, have_len);
			if (rc)
				goto out;
		} else if (!strcmp(tok[0], "dict")) {
			rc = fail(&ps, HMB_E_DICT, "'dict' given twice");
			goto out;
		} else {
			rc = fail(&ps, HMB_E_DICT,
				  "unknown statement '%s' (dict, event, field)",
				  tok[0]);
			goto out;
		}
	}
	if (!have_version) {
		ps.line = ps.line ? ps.line : 1;
		rc = fail(&ps, HMB_E_DICT,
			  "empty dictionary: no 'dict %d' line", HMB_DICT_VERSION);
		goto out;
	}
	rc = finish_event(d, &ps);
out:
	free(buf);
	if (rc) {
		hmb_dict_free(d);
		return rc;
	}
	*out = d;
	return 0;
}

int hmb_dict_load(struct hmb_dict **out, const char *path,
		  struct hmb_error *err)
{
	struct pstate ps = { .name = path, .err = err };
	struct stat st;
	char *text;
	ssize_t n;
	size_t got = 0;
	int fd, rc;

	if (!out || !path)
		return fail(&ps, HMB_E_INVAL, "invalid argument");
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st)) {
		int e = errno;

		if (fd >= 0)
			close(fd);
		rc = fail(&ps, HMB_E_IO, "cannot open: %s", strerror(e));
		if (err)
			err->sys_errno = e;
		return rc;
	}
	if (st.st_size > DICT_MAX_FILE) {
		close(fd);
		return fail(&ps, HMB_E_DICT, "file too large (%lld bytes, limit %u)",
			    (long long)st.st_size, DICT_MAX_FILE);
	}
	text = malloc((size_t)st.st_size + 1);
	if (!text) {
		close(fd);
		return fail(&ps, HMB_E_NOMEM, "out of memory");
	}
	while (got < (size_t)st.st_size) {
		n = read(fd, text + got, (size_t)st.st_size - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			int e = n < 0 ? errno : EIO;

			free(text);
			close(fd);
			rc = fail(&ps, HMB_E_IO, "read failed: %s", strerror(e));
			if (err)
				err->sys_errno = e;
			return rc;
		}
		got += (size_t)n;
	}
	close(fd);
	rc = hmb_dict_parse(out, text, got, path, err);
	free(text);
	return rc;
}

void hmb_dict_free(struct hmb_dict *d)
{
	if (!d)
		return;
	free(d->ev);
	free(d->by_opcode);
	free(d);
}

size_t hmb_dict_count(const struct hmb_dict *d)
{
	return d ? d->n : 0;
}

const struct hmb_dict_event *hmb_dict_event_at(const struct hmb_dict *d,
					       size_t i)
{
	return d && i < d->n ? &d->ev[i] : NULL;
}

const struct hmb_dict_event *hmb_dict_lookup(const struct hmb_dict *d,
					     uint16_t opcode)
{
	if (!d || d->by_opcode[opcode] < 0)
		return NULL;
	return &d->ev[d->by_opcode[opcode]];
}

const struct hmb_dict_event *hmb_dict_by_name(const struct hmb_dict *d,
					      const char *name)
{
	size_t i;

	if (!d || !name)
		return NULL;
	for (i = 0; i < d->n; i++)
		if (!strcmp(d->ev[i].name, name))
			return &d->ev[i];
	return NULL;
}

const struct hmb_dict_field *hmb_dict_field(const struct hmb_dict_event *ev,
					    const char *name)
{
	unsigned int i;

	if (!ev || !name)
		return NULL;
	for (i = 0; i < ev->nfields; i++)
		if (!strcmp(ev->fields[i].name, name))
			return &ev->fields[i];
	return NULL;
}

const struct hmb_dict_event *hmb_dict_phase_event(const struct hmb_dict *d,
						  enum hmb_phase phase)
{
	size_t i;

	if (!d || phase == HMB_PHASE_NONE)
		return NULL;
	for (i = 0; i < d->n; i++)
		if (d->ev[i].phase == phase)
			return &d->ev[i];
	return NULL;
}

int hmb_dict_get(const struct hmb_dict_field *f, const void *payload,
		 size_t len, uint64_t *val)
{
	const uint8_t *p = payload;
	uint64_t v = 0;
	unsigned int i;

	if (!f || !val || (!payload && len) ||
	    (size_t)f->offset + f->size > len)
		return HMB_E_INVAL;
	for (i = 0; i < f->size; i++)	/* little-endian on the wire */
		v |= (uint64_t)p[f->offset + i] << (8 * i);
	if (f->type >= HMB_FT_S8 && f->size < 8 &&
	    (v >> (8 * f->size - 1)) & 1)
		v |= ~0ULL << (8 * f->size);
	*val = v;
	return 0;
}

int hmb_dict_set(const struct hmb_dict_field *f, void *payload, size_t len,
		 uint64_t val)
{
	uint8_t *p = payload;
	unsigned int i;

	if (!f || !payload || (size_t)f->offset + f->size > len)
		return HMB_E_INVAL;
	for (i = 0; i < f->size; i++)
		p[f->offset + i] = (uint8_t)(val >> (8 * i));
	return 0;
}

int hmb_dict_format(const struct hmb_dict_event *ev, const void *payload,
		    size_t len, char *buf, size_t buflen)
{
	size_t pos = 0;
	unsigned int i;
	int n;

	if (buflen)
		buf[0] = 0;
	if (!ev)
		return 0;
	for (i = 0; i < ev->nfields; i++) {
		const struct hmb_dict_field *f = &ev->fields[i];
		char tmp[HMB_DICT_NAME_LEN + 32];
		uint64_t v;

		if (hmb_dict_get(f, payload, len, &v))
			n = snprintf(tmp, sizeof(tmp), "%s%s=?", i ? " " : "",
				     f->name);
		else if (f->type >= HMB_FT_S8)
			n = snprintf(tmp, sizeof(tmp), "%s%s=%lld",
				     i ? " " : "", f->name, (long long)v);
		else
			n = snprintf(tmp, sizeof(tmp), "%s%s=%llu",
				     i ? " " : "", f->name,
				     (unsigned long long)v);
		if (n < 0)
			n = 0;
		if (pos < buflen)
			snprintf(buf + pos, buflen - pos, "%s", tmp);
		pos += (size_t)n;
	}
	return (int)pos;
}
