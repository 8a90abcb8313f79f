/* apply.c: a run's workspace changes written into the host folder (see
 * apply.h). The order for each change: reach its directory without
 * following a link, check the host entry against what was recorded,
 * write a complete temporary copy and sync it, check again, rename it
 * over (a created file: only if nothing is there yet), sync the
 * directory. */
#include "sandbox/workspace/apply.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/util.h"
#include "sandbox/output/artifact.h"

#define WHY_MAX 256

static bool bad_component(const char *c)
{
	return !*c || strcmp(c, ".") == 0 || strcmp(c, "..") == 0;
}

int sbx_ws_open_parent(int dirfd, char *rel, bool make, mode_t mode, const char **ret_name)
{
	int dir = fcntl(dirfd, F_DUPFD_CLOEXEC, 0);
	if (dir < 0)
		return -errno;
	char *p = rel;
	for (char *slash; dir >= 0 && (slash = strchr(p, '/')); p = slash + 1) {
		*slash = '\0';
		int sub = -EINVAL;
		if (!bad_component(p) && (!make || mkdirat(dir, p, mode) == 0 || errno == EEXIST))
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

static bool same_time(const struct timespec *a, const struct timespec *b)
{
	return a->tv_sec == b->tv_sec && a->tv_nsec == b->tv_nsec;
}

static bool after(const struct timespec *a, const struct timespec *b)
{
	return a->tv_sec > b->tv_sec || (a->tv_sec == b->tv_sec && a->tv_nsec > b->tv_nsec);
}

/* Why the host entry name of dir is no longer what c was made against,
 * or NULL; *ret_st gets it as it is now (zeroed when absent). */
static const char *stale(int dir, const char *name, const struct sbx_ws_change *c,
                         struct stat *ret_st)
{
	memset(ret_st, 0, sizeof(*ret_st));
	bool now = fstatat(dir, name, ret_st, AT_SYMLINK_NOFOLLOW) == 0;
	if (!now && errno != ENOENT)
		return "it cannot be checked on the host";
	const struct sbx_ws_host *h = &c->host;
	if (!h->present)
		return now ? "something was created at its path on the host after the run" : NULL;
	if (!now)
		return "it was removed on the host after the run";
	if (ret_st->st_dev != h->dev || ret_st->st_ino != h->ino ||
	    (uint64_t)ret_st->st_size != h->size || !same_time(&ret_st->st_mtim, &h->mtime) ||
	    !same_time(&ret_st->st_ctim, &h->ctime))
		return "it was changed on the host after the run";
	if (after(&h->ctime, &c->run_start))
		return "it was changed on the host while the run ran";
	return NULL;
}

static int write_all(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t w = write(fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return w < 0 ? -errno : -EIO;
		p += w, n -= (size_t)w;
	}
	return 0;
}

/* The new contents of c into out: its text, or its kept copy. */
static int fill(int out, const struct sbx_ws_change *c, const char **ret_why)
{
	if (c->text)
		return write_all(out, c->text, c->text_len);
	if (!c->stored) {
		*ret_why = c->not_kept ? c->not_kept : "its contents were not kept";
		return -ENOENT;
	}
	_cleanup_close_ int in = open(c->stored, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY);
	struct stat st;
	if (in < 0 || fstat(in, &st) < 0 || !S_ISREG(st.st_mode) ||
	    (uint64_t)st.st_size != c->size) {
		*ret_why = "its kept copy is gone or changed (sandbox.artifactDir pruned?)";
		return -ENOENT;
	}
	uint64_t spent = 0;
	return sbx_copy_data(in, out, c->size, UINT64_MAX, NULL, &spent);
}

/* Write c's new contents over name in dir (an O_PATH fd). */
static int replace(int dir, const char *name, const struct sbx_ws_change *c, char *why)
{
	static atomic_uint seq;
	struct stat st;
	const char *w = stale(dir, name, c, &st);
	if (w) {
		snprintf(why, WHY_MAX, "%s", w);
		return -ESTALE;
	}
	_cleanup_close_ int wdir = openat(dir, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (wdir < 0)
		return -errno;
	char tmp[64];
	snprintf(tmp, sizeof(tmp), ".kiln-apply-%d-%u", (int)getpid(), atomic_fetch_add(&seq, 1));
	int out = openat(wdir, tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
	if (out < 0)
		return -errno;
	int r = 0;
	/* The replaced file's mode, and as root its owner. */
	if (c->host.present && S_ISREG(st.st_mode)) {
		if (fchmod(out, st.st_mode & 07777) < 0)
			r = -errno;
		if (r == 0 && geteuid() == 0 && fchown(out, st.st_uid, st.st_gid) < 0)
			r = -errno;
	}
	const char *fw = NULL;
	if (r == 0)
		r = fill(out, c, &fw);
	if (r == 0 && fsync(out) < 0)
		r = -errno;
	if (close(out) < 0 && r == 0)
		r = -errno;
	/* Checked again just before the rename: the window left is the
	 * rename's own. */
	if (r == 0 && (w = stale(dir, name, c, &st))) {
		snprintf(why, WHY_MAX, "%s", w);
		r = -ESTALE;
	}
	if (r == 0 && renameat2(wdir, tmp, wdir, name, c->host.present ? 0 : RENAME_NOREPLACE) < 0)
		r = -errno;
	if (r < 0) {
		unlinkat(wdir, tmp, 0);
		if (fw)
			snprintf(why, WHY_MAX, "%s", fw);
		else if (r == -EEXIST)
			snprintf(why, WHY_MAX,
			         "something was created at its path on the host after the run");
		return r;
	}
	fsync(wdir);
	return 0;
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

static int delete (int dir, const char *name, const struct sbx_ws_change *c, char *why)
{
	struct stat st;
	const char *w = stale(dir, name, c, &st);
	if (w) {
		snprintf(why, WHY_MAX, "%s", w);
		return -ESTALE;
	}
	int r = S_ISDIR(st.st_mode) ? remove_tree(dir, name, 0)
	                            : (unlinkat(dir, name, 0) == 0 ? 0 : -errno);
	if (r == 0) {
		_cleanup_close_ int wdir = openat(dir, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (wdir >= 0)
			fsync(wdir);
	}
	return r;
}

bool sbx_ws_listed(const char *const *only, const char *path)
{
	if (!only)
		return true;
	for (; *only; only++)
		if (strcmp(*only, path) == 0)
			return true;
	return false;
}

/* Apply one change; why is set when it was not. */
static int apply_one(int rootfd, const char *root, const struct sbx_ws_change *c, char *why)
{
	size_t rn = strlen(root);
	char rel[PATH_MAX];
	if (!c->exact) {
		snprintf(why, WHY_MAX, "its name is not valid UTF-8");
		return -EINVAL;
	}
	if (strncmp(c->path, root, rn) != 0 || c->path[rn] != '/' ||
	    snprintf(rel, sizeof(rel), "%s", c->path + rn + 1) >= (int)sizeof(rel)) {
		snprintf(why, WHY_MAX, "it is not inside the workspace");
		return -EINVAL;
	}
	if (c->kind != SBX_WS_DELETED && c->dir) {
		snprintf(why, WHY_MAX, "a directory");
		return -EINVAL;
	}
	const char *name;
	_cleanup_close_ int dir =
	    sbx_ws_open_parent(rootfd, rel, c->kind == SBX_WS_CREATED, 0755, &name);
	if (dir < 0) {
		snprintf(why, WHY_MAX, "its folder cannot be reached: %s", strerror(-dir));
		return dir;
	}
	int r = c->kind == SBX_WS_DELETED ? delete (dir, name, c, why) : replace(dir, name, c, why);
	if (r < 0 && !why[0])
		snprintf(why, WHY_MAX, "%s", strerror(-r));
	return r;
}

int sbx_ws_apply(const char *root, const struct sbx_ws_change *changes, size_t n,
                 const char *const *only_paths, sbx_ws_report_fn report, void *data)
{
	_cleanup_close_ int rootfd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (rootfd < 0)
		return -errno;
	int done = 0;
	for (size_t i = 0; i < n; i++) {
		const struct sbx_ws_change *c = &changes[i];
		if (!sbx_ws_listed(only_paths, c->path))
			continue;
		char why[WHY_MAX] = "";
		int r = apply_one(rootfd, root, c, why);
		if (r == 0)
			done++;
		if (report)
			report(data, c->path, r == 0 ? NULL : why);
	}
	return done;
}
