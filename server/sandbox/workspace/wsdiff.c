/* wsdiff.c: a run's changes to the workspace, from its overlay's upper
 * layer (see wsdiff.h). In the upper layer, a regular file is one the
 * code wrote (new, or copied up from the host and maybe changed), a
 * character device 0:0 is a whiteout (the host entry was deleted), and a
 * directory with the user.overlay.opaque xattr replaced the host's
 * directory of that name (whatever the host has there and the upper
 * layer does not was deleted). Every open is O_NOFOLLOW and relative to
 * a directory fd. */
#include "sandbox/workspace/wsdiff.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "core/position.h"
#include "core/util.h"
#include "sandbox/output/text.h"

#define MAX_DEPTH 32
#define CHUNK     (64u * 1024)

const struct sbx_ws_diff_opts sbx_ws_diff_defaults = {
    .max_changes = 1000,
    .max_entries = 100000,
    .max_text_file = 1u << 20,
    .max_text_total = 4u << 20,
    .max_compare = 64u << 20,
};

const char *sbx_ws_kind_name(enum sbx_ws_kind k)
{
	return k == SBX_WS_CREATED ? "created" : k == SBX_WS_MODIFIED ? "modified" : "deleted";
}

/* One entry of an upper layer, as it was. */
struct snap_entry {
	char *rel;
	ino_t ino;
	mode_t mode;
	off_t size;
	struct timespec mtime, ctime;
};

struct sbx_ws_snap {
	struct snap_entry *items; /* sorted by rel once taken */
	size_t n, cap;
};

void sbx_ws_snap_free(struct sbx_ws_snap *snap)
{
	if (!snap)
		return;
	for (size_t i = 0; i < snap->n; i++)
		free(snap->items[i].rel);
	free(snap->items);
	free(snap);
}

static int snap_cmp(const void *a, const void *b)
{
	return strcmp(((const struct snap_entry *)a)->rel, ((const struct snap_entry *)b)->rel);
}

struct diff {
	const struct sbx_ws_diff_opts *o;
	const struct sbx_ws_snap *since; /* report only what differs from it */
	struct sbx_ws_snap *snap;        /* the layer as walked, or NULL */
	const atomic_bool *cancel;
	struct sbx_ws_changes *out;
	size_t cap;
	size_t entries;
	int err; /* -ENOMEM or -ECANCELED: stop */
};

static bool same_time(const struct timespec *a, const struct timespec *b)
{
	return a->tv_sec == b->tv_sec && a->tv_nsec == b->tv_nsec;
}

/* Was the upper entry rel, now ust, already so in the picture taken
 * before (the previous run's end)? Then that run reported it. */
static bool unchanged(const struct diff *d, const char *rel, const struct stat *ust)
{
	if (!d->since || !d->since->n)
		return false;
	struct snap_entry key = {.rel = (char *)rel};
	const struct snap_entry *e =
	    bsearch(&key, d->since->items, d->since->n, sizeof(key), snap_cmp);
	return e && e->ino == ust->st_ino && e->mode == ust->st_mode && e->size == ust->st_size &&
	       same_time(&e->mtime, &ust->st_mtim) && same_time(&e->ctime, &ust->st_ctim);
}

/* Note the upper entry rel in the picture being taken; on OOM there is
 * no picture (the next diff compares everything). */
static void record(struct diff *d, const char *rel, const struct stat *ust)
{
	struct sbx_ws_snap *s = d->snap;
	if (!s)
		return;
	if (s->n == s->cap) {
		size_t cap = s->cap ? 2 * s->cap : 32;
		struct snap_entry *items = realloc(s->items, cap * sizeof(*items));
		if (!items)
			goto oom;
		s->items = items;
		s->cap = cap;
	}
	char *copy = strdup(rel);
	if (!copy)
		goto oom;
	s->items[s->n++] = (struct snap_entry){.rel = copy,
	                                       .ino = ust->st_ino,
	                                       .mode = ust->st_mode,
	                                       .size = ust->st_size,
	                                       .mtime = ust->st_mtim,
	                                       .ctime = ust->st_ctim};
	return;
oom:
	sbx_ws_snap_free(steal_pointer(&d->snap));
}

static bool stop(struct diff *d)
{
	if (!d->err && d->cancel && atomic_load(d->cancel))
		d->err = -ECANCELED;
	return d->err != 0;
}

/* Add a change; text (malloc'd or NULL) is taken. */
static void add(struct diff *d, const char *root, const char *rel, enum sbx_ws_kind kind,
                uint64_t size, bool dir, const struct stat *host, char *text, size_t text_len)
{
	struct sbx_ws_changes *c = d->out;
	if (c->n >= d->o->max_changes) {
		c->omitted++;
		free(text);
		return;
	}
	if (c->n == d->cap) {
		size_t cap = d->cap ? 2 * d->cap : 16;
		struct sbx_ws_change *items = realloc(c->items, cap * sizeof(*items));
		if (!items) {
			free(text);
			d->err = -ENOMEM;
			return;
		}
		c->items = items;
		d->cap = cap;
	}
	char *raw = NULL;
	if (asprintf(&raw, "%s/%s", root, rel) < 0) {
		free(text);
		d->err = -ENOMEM;
		return;
	}
	bool exact = utf8_valid(raw, strlen(raw));
	char *path = exact ? raw : sbx_utf8_name(raw);
	if (!exact)
		free(raw);
	if (!path) {
		free(text);
		d->err = -ENOMEM;
		return;
	}
	/* A text whose path is not the host's own cannot be applied. */
	if (!exact && text) {
		c->text_bytes -= text_len;
		free(text);
		text = NULL;
		text_len = 0;
	}
	c->items[c->n++] = (struct sbx_ws_change){.path = path,
	                                          .kind = kind,
	                                          .size = size,
	                                          .dir = dir,
	                                          .exact = exact,
	                                          .text = text,
	                                          .text_len = text_len};
	if (host)
		c->items[c->n - 1].host = (struct sbx_ws_host){.present = true,
		                                               .dev = host->st_dev,
		                                               .ino = host->st_ino,
		                                               .mode = host->st_mode,
		                                               .size = (uint64_t)host->st_size,
		                                               .mtime = host->st_mtim,
		                                               .ctime = host->st_ctim};
}

static ssize_t read_full(int fd, char *buf, size_t n)
{
	size_t off = 0;
	while (off < n) {
		ssize_t r = read(fd, buf + off, n - off);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -1;
		if (r == 0)
			break;
		off += (size_t)r;
	}
	return (ssize_t)off;
}

/* The whole file, when it is text within the caps; else NULL. */
static char *read_text(struct diff *d, int fd, uint64_t size, size_t *ret_len)
{
	struct sbx_ws_changes *c = d->out;
	if (size > d->o->max_text_file || c->text_bytes + size > d->o->max_text_total)
		return NULL;
	char *buf = malloc((size_t)size + 1);
	if (!buf) {
		d->err = -ENOMEM;
		return NULL;
	}
	ssize_t n = pread(fd, buf, (size_t)size, 0) == (ssize_t)size ? (ssize_t)size : -1;
	if (n < 0 || memchr(buf, '\0', (size_t)n) || !utf8_valid(buf, (size_t)n)) {
		free(buf);
		return NULL;
	}
	buf[n] = '\0';
	c->text_bytes += (uint64_t)n;
	*ret_len = (size_t)n;
	return buf;
}

/* Do the two files differ? Sizes first, then contents in chunks. */
static bool differ(struct diff *d, int a, int b, uint64_t size)
{
	if (size > d->o->max_compare)
		return true;
	static _Thread_local char x[CHUNK], y[CHUNK];
	for (uint64_t off = 0; off < size; off += CHUNK) {
		if (stop(d))
			return false;
		ssize_t n = read_full(a, x, CHUNK), m = read_full(b, y, CHUNK);
		if (n != m || n < 0 || memcmp(x, y, (size_t)n) != 0)
			return true;
		if (n == 0)
			break;
	}
	return false;
}

static void file(struct diff *d, const char *root, const char *rel, int udir, int ldir,
                 const char *name, const struct stat *ust)
{
	int uf = openat(udir, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
	if (uf < 0)
		return;
	struct stat lst;
	bool in_host = ldir >= 0 && fstatat(ldir, name, &lst, AT_SYMLINK_NOFOLLOW) == 0;
	enum sbx_ws_kind kind = SBX_WS_CREATED;
	if (in_host && S_ISREG(lst.st_mode)) {
		kind = SBX_WS_MODIFIED;
		if (lst.st_size == ust->st_size) {
			int lf = openat(ldir, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
			bool changed = lf < 0 || differ(d, uf, lf, (uint64_t)ust->st_size);
			if (lf >= 0)
				close(lf);
			if (!changed || d->err) {
				close(uf);
				return; /* copied up (opened for writing, chmod) but the same */
			}
		}
	} else if (in_host) {
		/* A directory (or other entry) of the host became a file. */
		add(d, root, rel, SBX_WS_DELETED, 0, S_ISDIR(lst.st_mode), &lst, NULL, 0);
	}
	size_t len = 0;
	char *text = read_text(d, uf, (uint64_t)ust->st_size, &len);
	close(uf);
	if (!d->err)
		add(d, root, rel, kind, (uint64_t)ust->st_size, false,
		    kind == SBX_WS_MODIFIED ? &lst : NULL, text, len);
	else
		free(text);
}

static bool opaque(int udir, const char *name)
{
	char v[4];
	int fd = openat(udir, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return false;
	ssize_t n = fgetxattr(fd, "user.overlay.opaque", v, sizeof(v));
	if (n < 0)
		n = fgetxattr(fd, "trusted.overlay.opaque", v, sizeof(v));
	close(fd);
	return n >= 1 && v[0] == 'y';
}

static void walk(struct diff *d, const char *root, const char *rel, int udir, int ldir, int depth);

/* A directory fd of its own: a dup would share the position of the
 * caller's, which a session walks again after every run. */
static int reopen_dir(int dirfd)
{
	return openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
}

/* Each host entry of ldir that udir does not have was deleted. */
static void deleted_below(struct diff *d, const char *root, const char *rel, int udir, int ldir)
{
	int fd = reopen_dir(ldir);
	DIR *dir = fd >= 0 ? fdopendir(fd) : NULL;
	if (!dir) {
		if (fd >= 0)
			close(fd);
		return;
	}
	struct dirent *e;
	while (!stop(d) && (e = readdir(dir))) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		struct stat st, lst;
		if (fstatat(udir, e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0)
			continue;
		if (fstatat(ldir, e->d_name, &lst, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		char sub[PATH_MAX];
		if (snprintf(sub, sizeof(sub), "%s%s%s", rel, *rel ? "/" : "", e->d_name) >=
		    (int)sizeof(sub))
			continue;
		add(d, root, sub, SBX_WS_DELETED, S_ISREG(lst.st_mode) ? (uint64_t)lst.st_size : 0,
		    S_ISDIR(lst.st_mode), &lst, NULL, 0);
	}
	closedir(dir);
}

static void walk(struct diff *d, const char *root, const char *rel, int udir, int ldir, int depth)
{
	int fd = reopen_dir(udir);
	DIR *dir = fd >= 0 ? fdopendir(fd) : NULL;
	if (!dir) {
		if (fd >= 0)
			close(fd);
		return;
	}
	struct dirent *e;
	while (!stop(d) && (e = readdir(dir))) {
		const char *name = e->d_name;
		if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
			continue;
		if (++d->entries > d->o->max_entries) {
			d->out->incomplete = true;
			break;
		}
		char sub[PATH_MAX];
		if (snprintf(sub, sizeof(sub), "%s%s%s", rel, *rel ? "/" : "", name) >=
		    (int)sizeof(sub))
			continue;
		struct stat ust, lst;
		if (fstatat(udir, name, &ust, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		record(d, sub, &ust);
		/* Unchanged since the last picture: reported then. A directory
		 * is walked all the same (a file in it may have changed). */
		bool same = unchanged(d, sub, &ust);
		if (same && !S_ISDIR(ust.st_mode))
			continue;
		bool in_host = ldir >= 0 && fstatat(ldir, name, &lst, AT_SYMLINK_NOFOLLOW) == 0;
		if (S_ISCHR(ust.st_mode) && ust.st_rdev == makedev(0, 0)) {
			if (in_host)
				add(d, root, sub, SBX_WS_DELETED,
				    S_ISREG(lst.st_mode) ? (uint64_t)lst.st_size : 0,
				    S_ISDIR(lst.st_mode), &lst, NULL, 0);
		} else if (S_ISREG(ust.st_mode)) {
			file(d, root, sub, udir, ldir, name, &ust);
		} else if (S_ISDIR(ust.st_mode)) {
			if (depth + 1 >= MAX_DEPTH) {
				d->out->incomplete = true;
				continue;
			}
			if (in_host && !S_ISDIR(lst.st_mode) && !same)
				add(d, root, sub, SBX_WS_DELETED, (uint64_t)lst.st_size, false,
				    &lst, NULL, 0);
			int u = openat(udir, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			int l = in_host && S_ISDIR(lst.st_mode)
			            ? openat(ldir, name,
			                     O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
			            : -1;
			if (u >= 0) {
				if (l >= 0 && !same && opaque(udir, name))
					deleted_below(d, root, sub, u, l);
				walk(d, root, sub, u, l, depth + 1);
				close(u);
			}
			if (l >= 0)
				close(l);
		} else if (S_ISLNK(ust.st_mode)) {
			/* A link the code made: reported, never followed. */
			add(d, root, sub, in_host ? SBX_WS_MODIFIED : SBX_WS_CREATED,
			    (uint64_t)ust.st_size, false, in_host ? &lst : NULL, NULL, 0);
		}
	}
	closedir(dir);
}

int sbx_ws_diff_since(int upper_fd, const char *host_root, const struct sbx_ws_diff_opts *o,
                      const struct sbx_ws_snap *since, const atomic_bool *cancel,
                      struct sbx_ws_changes *ret, struct sbx_ws_snap **ret_snap)
{
	*ret = (struct sbx_ws_changes){0};
	struct diff d = {
	    .o = o ? o : &sbx_ws_diff_defaults, .since = since, .cancel = cancel, .out = ret};
	if (ret_snap) {
		*ret_snap = NULL;
		if (!(d.snap = calloc(1, sizeof(*d.snap))))
			return -ENOMEM;
	}
	int lower = open(host_root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	/* The root's own opaqueness is reported at the first run only: a
	 * later one would report the same deletions again. */
	if (!(since && since->n) && opaque(upper_fd, ".") && lower >= 0)
		deleted_below(&d, host_root, "", upper_fd, lower);
	walk(&d, host_root, "", upper_fd, lower, 0);
	if (lower >= 0)
		close(lower);
	if (d.err || ret->incomplete) {
		sbx_ws_snap_free(steal_pointer(&d.snap));
		if (d.err) {
			sbx_ws_changes_release(ret);
			return d.err;
		}
	}
	if (d.snap && d.snap->n)
		qsort(d.snap->items, d.snap->n, sizeof(*d.snap->items), snap_cmp);
	if (d.snap)
		*ret_snap = steal_pointer(&d.snap);
	return (int)ret->n;
}

int sbx_ws_diff(int upper_fd, const char *host_root, const struct sbx_ws_diff_opts *o,
                const atomic_bool *cancel, struct sbx_ws_changes *ret)
{
	return sbx_ws_diff_since(upper_fd, host_root, o, NULL, cancel, ret, NULL);
}

void sbx_ws_changes_release(struct sbx_ws_changes *c)
{
	for (size_t i = 0; i < c->n; i++) {
		free(c->items[i].path);
		free(c->items[i].text);
		free(c->items[i].stored);
	}
	free(c->items);
	*c = (struct sbx_ws_changes){0};
}
