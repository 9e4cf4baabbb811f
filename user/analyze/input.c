// SPDX-License-Identifier: Apache-2.0
/*
 * Input side of every subcommand: a trace file (dump or ring image, or "-"
 * for stdin) read through libhmbtrace's reader, its records run through
 * libhmbtrace's sequence accounting, and the dump's sidecar "<file>.meta"
 * honoured: its version is checked (> 1 refused) and every "epoch=OFFSET"
 * line starts a new accounting epoch at that dump offset (the daemon writes
 * one when the ring was re-initialised and sequence numbers restarted).
 *
 * Memory is constant whatever the input size: the reader streams, the
 * sidecar holds at most HMB_SIDECAR_MAX_EPOCHS epochs, and the list of gaps
 * kept for reporting is bounded.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "analyze.h"

void errorf(const char *fmt, ...)
{
	char line[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	fprintf(stderr, "%s: %s\n", PROG, line);
	fflush(stderr);
}

const char *usage_cmd;

void usagef(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	hmb_usage_verror(PROG, usage_cmd, fmt, ap);
	va_end(ap);
}

static void on_gap(void *ctx, const struct hmb_gap *gap)
{
	struct input *in = ctx;

	in->last_gap = *gap;
	if (in->ngaps < in->max_gaps)
		in->gaps[in->ngaps++] = *gap;
	else
		in->gaps_omitted++;
	if (in->gap_hook)
		in->gap_hook(in->gap_hook_ctx, gap);
}

struct epoch_ent {
	uint64_t off;
	unsigned int line;
};

static int cmp_epoch(const void *a, const void *b)
{
	const struct epoch_ent *x = a, *y = b;

	return x->off < y->off ? -1 : x->off > y->off ? 1 :
	       x->line < y->line ? -1 : x->line > y->line;
}

/* The daemon appends them in order; do not rely on it. */
static void sort_epochs(struct input *in)
{
	static struct epoch_ent e[HMB_SIDECAR_MAX_EPOCHS];

	for (size_t i = 0; i < in->n_epochs; i++)
		e[i] = (struct epoch_ent){ in->epoch_offs[i], in->epoch_lines[i] };
	qsort(e, in->n_epochs, sizeof(e[0]), cmp_epoch);
	for (size_t i = 0; i < in->n_epochs; i++) {
		in->epoch_offs[i] = e[i].off;
		in->epoch_lines[i] = e[i].line;
	}
}

/*
 * An epoch= offset where no record starts says nothing about the records:
 * warned about by its line and ignored (docs/format.md 12.4).
 */
static void bad_epoch(const struct input *in, size_t i, const char *where)
{
	fprintf(stderr, "%s: warning: %s:%u: epoch=%" PRIu64 " %s; ignored\n",
		PROG, in->meta_path, in->epoch_lines[i], in->epoch_offs[i],
		where);
}

int input_opt(struct input_opts *o, int opt, const char *arg)
{
	uint64_t v;

	switch (opt) {
	case 'M':
		o->meta = arg;
		return 1;
	case 'N':
		o->no_meta = true;
		return 1;
	case 'W':
		if (parse_count("dup-window", arg, 1, UINT32_MAX, &v))
			return -1;
		o->dup_window = (uint32_t)v;
		return 1;
	}
	return 0;
}

int input_opt_or_usage(struct input_opts *o, int opt, const char *arg,
		       char **argv)
{
	int rc = input_opt(o, opt, arg);

	if (rc == 0)
		hmb_usage_getopt(PROG, usage_cmd, opt, argv);
	return rc > 0 ? 0 : EXIT_USAGE;
}

int parse_count(const char *name, const char *arg, uint64_t lo, uint64_t hi,
		uint64_t *v)
{
	if (parse_u64(arg, v) || *v < lo || *v > hi) {
		usagef("--%s: '%s' is not a number in %" PRIu64 "..%" PRIu64,
		       name, arg, lo, hi);
		return EXIT_USAGE;
	}
	return 0;
}

int parse_ctrl(const char *arg, long *ctrl)
{
	uint64_t v;

	if (parse_count("ctrl", arg, 0, UINT32_MAX, &v))
		return EXIT_USAGE;
	*ctrl = (long)v;
	return 0;
}

int format_opt(int opt, const char *arg, bool *json)
{
	if (opt == 'j') {
		*json = true;
		return 0;
	}
	return parse_text_json(arg, json);
}

int parse_text_json(const char *arg, bool *json)
{
	if (strcmp(arg, "json") && strcmp(arg, "text")) {
		usagef("--format: unknown format '%s' (expected text or json)",
		       arg);
		return EXIT_USAGE;
	}
	*json = strcmp(arg, "json") == 0;
	return 0;
}

int input_open(struct input *in, const char *path,
	       const struct input_opts *opts)
{
	struct hmb_error err = { 0 };
	bool is_stdin = strcmp(path, "-") == 0;
	int rc;

	memset(in, 0, sizeof(*in));
	in->path = path;
	in->name = is_stdin ? "<stdin>" : path;
	in->fd = -1;
	in->max_gaps = opts->max_gaps;

	if (is_stdin) {
		in->fd = STDIN_FILENO;
	} else {
		in->fd = open(path, O_RDONLY | O_CLOEXEC);
		if (in->fd < 0) {
			errorf("%s: cannot open: %s", path, strerror(errno));
			return EXIT_BADINPUT;
		}
		posix_fadvise(in->fd, 0, 0, POSIX_FADV_SEQUENTIAL);
	}

	/* The sidecar first: a refused version means nothing is decoded. */
	if (!opts->no_meta) {
		struct stat st;
		int n = -1;

		if (opts->meta)
			n = snprintf(in->meta_path, sizeof(in->meta_path),
				     "%s", opts->meta);
		else if (!is_stdin)
			n = snprintf(in->meta_path, sizeof(in->meta_path),
				     "%s.meta", path);
		if (n >= (int)sizeof(in->meta_path)) {
			errorf("%s: sidecar path too long", path);
			goto fail;
		}
		if (n > 0 && (opts->meta || stat(in->meta_path, &st) == 0)) {
			in->err_in_meta = true;
			rc = hmb_sidecar_read(in->meta_path, &in->sidecar, &err);
			if (!rc)
				rc = hmb_sidecar_epoch_lines(in->meta_path,
							     in->epoch_offs,
							     in->epoch_lines,
							     HMB_SIDECAR_MAX_EPOCHS,
							     &in->n_epochs, &err);
			if (rc) {
				input_report(in, &err);
				goto fail;
			}
			in->err_in_meta = false;
			in->have_sidecar = true;
			sort_epochs(in);
		}
	}

	/*
	 * Mapped zero: only the pages of opcodes seen are touched (zeroing
	 * all 512 KiB, even on one transparent huge page, cost ~0.2 ms of
	 * the ~1.1 ms that stats takes on a small file; docs/benchmarks.md).
	 */
	in->acct = hmb_acct_new(opts->dup_window, on_gap, in);
	in->gaps = calloc(in->max_gaps ? in->max_gaps : 1, sizeof(*in->gaps));
	if (!in->acct || !in->gaps) {
		errorf("%s: out of memory", in->name);
		goto fail;
	}

	rc = hmb_reader_open(&in->reader, in->fd, in->name, &err);
	if (rc) {
		input_report(in, &err);
		goto fail;
	}
	return 0;
fail:
	input_close(in);
	return EXIT_BADINPUT;
}

void input_epochs_to(struct input *in, uint64_t at)
{
	while (in->next_epoch < in->n_epochs &&
	       at >= in->epoch_offs[in->next_epoch]) {
		if (at > in->epoch_offs[in->next_epoch]) {
			char where[80];

			snprintf(where, sizeof(where),
				 "is inside a record (the next starts at byte %" PRIu64 ")",
				 at);
			bad_epoch(in, in->next_epoch, where);
		} else {
			hmb_acct_new_epoch(in->acct);
			in->epochs++;
		}
		in->next_epoch++;
	}
}

void input_epochs_end(struct input *in)
{
	for (; in->next_epoch < in->n_epochs; in->next_epoch++)
		bad_epoch(in, in->next_epoch, "is past the dump's last record");
}

int input_next(struct input *in, struct hmb_record *rec, struct hmb_error *err)
{
	for (;;) {
		int rc = hmb_reader_next(in->reader, rec, err);
		bool dump;

		if (rc < 0)
			return rc;
		dump = hmb_reader_dialect(in->reader) == HMB_DIALECT_DUMP;
		if (rc == 0) {
			if (dump)
				input_epochs_end(in);
			return 0;
		}
		/*
		 * A new epoch starts at each sidecar offset: the ring was
		 * re-initialised there and seqs restarted.  Only dumps have
		 * sidecars; a ring image's offsets are not dump offsets.
		 */
		if (dump)
			input_epochs_to(in, rec->offset);
		else
			while (in->next_epoch < in->n_epochs &&
			       rec->offset >= in->epoch_offs[in->next_epoch])
				in->next_epoch++;
		if (hmb_acct_add(in->acct, rec) == HMB_ACCT_NEW)
			return 1;
	}
}

void input_report(const struct input *in, const struct hmb_error *err)
{
	const char *file = in->err_in_meta ? in->meta_path : in->name;
	size_t n = strlen(file);

	/*
	 * libhmbtrace's messages already name the file and say where ("NAME:
	 * ... at byte offset N ..."); add the name when one does not.
	 */
	if (!err->msg[0])
		errorf("%s: offset %llu: %s", file,
		       (unsigned long long)err->offset,
		       hmb_strerror(err->code));
	else if (strncmp(err->msg, file, n) == 0 && err->msg[n] == ':')
		errorf("%s", err->msg);
	else
		errorf("%s: %s", file, err->msg);
}

void input_close(struct input *in)
{
	if (in->reader)
		hmb_reader_close(in->reader);
	if (in->fd > STDIN_FILENO)
		close(in->fd);
	hmb_acct_free(in->acct);
	free(in->gaps);
	in->reader = NULL;
	in->acct = NULL;
	in->gaps = NULL;
	in->fd = -1;
}
