/* json.c: typed getters and helpers over json-c (see json.h for the
 * ownership rule). */
#include "core/json.h"

#include <errno.h>
#include <string.h>

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
