/* worker.h: a long-lived program in a box of its own, such as the
 * validator's CPython. The box is a run's (plan.c, child.c: namespaces, a
 * new root, seccomp, Landlock, no network, a run's CPU, memory, process
 * and file limits), but it has no wall clock, since it lives as long as
 * its owner wants, and it is not driven by the event loop: its stdin and
 * stdout are one socket the owner talks over synchronously, with its own
 * deadlines. Its stderr goes to /dev/null. */
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct sbx_base;
struct sbx_worker;

struct sbx_worker_spec {
	/* NULL-terminated; argv[0] is an absolute path on the host (it must
	 * be installed; one outside /usr brings its prefix along, as a
	 * run's interpreter does); "{file}" becomes /code/FILE. */
	const char *const *argv;
	const char *file; /* a file name, e.g. "worker.py" */
	const char *data; /* its contents, NUL-terminated */
	int start_ms;     /* how long building the box and exec may take */
	/* The box's limits (NULL: sandbox.limits' built-in defaults). */
	const struct sbx_limits *limits;
};

/* Build the box and start the program; returns once its execve has
 * succeeded. s may be NULL: the box needs only the process's host facts
 * (host.h), so the validator needs no sandbox instance of its own, and
 * may call this from its own thread. -ENOENT (argv[0] is not installed), -ETIMEDOUT, -ENOMEM or
 * the errno of the step that failed, each with a sentence in err (which
 * names the step and what to do). Nothing is left running on failure.
 * Safe while other threads run (see child.h). s: the server's base (its
 * cgroups and reaping; its runs are not involved), or NULL. */
int sbx_worker_spawn(struct sbx_base *s, const struct sbx_worker_spec *spec,
                     struct sbx_worker **ret, char *err, size_t errsz);

/* Kill the box and wait: every process of it is gone when this returns. */
void sbx_worker_free(struct sbx_worker *w);

/* The server's end of the program's stdin and stdout: a non-blocking,
 * close-on-exec SOCK_STREAM socket (send with MSG_NOSIGNAL: a dead
 * program is EPIPE, not SIGPIPE). EOF when the program has ended. */
int sbx_worker_fd(const struct sbx_worker *w);

/* Read what the program writes into buf (n bytes, NUL-terminated)
 * until it ends, buf is full or deadline_ms (loop_now_ms()) passes:
 * the bytes read. Blocks: never on the loop. */
size_t sbx_worker_read(const struct sbx_worker *w, char *buf, size_t n, uint64_t deadline_ms);

/* The host pid of the box's pid 1 (for logs). */
pid_t sbx_worker_pid(const struct sbx_worker *w);
