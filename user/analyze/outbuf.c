// SPDX-License-Identifier: Apache-2.0
/*
 * Buffered output with hand-rolled number formatting: decode writes tens of
 * millions of lines, so nothing on the per-record path goes through stdio.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analyze.h"

int ob_open(struct outbuf *ob, int fd, const char *name, size_t cap)
{
	memset(ob, 0, sizeof(*ob));
	ob->fd = fd;
	ob->name = name;
	ob->cap = cap;
	ob->buf = malloc(cap);
	return ob->buf ? 0 : -ENOMEM;
}

int ob_flush(struct outbuf *ob)
{
	size_t off = 0;

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
	/* After an error the data is dropped; the caller reports ob->err. */
	ob->len = 0;
	return ob->err ? -ob->err : 0;
}

int ob_create(struct outbuf *ob, const char *path, size_t cap)
{
	bool std = strcmp(path, "-") == 0;
	int fd = std ? STDOUT_FILENO :
		 open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

	if (fd < 0) {
		errorf("%s: cannot create: %s", path, strerror(errno));
		return EXIT_BADINPUT;
	}
	if (ob_open(ob, fd, std ? "<stdout>" : path, cap)) {
		errorf("out of memory");
		if (!std)
			close(fd);
		return EXIT_BADINPUT;
	}
	return 0;
}

int ob_finish(struct outbuf *ob, int rc)
{
	int fd = ob->fd;

	ob_close(ob);
	if (fd != STDOUT_FILENO && close(fd) && rc == 0) {
		errorf("%s: close: %s", ob->name, strerror(errno));
		rc = EXIT_BADINPUT;
	}
	return rc;
}

int ob_close(struct outbuf *ob)
{
	ob_flush(ob);
	free(ob->buf);
	ob->buf = NULL;
	return ob->err;
}

void ob_puts(struct outbuf *ob, const char *s)
{
	size_t n = strlen(s);

	while (n) {
		size_t room, k;

		if (ob->len == ob->cap)
			ob_flush(ob);
		room = ob->cap - ob->len;
		k = n < room ? n : room;
		memcpy(ob->buf + ob->len, s, k);
		ob->len += k;
		s += k;
		n -= k;
	}
}

static const char digits2[201] =
	"00010203040506070809101112131415161718192021222324252627282930313233"
	"34353637383940414243444546474849505152535455565758596061626364656667"
	"68697071727374757677787980818283848586878889909192939495969798990";

/* Write @v in decimal into the end of @tmp; returns the first digit. */
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

void ob_u64(struct outbuf *ob, uint64_t v)
{
	char tmp[24];
	char *p;

	if (v < 10) {
		ob->buf[ob->len++] = (char)('0' + v);
		return;
	}
	p = u64_digits(v, tmp + sizeof(tmp));
	ob_puts_n(ob, p, (size_t)(tmp + sizeof(tmp) - p));
}

void ob_u64_pad(struct outbuf *ob, uint64_t v, int width, char pad)
{
	char tmp[24];
	char *p = u64_digits(v, tmp + sizeof(tmp));
	int n = (int)(tmp + sizeof(tmp) - p);

	while (n < width) {
		ob->buf[ob->len++] = pad;
		width--;
	}
	ob_puts_n(ob, p, (size_t)n);
}

static const char hexd[] = "0123456789abcdef";

void ob_hex_fixed(struct outbuf *ob, uint64_t v, int digits)
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

void ob_hexbytes(struct outbuf *ob, const uint8_t *p, size_t n)
{
	char *o = ob->buf + ob->len;

	for (size_t i = 0; i < n; i++)
		memcpy(o + 2 * i, &hex2[p[i]], 2);
	ob->len += 2 * n;
}

void ob_json_str(struct outbuf *ob, const char *s)
{
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		ob_reserve(ob, 8);
		if (c == '"' || c == '\\') {
			ob_putc(ob, '\\');
			ob_putc(ob, (char)c);
		} else if (c < 0x20) {
			ob_lit(ob, "\\u00");
			ob_hex_fixed(ob, c, 2);
		} else {
			ob_putc(ob, (char)c);
		}
	}
}

void ob_printf(struct outbuf *ob, const char *fmt, ...)
{
	char tmp[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(tmp, sizeof(tmp), fmt, ap);
	va_end(ap);
	ob_puts(ob, tmp);
}
