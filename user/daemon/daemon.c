// SPDX-License-Identifier: GPL-2.0
/*
 * hmb-trace-daemon - drain an HMB trace ring into a dump file.
 *
 * The consumer loop of the end-to-end flow: acquire head, copy whole
 * validated records out of the ring (libhmbtrace), write them verbatim to
 * the output (wrap markers included: format.md 12.1), and only then
 * publish the tail (9.4), once per batch.  Signals arrive through a
 * signalfd and are handled between batches, so every file holds whole
 * records and no record is lost or repeated across a reopen.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/uio.h>

#include "daemon.h"
#include "hmbtrace_util.h"

/* ---------------------------------------------------------------- signals */

static int signals_setup(struct daemon *d)
{
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGHUP);
	if (d->o.snap_sig)
		sigaddset(&set, d->o.snap_sig);
	if (sigprocmask(SIG_BLOCK, &set, NULL)) {
		log_msg(LOG_ERR, "sigprocmask: %s", strerror(errno));
		return -1;
	}
	signal(SIGPIPE, SIG_IGN);
	d->sigfd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
	if (d->sigfd < 0) {
		log_msg(LOG_ERR, "signalfd: %s", strerror(errno));
		return -1;
	}
	return 0;
}

/* Read pending signals into flags; never blocks. */
void signals_read(struct daemon *d)
{
	struct signalfd_siginfo si;

	while (read(d->sigfd, &si, sizeof(si)) == sizeof(si)) {
		if (d->o.snap_sig && (int)si.ssi_signo == d->o.snap_sig) {
			/* Handled between batches, after one more drain. */
			d->win.pending++;
			continue;
		}
		switch (si.ssi_signo) {
		case SIGHUP:
			d->reopen = true;
			break;
		default:
			if (!d->stop)
				log_msg(LOG_INFO, "%s: finishing the batch in hand",
					strsignal((int)si.ssi_signo));
			d->stop = true;
			d->stop_sig = (int)si.ssi_signo;
			break;
		}
	}
}

/* Sleep up to @ms milliseconds, waking early for a signal. */
void sleep_ms(struct daemon *d, double ms)
{
	struct pollfd pfd = { .fd = d->sigfd, .events = POLLIN };
	struct timespec ts;

	ts.tv_sec = (time_t)(ms / 1000);
	ts.tv_nsec = (long)((ms - ts.tv_sec * 1000.0) * 1e6);
	if (ppoll(&pfd, 1, &ts, NULL) > 0)
		signals_read(d);
}

/* ------------------------------------------------------------ the ring */

/* Log ring flag transitions, once each, and count them. */
static void check_flags(struct daemon *d)
{
	uint32_t f = hmb_consumer_flags(d->c), old = d->flags, ch = f ^ old;

	if (!ch)
		return;
	if (ch & HMB_RING_FLAG_OVERFLOWED) {
		d->st.overflow_events++;
		if (f & HMB_RING_FLAG_OVERFLOWED)
			log_msg(LOG_WARN, "ring overflow: the producer is dropping records (OVERFLOWED set, tail %" PRIu64 ", head %" PRIu64 ")",
				hmb_consumer_cursor(d->c), hmb_consumer_head(d->c));
		else
			log_msg(LOG_INFO, "ring overflow over (OVERFLOWED cleared)");
	}
	if (ch & HMB_RING_FLAG_FROZEN) {
		d->st.frozen_events++;
		if (f & HMB_RING_FLAG_FROZEN) {
			log_msg(LOG_WARN, "ring FROZEN: the producer stopped (controller reset or shutdown); draining what is left");
		} else {
			log_msg(LOG_INFO, "ring FROZEN cleared");
		}
	}
	if (ch & ~HMB_RING_FLAGS_KNOWN) {
		d->st.unknown_flag_events++;
		log_msg(LOG_WARN, "ring has unknown flag bits 0x%x (flags 0x%x); ignoring them",
			f & ~HMB_RING_FLAGS_KNOWN, f);
	}
	d->flags = f;
}

/*
 * Nothing to read: ask the consumer whether a frozen ring was re-initialised
 * (FROZEN set, header rewritten, FROZEN cleared).  If so, a new producer
 * epoch starts here: log it and note the output offset in the sidecar.
 * Returns 1 on a new epoch, 0 if not, -1 on a corrupt rewritten header.
 */
static int check_reinit(struct daemon *d)
{
	struct hmb_error err;
	int r;

	r = hmb_consumer_reinit(d->c, &err);
	if (r <= 0) {
		if (r < 0) {
			log_msg(LOG_ERR, "ring corrupt after re-initialisation: %s", err.msg);
			d->exit_code = EXIT_CORRUPT;
			d->exit_reason = "corrupt";
		}
		return r;
	}
	d->st.reinits++;
	d->published = hmb_consumer_cursor(d->c);
	check_flags(d);
	if (d->o.snap_sig)
		window_epoch(d);
	log_msg(LOG_WARN, "ring re-initialised (epoch %" PRIu64 "): carrying on from tail %" PRIu64
		" at output offset %" PRIu64, d->st.reinits, hmb_consumer_cursor(d->c),
		d->out_size);
	if (d->out_is_file) {
		char path[4096];

		snprintf(path, sizeof(path), "%s.meta", d->o.output);
		if (hmb_sidecar_append_epoch(path, d->out_size, &err))
			log_msg(LOG_WARN, "cannot note the new epoch in %s: %s", path,
				err.msg);
	}
	return 1;
}

/* Stop on a corrupt ring: the good prefix has been written and published. */
static void ring_corrupt(struct daemon *d, const struct hmb_error *err)
{
	if (err->code == HMB_E_IO) {
		/* pread of a ring file cut short: what SIGBUS is to the map */
		log_msg(LOG_ERR, "ring file %s gone: %s", d->src.path, err->msg);
		d->exit_code = EXIT_GONE;
		d->exit_reason = "ring gone";
		return;
	}
	log_msg(LOG_ERR, "ring corrupt: %s", err->msg);
	d->exit_code = EXIT_CORRUPT;
	d->exit_reason = "corrupt";
}

static int publish(struct daemon *d)
{
	struct hmb_error err;

	if (hmb_consumer_commit(d->c, &err) == 0) {
		d->published = hmb_consumer_cursor(d->c);
		return 0;
	}
	if (d->src.kind == SRC_DEVICE && (err.sys_errno == ENODEV || err.sys_errno == EIO)) {
		log_msg(LOG_ERR, "device %s gone: %s", d->src.path, err.msg);
		d->exit_code = EXIT_GONE;
		d->exit_reason = "device gone";
		return -1;
	}
	if (d->flags & HMB_RING_FLAG_FROZEN) {
		/* Ring re-initialised under us: the tail is the producer's now. */
		log_msg(LOG_DEBUG, "tail not published (ring being re-initialised): %s", err.msg);
		return 0;
	}
	log_msg(LOG_ERR, "cannot publish the tail: %s", err.msg);
	d->exit_code = EXIT_ERR;
	d->exit_reason = "publish failed";
	return -1;
}

static void throttle(struct daemon *d)
{
	double due = d->st.t0 + d->st.bytes / d->o.throttle;
	double t = hmb_now_s(CLOCK_MONOTONIC);

	if (due > t)
		sleep_ms(d, (due - t) * 1000);
}

/*
 * Leave @avail bytes in the ring a little longer?  Below the watermark
 * (at most a quarter of the ring, so a burst cannot fill it meanwhile),
 * until the oldest of them waited --max-delay-us: fewer, larger writes
 * and tail updates for the same bytes.  Never when stopping, on --once,
 * or when the producer has set a flag (FROZEN, OVERFLOWED: drain now).
 */
static bool hold(struct daemon *d, uint64_t avail)
{
	size_t wm = d->o.watermark;
	double t;

	if (wm > d->src.ring_size / 4)
		wm = d->src.ring_size / 4;
	if (avail >= wm || d->stop || d->reopen || d->o.once || d->win.pending ||
	    (hmb_consumer_flags(d->c) & (HMB_RING_FLAG_FROZEN |
					 HMB_RING_FLAG_OVERFLOWED))) {
		d->hold_since = 0;
		return false;
	}
	t = hmb_now_s(CLOCK_MONOTONIC);
	if (!d->hold_since)
		d->hold_since = t;
	if ((t - d->hold_since) * 1e6 < d->o.max_delay_us)
		return true;
	d->hold_since = 0;
	return false;
}

/* How long to sleep while hold() keeps bytes below the watermark. */
static double hold_sleep_ms(const struct daemon *d)
{
	double ms = d->o.max_delay_us / 4000.0;

	return ms < d->o.idle_max_ms ? ms : d->o.idle_max_ms;
}

/*
 * Drain what the ring holds now, batch by batch.  Returns 1 if anything was
 * read, 0 if the ring was empty, -1 to stop (exit_code set).
 */
static int drain(struct daemon *d)
{
	struct hmb_error err;
	uint64_t avail;
	size_t len;
	int r, got = 0;

	r = hmb_consumer_poll(d->c, &avail, &err);
	check_flags(d);
	if (r < 0) {
		ring_corrupt(d, &err);
		return -1;
	}
	if (!avail) {
		d->hold_since = 0;
		r = check_reinit(d);
		return r < 0 ? -1 : r;
	}
	if (hold(d, avail))
		return 2;
	for (;;) {
		struct hmb_consumer_counts n0, n1;
		/* The window keeps a copy: spans would gain nothing. */
		bool spans = !d->o.copy && !d->copy_next && !d->o.snap_sig;
		uint64_t start = d->out_size;
		struct iovec one;
		int niov = 0, w;

		hmb_consumer_counts(d->c, &n0);
		if (spans) {
			/* One copy: write the checked records from the ring. */
			r = hmb_consumer_spans(d->c, d->iov, IOV_MAX, d->o.batch,
					       &niov, &len, &err);
		} else {
			r = hmb_consumer_read(d->c, d->buf, d->o.batch, &len, &err);
			one = (struct iovec){ .iov_base = d->buf, .iov_len = len };
		}
		d->copy_next = false;
		if (len) {
			w = d->o.snap_sig ? window_add(d, d->buf, len) :
			    output_write(d, spans ? d->iov : &one,
					 spans ? niov : 1, len);
			if (w) {
				d->exit_code = w == -2 ? EXIT_GONE : EXIT_OUTPUT;
				d->exit_reason = w == -2 ? "ring gone" : "output failed";
				return -1;
			}
			if (spans) {
				struct hmb_error verr;

				if (hmb_consumer_verify(d->c, &verr)) {
					/*
					 * The device rewrote a header we had
					 * checked: what we wrote may not be
					 * what we checked.  Drop it and read
					 * the batch again from a private copy
					 * (format.md 9.5).
					 */
					d->st.ring_changed++;
					log_msg(LOG_WARN, "ring changed under the write: %s; writing that batch again from a checked copy",
						verr.msg);
					if (output_cut(d, start)) {
						d->exit_code = EXIT_OUTPUT;
						d->exit_reason = "output failed";
						return -1;
					}
					d->copy_next = true;
					continue;
				}
			}
			if (d->o.fsync == FSYNC_BATCH && output_sync(d)) {
				d->exit_code = EXIT_OUTPUT;
				d->exit_reason = "output failed";
				return -1;
			}
			hmb_consumer_counts(d->c, &n1);
			d->st.records += n1.records - n0.records;
			d->st.markers += n1.markers - n0.markers;
			d->st.ignored += n1.ignored - n0.ignored;
			d->st.bytes += len;
			d->st.batches++;
			got = 1;
			/* A throttled consumer holds its tail while it dawdles. */
			if (d->o.throttle)
				throttle(d);
			if (publish(d))
				return -1;
			output_sync_due(d);
		}
		if (r < 0) {
			ring_corrupt(d, &err);
			return -1;
		}
		if (!len)
			break;
		signals_read(d);
		if (d->stop || d->reopen)
			break;
	}
	return got;
}

static int reopen_output(struct daemon *d)
{
	int r;

	d->reopen = false;
	if (d->o.snap_sig) {
		log_msg(LOG_INFO, "SIGHUP: a flight recorder has no output to reopen");
		return 0;
	}
	if (!d->out_is_file && d->out_fd == STDOUT_FILENO) {
		log_msg(LOG_INFO, "SIGHUP: output is stdout, nothing to reopen");
		return 0;
	}
	output_close(d);
	r = output_open(d, true);
	if (r) {
		d->exit_code = r;
		d->exit_reason = r == EXIT_NOT_DUMP ? "output not a dump" :
			"reopen failed";
		return -1;
	}
	d->st.reopens++;
	log_msg(LOG_INFO, "SIGHUP: reopened %s", d->o.output);
	return 0;
}

/*
 * Wait for data.  A ring file has no notification: spin briefly, then
 * sleep with a doubling back-off up to --idle-max-ms (near zero CPU when
 * idle).  The device wakes us with POLLIN; POLLPRI/POLLERR mean FROZEN or
 * trouble (flags are checked by the next drain), POLLHUP that it is gone.
 */
static int wait_data(struct daemon *d, unsigned int idle)
{
	struct pollfd pfd[2];
	double ms;
	int n;

	if (d->src.kind == SRC_DEVICE && !d->dev_err_backoff) {
		pfd[0].fd = d->sigfd;
		pfd[0].events = POLLIN;
		pfd[1].fd = d->src.fd;
		pfd[1].events = POLLIN | POLLPRI;
		n = poll(pfd, 2, d->o.fsync == FSYNC_INTERVAL &&
			 d->out_size != d->synced_size ?
			 (int)d->o.fsync_interval_ms : 1000);
		if (n < 0 && errno != EINTR) {
			log_msg(LOG_ERR, "poll %s: %s", d->src.path, strerror(errno));
			d->exit_code = EXIT_ERR;
			return -1;
		}
		if (n > 0 && (pfd[0].revents & POLLIN))
			signals_read(d);
		if (n > 0 && (pfd[1].revents & (POLLHUP | POLLNVAL))) {
			log_msg(LOG_ERR, "device %s gone (poll: %s)", d->src.path,
				pfd[1].revents & POLLHUP ? "POLLHUP" : "POLLNVAL");
			d->exit_code = EXIT_GONE;
			d->exit_reason = "device gone";
			return -1;
		}
		/* Level-triggered PRI/ERR: back off instead of spinning. */
		if (n > 0 && (pfd[1].revents & (POLLPRI | POLLERR)) &&
		    !(pfd[1].revents & POLLIN))
			d->dev_err_backoff = true;
		return 0;
	}
	if (idle < 16) {
		sched_yield();
		signals_read(d);
		return 0;
	}
	ms = 0.05 * (1u << (idle - 16 < 16 ? idle - 16 : 16));
	if (ms > d->o.idle_max_ms)
		ms = d->o.idle_max_ms;
	sleep_ms(d, ms);
	if (d->src.kind == SRC_DEVICE && idle > 32)
		d->dev_err_backoff = false;
	return 0;
}

/*
 * The ring's memory can vanish under us: the module zaps the mapping when
 * the device goes away, and a ring file can be truncated.  Any access then
 * raises SIGBUS; turn that into a clean "gone" exit instead of a crash.
 */
static sigjmp_buf bus_jmp;
static volatile sig_atomic_t bus_armed;
static const char *bus_lo, *bus_hi;

static void on_sigbus(int sig, siginfo_t *si, void *uc)
{
	(void)uc;
	if (bus_armed && (const char *)si->si_addr >= bus_lo &&
	    (const char *)si->si_addr < bus_hi) {
		bus_armed = 0;
		siglongjmp(bus_jmp, 1);
	}
	signal(sig, SIG_DFL);
	raise(sig);
}

static void sigbus_setup(struct daemon *d)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_sigbus;
	sa.sa_flags = SA_SIGINFO;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGBUS, &sa, NULL);
	bus_lo = d->src.map;
	bus_hi = bus_lo + d->src.map_len;
}

static int run(struct daemon *d)
{
	volatile unsigned int idle = 0;
	int r;

	if (sigsetjmp(bus_jmp, 1)) {
		log_msg(LOG_ERR, "%s %s gone: its memory is no longer there (SIGBUS reading the ring)",
			d->src.kind == SRC_DEVICE ? "device" : "ring file", d->src.path);
		d->exit_code = EXIT_GONE;
		d->exit_reason = "ring gone";
		return -1;
	}
	bus_armed = 1;
	for (;;) {
		r = drain(d);
		if (r < 0)
			return -1;
		output_sync_due(d);
		if (d->o.snap_sig)
			window_reap(d, false);
		if (d->win.pending) {
			/* What the ring holds now belongs in the snapshot. */
			if (drain(d) < 0)
				return -1;
			window_requests(d);
		}
		if (d->stop)
			return 0;
		if (d->reopen && reopen_output(d))
			return -1;
		/* --once: what the first look at head found, and no more. */
		if (d->o.once)
			return 0;
		if (r == 2) {
			/*
			 * Below the watermark: let it fill a little, but look
			 * again within --idle-max-ms so that a FROZEN or
			 * OVERFLOWED flag (drain now) is seen as promptly as
			 * when idle, whatever --max-delay-us says.
			 */
			sleep_ms(d, hold_sleep_ms(d));
			idle = 0;
			continue;
		}
		if (r > 0) {
			idle = 0;
			d->dev_err_backoff = false;
			continue;
		}
		if (wait_data(d, idle))
			return -1;
		idle = idle + 1;
		if (d->stop)
			return 0;
	}
}

/* -------------------------------------------------------------- summary */

/* --stats-json: the run's counters as one JSON object. */
static void write_stats_json(FILE *f, const struct daemon *d, double el)
{
	const struct stats *s = &d->st;
	struct hmb_outbuf ob;
	struct hmb_json j;

	if (hmb_ob_open_file(&ob, f, d->o.stats_json, 1024)) {
		log_msg(LOG_ERR, "cannot write %s: out of memory",
			d->o.stats_json);
		return;
	}
	hmb_json_init(&j, &ob);
	hmb_json_obj(&j);
	hmb_json_kv_u64(&j, "records", s->records);
	hmb_json_kv_u64(&j, "markers", s->markers);
	hmb_json_kv_u64(&j, "ignored", s->ignored);
	hmb_json_kv_u64(&j, "bytes", s->bytes);
	hmb_json_kv_u64(&j, "batches", s->batches);
	hmb_json_kv_u64(&j, "overflow_events", s->overflow_events);
	hmb_json_kv_u64(&j, "frozen_events", s->frozen_events);
	hmb_json_kv_u64(&j, "unknown_flag_events", s->unknown_flag_events);
	hmb_json_kv_u64(&j, "reinits", s->reinits);
	hmb_json_kv_u64(&j, "reopens", s->reopens);
	hmb_json_kv_u64(&j, "output_errors", s->output_errors);
	hmb_json_kv_u64(&j, "output_retries", s->output_retries);
	hmb_json_kv_u64(&j, "fsyncs", s->fsyncs);
	hmb_json_kv_u64(&j, "ring_changed", s->ring_changed);
	/*
	 * "tail": what the ring holds as its tail, where the next consumer
	 * starts.  "consumed": how far this one read; past the tail when a
	 * batch was read and not written (exit 6: it is still in the ring).
	 */
	hmb_json_kv_u64(&j, "tail", d->published);
	hmb_json_kv_u64(&j, "consumed", d->c ? hmb_consumer_cursor(d->c) : 0);
	if (d->o.snap_sig)
		window_stats_json(d, &j);
	hmb_json_kv_dbl(&j, "elapsed_s", el, 6);
	hmb_json_kv_i64(&j, "exit_code", d->exit_code);
	hmb_json_kv_str(&j, "exit_reason", d->exit_reason);
	hmb_json_end(&j);
	hmb_json_nl(&j);
	hmb_ob_close(&ob);
}

static void summary(struct daemon *d)
{
	double el = hmb_now_s(CLOCK_MONOTONIC) - d->st.t0;
	struct stats *s = &d->st;
	FILE *f;

	log_msg(LOG_INFO, "summary: %" PRIu64 " records, %" PRIu64 " markers, %" PRIu64
		" ignored, %" PRIu64 " bytes in %" PRIu64 " batches, %.1f MB/s; "
		"flag events: %" PRIu64 " overflow, %" PRIu64 " frozen, %" PRIu64
		" unknown; %" PRIu64 " re-inits, %" PRIu64 " reopens, %" PRIu64
		" output errors (%" PRIu64 " retries); %.3f s; exit %d (%s)",
		s->records, s->markers, s->ignored, s->bytes, s->batches,
		el > 0 ? s->bytes / el / 1e6 : 0, s->overflow_events,
		s->frozen_events, s->unknown_flag_events, s->reinits, s->reopens,
		s->output_errors, s->output_retries, el, d->exit_code,
		d->exit_reason);
	if (d->o.snap_sig)
		log_msg(LOG_INFO, "flight recorder: %" PRIu64 " snapshot requests: %" PRIu64
			" written, %" PRIu64 " failed, %" PRIu64 " suppressed (%" PRIu64
			" holdoff, %" PRIu64 " max, %" PRIu64 " together); window evicted %"
			PRIu64 " records", d->win.requests, d->win.written,
			d->win.failed, d->win.sup_holdoff + d->win.sup_max +
			d->win.sup_pending, d->win.sup_holdoff, d->win.sup_max,
			d->win.sup_pending, d->win.rw.ev_records);
	if (!d->o.stats_json)
		return;
	{
		/*
		 * As the dump: never through a symbolic link, our mode.  A
		 * FIFO with nobody reading must not block the exit
		 * (O_NONBLOCK: ENXIO); one with a reader gets the summary.
		 */
		int fd = open(d->o.stats_json, O_WRONLY | O_CREAT | O_TRUNC |
			      O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK, d->o.file_mode);
		int fl = fd >= 0 ? fcntl(fd, F_GETFL) : -1;

		f = fl >= 0 && !fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) ?
		    fdopen(fd, "w") : NULL;
		if (fd >= 0 && !f)
			close(fd);
	}
	if (!f) {
		log_msg(LOG_ERR, "cannot write %s: %s%s", d->o.stats_json,
			strerror(errno),
			errno == ENXIO ? " (a FIFO nobody reads)" : "");
		return;
	}
	write_stats_json(f, d, el);
	if (fclose(f))
		log_msg(LOG_ERR, "cannot write %s: %s", d->o.stats_json, strerror(errno));
}

/*
 * The exit status for a failed attach, as the man page has it: a header
 * the daemon cannot read is refused (4); cursors no producer could have
 * left (head behind tail or more than a ring ahead, misaligned) are a
 * corrupt ring (3), like a bad record met while draining.
 */
static int attach_exit(int code)
{
	switch (code) {
	case HMB_E_RING_MAGIC:
	case HMB_E_RING_VERSION:
	case HMB_E_RING_SIZE:
	case HMB_E_RING_AREA_OFF:
	case HMB_E_RING_SHORT:
		return EXIT_VERSION;
	case HMB_E_HEAD_BACKWARDS:
	case HMB_E_HEAD_AHEAD:
	case HMB_E_HEAD_MISALIGNED:
		return EXIT_CORRUPT;
	default:
		return EXIT_ERR;
	}
}

int main(int argc, char **argv)
{
	static struct daemon dd;
	struct daemon *d = &dd;
	struct hmb_error err;
	void *pub_ctx;
	int r, ex;

	d->out_fd = -1;
	d->sigfd = -1;
	d->exit_reason = "ok";
	parse_opts(&d->o, argc, argv);
	d->st.t0 = hmb_now_s(CLOCK_MONOTONIC);
	if (signals_setup(d))
		return EXIT_ERR;
	if (source_open(&d->src, d->o.kind, d->o.source, &ex))
		return ex;
	pub_ctx = d->src.kind == SRC_DEVICE ? (void *)&d->src : d->src.map;
	r = hmb_consumer_open(&d->c, d->src.map, d->src.map_len,
			      source_publish_fn(&d->src), pub_ctx, &err);
	if (r) {
		log_msg(LOG_ERR, "cannot attach to ring %s: %s", d->src.path, err.msg);
		source_close(&d->src);
		return attach_exit(r);
	}
	if (d->src.kind == SRC_RING_FILE &&
	    hmb_consumer_set_fd(d->c, d->src.fd, 0, &err)) {
		log_msg(LOG_ERR, "ring %s: %s", d->src.path, err.msg);
		return EXIT_ERR;
	}
	d->buf = malloc(d->o.batch);
	if (!d->buf) {
		log_msg(LOG_ERR, "cannot allocate a %zu-byte batch buffer", d->o.batch);
		return EXIT_ERR;
	}
	r = d->o.snap_sig ? (window_open(d) ? EXIT_ERR : 0) : output_open(d, false);
	if (r)
		return r;
	d->flags = 0;
	d->published = hmb_consumer_cursor(d->c);
	sigbus_setup(d);
	if (d->o.snap_sig)
		log_msg(LOG_INFO, "draining %s (ring %u bytes, tail %" PRIu64 ") into a %zu-byte window; %s writes a snapshot into %s",
			d->src.path, d->src.ring_size, hmb_consumer_cursor(d->c),
			d->o.window, d->o.snap_name, d->o.snap_dir);
	else
		log_msg(LOG_INFO, "draining %s (ring %u bytes, tail %" PRIu64 ") into %s",
			d->src.path, d->src.ring_size, hmb_consumer_cursor(d->c),
			d->o.output);

	run(d);
	bus_armed = 0;
	if (d->stop && d->exit_code == EXIT_OK)
		d->exit_reason = d->stop_sig == SIGINT ? "SIGINT" : "SIGTERM";
	output_close(d);
	/* A snapshot being written is finished and counted. */
	if (d->o.snap_sig)
		window_reap(d, true);
	summary(d);
	window_close(d);
	hmb_consumer_close(d->c);
	source_close(&d->src);
	free(d->buf);
	return d->exit_code;
}
