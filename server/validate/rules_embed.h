/* rules_embed.h: the default rule files, embedded into kiln at build time
 * by embed-rules.sh (see module.mk), so kiln needs no installed data. */
#pragma once

#include <stddef.h>

struct val_rule_file {
	const char *name; /* file name, e.g. "python.scm" */
	const char *data; /* NUL-terminated */
	size_t len;
};

extern const struct val_rule_file val_rule_files[];
extern const unsigned val_rule_files_count;
