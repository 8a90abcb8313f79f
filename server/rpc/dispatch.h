/* dispatch.h: JSON-RPC 2.0 semantics over parsed messages: one static
 * method table maps names to handlers; requests become calls that are
 * answered exactly once (now or later), batches are gathered into one
 * reply, $/cancelRequest reaches the call's cancel hook, and the LSP
 * lifecycle gates what may run before initialize and after shutdown.
 * Handlers never see bytes; the peer never sees methods. */
#pragma once

#include <json-c/json.h>
#include <stdbool.h>
#include <stdint.h>

#include "rpc/message.h"

struct loop;
struct rpc_peer;
struct rpc_dispatch;
struct rpc_call;

/* A handler returns 0 when it has answered the call or will answer it
 * later (then it must set a cancel hook), or -errno, and dispatch answers
 * -32603 with that error. params is borrowed and NULL when absent, null or
 * an empty array. For a notification, answering is a no-op. */
typedef int (*rpc_handler_fn)(struct rpc_call *call, json_object *params);

enum rpc_method_flags {
	RPC_NOTIFICATION = 1 << 0,   /* a notification, never answered */
	RPC_BEFORE_INIT = 1 << 1,    /* allowed before initialize */
	RPC_AFTER_SHUTDOWN = 1 << 2, /* allowed after shutdown */
};

struct rpc_method {
	const char *name;
	rpc_handler_fn fn;
	unsigned flags;
};

enum rpc_state {
	RPC_STATE_UNINITIALIZED,
	RPC_STATE_RUNNING,
	RPC_STATE_SHUTDOWN,
};

/* table: sorted or not, it is searched by name; it must outlive dispatch.
 * ctx is handed to handlers through rpc_call_ctx(). */
struct rpc_dispatch *rpc_dispatch_new(struct loop *loop, struct rpc_peer *peer,
                                      const struct rpc_method *table, size_t n, void *ctx);
/* Cancels every call still pending (see rpc_dispatch_cancel_all) first. */
void rpc_dispatch_free(struct rpc_dispatch *d);

/* Entry points for the peer's callbacks. msg is borrowed. */
void rpc_dispatch_message(struct rpc_dispatch *d, json_object *msg);
void rpc_dispatch_bad_input(struct rpc_dispatch *d, int code, const char *detail);

enum rpc_state rpc_dispatch_state(const struct rpc_dispatch *d);
void rpc_dispatch_set_state(struct rpc_dispatch *d, enum rpc_state state);
/* Answer every pending call with -32800 after running its cancel hook,
 * but the one whose handler is running (the caller's, e.g. shutdown). */
void rpc_dispatch_cancel_all(struct rpc_dispatch *d);
/* Cancel the pending request with this id (borrowed) as $/cancelRequest
 * does; MCP's notifications/cancelled comes here. Unknown ids are ignored. */
void rpc_dispatch_cancel_id(struct rpc_dispatch *d, json_object *id);
/* Number of requests not yet answered. */
size_t rpc_dispatch_pending(const struct rpc_dispatch *d);

/* See each notification kiln sends (method, params borrowed) just before
 * it goes out; one observer at a time, NULL to stop. It must not send. */
typedef void (*rpc_observer_fn)(void *data, const char *method, json_object *params);
void rpc_dispatch_set_observer(struct rpc_dispatch *d, rpc_observer_fn fn, void *data);

/* Send a notification; params is stolen (NULL for none). */
int rpc_notify(struct rpc_dispatch *d, const char *method, json_object *params);

/* A notification whose params, as JSON text, are params_head, then len
 * bytes taken from the pipe fd, then params_tail: the peer splices those
 * bytes to the client (rpc_peer_send_splice's contract: 0 when they were
 * taken from fd; -EAGAIN, -EPIPE or -ENOMEM when nothing was, and the
 * caller sends them with rpc_notify). The caller vouches that the three
 * make one JSON object. Never while an observer watches (it wants params
 * as an object): -EAGAIN then. rpc_notify_splice_room() is how many such
 * bytes the client's pipe has room for now (maybe 0: then
 * rpc_peer_on_room says when it has more), or -EAGAIN when splicing
 * cannot be used now. */
int rpc_notify_splice_room(const struct rpc_dispatch *d, size_t *ret_room);
int rpc_notify_splice(struct rpc_dispatch *d, const char *method, const char *params_head,
                      size_t hlen, int fd, size_t len, const char *params_tail, size_t tlen);

/* Send a request to the client and match its response by id. cb gets the
 * result or the error object (both borrowed), exactly once: when the
 * response comes, when timeout_ms pass without one (then error is a
 * -32803 object saying so, made by dispatch), or with both NULL when
 * dispatch is freed first. cb runs from the loop (never from inside
 * rpc_request). params is stolen. At most RPC_MAX_OUT_REQUESTS wait at
 * once: past that -EBUSY, so a client that never answers cannot grow the
 * table. -ENOMEM, -EPIPE. On success *ret_id (may be NULL) is the id, for
 * rpc_request_forget(). */
#define RPC_MAX_OUT_REQUESTS 64
#define RPC_OUT_TIMEOUT_MS   30000
typedef void (*rpc_reply_fn)(void *data, json_object *result, json_object *error);
int rpc_request(struct rpc_dispatch *d, const char *method, json_object *params,
                uint64_t timeout_ms, rpc_reply_fn cb, void *data, int64_t *ret_id);
/* Call a method of the table as if the client had sent it, with the
 * answer going to cb (result or error, borrowed) from a later loop
 * iteration, never from inside this call; or NULL, NULL when dispatch is
 * freed first. The call is pending like any other: shutdown and end of
 * input cancel it (cb then hears -32800), and rpc_dispatch_cancel_id(*ret_id)
 * cancels it. Notifications its handler sends go to the client as usual.
 * params is borrowed. *ret_id (yours to put; may be NULL) is its id, a
 * string "kiln-internal-N". -ENOENT for a method not in the table. */
int rpc_dispatch_call(struct rpc_dispatch *d, const char *method, json_object *params,
                      rpc_reply_fn cb, void *data, json_object **ret_id);

/* Stop waiting for request id: cb is never called. A late response is
 * then logged and dropped. */
void rpc_request_forget(struct rpc_dispatch *d, int64_t id);
/* Requests sent and not yet answered. */
size_t rpc_dispatch_out_pending(const struct rpc_dispatch *d);

struct rpc_peer *rpc_dispatch_peer(struct rpc_dispatch *d);

/* --- calls --- */

void *rpc_call_ctx(struct rpc_call *call);
struct rpc_dispatch *rpc_call_dispatch(struct rpc_call *call);
const char *rpc_call_method(const struct rpc_call *call);
/* The request's id (borrowed; NULL for JSON null). */
json_object *rpc_call_id(const struct rpc_call *call);
bool rpc_call_is_notification(const struct rpc_call *call);

/* Answer the call; result is stolen (NULL sends JSON null). The call is
 * freed: do not touch it afterwards. */
void rpc_call_reply(struct rpc_call *call, json_object *result);
/* Answer with an error; data is stolen (may be NULL). message NULL uses the
 * code's standard text. The call is freed. */
void rpc_call_error(struct rpc_call *call, int code, const char *message, json_object *data);
void rpc_call_errorf(struct rpc_call *call, int code, json_object *data, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Register how to stop the call's work when the client cancels it or the
 * server stops. fn must stop the work and forget the call: dispatch then
 * answers -32800 and frees the call. */
void rpc_call_on_cancel(struct rpc_call *call, void (*fn)(void *data), void *data);
