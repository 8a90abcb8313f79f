/* curl_api.h: libcurl's functions, loaded with dlopen() on the first model
 * request. Linked at build time, libcurl would cost every kiln start about
 * 12 ms (the TLS, GSSAPI and LDAP libraries it pulls in initialise as they
 * load), and most starts (kiln run, kiln validate, an editor session that
 * never asks a model) never use it. Only the function table is loaded at
 * run time; types and constants still come from <curl/curl.h>. */
#pragma once

#include <curl/curl.h>
#include <stddef.h>

struct curl_api {
	CURLcode (*global_init)(long flags);
	const char *(*easy_strerror)(CURLcode code);
	CURL *(*easy_init)(void);
	CURLcode (*easy_setopt)(CURL *e, CURLoption option, ...);
	CURLcode (*easy_getinfo)(CURL *e, CURLINFO info, ...);
	void (*easy_cleanup)(CURL *e);
	struct curl_slist *(*slist_append)(struct curl_slist *list, const char *s);
	void (*slist_free_all)(struct curl_slist *list);
	CURLM *(*multi_init)(void);
	CURLMcode (*multi_setopt)(CURLM *m, CURLMoption option, ...);
	CURLMcode (*multi_add_handle)(CURLM *m, CURL *e);
	CURLMcode (*multi_remove_handle)(CURLM *m, CURL *e);
	CURLMcode (*multi_assign)(CURLM *m, curl_socket_t s, void *data);
	CURLMcode (*multi_socket_action)(CURLM *m, curl_socket_t s, int ev_bitmask,
	                                 int *running_handles);
	CURLMsg *(*multi_info_read)(CURLM *m, int *msgs_in_queue);
	CURLMcode (*multi_cleanup)(CURLM *m);
	curl_version_info_data *(*version_info)(CURLversion age);
};

/* Load libcurl once (later calls return at once) and fill *ret_api.
 * -ENOENT with a sentence in detail (what to install) when it cannot be
 * loaded. */
int curl_api_load(const struct curl_api **ret_api, char *detail, size_t dsz);
