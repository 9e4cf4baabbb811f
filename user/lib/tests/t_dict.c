// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * t_dict.c - unit tests of the event dictionary parser and of the built-in
 * dictionary (TAP).  Usage: t_dict [SHIPPED_DICT]; the default is the
 * shipped share/hmb-events.dict as seen from user/lib (where `make check`
 * runs), which the built-in one must be byte for byte.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hmbtrace_dict.h"
#include "tap.h"

/* Parse @text; expect an error naming @line and containing @needle. */
static void expect_error_len(const char *text, size_t len, unsigned int line,
			     const char *needle, const char *what)
{
	struct hmb_dict *d = (struct hmb_dict *)1;
	struct hmb_error err;
	char want[64];
	int rc;

	memset(&err, 0, sizeof(err));
	rc = hmb_dict_parse(&d, text, len, "t.dict", &err);
	snprintf(want, sizeof(want), "t.dict:%u: ", line);
	if (rc != HMB_E_DICT || d != NULL || err.code != HMB_E_DICT ||
	    strncmp(err.msg, want, strlen(want)) ||
	    !strstr(err.msg, needle))
		printf("# rc=%d msg='%s' want '%s...%s'\n", rc, err.msg, want,
		       needle);
	ok(rc == HMB_E_DICT && d == NULL && err.code == HMB_E_DICT &&
	   !strncmp(err.msg, want, strlen(want)) && strstr(err.msg, needle),
	   "error: %s", what);
}

static void expect_error(const char *text, unsigned int line,
			 const char *needle, const char *what)
{
	expect_error_len(text, strlen(text), line, needle, what);
}

static void test_shipped(const char *path)
{
	struct hmb_dict *d = NULL;
	struct hmb_error err = { 0 };
	const struct hmb_dict_event *ev;
	int rc, phases_ok = 1;
	unsigned int p;
	size_t i;

	rc = hmb_dict_load(&d, path, &err);
	if (rc)
		printf("# %s\n", err.msg);
	ok(rc == 0 && d, "shipped dictionary %s parses", path);
	if (rc)
		return;
	for (p = HMB_PHASE_FETCH; p < HMB_PHASE_COUNT; p++) {
		ev = hmb_dict_phase_event(d, (enum hmb_phase)p);
		if (!ev || ev->key_off[HMB_KEY_SQID] < 0 ||
		    ev->key_off[HMB_KEY_CID] < 0)
			phases_ok = 0;
	}
	ok(phases_ok, "%s: every command phase has an event with sqid and cid keys",
	   "shipped");
	ev = hmb_dict_lookup(d, 0x0100);
	ok(ev && !strcmp(ev->name, "cmd_fetch") &&
	   ev->phase == HMB_PHASE_FETCH && ev->key_off[HMB_KEY_SQID] == 0 &&
	   ev->key_off[HMB_KEY_CID] == 2 && ev->min_len == 24,
	   "%s: cmd_fetch is 0x0100, keys at 0 and 2, 24 payload bytes",
	   "shipped");
	ev = hmb_dict_by_name(d, "gc_start");
	ok(ev && ev->bg_edge == HMB_BG_BEGIN && !strcmp(ev->bg_group, "gc"),
	   "%s: gc_start opens the gc background window", "shipped");
	for (i = 0; i < hmb_dict_count(d); i++)
		if (hmb_dict_lookup(d, hmb_dict_event_at(d, i)->opcode) !=
		    hmb_dict_event_at(d, i))
			break;
	ok(i == hmb_dict_count(d) && i >= 10,
	   "%s: lookup by opcode finds every event", "shipped");
	hmb_dict_free(d);
}

/* hmb_dict_builtin(): the shipped file, byte for byte, and it parses. */
static void test_builtin(const char *path)
{
	struct hmb_error err = { 0 };
	struct hmb_dict *d = NULL;
	const char *text;
	char *file = NULL;
	size_t len, flen = 0;
	FILE *f;

	text = hmb_dict_builtin(&len);
	f = fopen(path, "r");
	if (f) {
		file = malloc(len + 2);
		if (file)
			flen = fread(file, 1, len + 2, f);
		fclose(f);
	}
	ok(file && flen == len && !memcmp(text, file, len) && text[len] == '\0',
	   "built-in dictionary is %s (%zu bytes), NUL-terminated (file: %zu)",
	   path, len, flen);
	free(file);
	ok(hmb_dict_builtin(NULL) == text, "%s", "built-in: the length is optional");
	ok(hmb_dict_parse(&d, text, len, "built-in", &err) == 0 &&
	   hmb_dict_count(d) >= 10, "built-in dictionary parses (%s)", err.msg);
	hmb_dict_free(d);
}

static void test_accessors(void)
{
	static const char text[] =
		"dict 1\n"
		"event 7 ev phase=fetch len=16\n"
		"field sqid u16 0 key=sqid\n"
		"field cid u16 2 key=cid\n"
		"field t s16 4\n"
		"field b s8 6\n"
		"field big u64 8\n";
	struct hmb_dict *d = NULL;
	struct hmb_error err = { 0 };
	const struct hmb_dict_event *ev;
	uint8_t pl[16];
	uint64_t v = 0;
	char buf[128];
	int rc, n;

	rc = hmb_dict_parse(&d, text, strlen(text), "acc", &err);
	ok(rc == 0, "%s: parses", "accessors");
	if (rc)
		return;
	ev = hmb_dict_lookup(d, 7);
	ok(ev && ev->min_len == 16 && ev->nfields == 5,
	   "%s: len=16 kept, 5 fields", "accessors");
	memset(pl, 0, sizeof(pl));
	rc = hmb_dict_set(hmb_dict_field(ev, "cid"), pl, sizeof(pl), 0x40c0);
	rc |= hmb_dict_set(hmb_dict_field(ev, "t"), pl, sizeof(pl),
			   (uint64_t)(int64_t)-40);
	rc |= hmb_dict_set(hmb_dict_field(ev, "b"), pl, sizeof(pl),
			   (uint64_t)(int64_t)-1);
	rc |= hmb_dict_set(hmb_dict_field(ev, "big"), pl, sizeof(pl),
			   0x1122334455667788ULL);
	ok(rc == 0 && pl[2] == 0xc0 && pl[3] == 0x40 && pl[8] == 0x88 &&
	   pl[15] == 0x11, "%s: set writes little-endian", "accessors");
	rc = hmb_dict_get(hmb_dict_field(ev, "t"), pl, sizeof(pl), &v);
	ok(rc == 0 && (int64_t)v == -40, "%s: s16 sign-extends", "accessors");
	rc = hmb_dict_get(hmb_dict_field(ev, "cid"), pl, 3, &v);
	ok(rc == HMB_E_INVAL, "%s: get past the payload end is refused",
	   "accessors");
	n = hmb_dict_format(ev, pl, sizeof(pl), buf, sizeof(buf));
	ok(n > 0 && !strcmp(buf, "sqid=0 cid=16576 t=-40 b=-1 big=1234605616436508552"),
	   "%s: format prints every field", "accessors");
	hmb_dict_format(ev, pl, 4, buf, sizeof(buf));
	ok(!strcmp(buf, "sqid=0 cid=16576 t=? b=? big=?"),
	   "%s: format marks fields beyond a short payload", "accessors");
	n = hmb_dict_format(ev, pl, sizeof(pl), buf, 8);
	ok(n > 8 && strlen(buf) == 7, "%s: format truncates safely",
	   "accessors");
	hmb_dict_free(d);
}

int main(int argc, char **argv)
{
	struct hmb_error err = { 0 };
	struct hmb_dict *d = NULL;

	if (argc > 2) {
		fprintf(stderr, "usage: %s [SHIPPED_DICT]\n", argv[0]);
		return 2;
	}
	test_shipped(argc == 2 ? argv[1] : "../../share/hmb-events.dict");
	test_builtin(argc == 2 ? argv[1] : "../../share/hmb-events.dict");
	test_accessors();

	ok(hmb_dict_parse(&d, "# only\n\ndict 1 # v\n", 19, "c", &err) == 0 &&
	   d && hmb_dict_count(d) == 0, "%s", "comments and blank lines only");
	hmb_dict_free(d);

	ok(hmb_dict_load(&d, "/nonexistent/x.dict", &err) == HMB_E_IO &&
	   strstr(err.msg, "/nonexistent/x.dict") && err.sys_errno != 0,
	   "%s", "missing file: HMB_E_IO naming the path");

	expect_error("", 1, "empty dictionary", "empty input");
	expect_error("event 1 a\n", 1, "first statement must be 'dict 1'",
		     "no version line");
	expect_error("dict 2\n", 1, "not supported", "future version refused");
	expect_error("dict 1\ndict 1\n", 2, "given twice", "dict twice");
	expect_error("dict 1\n\nfoo bar\n", 3, "unknown statement 'foo'",
		     "unknown statement");
	expect_error("dict 1\nfield a u8 0\n", 2, "before any 'event'",
		     "field before event");
	expect_error("dict 1\nevent 0x10000 a\n", 2, "bad opcode",
		     "opcode out of range");
	expect_error("dict 1\nevent -1 a\n", 2, "bad opcode",
		     "negative opcode");
	expect_error("dict 1\nevent 1\n", 2, "needs an opcode and a name",
		     "event without name");
	expect_error("dict 1\nevent 1 Bad\n", 2, "bad event name",
		     "upper-case name");
	expect_error("dict 1\nevent 1 a\nevent 0x1 b\n", 3,
		     "already defined as 'a' on line 2", "duplicate opcode");
	expect_error("dict 1\nevent 1 a\nevent 2 a\n", 3,
		     "already used on line 2", "duplicate event name");
	expect_error("dict 1\nevent 1 a phase=fetched\n", 2,
		     "unknown phase 'fetched'", "unknown phase");
	expect_error("dict 1\nevent 1 a bg=gc\n", 2, "GROUP:EDGE",
		     "bg without edge");
	expect_error("dict 1\nevent 1 a bg=gc:middle\n", 2,
		     "unknown background edge", "bad bg edge");
	expect_error("dict 1\nevent 1 a bg=gc:begin phase=fetch\n", 2,
		     "at most one", "phase and bg together");
	expect_error("dict 1\nevent 1 a colour=red\n", 2,
		     "unknown event attribute 'colour'", "unknown attribute");
	expect_error("dict 1\nevent 1 a len=5000\n", 2, "bad len",
		     "len beyond 4064");
	expect_error("dict 1\nevent 1 a\nfield x u24 0\n", 3,
		     "unknown type 'u24'", "unknown type");
	expect_error("dict 1\nevent 1 a\nfield x u32 4062\n", 3,
		     "bad offset", "field beyond the payload limit");
	expect_error("dict 1\nevent 1 a\nfield x u32 2\n", 3,
		     "not aligned", "misaligned field");
	expect_error("dict 1\nevent 1 a\nfield x u32 0\nfield y u16 2\n", 4,
		     "overlaps field 'x'", "overlapping fields");
	expect_error("dict 1\nevent 1 a\nfield x u8 0\nfield x u8 1\n", 4,
		     "defined twice", "duplicate field name");
	expect_error("dict 1\nevent 1 a\nfield x u32 0 key=cid\n", 3,
		     "must be u16", "32-bit cid key");
	expect_error("dict 1\nevent 1 a\nfield x u16 0 key=qid\n", 3,
		     "unknown key 'qid'", "unknown key");
	expect_error("dict 1\nevent 1 a\nfield x u16 0 key=cid\nfield y u16 2 key=cid\n",
		     4, "already has a cid key", "two cid keys");
	expect_error("dict 1\nevent 1 a len=4\nfield x u32 4\n", 3,
		     "beyond the event's len=4", "field beyond len=");
	expect_error("dict 1\nevent 1 a phase=fetch\nfield s u16 0 key=sqid\n\nevent 2 b\n",
		     2, "lacks a cid key", "phase event without cid (next event)");
	expect_error("dict 1\nevent 1 a phase=fetch\nfield c u16 2 key=cid\n",
		     2, "lacks a sqid key", "phase event without sqid (EOF)");
	expect_error("dict 1\nevent 1 a 1 2 3 4 5 6 7 8 9 10 11 12 13 14\n", 2,
		     "too many words", "too many tokens");
	expect_error_len("dict 1\nevent 1 a\0\n", 18, 2, "NUL byte",
			 "NUL byte");

	return tap_done();
}
