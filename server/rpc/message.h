/* message.h: JSON-RPC 2.0 message shapes: classify and validate an incoming
 * object, build responses, errors and notifications. No I/O, no methods. */
#pragma once

#include <json-c/json.h>
#include <stddef.h>

#include "core/json.h"

/* Error codes: JSON-RPC 2.0 section 5.1, then the LSP's own. */
enum rpc_error_code {
	RPC_PARSE_ERROR = -32700,
	RPC_INVALID_REQUEST = -32600,
	RPC_METHOD_NOT_FOUND = -32601,
	RPC_INVALID_PARAMS = -32602,
	RPC_INTERNAL_ERROR = -32603,
	RPC_SERVER_NOT_INITIALIZED = -32002,
	RPC_REQUEST_FAILED = -32803,
	RPC_REQUEST_CANCELLED = -32800,
};

/* Nesting deeper than this is refused as a parse error (json-c would
 * otherwise recurse on hostile input). */
#define RPC_MAX_DEPTH JSON_MAX_DEPTH

enum rpc_kind {
	RPC_KIND_REQUEST,
	RPC_KIND_NOTIFICATION,
	RPC_KIND_RESPONSE,
};

/* A validated message; every pointer is borrowed from the parsed object. */
struct rpc_msg {
	enum rpc_kind kind;
	json_object *id;     /* request/response; NULL stands for JSON null */
	const char *method;  /* request/notification */
	json_object *params; /* NULL when absent, null, or an empty array */
	json_object *result; /* response */
	json_object *error;  /* response */
};

/* Parse a body as strict UTF-8 JSON into *ret_obj (yours to put; NULL for
 * a JSON null body): json_parse_strict (core/json.h) with the protocol's
 * wording. -EINVAL with a sentence starting "Parse error: " in detail when
 * it is not JSON (or is over 2 GiB). */
int rpc_parse(const char *body, size_t len, json_object **ret_obj, char *detail, size_t dsz);
/* The same for a body fed piece by piece to js (core/json.h's stream) as
 * it arrived. Finishes js; the caller still frees it. */
struct json_stream;
int rpc_parse_stream(struct json_stream *js, json_object **ret_obj, char *detail, size_t dsz);

/* Validate obj as a JSON-RPC 2.0 message. 0 on success; -EINVAL with a
 * sentence in detail, and *ret_id set to the id to answer with (NULL for
 * JSON null) when the message is an invalid request. */
int rpc_msg_parse(json_object *obj, struct rpc_msg *ret, json_object **ret_id, char *detail,
                  size_t dsz);

/* The standard message for a code ("Invalid Request", ...). */
const char *rpc_error_message(int code);

/* Builders; each returns a new object (yours) or NULL on OOM. id is
 * copied (NULL means JSON null); result and data are stolen.
 * rpc_error_new's message always starts with the code's standard text
 * (docs/protocol.md): one that does not ("profile must be a string") is
 * sent as "Invalid params: profile must be a string"; NULL sends the
 * standard text alone. */
json_object *rpc_response_new(json_object *id, json_object *result);
json_object *rpc_error_new(json_object *id, int code, const char *message, json_object *data);
json_object *rpc_notification_new(const char *method, json_object *params);
json_object *rpc_request_new(json_object *id, const char *method, json_object *params);

/* Append to out the bytes json_write() gives for rpc_response_new(id,
 * result) and rpc_error_new(id, code, message, data), without building
 * them: a reply's envelope as objects (a json-c object is a 16-slot hash
 * table to allocate, fill and free) was a third of a small request's
 * cost. Everything is borrowed. 0, or -ENOMEM/-ENOBUFS (out then holds
 * part of the message). */
struct buf;
int rpc_write_response(struct buf *out, json_object *id, json_object *result);
int rpc_write_error(struct buf *out, json_object *id, int code, const char *message,
                    json_object *data);

/* Whether two ids are the same JSON value (type and content). */
int rpc_id_equal(json_object *a, json_object *b);
