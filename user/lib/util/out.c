// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * out.c - buffered output with hand-rolled number formatting, and the one
 * JSON writer and escaper (hmbtrace_util.h).  decode writes tens of
 * millions of lines through it, so nothing on the per-record path goes
 * through stdio.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hmbtrace_util.h"

static int ob_init(struct hmb_outbuf *ob, int fd, FILE *fp, const char *name,
		   size_t cap)
{
	memset(ob, 0, sizeof(*ob));
	ob->fd = fd;
	ob->fp = fp;
	ob->name = name;
	ob->cap = cap < 64 ? 64 : cap;
	ob->buf = malloc(ob->cap);
	return ob->buf ? 0 : -ENOMEM;
}

int hmb_ob_open(struct hmb_outbuf *ob, int fd, const char *name, size_t cap)
{
	return ob_init(ob, fd, NULL, name, cap);
}

int hmb_ob_open_file(struct hmb_outbuf *ob, FILE *fp, const char *name,
		     size_t cap)
{
	return ob_init(ob, -1, fp, name, cap);
}

int hmb_ob_flush(struct hmb_outbuf *ob)
{
	size_t off = 0;

	if (ob->fp) {
		if (ob->len && !ob->err &&
		    fwrite(ob->buf, 1, ob->len, ob->fp) != ob->len)
			ob->err = errno ? errno : EIO;
		ob->len = 0;
		return ob->err ? -ob->err : 0;
	}
	while (off < ob->len && !ob->err) {
		ssize_t n = write(ob->fd, ob->buf + off, ob->len - off);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			ob->err = errno;
			break;
		}
		off += (size_t)n;
	}
	ob->len = 0;
	return ob->err ? -ob->err : 0;
}

int hmb_ob_close(struct hmb_outbuf *ob)
{
	if (ob->buf)
		hmb_ob_flush(ob);
	free(ob->buf);
	ob->buf = NULL;
	ob->cap = 0;
	return ob->err;
}

void hmb_ob_write(struct hmb_outbuf *ob, const char *s, size_t n)
{
	while (n) {
		size_t room, k;

		if (ob->len == ob->cap)
			hmb_ob_flush(ob);
		room = ob->cap - ob->len;
		k = n < room ? n : room;
		memcpy(ob->buf + ob->len, s, k);
		ob->len += k;
		s += k;
		n -= k;
	}
}

void hmb_ob_puts(struct hmb_outbuf *ob, const char *s)
{
	hmb_ob_write(ob, s, strlen(s));
}

void hmb_ob_printf(struct hmb_outbuf *ob, const char *fmt, ...)
{
	char tmp[1024], *big = NULL;
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n >= sizeof(tmp)) {
		big = malloc((size_t)n + 1);
		if (!big) {
			ob->err = ob->err ? ob->err : ENOMEM;
			return;
		}
		va_start(ap, fmt);
		vsnprintf(big, (size_t)n + 1, fmt, ap);
		va_end(ap);
	}
	hmb_ob_write(ob, big ? big : tmp, (size_t)n);
	free(big);
}

static const char digits2[201] =
	"00010203040506070809101112131415161718192021222324252627282930313233"
	"34353637383940414243444546474849505152535455565758596061626364656667"
	"68697071727374757677787980818283848586878889909192939495969798990";

/* Write @v in decimal into the end of a buffer; returns the first digit. */
static char *u64_digits(uint64_t v, char *end)
{
	char *p = end;

	while (v >= 100) {
		unsigned int i = (unsigned int)(v % 100) * 2;

		v /= 100;
		p -= 2;
		p[0] = digits2[i];
		p[1] = digits2[i + 1];
	}
	if (v >= 10) {
		unsigned int i = (unsigned int)v * 2;

		p -= 2;
		p[0] = digits2[i];
		p[1] = digits2[i + 1];
	} else {
		*--p = (char)('0' + v);
	}
	return p;
}

void hmb_ob_u64(struct hmb_outbuf *ob, uint64_t v)
{
	char tmp[24];
	char *p;

	if (v < 10) {
		ob->buf[ob->len++] = (char)('0' + v);
		return;
	}
	p = u64_digits(v, tmp + sizeof(tmp));
	hmb_ob_puts_n(ob, p, (size_t)(tmp + sizeof(tmp) - p));
}

void hmb_ob_u64_pad(struct hmb_outbuf *ob, uint64_t v, int width, char pad)
{
	char tmp[24];
	char *p = u64_digits(v, tmp + sizeof(tmp));
	int n = (int)(tmp + sizeof(tmp) - p);

	while (n < width) {
		ob->buf[ob->len++] = pad;
		width--;
	}
	hmb_ob_puts_n(ob, p, (size_t)n);
}

static const char hexd[] = "0123456789abcdef";

void hmb_ob_hex_fixed(struct hmb_outbuf *ob, uint64_t v, int digits)
{
	char *p = ob->buf + ob->len;

	for (int i = digits - 1; i >= 0; i--) {
		p[i] = hexd[v & 15];
		v >>= 4;
	}
	ob->len += (size_t)digits;
}

/* Two hex characters per byte value, built once. */
static uint16_t hex2[256];

__attribute__((constructor))
static void hex2_init(void)
{
	for (int i = 0; i < 256; i++) {
		char c[2] = { hexd[i >> 4], hexd[i & 15] };

		memcpy(&hex2[i], c, 2);
	}
}

void hmb_ob_hexbytes(struct hmb_outbuf *ob, const uint8_t *p, size_t n)
{
	char *o = ob->buf + ob->len;

	for (size_t i = 0; i < n; i++)
		memcpy(o + 2 * i, &hex2[p[i]], 2);
	ob->len += 2 * n;
}

/* ------------------------------------------------------------------ JSON */

/* Length of the valid UTF-8 sequence at @s (at most @n bytes), or 0. */
static size_t utf8_len(const unsigned char *s, size_t n)
{
	unsigned char c = s[0];
	size_t len, i;
	uint32_t cp;

	if (c < 0xc2 || c > 0xf4)
		return 0;
	len = c < 0xe0 ? 2 : c < 0xf0 ? 3 : 4;
	if (len > n)
		return 0;
	cp = c & (0x7f >> len);
	for (i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (s[i] & 0x3f);
	}
	/* no overlong forms, no surrogates, nothing above U+10FFFF */
	if ((len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) ||
	    (cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff)
		return 0;
	return len;
}

void hmb_json_escape(struct hmb_outbuf *ob, const char *str, size_t n)
{
	const unsigned char *s = (const unsigned char *)str;
	size_t i = 0;

	while (i < n) {
		unsigned char c = s[i];
		size_t u, run = i;

		/* a run of plain ASCII goes out in one copy */
		while (run < n && s[run] >= 0x20 && s[run] < 0x7f &&
		       s[run] != '"' && s[run] != '\\')
			run++;
		if (run > i) {
			hmb_ob_write(ob, (const char *)s + i, run - i);
			i = run;
			continue;
		}
		if (hmb_ob_reserve(ob, 8))
			return;
		if (c == '"' || c == '\\') {
			hmb_ob_putc(ob, '\\');
			hmb_ob_putc(ob, (char)c);
		} else if (c >= 0x80 && (u = utf8_len(s + i, n - i))) {
			hmb_ob_puts_n(ob, (const char *)s + i, u);
			i += u;
			continue;
		} else {
			/* control, DEL, or a byte of no valid UTF-8 */
			hmb_ob_lit(ob, "\\u00");
			hmb_ob_hex_fixed(ob, c, 2);
		}
		i++;
	}
}

const char *hmb_text_esc(char *out, size_t cap, const char *str)
{
	const unsigned char *s = (const unsigned char *)str;
	size_t n = 0, i = 0, len;

	if (!cap)
		return out;
	len = s ? strlen(str) : 0;
	while (i < len) {
		unsigned char c = s[i];
		size_t u = c >= 0x80 ? utf8_len(s + i, len - i) : 0;
		/* U+0080..U+009F: C1 controls (0x9b is CSI) */
		bool c1 = u == 2 && c == 0xc2 && s[i + 1] < 0xa0;

		if (c >= 0x20 && c < 0x7f && c != '\\') {
			if (n + 1 >= cap)
				break;
			out[n++] = (char)c;
			i++;
		} else if (c == '\\') {
			if (n + 2 >= cap)
				break;
			out[n++] = '\\';
			out[n++] = '\\';
			i++;
		} else if (u && !c1) {
			if (n + u >= cap)
				break;
			memcpy(out + n, s + i, u);
			n += u;
			i += u;
		} else {
			/* control, DEL, C1 or a byte of no valid UTF-8 */
			if (n + 4 >= cap)
				break;
			out[n++] = '\\';
			out[n++] = 'x';
			out[n++] = "0123456789abcdef"[c >> 4];
			out[n++] = "0123456789abcdef"[c & 15];
			i++;
		}
	}
	out[n] = 0;
	return out;
}

static void value(struct hmb_json *j, size_t room)
{
	hmb_ob_reserve(j->ob, room + 1);
	if (j->comma)
		hmb_ob_putc(j->ob, ',');
	j->comma = true;
}

void hmb_json_key_str(struct hmb_json *j, const char *key)
{
	struct hmb_outbuf *ob = j->ob;
	size_t n = strlen(key);

	if (hmb_ob_reserve(ob, n + 4))
		return;
	if (j->comma)
		hmb_ob_putc(ob, ',');
	hmb_ob_putc(ob, '"');
	hmb_ob_puts_n(ob, key, n);
	hmb_ob_putc(ob, '"');
	hmb_ob_putc(ob, ':');
	j->comma = false;
}

void hmb_json_strn(struct hmb_json *j, const char *s, size_t n)
{
	value(j, 1);
	hmb_ob_putc(j->ob, '"');
	hmb_json_escape(j->ob, s, n);
	hmb_ob_reserve(j->ob, 1);
	hmb_ob_putc(j->ob, '"');
}

void hmb_json_str(struct hmb_json *j, const char *s)
{
	hmb_json_strn(j, s, strlen(s));
}

void hmb_json_i64(struct hmb_json *j, int64_t v)
{
	value(j, 21);
	if (v < 0) {
		hmb_ob_putc(j->ob, '-');
		hmb_ob_u64(j->ob, (uint64_t)0 - (uint64_t)v);
	} else {
		hmb_ob_u64(j->ob, (uint64_t)v);
	}
}

void hmb_json_dbl(struct hmb_json *j, double v, int prec)
{
	char tmp[64];
	int n;

	if (!isfinite(v)) {
		hmb_json_null(j);
		return;
	}
	n = snprintf(tmp, sizeof(tmp), "%.*f", prec, v);
	if (n < 0 || (size_t)n >= sizeof(tmp)) {	/* beyond 1e60: exponent */
		n = snprintf(tmp, sizeof(tmp), "%.17g", v);
		if (n < 0 || (size_t)n >= sizeof(tmp))
			n = 0;
	}
	/* "-0" is valid JSON but says nothing "0" does not */
	if (n == 2 && tmp[0] == '-' && tmp[1] == '0')
		memmove(tmp, tmp + 1, (size_t)n--);
	value(j, (size_t)n);
	hmb_ob_puts_n(j->ob, tmp, (size_t)n);
}

void hmb_json_hex(struct hmb_json *j, const uint8_t *p, size_t n)
{
	struct hmb_outbuf *ob = j->ob;

	value(j, 1);
	hmb_ob_putc(ob, '"');
	while (n) {
		size_t k = n < 4096 ? n : 4096;

		if (hmb_ob_reserve(ob, 2 * k + 1))
			return;
		hmb_ob_hexbytes(ob, p, k);
		p += k;
		n -= k;
	}
	hmb_ob_reserve(ob, 1);
	hmb_ob_putc(ob, '"');
}

void hmb_json_fixed(struct hmb_json *j, uint64_t v, unsigned int decimals)
{
	uint64_t div = 1;

	if (decimals > 19)
		decimals = 19;
	for (unsigned int i = 0; i < decimals; i++)
		div *= 10;
	value(j, 42);
	hmb_ob_u64(j->ob, v / div);
	if (!decimals)
		return;
	hmb_ob_putc(j->ob, '.');
	hmb_ob_u64_pad(j->ob, v % div, (int)decimals, '0');
}

void hmb_json_next_line(struct hmb_json *j)
{
	if (hmb_ob_reserve(j->ob, 2))
		return;
	if (j->comma)
		hmb_ob_putc(j->ob, ',');
	hmb_ob_putc(j->ob, '\n');
	j->comma = false;
}

void hmb_json_bool(struct hmb_json *j, bool v)
{
	value(j, 5);
	if (v)
		hmb_ob_lit(j->ob, "true");
	else
		hmb_ob_lit(j->ob, "false");
}

void hmb_json_null(struct hmb_json *j)
{
	value(j, 4);
	hmb_ob_lit(j->ob, "null");
}

void hmb_json_raw(struct hmb_json *j, const char *text)
{
	value(j, 0);
	hmb_ob_puts(j->ob, text);
}
