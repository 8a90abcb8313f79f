/* config.h: kiln's configuration as one JSON object. Sources, lowest
 * precedence first: built-in defaults (each subsystem's own), the config
 * file ($XDG_CONFIG_HOME/kiln/config.json, else ~/.config/kiln/config.json,
 * or --config FILE), environment variables a subsystem documents, and the
 * client's initializationOptions, laid over the file key by key. */
#pragma once

#include <json-c/json.h>

/* Load the config file into *ret_config (a new object; an empty one when
 * the file does not exist). path NULL means the default location. -errno,
 * with a sentence in detail, when the file exists but cannot be used: a
 * JSON syntax error names its line and column, a section of the wrong
 * type its name (config_check). */
int config_load(const char *path, json_object **ret_config, char *detail, size_t dsz);

/* Check what config_load and initialize's initializationOptions share:
 * each subsystem's section ("llm", "intent", "validator", "sandbox") is an
 * object when present. -EINVAL with "WHERE: \"llm\" must be an object,
 * not int" in detail. Each subsystem checks its own members when it
 * resolves its section (llm_config_resolve, val_new, ...). */
int config_check(json_object *config, const char *where, char *detail, size_t dsz);

/* Lay overlay's members over base, recursively for objects (overlay
 * wins). overlay is borrowed. -ENOMEM. */
int config_merge(json_object *base, json_object *overlay);

/* The section of config named key (borrowed), or NULL. */
json_object *config_section(json_object *config, const char *key);
