/* rule_file.c: the rule files (rules/LANG.scm, rules/LANG.json,
 * text.json, profiles.json), read whole from the copies compiled in or
 * from a folder the config names. The one reader below everything that
 * loads them: rules.c, text.c and validate.c. */
#include "validate/internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/util.h"
#include "validate/rules_embed.h"

/* A rule file bigger than this is refused (-EFBIG): it is read whole. */
#define RULE_FILE_MAX (1u << 20)

int val_rule_file_read(const char *dir, const char *name, char **ret_data, size_t *ret_len)
{
	if (!dir) {
		for (unsigned i = 0; i < val_rule_files_count; i++)
			if (strcmp(val_rule_files[i].name, name) == 0) {
				char *p = malloc(val_rule_files[i].len + 1);
				if (!p)
					return -ENOMEM;
				memcpy(p, val_rule_files[i].data, val_rule_files[i].len + 1);
				*ret_data = p;
				*ret_len = val_rule_files[i].len;
				return 0;
			}
		return -ENOENT;
	}
	char path[4096];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return neg_errno();
	struct stat st;
	if (fstat(fd, &st) < 0)
		return neg_errno();
	if (st.st_size > RULE_FILE_MAX)
		return -EFBIG;
	char *p = malloc((size_t)st.st_size + 1);
	if (!p)
		return -ENOMEM;
	size_t n = 0;
	while (n < (size_t)st.st_size) {
		ssize_t k = read(fd, p + n, (size_t)st.st_size - n);
		if (k <= 0) {
			free(p);
			return k < 0 ? neg_errno() : -EIO;
		}
		n += (size_t)k;
	}
	p[n] = '\0';
	*ret_data = p;
	*ret_len = n;
	return 0;
}
