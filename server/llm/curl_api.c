/* curl_api.c: dlopen() of libcurl on first use (see curl_api.h). */
#include "llm/curl_api.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>

/* The soname of Debian's libcurl4 (and of every libcurl since 7.16). */
#define LIBCURL "libcurl.so.4"

static struct curl_api api;
static int loaded; /* 0: not tried, 1: loaded, -errno: failed */
static char failure[256];

static int sym(void *lib, const char *name, void *ret)
{
	void *p = dlsym(lib, name);
	if (!p) {
		snprintf(failure, sizeof(failure), "%s has no %s: install libcurl4 7.62 or later",
		         LIBCURL, name);
		return -ENOENT;
	}
	/* POSIX guarantees a data pointer from dlsym converts to a function
	 * pointer; copy the bytes so the compiler need not be told so. */
	*(void **)ret = p;
	return 0;
}

static int load(void)
{
	/* RTLD_NODELETE: handles and callbacks may outlive any unload. */
	void *lib = dlopen(LIBCURL, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
	if (!lib) {
		snprintf(failure, sizeof(failure),
		         "cannot load %s (%s): install it with 'apt-get install libcurl4'", LIBCURL,
		         dlerror());
		return -ENOENT;
	}
	int r = 0;
#define LOAD(field, name)                                                                          \
	if (r == 0)                                                                                \
	r = sym(lib, name, &api.field)
	LOAD(global_init, "curl_global_init");
	LOAD(easy_strerror, "curl_easy_strerror");
	LOAD(easy_init, "curl_easy_init");
	LOAD(easy_setopt, "curl_easy_setopt");
	LOAD(easy_getinfo, "curl_easy_getinfo");
	LOAD(easy_cleanup, "curl_easy_cleanup");
	LOAD(slist_append, "curl_slist_append");
	LOAD(slist_free_all, "curl_slist_free_all");
	LOAD(multi_init, "curl_multi_init");
	LOAD(multi_setopt, "curl_multi_setopt");
	LOAD(multi_add_handle, "curl_multi_add_handle");
	LOAD(multi_remove_handle, "curl_multi_remove_handle");
	LOAD(multi_assign, "curl_multi_assign");
	LOAD(multi_socket_action, "curl_multi_socket_action");
	LOAD(multi_info_read, "curl_multi_info_read");
	LOAD(multi_cleanup, "curl_multi_cleanup");
	LOAD(version_info, "curl_version_info");
#undef LOAD
	if (r == 0 && api.global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
		snprintf(failure, sizeof(failure), "libcurl failed to initialise");
		r = -EIO;
	}
	return r;
}

int curl_api_load(const struct curl_api **ret_api, char *detail, size_t dsz)
{
	if (loaded == 0)
		loaded = load() == 0 ? 1 : -ENOENT;
	if (loaded < 0) {
		snprintf(detail, dsz, "%s", failure);
		return loaded;
	}
	*ret_api = &api;
	return 0;
}
