// SPDX-License-Identifier: Apache-2.0
/*
 * hmb-trace-analyze pel: an NVMe Persistent Event Log (log page 0Dh) as
 * nvme-cli saves it raw, decoded by user/nvme/pel.c and printed as text or
 * JSON Lines (docs/analyze.md, "Persistent Event Log").
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "analyze.h"
#include "passthru.h"
#include "pel.h"
#include "pelhost.h"

#define OUTBUF_SIZE	(1u << 18)
/* A log page is read whole: the largest a drive reports is a few MiB. */
#define PEL_MAX_BYTES	(256u << 20)

struct pel_out {
	struct hmb_outbuf *ob;
	struct hmb_json j;
	bool json;
	int idx;		/* list entry open, -1 none */
	/* --device, or FILE with its FILE.clock: the controller's clock
	 * against the host's */
	bool device;
	int clk_status;		/* of Get Features Timestamp; 0: known */
	struct pel_clock clk;
	struct pel_hostmap map;
};

void usage_pel(FILE *f)
{
	fprintf(f,
"Usage: " PROG " pel FILE [-j|--json]\n"
"       " PROG " pel --device /dev/nvmeN [--save FILE] [-j|--json]\n"
"\n"
"Decode an NVMe Persistent Event Log (log page 0Dh) saved raw (FILE, or -\n"
"for stdin; its clock reading FILE.clock is used when there): the header (events, length, drive, timestamp, power-on hours,\n"
"generation, supported events), then every event with its controller,\n"
"timestamp and the fields of its type as the NVMe base specification lays\n"
"them out (SMART/health snapshot, firmware commit, timestamp change,\n"
"power-on/reset, hardware error, namespace change, format, sanitize, set\n"
"feature, telemetry log, thermal excursion, vendor specific).  A length\n"
"that runs past the log stops the walk: the events before it are printed,\n"
"then one line on stderr names the byte and the reason, exit status 1.\n"
"\n"
"Options:\n"
"  -j, --json           JSON Lines: a \"header\" line, then one \"event\" line\n"
"                       per event; 128-bit counters are decimal strings\n"
"      --device DEV     read the log from the controller DEV (/dev/nvmeN;\n"
"                       root: admin passthrough) in a context: establish it,\n"
"                       read, release it (log specific field 1, 0, 2); its\n"
"                       Timestamp feature gives the events on its present\n"
"                       clock the host's time (host_time_ms)\n"
"      --save FILE      with --device, also write the raw log to FILE and\n"
"                       the clock reading to FILE.clock, which places the\n"
"                       log on the host's clock when FILE is read later\n"
"                       (pel FILE, correlate/report/convert/export --pel)\n"
"  -h, --help           this help\n"
"\n"
"Examples:\n"
"  nvme persistent-event-log /dev/nvme0 --action=1      # establish context\n"
"  nvme persistent-event-log /dev/nvme0 --action=0 -b > pel.bin   # read it\n"
"  nvme persistent-event-log /dev/nvme0 --action=2      # release context\n"
"  " PROG " pel pel.bin\n"
"  " PROG " pel --device /dev/nvme0 --save pel.bin\n"
"  " PROG " pel pel.bin -j | jq 'select(.type_name == \"thermal_excursion\")'\n");
}

#define OPT_DEVICE	0x300
#define OPT_SAVE	0x301

static const struct option pel_opts[] = {
	{ "json", no_argument, NULL, 'j' },
	{ "device", required_argument, NULL, OPT_DEVICE },
	{ "save", required_argument, NULL, OPT_SAVE },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 }
};

/* passthru.c's end for a failed system call (the ioctl on --device). */
void die(const char *what)
{
	errorf("pel: %s: %s", what, strerror(errno));
	exit(EXIT_BADINPUT);
}

/* The log of controller @dev, read as pel_read_dev() does; saved to @save
 * too when not NULL.  0 or EXIT_BADINPUT. */
static int from_device(const char *dev, const char *save, uint8_t **buf,
		       size_t *len, struct pel_out *o)
{
	struct pel_err e;
	int fd = open(dev, O_RDONLY | O_CLOEXEC), sfd;
	size_t off = 0;

	if (fd < 0) {
		errorf("%s: cannot open: %s", dev, strerror(errno));
		return EXIT_BADINPUT;
	}
	if (pel_read_dev(fd, PEL_MAX_BYTES, buf, len, &e)) {
		errorf("%s: %s%s", dev, e.off ? "byte 8: " : "", e.msg);
		close(fd);
		return EXIT_BADINPUT;
	}
	o->device = true;
	o->clk_status = pel_clock_dev(fd, &o->clk);
	close(fd);
	if (!save)
		return 0;
	if (!o->clk_status && pel_clock_save(save, &o->clk, dev, &e)) {
		errorf("cannot write: %s", e.msg);
		free(*buf);
		return EXIT_BADINPUT;
	}
	sfd = open(save, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	while (sfd >= 0 && off < *len) {
		ssize_t w = write(sfd, *buf + off, *len - off);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			break;
		off += (size_t)w;
	}
	if (sfd < 0 || off < *len || close(sfd)) {
		errorf("%s: cannot write: %s", save, strerror(errno));
		free(*buf);
		return EXIT_BADINPUT;
	}
	return 0;
}

/* The whole of @path ("-": stdin) in a new buffer; 0 or EXIT_BADINPUT. */
int pel_slurp(const char *path, const char *name, uint8_t **buf,
	      size_t *len)
{
	size_t cap = 1 << 16, n = 0;
	uint8_t *b = malloc(cap);
	int fd = strcmp(path, "-") ? open(path, O_RDONLY | O_CLOEXEC) : 0;

	if (fd < 0 || !b) {
		errorf("%s: cannot open: %s", name,
		       strerror(b ? errno : ENOMEM));
		free(b);
		return EXIT_BADINPUT;
	}
	for (;;) {
		ssize_t r;

		if (n == cap) {
			uint8_t *nb = cap < PEL_MAX_BYTES ? realloc(b, cap * 2) : NULL;

			if (!nb) {
				errorf("%s: %s", name, cap < PEL_MAX_BYTES ?
				       strerror(ENOMEM) :
				       "larger than 256 MiB: not a log page");
				goto fail;
			}
			b = nb;
			cap *= 2;
		}
		r = read(fd, b + n, cap - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			errorf("%s: byte %zu: %s", name, n, strerror(errno));
			goto fail;
		}
		if (r == 0)
			break;
		n += (size_t)r;
	}
	if (fd)
		close(fd);
	*buf = b;
	*len = n;
	return 0;
fail:
	if (fd)
		close(fd);
	free(b);
	return EXIT_BADINPUT;
}

/* "YYYY-MM-DDThh:mm:ss.mmmZ" when the host set the clock (origin 1),
 * "reset+12.345s" otherwise (the controller counts from its reset). */
static void ts_text(char *out, size_t n, const struct pel_ts *t)
{
	time_t s = (time_t)(t->ms / 1000);
	struct tm tm;

	if (t->origin == 1 && gmtime_r(&s, &tm)) {
		size_t l = strftime(out, n, "%Y-%m-%dT%H:%M:%S", &tm);

		snprintf(out + l, n - l, ".%03uZ", (unsigned)(t->ms % 1000));
	} else {
		snprintf(out, n, "reset+%" PRIu64 ".%03us", t->ms / 1000,
			 (unsigned)(t->ms % 1000));
	}
	if (t->synch)
		snprintf(out + strlen(out), n - strlen(out), " (synch)");
}

static void u128_dec(char *out, uint64_t lo, uint64_t hi)
{
	unsigned __int128 v = (unsigned __int128)hi << 64 | lo;
	char tmp[48];
	size_t i = sizeof(tmp);

	tmp[--i] = 0;
	do {
		tmp[--i] = (char)('0' + (int)(v % 10));
		v /= 10;
	} while (v);
	memcpy(out, tmp + i, sizeof(tmp) - i);
}

static void json_ts(struct hmb_json *j, const struct pel_ts *t)
{
	hmb_json_kv_u64(j, "timestamp_ms", t->ms);
	hmb_json_kv_bool(j, "timestamp_synch", t->synch);
	hmb_json_kv_u64(j, "timestamp_origin", t->origin);
}

static void put_header(struct pel_out *o, const struct pel_header *h,
		       size_t len)
{
	char ts[64], poh[48], esc[4 * 257 + 1];
	struct hmb_json *j = &o->j;

	u128_dec(poh, h->poh_lo, h->poh_hi);
	if (o->json) {
		hmb_json_obj(j);
		hmb_json_kv_str(j, "kind", "header");
		hmb_json_kv_u64(j, "lid", h->lid);
		hmb_json_kv_u64(j, "tnev", h->tnev);
		hmb_json_kv_u64(j, "tll", h->tll);
		hmb_json_kv_u64(j, "bytes", len);
		hmb_json_kv_u64(j, "log_revision", h->rv);
		hmb_json_kv_u64(j, "lhl", h->lhl);
		json_ts(j, &h->ts);
		hmb_json_kv_str(j, "power_on_hours", poh);
		hmb_json_kv_u64(j, "power_cycle_count", h->pcc);
		hmb_json_kv_u64(j, "vid", h->vid);
		hmb_json_kv_u64(j, "ssvid", h->ssvid);
		hmb_json_kv_str(j, "sn", h->sn);
		hmb_json_kv_str(j, "mn", h->mn);
		hmb_json_kv_str(j, "subnqn", h->subnqn);
		hmb_json_kv_u64(j, "gen_number", h->gen);
		hmb_json_kv_u64(j, "rci", h->rci);
		hmb_json_key(j, "supported_events");
		hmb_json_arr(j);
		for (unsigned int t = 0; t < 256; t++)
			if (h->seb[t / 8] >> (t % 8) & 1)
				hmb_json_u64(j, t);
		hmb_json_end_arr(j);
		if (o->device) {
			hmb_json_key(j, "host_clock");
			if (o->map.valid && o->map.epoch >= 0) {
				hmb_json_obj(j);
				hmb_json_kv_i64(j, "offset_ms", o->map.real_off_ms);
				hmb_json_kv_u64(j, "bound_ms", o->map.real_err_ms);
				hmb_json_kv_u64(j, "first_event", o->map.epoch);
				hmb_json_kv_u64(j, "ctrl_ms", o->map.ctrl_ms);
				hmb_json_kv_u64(j, "monotonic_ns", o->map.mono_ns);
				hmb_json_kv_u64(j, "monotonic_err_ns", o->map.err_ns);
				hmb_json_kv_u64(j, "drift_ppm", PEL_DRIFT_PPM);
				hmb_json_end(j);
			} else {
				hmb_json_null(j);
			}
		}
		hmb_json_end(j);
		hmb_json_nl(j);
		return;
	}
	ts_text(ts, sizeof(ts), &h->ts);
	hmb_ob_printf(o->ob, "persistent event log: %" PRIu32 " events, %"
		      PRIu64 " bytes (%zu read), revision %u, generation %u\n",
		      h->tnev, h->tll, len, h->rv, h->gen);
	hmb_ob_printf(o->ob, "  model \"%s\"", hmb_text_esc(esc, sizeof(esc),
							       h->mn));
	hmb_ob_printf(o->ob, " serial \"%s\" vid 0x%04x ssvid 0x%04x\n",
		      hmb_text_esc(esc, sizeof(esc), h->sn), h->vid, h->ssvid);
	if (h->subnqn[0])
		hmb_ob_printf(o->ob, "  subnqn %s\n",
			      hmb_text_esc(esc, sizeof(esc), h->subnqn));
	hmb_ob_printf(o->ob, "  timestamp %s, power-on hours %s, power cycles %"
		      PRIu64 "\n", ts, poh, h->pcc);
	if (h->rci >> 18 & 1)
		hmb_ob_printf(o->ob, "  reporting context: port %u, type %u\n",
			      h->rci & 0xffff, h->rci >> 16 & 3);
	hmb_ob_printf(o->ob, "  supported events:");
	for (unsigned int t = 0; t < 256; t++)
		if (h->seb[t / 8] >> (t % 8) & 1)
			hmb_ob_printf(o->ob, " %02Xh", t);
	hmb_ob_printf(o->ob, "\n");
	if (o->device && o->map.valid && o->map.epoch >= 0)
		hmb_ob_printf(o->ob, "  host clock: controller + %" PRId64 " ms "
			      "(+/- %" PRIu64 " ms), events #%ld on; controller "
			      "%" PRIu64 " ms = host monotonic %" PRIu64
			      ".%09" PRIu64 " s (+/- %" PRIu64 " us, + %u ppm "
			      "of an event's age)\n",
			      o->map.real_off_ms, o->map.real_err_ms,
			      o->map.epoch, o->map.ctrl_ms,
			      o->map.mono_ns / 1000000000u,
			      o->map.mono_ns % 1000000000u,
			      o->map.err_ns / 1000, PEL_DRIFT_PPM);
	else if (o->device && o->clk_status)
		hmb_ob_printf(o->ob, "  host clock: unknown (Get Features "
			      "Timestamp: NVMe status 0x%03x)\n",
			      o->clk_status);
}

/*
 * Whether @ev is on the controller's present clock: its wall-clock time
 * (host_time_ms) known.  An event before the host's boot has one, only
 * no CLOCK_MONOTONIC time.
 */
static bool on_host_clock(const struct pel_out *o, const struct pel_event *ev)
{
	uint64_t mono, bound;
	enum pel_unplaced why = pel_place(&o->map, ev, &mono, &bound);

	return o->device && (why == PEL_PLACED || why == PEL_BEFORE_BOOT) &&
	       (int64_t)ev->ts.ms + o->map.real_off_ms >= 0;
}

static void field(const struct pel_field *f, void *arg)
{
	struct pel_out *o = arg;
	struct hmb_json *j = &o->j;
	char num[48], esc[4 * 64 + 1];

	if (o->json) {
		if (f->idx != o->idx) {
			if (o->idx >= 0)
				hmb_json_end(j);
			if (o->idx < 0) {
				hmb_json_key(j, "entries");
				hmb_json_arr(j);
			}
			if (f->idx < 0)
				hmb_json_end_arr(j);
			else
				hmb_json_obj(j);
			o->idx = f->idx;
		}
		hmb_json_key_str(j, f->name);
		switch (f->kind) {
		case PF_UINT:
			hmb_json_u64(j, f->u);
			break;
		case PF_U128:
			u128_dec(num, f->u, f->hi);
			hmb_json_str(j, num);
			break;
		case PF_STR:
			hmb_json_strn(j, (const char *)f->p, f->len);
			break;
		case PF_HEX:
			hmb_json_hex(j, f->p, f->len);
			break;
		}
		return;
	}
	if (f->idx != o->idx) {
		if (f->idx >= 0)
			hmb_ob_printf(o->ob, "\n    [%d]", f->idx);
		o->idx = f->idx;
	}
	switch (f->kind) {
	case PF_UINT:
		hmb_ob_printf(o->ob, " %s=%" PRIu64, f->name, f->u);
		break;
	case PF_U128:
		u128_dec(num, f->u, f->hi);
		hmb_ob_printf(o->ob, " %s=%s", f->name, num);
		break;
	case PF_STR: {
		char s[64];
		size_t l = f->len < sizeof(s) - 1 ? f->len : sizeof(s) - 1;

		memcpy(s, f->p, l);
		s[l] = 0;
		hmb_ob_printf(o->ob, " %s=\"%s\"", f->name,
			      hmb_text_esc(esc, sizeof(esc), s));
		break;
	}
	case PF_HEX:
		hmb_ob_printf(o->ob, " %s=", f->name);
		if (hmb_ob_reserve(o->ob, 2 * f->len) == 0 &&
		    2 * f->len <= o->ob->cap)
			hmb_ob_hexbytes(o->ob, f->p, f->len);
		break;
	}
}

/* One event; 0, or -1 with its data's error in @fe. */
static int put_event(struct pel_out *o, const struct pel_event *ev,
		      struct pel_err *fe)
{
	const char *name = pel_type_name(ev->type);
	struct hmb_json *j = &o->j;
	char ts[64];
	int r;

	o->idx = -1;
	if (o->json) {
		hmb_json_obj(j);
		hmb_json_kv_str(j, "kind", "event");
		hmb_json_kv_u64(j, "index", ev->index);
		hmb_json_kv_u64(j, "offset", ev->off);
		hmb_json_kv_u64(j, "type", ev->type);
		hmb_json_key(j, "type_name");
		if (name)
			hmb_json_str(j, name);
		else
			hmb_json_null(j);
		hmb_json_kv_u64(j, "type_rev", ev->rev);
		hmb_json_kv_u64(j, "ehl", ev->ehl);
		hmb_json_kv_u64(j, "ehai", ev->ehai);
		hmb_json_kv_u64(j, "cntlid", ev->cntlid);
		hmb_json_kv_u64(j, "pelpid", ev->pelpid);
		json_ts(j, &ev->ts);
		if (o->device) {
			uint64_t mono, bound;
			enum pel_unplaced why = pel_place(&o->map, ev, &mono,
							  &bound);

			hmb_json_key(j, "host_time_ms");
			if (on_host_clock(o, ev))
				hmb_json_u64(j, (uint64_t)((int64_t)ev->ts.ms +
							   o->map.real_off_ms));
			else
				hmb_json_null(j);
			hmb_json_key(j, "host_monotonic_ns");
			if (why == PEL_PLACED)
				hmb_json_u64(j, mono);
			else
				hmb_json_null(j);
			hmb_json_kv_u64(j, "host_bound_ns", bound);
			hmb_json_kv_str(j, "host_place",
					pel_unplaced_name(why));
		}
		hmb_json_kv_u64(j, "vsil", ev->vsil);
		hmb_json_kv_u64(j, "el", ev->el);
		if (ev->vsil) {
			hmb_json_key(j, "vsi");
			hmb_json_hex(j, ev->vsi, ev->vsil);
		}
		hmb_json_key(j, "fields");
		hmb_json_obj(j);
	} else {
		ts_text(ts, sizeof(ts), &ev->ts);
		hmb_ob_printf(o->ob, "#%" PRIu32 " @%zu %s ", ev->index,
			      ev->off, ts);
		if (on_host_clock(o, ev)) {
			struct pel_ts host = {
				.ms = (uint64_t)((int64_t)ev->ts.ms +
						 o->map.real_off_ms),
				.origin = 1,
			};

			ts_text(ts, sizeof(ts), &host);
			hmb_ob_printf(o->ob, "(host %s) ", ts);
		}
		hmb_ob_printf(o->ob, "ctrl %u ", ev->cntlid);
		if (name)
			hmb_ob_printf(o->ob, "%s", name);
		else
			hmb_ob_printf(o->ob, "type_%02x", ev->type);
		if (ev->vsil)
			hmb_ob_printf(o->ob, " (%u bytes vendor information)",
				      ev->vsil);
		hmb_ob_printf(o->ob, ":");
	}
	r = pel_fields(ev, field, o, fe);
	if (o->json) {
		if (o->idx >= 0) {
			hmb_json_end(j);
			hmb_json_end_arr(j);
		}
		hmb_json_end(j);
		if (r) {
			hmb_json_key(j, "error");
			hmb_json_obj(j);
			hmb_json_kv_u64(j, "offset", fe->off);
			hmb_json_kv_str(j, "message", fe->msg);
			hmb_json_end(j);
		}
		hmb_json_end(j);
		hmb_json_nl(j);
	} else {
		if (r)
			hmb_ob_printf(o->ob, "\n    error at byte %zu: %s",
				      fe->off, fe->msg);
		hmb_ob_printf(o->ob, "\n");
	}
	return r;
}

int cmd_pel(int argc, char **argv)
{
	struct pel_out o = { .idx = -1 };
	struct hmb_outbuf ob;
	struct pel_header h;
	struct pel_iter it;
	struct pel_event ev;
	struct pel_err e, fe, first;
	bool bad_field = false;
	const char *name, *dev = NULL, *save = NULL;
	uint8_t *buf;
	size_t len;
	int opt, r, rc;

	optind = 1;
	while ((opt = getopt_long(argc, argv, ":jh", pel_opts, NULL)) != -1) {
		switch (opt) {
		case 'j':
			o.json = true;
			break;
		case OPT_DEVICE:
			dev = optarg;
			break;
		case OPT_SAVE:
			save = optarg;
			break;
		case 'h':
			usage_pel(stdout);
			return 0;
		default:
			hmb_usage_getopt(PROG, usage_cmd, opt, argv);
			return EXIT_USAGE;
		}
	}
	if (argc - optind != (dev ? 0 : 1)) {
		usagef(dev ? "--device: no FILE with it" : "expected one FILE");
		return EXIT_USAGE;
	}
	if (save && !dev) {
		usagef("--save: only with --device");
		return EXIT_USAGE;
	}
	if (dev) {
		name = dev;
		if (from_device(dev, save, &buf, &len, &o))
			return EXIT_BADINPUT;
	} else {
		name = strcmp(argv[optind], "-") ? argv[optind] : "<stdin>";
		if (pel_slurp(argv[optind], name, &buf, &len))
			return EXIT_BADINPUT;
		if (strcmp(argv[optind], "-")) {
			r = pel_clock_load(argv[optind], &o.clk, &e);
			if (r < 0) {
				errorf("line %zu of %s", e.off, e.msg);
				free(buf);
				return EXIT_BADINPUT;
			}
			o.device = r == 0;
		}
	}
	if (pel_header(buf, len, &h, &e)) {
		errorf("%s: byte %zu: %s", name, e.off, e.msg);
		free(buf);
		return EXIT_BADINPUT;
	}
	if (hmb_ob_open(&ob, STDOUT_FILENO, "<stdout>", OUTBUF_SIZE)) {
		errorf("out of memory");
		free(buf);
		return EXIT_BADINPUT;
	}
	o.ob = &ob;
	hmb_json_init(&o.j, &ob);
	pel_hostmap_init(&o.map, o.device && !o.clk_status ? &o.clk : NULL,
			 buf, &h);
	put_header(&o, &h, len);
	pel_iter_init(&it, buf, &h);
	while ((r = pel_next(&it, &ev, &e)) == 1) {
		if (put_event(&o, &ev, &fe) && !bad_field) {
			first = fe;
			bad_field = true;
		}
	}
	rc = 0;
	if (hmb_ob_close(&ob)) {
		errorf("<stdout>: %s", strerror(ob.err));
		rc = EXIT_BADINPUT;
	}
	if (r < 0) {
		errorf("%s: byte %zu: %s", name, e.off, e.msg);
		rc = EXIT_BADINPUT;
	} else if (bad_field) {
		errorf("%s: byte %zu: %s", name, first.off, first.msg);
		rc = EXIT_BADINPUT;
	}
	free(buf);
	return rc;
}
