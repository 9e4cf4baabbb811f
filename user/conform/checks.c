// SPDX-License-Identifier: GPL-2.0
/*
 * hmb-trace-conform's own checks: Identify Controller's HMB fields and
 * Set/Get Features 0Dh with a correct and with each kind of malformed
 * descriptor list (docs/format.md 16.1, 16.4).  Every list has exactly
 * one defect; everything else about it is valid (HSIZE >= HMMIN, entries
 * page aligned, HSIZE the sum of their sizes), so that the status names
 * the check the controller made.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "conform.h"

const struct trule_info trules[T_RULES] = {
	[T_ID_HMPRE] = { "id-hmpre", "format.md 16.1",
		"Identify Controller advertises an HMB (HMPRE != 0)" },
	[T_ID_HMMIN] = { "id-hmmin", "format.md 16.1",
		"HMMIN <= HMPRE" },
	[T_ID_HMMINDS] = { "id-hmminds", "format.md 16.1",
		"HMMINDS <= HMPRE, and HMMIN fits in HMMAXD descriptors of "
		"HMPRE pages" },
	[T_ID_HMMAXD] = { "id-hmmaxd", "format.md 16.1 condition 4",
		"HMMAXD != 1: the trace slice needs a descriptor of its own" },
	[T_SF_DISABLE] = { "setfeat-disable", "format.md 16.4",
		"Set Features 0Dh EHM=0 succeeds" },
	[T_GF_DISABLED] = { "getfeat-disabled", "format.md 16.4",
		"Get Features 0Dh while disabled: EHM 0, attributes all zero" },
	[T_SF_VALID] = { "setfeat-valid", "format.md 16.4",
		"a correct descriptor list is accepted (status 0)" },
	[T_GF_ENABLED] = { "getfeat-enabled", "format.md 16.4",
		"Get Features 0Dh while enabled: EHM 1, HSIZE, HMDLAL/U and "
		"HMDLEC as set, the rest zero" },
	[T_SF_TWICE] = { "setfeat-enabled-twice", "format.md 16.4 check 2",
		"EHM=1 while enabled: Command Sequence Error (0Ch), DNR" },
	[T_SF_HMDLEC_ZERO] = { "setfeat-hmdlec-zero", "format.md 16.4 check 3",
		"HMDLEC 0: Invalid Field in Command (02h), DNR" },
	[T_SF_HMDLEC_MAX] = { "setfeat-hmdlec-max", "format.md 16.4 check 4",
		"HMDLEC > HMMAXD: Invalid Field in Command, DNR" },
	[T_SF_LIST_ALIGN] = { "setfeat-list-align", "format.md 16.4 check 5",
		"HMDLLA not 16-byte aligned: Invalid Field in Command, DNR" },
	[T_SF_BELOW_HMMIN] = { "setfeat-below-hmmin", "format.md 16.4 check 6",
		"HSIZE below HMMIN: Invalid Field in Command, DNR" },
	[T_SF_LIST_DMA] = { "setfeat-list-dma", "format.md 16.4 check 7",
		"a list the controller cannot read (HMDLA above every memory "
		"and window the host has): Data Transfer Error (04h), DNR" },
	[T_SF_BSIZE_ZERO] = { "setfeat-bsize-zero", "format.md 16.4 check 8",
		"an entry with BSIZE 0: Invalid Field in Command, DNR" },
	[T_SF_BADD_ALIGN] = { "setfeat-badd-align", "format.md 16.4 check 9",
		"an entry's BADD not page aligned: Invalid Field in Command, DNR" },
	[T_SF_BADD_WRAP] = { "setfeat-badd-wrap", "format.md 16.4 check 10",
		"an entry whose BADD + BSIZE wraps: Invalid Field in Command, DNR" },
	[T_SF_IOMEM] = { "setfeat-iomem", "format.md 16.4 check 11",
		"the last entry over the controller's own BAR0: Invalid Field "
		"in Command, DNR" },
	[T_SF_HSIZE_SUM] = { "setfeat-hsize-sum", "format.md 16.4 check 12",
		"HSIZE not the sum of BSIZE: Invalid Field in Command, DNR" },
	[T_SF_NOCHANGE] = { "setfeat-failed-nochange", "format.md 16.4",
		"a failed Set Features leaves the HMB disabled" },
	[T_ADOPT] = { "ring-adopt", "format.md 16.2, 16.3",
		"the ring in the last descriptor is adopted: I/O produces "
		"records, flags are the controller's (cleared at adoption)" },
	[T_OVF_SET] = { "overflow-flag", "format.md 7 step 6, 11.1",
		"with the consumer stalled and the ring full, OVERFLOWED is set" },
	[T_OVF_KEEP] = { "overflow-no-overwrite", "format.md 4, 7 step 6",
		"unconsumed bytes (tail to head) are never overwritten" },
	[T_OVF_SEQ] = { "overflow-seq", "format.md 7 step 6, 10",
		"dropped records consume their seqs: a gap after the stall" },
	[T_OVF_CLEAR] = { "overflow-clear", "format.md 7 step 5.5, 11.1",
		"OVERFLOWED is cleared at the next successful write" },
	[T_BAD_TAIL] = { "bad-tail", "format.md 16.6",
		"a tail that is not 8-byte aligned is not used: the controller "
		"produces no further than the last good tail allows" },
	[T_FROZEN_EHM0] = { "frozen-ehm0", "format.md 16.5",
		"Set Features EHM=0 sets FROZEN" },
	[T_FROZEN_QUIET] = { "frozen-quiet", "format.md 16.5 step 3",
		"after FROZEN, I/O writes no record and does not move head" },
	[T_REINIT] = { "reinit-adopt", "format.md 11.2, 16.8",
		"a ring the host re-initialised is adopted again with EHM=1 MR=1 "
		"and produced from cursor 0" },
	[T_FROZEN_RESET] = { "frozen-reset", "format.md 16.5",
		"a controller reset (CC.EN 1 -> 0) sets FROZEN" },
	[T_FROZEN_SHUTDOWN] = { "frozen-shutdown", "format.md 16.5",
		"a controller shutdown (CC.SHN 01b, the driver unbound) sets "
		"FROZEN" },
};

void tnote(struct conform *cf, int rule, bool ok, const char *fmt, ...)
{
	struct hmb_cf_result *r = &cf->res[rule];
	va_list ap;

	r->checked++;
	if (ok)
		return;
	if (!r->failed++) {
		va_start(ap, fmt);
		vsnprintf(r->msg, sizeof(r->msg), fmt, ap);
		va_end(ap);
	}
}

void check_identify(struct conform *cf)
{
	const struct id_hmb *id = &cf->id;
	uint64_t maxd = id->hmmaxd ? id->hmmaxd : UINT32_MAX;

	tnote(cf, T_ID_HMPRE, id->hmpre != 0, "HMPRE 0");
	tnote(cf, T_ID_HMMIN, id->hmmin <= id->hmpre,
	      "HMMIN %u > HMPRE %u pages", id->hmmin, id->hmpre);
	tnote(cf, T_ID_HMMINDS, id->hmminds <= id->hmpre &&
	      maxd * id->hmpre >= id->hmmin,
	      "HMMINDS %u, HMPRE %u, HMMIN %u, HMMAXD %u: inconsistent",
	      id->hmminds, id->hmpre, id->hmmin, id->hmmaxd);
	tnote(cf, T_ID_HMMAXD, id->hmmaxd != 1,
	      "HMMAXD 1: no descriptor left for a trace slice");
}

/* Get Features 0Dh must show the HMB disabled (after EHM=0 or a refusal). */
static bool disabled(struct conform *cf, int rule, const char *after)
{
	struct hmb_attrs a;
	bool ok;

	pt_get_hmb(cf->fd, &a);
	ok = !a.status && !a.ehm && !a.hsize && !a.hmdla && !a.hmdlec &&
	     !a.rest_nonzero;
	tnote(cf, rule, ok, "after %s: Get Features status 0x%x, EHM %u, HSIZE "
	      "%u, HMDLA 0x%llx, HMDLEC %u%s", after, a.status, a.ehm, a.hsize,
	      (unsigned long long)a.hmdla, a.hmdlec,
	      a.rest_nonzero ? ", reserved bytes not zero" : "");
	return ok;
}

enum defect { D_NONE, D_TWICE, D_HMDLEC_ZERO, D_HMDLEC_MAX, D_LIST_ALIGN,
	      D_BELOW_HMMIN, D_LIST_DMA, D_BSIZE_ZERO, D_BADD_ALIGN, D_BADD_WRAP,
	      D_IOMEM, D_HSIZE_SUM };

static const struct {
	enum defect d;
	int rule;
	int want;
} cases[] = {
	{ D_NONE, T_SF_VALID, ST_OK },
	{ D_TWICE, T_SF_TWICE, ST_CMD_SEQ },
	{ D_HMDLEC_ZERO, T_SF_HMDLEC_ZERO, ST_INVALID_FIELD },
	{ D_HMDLEC_MAX, T_SF_HMDLEC_MAX, ST_INVALID_FIELD },
	{ D_LIST_ALIGN, T_SF_LIST_ALIGN, ST_INVALID_FIELD },
	{ D_BELOW_HMMIN, T_SF_BELOW_HMMIN, ST_INVALID_FIELD },
	{ D_LIST_DMA, T_SF_LIST_DMA, ST_DATA_XFER },
	{ D_BSIZE_ZERO, T_SF_BSIZE_ZERO, ST_INVALID_FIELD },
	{ D_BADD_ALIGN, T_SF_BADD_ALIGN, ST_INVALID_FIELD },
	{ D_BADD_WRAP, T_SF_BADD_WRAP, ST_INVALID_FIELD },
	{ D_IOMEM, T_SF_IOMEM, ST_INVALID_FIELD },
	{ D_HSIZE_SUM, T_SF_HSIZE_SUM, ST_INVALID_FIELD },
};

/*
 * The tool's HMB (filler chunks, then the slice) with one defect; the
 * list is rewritten every time.  Returns the status of Set Features.
 */
static int try_list(struct conform *cf, enum defect d, int *second)
{
	uint8_t *l = cf->list.va;
	uint32_t n = cf->nfill + 1, hsize = cf->hsize, i;
	uint64_t hmdla = cf->list.pa;
	int st;

	memset(l, 0, (size_t)cf->list.pages * PAGE);
	for (i = 0; i < cf->nfill; i++)
		pt_put_desc(l, i, cf->fill[i].pa, cf->chunk_pages);
	pt_put_desc(l, cf->nfill, cf->slice.pa, cf->slice_pages);
	switch (d) {
	case D_HMDLEC_ZERO:
		n = 0;
		break;
	case D_HMDLEC_MAX:
		n = (uint32_t)cf->id.hmmaxd + 1;	/* entries past ours are zero */
		break;
	case D_LIST_ALIGN:
		memmove(l + 8, l, (size_t)(cf->nfill + 1) * 16);
		hmdla += 8;
		break;
	case D_BELOW_HMMIN:	/* the slice alone, HSIZE its size: < HMMIN */
		pt_put_desc(l, 0, cf->slice.pa, cf->slice_pages);
		n = 1;
		hsize = cf->slice_pages;
		break;
	case D_LIST_DMA:	/* a valid list, at an address with no memory */
		hmdla = cf->nomem;
		break;
	case D_BSIZE_ZERO:	/* one more entry, of 0 pages */
		pt_put_desc(l, n, cf->slice.pa, 0);
		n++;
		break;
	case D_BADD_ALIGN:
		pt_put_desc(l, 0, cf->fill[0].pa + 512, cf->chunk_pages);
		break;
	case D_BADD_WRAP:	/* the last page of the address space, and one more */
		pt_put_desc(l, 0, UINT64_MAX - PAGE + 1, cf->chunk_pages + 1);
		break;
	case D_IOMEM:
		pt_put_desc(l, cf->nfill, cf->bar0, cf->slice_pages);
		break;
	case D_HSIZE_SUM:
		hsize++;
		break;
	default:
		break;
	}
	st = pt_set_hmb(cf->fd, 1, hsize, hmdla, n);
	if (!st && d == D_TWICE)
		*second = pt_set_hmb(cf->fd, 1, hsize, hmdla, n);
	return st;
}

void check_set_features(struct conform *cf)
{
	struct hmb_attrs a;
	size_t i;
	int st, second, off;

	off = pt_set_hmb(cf->fd, 0, 0, 0, 0);
	tnote(cf, T_SF_DISABLE, off == ST_OK, "EHM=0: status 0x%x", off);
	disabled(cf, T_GF_DISABLED, "EHM=0");
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		enum defect d = cases[i].d;

		if (d == D_HMDLEC_MAX && !cf->id.hmmaxd)
			continue;	/* no limit advertised */
		if (d == D_BELOW_HMMIN && cf->slice_pages >= cf->id.hmmin)
			continue;	/* the smallest list is not below HMMIN */
		if (d == D_IOMEM && !cf->bar0)
			continue;	/* BAR0 unknown (no sysfs resource) */
		if (d == D_LIST_DMA && !cf->nomem)
			continue;	/* /proc/iomem unreadable */
		second = -1;
		st = try_list(cf, d, &second);
		if (d == D_TWICE)
			tnote(cf, cases[i].rule, second == cases[i].want,
			      "second EHM=1: status 0x%x, want 0x%x", second,
			      cases[i].want);
		else
			tnote(cf, cases[i].rule, st == cases[i].want,
			      "status 0x%x, want 0x%x", st, cases[i].want);
		if (d == D_NONE && !st) {
			pt_get_hmb(cf->fd, &a);
			tnote(cf, T_GF_ENABLED, !a.status && a.ehm &&
			      a.hsize == cf->hsize && a.hmdla == cf->list.pa &&
			      a.hmdlec == cf->nfill + 1 && !a.rest_nonzero,
			      "status 0x%x EHM %u HSIZE %u HMDLA 0x%llx HMDLEC %u%s "
			      "(set: HSIZE %u HMDLA 0x%llx HMDLEC %u)", a.status,
			      a.ehm, a.hsize, (unsigned long long)a.hmdla, a.hmdlec,
			      a.rest_nonzero ? ", reserved bytes not zero" : "",
			      cf->hsize, (unsigned long long)cf->list.pa,
			      cf->nfill + 1);
		}
		if (!st) {	/* taken: give it back before the next case */
			off = pt_set_hmb(cf->fd, 0, 0, 0, 0);
			tnote(cf, T_SF_DISABLE, off == ST_OK, "EHM=0: status 0x%x", off);
		} else if (d != D_TWICE) {
			disabled(cf, T_SF_NOCHANGE, trules[cases[i].rule].id);
		}
	}
}
