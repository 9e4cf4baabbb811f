// SPDX-License-Identifier: GPL-2.0
/*
 * t_snap DUMP HOST DIR WINDOW_MB PRE_S [late] - the agent's flight
 * recorder (snap.c) fed as the agent feeds it, without BPF: the records
 * of DUMP (read by libhmbtrace) and the lines of HOST (hmb-trace-agent
 * JSON lines, kept as they are: host_line() copies one out), the first
 * half of each stamped t = 1 s, the rest t = 100 s; one snapshot asked
 * for at 100 s as the first entry of t = 100 s comes (due once both
 * sides reach it), taken after --post 0, into DIR.  The two streams come
 * interleaved, or with "late" every host line after every record, as the
 * agent has the commands it judged late: stamped with their completion,
 * those of t = 1 s then come behind the records of t = 100 s.  The
 * writer formats each line into a 64 KiB buffer, as the agent's; before
 * the second half comes one line too long for it, and after the rest one
 * line of a command done past the window's end (the request: post 0).
 * Prints the summary's JSON line on stdout, with how many lines the
 * writer formatted (formatted); tests/snap.sh checks the
 * bundle with hmb-trace-analyze.
 */
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/mman.h>

#include "hmbtrace.h"
#include "hmbtrace_util.h"
#include "snap.h"

#define T1 1000000000ULL
#define T2 100000000000ULL

static void sidecar(unsigned int ring, struct hmb_sidecar *sc)
{
	memset(sc, 0, sizeof(*sc));
	sc->abi_version = HMB_TRACE_ABI_VERSION;
	snprintf(sc->source, sizeof(sc->source), "/dev/nvme-hmb-trace%u", ring);
	sc->realtime_ns = hmb_now_ns(CLOCK_REALTIME);
	sc->monotonic_ns = hmb_now_ns(CLOCK_MONOTONIC);
	sc->boottime_ns = hmb_now_ns(CLOCK_BOOTTIME);
}

/* host_line()'s calls, counted in the bundle's writer (a child) */
static uint64_t *formatted;

/* snap_opts.host_line: the line as it came */
static void host_line(struct hmb_outbuf *ob, const void *ent, size_t len)
{
	(*formatted)++;
	hmb_ob_write(ob, ent, len);
}

static int count_records(const char *path, uint64_t *n)
{
	struct hmb_error err = { 0 };
	struct hmb_reader *r;
	struct hmb_record rec;
	int fd = open(path, O_RDONLY), rc;

	*n = 0;
	if (fd < 0 || hmb_reader_open(&r, fd, path, &err))
		return -1;
	while ((rc = hmb_reader_next(r, &rec, &err)) > 0)
		(*n)++;
	hmb_reader_close(r);
	close(fd);
	return rc;
}

int main(int argc, char **argv)
{
	struct hmb_error err = { 0 };
	struct hmb_reader *r;
	struct hmb_record rec;
	struct hmb_outbuf ob;
	struct hmb_json j;
	char *line = NULL;
	size_t cap = 0;
	uint64_t nrec, nhost = 0, i = 0;
	ssize_t len = 0;
	FILE *host;
	int fd;
	struct snap_opts o = { .post_s = 0, .holdoff_s = 10, .prog = "t_snap",
			       .sidecar = sidecar, .host_line = host_line };

	bool late, asked = false;

	if (argc != 6 && !(argc == 7 && !strcmp(argv[6], "late"))) {
		fprintf(stderr, "usage: t_snap DUMP HOST DIR WINDOW_MB PRE_S [late]\n");
		return 2;
	}
	late = argc == 7;
	o.dir = argv[3];
	o.window = (size_t)atoi(argv[4]) << 20;
	o.pre_s = atof(argv[5]);
	host = fopen(argv[2], "r");
	formatted = mmap(NULL, sizeof(*formatted), PROT_READ | PROT_WRITE,
			 MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (count_records(argv[1], &nrec) || !host || formatted == MAP_FAILED ||
	    snap_init(&o))
		return 1;
	while (getline(&line, &cap, host) > 0)
		nhost++;
	rewind(host);
	fd = open(argv[1], O_RDONLY);
	if (fd < 0 || hmb_reader_open(&r, fd, argv[1], &err))
		return 1;
	/* the two streams interleaved, as they arrive in the agent */
	for (uint64_t h = 0; i < nrec || h < nhost;) {
		bool fw = i < nrec &&
			  (h >= nhost || late || i * nhost <= h * nrec);

		if (!asked && (fw ? i >= nrec / 2 : h >= nhost / 2)) {
			/*
			 * Asked for as the first entry of t = 100 s comes: due
			 * once both sides reach it, or SNAP_CATCHUP_NS after
			 */
			snap_request("test", "{\"type\":\"test\"}\n", T2);
			asked = true;
			if (snap_due(T2) || snap_due(T2 + SNAP_CATCHUP_NS - 1) ||
			    !snap_due(T2 + SNAP_CATCHUP_NS)) {
				fprintf(stderr, "t_snap: due before both sides came\n");
				return 1;
			}
		}
		if (fw) {
			if (hmb_reader_next(r, &rec, &err) <= 0)
				return 1;
			snap_fw(0, &rec.hdr, rec.payload, i < nrec / 2 ? T1 : T2);
			i++;
			continue;
		}
		len = getline(&line, &cap, host);
		if (len <= 0)
			return 1;
		if (line[len - 1] == '\n')
			len--;
		if (h == nhost / 2) {
			/* a line longer than the agent's buffer: that one out */
			static char big[70000];

			memset(big, 'x', sizeof(big));
			snap_host(big, sizeof(big), T2);
		}
		snap_host(line, (size_t)len, h < nhost / 2 ? T1 : T2);
		h++;
	}
	/* one more line, of a command done past the window's end */
	if (len > 0) {
		snap_host(line, (size_t)len, T2 + 1);
	}
	snap_tick(T2);
	if (!snap_due(T2) || snap_due(T2 - 1)) {
		fprintf(stderr, "t_snap: not due when both sides came\n");
		return 1;
	}
	snap_take(T2, "{\"type\":\"clock\"}\n");
	snap_finish(T2, "{}\n");
	if (hmb_ob_open(&ob, 1, "<stdout>", 1 << 16))
		return 1;
	hmb_json_init(&j, &ob);
	hmb_json_obj(&j);
	hmb_json_kv_u64(&j, "input_records", nrec);
	hmb_json_kv_u64(&j, "input_host", nhost);
	hmb_json_kv_u64(&j, "formatted", *formatted);
	snap_report_json(&j);
	hmb_json_end(&j);
	hmb_json_nl(&j);
	hmb_ob_close(&ob);
	hmb_reader_close(r);
	close(fd);
	fclose(host);
	free(line);
	snap_free();
	return 0;
}
