/* util.h: ownership helpers (cleanup attributes, steal_pointer) and tiny
 * macros every module uses. Header-only on purpose: these are idioms, not
 * a library. */
#pragma once

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <unistd.h>

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

#define _unused_ __attribute__((unused))

static inline void cleanup_freep(void *p)
{
	free(*(void **)p);
}

static inline void cleanup_closep(int *fd)
{
	if (*fd >= 0) {
		int saved = errno;
		close(*fd);
		errno = saved;
	}
}

/* _cleanup_free_ char *s = ...; frees s when it goes out of scope. */
#define _cleanup_free_ __attribute__((cleanup(cleanup_freep)))
/* _cleanup_close_ int fd = -1; closes fd (when >= 0) at scope exit. */
#define _cleanup_close_ __attribute__((cleanup(cleanup_closep)))

/* Hand a cleanup-owned pointer on: returns it and leaves NULL behind. */
static inline void *steal_pointer_impl(void *pp)
{
	void **p = pp;
	void *v = *p;
	*p = NULL;
	return v;
}
#define steal_pointer(pp) ((__typeof__(*(pp)))steal_pointer_impl(pp))

static inline int steal_fd(int *fd)
{
	int v = *fd;
	*fd = -1;
	return v;
}

/* Returns -errno of the last failed libc call, never 0. */
/* An environment variable name a config may set: a letter or '_' first,
 * then letters, digits and '_'. */
static inline bool env_name_valid(const char *k)
{
	if (!*k || (*k >= '0' && *k <= '9'))
		return false;
	for (; *k; k++)
		if (!((*k >= 'A' && *k <= 'Z') || (*k >= 'a' && *k <= 'z') ||
		      (*k >= '0' && *k <= '9') || *k == '_'))
			return false;
	return true;
}

static inline int neg_errno(void)
{
	return errno > 0 ? -errno : -EIO;
}
