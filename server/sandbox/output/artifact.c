/* artifact.c: workspace read-back (see artifact.h). Every open is
 * O_NOFOLLOW and relative to a directory fd, and only regular files are
 * read, so a link or a fifo the code left cannot make the server read
 * anything outside the box's own tmpfs or block. */
#include "sandbox/output/artifact.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/buf.h"
#include "core/position.h"
#include "core/util.h"
#include "sandbox/output/text.h"

#define MAX_DEPTH 4

/* A file already seen under another name: a hard link to it gets the
 * first name's copy, not a copy of its own. */
struct seen {
	dev_t dev;
	ino_t ino;
	size_t item; /* its artifact, in out->items */
};

struct walk {
	const char *run_id;
	const struct sbx_artifact_opts *o;
	const atomic_bool *cancel;
	struct sbx_artifacts *out;
	size_t count;
	uint64_t spent; /* of o->max_bytes: sent inline, or data copied */
	struct seen *seen;
	size_t nseen;
	int err;                 /* -ENOMEM or -ECANCELED: stop */
	char copy_dir[PATH_MAX]; /* made on first use */
};

/* A copy that outgrew what was left of the budget while it was made (a
 * session's program may still be writing the file). */
#define E_BUDGET    (-EFBIG)
#define OVER_BUDGET "over the run's artifact budget (artifactMaxBytes)"

static bool cancelled(const struct walk *w)
{
	return w->cancel && atomic_load(w->cancel);
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

uint64_t sbx_data_bytes(int fd, uint64_t size)
{
	uint64_t n = 0;
	for (off_t off = 0; (uint64_t)off < size;) {
		off_t data = lseek(fd, off, SEEK_DATA);
		if (data < 0)
			return errno == ENXIO ? n : size; /* ENXIO: only a hole is left */
		off_t hole = lseek(fd, data, SEEK_HOLE);
		if (hole < 0 || (uint64_t)hole > size)
			hole = (off_t)size;
		if ((uint64_t)data >= size)
			break;
		n += (uint64_t)(hole - data);
		off = hole;
	}
	return n;
}

static int write_at(int out, const char *buf, size_t n, off_t at)
{
	while (n) {
		ssize_t r = pwrite(out, buf, n, at);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return r < 0 ? -errno : -EIO;
		buf += r, n -= (size_t)r, at += r;
	}
	return 0;
}

int sbx_copy_data(int fd, int out, uint64_t size, uint64_t room, const atomic_bool *cancel,
                  uint64_t *spent)
{
	static __thread char buf[65536];
	uint64_t copied = 0;
	for (off_t off = 0; (uint64_t)off < size;) {
		off_t data = lseek(fd, off, SEEK_DATA), hole;
		if (data < 0 && errno == ENXIO)
			break;
		if (data < 0) { /* no SEEK_DATA here: all of it is data */
			data = off;
			hole = (off_t)size;
		} else if ((hole = lseek(fd, data, SEEK_HOLE)) < 0 || (uint64_t)hole > size) {
			hole = (off_t)size;
		}
		for (off_t p = data; p < hole;) {
			if (cancel && atomic_load(cancel))
				return -ECANCELED;
			size_t want =
			    (uint64_t)(hole - p) < sizeof(buf) ? (size_t)(hole - p) : sizeof(buf);
			ssize_t n = pread(fd, buf, want, p);
			if (n < 0 && errno == EINTR)
				continue;
			if (n < 0)
				return -errno;
			if (n == 0) /* cut short meanwhile */
				break;
			if (copied + (uint64_t)n > room)
				return E_BUDGET;
			int r = write_at(out, buf, (size_t)n, p);
			if (r < 0)
				return r;
			copied += (uint64_t)n;
			*spent += (uint64_t)n;
			p += n;
		}
		off = hole;
	}
	/* The holes at the end, and the size. */
	return ftruncate(out, (off_t)size) < 0 ? -errno : 0;
}

int sbx_artifact_run_dir(const char *host_dir, const char *run_id, char *buf, size_t size)
{
	char tmpl[PATH_MAX];
	int r = mkdir_parents(host_dir);
	if (r < 0)
		return r;
	if (snprintf(tmpl, sizeof(tmpl), "%s/%s-XXXXXX", host_dir, run_id) >= (int)sizeof(tmpl))
		return -ENAMETOOLONG;
	if (!mkdtemp(tmpl))
		return -errno;
	if (snprintf(buf, size, "%s", tmpl) >= (int)size) {
		rmdir(tmpl);
		return -ENAMETOOLONG;
	}
	return 0;
}

/* Copy fd (size bytes, at most room of them data) to the run's host
 * directory; the file name flattens '/'. */
static int copy_out(struct walk *w, int fd, const char *name, uint64_t size, uint64_t room,
                    char *ret_path, size_t pathsz)
{
	if (!w->o->host_dir)
		return -ENOENT;
	if (!w->copy_dir[0]) {
		int r = sbx_artifact_run_dir(w->o->host_dir, w->run_id, w->copy_dir,
		                             sizeof(w->copy_dir));
		if (r < 0)
			return r;
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
	return sbx_copy_data(fd, out, size, room, w->cancel, &w->spent);
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

/* An artifact for a second name of an already-seen file: the same copy
 * (it costs nothing more), or the same reason; an inline one is sent
 * again and counted again. false: it was not seen. */
static bool same_file(struct walk *w, const struct stat *st, struct run_artifact *a)
{
	for (size_t i = 0; i < w->nseen; i++) {
		if (w->seen[i].dev != st->st_dev || w->seen[i].ino != st->st_ino)
			continue;
		const struct run_artifact *first = &w->out->items[w->seen[i].item];
		a->mime_type = first->mime_type;
		if (first->path) {
			if (!(a->path = strdup(first->path)))
				w->err = -ENOMEM;
		} else if (first->base64 && a->size <= w->o->max_bytes - w->spent) {
			if (!(a->base64 = strdup(first->base64)))
				w->err = -ENOMEM;
			w->spent += a->size;
		} else {
			a->omitted = first->base64 ? OVER_BUDGET : first->omitted;
		}
		return true;
	}
	return false;
}

static void remember(struct walk *w, const struct stat *st)
{
	struct seen *s = realloc(w->seen, (w->nseen + 1) * sizeof(*s));
	if (!s) {
		w->err = -ENOMEM;
		return;
	}
	w->seen = s;
	s[w->nseen++] = (struct seen){.dev = st->st_dev, .ino = st->st_ino, .item = w->out->n - 1};
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
	uint64_t size = (uint64_t)st.st_size;
	a->size = size;
	if (st.st_nlink > 1 && same_file(w, &st, a))
		return;
	if (st.st_nlink > 1)
		remember(w, &st);
	unsigned char head[512];
	size_t hn = size < sizeof(head) ? (size_t)size : sizeof(head);
	if (read_all(fd, head, hn) < 0)
		hn = 0;
	a->mime_type = sbx_mime_type(a->name, head, hn);
	uint64_t room = w->o->max_bytes - w->spent;
	if (size <= w->o->inline_bytes) {
		/* Sent whole, zeros and all: counted at its full size. */
		if (size > room) {
			a->omitted = OVER_BUDGET;
			return;
		}
		_cleanup_free_ unsigned char *bytes = malloc(size ? size : 1);
		if (bytes && lseek(fd, 0, SEEK_SET) == 0 && read_all(fd, bytes, size) == 0 &&
		    (a->base64 = base64(bytes, size))) {
			w->spent += size;
			return;
		}
		a->omitted = "could not be read";
	} else if (sbx_data_bytes(fd, size) > room) {
		a->omitted = OVER_BUDGET;
	} else {
		char path[PATH_MAX] = "";
		uint64_t before = w->spent;
		/* The copy is named after the UTF-8 name: its path goes to the
		 * client too. */
		int r = copy_out(w, fd, a->name, size, room, path, sizeof(path));
		if (r < 0 && path[0])
			unlink(path);
		if (r < 0)
			w->spent = before; /* nothing of it is left */
		if (r == -ECANCELED)
			w->err = r;
		else if (r == 0 && !(a->path = strdup(path)))
			w->err = -ENOMEM;
		else if (r == E_BUDGET)
			a->omitted = OVER_BUDGET;
		else if (r < 0)
			a->omitted = strerror(-r);
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
	free(l->copy_dir);
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
	free(w.seen);
	if (w.err == -ECANCELED)
		remove_copies(&w);
	if (w.err < 0) {
		sbx_artifacts_release(ret);
		return w.err;
	}
	if (w.copy_dir[0] && !(ret->copy_dir = strdup(w.copy_dir))) {
		remove_copies(&w);
		sbx_artifacts_release(ret);
		return -ENOMEM;
	}
	return (int)ret->n;
}

/* --- the directory of copies ----------------------------------------------- */

static bool digits(const char **n, size_t min, size_t max)
{
	size_t k = 0;
	while (**n >= '0' && **n <= '9')
		(*n)++, k++;
	return k >= min && k <= max;
}

/* A run folder of the terminal (cli/cache_dir.c):
 * YYYYMMDD-HHMMSS-PID-ID, the id's characters letters, digits or '_'. */
static bool terminal_dir_name(const char *n)
{
	if (!digits(&n, 8, 8) || *n++ != '-' || !digits(&n, 6, 6) || *n++ != '-' ||
	    !digits(&n, 1, 10) || *n++ != '-' || !*n || strlen(n) > 24)
		return false;
	for (; *n; n++)
		if (!((*n >= 'a' && *n <= 'z') || (*n >= 'A' && *n <= 'Z') ||
		      (*n >= '0' && *n <= '9') || *n == '_'))
			return false;
	return true;
}

/* A name this module gives a run's copy directory: "r" digits "-" and
 * mkdtemp's six letters or digits; or the terminal's run folder. Nothing
 * else in the directory is kiln's to remove (artifactDir may be any
 * folder). */
static bool copy_dir_name(const char *n)
{
	if (terminal_dir_name(n))
		return true;
	if (*n++ != 'r' || *n < '0' || *n > '9')
		return false;
	while (*n >= '0' && *n <= '9')
		n++;
	if (*n++ != '-' || strlen(n) != 6)
		return false;
	for (; *n; n++)
		if (!((*n >= 'a' && *n <= 'z') || (*n >= 'A' && *n <= 'Z') ||
		      (*n >= '0' && *n <= '9')))
			return false;
	return true;
}

struct old_dir {
	char name[NAME_MAX + 1];
	int64_t mtime_ms;
	uint64_t bytes; /* on disk */
};

/* What the files of dir (one level: copies are flat) hold on disk. */
static uint64_t disk_bytes(int parent, const char *name)
{
	int fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	if (!d) {
		if (fd >= 0)
			close(fd);
		return 0;
	}
	uint64_t n = 0;
	struct dirent *e;
	struct stat st;
	while ((e = readdir(d)))
		if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
		    S_ISREG(st.st_mode))
			n += (uint64_t)st.st_blocks * 512;
	closedir(d);
	return n;
}

/* Remove dir's entries (never following a link) and dir itself. */
static void remove_dir(int parent, const char *name)
{
	int fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	if (!d) {
		if (fd >= 0)
			close(fd);
		return;
	}
	struct dirent *e;
	while ((e = readdir(d)))
		if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
			unlinkat(dirfd(d), e->d_name, 0);
	closedir(d);
	unlinkat(parent, name, AT_REMOVEDIR);
}

static int by_age(const void *a, const void *b)
{
	const struct old_dir *x = a, *y = b;
	return x->mtime_ms < y->mtime_ms ? -1 : x->mtime_ms > y->mtime_ms;
}

int sbx_artifact_dir_prune(const char *dir, uint64_t max_bytes, uint64_t max_age_ms,
                           const char *keep)
{
	if (!max_bytes && !max_age_ms)
		return 0;
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	DIR *d = fdopendir(fd);
	if (!d) {
		int r = -errno;
		close(fd);
		return r;
	}
	const char *keep_name = NULL;
	size_t dl = strlen(dir);
	while (dl > 1 && dir[dl - 1] == '/')
		dl--;
	if (keep && strncmp(keep, dir, dl) == 0 && keep[dl] == '/')
		keep_name = keep + dl + 1;
	struct timespec now;
	clock_gettime(CLOCK_REALTIME, &now);
	int64_t now_ms = (int64_t)now.tv_sec * 1000 + now.tv_nsec / 1000000;
	struct old_dir *list = NULL;
	size_t n = 0;
	int removed = 0;
	uint64_t total = 0;
	struct dirent *e;
	struct stat st;
	while ((e = readdir(d))) {
		if (!copy_dir_name(e->d_name) || (keep_name && strcmp(e->d_name, keep_name) == 0) ||
		    fstatat(fd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISDIR(st.st_mode))
			continue;
		int64_t mt = (int64_t)st.st_mtim.tv_sec * 1000 + st.st_mtim.tv_nsec / 1000000;
		if (max_age_ms && now_ms - mt > (int64_t)max_age_ms) {
			remove_dir(fd, e->d_name);
			removed++;
			continue;
		}
		struct old_dir *l = realloc(list, (n + 1) * sizeof(*l));
		if (!l)
			break; /* prune what is listed */
		list = l;
		snprintf(list[n].name, sizeof(list[n].name), "%s", e->d_name);
		list[n].mtime_ms = mt;
		list[n].bytes = disk_bytes(fd, e->d_name);
		total += list[n].bytes;
		n++;
	}
	/* The run being kept counts toward the cap too. */
	if (keep_name && fstatat(fd, keep_name, &st, AT_SYMLINK_NOFOLLOW) == 0)
		total += disk_bytes(fd, keep_name);
	if (max_bytes && total > max_bytes) {
		qsort(list, n, sizeof(*list), by_age);
		for (size_t i = 0; i < n && total > max_bytes; i++) {
			remove_dir(fd, list[i].name);
			total -= list[i].bytes;
			removed++;
		}
	}
	free(list);
	closedir(d);
	return removed;
}
