/* box.h: starting a box, for runs (run.c) and workers (worker.c) alike:
 * clone3() into fresh namespaces with the plan, the id maps, the release
 * of the child; and, when that fails, a sentence on what to do. */
#pragma once

#include <sys/types.h>

#include "sandbox/child.h"

struct sandbox;

/* A box that is being built: its pid 1 and the server's end of the
 * status socket (SBX_MSG_* arrive there). */
struct sbx_box {
	pid_t pid;
	int pidfd;     /* close-on-exec; readable once pid 1 has ended */
	int status_fd; /* close-on-exec */
};

/* Clone pid 1 of a new box that walks plan. The caller sets the plan's
 * out_fd, err_fd and in_fd (and closes its copies afterwards); this sets
 * the id maps and the status and sync fds. cgroup_fd: a cgroup v2
 * directory the box is born in (CLONE_INTO_CGROUP), or -1. Safe while
 * other threads run: the child allocates nothing. On failure nothing is
 * left running and *ret_step says where it failed (SBX_STEP_NONE: clone3
 * itself). */
int sbx_box_clone(const struct sandbox *s, struct sbx_plan *plan, int cgroup_fd,
                  struct sbx_box *ret, int *ret_step);

/* SIGKILL pid 1 and wait for it: every process of the box is gone when
 * this returns. Closes the pidfd. */
void sbx_box_kill(int pidfd);

/* What to do about a box that failed at step with errno err: a sentence
 * starting with a space, or "" when there is nothing to add. */
const char *sbx_failure_hint(int step, int err);
