/* reap.h: what outlives a box on the server's side, taken off the
 * event loop: its pid 1 reaped when it is gone, the last fd of its
 * workspace closed and its cgroup removed, on job threads (job.h). */
#pragma once

#include <stdbool.h>

struct sbx_base;
struct sbx_cgroup;

/* Take pidfd, a pid 1 that has reported its program's end (everything
 * else in its box is dead) and is exiting, and its box's cgroup (or
 * NULL): reap it when it is gone, then remove the cgroup (off the loop).
 * Without a loop, wait here. */
void sbx_reap_later(struct sbx_base *b, int pidfd, struct sbx_cgroup *cg);
/* Close fd off the loop's thread: the last fd of a box's workspace, whose
 * close frees its tmpfs (750 MiB took 100 ms here). b may be NULL: now. */
void sbx_close_later(struct sbx_base *b, int fd);
/* Remove a cgroup whose processes are all dead or dying, off the loop's
 * thread (it may take up to a second). b may be NULL: now. */
void sbx_cgroup_free_later(struct sbx_base *b, struct sbx_cgroup *cg);
/* Kill every pid 1 still being reaped and wait for it (sbx_base_release). */
void sbx_reap_stop(struct sbx_base *b);

/* SIGKILL pid 1 and wait for it: every process of the box is gone when
 * this returns. Closes the pidfd. Pid 1 of a run from a zygote is not the
 * server's child: then the wait is for its pidfd to report its end. */
void sbx_pidfd_kill(int pidfd);

/* Reap the process behind pidfd if it has exited, without waiting: true
 * when it is gone (reaped here, or by someone's waitpid(-1) before us:
 * ECHILD), false while it still runs. For a pidfd the loop reported
 * readable. */
bool sbx_pidfd_reap(int pidfd);
