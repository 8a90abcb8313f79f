/* ts_alloc.c: tree-sitter's allocator in kiln. A parse allocates and frees
 * about one small block per byte of code (530 for 565 bytes of Python:
 * nodes, stack entries, child arrays), and its tree is freed whole at the
 * end of each check. glibc keeps 7 free blocks of a size per thread; the
 * rest go the slow way through its bins (11% of a parse's instructions).
 * So each thread keeps its own free list per size class (16 to 256 bytes)
 * in front of malloc, holding at most VAL_TS_CACHE_MAX blocks in all (a
 * cap: 1-2 MB at worst), and frees the rest. Blocks are malloc's own, so
 * any block can be freed on any thread and realloc() takes them as they
 * are; a thread's list goes back to malloc when the thread (or the
 * process) ends. Under
 * AddressSanitizer a cached block stays poisoned until it is handed out
 * again, so a use after free is still caught. */
#include "validate/internal.h"

#include <malloc.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#define POISON(p, n)   ASAN_POISON_MEMORY_REGION((p), (n))
#define UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION((p), (n))
#else
#define POISON(p, n)   ((void)(p), (void)(n))
#define UNPOISON(p, n) ((void)(p), (void)(n))
#endif

void ts_set_allocator(void *(*new_malloc)(size_t), void *(*new_calloc)(size_t, size_t),
                      void *(*new_realloc)(void *, size_t), void (*new_free)(void *));

#define CLASS_BYTES 16u
#define NCLASSES    16u /* 16, 32, ... 256 bytes */

struct ts_cache {
	void *head[NCLASSES]; /* each free block's first word links the next */
	size_t count;         /* blocks held, every class */
};

static __thread struct ts_cache cache;
static pthread_key_t cache_key;
static pthread_once_t cache_once = PTHREAD_ONCE_INIT;

/* The class that serves a request of n bytes (1..256), and the class a
 * block of usable size u can serve (16..271): the largest that fits. */
static inline unsigned class_for_request(size_t n)
{
	return (unsigned)((n - 1) / CLASS_BYTES);
}

static void cache_flush(void *arg)
{
	struct ts_cache *c = arg;
	for (unsigned i = 0; i < NCLASSES; i++) {
		while (c->head[i]) {
			void *p = c->head[i];
			UNPOISON(p, sizeof(void *));
			c->head[i] = *(void **)p;
			UNPOISON(p, (i + 1) * CLASS_BYTES);
			free(p);
		}
	}
	c->count = 0;
}

static void *alloc_fail(size_t n)
{
	/* What tree-sitter's own allocator does: it cannot take a NULL. */
	fprintf(stderr, "tree-sitter failed to allocate %zu bytes\n", n);
	abort();
}

static void *ts_cache_malloc(size_t n)
{
	if (n == 0 || n > NCLASSES * CLASS_BYTES) {
		void *p = malloc(n);
		return p || n == 0 ? p : alloc_fail(n);
	}
	unsigned k = class_for_request(n);
	void *p = cache.head[k];
	if (p) {
		UNPOISON(p, (k + 1) * CLASS_BYTES);
		cache.head[k] = *(void **)p;
		cache.count--;
		return p;
	}
	/* The class's whole size, so that the block serves the class again. */
	p = malloc((k + 1) * CLASS_BYTES);
	return p ? p : alloc_fail(n);
}

static void *ts_cache_calloc(size_t count, size_t size)
{
	size_t n;
	if (__builtin_mul_overflow(count, size, &n))
		return alloc_fail(SIZE_MAX);
	void *p = ts_cache_malloc(n);
	if (p && n)
		memset(p, 0, n);
	return p;
}

static void *ts_cache_realloc(void *p, size_t n)
{
	void *q = realloc(p, n);
	return q || n == 0 ? q : alloc_fail(n);
}

static void ts_cache_free(void *p)
{
	if (!p)
		return;
	size_t u = malloc_usable_size(p);
	if (u < CLASS_BYTES || u >= (NCLASSES + 1) * CLASS_BYTES ||
	    cache.count >= VAL_TS_CACHE_MAX) {
		free(p);
		return;
	}
	unsigned k = (unsigned)(u / CLASS_BYTES) - 1;
	if (k >= NCLASSES)
		k = NCLASSES - 1;
	/* The first push on a thread registers its list for the thread's end. */
	if (cache.count == 0 && !pthread_getspecific(cache_key))
		pthread_setspecific(cache_key, &cache);
	*(void **)p = cache.head[k];
	cache.head[k] = p;
	cache.count++;
	POISON(p, (k + 1) * CLASS_BYTES);
}

static void flush_at_exit(void)
{
	cache_flush(&cache);
}

static void install(void)
{
	if (pthread_key_create(&cache_key, cache_flush) != 0)
		return; /* no cache: tree-sitter keeps malloc */
	/* The thread that exits the process gives its blocks back too, so
	 * that LeakSanitizer sees none held. */
	atexit(flush_at_exit);
	ts_set_allocator(ts_cache_malloc, ts_cache_calloc, ts_cache_realloc, ts_cache_free);
}

void val_ts_alloc_install(void)
{
	pthread_once(&cache_once, install);
}

size_t val_ts_alloc_cached(void)
{
	return cache.count;
}

void val_ts_alloc_flush(void)
{
	cache_flush(&cache);
}
