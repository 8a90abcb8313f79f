/* http.c: libcurl's multi interface inside kiln's loop (see http.h).
 *
 * curl tells us which sockets to watch (socket callback) and when to call
 * it back (timer callback); the loop tells curl what happened through
 * curl_multi_socket_action(). Finished transfers are collected with
 * curl_multi_info_read() after every action, outside curl's callbacks,
 * which is the only place a handle may be removed from the multi. */
#include "llm/http.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/log.h"
#include "core/loop.h"
#include "core/util.h"
#include "llm/curl_api.h"

struct http {
	struct loop *loop;
	CURLM *multi;
	struct loop_timer *timer; /* curl's timeout */
	struct loop_timer *reap;  /* removes requests cancelled mid-action */
	struct http_req *reqs;    /* doubly linked */
	int in_action;            /* inside a curl call that runs callbacks */
};

struct http_req {
	struct http_req *prev, *next;
	struct http *h;
	CURL *easy;
	struct curl_slist *headers;
	char *body;
	struct http_callbacks cb;
	void *data;
	bool cancelled;
	bool aborted; /* a callback asked to stop */
	bool headers_seen;
	bool retry_ms; /* retry_after came from Retry-After-Ms */
	char content_type[128];
	char retry_after[64];
	char error_type[96];
	char errbuf[CURL_ERROR_SIZE];
	uint64_t idle_ms, last_ms;
	struct loop_timer *idle;
};

/* libcurl's functions, loaded by the first request (llm/curl_api.h). */
static const struct curl_api *cu;

static void process_done(struct http *h);

static void req_unlink_free(struct http_req *r)
{
	struct http *h = r->h;
	if (r->prev)
		r->prev->next = r->next;
	else
		h->reqs = r->next;
	if (r->next)
		r->next->prev = r->prev;
	loop_timer_stop(h->loop, r->idle);
	cu->multi_remove_handle(h->multi, r->easy);
	cu->easy_cleanup(r->easy);
	cu->slist_free_all(r->headers);
	free(r->body);
	free(r);
}

/* --- curl -> loop ---------------------------------------------------------- */

static void on_socket_event(struct loop *loop, int fd, unsigned events, void *data)
{
	(void)loop;
	struct http *h = data;
	int flags = 0;
	if (events & (LOOP_READ | LOOP_HUP))
		flags |= CURL_CSELECT_IN;
	if (events & LOOP_WRITE)
		flags |= CURL_CSELECT_OUT;
	if (events & LOOP_ERR)
		flags |= CURL_CSELECT_ERR;
	int running;
	h->in_action++;
	cu->multi_socket_action(h->multi, fd, flags, &running);
	h->in_action--;
	process_done(h);
}

static int socket_cb(CURL *easy, curl_socket_t s, int what, void *userp, void *socketp)
{
	(void)easy;
	struct http *h = userp;
	if (what == CURL_POLL_REMOVE) {
		if (socketp) {
			loop_unwatch(h->loop, s);
			cu->multi_assign(h->multi, s, NULL);
		}
		return 0;
	}
	unsigned ev = 0;
	if (what == CURL_POLL_IN || what == CURL_POLL_INOUT)
		ev |= LOOP_READ;
	if (what == CURL_POLL_OUT || what == CURL_POLL_INOUT)
		ev |= LOOP_WRITE;
	if (socketp)
		return loop_modify(h->loop, s, ev) < 0 ? -1 : 0;
	if (loop_watch(h->loop, s, ev, on_socket_event, h) < 0)
		return -1;
	cu->multi_assign(h->multi, s, h);
	return 0;
}

static void on_curl_timer(struct loop *loop, void *data)
{
	(void)loop;
	struct http *h = data;
	h->timer = NULL;
	int running;
	h->in_action++;
	cu->multi_socket_action(h->multi, CURL_SOCKET_TIMEOUT, 0, &running);
	h->in_action--;
	process_done(h);
}

static int timer_cb(CURLM *multi, long timeout_ms, void *userp)
{
	(void)multi;
	struct http *h = userp;
	loop_timer_stop(h->loop, h->timer);
	h->timer = NULL;
	if (timeout_ms < 0)
		return 0;
	/* Never call socket_action from here: curl forbids it; the loop
	 * calls back on its next iteration at the earliest. */
	h->timer = loop_timer_start(h->loop, (uint64_t)timeout_ms, on_curl_timer, h);
	return h->timer ? 0 : -1;
}

/* --- transfers ------------------------------------------------------------- */

static void finish(struct http_req *r, int code, bool idle)
{
	/* The request is freed before done runs: keep its error text. */
	char err[CURL_ERROR_SIZE];
	snprintf(err, sizeof(err), "%s", r->errbuf[0] ? r->errbuf : cu->easy_strerror(code));
	struct http_result res = {
	    .curl_code = code,
	    .curl_error = err,
	    .idle_timeout = idle,
	};
	cu->easy_getinfo(r->easy, CURLINFO_RESPONSE_CODE, &res.status);
	struct http_callbacks cb = r->cb;
	void *data = r->data;
	bool cancelled = r->cancelled;
	req_unlink_free(r);
	if (!cancelled)
		cb.done(data, &res);
}

static void process_done(struct http *h)
{
	CURLMsg *msg;
	int left;
	while ((msg = cu->multi_info_read(h->multi, &left))) {
		if (msg->msg != CURLMSG_DONE)
			continue;
		struct http_req *r = NULL;
		cu->easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&r);
		if (r)
			finish(r, msg->data.result, false);
	}
}

static void on_reap(struct loop *loop, void *data)
{
	(void)loop;
	struct http *h = data;
	h->reap = NULL;
	struct http_req *r = h->reqs;
	while (r) {
		struct http_req *next = r->next;
		if (r->cancelled)
			req_unlink_free(r);
		r = next;
	}
}

static void on_idle(struct loop *loop, void *data)
{
	struct http_req *r = data;
	r->idle = NULL;
	uint64_t now = loop_now_ms();
	if (now - r->last_ms < r->idle_ms) {
		r->idle = loop_timer_start(loop, r->idle_ms - (now - r->last_ms), on_idle, r);
		return;
	}
	snprintf(r->errbuf, sizeof(r->errbuf), "no data for %llu ms",
	         (unsigned long long)r->idle_ms);
	finish(r, CURLE_OPERATION_TIMEDOUT, true);
}

static size_t on_header(char *line, size_t size, size_t n, void *userp)
{
	struct http_req *r = userp;
	size_t len = size * n;
	if (r->cancelled)
		return 0;
	r->last_ms = loop_now_ms();
	if (len >= 5 && strncmp(line, "HTTP/", 5) == 0) {
		r->content_type[0] = r->retry_after[0] = r->error_type[0] = '\0';
		r->retry_ms = false;
		return len;
	}
	if (len <= 2 && (line[0] == '\r' || line[0] == '\n')) {
		long status = 0;
		cu->easy_getinfo(r->easy, CURLINFO_RESPONSE_CODE, &status);
		if (status < 200) /* 100 Continue and friends: more headers follow */
			return len;
		r->headers_seen = true;
		struct http_head head = {
		    .status = status,
		    .content_type = r->content_type[0] ? r->content_type : NULL,
		    .retry_after = r->retry_after[0] ? r->retry_after : NULL,
		    .error_type = r->error_type[0] ? r->error_type : NULL,
		};
		if (r->cb.headers && r->cb.headers(r->data, &head) < 0)
			r->aborted = true;
		return r->aborted || r->cancelled ? 0 : len;
	}
	const char *colon = memchr(line, ':', len);
	if (!colon)
		return len;
	size_t nlen = (size_t)(colon - line);
	const char *v = colon + 1;
	const char *end = line + len;
	while (v < end && (*v == ' ' || *v == '\t'))
		v++;
	while (end > v && (end[-1] == '\r' || end[-1] == '\n' || end[-1] == ' '))
		end--;
	size_t vlen = (size_t)(end - v);
	char *dst = NULL;
	size_t dsz = 0;
	if (nlen == 12 && strncasecmp(line, "content-type", 12) == 0) {
		dst = r->content_type, dsz = sizeof(r->content_type);
	} else if (nlen == 11 && strncasecmp(line, "retry-after", 11) == 0 && !r->retry_ms) {
		dst = r->retry_after, dsz = sizeof(r->retry_after);
	} else if (nlen == 16 && strncasecmp(line, "x-amzn-errortype", 16) == 0) {
		/* "ThrottlingException:http://internal.amazon.com/...": the
		 * name is what matters. */
		const char *c = memchr(v, ':', vlen);
		if (c)
			vlen = (size_t)(c - v);
		dst = r->error_type, dsz = sizeof(r->error_type);
	} else if (nlen == 14 && strncasecmp(line, "retry-after-ms", 14) == 0) {
		/* OpenAI's and Azure's finer hint wins; handed on in seconds. */
		double ms = strtod(v, NULL);
		if (ms >= 0) {
			snprintf(r->retry_after, sizeof(r->retry_after), "%.3f", ms / 1000);
			r->retry_ms = true;
		}
		return len;
	}
	if (dst) {
		if (vlen >= dsz)
			vlen = dsz - 1;
		memcpy(dst, v, vlen);
		dst[vlen] = '\0';
	}
	return len;
}

static size_t on_body(char *chunk, size_t size, size_t n, void *userp)
{
	struct http_req *r = userp;
	size_t len = size * n;
	if (r->cancelled || r->aborted)
		return 0;
	r->last_ms = loop_now_ms();
	if (r->cb.body && r->cb.body(r->data, chunk, len) < 0)
		r->aborted = true;
	/* The callback may have cancelled this very request. */
	return r->aborted || r->cancelled ? 0 : len;
}

struct http *http_new(struct loop *loop)
{
	struct http *h = calloc(1, sizeof(*h));
	if (h)
		h->loop = loop;
	return h;
}

static int ensure_multi(struct http *h)
{
	if (h->multi)
		return 0;
	char detail[256];
	int r = curl_api_load(&cu, detail, sizeof(detail));
	if (r < 0) {
		log_error("%s", detail);
		return r;
	}
	h->multi = cu->multi_init();
	if (!h->multi)
		return -ENOMEM;
	cu->multi_setopt(h->multi, CURLMOPT_SOCKETFUNCTION, socket_cb);
	cu->multi_setopt(h->multi, CURLMOPT_SOCKETDATA, h);
	cu->multi_setopt(h->multi, CURLMOPT_TIMERFUNCTION, timer_cb);
	cu->multi_setopt(h->multi, CURLMOPT_TIMERDATA, h);
	return 0;
}

void http_free(struct http *h)
{
	if (!h)
		return;
	while (h->reqs) {
		h->reqs->cancelled = true;
		req_unlink_free(h->reqs);
	}
	loop_timer_stop(h->loop, h->timer);
	loop_timer_stop(h->loop, h->reap);
	if (h->multi)
		cu->multi_cleanup(h->multi);
	free(h);
}

int http_request_start(struct http *h, const struct http_options *o,
                       const struct http_callbacks *cb, void *data, struct http_req **ret_req)
{
	if (!o->url || !cb || !cb->done)
		return -EINVAL;
	int r = ensure_multi(h);
	if (r < 0)
		return r;
	struct http_req *req = calloc(1, sizeof(*req));
	if (!req)
		return -ENOMEM;
	req->h = h;
	req->cb = *cb;
	req->data = data;
	req->easy = cu->easy_init();
	if (!req->easy)
		goto oom;
	for (const char *const *p = o->headers; p && *p; p++) {
		struct curl_slist *l = cu->slist_append(req->headers, *p);
		if (!l)
			goto oom;
		req->headers = l;
	}
	CURL *e = req->easy;
	cu->easy_setopt(e, CURLOPT_URL, o->url);
	/* Model servers are plain HTTP or HTTPS; nothing else may be
	 * reached through a configured URL (file://, gopher://, ...). */
	cu->easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
	cu->easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
	cu->easy_setopt(e, CURLOPT_PRIVATE, (char *)req);
	cu->easy_setopt(e, CURLOPT_ERRORBUFFER, req->errbuf);
	cu->easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header);
	cu->easy_setopt(e, CURLOPT_HEADERDATA, req);
	cu->easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body);
	cu->easy_setopt(e, CURLOPT_WRITEDATA, req);
	cu->easy_setopt(e, CURLOPT_HTTPHEADER, req->headers);
	cu->easy_setopt(e, CURLOPT_USERAGENT, "kiln");
	/* Environment proxies would send a local model's traffic elsewhere. */
	cu->easy_setopt(e, CURLOPT_NOPROXY, "127.0.0.1,localhost,::1");
	if (o->connect_timeout_ms)
		cu->easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, (long)o->connect_timeout_ms);
	if (o->total_timeout_ms)
		cu->easy_setopt(e, CURLOPT_TIMEOUT_MS, (long)o->total_timeout_ms);
	if (o->body) {
		req->body = strdup(o->body);
		if (!req->body)
			goto oom;
		cu->easy_setopt(e, CURLOPT_POSTFIELDS, req->body);
		cu->easy_setopt(e, CURLOPT_POSTFIELDSIZE, (long)strlen(req->body));
	}
	if (o->method && strcmp(o->method, "GET") == 0)
		cu->easy_setopt(e, CURLOPT_HTTPGET, 1L);
	if (o->target && o->target[0])
		cu->easy_setopt(e, CURLOPT_REQUEST_TARGET, o->target);
	if (o->aws_sigv4 && o->aws_sigv4[0]) {
		/* libcurl copies both strings: the caller wipes its own. */
		if (cu->easy_setopt(e, CURLOPT_AWS_SIGV4, o->aws_sigv4) != CURLE_OK) {
			/* libcurl before 7.75 cannot sign. */
			cu->easy_cleanup(req->easy);
			cu->slist_free_all(req->headers);
			free(req->body);
			free(req);
			return -ENOTSUP;
		}
		cu->easy_setopt(e, CURLOPT_USERPWD, o->userpwd ? o->userpwd : "");
	}
	req->next = h->reqs;
	if (h->reqs)
		h->reqs->prev = req;
	h->reqs = req;
	req->last_ms = loop_now_ms();
	req->idle_ms = o->idle_timeout_ms;
	if (req->idle_ms) {
		req->idle = loop_timer_start(h->loop, req->idle_ms, on_idle, req);
		if (!req->idle) {
			req_unlink_free(req);
			return -ENOMEM;
		}
	}
	h->in_action++;
	CURLMcode mc = cu->multi_add_handle(h->multi, e);
	h->in_action--;
	if (mc != CURLM_OK) {
		req_unlink_free(req);
		return -ENOMEM;
	}
	*ret_req = req;
	return 0;
oom:
	if (req->easy)
		cu->easy_cleanup(req->easy);
	cu->slist_free_all(req->headers);
	free(req->body);
	free(req);
	return -ENOMEM;
}

void http_request_cancel(struct http_req *req)
{
	if (!req || req->cancelled)
		return;
	req->cancelled = true;
	struct http *h = req->h;
	if (!h->in_action) {
		req_unlink_free(req);
		return;
	}
	/* Inside curl: the handle may not leave the multi now. Its callbacks
	 * refuse further data and the next loop iteration removes it. */
	if (!h->reap)
		h->reap = loop_timer_start(h->loop, 0, on_reap, h);
}

struct loop *http_loop(const struct http *h)
{
	return h->loop;
}

unsigned http_curl_version(void)
{
	char detail[256];
	if (!cu && curl_api_load(&cu, detail, sizeof(detail)) < 0)
		return 0;
	const curl_version_info_data *v = cu->version_info(CURLVERSION_NOW);
	return v ? v->version_num : 0;
}

size_t http_active(const struct http *h)
{
	size_t n = 0;
	for (struct http_req *r = h ? h->reqs : NULL; r; r = r->next)
		n += !r->cancelled;
	return n;
}
