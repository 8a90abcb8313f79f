/* cache.c: the answer cache on disk, read and written off the event loop
 * (see cache.h). */
#include "llm/cache.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <sha2.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/json.h"
#include "core/log.h"
#include "core/loop.h"
#include "core/util.h"
#include "llm/llm.h"

/* The format of an entry; another version is a miss. */
#define ENTRY_FORMAT "kiln-llm-cache/1"

int llm_cache_dir(char *out, size_t n)
{
	const char *x = getenv("XDG_CACHE_HOME");
	const char *home = getenv("HOME");
	int w;
	if (x && x[0] == '/')
		w = snprintf(out, n, "%s/kiln/llm", x);
	else if (home && home[0])
		w = snprintf(out, n, "%s/.cache/kiln/llm", home);
	else
		return -ENOENT;
	return w < 0 || (size_t)w >= n ? -ENAMETOOLONG : 0;
}

static void hash_part(SHA2_CTX *ctx, const char *s)
{
	/* Length first: ("ab", "c") and ("a", "bc") must differ. */
	size_t n = s ? strlen(s) : 0;
	char len[32];
	int w = snprintf(len, sizeof(len), "%zu:", n);
	SHA256Update(ctx, (const uint8_t *)len, (size_t)w);
	if (n)
		SHA256Update(ctx, (const uint8_t *)s, n);
}

void llm_cache_key(const struct llm_config *c, json_object *messages, char out[65])
{
	SHA2_CTX ctx;
	SHA256Init(&ctx);
	char num[64];
	hash_part(&ctx, ENTRY_FORMAT);
	hash_part(&ctx, c->provider);
	hash_part(&ctx, c->url);
	hash_part(&ctx, c->model);
	snprintf(num, sizeof(num), "%.17g/%lld", c->temperature, (long long)c->max_tokens);
	hash_part(&ctx, num);
	hash_part(&ctx, json_object_to_json_string_ext(messages, JSON_C_TO_STRING_PLAIN));
	SHA256End(&ctx, out);
}

/* --- the cache's thread ---------------------------------------------------------- */

/* One thread does every read and write, in the order they were asked
 * for: a lookup made after a store of the same key finds it. It starts
 * with the first job and then waits for more. */
struct job {
	struct job *next;
	void (*run)(void *arg);
	void *arg;
};

static pthread_mutex_t q_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t q_cond = PTHREAD_COND_INITIALIZER;
static pthread_cond_t q_idle = PTHREAD_COND_INITIALIZER;
static struct job *q_head, **q_tail = &q_head;
static bool q_started, q_busy;

/* At exit, let the stores already asked for finish (at most 2 s): a
 * `kiln ask` that exits right after its answer still caches it. */
static void drain(void)
{
	struct timespec until;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += 2;
	pthread_mutex_lock(&q_lock);
	while ((q_head || q_busy) && pthread_cond_timedwait(&q_idle, &q_lock, &until) == 0)
		;
	pthread_mutex_unlock(&q_lock);
}

static void *worker(void *unused)
{
	(void)unused;
	for (;;) {
		pthread_mutex_lock(&q_lock);
		while (!q_head)
			pthread_cond_wait(&q_cond, &q_lock);
		struct job *j = q_head;
		q_head = j->next;
		if (!q_head)
			q_tail = &q_head;
		q_busy = true;
		pthread_mutex_unlock(&q_lock);
		j->run(j->arg);
		free(j);
		pthread_mutex_lock(&q_lock);
		q_busy = false;
		if (!q_head)
			pthread_cond_broadcast(&q_idle);
		pthread_mutex_unlock(&q_lock);
	}
	return NULL;
}

/* Queue run(arg) for the cache's thread. -ENOMEM, or -errno when the
 * thread cannot start (then run is never called). */
static int submit(void (*run)(void *arg), void *arg)
{
	struct job *j = calloc(1, sizeof(*j));
	if (!j)
		return -ENOMEM;
	j->run = run;
	j->arg = arg;
	pthread_mutex_lock(&q_lock);
	if (!q_started) {
		/* Every signal blocked: the loop takes them through its
		 * signalfd. */
		sigset_t all, old;
		sigfillset(&all);
		pthread_sigmask(SIG_SETMASK, &all, &old);
		pthread_attr_t attr;
		pthread_attr_init(&attr);
		pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
		pthread_t t;
		int r = pthread_create(&t, &attr, worker, NULL);
		pthread_attr_destroy(&attr);
		pthread_sigmask(SIG_SETMASK, &old, NULL);
		if (r != 0) {
			pthread_mutex_unlock(&q_lock);
			free(j);
			return -r;
		}
		q_started = true;
		atexit(drain);
	}
	*q_tail = j;
	q_tail = &j->next;
	pthread_cond_signal(&q_cond);
	pthread_mutex_unlock(&q_lock);
	return 0;
}

/* --- lookups ------------------------------------------------------------------ */

struct llm_cache_lookup {
	struct loop *loop;
	int efd;
	atomic_bool cancelled;
	char path[PATH_MAX];
	size_t max;
	bool hit;
	struct llm_cache_entry entry;
	void (*done)(void *data, const struct llm_cache_entry *entry);
	void *data;
};

static char *read_file(const char *path, size_t max, size_t *ret_len)
{
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return NULL;
	struct stat st;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || (uint64_t)st.st_size > max)
		return NULL;
	char *data = malloc((size_t)st.st_size + 1);
	if (!data)
		return NULL;
	size_t len = 0;
	ssize_t n;
	while (len < (size_t)st.st_size && (n = read(fd, data + len, (size_t)st.st_size - len)) > 0)
		len += (size_t)n;
	data[len] = '\0';
	/* The entry was used now: eviction goes by last use. */
	futimens(fd, NULL);
	*ret_len = len;
	return data;
}

static void lookup_run(void *arg)
{
	struct llm_cache_lookup *l = arg;
	size_t len = 0;
	/* An entry is the answer and some metadata, in JSON. */
	_cleanup_free_ char *text = read_file(l->path, l->max * 2 + 4096, &len);
	json_object *obj = NULL;
	char why[64];
	const char *format, *answer;
	if (text && json_parse_strict(text, len, LLM_JSON_MAX, &obj, why, sizeof(why)) == 0 &&
	    json_get_string(obj, "format", &format) == 0 && strcmp(format, ENTRY_FORMAT) == 0 &&
	    json_get_string(obj, "answer", &answer) == 0 && strlen(answer) <= l->max) {
		l->entry.answer = strdup(answer);
		l->entry.len = strlen(answer);
		const char *reason;
		if (json_get_string(obj, "finishReason", &reason) == 0)
			snprintf(l->entry.finish_reason, sizeof(l->entry.finish_reason), "%s",
			         reason);
		l->entry.prompt_tokens = l->entry.completion_tokens = -1;
		json_get_int64(obj, "promptTokens", &l->entry.prompt_tokens);
		json_get_int64(obj, "completionTokens", &l->entry.completion_tokens);
		l->hit = l->entry.answer != NULL;
	}
	json_object_put(obj);
	uint64_t one = 1;
	if (write(l->efd, &one, sizeof(one)) < 0)
		log_debug("llm cache: eventfd write failed");
}

static void lookup_free(struct llm_cache_lookup *l)
{
	free(l->entry.answer);
	free(l);
}

static void on_lookup_done(struct loop *loop, int fd, unsigned events, void *data)
{
	(void)events;
	struct llm_cache_lookup *l = data;
	loop_unwatch(loop, fd);
	close(fd);
	if (!atomic_load(&l->cancelled))
		l->done(l->data, l->hit ? &l->entry : NULL);
	lookup_free(l);
}

int llm_cache_lookup_start(struct loop *loop, const char *key, size_t max_bytes,
                           void (*done)(void *data, const struct llm_cache_entry *entry),
                           void *data, struct llm_cache_lookup **ret)
{
	struct llm_cache_lookup *l = calloc(1, sizeof(*l));
	if (!l)
		return -ENOMEM;
	char dir[PATH_MAX - 80];
	int r = llm_cache_dir(dir, sizeof(dir));
	if (r < 0) {
		free(l);
		return r;
	}
	snprintf(l->path, sizeof(l->path), "%s/%s.json", dir, key);
	l->loop = loop;
	l->max = max_bytes;
	l->done = done;
	l->data = data;
	l->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (l->efd < 0) {
		r = neg_errno();
		free(l);
		return r;
	}
	r = loop_watch(loop, l->efd, LOOP_READ, on_lookup_done, l);
	if (r < 0) {
		close(l->efd);
		free(l);
		return r;
	}
	r = submit(lookup_run, l);
	if (r < 0) {
		loop_unwatch(loop, l->efd);
		close(l->efd);
		free(l);
		return r;
	}
	*ret = l;
	return 0;
}

void llm_cache_lookup_cancel(struct llm_cache_lookup *l)
{
	if (l)
		atomic_store(&l->cancelled, true);
}

/* --- stores and eviction ----------------------------------------------------- */

struct store {
	char dir[PATH_MAX - 80];
	char key[65];
	char *text;
	uint64_t max_total;
};

static int mkdir_p(const char *dir)
{
	char p[PATH_MAX];
	snprintf(p, sizeof(p), "%s", dir);
	for (char *s = p + 1; *s; s++) {
		if (*s != '/')
			continue;
		*s = '\0';
		if (mkdir(p, 0700) < 0 && errno != EEXIST)
			return neg_errno();
		*s = '/';
	}
	if (mkdir(p, 0700) < 0 && errno != EEXIST)
		return neg_errno();
	return 0;
}

struct file {
	char name[100];
	uint64_t size;
	struct timespec used;
};

static int by_use(const void *a, const void *b)
{
	const struct file *x = a, *y = b;
	if (x->used.tv_sec != y->used.tv_sec)
		return x->used.tv_sec < y->used.tv_sec ? -1 : 1;
	if (x->used.tv_nsec != y->used.tv_nsec)
		return x->used.tv_nsec < y->used.tv_nsec ? -1 : 1;
	return strcmp(x->name, y->name);
}

/* Whether name is an entry ("<64 hex>.json") or a temporary of one. */
static bool entry_name(const char *name, bool *ret_tmp)
{
	size_t n = strlen(name);
	if (n < 69 || strspn(name, "0123456789abcdef") != 64 || strncmp(name + 64, ".json", 5) != 0)
		return false;
	*ret_tmp = n > 69;
	/* "<key>.json.<pid>.tmp" */
	return n == 69 || (n < 100 && name[69] == '.' && strcmp(name + n - 4, ".tmp") == 0);
}

/* Remove the entries used longest ago until the rest fit in max_total
 * (all of them with max_total 0 and clear). */
static int sweep(const char *dir, uint64_t max_total, bool clear, size_t *ret_files,
                 uint64_t *ret_bytes)
{
	DIR *d = opendir(dir);
	if (!d)
		return errno == ENOENT ? 0 : neg_errno();
	struct file *files = NULL;
	size_t n = 0, cap = 0;
	uint64_t total = 0;
	time_t now = time(NULL);
	struct dirent *e;
	while ((e = readdir(d))) {
		bool tmp;
		struct stat st;
		if (!entry_name(e->d_name, &tmp) || fstatat(dirfd(d), e->d_name, &st, 0) < 0 ||
		    !S_ISREG(st.st_mode))
			continue;
		/* A temporary a crashed kiln left behind, or any on clear. */
		if (tmp && !clear && st.st_mtime > now - 600)
			continue;
		if (n == cap) {
			cap = cap ? cap * 2 : 64;
			struct file *f = realloc(files, cap * sizeof(*f));
			if (!f)
				break;
			files = f;
		}
		memcpy(files[n].name, e->d_name, strlen(e->d_name) + 1); /* < 100, checked */
		files[n].size = (uint64_t)st.st_size;
		files[n].used = tmp ? (struct timespec){0} : st.st_mtim;
		total += (uint64_t)st.st_size;
		n++;
	}
	if (files)
		qsort(files, n, sizeof(*files), by_use);
	size_t gone = 0;
	uint64_t freed = 0;
	for (size_t i = 0;
	     i < n && (clear || total - freed > max_total || files[i].used.tv_sec == 0); i++) {
		if (unlinkat(dirfd(d), files[i].name, 0) == 0) {
			gone++;
			freed += files[i].size;
		}
	}
	closedir(d);
	free(files);
	if (ret_files)
		*ret_files = gone;
	if (ret_bytes)
		*ret_bytes = freed;
	return 0;
}

static void store_run(void *arg)
{
	struct store *s = arg;
	char path[PATH_MAX], tmp[PATH_MAX];
	snprintf(path, sizeof(path), "%s/%s.json", s->dir, s->key);
	snprintf(tmp, sizeof(tmp), "%s/%s.json.%d.tmp", s->dir, s->key, (int)getpid());
	int r = mkdir_p(s->dir);
	int fd =
	    r < 0 ? -1 : open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd >= 0) {
		size_t len = strlen(s->text), off = 0;
		ssize_t w = 0;
		while (off < len && (w = write(fd, s->text + off, len - off)) > 0)
			off += (size_t)w;
		bool ok = off == len;
		if (close(fd) < 0)
			ok = false;
		if (!ok || rename(tmp, path) < 0) {
			log_debug("llm cache: cannot write %s: %s", path, strerror(errno));
			unlink(tmp);
		}
		sweep(s->dir, s->max_total, false, NULL, NULL);
	} else {
		log_debug("llm cache: cannot create %s: %s", tmp, strerror(errno));
	}
	free(s->text);
	free(s);
}

void llm_cache_store(const char *key, const struct llm_cache_entry *entry, uint64_t max_total)
{
	struct store *s = calloc(1, sizeof(*s));
	if (!s || llm_cache_dir(s->dir, sizeof(s->dir)) < 0) {
		free(s);
		return;
	}
	snprintf(s->key, sizeof(s->key), "%s", key);
	s->max_total = max_total;
	_cleanup_json_ json_object *obj = json_object_new_object();
	json_object_object_add(obj, "format", json_object_new_string(ENTRY_FORMAT));
	json_object_object_add(obj, "answer",
	                       json_object_new_string_len(entry->answer, (int)entry->len));
	if (entry->finish_reason[0])
		json_object_object_add(obj, "finishReason",
		                       json_object_new_string(entry->finish_reason));
	json_object_object_add(obj, "promptTokens", json_object_new_int64(entry->prompt_tokens));
	json_object_object_add(obj, "completionTokens",
	                       json_object_new_int64(entry->completion_tokens));
	json_object_object_add(obj, "storedAt", json_object_new_int64((int64_t)time(NULL)));
	const char *text = json_compact(obj);
	s->text = text ? strdup(text) : NULL;
	if (!s->text || submit(store_run, s) < 0) {
		free(s->text);
		free(s);
	}
}

int llm_cache_clear(const char *dir, size_t *ret_files, uint64_t *ret_bytes)
{
	*ret_files = 0;
	*ret_bytes = 0;
	return sweep(dir, 0, true, ret_files, ret_bytes);
}
