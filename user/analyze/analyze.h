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
#include "hmbtrace_util.h"

#define PROG "hmb-trace-analyze"
#define HMB_ANALYZE_VERSION HMB_VERSION

/* Exit codes: 0 success, 1 bad input or I/O failure, 2 usage error. */
#define EXIT_BADINPUT	1
#define EXIT_USAGE	2

/* --------------------------------------------------------- output buffer */

/*
 * Output goes through libhmbtrace's buffered writer (struct hmb_outbuf,
 * hmbtrace_util.h); JSON through its one JSON writer.
 *
 * A buffer on a new file @path ("-": stdout), truncated.  Prints the one
 * error line; returns 0 or EXIT_BADINPUT (nothing left open).
 */
int ob_create(struct hmb_outbuf *ob, const char *path, size_t cap);
/*
 * Flush and close what ob_create opened; @rc is the result so far.
 * Returns @rc, or EXIT_BADINPUT if it was 0 and closing the file failed.
 */
int ob_finish(struct hmb_outbuf *ob, int rc);
/*
 * An output directory @path (convert --to ctf), new or empty, written as a
 * temporary directory @tmp (@cap bytes) beside it and renamed over it by
 * od_finish() when @rc is 0, else removed with a line saying so.  @out
 * (PATH_MAX bytes) is the directory renamed over: @path, or the directory
 * a symbolic link @path points to.  Both print the one error line and
 * return 0 or EXIT_BADINPUT; od_finish returns @rc when it was not 0.
 */
int od_create(const char *path, char *out, char *tmp, size_t cap);
int od_finish(const char *path, const char *out, const char *tmp, int rc);

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
	unsigned int epoch_lines[HMB_SIDECAR_MAX_EPOCHS];	/* their lines */
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
/*
 * A dump's sidecar epochs up to the record at dump offset @at: a new
 * accounting epoch for an offset at @at, a warning (and nothing else) for
 * one before it, inside a record.  input_epochs_end(): at the end of the
 * dump, a warning for each offset left (past the last record).
 */
void input_epochs_to(struct input *in, uint64_t at);
void input_epochs_end(struct input *in);
/* Print the one error line for @err about @in. */
void input_report(const struct input *in, const struct hmb_error *err);
void input_close(struct input *in);

/* Print "PROG: what" as the one error line. */
__attribute__((format(printf, 1, 2)))
void errorf(const char *fmt, ...);
/* The subcommand running (NULL before one is chosen, and for help). */
extern const char *usage_cmd;
/*
 * Print the usage-error line, "PROG: CMD: what (try 'PROG CMD --help')",
 * naming usage_cmd.  The caller returns EXIT_USAGE itself, not
 * hmb_usage_exit(): some checks come after the input is open (export's)
 * or hand false back to their caller.
 */
__attribute__((format(printf, 1, 2)))
void usagef(const char *fmt, ...);

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
int cmd_pel(int argc, char **argv);
void usage_export(FILE *f);
void usage_pel(FILE *f);
void usage_decode(FILE *f);
void usage_convert(FILE *f);
void usage_stats(FILE *f);

/* Record formatters (also used by convert); @dict may be NULL (raw). */
enum rec_format { FMT_TEXT, FMT_JSONL, FMT_CSV, FMT_CTF };
void fmt_record(struct hmb_outbuf *ob, enum rec_format fmt,
		const struct hmb_dict *dict, const struct hmb_record *rec);
void fmt_header(struct hmb_outbuf *ob, enum rec_format fmt,
		const struct hmb_dict *dict);

/* Records with their dictionary event name and payload fields (evdict.c). */
void fmt_dict_text(struct hmb_outbuf *ob, const struct hmb_dict_event *ev,
		   const struct hmb_record *rec);
void fmt_dict_json(struct hmb_json *j, const struct hmb_dict_event *ev,
		   const struct hmb_record *rec);

/*
 * Stream every new data record of @in into @ob (decode, convert --to csv
 * and jsonl).  Returns 0, or EXIT_BADINPUT after printing the one error
 * line (input or output).
 */
int stream_records(struct input *in, struct hmb_outbuf *ob,
		   enum rec_format fmt, const struct hmb_dict *dict);

/* CTF 1.8 trace directory (convert --to ctf). */
int ctf_convert(struct input *in, const char *dir,
		const struct hmb_dict *dict);

/*
 * The event dictionary: @path, else $HMB_EVENTS_DICT, else the shipped
 * share/hmb-events.dict, built into the tool.  The one loader of every
 * subcommand.  Prints the one error line and returns EXIT_BADINPUT on
 * failure.
 */
int dict_open(const char *path, struct hmb_dict **out);

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
 * (input_opt), else getopt's error @opt about @argv as the usage-error
 * line.  Returns 0 when taken, non-zero (EXIT_USAGE) for a bad value or
 * an unknown option.
 */
int input_opt_or_usage(struct input_opts *o, int opt, const char *arg,
		       char **argv);
/* Option --@name's value @arg as a number in [@lo, @hi]; 0, or
 * EXIT_USAGE after saying why. */
int parse_count(const char *name, const char *arg, uint64_t lo, uint64_t hi,
		uint64_t *v);
/* --ctrl N: a controller number (nvmeN); 0 or EXIT_USAGE, said. */
int parse_ctrl(const char *arg, long *ctrl);
/* --format text|json: *json set; 0 or EXIT_USAGE, said. */
int parse_text_json(const char *arg, bool *json);
/* -f/--format text|json (@opt 'f') or -j/--json (@opt 'j'): *@json set;
 * 0 or EXIT_USAGE, said. */
int format_opt(int opt, const char *arg, bool *json);

#endif /* HMB_ANALYZE_H */
