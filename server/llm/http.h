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

/* The response's head as far as kiln reads it; absent headers are NULL. */
struct http_head {
	long status;
	const char *content_type;
	const char *retry_after; /* seconds (Retry-After-Ms is converted) or a date */
	const char *error_type;  /* x-amzn-ErrorType, up to its first ':' */
};

struct http_callbacks {
	/* Headers are complete. Return < 0 to abort the transfer. */
	int (*headers)(void *data, const struct http_head *head);
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
	/* Optional: the path on the request line instead of the URL's
	 * (CURLOPT_REQUEST_TARGET). */
	const char *target;
	/* Optional: sign with AWS Signature Version 4 (CURLOPT_AWS_SIGV4,
	 * "aws:amz:REGION:SERVICE") as userpwd ("ACCESS:SECRET"). libcurl
	 * keeps its own copies; the caller wipes its own. */
	const char *aws_sigv4;
	const char *userpwd;
	uint64_t connect_timeout_ms;
	uint64_t idle_timeout_ms;  /* 0: none; no byte for this long ends it */
	uint64_t total_timeout_ms; /* 0: none */
};

/* The multi handle. Created lazily by the first request, so a session that
 * never asks a model never starts libcurl's resolver thread. */
struct http *http_new(struct loop *loop);
/* Cancels every transfer still running (their done is not called). */
void http_free(struct http *h);

/* Start a transfer. The options' strings are copied. -ENOMEM, -EINVAL,
 * -ENOTSUP (aws_sigv4 with a libcurl before 7.75). */
int http_request_start(struct http *h, const struct http_options *opts,
                       const struct http_callbacks *cb, void *data, struct http_req **ret_req);
/* Abort a transfer now; done is not called afterwards. Safe from inside
 * the request's own body/headers callbacks. */
void http_request_cancel(struct http_req *req);
/* The loop the transfers run in. */
struct loop *http_loop(const struct http *h);
/* libcurl's version as 0xXXYYZZ (curl_version_info), loading libcurl
 * when needed; 0 when it cannot be loaded. */
unsigned http_curl_version(void);
/* Number of transfers in flight (for tests and the bench). */
size_t http_active(const struct http *h);
