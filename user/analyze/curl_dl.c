// SPDX-License-Identifier: Apache-2.0
/*
 * libcurl loaded when export first needs it, not at start-up.  Linking it
 * brings some 30 shared libraries (TLS, Kerberos, LDAP, ...) whose loading
 * and relocation cost every run of hmb-trace-analyze about 5 ms of CPU,
 * as much as `stats` takes for 100 MiB of trace.  These are the libcurl
 * entry points chttp.c calls, each forwarding to Debian's libcurl.so.4
 * (package libcurl4) opened with dlopen() on first use; if it cannot be
 * opened, curl_global_init() says why and fails, and chttp.c reports that
 * libcurl failed to initialise.
 */
#define CURL_DISABLE_TYPECHECK
#include <dlfcn.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>

#include <curl/curl.h>

#include "analyze.h"

#define CURL_SONAME "libcurl.so.4"

static struct {
	CURLcode (*global_init)(long);
	CURL *(*easy_init)(void);
	CURL *(*easy_duphandle)(CURL *);
	CURLcode (*easy_setopt)(CURL *, CURLoption, ...);
	CURLcode (*easy_perform)(CURL *);
	void (*easy_cleanup)(CURL *);
	CURLcode (*easy_getinfo)(CURL *, CURLINFO, ...);
	const char *(*easy_strerror)(CURLcode);
	void (*free)(void *);
	struct curl_slist *(*slist_append)(struct curl_slist *, const char *);
	void (*slist_free_all)(struct curl_slist *);
	CURLU *(*url)(void);
	void (*url_cleanup)(CURLU *);
	CURLU *(*url_dup)(CURLU *);
	CURLUcode (*url_get)(CURLU *, CURLUPart, char **, unsigned int);
	CURLUcode (*url_set)(CURLU *, CURLUPart, const char *, unsigned int);
	const char *(*url_strerror)(CURLUcode);
	CURLSH *(*share_init)(void);
	CURLSHcode (*share_setopt)(CURLSH *, CURLSHoption, ...);
	CURLSHcode (*share_cleanup)(CURLSH *);
} fn;
static bool loaded;


static bool load(void)
{
	static const struct { const char *name; void **p; } syms[] = {
		{ "curl_global_init", (void **)&fn.global_init },
		{ "curl_easy_init", (void **)&fn.easy_init },
		{ "curl_easy_duphandle", (void **)&fn.easy_duphandle },
		{ "curl_easy_setopt", (void **)&fn.easy_setopt },
		{ "curl_easy_perform", (void **)&fn.easy_perform },
		{ "curl_easy_cleanup", (void **)&fn.easy_cleanup },
		{ "curl_easy_getinfo", (void **)&fn.easy_getinfo },
		{ "curl_easy_strerror", (void **)&fn.easy_strerror },
		{ "curl_free", (void **)&fn.free },
		{ "curl_slist_append", (void **)&fn.slist_append },
		{ "curl_slist_free_all", (void **)&fn.slist_free_all },
		{ "curl_url", (void **)&fn.url },
		{ "curl_url_cleanup", (void **)&fn.url_cleanup },
		{ "curl_url_dup", (void **)&fn.url_dup },
		{ "curl_url_get", (void **)&fn.url_get },
		{ "curl_url_set", (void **)&fn.url_set },
		{ "curl_url_strerror", (void **)&fn.url_strerror },
		{ "curl_share_init", (void **)&fn.share_init },
		{ "curl_share_setopt", (void **)&fn.share_setopt },
		{ "curl_share_cleanup", (void **)&fn.share_cleanup },
	};
	void *h;

	if (loaded)
		return true;
	h = dlopen(CURL_SONAME, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		errorf("cannot load %s (Debian package libcurl4): %s",
		       CURL_SONAME, dlerror());
		return false;
	}
	for (size_t i = 0; i < sizeof(syms) / sizeof(syms[0]); i++) {
		*syms[i].p = dlsym(h, syms[i].name);
		if (!*syms[i].p) {
			errorf("%s has no %s: %s", CURL_SONAME, syms[i].name,
			       dlerror());
			dlclose(h);
			return false;
		}
	}
	loaded = true;
	return true;
}

CURLcode curl_global_init(long flags)
{
	return load() ? fn.global_init(flags) : CURLE_FAILED_INIT;
}

/* The rest are only reached after curl_global_init() succeeded. */
CURL *curl_easy_init(void)
{
	return load() ? fn.easy_init() : NULL;
}

CURL *curl_easy_duphandle(CURL *curl)
{
	return load() ? fn.easy_duphandle(curl) : NULL;
}

/* The option's number says the type of its argument (curl.h). */
CURLcode curl_easy_setopt(CURL *curl, CURLoption option, ...)
{
	CURLcode rc;
	va_list ap;

	if (!load())
		return CURLE_FAILED_INIT;
	va_start(ap, option);
	if (option < CURLOPTTYPE_OBJECTPOINT)
		rc = fn.easy_setopt(curl, option, va_arg(ap, long));
	else if (option < CURLOPTTYPE_FUNCTIONPOINT)
		rc = fn.easy_setopt(curl, option, va_arg(ap, void *));
	else if (option < CURLOPTTYPE_OFF_T)
		rc = fn.easy_setopt(curl, option, va_arg(ap, void (*)(void)));
	else if (option < CURLOPTTYPE_BLOB)
		rc = fn.easy_setopt(curl, option, va_arg(ap, curl_off_t));
	else
		rc = fn.easy_setopt(curl, option, va_arg(ap, void *));
	va_end(ap);
	return rc;
}

CURLcode curl_easy_perform(CURL *curl)
{
	return load() ? fn.easy_perform(curl) : CURLE_FAILED_INIT;
}

void curl_easy_cleanup(CURL *curl)
{
	if (load())
		fn.easy_cleanup(curl);
}

/* Every CURLINFO_* takes a pointer to where the answer goes. */
CURLcode curl_easy_getinfo(CURL *curl, CURLINFO info, ...)
{
	CURLcode rc;
	va_list ap;

	if (!load())
		return CURLE_FAILED_INIT;
	va_start(ap, info);
	rc = fn.easy_getinfo(curl, info, va_arg(ap, void *));
	va_end(ap);
	return rc;
}

const char *curl_easy_strerror(CURLcode code)
{
	return load() ? fn.easy_strerror(code) : "libcurl not loaded";
}

void curl_free(void *p)
{
	if (load())
		fn.free(p);
}

struct curl_slist *curl_slist_append(struct curl_slist *list, const char *s)
{
	return load() ? fn.slist_append(list, s) : NULL;
}

void curl_slist_free_all(struct curl_slist *list)
{
	if (load())
		fn.slist_free_all(list);
}

CURLU *curl_url(void)
{
	return load() ? fn.url() : NULL;
}

void curl_url_cleanup(CURLU *u)
{
	if (load())
		fn.url_cleanup(u);
}

CURLU *curl_url_dup(CURLU *u)
{
	return load() ? fn.url_dup(u) : NULL;
}

CURLUcode curl_url_get(CURLU *u, CURLUPart what, char **part,
		       unsigned int flags)
{
	return load() ? fn.url_get(u, what, part, flags) : CURLUE_OUT_OF_MEMORY;
}

CURLUcode curl_url_set(CURLU *u, CURLUPart what, const char *part,
		       unsigned int flags)
{
	return load() ? fn.url_set(u, what, part, flags) : CURLUE_OUT_OF_MEMORY;
}

const char *curl_url_strerror(CURLUcode code)
{
	return load() ? fn.url_strerror(code) : "libcurl not loaded";
}

CURLSH *curl_share_init(void)
{
	return load() ? fn.share_init() : NULL;
}

/* What is shared is an int (curl_lock_data); the other options, pointers. */
CURLSHcode curl_share_setopt(CURLSH *sh, CURLSHoption option, ...)
{
	CURLSHcode rc;
	va_list ap;

	if (!load())
		return CURLSHE_NOT_BUILT_IN;
	va_start(ap, option);
	if (option == CURLSHOPT_SHARE || option == CURLSHOPT_UNSHARE)
		rc = fn.share_setopt(sh, option, va_arg(ap, int));
	else
		rc = fn.share_setopt(sh, option, va_arg(ap, void *));
	va_end(ap);
	return rc;
}

CURLSHcode curl_share_cleanup(CURLSH *sh)
{
	return load() ? fn.share_cleanup(sh) : CURLSHE_NOT_BUILT_IN;
}
