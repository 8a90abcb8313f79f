/* languages.c: the registry for shell and ask (see languages.h). */
#include "cli/languages.h"

#include <stdio.h>

#include "cli/cache_dir.h"
#include "cli/cli.h"
#include "config.h"
#include "core/json.h"
#include "core/lang.h"

int cli_languages_load(const char *config_path, char *err, size_t errsz)
{
	json_object *config = NULL;
	int r = config_load(config_path, &config, err, errsz);
	if (r < 0)
		return r;
	r = lang_configure(json_get(config_section(config, "sandbox"), "languages"), err, errsz);
	cli_run_folder_caps(config_section(config, "sandbox"));
	json_object_put(config);
	return r;
}

const char *cli_language(const char *cmd, const char *name)
{
	const struct lang *l = lang_find(name);
	if (l)
		return l->name;
	char msg[512];
	cli_error(cmd, lang_unknown(name, msg, sizeof(msg)));
	return NULL;
}
