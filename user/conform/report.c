// SPDX-License-Identifier: GPL-2.0
/*
 * The verdict: one TAP line per rule (the tool's checks, then the
 * library's record rules), and with --json the same as a JSON document a
 * firmware engineer attaches to a bug: each rule's id, section, text,
 * result, how often it applied and the first violation with the record's
 * seq, cursor and ring offset.  A rule that never applied is a TAP SKIP
 * and "not-exercised" in JSON, never a pass.
 */
#include <stdio.h>
#include <string.h>
#include <json-c/json.h>

#include "conform.h"

struct row {
	const char *id, *section, *what;
	const struct hmb_cf_result *r;
	bool record;		/* a record rule: seq and cursor apply */
};

static const char *result(const struct hmb_cf_result *r)
{
	return r->failed ? "fail" : r->checked ? "pass" : "not-exercised";
}

static json_object *row_json(const struct conform *cf, const struct row *w)
{
	json_object *o = json_object_new_object(), *f;

	json_object_object_add(o, "rule", json_object_new_string(w->id));
	json_object_object_add(o, "section", json_object_new_string(w->section));
	json_object_object_add(o, "text", json_object_new_string(w->what));
	json_object_object_add(o, "result", json_object_new_string(result(w->r)));
	json_object_object_add(o, "checked", json_object_new_int64((int64_t)w->r->checked));
	json_object_object_add(o, "failed", json_object_new_int64((int64_t)w->r->failed));
	if (w->r->failed) {
		f = json_object_new_object();
		if (w->record) {
			if (w->r->have_seq)
				json_object_object_add(f, "seq",
					json_object_new_int64(w->r->seq));
			json_object_object_add(f, "cursor",
				json_object_new_int64((int64_t)w->r->cursor));
			json_object_object_add(f, "ring_offset",
				json_object_new_int64(HMB_RECORD_AREA_OFF +
					(int64_t)(w->r->cursor & (cf->ring_size - 1))));
		}
		json_object_object_add(f, "message", json_object_new_string(w->r->msg));
		json_object_object_add(o, "first_failure", f);
	}
	return o;
}

static json_object *head_json(const struct conform *cf, uint64_t failed)
{
	json_object *o = json_object_new_object(), *id = json_object_new_object();
	json_object *c = json_object_new_object();

	json_object_object_add(o, "tool", json_object_new_string("hmb-trace-conform"));
	json_object_object_add(o, "version", json_object_new_string(HMB_VERSION));
	json_object_object_add(o, "device", json_object_new_string(cf->dev));
	json_object_object_add(o, "namespace", json_object_new_string(cf->ns));
	json_object_object_add(o, "verdict", json_object_new_string(
		cf->aborted ? "incomplete" : failed ? "fail" : "pass"));
	if (cf->aborted)
		json_object_object_add(o, "error", json_object_new_string(cf->abort_msg));
	json_object_object_add(id, "hmpre", json_object_new_int64(cf->id.hmpre));
	json_object_object_add(id, "hmmin", json_object_new_int64(cf->id.hmmin));
	json_object_object_add(id, "hmminds", json_object_new_int64(cf->id.hmminds));
	json_object_object_add(id, "hmmaxd", json_object_new_int64(cf->id.hmmaxd));
	json_object_object_add(o, "identify", id);
	json_object_object_add(o, "ring_size", json_object_new_int64(cf->ring_size));
	json_object_object_add(o, "slice_address", json_object_new_int64((int64_t)cf->slice.pa));
	json_object_object_add(o, "descriptors", json_object_new_int64(cf->nfill + 1));
	json_object_object_add(o, "hsize_pages", json_object_new_int64(cf->hsize));
	json_object_object_add(c, "io_commands", json_object_new_int64((int64_t)cf->io_ops * 2));
	json_object_object_add(c, "records", json_object_new_int64((int64_t)cf->ck.records));
	json_object_object_add(c, "wrap_markers", json_object_new_int64((int64_t)cf->ck.markers));
	json_object_object_add(c, "implicit_skips", json_object_new_int64((int64_t)cf->ck.implicit_skips));
	json_object_object_add(c, "lost", json_object_new_int64((int64_t)cf->ck.lost));
	json_object_object_add(c, "epochs", json_object_new_int64((int64_t)cf->ck.epochs));
	json_object_object_add(o, "counts", c);
	json_object_object_add(o, "failures", json_object_new_int64((int64_t)failed));
	return o;
}

static void tap_line(const struct conform *cf, int n, const struct row *w)
{
	if (w->r->failed) {
		printf("not ok %d - %s (%s): %s\n", n, w->id, w->section, w->what);
		if (w->record && w->r->have_seq)
			printf("#   first of %llu at seq %u, cursor %llu (ring offset "
			       "0x%llx): %s\n", (unsigned long long)w->r->failed,
			       w->r->seq, (unsigned long long)w->r->cursor,
			       (unsigned long long)(HMB_RECORD_AREA_OFF +
				       (w->r->cursor & (cf->ring_size - 1))), w->r->msg);
		else if (w->record)
			printf("#   first of %llu at cursor %llu: %s\n",
			       (unsigned long long)w->r->failed,
			       (unsigned long long)w->r->cursor, w->r->msg);
		else
			printf("#   %s\n", w->r->msg);
	} else if (w->r->checked) {
		printf("ok %d - %s (%s): %s (%llu checked)\n", n, w->id, w->section,
		       w->what, (unsigned long long)w->r->checked);
	} else {
		printf("ok %d - %s (%s): %s # SKIP not exercised\n", n, w->id,
		       w->section, w->what);
	}
}

/* Print the verdict; the exit status (0 pass, 1 a rule failed, 3 error). */
int report(struct conform *cf)
{
	struct row rows[T_RULES + HMB_CF_RULES];
	json_object *doc = NULL, *arr = NULL;
	uint64_t failed = 0;
	int i, n = 0;

	for (i = 0; i < T_RULES; i++)
		rows[n++] = (struct row){ trules[i].id, trules[i].section,
					  trules[i].what, &cf->res[i], false };
	for (i = 0; i < HMB_CF_RULES; i++) {
		const struct hmb_cf_rule_info *ri = hmb_cf_rule_info(i);

		rows[n++] = (struct row){ ri->id, ri->section, ri->what,
					  &cf->ck.res[i], true };
	}
	printf("1..%d\n", n);
	for (i = 0; i < n; i++) {
		tap_line(cf, i + 1, &rows[i]);
		failed += rows[i].r->failed;
	}
	if (cf->aborted)
		printf("# incomplete: %s\n", cf->abort_msg);
	printf("# %llu records, %llu wrap markers, %llu implicit skips, %llu "
	       "lost, %llu epochs; %llu rule violations\n",
	       (unsigned long long)cf->ck.records, (unsigned long long)cf->ck.markers,
	       (unsigned long long)cf->ck.implicit_skips,
	       (unsigned long long)cf->ck.lost, (unsigned long long)cf->ck.epochs,
	       (unsigned long long)failed);
	if (cf->json) {
		doc = head_json(cf, failed);
		arr = json_object_new_array();
		for (i = 0; i < n; i++)
			json_object_array_add(arr, row_json(cf, &rows[i]));
		json_object_object_add(doc, "rules", arr);
		if (json_object_to_file_ext(cf->json, doc, JSON_C_TO_STRING_PRETTY)) {
			fprintf(stderr, "hmb-trace-conform: cannot write %s\n", cf->json);
			json_object_put(doc);
			return 3;
		}
		json_object_put(doc);
	}
	if (cf->aborted)
		return 3;
	return failed ? 1 : 0;
}
