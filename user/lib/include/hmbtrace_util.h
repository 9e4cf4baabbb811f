/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * hmbtrace_util.h - what every nvme-hmb-trace tool needs besides the
 * format: the one number parser (options, dictionary, sidecar, trace and
 * perf lines), the one buffered writer with the one JSON writer and
 * escaper (every JSON any tool prints goes through hmb_json), the one
 * usage-error line of every tool, and the one reading of a clock.
 *
 * None of these allocate behind the caller's back, only the usage-error
 * helpers print and only hmb_usage_exit() exits; the writer keeps its
 * first write error for the caller to report.
 */
#ifndef HMBTRACE_UTIL_H
#define HMBTRACE_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/* --------------------------------------------------------------- numbers */

/*
 * An unsigned number at the start of @s: decimal, or hexadecimal after
 * "0x"/"0X" when @base is 0 (16: hex digits, "0x" allowed; 2..15: digits
 * of that base only, so 10 is decimal and 8 octal).  No sign, no leading
 * white space; base 0 never reads octal ("010" is ten).  Returns 0 with
 * *@v and *@end (the first character after it) set; -1 when there is no
 * digit, the value does not fit in 64 bits or @base is not 0 or 2..16.
 */
int hmb_strtou64(const char *s, const char **end, unsigned int base,
		 uint64_t *v);

/* hmb_parse_u64 flags */
#define HMB_NUM_DEC	(1u << 0)	/* decimal only (no "0x") */
#define HMB_NUM_SIZE	(1u << 1)	/* k/K, m/M, g/G suffix (x1024, x1024^2,
					 * x1024^3), then an optional "iB" or "B" */

/*
 * The whole of @s as one number in [@min, @max] (see hmb_strtou64).
 * Returns 0, or -1 (empty, junk after it, out of range, overflow).
 */
int hmb_parse_u64(const char *s, unsigned int flags, uint64_t min,
		  uint64_t max, uint64_t *v);

/*
 * A finite decimal floating-point number at the start of @s ("12", "-3.5",
 * "1e9"; no hex, inf or nan, no leading white space).  Returns 0 with *@v
 * and *@end set, or -1.
 */
int hmb_strtod(const char *s, const char **end, double *v);

/* The whole of @s as a finite number in [@min, @max]; 0 or -1. */
int hmb_parse_double(const char *s, double min, double max, double *v);

/* --------------------------------------------------------- buffered output */

/*
 * A large buffer in front of a file descriptor or a stdio stream.  Hot
 * paths call hmb_ob_reserve() once with an upper bound of what they will
 * append and then the unchecked inline helpers; everything else (and the
 * JSON writer) checks space itself.  After a write error the data is
 * dropped and the first errno kept in @err.
 */
struct hmb_outbuf {
	int fd;			/* -1 when writing to @fp */
	FILE *fp;
	const char *name;	/* for the caller's messages */
	char *buf;
	size_t len, cap;
	int err;		/* first write errno, 0 if none */
};

/* 0, or -ENOMEM. */
int hmb_ob_open(struct hmb_outbuf *ob, int fd, const char *name, size_t cap);
int hmb_ob_open_file(struct hmb_outbuf *ob, FILE *fp, const char *name,
		     size_t cap);
/* Write out what is buffered; 0 or -errno (the first error, kept). */
int hmb_ob_flush(struct hmb_outbuf *ob);
/* Flush and free the buffer (the fd or stream stays open); 0 or errno. */
int hmb_ob_close(struct hmb_outbuf *ob);

static inline int hmb_ob_reserve(struct hmb_outbuf *ob, size_t n)
{
	if (ob->cap - ob->len >= n)
		return 0;
	return hmb_ob_flush(ob);
}

static inline void hmb_ob_putc(struct hmb_outbuf *ob, char c)
{
	ob->buf[ob->len++] = c;
}

static inline void hmb_ob_puts_n(struct hmb_outbuf *ob, const char *s,
				 size_t n)
{
	__builtin_memcpy(ob->buf + ob->len, s, n);
	ob->len += n;
}

/* Append a string literal (only a literal compiles) without strlen. */
#define hmb_ob_lit(ob, s) hmb_ob_puts_n((ob), "" s, sizeof(s) - 1)

/* These check space themselves. */
void hmb_ob_write(struct hmb_outbuf *ob, const char *s, size_t n);
void hmb_ob_puts(struct hmb_outbuf *ob, const char *s);
__attribute__((format(printf, 2, 3)))
void hmb_ob_printf(struct hmb_outbuf *ob, const char *fmt, ...);

/* These need hmb_ob_reserve() first: at most 20, width or digits bytes,
 * and 2 * n for hexbytes. */
void hmb_ob_u64(struct hmb_outbuf *ob, uint64_t v);
void hmb_ob_u64_pad(struct hmb_outbuf *ob, uint64_t v, int width, char pad);
void hmb_ob_hex_fixed(struct hmb_outbuf *ob, uint64_t v, int digits);
void hmb_ob_hexbytes(struct hmb_outbuf *ob, const uint8_t *p, size_t n);

/* ------------------------------------------------------------- text */

/*
 * The one escaper of untrusted text for a terminal or a text line (host
 * event strings, a server's answer, names from files): control characters,
 * DEL, C1 controls (U+0080..U+009F) and bytes that are not valid UTF-8
 * become \xNN, a backslash becomes \\; the rest is copied.  Into @out
 * (@cap bytes), NUL-terminated, cut before an escape that does not fit.
 * Returns @out.  Size @cap as 4 * strlen + 1 to keep everything.
 */
const char *hmb_text_esc(char *out, size_t cap, const char *s);

/* ------------------------------------------------------------------ JSON */

/*
 * The one JSON escaper: the body of a JSON string (no quotes) for the @n
 * bytes at @s.  '"', '\\' and control characters are escaped; so is every
 * byte that is not part of valid UTF-8 (as \u00XX, its Latin-1 reading),
 * so that whatever a hostile input holds, the output stays valid JSON.
 * Checks space itself.
 */
void hmb_json_escape(struct hmb_outbuf *ob, const char *s, size_t n);

/*
 * The one JSON writer: compact (no white space), members in the order
 * written, commas placed by the writer.  Begin an object or array, then
 * hmb_json_key() + a value for each member (or the hmb_json_kv_*
 * shorthand), then end it; hmb_json_nl() ends a JSON Lines line.  Numbers
 * that are not finite are written as null.
 *
 * Member names are names the program chooses, written as they are:
 * hmb_json_key() takes a string literal (and costs a copy of a constant),
 * hmb_json_key_str() any other name ([a-z_][a-z0-9_]*, as dictionary names
 * are).  Text from input goes into values, which are always escaped.
 */
struct hmb_json {
	struct hmb_outbuf *ob;
	bool comma;		/* a value was written: the next one needs ',' */
};

static inline void hmb_json_init(struct hmb_json *j, struct hmb_outbuf *ob)
{
	j->ob = ob;
	j->comma = false;
}

/* Put @open ('{', '[') as a value, or @close ('}', ']', '\n': a new top
 * level) after one. */
static inline void hmb__json_punct(struct hmb_json *j, char c, bool open)
{
	if (hmb_ob_reserve(j->ob, 2))
		return;
	if (open && j->comma)
		hmb_ob_putc(j->ob, ',');
	hmb_ob_putc(j->ob, c);
	j->comma = !open && c != '\n';
}

#define hmb_json_obj(j)		hmb__json_punct((j), '{', true)
#define hmb_json_end(j)		hmb__json_punct((j), '}', false)
#define hmb_json_arr(j)		hmb__json_punct((j), '[', true)
#define hmb_json_end_arr(j)	hmb__json_punct((j), ']', false)
#define hmb_json_nl(j)		hmb__json_punct((j), '\n', false)
void hmb_json_key_str(struct hmb_json *j, const char *key);
void hmb_json_str(struct hmb_json *j, const char *s);
void hmb_json_strn(struct hmb_json *j, const char *s, size_t n);
void hmb_json_i64(struct hmb_json *j, int64_t v);
/* @prec decimals, as printf's "%.*f". */
void hmb_json_dbl(struct hmb_json *j, double v, int prec);
void hmb_json_bool(struct hmb_json *j, bool v);
void hmb_json_null(struct hmb_json *j);
/* A string of @n bytes as lowercase hex digits ("0a1b..."). */
void hmb_json_hex(struct hmb_json *j, const uint8_t *p, size_t n);
/* @v / 10^@decimals, exactly: hmb_json_fixed(j, 1234567, 3) is 1234.567. */
void hmb_json_fixed(struct hmb_json *j, uint64_t v, unsigned int decimals);
/* The comma owed, then a newline: one array element per line. */
void hmb_json_next_line(struct hmb_json *j);
/* A value already formatted as JSON by the caller (a number, a literal). */
void hmb_json_raw(struct hmb_json *j, const char *text);

/* @lit is ",\"name\":" (@n bytes): the comma only after a value. */
static inline void hmb__json_key_lit(struct hmb_json *j, const char *lit,
				     size_t n)
{
	struct hmb_outbuf *ob = j->ob;

	if (hmb_ob_reserve(ob, n))
		return;
	if (j->comma)
		hmb_ob_puts_n(ob, lit, n);
	else
		hmb_ob_puts_n(ob, lit + 1, n - 1);
	j->comma = false;
}

#define hmb_json_key(j, lit)						\
	hmb__json_key_lit((j), ",\"" lit "\":", sizeof(lit) + 3)

static inline void hmb_json_u64(struct hmb_json *j, uint64_t v)
{
	if (hmb_ob_reserve(j->ob, 21))
		return;
	if (j->comma)
		hmb_ob_putc(j->ob, ',');
	j->comma = true;
	hmb_ob_u64(j->ob, v);
}

#define hmb_json_kv_str(j, k, v) \
	do { hmb_json_key(j, k); hmb_json_str(j, v); } while (0)
#define hmb_json_kv_u64(j, k, v) \
	do { hmb_json_key(j, k); hmb_json_u64(j, v); } while (0)
#define hmb_json_kv_i64(j, k, v) \
	do { hmb_json_key(j, k); hmb_json_i64(j, v); } while (0)
#define hmb_json_kv_dbl(j, k, v, prec) \
	do { hmb_json_key(j, k); hmb_json_dbl(j, v, prec); } while (0)
#define hmb_json_kv_bool(j, k, v) \
	do { hmb_json_key(j, k); hmb_json_bool(j, v); } while (0)

/* ---------------------------------------------------------- usage errors */

/* The exit status of a usage error, in every tool. */
#define HMB_EXIT_USAGE	2

/*
 * The one line every tool prints for a bad command line, on stderr:
 *     PROG: WHAT (try 'PROG --help')
 *     PROG: SUB: WHAT (try 'PROG SUB --help')     (@sub not NULL)
 * The caller then exits (or returns) HMB_EXIT_USAGE.
 */
__attribute__((format(printf, 3, 4)))
void hmb_usage_error(const char *prog, const char *sub, const char *fmt, ...);
__attribute__((format(printf, 3, 0)))
void hmb_usage_verror(const char *prog, const char *sub, const char *fmt,
		      va_list ap);

/* The line, then exit(HMB_EXIT_USAGE): for a tool that has nothing to
 * clean up while it reads its command line. */
__attribute__((format(printf, 3, 4), noreturn))
void hmb_usage_exit(const char *prog, const char *sub, const char *fmt, ...);

/*
 * getopt_long() returned '?' or ':' (@opt; opterr = 0 and an optstring
 * that starts with ':'): the usage-error line naming the option, from
 * @argv, optind and optopt.
 */
void hmb_usage_getopt(const char *prog, const char *sub, int opt,
		      char *const argv[]);

/* ------------------------------------------------------------------ time */

/*
 * Clock @id (CLOCK_MONOTONIC, CLOCK_REALTIME, CLOCK_BOOTTIME, ... from
 * <time.h>) now: in nanoseconds (what the sidecar and the exporter record),
 * or in seconds (intervals, deadlines and rates); 0 when @id is no clock.
 */
uint64_t hmb_now_ns(clockid_t id);
double hmb_now_s(clockid_t id);

#ifdef __cplusplus
}
#endif
#endif /* HMBTRACE_UTIL_H */
