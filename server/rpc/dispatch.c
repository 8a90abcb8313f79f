/* dispatch.c: method table, call lifetimes, batches, cancellation and the
 * lifecycle gate (see dispatch.h). */
#include "rpc/dispatch.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/buf.h"
#include "core/json.h"
#include "core/log.h"
#include "core/loop.h"
#include "rpc/peer.h"

/* Replies to the members of one batch, gathered until all are answered. */
struct batch {
	json_object *replies; /* array */
	int pending;          /* calls not yet answered, +1 while being read */
};

struct rpc_call {
	struct rpc_dispatch *d;
	struct rpc_call *prev, *next; /* pending requests */
	json_object *id;              /* owned copy; NULL for JSON null */
	char *method;
	struct batch *batch;
	bool notification;
	bool internal; /* made by rpc_dispatch_call(): its reply goes to reply_cb */
	rpc_reply_fn reply_cb;
	void *reply_data;
	bool in_handler;
	bool answered;
	void (*cancel_fn)(void *data);
	void *cancel_data;
};

/* A request kiln sent to the client, waiting for its response. */
struct out_request {
	struct out_request *next;
	struct rpc_dispatch *d;
	int64_t id;
	rpc_reply_fn cb;
	void *data;
	struct loop_timer *timer; /* gives up after the request's timeout */
	char method[64];
};

/* An internal call's response, handed to its callback from the next loop
 * iteration (never from inside the handler that answered). */
struct internal_reply {
	struct internal_reply *next;
	struct rpc_dispatch *d;
	struct loop_timer *timer;
	rpc_reply_fn cb;
	void *data;
	json_object *response;
};

struct rpc_dispatch {
	struct loop *loop;
	struct rpc_peer *peer;
	const struct rpc_method *table;
	size_t ntable;
	void *ctx;
	enum rpc_state state;
	struct rpc_call *pending;
	size_t npending;
	struct out_request *out_requests;
	size_t nout;
	int64_t next_out_id;
	struct internal_reply *replies;
	int64_t next_internal_id;
	rpc_observer_fn observer;
	void *observer_data;
};

struct rpc_dispatch *rpc_dispatch_new(struct loop *loop, struct rpc_peer *peer,
                                      const struct rpc_method *table, size_t n, void *ctx)
{
	struct rpc_dispatch *d = calloc(1, sizeof(*d));
	if (!d)
		return NULL;
	d->loop = loop;
	d->peer = peer;
	d->table = table;
	d->ntable = n;
	d->ctx = ctx;
	d->next_out_id = 1;
	return d;
}

void rpc_dispatch_free(struct rpc_dispatch *d)
{
	if (!d)
		return;
	rpc_dispatch_cancel_all(d);
	while (d->replies) {
		struct internal_reply *ir = d->replies;
		d->replies = ir->next;
		loop_timer_stop(d->loop, ir->timer);
		ir->cb(ir->data, NULL, NULL);
		json_object_put(ir->response);
		free(ir);
	}
	while (d->out_requests) {
		struct out_request *o = d->out_requests;
		d->out_requests = o->next;
		loop_timer_stop(d->loop, o->timer);
		o->cb(o->data, NULL, NULL);
		free(o);
	}
	free(d);
}

enum rpc_state rpc_dispatch_state(const struct rpc_dispatch *d)
{
	return d->state;
}

void rpc_dispatch_set_state(struct rpc_dispatch *d, enum rpc_state state)
{
	d->state = state;
}

size_t rpc_dispatch_pending(const struct rpc_dispatch *d)
{
	return d->npending;
}

struct rpc_peer *rpc_dispatch_peer(struct rpc_dispatch *d)
{
	return d->peer;
}

static void batch_put(struct rpc_dispatch *d, struct batch *b)
{
	if (--b->pending > 0)
		return;
	if (json_object_array_length(b->replies) > 0)
		rpc_peer_send(d->peer, b->replies);
	json_object_put(b->replies);
	free(b);
}

/* Deliver a response (stolen) for the call, to the peer or its batch. */
static void internal_reply_fire(struct loop *loop, void *data)
{
	(void)loop;
	struct internal_reply *ir = data;
	struct rpc_dispatch *d = ir->d;
	for (struct internal_reply **pp = &d->replies; *pp; pp = &(*pp)->next)
		if (*pp == ir) {
			*pp = ir->next;
			break;
		}
	ir->cb(ir->data, json_get(ir->response, "result"), json_get(ir->response, "error"));
	json_object_put(ir->response);
	free(ir);
}

/* Hand an internal call's response (stolen) to its callback, later. */
static void deliver_internal(struct rpc_call *call, json_object *response)
{
	struct rpc_dispatch *d = call->d;
	struct internal_reply *ir = calloc(1, sizeof(*ir));
	if (!ir) {
		log_error("out of memory delivering an internal reply");
		json_object_put(response);
		return;
	}
	*ir = (struct internal_reply){
	    .d = d, .cb = call->reply_cb, .data = call->reply_data, .response = response};
	ir->timer = loop_timer_start(d->loop, 0, internal_reply_fire, ir);
	if (!ir->timer) {
		json_object_put(response);
		free(ir);
		return;
	}
	ir->next = d->replies;
	d->replies = ir;
}

/* A reply not yet made into a message: a result, or an error's parts.
 * Its objects are borrowed. */
struct reply {
	bool error;
	json_object *result;
	int code;
	const char *message;
	json_object *data;
};

/* A reply that goes straight to the client is written as text into the
 * peer's buffer (rpc_write_*); one that goes into a batch or to an
 * internal caller is built as an object. */
static void send_reply(struct rpc_dispatch *d, json_object *id, const struct reply *rp)
{
	struct buf *out = rpc_peer_begin(d->peer);
	if (!out)
		return; /* the connection is broken: nobody to answer */
	int r = rp->error ? rpc_write_error(out, id, rp->code, rp->message, rp->data)
	                  : rpc_write_response(out, id, rp->result);
	if (r >= 0) {
		rpc_peer_send_body(d->peer);
		return;
	}
	log_error("out of memory writing a response");
	out = rpc_peer_begin(d->peer);
	if (out && rpc_write_error(out, id, RPC_INTERNAL_ERROR, NULL, NULL) >= 0)
		rpc_peer_send_body(d->peer);
}

static json_object *reply_object(json_object *id, const struct reply *rp)
{
	return rp->error ? rpc_error_new(id, rp->code, rp->message, json_object_get(rp->data))
	                 : rpc_response_new(id, json_object_get(rp->result));
}

static void deliver(struct rpc_call *call, const struct reply *rp)
{
	if (!call->internal && !call->batch) {
		send_reply(call->d, call->id, rp);
		return;
	}
	json_object *response = reply_object(call->id, rp);
	if (!response) {
		log_error("out of memory building a response");
		response = rpc_error_new(call->id, RPC_INTERNAL_ERROR, NULL, NULL);
		if (!response)
			return;
	}
	if (call->internal)
		deliver_internal(call, response);
	else
		json_object_array_add(call->batch->replies, response);
}

static void unlink_call(struct rpc_call *call)
{
	struct rpc_dispatch *d = call->d;
	if (call->prev || d->pending == call) {
		if (call->prev)
			call->prev->next = call->next;
		else
			d->pending = call->next;
		if (call->next)
			call->next->prev = call->prev;
		call->prev = call->next = NULL;
		d->npending--;
	}
}

static void free_call(struct rpc_call *call)
{
	unlink_call(call);
	if (call->batch)
		batch_put(call->d, call->batch);
	json_object_put(call->id);
	free(call->method);
	free(call);
}

/* Answer once; a call answered inside its handler is freed when the
 * handler returns. */
static void answer(struct rpc_call *call, const struct reply *rp)
{
	if (call->answered)
		return;
	call->answered = true;
	if (!call->notification)
		deliver(call, rp);
	if (!call->in_handler)
		free_call(call);
}

static void answer_error(struct rpc_call *call, int code)
{
	answer(call, &(struct reply){.error = true, .code = code});
}

void rpc_call_reply(struct rpc_call *call, json_object *result)
{
	answer(call, &(struct reply){.result = result});
	json_object_put(result);
}

void rpc_call_error(struct rpc_call *call, int code, const char *message, json_object *data)
{
	if (call->notification && message)
		log_warn("%s: %s", call->method, message);
	answer(call,
	       &(struct reply){.error = true, .code = code, .message = message, .data = data});
	json_object_put(data);
}

void rpc_call_errorf(struct rpc_call *call, int code, json_object *data, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	rpc_call_error(call, code, msg, data);
}

void rpc_call_on_cancel(struct rpc_call *call, void (*fn)(void *data), void *data)
{
	call->cancel_fn = fn;
	call->cancel_data = data;
}

void *rpc_call_ctx(struct rpc_call *call)
{
	return call->d->ctx;
}

struct rpc_dispatch *rpc_call_dispatch(struct rpc_call *call)
{
	return call->d;
}

const char *rpc_call_method(const struct rpc_call *call)
{
	return call->method;
}

json_object *rpc_call_id(const struct rpc_call *call)
{
	return call->id;
}

bool rpc_call_is_notification(const struct rpc_call *call)
{
	return call->notification;
}

static void cancel_call(struct rpc_call *call)
{
	void (*fn)(void *) = call->cancel_fn;
	call->cancel_fn = NULL;
	/* The hook stops the work; it must not answer the call itself, but
	 * if it does, answer() keeps the first reply. */
	call->in_handler = true;
	fn(call->cancel_data);
	call->in_handler = false;
	if (!call->answered)
		answer_error(call, RPC_REQUEST_CANCELLED);
	else
		free_call(call);
}

void rpc_dispatch_cancel_all(struct rpc_dispatch *d)
{
	/* Calls without a hook are still answered, so no client waits on a
	 * server that is going away. A call whose handler is running (shutdown
	 * itself) answers for itself, and one answered inside its handler
	 * stays listed until the handler returns: skip both. Restart the scan
	 * after each cancel, since a hook may end others. */
	for (;;) {
		struct rpc_call *call = d->pending;
		while (call && (call->answered || call->in_handler))
			call = call->next;
		if (!call)
			return;
		if (call->cancel_fn)
			cancel_call(call);
		else
			answer_error(call, RPC_REQUEST_CANCELLED);
	}
}

void rpc_dispatch_cancel_id(struct rpc_dispatch *d, json_object *id)
{
	if (!id)
		return;
	for (struct rpc_call *call = d->pending; call; call = call->next) {
		if (rpc_id_equal(call->id, id)) {
			if (call->cancel_fn) {
				log_info("cancelling request %s", json_compact(id));
				cancel_call(call);
			}
			return;
		}
	}
	/* Already answered: LSP says to ignore it. */
}

static const struct rpc_method *find_method(struct rpc_dispatch *d, const char *name)
{
	for (size_t i = 0; i < d->ntable; i++)
		if (strcmp(d->table[i].name, name) == 0)
			return &d->table[i];
	return NULL;
}

/* Unlink the waiting request with this id and return it (yours), or NULL. */
static struct out_request *take_out_request(struct rpc_dispatch *d, int64_t id)
{
	for (struct out_request **pp = &d->out_requests; *pp; pp = &(*pp)->next) {
		struct out_request *o = *pp;
		if (o->id == id) {
			*pp = o->next;
			d->nout--;
			loop_timer_stop(d->loop, o->timer);
			o->timer = NULL;
			return o;
		}
	}
	return NULL;
}

static void handle_response(struct rpc_dispatch *d, const struct rpc_msg *m)
{
	if (m->id && json_object_is_type(m->id, json_type_int)) {
		struct out_request *o = take_out_request(d, json_object_get_int64(m->id));
		if (o) {
			o->cb(o->data, m->result, m->error);
			free(o);
			return;
		}
	}
	log_warn("response from client for unknown request id %s",
	         m->id ? json_compact(m->id) : "null");
}

static struct rpc_call *new_call(struct rpc_dispatch *d, const struct rpc_msg *m,
                                 struct batch *batch)
{
	struct rpc_call *call = calloc(1, sizeof(*call));
	if (!call)
		return NULL;
	call->d = d;
	call->notification = m->kind == RPC_KIND_NOTIFICATION;
	call->id = json_copy(m->id);
	call->method = strdup(m->method);
	if (!call->method || (m->id && !call->id)) {
		json_object_put(call->id);
		free(call->method);
		free(call);
		return NULL;
	}
	call->batch = batch;
	if (batch)
		batch->pending++;
	if (!call->notification) {
		call->next = d->pending;
		if (d->pending)
			d->pending->prev = call;
		d->pending = call;
		d->npending++;
	}
	return call;
}

/* Error reply for something that never became a call. */
static void reply_error(struct rpc_dispatch *d, struct batch *batch, json_object *id, int code,
                        const char *message)
{
	struct reply rp = {.error = true, .code = code, .message = message};
	if (!batch) {
		send_reply(d, id, &rp);
		return;
	}
	json_object *e = reply_object(id, &rp);
	if (e)
		json_object_array_add(batch->replies, e);
	else
		log_error("out of memory building a response");
}

static void handle_one(struct rpc_dispatch *d, json_object *obj, struct batch *batch)
{
	char detail[256];
	struct rpc_msg m;
	json_object *bad_id = NULL;
	if (rpc_msg_parse(obj, &m, &bad_id, detail, sizeof(detail)) < 0) {
		log_warn("%s", detail);
		reply_error(d, batch, bad_id, RPC_INVALID_REQUEST, detail);
		return;
	}
	if (m.kind == RPC_KIND_RESPONSE) {
		handle_response(d, &m);
		return;
	}
	bool notification = m.kind == RPC_KIND_NOTIFICATION;
	if (strcmp(m.method, "$/cancelRequest") == 0 && notification) {
		if (d->state == RPC_STATE_RUNNING)
			rpc_dispatch_cancel_id(d, json_get(m.params, "id"));
		return;
	}
	const struct rpc_method *method = find_method(d, m.method);
	if (!method && notification) {
		/* $/ notifications are optional by LSP's rule; others are
		 * ignored too, since notifications get no reply. */
		log_debug("ignoring notification %s", m.method);
		return;
	}
	/* The lifecycle gate comes before "Method not found": LSP answers
	 * every request before initialize with -32002 and every request
	 * after shutdown with -32600, known or not. */
	unsigned flags = method ? method->flags : 0;
	if (d->state == RPC_STATE_UNINITIALIZED && !(flags & RPC_BEFORE_INIT)) {
		if (notification)
			return; /* LSP: dropped before initialize */
		snprintf(detail, sizeof(detail),
		         "Server not initialized: send \"initialize\" before \"%s\"", m.method);
		reply_error(d, batch, m.id, RPC_SERVER_NOT_INITIALIZED, detail);
		return;
	}
	if (d->state == RPC_STATE_SHUTDOWN && !(flags & RPC_AFTER_SHUTDOWN)) {
		if (notification)
			return;
		snprintf(detail, sizeof(detail),
		         "Invalid Request: the server is shutting down; only \"exit\" is accepted");
		reply_error(d, batch, m.id, RPC_INVALID_REQUEST, detail);
		return;
	}
	if (!method) {
		snprintf(detail, sizeof(detail), "Method not found: %s", m.method);
		reply_error(d, batch, m.id, RPC_METHOD_NOT_FOUND, detail);
		return;
	}
	if (!notification && (method->flags & RPC_NOTIFICATION)) {
		snprintf(detail, sizeof(detail),
		         "Invalid Request: \"%s\" is a notification and takes no id", m.method);
		reply_error(d, batch, m.id, RPC_INVALID_REQUEST, detail);
		return;
	}
	struct rpc_call *call = new_call(d, &m, batch);
	if (!call) {
		reply_error(d, batch, m.id, RPC_INTERNAL_ERROR, "Internal error: out of memory");
		return;
	}
	call->in_handler = true;
	int r = method->fn(call, m.params);
	call->in_handler = false;
	if (call->answered) {
		free_call(call);
		return;
	}
	if (r < 0) {
		log_warn("%s failed: %s", m.method, strerror(-r));
		snprintf(detail, sizeof(detail), "Internal error: %s", strerror(-r));
		rpc_call_error(call, RPC_INTERNAL_ERROR, detail, NULL);
		return;
	}
	if (call->notification) {
		free_call(call);
		return;
	}
	/* Answered later by the handler's own work. */
}

void rpc_dispatch_message(struct rpc_dispatch *d, json_object *msg)
{
	if (!msg || !json_object_is_type(msg, json_type_array)) {
		handle_one(d, msg, NULL);
		return;
	}
	size_t n = json_object_array_length(msg);
	if (n == 0) {
		reply_error(d, NULL, NULL, RPC_INVALID_REQUEST, "Invalid Request: an empty batch");
		return;
	}
	struct batch *b = calloc(1, sizeof(*b));
	if (!b || !(b->replies = json_object_new_array())) {
		free(b);
		reply_error(d, NULL, NULL, RPC_INTERNAL_ERROR, "Internal error: out of memory");
		return;
	}
	b->pending = 1; /* held while the members are read */
	for (size_t i = 0; i < n; i++)
		handle_one(d, json_object_array_get_idx(msg, i), b);
	batch_put(d, b);
}

void rpc_dispatch_bad_input(struct rpc_dispatch *d, int code, const char *detail)
{
	reply_error(d, NULL, NULL, code, detail);
}

void rpc_dispatch_set_observer(struct rpc_dispatch *d, rpc_observer_fn fn, void *data)
{
	d->observer = fn;
	d->observer_data = data;
}

int rpc_notify(struct rpc_dispatch *d, const char *method, json_object *params)
{
	if (d->observer)
		d->observer(d->observer_data, method, params);
	json_object *n = rpc_notification_new(method, params);
	if (!n)
		return -ENOMEM;
	int r = rpc_peer_send(d->peer, n);
	json_object_put(n);
	return r;
}

/* The envelope around the params, as json_write() writes a notification
 * built by rpc_notification_new(): {"jsonrpc":"2.0","method":M,"params":P}. */
#define SPLICE_ENVELOPE 256

int rpc_notify_splice_room(const struct rpc_dispatch *d, size_t *ret_room)
{
	if (d->observer || !rpc_peer_can_splice(d->peer))
		return -EAGAIN;
	size_t room = rpc_peer_splice_room(d->peer);
	*ret_room = room > SPLICE_ENVELOPE ? room - SPLICE_ENVELOPE : 0;
	return 0;
}

int rpc_notify_splice(struct rpc_dispatch *d, const char *method, const char *params_head,
                      size_t hlen, int fd, size_t len, const char *params_tail, size_t tlen)
{
	if (d->observer)
		return -EAGAIN;
	struct buf head, tail;
	buf_init(&head, SPLICE_ENVELOPE + hlen);
	buf_init(&tail, tlen + 1);
	int r;
	static const char start[] = "{\"jsonrpc\":\"2.0\",\"method\":", params[] = ",\"params\":";
	if ((r = buf_append(&head, start, sizeof(start) - 1)) < 0 ||
	    (r = json_write_string(&head, method, strlen(method))) < 0 ||
	    (r = buf_append(&head, params, sizeof(params) - 1)) < 0 ||
	    (r = buf_append(&head, params_head, hlen)) < 0 ||
	    (r = buf_append(&tail, params_tail, tlen)) < 0 || (r = buf_append(&tail, "}", 1)) < 0)
		goto out;
	r = rpc_peer_send_splice(d->peer, head.data, head.len, fd, len, tail.data, tail.len);
out:
	buf_release(&head);
	buf_release(&tail);
	return r;
}

/* The client did not answer in time: its callback hears a -32803 error,
 * as if the client had sent one, so every waiter has one way to fail. */
static void out_request_timeout(struct loop *loop, void *data)
{
	(void)loop;
	struct out_request *o = data;
	o->timer = NULL;
	struct out_request *t = take_out_request(o->d, o->id);
	if (!t)
		return;
	log_warn("the client did not answer %s (request %lld) in time", t->method,
	         (long long)t->id);
	json_object *err = json_object_new_object();
	json_object_object_add(err, "code", json_object_new_int(RPC_REQUEST_FAILED));
	json_object_object_add(
	    err, "message",
	    json_object_new_string("Request failed: the client did not answer in time"));
	t->cb(t->data, NULL, err);
	json_object_put(err);
	free(t);
}

int rpc_request(struct rpc_dispatch *d, const char *method, json_object *params,
                uint64_t timeout_ms, rpc_reply_fn cb, void *data, int64_t *ret_id)
{
	if (d->nout >= RPC_MAX_OUT_REQUESTS) {
		json_object_put(params);
		log_warn("not sending %s: %zu requests to the client are unanswered", method,
		         d->nout);
		return -EBUSY;
	}
	struct out_request *o = calloc(1, sizeof(*o));
	if (!o) {
		json_object_put(params);
		return -ENOMEM;
	}
	o->d = d;
	o->id = d->next_out_id++;
	o->cb = cb;
	o->data = data;
	snprintf(o->method, sizeof(o->method), "%s", method);
	json_object *id = json_object_new_int64(o->id);
	json_object *req = rpc_request_new(id, method, params);
	json_object_put(id);
	if (!req) {
		free(o);
		return -ENOMEM;
	}
	o->timer = loop_timer_start(d->loop, timeout_ms ? timeout_ms : RPC_OUT_TIMEOUT_MS,
	                            out_request_timeout, o);
	if (!o->timer) {
		json_object_put(req);
		free(o);
		return -ENOMEM;
	}
	int r = rpc_peer_send(d->peer, req);
	json_object_put(req);
	if (r < 0) {
		loop_timer_stop(d->loop, o->timer);
		free(o);
		return r;
	}
	o->next = d->out_requests;
	d->out_requests = o;
	d->nout++;
	if (ret_id)
		*ret_id = o->id;
	return 0;
}

int rpc_dispatch_call(struct rpc_dispatch *d, const char *method, json_object *params,
                      rpc_reply_fn cb, void *data, json_object **ret_id)
{
	const struct rpc_method *m = find_method(d, method);
	if (!m || (m->flags & RPC_NOTIFICATION))
		return -ENOENT;
	char idbuf[40];
	snprintf(idbuf, sizeof(idbuf), "kiln-internal-%lld", (long long)++d->next_internal_id);
	json_object *id = json_object_new_string(idbuf);
	struct rpc_msg msg = {
	    .kind = RPC_KIND_REQUEST, .id = id, .method = method, .params = params};
	struct rpc_call *call = id ? new_call(d, &msg, NULL) : NULL;
	if (!call) {
		json_object_put(id);
		return -ENOMEM;
	}
	call->internal = true;
	call->reply_cb = cb;
	call->reply_data = data;
	if (ret_id)
		*ret_id = json_object_get(id);
	json_object_put(id);
	call->in_handler = true;
	int r = m->fn(call, params);
	call->in_handler = false;
	if (call->answered) {
		free_call(call);
		return 0;
	}
	if (r < 0) {
		char detail[160];
		snprintf(detail, sizeof(detail), "Internal error: %s", strerror(-r));
		rpc_call_error(call, RPC_INTERNAL_ERROR, detail, NULL);
	}
	return 0;
}

void rpc_request_forget(struct rpc_dispatch *d, int64_t id)
{
	free(take_out_request(d, id));
}

size_t rpc_dispatch_out_pending(const struct rpc_dispatch *d)
{
	return d->nout;
}
