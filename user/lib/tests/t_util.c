// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * t_util.c - the number parser, the buffered writer, the JSON writer and
 * escaper, the usage-error exit and the clock readings of hmbtrace_util.h
 * (TAP).
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/wait.h>

#include "hmbtrace_util.h"
#include "tap.h"

static void test_strtou64(void)
{
	const char *e;
	uint64_t v = 7;

	ok(!hmb_strtou64("123 x", &e, 0, &v) && v == 123 && *e == ' ',
	   "strtou64: decimal, end after the digits");
	ok(!hmb_strtou64("0x1fZ", &e, 0, &v) && v == 0x1f && *e == 'Z',
	   "strtou64: 0x hex with base 0");
	ok(!hmb_strtou64("0x10", &e, 10, &v) && v == 0 && *e == 'x',
	   "strtou64: base 10 stops at the x of 0x");
	ok(!hmb_strtou64("ff", &e, 16, &v) && v == 255,
	   "strtou64: base 16 without prefix");
	ok(!hmb_strtou64("0640", &e, 8, &v) && v == 0640 && !*e,
	   "strtou64: base 8 reads octal");
	ok(!hmb_strtou64("0x10", &e, 8, &v) && v == 0 && *e == 'x',
	   "strtou64: base 8 takes no 0x");
	ok(!hmb_strtou64("789", &e, 8, &v) && v == 7 && *e == '8',
	   "strtou64: base 8 stops at 8");
	ok(hmb_strtou64("1", &e, 1, &v) && hmb_strtou64("1", &e, 17, &v),
	   "strtou64: bases outside 0, 2..16 refused");
	ok(!hmb_strtou64("010", &e, 0, &v) && v == 10,
	   "strtou64: a leading zero is no octal");
	ok(!hmb_strtou64("18446744073709551615", &e, 0, &v) &&
	   v == UINT64_MAX, "strtou64: 2^64 - 1");
	v = 7;
	ok(hmb_strtou64("18446744073709551616", &e, 0, &v) && v == 7,
	   "strtou64: 2^64 overflows, *v untouched");
	ok(hmb_strtou64("-1", &e, 0, &v) && hmb_strtou64(" 1", &e, 0, &v) &&
	   hmb_strtou64("+1", &e, 0, &v) && hmb_strtou64("", &e, 0, &v),
	   "strtou64: sign, white space, empty refused");
}

static void test_parse_u64(void)
{
	uint64_t v = 0;

	ok(!hmb_parse_u64("42", 0, 0, 100, &v) && v == 42, "parse_u64: 42");
	ok(hmb_parse_u64("101", 0, 0, 100, &v) &&
	   hmb_parse_u64("4", 0, 5, 100, &v), "parse_u64: range enforced");
	ok(hmb_parse_u64("42x", 0, 0, 100, &v) && hmb_parse_u64(NULL, 0, 0,
								 1, &v),
	   "parse_u64: junk after the number and NULL refused");
	ok(hmb_parse_u64("0x10", HMB_NUM_DEC, 0, 100, &v) &&
	   !hmb_parse_u64("0x10", 0, 0, 100, &v) && v == 16,
	   "parse_u64: HMB_NUM_DEC refuses hex");
	ok(!hmb_parse_u64("4k", HMB_NUM_SIZE, 0, UINT64_MAX, &v) &&
	   v == 4096, "parse_u64: 4k = 4096");
	ok(!hmb_parse_u64("1MiB", HMB_NUM_SIZE, 0, UINT64_MAX, &v) &&
	   v == 1 << 20 && !hmb_parse_u64("2G", HMB_NUM_SIZE, 0, UINT64_MAX,
					   &v) && v == 2ull << 30 &&
	   !hmb_parse_u64("64B", HMB_NUM_SIZE, 0, UINT64_MAX, &v) && v == 64,
	   "parse_u64: MiB, G and B suffixes");
	ok(hmb_parse_u64("4k", 0, 0, UINT64_MAX, &v) &&
	   hmb_parse_u64("k", HMB_NUM_SIZE, 0, UINT64_MAX, &v) &&
	   hmb_parse_u64("17179869184G", HMB_NUM_SIZE, 0, UINT64_MAX, &v) &&
	   hmb_parse_u64("4kx", HMB_NUM_SIZE, 0, UINT64_MAX, &v),
	   "parse_u64: suffix without the flag, alone, overflowing or "
	   "followed by junk refused");
}

static void test_double(void)
{
	const char *e;
	double v = 0;

	ok(!hmb_strtod("1.5 s", &e, &v) && v == 1.5 && *e == ' ',
	   "strtod: 1.5, end after it");
	ok(!hmb_parse_double("-2e3", -1e9, 1e9, &v) && v == -2000,
	   "parse_double: -2e3");
	ok(!hmb_parse_double(".5", 0, 1, &v) && v == 0.5,
	   "parse_double: .5");
	ok(hmb_parse_double("inf", -1e300, 1e300, &v) &&
	   hmb_parse_double("nan", -1e300, 1e300, &v) &&
	   hmb_parse_double("0x1p3", -1e300, 1e300, &v) &&
	   hmb_parse_double(" 1", -1e300, 1e300, &v) &&
	   hmb_parse_double("1.5x", -1e300, 1e300, &v) &&
	   hmb_parse_double("1e999", -1e300, 1e300, &v) &&
	   hmb_parse_double("", -1e300, 1e300, &v),
	   "parse_double: inf, nan, hex, white space, junk, overflow, empty "
	   "refused");
	ok(hmb_parse_double("5", 0, 1, &v), "parse_double: range enforced");
}

/* What the writer produced into a memory stream, NUL-terminated. */
struct mem {
	FILE *f;
	char *p;
	size_t n;
	struct hmb_outbuf ob;
	struct hmb_json j;
};

static void mem_open(struct mem *m, size_t cap)
{
	m->f = open_memstream(&m->p, &m->n);
	hmb_ob_open_file(&m->ob, m->f, "mem", cap);
	hmb_json_init(&m->j, &m->ob);
}

static const char *mem_text(struct mem *m)
{
	hmb_ob_close(&m->ob);
	fclose(m->f);
	return m->p;
}

static void test_json(void)
{
	struct mem m;
	const char *s;

	mem_open(&m, 64);
	hmb_json_obj(&m.j);
	hmb_json_kv_str(&m.j, "type", "cmd");
	hmb_json_key(&m.j, "cmd");
	hmb_json_obj(&m.j);
	hmb_json_kv_u64(&m.j, "qid", 1);
	hmb_json_kv_i64(&m.j, "neg", -5);
	hmb_json_kv_dbl(&m.j, "ppm", 1.23456, 3);
	hmb_json_kv_dbl(&m.j, "nan", 0.0 / 0.0, 0);
	hmb_json_kv_dbl(&m.j, "z", -0.2, 0);
	hmb_json_kv_bool(&m.j, "ok", true);
	hmb_json_key(&m.j, "fw");
	hmb_json_arr(&m.j);
	hmb_json_u64(&m.j, 1);
	hmb_json_obj(&m.j);
	hmb_json_end(&m.j);
	hmb_json_null(&m.j);
	hmb_json_end_arr(&m.j);
	hmb_json_key(&m.j, "e");
	hmb_json_arr(&m.j);
	hmb_json_end_arr(&m.j);
	hmb_json_end(&m.j);
	hmb_json_end(&m.j);
	hmb_json_nl(&m.j);
	hmb_json_obj(&m.j);
	hmb_json_end(&m.j);
	hmb_json_nl(&m.j);
	s = mem_text(&m);
	if (!ok(!strcmp(s, "{\"type\":\"cmd\",\"cmd\":{\"qid\":1,"
			"\"neg\":-5,\"ppm\":1.235,\"nan\":null,\"z\":0,"
			"\"ok\":true,\"fw\":[1,{},null],\"e\":[]}}\n{}\n"),
		"json: nested objects and arrays, commas, numbers, a buffer "
		"smaller than the output"))
		diag("got %s", s);
	free(m.p);
}

static const char *escaped(const char *in, size_t n)
{
	static char out[256];
	struct mem m;

	mem_open(&m, 64);
	hmb_json_strn(&m.j, in, n);
	snprintf(out, sizeof(out), "%s", mem_text(&m));
	free(m.p);
	return out;
}

static void test_escape(void)
{
	ok(!strcmp(escaped("<b>X</b>", 8), "\"<b>X</b>\""),
	   "escape: markup is plain text to JSON");
	ok(!strcmp(escaped("read\\", 5), "\"read\\\\\""),
	   "escape: a trailing backslash is doubled");
	ok(!strcmp(escaped("a\"b\n\t\x01\x7f", 7),
		   "\"a\\\"b\\u000a\\u0009\\u0001\\u007f\""),
	   "escape: quote, control characters and DEL");
	ok(!strcmp(escaped("\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80", 9),
		   "\"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\""),
	   "escape: valid UTF-8 (2, 3 and 4 bytes) kept");
	ok(!strcmp(escaped("\xff\xc0\xaf\xc3\xed\xa0\x80", 7),
		   "\"\\u00ff\\u00c0\\u00af\\u00c3\\u00ed\\u00a0\\u0080\""),
	   "escape: invalid UTF-8 (stray, overlong, cut short, surrogate) "
	   "as \\u00XX, so the output stays valid JSON");
	ok(!strcmp(escaped("a\0b", 3), "\"a\\u0000b\""),
	   "escape: an embedded NUL");
}

static void test_text_esc(void)
{
	char b[64], small[8];

	ok(!strcmp(hmb_text_esc(b, sizeof(b), "read"), "read"),
	   "text escape: plain text kept");
	ok(!strcmp(hmb_text_esc(b, sizeof(b), "\x1b[31mX\x1b]0;t\x07"),
		   "\\x1b[31mX\\x1b]0;t\\x07"),
	   "text escape: ESC and BEL as \\xNN, nothing a terminal acts on");
	ok(!strcmp(hmb_text_esc(b, sizeof(b), "a\\b\n\r\t\x7f"),
		   "a\\\\b\\x0a\\x0d\\x09\\x7f"),
	   "text escape: backslash doubled, control characters and DEL");
	ok(!strcmp(hmb_text_esc(b, sizeof(b), "\xc3\xa9\xc2\x9b" "1m\xff\x9b"),
		   "\xc3\xa9\\xc2\\x9b1m\\xff\\x9b"),
	   "text escape: UTF-8 kept, C1 (CSI) and invalid bytes escaped");
	ok(!strcmp(hmb_text_esc(small, sizeof(small), "abcd\x1b"), "abcd"),
	   "text escape: cut before an escape that does not fit");
	ok(!strcmp(hmb_text_esc(b, sizeof(b), NULL), ""),
	   "text escape: NULL is empty");
}

static void test_outbuf(void)
{
	struct mem m;
	char big[3000];
	const char *s;

	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = 0;
	mem_open(&m, 64);
	hmb_ob_printf(&m.ob, "%s|%d", big, 42);
	hmb_ob_reserve(&m.ob, 64);
	hmb_ob_u64(&m.ob, 18446744073709551615ull);
	hmb_ob_u64_pad(&m.ob, 7, 3, '0');
	hmb_ob_hex_fixed(&m.ob, 0xab, 4);
	s = mem_text(&m);
	ok(strlen(s) == sizeof(big) - 1 + 3 + 20 + 3 + 4 &&
	   !strcmp(s + sizeof(big) - 1, "|4218446744073709551615007"
		   "00ab"), "outbuf: printf longer than 1 KiB and the buffer, "
	   "numbers");
	free(m.p);
}

/* hmb_usage_exit() in a child: what it printed on stderr, its status. */
static int usage_exit_child(const char *sub, char *line, size_t cap)
{
	int fd[2], st = -1;
	ssize_t n, got = 0;
	pid_t pid;

	if (pipe(fd))
		return -1;
	pid = fork();
	if (pid == 0) {
		dup2(fd[1], 2);
		hmb_usage_exit("prog", sub, "bad %s '%d'", "count", 7);
	}
	close(fd[1]);
	while (got < (ssize_t)cap - 1 &&
	       (n = read(fd[0], line + got, cap - 1 - (size_t)got)) > 0)
		got += n;
	line[got] = 0;
	close(fd[0]);
	if (pid < 0 || waitpid(pid, &st, 0) != pid)
		return -1;
	return st;
}

static void test_usage_exit(void)
{
	char line[256];
	bool same;
	int st;

	st = usage_exit_child(NULL, line, sizeof(line));
	same = !strcmp(line, "prog: bad count '7' (try 'prog --help')\n");
	line[strcspn(line, "\n")] = 0;
	ok(WIFEXITED(st) && WEXITSTATUS(st) == HMB_EXIT_USAGE && same,
	   "usage_exit: the one line, exit 2 (got '%s', status 0x%x)", line, st);
	st = usage_exit_child("sub", line, sizeof(line));
	same = !strcmp(line,
		       "prog: sub: bad count '7' (try 'prog sub --help')\n");
	line[strcspn(line, "\n")] = 0;
	ok(WIFEXITED(st) && WEXITSTATUS(st) == HMB_EXIT_USAGE && same,
	   "usage_exit: a subcommand's line, exit 2 (got '%s', status 0x%x)",
	   line, st);
}

static uint64_t raw_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* Each reading lies between two made around it, in either unit. */
static void test_now(void)
{
	static const clockid_t ids[] = { CLOCK_MONOTONIC, CLOCK_REALTIME,
					 CLOCK_BOOTTIME };
	static const char *const names[] = { "monotonic", "realtime",
					     "boottime" };

	for (int i = 0; i < 3; i++) {
		uint64_t a = raw_ns(ids[i]), v = hmb_now_ns(ids[i]);
		uint64_t b = raw_ns(ids[i]);
		double s = hmb_now_s(ids[i]), c = (double)raw_ns(ids[i]) / 1e9;

		ok(a <= v && v <= b, "now_ns: %s %llu in [%llu, %llu]", names[i],
		   (unsigned long long)v, (unsigned long long)a,
		   (unsigned long long)b);
		ok(s >= (double)b / 1e9 - 1e-6 && s <= c + 1e-6,
		   "now_s: %s %.9f in [%.9f, %.9f]", names[i], s,
		   (double)b / 1e9, c);
	}
	ok(hmb_now_ns((clockid_t)1000) == 0 && hmb_now_s((clockid_t)1000) == 0,
	   "now: 0 from a clock id that is no clock");
}

int main(void)
{
	test_strtou64();
	test_parse_u64();
	test_double();
	test_json();
	test_escape();
	test_text_esc();
	test_outbuf();
	test_usage_exit();
	test_now();
	return tap_done();
}
