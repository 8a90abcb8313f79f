/* apply.c: showing and applying a run's workspace changes (see apply.h).
 * Every path is opened one component at a time with O_NOFOLLOW from the
 * workspace's own directory fd, so a link in the folder cannot make a
 * write land outside it, and a file is replaced by a rename of a
 * complete temporary copy, never left half written. */
#include "cli/apply.h"

#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/json.h"
#include "methods/workspace_edit.h"
#include "sandbox/workspace/apply.h"

struct cli_say {
	cli_say_fn say;
	void *data;
};

static void sayf(cli_say_fn say, void *data, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void sayf(cli_say_fn say, void *data, const char *fmt, ...)
{
	char line[PATH_MAX + 256];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	say(data, line);
}

size_t cli_ws_report(json_object *result, cli_say_fn say, void *data)
{
	json_object *list = json_get(result, "workspaceChanges");
	size_t n =
	    list && json_object_is_type(list, json_type_array) ? json_object_array_length(list) : 0;
	size_t in_edit = 0;
	if (!n)
		return 0;
	sayf(say, data, "the code changed %zu file%s in the workspace (not applied yet):", n,
	     n == 1 ? "" : "s");
	for (size_t i = 0; i < n; i++) {
		json_object *c = json_object_array_get_idx(list, i);
		const char *path = "?", *kind = "?";
		int64_t size = 0;
		json_get_string(c, "path", &path);
		json_get_string(c, "kind", &kind);
		json_get_int64(c, "size", &size);
		json_object *ie = json_get(c, "inEdit");
		const char *stored = NULL, *mime = NULL, *not_kept = NULL;
		json_get_string(c, "stored", &stored);
		json_get_string(c, "mimeType", &mime);
		json_get_string(c, "notKept", &not_kept);
		bool applies = (ie && json_object_get_boolean(ie)) || stored;
		in_edit += applies;
		if (stored || mime)
			sayf(say, data, "  %-8s %s (%lld bytes, %s)", kind, path, (long long)size,
			     mime ? mime : "application/octet-stream");
		else
			sayf(say, data, "  %-8s %s (%lld bytes)%s%s%s", kind, path, (long long)size,
			     applies ? "" : " [not applied: ",
			     applies    ? ""
			     : not_kept ? not_kept
			                : "not kept",
			     applies ? "" : "]");
	}
	int64_t omitted = 0;
	if (json_get_int64(result, "workspaceChangesOmitted", &omitted) == 0 && omitted > 0)
		sayf(say, data, "  ... and %lld more, not listed", (long long)omitted);
	return in_edit;
}

static void say_applied(void *data, const char *path, const char *why)
{
	struct cli_say *cs = data;
	if (why)
		sayf(cs->say, cs->data, "skipped %s: %s", path, why);
	else
		sayf(cs->say, cs->data, "applied %s", path);
}

int cli_ws_apply_changes(const struct run_outcome *oc, cli_say_fn say, void *data)
{
	if (!oc->workspace || !oc->ws_changes)
		return 0;
	struct cli_say cs = {.say = say, .data = data};
	int r = sbx_ws_apply(oc->workspace, oc->ws_changes->items, oc->ws_changes->n, NULL,
	                     say_applied, &cs);
	if (r < 0)
		sayf(say, data, "cannot open the workspace %s: %s", oc->workspace, strerror(-r));
	return r;
}

/* The path of uri relative to the workspace root, into rel. */
static int relative(const char *root, const char *uri, char *rel, size_t size)
{
	char path[PATH_MAX];
	if (file_uri_path(uri, path, sizeof(path)) < 0)
		return -EINVAL;
	size_t n = strlen(root);
	if (strncmp(path, root, n) != 0 || path[n] != '/' || !path[n + 1] ||
	    strstr(path + n, "/../") || strstr(path + n, "/./") ||
	    snprintf(rel, size, "%s", path + n + 1) >= (int)size)
		return -EINVAL;
	return 0;
}

static bool bad_component(const char *c)
{
	return !*c || strcmp(c, ".") == 0 || strcmp(c, "..") == 0;
}

/* The parent directory of rel, made with its parents, opened one
 * component at a time without following a link; *ret_name is the last
 * component. */
static int parent_dir(int root, char *rel, const char **ret_name)
{
	int dir = fcntl(root, F_DUPFD_CLOEXEC, 0);
	char *p = rel;
	for (char *slash; dir >= 0 && (slash = strchr(p, '/')); p = slash + 1) {
		*slash = '\0';
		int sub = -EINVAL;
		if (!bad_component(p) && (mkdirat(dir, p, 0755) == 0 || errno == EEXIST))
			sub = openat(dir, p, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (sub == -1)
			sub = -errno;
		*slash = '/';
		close(dir);
		dir = sub;
	}
	if (dir >= 0 && bad_component(p)) {
		close(dir);
		dir = -EINVAL;
	}
	*ret_name = p;
	return dir;
}

static int write_file(int root, char *rel, const char *text, size_t len)
{
	const char *name;
	int dir = parent_dir(root, rel, &name);
	if (dir < 0)
		return dir;
	char tmp[NAME_MAX + 32];
	snprintf(tmp, sizeof(tmp), ".kiln-apply-%d", (int)getpid());
	int fd = openat(dir, tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
	int r = fd < 0 ? -errno : 0;
	/* Keep a replaced file's mode. */
	struct stat st;
	if (r == 0 && fstatat(dir, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode))
		fchmod(fd, st.st_mode & 07777);
	for (size_t off = 0; r == 0 && off < len;) {
		ssize_t w = write(fd, text + off, len - off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			r = w < 0 ? -errno : -EIO;
		else
			off += (size_t)w;
	}
	if (fd >= 0 && close(fd) < 0 && r == 0)
		r = -errno;
	if (r == 0 && renameat(dir, tmp, dir, name) < 0)
		r = -errno;
	if (r < 0 && fd >= 0)
		unlinkat(dir, tmp, 0);
	close(dir);
	return r;
}

static int remove_tree(int dir, const char *name, int depth)
{
	if (unlinkat(dir, name, 0) == 0 || errno == ENOENT)
		return 0;
	if ((errno != EISDIR && errno != EPERM) || depth > 64)
		return -errno;
	int fd = openat(dir, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	DIR *d = fdopendir(fd);
	if (!d) {
		close(fd);
		return -errno;
	}
	struct dirent *e;
	int r = 0;
	while (r == 0 && (e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			r = remove_tree(dirfd(d), e->d_name, depth + 1);
	closedir(d);
	if (r == 0 && unlinkat(dir, name, AT_REMOVEDIR) < 0)
		r = -errno;
	return r;
}

static int delete_path(int root, char *rel, bool recursive)
{
	const char *name;
	int dir = parent_dir(root, rel, &name);
	if (dir < 0)
		return dir;
	int r = recursive ? remove_tree(dir, name, 0)
	                  : (unlinkat(dir, name, 0) == 0 || errno == ENOENT ? 0 : -errno);
	close(dir);
	return r;
}

int cli_ws_apply(json_object *result, cli_say_fn say, void *data)
{
	const char *root = NULL;
	json_object *ops = json_get_path(result, "workspaceEdit.documentChanges");
	if (json_get_string(result, "workspace", &root) < 0 || !ops ||
	    !json_object_is_type(ops, json_type_array))
		return 0;
	int rootfd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (rootfd < 0) {
		sayf(say, data, "cannot open the workspace %s: %s", root, strerror(errno));
		return -errno;
	}
	int done = 0;
	size_t n = json_object_array_length(ops);
	for (size_t i = 0; i < n; i++) {
		json_object *op = json_object_array_get_idx(ops, i);
		const char *kind = NULL, *uri = NULL;
		json_get_string(op, "kind", &kind);
		bool text_edit = !kind;
		if (text_edit)
			json_get_string(json_get(op, "textDocument"), "uri", &uri);
		else
			json_get_string(op, "uri", &uri);
		char rel[PATH_MAX];
		if (!uri || relative(root, uri, rel, sizeof(rel)) < 0) {
			sayf(say, data, "not applied: %s is not inside the workspace",
			     uri ? uri : "(no uri)");
			continue;
		}
		int r = 0;
		if (kind && strcmp(kind, "delete") == 0) {
			json_object *rec = json_get_path(op, "options.recursive");
			r = delete_path(rootfd, rel, rec && json_object_get_boolean(rec));
		} else if (kind && strcmp(kind, "create") == 0) {
			/* The text follows in the next operation, if any: an empty
			 * file now (overwrite), its contents then. */
			json_object *next =
			    i + 1 < n ? json_object_array_get_idx(ops, i + 1) : NULL;
			if (!(next && !json_get(next, "kind")))
				r = write_file(rootfd, rel, "", 0);
			else
				continue;
		} else if (text_edit) {
			json_object *edit = json_object_array_get_idx(json_get(op, "edits"), 0);
			json_object *t = json_get(edit, "newText");
			if (!t || !json_object_is_type(t, json_type_string)) {
				sayf(say, data, "not applied: an edit of %s without text", rel);
				continue;
			}
			r = write_file(rootfd, rel, json_object_get_string(t),
			               (size_t)json_object_get_string_len(t));
		} else {
			sayf(say, data, "not applied: an operation kiln does not know (%s)", kind);
			continue;
		}
		if (r < 0)
			sayf(say, data, "not applied: %s: %s", rel, strerror(-r));
		else
			done++;
	}
	close(rootfd);
	return done;
}
