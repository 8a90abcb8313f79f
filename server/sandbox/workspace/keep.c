/* keep.c: copies of a run's binary and large workspace changes (see
 * sbx_ws_keep in wsdiff.h). A change with no text cannot travel in a
 * WorkspaceEdit; its bytes are copied out of the box's upper layer,
 * before the layer is freed, into the run's copy folder, so that the
 * change can be applied later (apply.h) and the client can show it. */
#include "sandbox/workspace/wsdiff.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/util.h"
#include "sandbox/output/artifact.h"
#include "sandbox/workspace/apply.h"

#define OVER_BUDGET "over the run's budget for kept files (sandbox.artifactMaxBytes)"

bool sbx_ws_wants_copy(const struct sbx_ws_change *c)
{
	return c->kind != SBX_WS_DELETED && !c->dir && !c->text;
}

/* rel below host_root, or NULL when path is not the host's own. */
static const char *relative(const char *host_root, const struct sbx_ws_change *c)
{
	size_t n = strlen(host_root);
	if (!c->exact || strncmp(c->path, host_root, n) != 0 || c->path[n] != '/')
		return NULL;
	return c->path + n + 1;
}

/* Copy one file; 0, -ECANCELED, -EFBIG (over the budget) or -errno. */
static int keep_one(int upper_fd, int dest, const char *dest_path, struct sbx_ws_change *c,
                    const char *rel_in, uint64_t max_bytes, uint64_t *spent,
                    const atomic_bool *cancel)
{
	char rel[PATH_MAX];
	if (snprintf(rel, sizeof(rel), "%s", rel_in) >= (int)sizeof(rel))
		return -ENAMETOOLONG;
	const char *name;
	_cleanup_close_ int udir = sbx_ws_open_parent(upper_fd, rel, false, 0, &name);
	if (udir < 0)
		return udir;
	_cleanup_close_ int fd =
	    openat(udir, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0)
		return -errno;
	if (!S_ISREG(st.st_mode))
		return -EINVAL; /* a link or a special file: nothing to keep */
	unsigned char head[512];
	ssize_t hn = pread(fd, head, sizeof(head), 0);
	c->mime_type = sbx_mime_type(name, head, hn > 0 ? (size_t)hn : 0);
	uint64_t size = (uint64_t)st.st_size, room = max_bytes - *spent;
	if (sbx_data_bytes(fd, size) > room)
		return -EFBIG;
	char drel[PATH_MAX];
	snprintf(drel, sizeof(drel), "%s", rel_in);
	const char *dname;
	_cleanup_close_ int ddir = sbx_ws_open_parent(dest, drel, true, 0700, &dname);
	if (ddir < 0)
		return ddir;
	_cleanup_close_ int out =
	    openat(ddir, dname, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (out < 0)
		return -errno;
	uint64_t before = *spent;
	int r = sbx_copy_data(fd, out, size, room, cancel, spent);
	if (r < 0) {
		unlinkat(ddir, dname, 0);
		*spent = before;
		return r;
	}
	if (asprintf(&c->stored, "%s/%s", dest_path, rel_in) < 0) {
		c->stored = NULL;
		return -ENOMEM;
	}
	return 0;
}

int sbx_ws_keep(int upper_fd, const char *host_root, struct sbx_ws_changes *c, const char *dir,
                uint64_t max_bytes, const atomic_bool *cancel)
{
	char dest_path[PATH_MAX];
	if (snprintf(dest_path, sizeof(dest_path), "%s/workspace", dir) >= (int)sizeof(dest_path))
		return -ENAMETOOLONG;
	if (mkdir(dest_path, 0700) < 0 && errno != EEXIST)
		return -errno;
	_cleanup_close_ int dest = open(dest_path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dest < 0)
		return -errno;
	uint64_t spent = 0;
	int kept = 0;
	for (size_t i = 0; i < c->n; i++) {
		struct sbx_ws_change *ch = &c->items[i];
		if (!sbx_ws_wants_copy(ch))
			continue;
		const char *rel = relative(host_root, ch);
		if (!rel) {
			ch->not_kept = "its name is not valid UTF-8";
			continue;
		}
		int r = keep_one(upper_fd, dest, dest_path, ch, rel, max_bytes, &spent, cancel);
		if (r == -ECANCELED || r == -ENOMEM)
			return r;
		if (r == 0)
			kept++;
		else if (r == -EFBIG)
			ch->not_kept = OVER_BUDGET;
		else if (r == -EINVAL)
			ch->not_kept = "not a regular file";
		else
			ch->not_kept = "could not be copied";
	}
	return kept;
}
