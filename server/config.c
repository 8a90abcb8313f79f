/* config.c: loading and merging the JSON config (see config.h). */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/json.h"
#include "rpc/message.h"

/* A config file is small; anything larger is a mistake. */
#define CONFIG_MAX (1u << 20)

static int default_path(char *out, size_t n)
{
	const char *xdg = getenv("XDG_CONFIG_HOME");
	const char *home = getenv("HOME");
	int w;
	if (xdg && xdg[0] == '/')
		w = snprintf(out, n, "%s/kiln/config.json", xdg);
	else if (home && home[0])
		w = snprintf(out, n, "%s/.config/kiln/config.json", home);
	else
		return -ENOENT;
	return w < 0 || (size_t)w >= n ? -ENAMETOOLONG : 0;
}

int config_load(const char *path, json_object **ret_config, char *detail, size_t dsz)
{
	char def[4096];
	bool explicit_path = path != NULL;
	if (!path) {
		if (default_path(def, sizeof(def)) < 0) {
			*ret_config = json_object_new_object();
			return *ret_config ? 0 : -ENOMEM;
		}
		path = def;
	}
	FILE *f = fopen(path, "re");
	if (!f) {
		if (errno == ENOENT && !explicit_path) {
			*ret_config = json_object_new_object();
			return *ret_config ? 0 : -ENOMEM;
		}
		int e = errno;
		snprintf(detail, dsz, "cannot open config %s: %s", path, strerror(e));
		return -e;
	}
	char *text = malloc(CONFIG_MAX + 1);
	if (!text) {
		fclose(f);
		return -ENOMEM;
	}
	size_t len = fread(text, 1, CONFIG_MAX + 1, f);
	fclose(f);
	if (len > CONFIG_MAX) {
		free(text);
		snprintf(detail, dsz, "config %s is larger than 1 MiB", path);
		return -EFBIG;
	}
	json_object *obj = NULL;
	char why[200] = "";
	int r = rpc_parse(text, len, &obj, why, sizeof(why));
	free(text);
	if (r < 0 || !json_object_is_type(obj, json_type_object)) {
		json_object_put(obj);
		snprintf(detail, dsz, "config %s is not a JSON object%s%s", path,
		         why[0] ? ": " : "", why);
		return -EINVAL;
	}
	*ret_config = obj;
	return 0;
}

int config_merge(json_object *base, json_object *overlay)
{
	if (!overlay || !json_object_is_type(overlay, json_type_object))
		return 0;
	json_object_object_foreach(overlay, key, val)
	{
		json_object *cur = json_get(base, key);
		if (cur && val && json_object_is_type(cur, json_type_object) &&
		    json_object_is_type(val, json_type_object)) {
			int r = config_merge(cur, val);
			if (r < 0)
				return r;
			continue;
		}
		json_object *copy = json_copy(val);
		if (val && !copy)
			return -ENOMEM;
		json_object_object_add(base, key, copy);
	}
	return 0;
}

json_object *config_section(json_object *config, const char *key)
{
	json_object *s = json_get(config, key);
	return s && json_object_is_type(s, json_type_object) ? s : NULL;
}
