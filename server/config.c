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

/* The byte a parse error is at: rpc_parse says "at byte N"; an error
 * without one ("the JSON text ends early") is at the end. */
static size_t error_offset(const char *why, size_t len)
{
	const char *at = strstr(why, "at byte ");
	if (!at)
		return len;
	unsigned long long n = strtoull(at + 8, NULL, 10);
	return n < len ? (size_t)n : len;
}

/* Line and column (from 1; a column counts characters, not bytes) of byte
 * off in text. */
static void text_position(const char *text, size_t off, size_t *ret_line, size_t *ret_col)
{
	size_t line = 1, col = 1;
	for (size_t i = 0; i < off; i++) {
		if (text[i] == '\n') {
			line++;
			col = 1;
		} else if (((unsigned char)text[i] & 0xc0) != 0x80) {
			col++;
		}
	}
	*ret_line = line;
	*ret_col = col;
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
	if (r < 0) {
		/* Say where, as an editor counts: line and column from 1. */
		size_t line, col;
		text_position(text, error_offset(why, len), &line, &col);
		free(text);
		const char *reason = strncmp(why, "Parse error: ", 13) == 0 ? why + 13 : why;
		const char *at = strstr(reason, " at byte ");
		int rlen = at ? (int)(at - reason) : (int)strlen(reason);
		snprintf(detail, dsz, "config %s is not valid JSON: line %zu, column %zu: %.*s",
		         path, line, col, rlen, reason);
		return r == -ENOMEM ? r : -EINVAL;
	}
	free(text);
	if (!json_object_is_type(obj, json_type_object)) {
		json_object_put(obj);
		snprintf(detail, dsz, "config %s is not a JSON object", path);
		return -EINVAL;
	}
	char what[4200];
	snprintf(what, sizeof(what), "config %s", path);
	r = config_check(obj, what, detail, dsz);
	if (r < 0) {
		json_object_put(obj);
		return r;
	}
	*ret_config = obj;
	return 0;
}

/* The sections kiln's subsystems read; each must be an object (or null:
 * unset). Members inside a section are each subsystem's to check. */
static const char *const sections[] = {"llm", "intent", "validator", "sandbox"};

int config_check(json_object *config, const char *where, char *detail, size_t dsz)
{
	for (size_t i = 0; i < sizeof(sections) / sizeof(sections[0]); i++) {
		json_object *v = json_get(config, sections[i]);
		if (v && !json_object_is_type(v, json_type_object)) {
			snprintf(detail, dsz, "%s: \"%s\" must be an object, not %s", where,
			         sections[i], json_type_to_name(json_object_get_type(v)));
			return -EINVAL;
		}
	}
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
