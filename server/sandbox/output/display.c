/* display.c: rich output from a box, checked (see display.h). */
#include "sandbox/output/display.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/json.h"
#include "core/util.h"

/* The largest display file read (a session's frame has the same cap). */
#define DISPLAY_FILE_MAX (16u << 20)

static bool mime_name_ok(const char *k)
{
	size_t n = strlen(k);
	const char *slash = strchr(k, '/');
	if (n == 0 || n > 100 || !slash || slash == k || !slash[1] || strchr(slash + 1, '/'))
		return false;
	for (const char *p = k; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		      (*p >= '0' && *p <= '9') || strchr("/.+-_", *p)))
			return false;
	return true;
}

static bool json_mime(const char *k)
{
	size_t n = strlen(k);
	return strcmp(k, "application/json") == 0 || (n > 5 && strcmp(k + n - 5, "+json") == 0);
}

bool sbx_display_bundle_ok(json_object *data)
{
	if (!json_object_is_type(data, json_type_object) || json_object_object_length(data) > 16 ||
	    !json_object_is_type(json_get(data, "text/plain"), json_type_string))
		return false;
	json_object_object_foreach(data, k, v)
	{
		if (!mime_name_ok(k) ||
		    (!json_mime(k) && !json_object_is_type(v, json_type_string)))
			return false;
	}
	return true;
}

void sbx_displays_release(struct sbx_displays *d)
{
	for (size_t i = 0; i < d->n; i++) {
		json_object_put(d->data[i]);
		json_object_put(d->metadata[i]);
	}
	free(d->data);
	free(d->metadata);
	*d = (struct sbx_displays){0};
}

/* The whole of a regular file of at most max bytes, NUL-terminated; NULL
 * when it is not one (or on OOM: *oom). */
static char *read_small(int dirfd, const char *name, size_t max, size_t *ret_len, bool *oom)
{
	_cleanup_close_ int fd =
	    openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || (uint64_t)st.st_size > max)
		return NULL;
	char *buf = malloc((size_t)st.st_size + 1);
	if (!buf) {
		*oom = true;
		return NULL;
	}
	size_t off = 0;
	while (off < (size_t)st.st_size) {
		ssize_t n = read(fd, buf + off, (size_t)st.st_size - off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		off += (size_t)n;
	}
	buf[off] = '\0';
	*ret_len = off;
	return buf;
}

int sbx_displays_read(int work_fd, uint64_t budget, const atomic_bool *cancel,
                      struct sbx_displays *ret)
{
	*ret = (struct sbx_displays){0};
	_cleanup_close_ int dir =
	    openat(work_fd, SBX_DISPLAY_DIR, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dir < 0)
		return 0;
	if (!(ret->data = calloc(SBX_DISPLAYS_MAX, sizeof(*ret->data))) ||
	    !(ret->metadata = calloc(SBX_DISPLAYS_MAX, sizeof(*ret->metadata)))) {
		sbx_displays_release(ret);
		return -ENOMEM;
	}
	/* The runner names them 0000.json, 0001.json, ... in order; a name
	 * missing ends the list (the code may have removed some). */
	for (unsigned i = 0; i < SBX_DISPLAYS_MAX; i++) {
		if (cancel && atomic_load(cancel)) {
			sbx_displays_release(ret);
			return -ECANCELED;
		}
		char name[32];
		snprintf(name, sizeof(name), "%04u.json", i);
		size_t len = 0;
		bool oom = false;
		char *body = read_small(dir, name, DISPLAY_FILE_MAX, &len, &oom);
		if (oom) {
			sbx_displays_release(ret);
			return -ENOMEM;
		}
		if (!body) {
			if (faccessat(dir, name, F_OK, AT_SYMLINK_NOFOLLOW) == 0) {
				ret->dropped++;
				continue;
			}
			break;
		}
		json_object *msg = NULL;
		char detail[128];
		json_object *data = NULL, *md = NULL;
		if (len <= budget - ret->bytes &&
		    json_parse_strict(body, len, DISPLAY_FILE_MAX, &msg, detail, sizeof(detail)) >=
		        0 &&
		    json_object_is_type(msg, json_type_object)) {
			data = json_get(msg, "data");
			md = json_get(msg, "metadata");
		}
		free(body);
		if (!data || !sbx_display_bundle_ok(data) ||
		    (md && !json_object_is_type(md, json_type_object))) {
			json_object_put(msg);
			ret->dropped++;
			continue;
		}
		ret->data[ret->n] = json_object_get(data);
		ret->metadata[ret->n] = md ? json_object_get(md) : json_object_new_object();
		ret->n++;
		ret->bytes += len;
		json_object_put(msg);
	}
	return 0;
}
