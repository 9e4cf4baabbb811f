// SPDX-License-Identifier: Apache-2.0
/*
 * corr.c - a dump and the host's events into libhmbtrace's offline join
 * (correlate.h): the dump through input.c (sidecar, losses), the host
 * events through hostev.c.
 */
#include <stdlib.h>
#include <string.h>

#include "analyze.h"
#include "correlate.h"

static int load_fw(struct corr *c, const char *path)
{
	struct input_opts iopts = { .max_gaps = 0 };
	struct hmb_error err = { 0 };
	struct hmb_record rec;
	struct input in;
	int rc;

	if (input_open(&in, path, &iopts))
		return EXIT_BADINPUT;
	while ((rc = input_next(&in, &rec, &err)) > 0)
		if (hmb_join_record(c->j, &rec)) {
			input_close(&in);
			errorf("out of memory");
			return EXIT_BADINPUT;
		}
	c->fw_lost = in.acct->lost;
	if (rc < 0)
		input_report(&in, &err);
	input_close(&in);
	return rc < 0 ? EXIT_BADINPUT : 0;
}

/* The host commands into the join; the file's copy is freed. */
static int load_host(struct corr *c, const char *path)
{
	int rc = hostev_load(&c->host, path);

	if (rc)
		return rc;
	for (size_t i = 0; i < c->host.n; i++)
		if (hmb_join_host(c->j, &c->host.v[i])) {
			errorf("out of memory");
			return EXIT_BADINPUT;
		}
	free(c->host.v);
	c->host.v = NULL;
	c->host.cap = 0;
	return 0;
}

static int pick_ctrl(const struct corr *c, const char *host, long ctrl,
		     uint32_t *out)
{
	const uint32_t *ctrls;
	unsigned int n = hmb_join_ctrls(c->j, &ctrls);

	if (ctrl >= 0) {
		*out = (uint32_t)ctrl;
		return 0;
	}
	if (n == 1) {
		*out = ctrls[0];
		return 0;
	}
	errorf("%s: commands of %u controllers; say which one the dump belongs to with --ctrl N (nvmeN)",
	       host, n);
	return EXIT_USAGE;
}

int corr_run(struct corr *c, const char *dump, const char *host,
	     const struct hmb_dict *dict, long ctrl, unsigned int top_n)
{
	struct hmb_error err = { 0 };
	uint32_t id = 0;
	int rc;

	memset(c, 0, sizeof(*c));
	c->dump = dump;
	c->j = hmb_join_new(dict);
	if (!c->j) {
		errorf("out of memory");
		return EXIT_BADINPUT;
	}
	rc = load_fw(c, dump);
	if (!rc)
		rc = load_host(c, host);
	if (!rc)
		rc = pick_ctrl(c, host, ctrl, &id);
	if (!rc && hmb_join_run(c->j, id, top_n, &err)) {
		errorf("%s", err.msg);
		rc = EXIT_BADINPUT;
	}
	if (rc)
		corr_free(c);
	return rc;
}

void corr_free(struct corr *c)
{
	hmb_join_free(c->j);
	c->j = NULL;
	hostev_free(&c->host);
}
