// SPDX-License-Identifier: Apache-2.0
/*
 * Dictionary-aware output: event names and named payload fields from the
 * event dictionary (docs/events.md, parsed by libhmbtrace).  Records whose
 * opcode the dictionary does not know are printed raw.
 */
#include <stdlib.h>
#include <string.h>

#include "analyze.h"

static void field_value(struct hmb_outbuf *ob, const struct hmb_dict_field *f,
			uint64_t v)
{
	if (f->type >= HMB_FT_S8 && (int64_t)v < 0) {
		hmb_ob_putc(ob, '-');
		hmb_ob_u64(ob, -(uint64_t)v);
	} else {
		hmb_ob_u64(ob, v);
	}
}

/* Bytes of the payload after the last dictionary field, if any. */
static size_t fields_end(const struct hmb_dict_event *ev)
{
	size_t end = ev->min_len;

	for (unsigned int i = 0; i < ev->nfields; i++) {
		size_t e = (size_t)ev->fields[i].offset + ev->fields[i].size;

		if (e > end)
			end = e;
	}
	return end;
}

void fmt_dict_text(struct hmb_outbuf *ob, const struct hmb_dict_event *ev,
		   const struct hmb_record *rec)
{
	size_t len = rec->hdr.payload_len, end = fields_end(ev);

	hmb_ob_putc(ob, ' ');
	hmb_ob_puts_n(ob, ev->name, strlen(ev->name));
	for (unsigned int i = 0; i < ev->nfields; i++) {
		const struct hmb_dict_field *f = &ev->fields[i];
		uint64_t v;

		hmb_ob_putc(ob, ' ');
		hmb_ob_puts_n(ob, f->name, strlen(f->name));
		hmb_ob_putc(ob, '=');
		if (hmb_dict_get(f, rec->payload, len, &v))
			hmb_ob_putc(ob, '?');	/* payload too short */
		else
			field_value(ob, f, v);
	}
	if (len > end) {
		hmb_ob_lit(ob, " tail=");
		hmb_ob_hexbytes(ob, rec->payload + end, len - end);
	}
}

void fmt_dict_json(struct hmb_json *j, const struct hmb_dict_event *ev,
		   const struct hmb_record *rec)
{
	size_t len = rec->hdr.payload_len;

	hmb_json_kv_str(j, "name", ev->name);
	hmb_json_key(j, "fields");
	hmb_json_obj(j);
	for (unsigned int i = 0; i < ev->nfields; i++) {
		const struct hmb_dict_field *f = &ev->fields[i];
		uint64_t v;

		hmb_json_key_str(j, f->name);
		if (hmb_dict_get(f, rec->payload, len, &v))
			hmb_json_null(j);	/* payload too short */
		else if (f->type >= HMB_FT_S8)
			hmb_json_i64(j, (int64_t)v);
		else
			hmb_json_u64(j, v);
	}
	hmb_json_end(j);
}

static int load_dict(const char *path, struct hmb_dict **out)
{
	struct hmb_error err = { 0 };

	if (hmb_dict_load(out, path, &err)) {
		if (strncmp(err.msg, path, strlen(path)) == 0)
			errorf("%s", err.msg);
		else
			errorf("%s: %s", path, err.msg[0] ? err.msg :
			       hmb_strerror(err.code));
		return EXIT_BADINPUT;
	}
	return 0;
}

int dict_open(const char *path, struct hmb_dict **out)
{
	const char *env = getenv("HMB_EVENTS_DICT");
	struct hmb_error err = { 0 };
	const char *text;
	size_t len;
	int rc;

	if (path)
		return load_dict(path, out);
	if (env && *env)
		return load_dict(env, out);
	/* share/hmb-events.dict, built into libhmbtrace */
	text = hmb_dict_builtin(&len);
	rc = hmb_dict_parse(out, text, len, "hmb-events.dict (built in)", &err);
	if (rc) {
		errorf("%s", err.msg[0] ? err.msg : hmb_strerror(rc));
		return EXIT_BADINPUT;
	}
	return 0;
}
