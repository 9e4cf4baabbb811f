/* SPDX-License-Identifier: Apache-2.0 */
/*
 * hmb-trace-analyze internals shared by the subcommands.
 */
#ifndef HMB_ANALYZE_H
#define HMB_ANALYZE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "hmbtrace.h"
#include "hmbtrace_dict.h"

#define PROG "hmb-trace-analyze"
#define HMB_ANALYZE_VERSION HMB_VERSION

/* Exit codes: 0 success, 1 bad input or I/O failure, 2 usage error. */
#define EXIT_BADINPUT	1
#define EXIT_USAGE	2

/* --------------------------------------------------------- output buffer */

/*
 * A large buffer in front of a file descriptor.  Formatters append with the
 * inline helpers below and call ob_reserve() once per record with an upper
 * bound of what they will append, so that no helper has to check space.
 */
struct outbuf {
	int fd;
	const char *name;	/* for error messages ("<stdout>", a path) */
	char *buf;
	size_t len;
	size_t cap;
	int err;		/* first write errno, 0 if none */
};

int ob_open(struct outbuf *ob, int fd, const char *name, size_t cap);
int ob_flush(struct outbuf *ob);
/* Flush and free; returns 0 or the first write error's errno. */
int ob_close(struct outbuf *ob);
/*
 * A buffer on a new file @path ("-": stdout), truncated.  Prints the one
 * error line; returns 0 or EXIT_BADINPUT (nothing left open).
 */
int ob_create(struct outbuf *ob, const char *path, size_t cap);
/*
 * Flush and close what ob_create opened; @rc is the result so far.
 * Returns @rc, or EXIT_BADINPUT if it was 0 and closing the file failed.
 */
int ob_finish(struct outbuf *ob, int rc);

static inline int ob_reserve(struct outbuf *ob, size_t n)
{
	if (ob->cap - ob->len >= n)
		return 0;
	return ob_flush(ob);
}

static inline void ob_putc(struct outbuf *ob, char c)
{
	ob->buf[ob->len++] = c;
}

static inline void ob_puts_n(struct outbuf *ob, const char *s, size_t n)
{
	__builtin_memcpy(ob->buf + ob->len, s, n);
	ob->len += n;
}

/* Append a string literal (only a literal compiles) without strlen. */
#define ob_lit(ob, s) ob_puts_n((ob), "" s, sizeof(s) - 1)

void ob_puts(struct outbuf *ob, const char *s);	/* checks space itself */
void ob_u64(struct outbuf *ob, uint64_t v);	/* decimal */
void ob_u64_pad(struct outbuf *ob, uint64_t v, int width, char pad);
void ob_hex_fixed(struct outbuf *ob, uint64_t v, int digits);
void ob_hexbytes(struct outbuf *ob, const uint8_t *p, size_t n);
/* JSON string body (no quotes), escaping as RFC 8259 requires. */
void ob_json_str(struct outbuf *ob, const char *s);
__attribute__((format(printf, 2, 3)))
void ob_printf(struct outbuf *ob, const char *fmt, ...);

/* ----------------------------------------------------------------- input */

/*
 * One trace file being read: the libhmbtrace reader, sequence accounting
 * and the dump's sidecar (version check and accounting epochs).
 */
struct input {
	const char *path;	/* as given ("-" for stdin) */
	const char *name;	/* for messages ("<stdin>" for "-") */
	int fd;
	struct hmb_reader *reader;
	struct hmb_acct *acct;	/* heap: it holds 64 Ki opcode counters */

	/* sidecar */
	bool have_sidecar;
	char meta_path[4096];
	struct hmb_sidecar sidecar;
	uint64_t epoch_offs[HMB_SIDECAR_MAX_EPOCHS];	/* sorted */
	size_t n_epochs;
	size_t next_epoch;	/* index of the next epoch to start */
	uint64_t epochs;	/* epochs started from the sidecar */
	bool err_in_meta;	/* the last error concerns the sidecar */

	/* gaps, kept up to max_gaps */
	struct hmb_gap *gaps;
	size_t ngaps;
	size_t max_gaps;
	uint64_t gaps_omitted;
	struct hmb_gap last_gap;	/* the most recent gap, always kept */
	/* optional: called for every gap as it is found (export) */
	hmb_gap_fn gap_hook;
	void *gap_hook_ctx;
};

struct input_opts {
	const char *meta;	/* explicit sidecar path, or NULL */
	bool no_meta;		/* ignore any sidecar */
	size_t max_gaps;
	uint32_t dup_window;	/* 0: library default */
};

/* Returns 0, or prints the one error line and returns EXIT_BADINPUT. */
int input_open(struct input *in, const char *path,
	       const struct input_opts *opts);
/*
 * Next record to output.  Returns 1 with *@rec set (a new data record),
 * 0 at the end, or EXIT_BADINPUT after printing the one error line (the
 * caller flushes what it has written first: see input_fail()).
 * Markers, ignored records and duplicates are accounted and skipped.
 */
int input_next(struct input *in, struct hmb_record *rec, struct hmb_error *err);
/* Print the one error line for @err about @in. */
void input_report(const struct input *in, const struct hmb_error *err);
void input_close(struct input *in);

/* Print "PROG: what" as the one error line. */
__attribute__((format(printf, 1, 2)))
void errorf(const char *fmt, ...);

/* ----------------------------------------------------------- subcommands */

struct cmd {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *summary;
	void (*usage)(FILE *f);
};

int cmd_decode(int argc, char **argv);
int cmd_convert(int argc, char **argv);
int cmd_stats(int argc, char **argv);
int cmd_export(int argc, char **argv);
void usage_export(FILE *f);
void usage_decode(FILE *f);
void usage_convert(FILE *f);
void usage_stats(FILE *f);

/* Record formatters (also used by convert); @dict may be NULL (raw). */
enum rec_format { FMT_TEXT, FMT_JSONL, FMT_CSV, FMT_CTF };
void fmt_record(struct outbuf *ob, enum rec_format fmt,
		const struct hmb_dict *dict, const struct hmb_record *rec);
void fmt_header(struct outbuf *ob, enum rec_format fmt,
		const struct hmb_dict *dict);

/* Records with their dictionary event name and payload fields (evdict.c). */
void fmt_dict_text(struct outbuf *ob, const struct hmb_dict_event *ev,
		   const struct hmb_record *rec);
void fmt_dict_json(struct outbuf *ob, const struct hmb_dict_event *ev,
		   const struct hmb_record *rec);

/* CTF 1.8 trace directory (convert --to ctf). */
int ctf_convert(struct input *in, const char *dir,
		const struct hmb_dict *dict);

/* Shared option parsing helpers. */
int parse_u64(const char *s, uint64_t *v);
/* Common input options; returns 1 if consumed @opt, 0 if not, -1 on error. */
#define INPUT_LONGOPTS \
	{ "meta", required_argument, NULL, 'M' }, \
	{ "no-meta", no_argument, NULL, 'N' }, \
	{ "dup-window", required_argument, NULL, 'W' }
int input_opt(struct input_opts *o, int opt, const char *arg);
/*
 * The default: branch of a subcommand's option switch: an input option
 * (input_opt), else the subcommand's usage on stderr.  Returns 0 when
 * taken, non-zero (EXIT_USAGE) for a bad value or an unknown option.
 */
int input_opt_or_usage(struct input_opts *o, int opt, const char *arg,
		       void (*usage)(FILE *));
/* --ctrl N: a controller number (nvmeN); 0 or EXIT_USAGE, said. */
int parse_ctrl(const char *arg, long *ctrl);
/* --format text|json: *json set; 0 or EXIT_USAGE, said. */
int parse_text_json(const char *arg, bool *json);

#endif /* HMB_ANALYZE_H */
