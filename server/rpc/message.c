/* message.c: JSON-RPC 2.0 validation and builders (see message.h). */
#include "rpc/message.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/buf.h"
#include "core/json.h"
#include "core/position.h"

static int parse_wording(int r, const char *why, char *detail, size_t dsz)
{
	if (r == -EINVAL || r == -EFBIG) {
		snprintf(detail, dsz, "Parse error: %s", why);
		return -EINVAL;
	}
	return r;
}

int rpc_parse(const char *body, size_t len, json_object **ret_obj, char *detail, size_t dsz)
{
	char why[160] = "";
	/* INT32_MAX: json-c takes the length as an int. */
	int r = json_parse_strict(body, len, INT32_MAX, ret_obj, why, sizeof(why));
	return parse_wording(r, why, detail, dsz);
}

int rpc_parse_stream(struct json_stream *js, json_object **ret_obj, char *detail, size_t dsz)
{
	char why[160] = "";
	int r = json_stream_finish(js, ret_obj, why, sizeof(why));
	return parse_wording(r, why, detail, dsz);
}

static int valid_id(json_object *id)
{
	/* NULL is JSON null, which the spec allows. */
	return !id || json_object_is_type(id, json_type_string) ||
	       json_object_is_type(id, json_type_int) || json_object_is_type(id, json_type_double);
}

int rpc_msg_parse(json_object *obj, struct rpc_msg *ret, json_object **ret_id, char *detail,
                  size_t dsz)
{
	struct rpc_msg m = {0};
	*ret_id = NULL;
	if (!json_object_is_type(obj, json_type_object)) {
		snprintf(detail, dsz, "Invalid Request: a message must be a JSON object");
		return -EINVAL;
	}
	json_object *id = NULL;
	int has_id = json_object_object_get_ex(obj, "id", &id);
	if (has_id && valid_id(id))
		*ret_id = id;

	const char *version = NULL;
	if (json_get_string(obj, "jsonrpc", &version) < 0 || strcmp(version, "2.0") != 0) {
		snprintf(detail, dsz, "Invalid Request: \"jsonrpc\" must be \"2.0\"");
		return -EINVAL;
	}
	if (has_id && !valid_id(id)) {
		snprintf(detail, dsz, "Invalid Request: \"id\" must be a string, number or null");
		return -EINVAL;
	}
	json_object *method = NULL;
	if (json_object_object_get_ex(obj, "method", &method)) {
		if (!json_object_is_type(method, json_type_string)) {
			snprintf(detail, dsz, "Invalid Request: \"method\" must be a string");
			return -EINVAL;
		}
		json_object *params = NULL;
		if (json_object_object_get_ex(obj, "params", &params) && params &&
		    !json_object_is_type(params, json_type_object) &&
		    !json_object_is_type(params, json_type_array)) {
			snprintf(detail, dsz,
			         "Invalid Request: \"params\" must be an object or an array");
			return -EINVAL;
		}
		/* Editors differ in how they say "no params": Neovim sends [],
		 * Emacs null, VS Code leaves it out. Handlers see NULL for all. */
		if (params && json_object_is_type(params, json_type_array) &&
		    json_object_array_length(params) == 0)
			params = NULL;
		m.kind = has_id ? RPC_KIND_REQUEST : RPC_KIND_NOTIFICATION;
		m.id = id;
		m.method = json_object_get_string(method);
		m.params = params;
		*ret = m;
		return 0;
	}
	json_object *result = NULL, *error = NULL;
	int has_result = json_object_object_get_ex(obj, "result", &result);
	int has_error = json_object_object_get_ex(obj, "error", &error);
	if (!has_id || has_result == has_error) {
		snprintf(detail, dsz,
		         "Invalid Request: a message needs a \"method\", or an \"id\" "
		         "with exactly one of \"result\" and \"error\"");
		return -EINVAL;
	}
	m.kind = RPC_KIND_RESPONSE;
	m.id = id;
	m.result = result;
	m.error = error;
	*ret = m;
	return 0;
}

const char *rpc_error_message(int code)
{
	switch (code) {
	case RPC_PARSE_ERROR:
		return "Parse error";
	case RPC_INVALID_REQUEST:
		return "Invalid Request";
	case RPC_METHOD_NOT_FOUND:
		return "Method not found";
	case RPC_INVALID_PARAMS:
		return "Invalid params";
	case RPC_INTERNAL_ERROR:
		return "Internal error";
	case RPC_SERVER_NOT_INITIALIZED:
		return "Server not initialized";
	case RPC_REQUEST_FAILED:
		return "Request failed";
	case RPC_REQUEST_CANCELLED:
		return "Request cancelled";
	default:
		return "Server error";
	}
}

static json_object *envelope(json_object *id, int with_id)
{
	json_object *o = json_object_new_object();
	if (!o)
		return NULL;
	json_object_object_add(o, "jsonrpc", json_object_new_string("2.0"));
	if (with_id)
		json_object_object_add(o, "id", json_copy(id));
	return o;
}

json_object *rpc_response_new(json_object *id, json_object *result)
{
	json_object *o = envelope(id, 1);
	if (!o) {
		json_object_put(result);
		return NULL;
	}
	json_object_object_add(o, "result", result);
	return o;
}

/* The n bytes at s, in place: every byte that is not part of valid UTF-8
 * becomes '?'. */
static void utf8_repair(char *s, size_t n)
{
	const unsigned char *p = (const unsigned char *)s;
	for (size_t i = 0; i < n;) {
		size_t seq = utf8_seq_len(p + i, n - i);
		if (seq == 1 && p[i] >= 0x80)
			s[i] = '?';
		i += seq;
	}
}

/* A JSON string of text with every byte that is not part of valid UTF-8
 * replaced by '?'. Error messages quote client input (a bad header line, a
 * method name cut to fit a buffer), and the output must stay UTF-8. */
static json_object *utf8_string(const char *text)
{
	size_t n = strlen(text);
	if (utf8_valid(text, n))
		return json_object_new_string(text);
	char *copy = strdup(text);
	if (!copy)
		return NULL;
	utf8_repair(copy, n);
	json_object *o = json_object_new_string(copy);
	free(copy);
	return o;
}

/* The one place the documented form of an error message is made: the
 * code's standard text, then what was wrong ("Method not found: foo").
 * A message that already starts with the standard text (followed by ':'
 * or nothing) is kept; any other gets it put in front. Yours to free. */
static char *standard_message(int code, const char *message)
{
	const char *std = rpc_error_message(code);
	size_t n = strlen(std);
	if (!message || !message[0])
		return strdup(std);
	if (strncmp(message, std, n) == 0 && (message[n] == '\0' || message[n] == ':'))
		return strdup(message);
	char *s = NULL;
	return asprintf(&s, "%s: %s", std, message) < 0 ? NULL : s;
}

json_object *rpc_error_new(json_object *id, int code, const char *message, json_object *data)
{
	json_object *o = envelope(id, 1);
	json_object *e = json_object_new_object();
	char *text = standard_message(code, message);
	if (!o || !e || !text) {
		json_object_put(o);
		json_object_put(e);
		json_object_put(data);
		free(text);
		return NULL;
	}
	json_object_object_add(e, "code", json_object_new_int(code));
	json_object_object_add(e, "message", utf8_string(text));
	free(text);
	if (data)
		json_object_object_add(e, "data", data);
	json_object_object_add(o, "error", e);
	return o;
}

json_object *rpc_notification_new(const char *method, json_object *params)
{
	json_object *o = envelope(NULL, 0);
	if (!o) {
		json_object_put(params);
		return NULL;
	}
	json_object_object_add(o, "method", json_object_new_string(method));
	if (params)
		json_object_object_add(o, "params", params);
	return o;
}

json_object *rpc_request_new(json_object *id, const char *method, json_object *params)
{
	json_object *o = envelope(id, 1);
	if (!o) {
		json_object_put(params);
		return NULL;
	}
	json_object_object_add(o, "method", json_object_new_string(method));
	if (params)
		json_object_object_add(o, "params", params);
	return o;
}

/* The envelope's start: {"jsonrpc":"2.0","id":ID, as envelope() builds
 * it (json-c keeps members in the order they were added). */
static int write_envelope(struct buf *out, json_object *id)
{
	static const char head[] = "{\"jsonrpc\":\"2.0\",\"id\":";
	int r = buf_append(out, head, sizeof(head) - 1);
	return r < 0 ? r : json_write(out, id);
}

int rpc_write_response(struct buf *out, json_object *id, json_object *result)
{
	static const char mid[] = ",\"result\":";
	int r = write_envelope(out, id);
	if (r >= 0)
		r = buf_append(out, mid, sizeof(mid) - 1);
	if (r >= 0)
		r = json_write(out, result);
	return r < 0 ? r : buf_append(out, "}", 1);
}

int rpc_write_error(struct buf *out, json_object *id, int code, const char *message,
                    json_object *data)
{
	static const char mid[] = ",\"error\":{\"code\":", msg[] = ",\"message\":",
	                  dat[] = ",\"data\":";
	char *text = standard_message(code, message);
	if (!text)
		return -ENOMEM;
	size_t n = strlen(text);
	/* As utf8_string(): bytes that are not UTF-8 become '?'. */
	if (!utf8_valid(text, n))
		utf8_repair(text, n);
	int r = write_envelope(out, id);
	if (r >= 0)
		r = buf_append(out, mid, sizeof(mid) - 1);
	if (r >= 0)
		r = json_write_int64(out, code);
	if (r >= 0)
		r = buf_append(out, msg, sizeof(msg) - 1);
	if (r >= 0)
		r = json_write_string(out, text, n);
	free(text);
	if (r >= 0 && data) {
		r = buf_append(out, dat, sizeof(dat) - 1);
		if (r >= 0)
			r = json_write(out, data);
	}
	return r < 0 ? r : buf_append(out, "}}", 2);
}

int rpc_id_equal(json_object *a, json_object *b)
{
	if (!a || !b)
		return !a && !b;
	if (json_object_get_type(a) != json_object_get_type(b)) {
		/* 1 and 1.0 are the same number. */
		if ((json_object_is_type(a, json_type_int) ||
		     json_object_is_type(a, json_type_double)) &&
		    (json_object_is_type(b, json_type_int) ||
		     json_object_is_type(b, json_type_double)))
			return json_object_get_double(a) == json_object_get_double(b);
		return 0;
	}
	if (json_object_is_type(a, json_type_string))
		return strcmp(json_object_get_string(a), json_object_get_string(b)) == 0;
	if (json_object_is_type(a, json_type_int))
		return json_object_get_int64(a) == json_object_get_int64(b);
	if (json_object_is_type(a, json_type_double))
		return json_object_get_double(a) == json_object_get_double(b);
	return 0;
}
