/* hide.c: the workspace's secrets, found on a job thread and remembered
 * between runs (see hide.h): the picture of the folder's directories,
 * the pass that brings it up to date for a run, and the list it gives. */
#include "sandbox/workspace/hide.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/buf.h"
#include "core/log.h"
#include "core/util.h"
#include "sandbox/host/host.h"
#include "sandbox/box/child.h"
#include "sandbox/host/job.h"
#include "sandbox/state.h"

/* A directory changed less than this long before it was read may change
 * again within the same tick of the file system's clock, which would not
 * move its times: it is read again by every pass until it is older. */
#define RACY_SECONDS 2
/* Passes made for one request while the folder keeps changing under
 * them; the last one's picture is used. */
#define MAX_PASSES 3

struct hsecret {
	char kind; /* SBX_HIDE_FILE or SBX_HIDE_DIR */
	char *name;
};

/* One directory of the picture. */
struct hdir {
	char *name; /* "" for the workspace itself */
	dev_t dev;
	ino_t ino;
	struct timespec mtime, ctime;
	bool read;       /* its entries were read (times above are from then) */
	bool racy;       /* read again next pass (RACY_SECONDS, or it moved) */
	bool unreadable; /* cannot be opened: the box cannot either */
	bool other_fs;   /* another file system is mounted there: pid 1 walks it */
	bool deep;       /* SBX_HIDE_TREE_DEPTH deep: masked whole */
	bool taken;      /* (while its parent is read again) */
	unsigned long nentries;
	struct hdir **subs; /* sorted by name */
	size_t nsubs;
	struct hsecret *secrets;
	size_t nsecrets;
};

struct sbx_hide_req {
	struct sbx_hide_req *next;
	sbx_hide_done_fn done;
	void *data;
};

/* The cache, one per sandbox (s->hide). The tree is the job thread's
 * while busy, the loop's otherwise. */
struct sbx_hide {
	struct sandbox *sbx;
	char *root;
	char **pats;
	struct sbx_name_pat *forms; /* pats, prepared */
	size_t npats;
	unsigned long max_entries;
	struct hdir *tree;
	bool busy;
	/* Served by the pass under way; waiting for the next one (asked
	 * after the pass under way began, so it cannot answer them). */
	struct sbx_hide_req *cur, *next;
};

/* One pass: what the job thread gives back. */
struct hide_pass {
	struct sbx_hide *h;
	int fd;
	int err;
	char why[512];
	/* while it walks */
	const atomic_bool *cancel;
	unsigned long entries, changed;
};

static void hdir_clear(struct hdir *d)
{
	for (size_t i = 0; i < d->nsubs; i++) {
		hdir_clear(d->subs[i]);
		free(d->subs[i]->name);
		free(d->subs[i]);
	}
	free(d->subs);
	for (size_t i = 0; i < d->nsecrets; i++)
		free(d->secrets[i].name);
	free(d->secrets);
	d->subs = NULL;
	d->secrets = NULL;
	d->nsubs = d->nsecrets = 0;
	d->nentries = 0;
	d->read = false;
}

static void hdir_free(struct hdir *d)
{
	if (!d)
		return;
	hdir_clear(d);
	free(d->name);
	free(d);
}

static struct hdir *hdir_new(const char *name)
{
	struct hdir *d = calloc(1, sizeof(*d));
	if (d && !(d->name = strdup(name))) {
		free(d);
		return NULL;
	}
	return d;
}

static bool same_times(const struct hdir *d, const struct stat *st)
{
	return d->dev == st->st_dev && d->ino == st->st_ino &&
	       d->mtime.tv_sec == st->st_mtim.tv_sec && d->mtime.tv_nsec == st->st_mtim.tv_nsec &&
	       d->ctime.tv_sec == st->st_ctim.tv_sec && d->ctime.tv_nsec == st->st_ctim.tv_nsec;
}

static void set_times(struct hdir *d, const struct stat *st)
{
	d->dev = st->st_dev;
	d->ino = st->st_ino;
	d->mtime = st->st_mtim;
	d->ctime = st->st_ctim;
}

void sbx_name_pat_init(struct sbx_name_pat *p, const char *pat)
{
	size_t pre = strcspn(pat, "*?[");
	*p = (struct sbx_name_pat){.pat = pat, .star = -2, .pre = pre};
	if (!pat[pre])
		p->star = -1;
	else if (pat[pre] == '*' && !pat[pre + 1 + strcspn(pat + pre + 1, "*?[")]) {
		p->star = (int)pre;
		p->suf = strlen(pat + pre + 1);
	}
}

bool sbx_name_pat_match(const struct sbx_name_pat *p, const char *name, size_t len)
{
	if (p->star == -1)
		return len == p->pre && memcmp(name, p->pat, len) == 0;
	if (p->star >= 0)
		return len >= p->pre + p->suf && memcmp(name, p->pat, p->pre) == 0 &&
		       memcmp(name + len - p->suf, p->pat + p->pre + 1, p->suf) == 0;
	return fnmatch(p->pat, name, FNM_NOESCAPE) == 0;
}

static bool hidden_name(const struct sbx_hide *h, const char *name)
{
	/* As child_workspace.c's glob_match: no escapes, a leading dot like any
	 * other character. */
	size_t len = strlen(name);
	for (size_t i = 0; i < h->npats; i++)
		if (sbx_name_pat_match(&h->forms[i], name, len))
			return true;
	return false;
}

static int cmp_sub(const void *a, const void *b)
{
	return strcmp((*(struct hdir *const *)a)->name, (*(struct hdir *const *)b)->name);
}

static struct hdir *find_sub(struct hdir *d, const char *name)
{
	size_t lo = 0, hi = d->nsubs;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strcmp(name, d->subs[mid]->name);
		if (c == 0)
			return d->subs[mid];
		if (c < 0)
			hi = mid;
		else
			lo = mid + 1;
	}
	return NULL;
}

static int grow(void **arr, size_t *cap, size_t n, size_t size)
{
	if (n < *cap)
		return 0;
	size_t nc = *cap ? *cap * 2 : 8;
	void *p = realloc(*arr, nc * size);
	if (!p)
		return -ENOMEM;
	*arr = p;
	*cap = nc;
	return 0;
}

/* Read d's entries again (fd is it, st its times from before the read):
 * its secrets, and its subdirectories, keeping the picture of those it
 * had. */
static int read_dir(struct hide_pass *ps, struct hdir *d, int fd, const struct stat *st, int depth)
{
	struct sbx_hide *h = ps->h;
	struct timespec t0;
	clock_gettime(CLOCK_REALTIME, &t0);
	int dfd = openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return -errno;
	DIR *dir = fdopendir(dfd);
	if (!dir) {
		int r = -errno;
		close(dfd);
		return r;
	}
	struct hdir **subs = NULL;
	struct hsecret *secrets = NULL;
	size_t nsubs = 0, capsubs = 0, nsecrets = 0, capsecrets = 0;
	unsigned long n = 0;
	int r = 0;
	for (;;) {
		errno = 0;
		struct dirent *e = readdir(dir);
		if (!e) {
			r = errno ? -errno : 0;
			break;
		}
		const char *name = e->d_name;
		if (name[0] == '.' && (!name[1] || (name[1] == '.' && !name[2])))
			continue;
		/* An entry a pass cannot afford to count is not shown. */
		if (++n > h->max_entries) {
			r = -E2BIG;
			break;
		}
		unsigned char type = e->d_type;
		if (type == DT_UNKNOWN) {
			struct stat est;
			if (fstatat(fd, name, &est, AT_SYMLINK_NOFOLLOW) < 0)
				continue;
			type = S_ISDIR(est.st_mode)   ? DT_DIR
			       : S_ISREG(est.st_mode) ? DT_REG
			                              : DT_LNK;
		}
		/* Links are not followed (what they point to in the folder
		 * is checked where it is); devices and the like cannot be
		 * opened in the box. */
		if (type != DT_DIR && type != DT_REG)
			continue;
		bool isdir = type == DT_DIR;
		if (hidden_name(h, name)) {
			if ((r = grow((void **)&secrets, &capsecrets, nsecrets, sizeof(*secrets))) <
			    0)
				break;
			secrets[nsecrets].kind = isdir ? SBX_HIDE_DIR : SBX_HIDE_FILE;
			if (!(secrets[nsecrets].name = strdup(name))) {
				r = -ENOMEM;
				break;
			}
			nsecrets++;
			continue;
		}
		if (!isdir)
			continue;
		struct hdir *c = find_sub(d, name);
		if (c && !c->taken)
			c->taken = true;
		else if (!(c = hdir_new(name)))
			r = -ENOMEM;
		if (r >= 0 && (r = grow((void **)&subs, &capsubs, nsubs, sizeof(*subs))) < 0)
			hdir_free(c);
		if (r < 0)
			break;
		c->deep = depth + 1 >= SBX_HIDE_TREE_DEPTH;
		subs[nsubs++] = c;
	}
	closedir(dir);
	/* The nodes of the picture not in the new one go (on failure, the
	 * new ones). */
	struct hdir **drop = r < 0 ? subs : d->subs, **keep = r < 0 ? d->subs : subs;
	size_t ndrop = r < 0 ? nsubs : d->nsubs, nkeep = r < 0 ? d->nsubs : nsubs;
	for (size_t i = 0; i < ndrop; i++)
		if (!drop[i]->taken)
			hdir_free(drop[i]);
	for (size_t i = 0; i < nkeep; i++)
		keep[i]->taken = false;
	if (r < 0) {
		free(subs);
		for (size_t i = 0; i < nsecrets; i++)
			free(secrets[i].name);
		free(secrets);
		return r;
	}
	free(d->subs);
	for (size_t i = 0; i < d->nsecrets; i++)
		free(d->secrets[i].name);
	free(d->secrets);
	if (nsubs)
		qsort(subs, nsubs, sizeof(*subs), cmp_sub);
	d->subs = subs;
	d->nsubs = nsubs;
	d->secrets = secrets;
	d->nsecrets = nsecrets;
	d->nentries = n;
	d->read = true;
	d->unreadable = false;
	set_times(d, st);
	time_t limit = t0.tv_sec - RACY_SECONDS;
	d->racy = st->st_mtim.tv_sec >= limit || st->st_ctim.tv_sec >= limit;
	return 0;
}

static int count(struct hide_pass *ps, unsigned long n)
{
	ps->entries += n;
	return ps->entries > ps->h->max_entries ? -E2BIG : 0;
}

/* Bring d (open as fd, depth below the workspace) and everything under
 * it up to date. */
static int check_dir(struct hide_pass *ps, struct hdir *d, int fd, int depth)
{
	struct stat st;
	if (fstat(fd, &st) < 0)
		return -errno;
	if (!d->read || d->racy || !same_times(d, &st)) {
		if (!d->read || !same_times(d, &st))
			ps->changed++;
		int r = read_dir(ps, d, fd, &st, depth);
		if (r < 0)
			return r;
	}
	int r = count(ps, d->nentries);
	for (size_t i = 0; r >= 0 && i < d->nsubs; i++) {
		struct hdir *c = d->subs[i];
		if (atomic_load(ps->cancel))
			return -ECANCELED;
		if (c->deep)
			continue;
		/* An unchanged directory with no subdirectories (most of a
		 * node_modules) needs only its times. */
		struct stat cs;
		bool have = false;
		if (c->other_fs || c->unreadable || (c->read && !c->racy && !c->nsubs)) {
			if (fstatat(fd, c->name, &cs, AT_SYMLINK_NOFOLLOW) == 0) {
				have = true;
				if (c->other_fs && cs.st_dev != st.st_dev)
					continue;
				if (same_times(c, &cs) && !c->other_fs) {
					r = count(ps, c->nentries);
					continue;
				}
			}
		}
		int cfd = openat(fd, c->name, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
		if (cfd < 0 && errno == EACCES &&
		    (have || fstatat(fd, c->name, &cs, AT_SYMLINK_NOFOLLOW) == 0)) {
			/* Neither can the box (it runs as this uid, or as
			 * nobody when kiln is root): nothing in it is shown.
			 * Its times say when that may have changed. */
			if (!c->unreadable)
				ps->changed++;
			hdir_clear(c);
			c->unreadable = true;
			c->other_fs = false;
			set_times(c, &cs);
			continue;
		}
		if (cfd < 0) {
			/* Gone or replaced since d was read: d changed
			 * under this pass. */
			d->racy = true;
			ps->changed++;
			continue;
		}
		struct stat os;
		if (fstat(cfd, &os) == 0 && os.st_dev != st.st_dev) {
			/* Another file system: the overlay does not show
			 * it, but what lies under it, which only pid 1 can
			 * see. */
			hdir_clear(c);
			c->other_fs = true;
			close(cfd);
			continue;
		}
		c->other_fs = false;
		r = check_dir(ps, c, cfd, depth + 1);
		close(cfd);
	}
	return r;
}

/* Append the records of d (its path in path[0..len)) to b. */
static int emit(struct hide_pass *ps, const struct hdir *d, char *path, size_t len, struct buf *b,
                unsigned long *nmasks)
{
	int r = 0;
	for (size_t i = 0; r >= 0 && i < d->nsecrets + d->nsubs; i++) {
		const char *name;
		char kind = 0;
		const struct hdir *c = NULL;
		if (i < d->nsecrets) {
			name = d->secrets[i].name;
			kind = d->secrets[i].kind;
		} else {
			c = d->subs[i - d->nsecrets];
			name = c->name;
			kind = c->deep ? SBX_HIDE_DIR : c->other_fs ? SBX_HIDE_WALK : 0;
		}
		size_t n = strlen(name), nlen = len + (len ? 1 : 0) + n;
		if (nlen >= PATH_MAX)
			return -ENAMETOOLONG;
		if (len)
			path[len] = '/';
		memcpy(path + nlen - n, name, n + 1);
		if (kind) {
			if (++*nmasks > SBX_HIDE_MAX_MASKS)
				return -E2BIG;
			r = buf_append(b, &kind, 1);
			if (r >= 0)
				r = buf_append(b, path, nlen + 1);
		} else if (c) {
			r = emit(ps, c, path, nlen, b, nmasks);
		}
		path[len] = '\0';
	}
	return r;
}

static int list_memfd(const struct buf *b)
{
	return sbx_sealed_memfd("kiln-hide", b->data, b->len);
}

/* On the job thread: bring the picture up to date, then write the list. */
static void pass_work(void *data, const atomic_bool *cancel)
{
	struct hide_pass *ps = data;
	struct sbx_hide *h = ps->h;
	ps->cancel = cancel;
	int fd = open(h->root, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0) {
		ps->err = -errno;
		snprintf(ps->why, sizeof(ps->why), "kiln cannot read the workspace %s: %s", h->root,
		         strerror(errno));
		return;
	}
	int r = 0;
	if (!h->tree && !(h->tree = hdir_new("")))
		r = -ENOMEM;
	for (int i = 0; r >= 0 && i < MAX_PASSES; i++) {
		ps->entries = ps->changed = 0;
		r = check_dir(ps, h->tree, fd, 0);
		if (!ps->changed)
			break;
	}
	close(fd);
	struct buf b;
	buf_init(&b, (size_t)SBX_HIDE_MAX_MASKS * (PATH_MAX + 2));
	char path[PATH_MAX] = "";
	unsigned long nmasks = 0;
	if (r >= 0)
		r = emit(ps, h->tree, path, 0, &b, &nmasks);
	if (r >= 0)
		r = ps->fd = list_memfd(&b);
	buf_release(&b);
	if (r >= 0)
		return;
	ps->err = r;
	if (r == -E2BIG && nmasks > SBX_HIDE_MAX_MASKS)
		snprintf(ps->why, sizeof(ps->why),
		         "the workspace holds more than %d entries to hide "
		         "(sandbox.workspace.hide): kiln will not show it unchecked. Hide "
		         "their folder instead (a hidden folder is masked whole), or set "
		         "sandbox.workspace.mode to \"none\"",
		         SBX_HIDE_MAX_MASKS);
	else if (r == -E2BIG)
		snprintf(ps->why, sizeof(ps->why),
		         "the workspace has more than %lu entries, more than kiln checks for "
		         "secrets before a run (sandbox.workspace.maxEntries): kiln will not show "
		         "it unchecked. Raise sandbox.workspace.maxEntries, add a folder the code "
		         "does not need to sandbox.workspace.hide (a hidden folder is not walked), "
		         "or open a smaller folder",
		         h->max_entries);
	else if (r != -ECANCELED)
		snprintf(ps->why, sizeof(ps->why),
		         "kiln could not check the workspace for secrets: %s", strerror(-r));
}

static void start_next(struct sandbox *s);

static void pass_done(void *data)
{
	struct hide_pass *ps = data;
	struct sbx_hide *h = ps->h;
	h->busy = false;
	log_debug("workspace: %lu entries checked for secrets", ps->entries);
	/* One at a time: a done may cancel another request. */
	while (h->cur) {
		struct sbx_hide_req *req = h->cur;
		h->cur = req->next;
		int fd = ps->fd >= 0 ? fcntl(ps->fd, F_DUPFD_CLOEXEC, 3) : ps->err;
		if (ps->fd >= 0 && fd < 0)
			fd = -errno;
		req->done(req->data, fd, fd < 0 ? (ps->why[0] ? ps->why : strerror(-fd)) : NULL);
		free(req);
	}
	if (h->next && !h->busy)
		start_next(h->sbx);
}

static void pass_free(void *data)
{
	struct hide_pass *ps = data;
	if (ps->fd >= 0)
		close(ps->fd);
	free(ps);
}

static void free_pats(struct sbx_hide *h)
{
	for (size_t i = 0; i < h->npats; i++)
		free(h->pats[i]);
	free(h->pats);
	free(h->forms);
	h->pats = NULL;
	h->forms = NULL;
	h->npats = 0;
}

/* The picture is of one folder with one list of patterns: when either
 * changed, it starts again. */
static int sync_config(struct sandbox *s, struct sbx_hide *h)
{
	bool same = h->root && strcmp(h->root, s->workspace) == 0 && h->npats == s->config.nhide &&
	            h->max_entries == s->config.hide_max_entries;
	for (size_t i = 0; same && i < h->npats; i++)
		same = strcmp(h->pats[i], s->config.hide[i]) == 0;
	if (same)
		return 0;
	hdir_free(steal_pointer(&h->tree));
	free(h->root);
	free_pats(h);
	h->max_entries = s->config.hide_max_entries;
	if (!(h->root = strdup(s->workspace)) ||
	    !(h->pats = calloc(s->config.nhide + 1, sizeof(*h->pats))) ||
	    !(h->forms = calloc(s->config.nhide + 1, sizeof(*h->forms))))
		return -ENOMEM;
	for (; h->npats < s->config.nhide; h->npats++) {
		if (!(h->pats[h->npats] = strdup(s->config.hide[h->npats])))
			return -ENOMEM;
		sbx_name_pat_init(&h->forms[h->npats], h->pats[h->npats]);
	}
	return 0;
}

/* Fail every request waiting for the next pass with err. */
static void fail_next(struct sbx_hide *h, int err, const char *why)
{
	while (h->next) {
		struct sbx_hide_req *req = h->next;
		h->next = req->next;
		req->done(req->data, err, why);
		free(req);
	}
}

/* Start a pass for the requests waiting for one. -errno when it could
 * not start (they still wait). */
static int start_pass(struct sandbox *s)
{
	struct sbx_hide *h = s->hide;
	struct hide_pass *ps = calloc(1, sizeof(*ps));
	int r = ps ? sync_config(s, h) : -ENOMEM;
	if (r >= 0) {
		ps->h = h;
		ps->fd = -1;
		h->cur = steal_pointer(&h->next);
		h->busy = true;
		r = sbx_job_start(&s->base, pass_work, pass_done, pass_free, ps, NULL);
		if (r < 0) {
			h->busy = false;
			h->next = steal_pointer(&h->cur);
		}
	}
	if (r < 0)
		free(ps);
	return r;
}

/* After a pass: the next one, for the requests made while it ran. */
static void start_next(struct sandbox *s)
{
	struct sbx_hide *h = s->hide;
	if (!s->workspace)
		fail_next(h, -EINVAL, "the workspace was closed before the run started");
	else if (start_pass(s) < 0)
		fail_next(h, -ENOMEM, "out of memory");
}

int sbx_hide_request(struct sandbox *s, sbx_hide_done_fn done, void *data,
                     struct sbx_hide_req **ret)
{
	if (!s->workspace)
		return -EINVAL;
	if (!s->hide && !(s->hide = calloc(1, sizeof(*s->hide))))
		return -ENOMEM;
	struct sbx_hide *h = s->hide;
	h->sbx = s;
	struct sbx_hide_req *req = calloc(1, sizeof(*req));
	if (!req)
		return -ENOMEM;
	req->done = done;
	req->data = data;
	/* At the end of the queue: requests are answered in order. */
	struct sbx_hide_req **pp = &h->next;
	while (*pp)
		pp = &(*pp)->next;
	*pp = req;
	*ret = req;
	/* The pass runs on a job thread: done is never called from here. */
	int r = h->busy ? 0 : start_pass(s);
	if (r < 0) {
		*pp = NULL;
		free(req);
		return r;
	}
	return 0;
}

void sbx_hide_cancel(struct sandbox *s, struct sbx_hide_req *req)
{
	struct sbx_hide *h = s->hide;
	if (!h || !req)
		return;
	struct sbx_hide_req **lists[] = {&h->cur, &h->next};
	for (size_t i = 0; i < ARRAY_SIZE(lists); i++)
		for (struct sbx_hide_req **pp = lists[i]; *pp; pp = &(*pp)->next)
			if (*pp == req) {
				*pp = req->next;
				free(req);
				return;
			}
}

void sbx_hide_free(struct sandbox *s)
{
	struct sbx_hide *h = s->hide;
	if (!h)
		return;
	for (struct sbx_hide_req *req = h->cur, *next; req; req = next) {
		next = req->next;
		free(req);
	}
	for (struct sbx_hide_req *req = h->next, *next; req; req = next) {
		next = req->next;
		free(req);
	}
	hdir_free(h->tree);
	free(h->root);
	free_pats(h);
	free(h);
	s->hide = NULL;
}
