/* json.c: typed getters and helpers over json-c (see json.h for the
 * ownership rule). */
#include "core/json.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "core/position.h"

json_object *json_get(json_object *obj, const char *key)
{
	json_object *v = NULL;
	if (!obj || !json_object_is_type(obj, json_type_object))
		return NULL;
	if (!json_object_object_get_ex(obj, key, &v))
		return NULL;
	return v;
}

static int get_typed(json_object *obj, const char *key, json_type type, json_object **ret)
{
	json_object *v = json_get(obj, key);
	if (!v)
		return -ENOENT;
	if (!json_object_is_type(v, type))
		return -EINVAL;
	*ret = v;
	return 0;
}

int json_get_string(json_object *obj, const char *key, const char **ret_str)
{
	json_object *v;
	int r = get_typed(obj, key, json_type_string, &v);
	if (r < 0)
		return r;
	*ret_str = json_object_get_string(v);
	return 0;
}

int json_get_int64(json_object *obj, const char *key, int64_t *ret_val)
{
	json_object *v = json_get(obj, key);
	if (!v)
		return -ENOENT;
	if (json_object_is_type(v, json_type_int)) {
		*ret_val = json_object_get_int64(v);
		return 0;
	}
	if (json_object_is_type(v, json_type_double)) {
		double d = json_object_get_double(v);
		if (d != (double)(int64_t)d)
			return -EINVAL;
		*ret_val = (int64_t)d;
		return 0;
	}
	return -EINVAL;
}

int json_get_bool(json_object *obj, const char *key, bool *ret_val)
{
	json_object *v;
	int r = get_typed(obj, key, json_type_boolean, &v);
	if (r < 0)
		return r;
	*ret_val = json_object_get_boolean(v);
	return 0;
}

int json_get_object(json_object *obj, const char *key, json_object **ret_obj)
{
	return get_typed(obj, key, json_type_object, ret_obj);
}

int json_get_array(json_object *obj, const char *key, json_object **ret_arr)
{
	return get_typed(obj, key, json_type_array, ret_arr);
}

json_object *json_get_path(json_object *obj, const char *path)
{
	char key[128];
	while (obj && *path) {
		const char *dot = strchr(path, '.');
		size_t n = dot ? (size_t)(dot - path) : strlen(path);
		if (n >= sizeof(key))
			return NULL;
		memcpy(key, path, n);
		key[n] = '\0';
		obj = json_get(obj, key);
		path += n + (dot ? 1 : 0);
	}
	return obj;
}

const char *json_compact(json_object *obj)
{
	return json_object_to_json_string_ext(obj, JSON_C_TO_STRING_PLAIN |
	                                               JSON_C_TO_STRING_NOSLASHESCAPE);
}

json_object *json_copy(json_object *obj)
{
	json_object *out = NULL;
	if (!obj)
		return NULL;
	if (json_object_deep_copy(obj, &out, NULL) < 0)
		return NULL;
	return out;
}

/* json-c accepts more than JSON even in strict mode: NaN and Infinity,
 * "1." and raw control characters in strings. Echoed back (an id, a
 * param), they would make kiln's own output invalid JSON. Check the
 * tokens of a text json-c accepted against RFC 8259; returns the offset
 * of the first byte that is not JSON, or len. */
static size_t json_strict_prefix(const char *s, size_t len)
{
	static const char *const literals[] = {"true", "false", "null"};
	size_t i = 0;
	while (i < len) {
		char c = s[i];
		if (strchr("{}[],: \t\r\n", c) && c != '\0') {
			i++;
		} else if (c == '"') {
			for (i++; i < len && s[i] != '"'; i++) {
				if ((unsigned char)s[i] < 0x20)
					return i;
				if (s[i] == '\\')
					i++; /* json-c checked the escape itself */
			}
			i++;
		} else if (c == '-' || (c >= '0' && c <= '9')) {
			size_t start = i;
			if (s[i] == '-')
				i++;
			if (i < len && s[i] == '0')
				i++;
			else if (i < len && s[i] >= '1' && s[i] <= '9')
				while (i < len && s[i] >= '0' && s[i] <= '9')
					i++;
			else
				return start;
			if (i < len && s[i] == '.') {
				if (++i >= len || s[i] < '0' || s[i] > '9')
					return start;
				while (i < len && s[i] >= '0' && s[i] <= '9')
					i++;
			}
			if (i < len && (s[i] == 'e' || s[i] == 'E')) {
				i++;
				if (i < len && (s[i] == '+' || s[i] == '-'))
					i++;
				if (i >= len || s[i] < '0' || s[i] > '9')
					return start;
				while (i < len && s[i] >= '0' && s[i] <= '9')
					i++;
			}
		} else {
			size_t k = 0;
			while (k < 3 && (len - i < strlen(literals[k]) ||
			                 memcmp(s + i, literals[k], strlen(literals[k])) != 0))
				k++;
			if (k == 3)
				return i;
			i += strlen(literals[k]);
		}
	}
	return len;
}

int json_parse_strict(const char *body, size_t len, size_t max_len, json_object **ret_obj,
                      char *detail, size_t dsz)
{
	/* json-c takes the length as an int. */
	if (max_len > (size_t)INT32_MAX)
		max_len = INT32_MAX;
	if (len > max_len) {
		snprintf(detail, dsz, "the text is larger than %zu bytes", max_len);
		return -EFBIG;
	}
	/* json-c's own check lets overlong forms, surrogates and code points
	 * past U+10FFFF through; JSON text is UTF-8 (RFC 8259 section 8.1). */
	if (!utf8_valid(body, len)) {
		snprintf(detail, dsz, "the text is not valid UTF-8");
		return -EINVAL;
	}
	json_tokener *tok = json_tokener_new_ex(JSON_MAX_DEPTH);
	if (!tok)
		return -ENOMEM;
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8);
	json_object *obj = json_tokener_parse_ex(tok, body, (int)len);
	enum json_tokener_error err = json_tokener_get_error(tok);
	size_t end = tok->char_offset;
	if (err == json_tokener_continue && len > 0) {
		/* A top-level number or literal ("1", "null") is complete only
		 * once json-c sees the end: say so with a terminating NUL. */
		obj = json_tokener_parse_ex(tok, "", 1);
		err = json_tokener_get_error(tok);
		if (err == json_tokener_error_parse_eof)
			err = json_tokener_continue;
		end = len;
	}
	json_tokener_free(tok);
	if (err == json_tokener_continue || (err == json_tokener_success && len == 0)) {
		snprintf(detail, dsz, "the JSON text ends early");
		goto fail;
	}
	if (err == json_tokener_error_depth) {
		snprintf(detail, dsz, "nesting deeper than %d levels", JSON_MAX_DEPTH);
		goto fail;
	}
	if (err != json_tokener_success) {
		snprintf(detail, dsz, "%s at byte %zu", json_tokener_error_desc(err), end);
		goto fail;
	}
	/* Only whitespace may follow the value. */
	for (size_t i = end; i < len; i++) {
		char c = body[i];
		if (c != ' ' && c != '\t' && c != '\r' && c != '\n') {
			snprintf(detail, dsz, "data after the JSON value at byte %zu", i);
			goto fail;
		}
	}
	size_t bad = json_strict_prefix(body, len);
	if (bad < len) {
		snprintf(detail, dsz, "not JSON at byte %zu", bad);
		goto fail;
	}
	*ret_obj = obj;
	return 0;
fail:
	json_object_put(obj);
	return -EINVAL;
}
