/* artifact.c: workspace read-back (see artifact.h). Every open is
 * O_NOFOLLOW and relative to a directory fd, and only regular files are
 * read, so a link or a fifo the code left cannot make the server read
 * anything outside the box's own tmpfs or block. */
#include "sandbox/artifact.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/buf.h"
#include "core/position.h"
#include "core/util.h"
#include "sandbox/text.h"

#define MAX_DEPTH 4

struct walk {
	const char *run_id;
	const struct sbx_artifact_opts *o;
	const atomic_bool *cancel;
	struct sbx_artifacts *out;
	size_t count;
	int err;                 /* -ENOMEM or -ECANCELED: stop */
	char copy_dir[PATH_MAX]; /* made on first use */
};

static bool cancelled(const struct walk *w)
{
	return w->cancel && atomic_load(w->cancel);
}

char *sbx_utf8_name(const char *name)
{
	struct buf b;
	/* Each byte becomes at most three (U+FFFD). */
	buf_init(&b, 3 * strlen(name) + 16);
	struct sbx_utf8 u = {0};
	if (sbx_utf8_decode(&u, name, strlen(name), true, &b) < 0 || buf_append(&b, "", 1) < 0) {
		buf_release(&b);
		return NULL;
	}
	return buf_steal(&b, NULL);
}

const char *sbx_mime_type(const char *name, const unsigned char *head, size_t n)
{
	static const struct {
		const char *ext, *type;
	} exts[] = {
	    {".png", "image/png"},       {".jpg", "image/jpeg"},        {".jpeg", "image/jpeg"},
	    {".gif", "image/gif"},       {".svg", "image/svg+xml"},     {".webp", "image/webp"},
	    {".pdf", "application/pdf"}, {".json", "application/json"}, {".csv", "text/csv"},
	    {".txt", "text/plain"},      {".md", "text/markdown"},      {".html", "text/html"},
	    {".htm", "text/html"},       {".xml", "application/xml"},   {".py", "text/x-python"},
	    {".zip", "application/zip"}, {".gz", "application/gzip"},
	};
	const char *dot = strrchr(name, '.');
	if (dot)
		for (size_t i = 0; i < ARRAY_SIZE(exts); i++)
			if (strcasecmp(dot, exts[i].ext) == 0)
				return exts[i].type;
	if (n >= 8 && memcmp(head, "\x89PNG\r\n\x1a\n", 8) == 0)
		return "image/png";
	if (n >= 3 && memcmp(head, "\xff\xd8\xff", 3) == 0)
		return "image/jpeg";
	if (n >= 4 && memcmp(head, "%PDF", 4) == 0)
		return "application/pdf";
	if (n >= 6 && (memcmp(head, "GIF87a", 6) == 0 || memcmp(head, "GIF89a", 6) == 0))
		return "image/gif";
	if (utf8_valid((const char *)head, n) && !memchr(head, 0, n))
		return "text/plain";
	return "application/octet-stream";
}

static char *base64(const unsigned char *in, size_t n)
{
	static const char tbl[] =
	    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	char *out = malloc((n + 2) / 3 * 4 + 1), *o = out;
	if (!out)
		return NULL;
	size_t i = 0;
	for (; i + 2 < n; i += 3) {
		unsigned v = (unsigned)in[i] << 16 | (unsigned)in[i + 1] << 8 | in[i + 2];
		*o++ = tbl[v >> 18], *o++ = tbl[(v >> 12) & 63], *o++ = tbl[(v >> 6) & 63],
		*o++ = tbl[v & 63];
	}
	if (i < n) {
		unsigned v = (unsigned)in[i] << 16 | (i + 1 < n ? (unsigned)in[i + 1] << 8 : 0);
		*o++ = tbl[v >> 18], *o++ = tbl[(v >> 12) & 63];
		*o++ = i + 1 < n ? tbl[(v >> 6) & 63] : '=';
		*o++ = '=';
	}
	*o = '\0';
	return out;
}

static int read_all(int fd, unsigned char *buf, size_t n)
{
	size_t off = 0;
	while (off < n) {
		ssize_t r = read(fd, buf + off, n - off);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return r < 0 ? -errno : -EIO;
		off += (size_t)r;
	}
	return 0;
}

/* mkdir -p dir (0700 each): the default, ~/.cache/kiln-artifacts, may
 * be the first thing ever put in ~/.cache. */
static int mkdir_parents(const char *dir)
{
	char path[PATH_MAX];
	if (snprintf(path, sizeof(path), "%s", dir) >= (int)sizeof(path))
		return -ENAMETOOLONG;
	for (char *p = path + 1;; p++) {
		if (*p != '/' && *p != '\0')
			continue;
		char c = *p;
		*p = '\0';
		if (mkdir(path, 0700) < 0 && errno != EEXIST)
			return -errno;
		if (!c)
			return 0;
		*p = c;
	}
}

/* Copy fd to the run's host directory; the file name flattens '/'. */
static int copy_out(struct walk *w, int fd, const char *name, char *ret_path, size_t pathsz)
{
	if (!w->o->host_dir)
		return -ENOENT;
	if (!w->copy_dir[0]) {
		char tmpl[PATH_MAX];
		int r = mkdir_parents(w->o->host_dir);
		if (r < 0)
			return r;
		if (snprintf(tmpl, sizeof(tmpl), "%s/%s-XXXXXX", w->o->host_dir, w->run_id) >=
		    (int)sizeof(tmpl))
			return -ENAMETOOLONG;
		if (!mkdtemp(tmpl))
			return -errno;
		snprintf(w->copy_dir, sizeof(w->copy_dir), "%s", tmpl);
	}
	char flat[NAME_MAX + 1];
	size_t fl = strnlen(name, NAME_MAX);
	memcpy(flat, name, fl);
	flat[fl] = '\0';
	for (char *s = flat; *s; s++)
		if (*s == '/')
			*s = '_';
	if (snprintf(ret_path, pathsz, "%s/%s", w->copy_dir, flat) >= (int)pathsz)
		return -ENAMETOOLONG;
	_cleanup_close_ int out =
	    open(ret_path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (out < 0)
		return -errno;
	if (lseek(fd, 0, SEEK_SET) < 0)
		return -errno;
	char buf[65536];
	for (;;) {
		if (cancelled(w))
			return -ECANCELED;
		ssize_t n = read(fd, buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return 0;
		if (write(out, buf, (size_t)n) != n)
			return -EIO;
	}
}

/* The next artifact slot of the list, zeroed; NULL on OOM. */
static struct run_artifact *add_item(struct walk *w)
{
	struct sbx_artifacts *l = w->out;
	struct run_artifact *items = realloc(l->items, (l->n + 1) * sizeof(*items));
	if (!items)
		return NULL;
	l->items = items;
	memset(&items[l->n], 0, sizeof(items[0]));
	return &items[l->n++];
}

static void one_file(struct walk *w, int dirfd, const char *entry, const char *raw_name)
{
	_cleanup_close_ int fd =
	    openat(dirfd, entry, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
		return; /* swapped for something else meanwhile: skip */
	_cleanup_free_ char *name = sbx_utf8_name(raw_name);
	struct run_artifact *a = name ? add_item(w) : NULL;
	if (!a) {
		w->err = -ENOMEM;
		return;
	}
	a->run_id = w->run_id;
	a->name = steal_pointer(&name);
	size_t size = (size_t)st.st_size;
	a->size = size;
	unsigned char head[512];
	size_t hn = size < sizeof(head) ? size : sizeof(head);
	if (read_all(fd, head, hn) < 0)
		hn = 0;
	a->mime_type = sbx_mime_type(a->name, head, hn);
	if (size <= w->o->inline_bytes) {
		_cleanup_free_ unsigned char *bytes = malloc(size ? size : 1);
		if (bytes && lseek(fd, 0, SEEK_SET) == 0 && read_all(fd, bytes, size) == 0 &&
		    (a->base64 = base64(bytes, size)))
			return;
		a->omitted = "could not be read";
	} else if (size > w->o->max_copy_bytes) {
		a->omitted = "larger than the copy cap";
	} else {
		char path[PATH_MAX] = "";
		/* The copy is named after the UTF-8 name: its path goes to the
		 * client too. */
		int r = copy_out(w, fd, a->name, path, sizeof(path));
		if (r == -ECANCELED) {
			if (path[0])
				unlink(path);
			w->err = r;
		} else if (r == 0 && !(a->path = strdup(path))) {
			w->err = -ENOMEM;
		} else if (r < 0) {
			a->omitted = strerror(-r);
		}
	}
}

static bool listed(const char *const *only, const char *name)
{
	if (!only)
		return true;
	for (; *only; only++)
		if (strcmp(*only, name) == 0)
			return true;
	return false;
}

static void walk_dir(struct walk *w, int dirfd, const char *prefix, int depth)
{
	int dupfd = fcntl(dirfd, F_DUPFD_CLOEXEC, 3);
	if (dupfd < 0)
		return;
	DIR *d = fdopendir(dupfd);
	if (!d) {
		close(dupfd);
		return;
	}
	struct dirent *e;
	while (!w->err && (e = readdir(d)) && w->count < w->o->max_files) {
		if (cancelled(w)) {
			w->err = -ECANCELED;
			break;
		}
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		char name[PATH_MAX];
		if (snprintf(name, sizeof(name), "%s%s", prefix, e->d_name) >= (int)sizeof(name))
			continue;
		struct stat st;
		if (fstatat(dirfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		if (S_ISREG(st.st_mode) && !listed(w->o->only, name))
			continue;
		if (S_ISREG(st.st_mode)) {
			w->count++;
			one_file(w, dirfd, e->d_name, name);
		} else if (S_ISDIR(st.st_mode) && depth < MAX_DEPTH) {
			_cleanup_close_ int sub = openat(
			    dirfd, e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (sub < 0)
				continue;
			char sp[PATH_MAX];
			if (snprintf(sp, sizeof(sp), "%s/", name) >= (int)sizeof(sp))
				continue;
			walk_dir(w, sub, sp, depth + 1);
		}
	}
	closedir(d);
}

void sbx_artifacts_release(struct sbx_artifacts *l)
{
	for (size_t i = 0; i < l->n; i++) {
		free((char *)l->items[i].name);
		free((char *)l->items[i].base64);
		free((char *)l->items[i].path);
	}
	free(l->items);
	*l = (struct sbx_artifacts){0};
}

/* Remove what a cancelled collection copied: nobody will be told of it. */
static void remove_copies(struct walk *w)
{
	for (size_t i = 0; i < w->out->n; i++)
		if (w->out->items[i].path)
			unlink(w->out->items[i].path);
	if (w->copy_dir[0])
		rmdir(w->copy_dir);
}

int sbx_artifacts_collect(int workfd, const char *run_id, const struct sbx_artifact_opts *o,
                          const atomic_bool *cancel, struct sbx_artifacts *ret)
{
	sbx_artifacts_release(ret);
	_cleanup_close_ int out =
	    openat(workfd, "out", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (out < 0)
		return errno == ENOENT || errno == ELOOP || errno == ENOTDIR ? 0 : -errno;
	struct walk w = {.run_id = run_id, .o = o, .cancel = cancel, .out = ret};
	walk_dir(&w, out, "", 1);
	if (w.err == -ECANCELED)
		remove_copies(&w);
	if (w.err < 0) {
		sbx_artifacts_release(ret);
		return w.err;
	}
	return (int)ret->n;
}
