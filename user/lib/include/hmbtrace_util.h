/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * hmbtrace_util.h - what every nvme-hmb-trace tool needs besides the
 * format: the one number parser (options, dictionary, sidecar, trace and
 * perf lines) and the one buffered writer with the one JSON writer and
 * escaper (every JSON any tool prints goes through hmb_json).
 *
 * None of these print, exit or allocate behind the caller's back; the
 * writer keeps its first write error for the caller to report.
 */
#ifndef HMBTRACE_UTIL_H
#define HMBTRACE_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* --------------------------------------------------------------- numbers */

/*
 * An unsigned number at the start of @s: decimal, or hexadecimal after
 * "0x"/"0X" when @base is 0 (16: hex digits, "0x" allowed; 10: decimal
 * only).  No sign, no leading white space, no octal.  Returns 0 with *@v
 * and *@end (the first character after it) set; -1 when there is no digit
 * or the value does not fit in 64 bits.
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
 * hmb_json_key() + a value for each member (or the hmb_json_kv_* shorthand),
 * then end it; hmb_json_nl() ends a JSON Lines line.  Numbers that are not
 * finite are written as null.
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

void hmb_json_obj(struct hmb_json *j);
void hmb_json_end(struct hmb_json *j);		/* '}' */
void hmb_json_arr(struct hmb_json *j);
void hmb_json_end_arr(struct hmb_json *j);	/* ']' */
void hmb_json_nl(struct hmb_json *j);		/* '\n', a new top level */
void hmb_json_key(struct hmb_json *j, const char *key);
void hmb_json_str(struct hmb_json *j, const char *s);
void hmb_json_strn(struct hmb_json *j, const char *s, size_t n);
void hmb_json_u64(struct hmb_json *j, uint64_t v);
void hmb_json_i64(struct hmb_json *j, int64_t v);
/* @prec decimals, as printf's "%.*f". */
void hmb_json_dbl(struct hmb_json *j, double v, int prec);
void hmb_json_bool(struct hmb_json *j, bool v);
void hmb_json_null(struct hmb_json *j);
/* A value already formatted as JSON by the caller (a number, a literal). */
void hmb_json_raw(struct hmb_json *j, const char *text);

static inline void hmb_json_kv_str(struct hmb_json *j, const char *k,
				   const char *v)
{
	hmb_json_key(j, k);
	hmb_json_str(j, v);
}

static inline void hmb_json_kv_u64(struct hmb_json *j, const char *k,
				   uint64_t v)
{
	hmb_json_key(j, k);
	hmb_json_u64(j, v);
}

static inline void hmb_json_kv_i64(struct hmb_json *j, const char *k,
				   int64_t v)
{
	hmb_json_key(j, k);
	hmb_json_i64(j, v);
}

static inline void hmb_json_kv_dbl(struct hmb_json *j, const char *k,
				   double v, int prec)
{
	hmb_json_key(j, k);
	hmb_json_dbl(j, v, prec);
}

static inline void hmb_json_kv_bool(struct hmb_json *j, const char *k,
				    bool v)
{
	hmb_json_key(j, k);
	hmb_json_bool(j, v);
}

#ifdef __cplusplus
}
#endif
#endif /* HMBTRACE_UTIL_H */
