/* http.h: non-blocking HTTP requests through libcurl's multi interface,
 * driven by kiln's event loop: curl's sockets become loop watches and its
 * timer a loop timer, so no thread ever waits on the network and any
 * number of transfers can be in flight. Only what a model provider needs:
 * POST or GET a URL, stream the body back in chunks, cancel at once. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct loop;
struct http;
struct http_req;

/* What a finished transfer reports. curl_code is a CURLcode (0: the
 * transfer completed, whatever the HTTP status); status the HTTP status (0
 * when none arrived). */
struct http_result {
	int curl_code;
	const char *curl_error; /* a sentence when curl_code != 0 */
	long status;
	bool idle_timeout; /* kiln's own idle timer ended it */
};

struct http_callbacks {
	/* Headers are complete: status and content type (may be NULL).
	 * Return < 0 to abort the transfer. */
	int (*headers)(void *data, long status, const char *content_type, const char *retry_after);
	/* A chunk of the body. Return < 0 to abort the transfer. */
	int (*body)(void *data, const char *chunk, size_t len);
	/* Called exactly once when the transfer ends (never from inside
	 * http_request_start, never after http_request_cancel). The request
	 * is freed right after it returns. */
	void (*done)(void *data, const struct http_result *res);
};

struct http_options {
	const char *method; /* "GET" or "POST" */
	const char *url;
	const char *body;           /* POST body, or NULL */
	const char *const *headers; /* NULL-terminated "Name: value" lines */
	uint64_t connect_timeout_ms;
	uint64_t idle_timeout_ms;  /* 0: none; no byte for this long ends it */
	uint64_t total_timeout_ms; /* 0: none */
};

/* The multi handle. Created lazily by the first request, so a session that
 * never asks a model never starts libcurl's resolver thread. */
struct http *http_new(struct loop *loop);
/* Cancels every transfer still running (their done is not called). */
void http_free(struct http *h);

/* Start a transfer. The options' strings are copied. -ENOMEM, -EINVAL. */
int http_request_start(struct http *h, const struct http_options *opts,
                       const struct http_callbacks *cb, void *data, struct http_req **ret_req);
/* Abort a transfer now; done is not called afterwards. Safe from inside
 * the request's own body/headers callbacks. */
void http_request_cancel(struct http_req *req);
/* Number of transfers in flight (for tests and the bench). */
size_t http_active(const struct http *h);
