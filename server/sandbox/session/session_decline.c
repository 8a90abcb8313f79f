/* session_decline.c: a run's workspace changes declined
 * (workspace/declineChanges, see session.h): forgotten by the ledger, and,
 * for a run of a live session, taken out of the session's layer so that
 * its code sees the host folder's file again. The layer is an overlay
 * mounted in the box, which must not be changed from outside while it
 * is (overlayfs leaves that undefined), so the session's driver does it
 * inside the box (its "decline" op): it removes what the host lacks and
 * writes the host's bytes (sent in the frame, capped) where the host has
 * a file. The driver is not trusted: afterwards a job thread compares the
 * whole layer with the host folder, and a change still there is kept,
 * and said. Steps, each on its own turn: the host's files read (a job),
 * the frame sent and its answer awaited, the layer compared (a job). */
#include "sandbox/session/session.h"

#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/json.h"
#include "core/util.h"
#include "sandbox/host/job.h"
#include "sandbox/session/session_box.h"
#include "sandbox/state.h"
#include "sandbox/workspace/apply.h"
#include "sandbox/workspace/hide.h"
#include "sandbox/workspace/ledger.h"
#include "sandbox/workspace/wsdiff.h"

/* The host's bytes sent into the box for one decline, in all: the frame
 * (base64) stays under the driver's 8 MiB and the session's queue. */
#define DECLINE_BYTES_MAX (4u << 20)
/* What the driver may say of one item's failure. */
#define DRIVER_WHY_MAX 200

enum op { OP_KEEP, OP_REMOVE, OP_RESTORE };

struct ditem {
	enum op op;
	char *why;   /* OP_KEEP: why it is kept (owned) */
	char *bytes; /* OP_RESTORE: the host's file */
	size_t len;
	mode_t mode;
	char *prune; /* OP_REMOVE: the topmost folder the host lacks, or NULL */
	bool sent;   /* in the frame to the driver */
	bool done;   /* the driver says it did it */
};

struct sess_decline {
	struct sandbox *s;
	struct sbx_ws_decline_list dl;
	struct ditem *it;
	char **hide; /* the hide patterns, copied for the job thread */
	size_t nhide;
	int upper_fd;
	struct sbx_ws_changes check;
	struct sbx_ws_snap *snap;
	bool compared; /* check holds the layer as compared */
	sbx_session_declined_fn done;
	void *data;
	bool told;
	bool handed; /* read_done gave it to the session's wait (on_reply) */
};

static void item_keep(struct ditem *it, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void item_keep(struct ditem *it, const char *fmt, ...)
{
	char why[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	free(it->why);
	it->why = strdup(why); /* NULL on OOM: said as "kept" below */
	it->op = OP_KEEP;
}

static void decline_free(struct sess_decline *d)
{
	for (size_t i = 0; i < d->dl.n; i++) {
		free(d->it[i].why);
		free(d->it[i].bytes);
		free(d->it[i].prune);
	}
	free(d->it);
	for (size_t i = 0; i < d->nhide; i++)
		free(d->hide[i]);
	free(d->hide);
	if (d->upper_fd >= 0)
		close(d->upper_fd);
	sbx_ws_changes_release(&d->check);
	sbx_ws_snap_free(d->snap);
	sbx_ws_decline_list_release(&d->dl);
	free(d);
}

/* Tell the caller, once: each item declined (the ledger forgets it) or
 * kept with why; res NULL when the server is ending. */
static void finish(struct sess_decline *d, bool ending)
{
	if (d->told || !d->done)
		return;
	d->told = true;
	struct sbx_session_decline_result res = {0};
	res.declined = calloc(d->dl.n + 1, sizeof(*res.declined));
	res.kept = calloc(d->dl.n + 1, sizeof(*res.kept));
	if (ending || !res.declined || !res.kept) {
		free(res.declined);
		free(res.kept);
		d->done(d->data, NULL);
		return;
	}
	for (size_t i = 0; i < d->dl.n; i++) {
		const char *path = d->dl.items[i].path;
		if (d->it[i].op == OP_KEEP) {
			res.kept[res.nkept].path = path;
			res.kept[res.nkept++].why =
			    d->it[i].why ? d->it[i].why : "kiln could not decline it";
		} else {
			sbx_ws_ledger_declined(d->s, d->dl.run_id, path);
			res.declined[res.ndeclined++] = path;
		}
	}
	d->done(d->data, &res);
	free(res.declined);
	free(res.kept);
}

/* The session of the run, when it is still the box the run changed. */
static struct sbx_session *same_box(struct sess_decline *d)
{
	struct sbx_session *ss = sbx_session_find(d->s, d->dl.session_id);
	return ss && ss->gen == d->dl.gen && ss->alive && ss->decline == d ? ss : NULL;
}

/* --- step 1: the host's files, read on a job thread ------------------------ */

static bool hidden(const struct sess_decline *d, const char *rel)
{
	for (const char *p = rel; *p;) {
		size_t len = strcspn(p, "/");
		for (size_t k = 0; k < d->nhide; k++) {
			struct sbx_name_pat pat;
			sbx_name_pat_init(&pat, d->hide[k]);
			if (sbx_name_pat_match(&pat, p, len))
				return true;
		}
		p += len + (p[len] == '/');
	}
	return false;
}

/* What the host shows at rel (relative to rootfd): 0 with *st, -ENOENT,
 * or -errno. */
static int host_stat(int rootfd, const char *rel, struct stat *st)
{
	char copy[PATH_MAX];
	snprintf(copy, sizeof(copy), "%s", rel);
	const char *name = NULL;
	int dir = sbx_ws_open_parent(rootfd, copy, false, 0, &name);
	if (dir < 0)
		return dir == -ENOTDIR ? -ENOENT : dir;
	int r = fstatat(dir, name, st, AT_SYMLINK_NOFOLLOW) < 0 ? -errno : 0;
	close(dir);
	return r;
}

static int read_host(int rootfd, const char *rel, size_t size, char **ret)
{
	char copy[PATH_MAX];
	snprintf(copy, sizeof(copy), "%s", rel);
	const char *name = NULL;
	int dir = sbx_ws_open_parent(rootfd, copy, false, 0, &name);
	if (dir < 0)
		return dir;
	int fd = openat(dir, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	close(dir);
	if (fd < 0)
		return -errno;
	char *b = malloc(size + 1);
	size_t off = 0;
	while (b && off < size) {
		ssize_t n = read(fd, b + off, size - off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		off += (size_t)n;
	}
	close(fd);
	if (!b)
		return -ENOMEM;
	if (off != size) { /* it changed while read: said, not guessed */
		free(b);
		return -EAGAIN;
	}
	*ret = b;
	return 0;
}

static void read_work(void *data, const atomic_bool *cancel)
{
	struct sess_decline *d = data;
	int rootfd = open(d->dl.root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	size_t rootlen = strlen(d->dl.root), total = 0;
	for (size_t i = 0; i < d->dl.n && !atomic_load(cancel); i++) {
		struct ditem *it = &d->it[i];
		const char *path = d->dl.items[i].path;
		if (it->op == OP_KEEP)
			continue;
		if (rootfd < 0) {
			item_keep(it, "the workspace cannot be opened: %s", strerror(errno));
			continue;
		}
		if (strncmp(path, d->dl.root, rootlen) != 0 || path[rootlen] != '/') {
			item_keep(it, "it is not in the workspace");
			continue;
		}
		const char *rel = path + rootlen + 1;
		struct stat st;
		int r = host_stat(rootfd, rel, &st);
		if (r == -ENOENT) {
			/* The host has nothing there: the session should not
			 * either, nor the folders the host lacks above it. */
			it->op = OP_REMOVE;
			for (const char *sl = strchr(rel, '/'); sl && !it->prune;
			     sl = strchr(sl + 1, '/')) {
				char prefix[PATH_MAX];
				snprintf(prefix, sizeof(prefix), "%.*s", (int)(sl - rel), rel);
				struct stat pst;
				if (host_stat(rootfd, prefix, &pst) == -ENOENT &&
				    asprintf(&it->prune, "%s/%s", d->dl.root, prefix) < 0)
					it->prune = NULL;
			}
		} else if (r < 0) {
			item_keep(it, "the folder's file cannot be read: %s", strerror(-r));
		} else if (!S_ISREG(st.st_mode)) {
			item_keep(it,
			          "your folder holds a %s there, which kiln does not copy into a "
			          "session: reset the session (session/reset) to see it",
			          S_ISDIR(st.st_mode)   ? "folder"
			          : S_ISLNK(st.st_mode) ? "link"
			                                : "special file");
		} else if (hidden(d, rel)) {
			item_keep(it,
			          "its name is hidden (sandbox.workspace.hide): kiln never sends "
			          "such a file into a box");
		} else if ((uint64_t)st.st_size > DECLINE_BYTES_MAX - total) {
			item_keep(
			    it,
			    "your folder's file is too large to send into the session (%u MiB "
			    "at once): reset the session (session/reset) to see it",
			    DECLINE_BYTES_MAX >> 20);
		} else if ((r = read_host(rootfd, rel, (size_t)st.st_size, &it->bytes)) < 0) {
			item_keep(it, "the folder's file cannot be read: %s",
			          r == -EAGAIN ? "it changed while kiln read it" : strerror(-r));
		} else {
			it->op = OP_RESTORE;
			it->len = (size_t)st.st_size;
			it->mode = st.st_mode & 07777;
			total += it->len;
		}
	}
	if (rootfd >= 0)
		close(rootfd);
}

/* --- step 2: the frame to the driver, and its answer ------------------------ */

static char *base64(const char *in, size_t n)
{
	static const char tab[] =
	    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	char *out = malloc((n + 2) / 3 * 4 + 1), *o = out;
	if (!out)
		return NULL;
	const unsigned char *p = (const unsigned char *)in;
	for (size_t i = 0; i < n; i += 3) {
		unsigned v = (unsigned)p[i] << 16 | (i + 1 < n ? (unsigned)p[i + 1] << 8 : 0) |
		             (i + 2 < n ? p[i + 2] : 0);
		*o++ = tab[v >> 18 & 63];
		*o++ = tab[v >> 12 & 63];
		*o++ = i + 1 < n ? tab[v >> 6 & 63] : '=';
		*o++ = i + 2 < n ? tab[v & 63] : '=';
	}
	*o = '\0';
	return out;
}

/* The frame: {"op": "decline", "items": [{"i", "path", "remove": true,
 * "prune"?} | {"i", "path", "data": base64, "mode"}]}; NULL when there
 * is nothing to send (or on OOM: every item is then kept). */
static json_object *decline_frame(struct sess_decline *d)
{
	json_object *items = json_object_new_array();
	for (size_t i = 0; items && i < d->dl.n; i++) {
		struct ditem *it = &d->it[i];
		if (it->op == OP_KEEP)
			continue;
		json_object *o = json_object_new_object();
		json_object_object_add(o, "i", json_object_new_int64((int64_t)i));
		json_object_object_add(o, "path", json_object_new_string(d->dl.items[i].path));
		if (it->op == OP_REMOVE) {
			json_object_object_add(o, "remove", json_object_new_boolean(1));
			if (it->prune)
				json_object_object_add(o, "prune",
				                       json_object_new_string(it->prune));
		} else {
			char *b = base64(it->bytes, it->len);
			if (!b) {
				json_object_put(o);
				item_keep(it, "kiln ran out of memory");
				continue;
			}
			json_object_object_add(o, "data", json_object_new_string(b));
			json_object_object_add(o, "mode", json_object_new_int64((int64_t)it->mode));
			free(b);
			free(steal_pointer(&it->bytes));
		}
		it->sent = true;
		json_object_array_add(items, o);
	}
	if (!items || !json_object_array_length(items)) {
		json_object_put(items);
		return NULL;
	}
	json_object *msg = json_object_new_object();
	json_object_object_add(msg, "op", json_object_new_string("decline"));
	json_object_object_add(msg, "items", items);
	return msg;
}

static void compare_work(void *data, const atomic_bool *cancel);
static void compare_done(void *data);
static void job_free(void *data);

/* The box is gone (its session ended, was reset or closed) while its
 * answer was awaited: the layer that held the changes is gone with it. */
static void on_gone(struct sbx_session *ss)
{
	struct sess_decline *d = steal_pointer(&ss->decline);
	ss->decline_waiting = false;
	for (size_t i = 0; i < d->dl.n; i++)
		if (d->it[i].sent)
			d->it[i].op = OP_REMOVE;
	finish(d, false);
	decline_free(d);
}

/* The driver's answer: {"op": "declined", "results": [{"i", "error"?}]}. */
static void on_reply(struct sbx_session *ss, json_object *msg)
{
	struct sess_decline *d = ss->decline;
	ss->decline_waiting = false;
	json_object *res = json_get(msg, "results");
	size_t n = json_object_is_type(res, json_type_array) ? json_object_array_length(res) : 0;
	for (size_t k = 0; k < n && k < d->dl.n; k++) {
		json_object *r = json_object_array_get_idx(res, k);
		int64_t i = -1;
		const char *err = NULL;
		if (json_get_int64(r, "i", &i) < 0 || i < 0 || (uint64_t)i >= d->dl.n ||
		    !d->it[i].sent)
			continue;
		if (json_get_string(r, "error", &err) == 0)
			item_keep(&d->it[i], "the session could not drop it: %.*s", DRIVER_WHY_MAX,
			          err);
		else
			d->it[i].done = true;
	}
	for (size_t i = 0; i < d->dl.n; i++)
		if (d->it[i].sent && !d->it[i].done && d->it[i].op != OP_KEEP)
			item_keep(&d->it[i], "the session's driver did not say it dropped it");
	/* Whatever the driver says, the layer is compared with the host. */
	d->upper_fd = fcntl(ss->box.upper_fd, F_DUPFD_CLOEXEC, 3);
	if (d->upper_fd < 0 ||
	    sbx_job_start(&d->s->base, compare_work, compare_done, job_free, d, NULL) < 0) {
		for (size_t i = 0; i < d->dl.n; i++)
			if (d->it[i].op != OP_KEEP)
				item_keep(&d->it[i], "kiln could not check the session's layer");
		ss->decline = NULL;
		finish(d, false);
		decline_free(d);
	}
}

static const struct sess_decline_ops decline_ops = {.reply = on_reply, .gone = on_gone};

static void read_done(void *data)
{
	struct sess_decline *d = data;
	struct sbx_session *ss = same_box(d);
	if (!ss) {
		/* The box is gone: so is every change it held. */
		for (size_t i = 0; i < d->dl.n; i++)
			if (d->it[i].op != OP_KEEP)
				d->it[i].op = OP_REMOVE;
		finish(d, false);
		return;
	}
	_cleanup_json_ json_object *msg = decline_frame(d);
	int r = msg ? sess_queue_frame(ss, msg) : 0;
	if (r < 0)
		for (size_t i = 0; i < d->dl.n; i++)
			if (d->it[i].sent)
				item_keep(&d->it[i], "kiln could not send it to the session: %s",
				          strerror(-r));
	if (!msg || r < 0) {
		ss->decline = NULL;
		finish(d, false);
		return;
	}
	/* The job lets go of it: the session's answer has it now. */
	d->handed = true;
	ss->decline_waiting = true;
	ss->decline_ops = &decline_ops;
	sess_write_out(ss);
}

static void read_free(void *data)
{
	struct sess_decline *d = data;
	if (d->handed)
		return; /* the session's answer has it (on_reply, on_gone) */
	struct sbx_session *ss = sbx_session_find(d->s, d->dl.session_id);
	if (ss && ss->decline == d)
		ss->decline = NULL;
	finish(d, true);
	decline_free(d);
}

/* --- step 3: the layer compared with the host ------------------------------- */

static void compare_work(void *data, const atomic_bool *cancel)
{
	struct sess_decline *d = data;
	int r = sbx_ws_diff_since(d->upper_fd, d->dl.root, NULL, NULL, cancel, &d->check, &d->snap);
	d->compared = r >= 0 && !d->check.incomplete;
}

static void compare_done(void *data)
{
	struct sess_decline *d = data;
	struct sbx_session *ss = same_box(d);
	for (size_t i = 0; i < d->dl.n; i++) {
		struct ditem *it = &d->it[i];
		if (it->op == OP_KEEP || !it->done)
			continue;
		bool still = !d->compared;
		for (size_t k = 0; k < d->check.n && !still; k++)
			still = strcmp(d->check.items[k].path, d->dl.items[i].path) == 0;
		if (still)
			item_keep(it, d->compared
			                  ? "the session still shows the run's version of it"
			                  : "kiln could not check the session's layer");
	}
	if (ss) {
		/* The layer as it is now: the next run reports only what it
		 * changes itself, not what declining did. */
		sbx_ws_snap_free(ss->snap);
		ss->snap = steal_pointer(&d->snap);
		ss->decline = NULL;
	}
	finish(d, false);
}

static void job_free(void *data)
{
	struct sess_decline *d = data;
	struct sbx_session *ss = sbx_session_find(d->s, d->dl.session_id);
	if (ss && ss->decline == d)
		ss->decline = NULL;
	finish(d, true);
	decline_free(d);
}

/* --- the API ---------------------------------------------------------------- */

int sbx_session_decline(struct sandbox *s, const char *run_id, const char *const *paths,
                        sbx_session_declined_fn done, void *data, char *err, size_t errsz)
{
	err[0] = '\0';
	struct sess_decline *d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	d->s = s;
	d->upper_fd = -1;
	d->done = done;
	d->data = data;
	int r = sbx_ws_ledger_pick(s, run_id, paths, &d->dl);
	if (r < 0) {
		free(d);
		return r;
	}
	if (!(d->it = calloc(d->dl.n + 1, sizeof(*d->it)))) {
		decline_free(d);
		return -ENOMEM;
	}
	for (size_t i = 0; i < d->dl.n; i++) {
		const struct sbx_ws_decline_item *p = &d->dl.items[i];
		d->it[i].op = OP_REMOVE;
		if (p->later[0])
			item_keep(
			    &d->it[i],
			    "run %s of the session changed it again: decline that run's change "
			    "first",
			    p->later);
		else if (p->kept)
			item_keep(&d->it[i], "%s", p->kept);
	}
	struct sbx_session *ss = d->dl.session_id[0] ? sbx_session_find(s, d->dl.session_id) : NULL;
	if (!ss || ss->gen != d->dl.gen || !ss->alive || !ss->ws_host || ss->box.upper_fd < 0) {
		/* A one-shot run, or a session box that is gone: nothing holds
		 * the changes any more; the ledger forgets them. */
		finish(d, false);
		decline_free(d);
		return 0;
	}
	if (ss->run || ss->interrupting || ss->snap_lent || ss->check_frame || ss->zwait ||
	    ss->decline || ss->waiting) {
		snprintf(err, errsz,
		         "session %s is busy (a run, or another decline, is under way): decline "
		         "once it is over",
		         ss->id);
		decline_free(d);
		return -EBUSY;
	}
	d->hide = calloc(s->config.nhide + 1, sizeof(*d->hide));
	for (size_t i = 0; d->hide && i < s->config.nhide; i++, d->nhide++)
		if (!(d->hide[i] = strdup(s->config.hide[i])))
			break;
	if (!d->hide || d->nhide < s->config.nhide) {
		decline_free(d);
		return -ENOMEM;
	}
	ss->decline = d;
	r = sbx_job_start(&s->base, read_work, read_done, read_free, d, NULL);
	if (r < 0) {
		ss->decline = NULL;
		d->done = NULL;
		decline_free(d);
	}
	return r;
}
