/* box.h: a built box, for runs (run/), the warm-box cache (warm.c) and
 * workers (worker.c) alike: clone3() into fresh namespaces with the plan,
 * the id maps, the release of the child, the pipes or socket of its
 * program, its cgroup; what pid 1 reports on the status socket; its end.
 * And, when building fails, a sentence on what to do. A box serves one
 * run or one worker: a run owns its box, the cache holds boxes built
 * ahead of their run. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "sandbox/box/child.h"

struct sbx_base;
struct sbx_cgroup;
struct sbx_plan_owned;

/* A box: pid 1 and what the server holds of it. */
struct sbx_box {
	pid_t pid;
	int pidfd;     /* close-on-exec; readable once pid 1 has ended */
	int status_fd; /* close-on-exec; SBX_MSG_* arrive there */
	/* SBX_BOX_PIPES: the read ends of the program's stdout and stderr
	 * (non-blocking; the owner sets -1 at EOF). SBX_BOX_SOCKET: fds[0] is
	 * the server's end of the program's stdin and stdout, fds[1] -1.
	 * SBX_BOX_SESSION: the pipes, as a run's. */
	int fds[2];
	/* SBX_BOX_SESSION: the server's end of the program's stdin, a
	 * socket (the session driver's channel, session.h); else -1. */
	int ctl_fd;
	int work_fd;           /* /work, once READY has been read; else -1 */
	int upper_fd;          /* the workspace's upper layer (SBX_MSG_UPPER); else -1 */
	struct sbx_cgroup *cg; /* its cgroup, or NULL */
	char *layout;          /* sbx_plan_layout() of its plan */
	/* What pid 1 reported (sbx_box_read_status), and whether it has
	 * been reaped (by its owner). */
	bool reaped, failed, have_exit;
	int fail_step, fail_err;
	struct sbx_msg exit_msg;
};

enum sbx_box_io {
	SBX_BOX_PIPES,   /* a run's: stdout and stderr pipes, stdin /dev/null, a cgroup */
	SBX_BOX_SOCKET,  /* a worker's: one socket as stdin and stdout, stderr /dev/null */
	SBX_BOX_SESSION, /* a session's: a run's pipes and cgroup, and a socket as stdin */
	SBX_BOX_ZYGOTE,  /* a zygote's: a worker's, with a SOCK_SEQPACKET socket */
};

/* Nothing built: every fd -1. */
void sbx_box_init(struct sbx_box *b);

/* Size a box's stdout pipe (by its read end) as every box's is: a built
 * box's (sbx_box_build) and a box from the zygote's (zygote_spare.c). */
void sbx_box_size_stdout(int read_end);

/* Build the box po describes into b (from sbx_box_init): its program's
 * plumbing, its cgroup (SBX_BOX_PIPES, when the sandbox has a cgroup
 * root), the clone. On failure nothing is left running, *ret_step is the
 * step that failed (SBX_STEP_NONE: clone3 itself) and the result is its
 * -errno, or *ret_step is -1 and err says what failed before the clone. */
int sbx_box_build(struct sbx_base *s, struct sbx_plan_owned *po, enum sbx_box_io io,
                  struct sbx_box *b, int *ret_step, char *err, size_t errsz);

/* Read every message waiting on the status socket into b (READY brings
 * work_fd, FAIL the step, EXIT the program's status); true at its end. */
bool sbx_box_read_status(struct sbx_box *b);

/* The owner is done with b: SIGKILL pid 1 and wait unless it was reaped
 * (every process of the box is gone on return), close every fd; its
 * cgroup and workspace go off the loop (host.h). b is as after
 * sbx_box_init. The owner unwatches the fds first. */
void sbx_box_release(struct sbx_base *s, struct sbx_box *b);

/* Pid 1 has reported its program's end, or the box is dropped unused:
 * hand pid 1 and the cgroup to the sandbox, which reaps it without
 * waiting here (sbx_reap_later). */
void sbx_box_reap_later(struct sbx_base *s, struct sbx_box *b);

/* Clone pid 1 of a new box that walks plan. The caller sets the plan's
 * out_fd, err_fd and in_fd (and closes its copies afterwards); this sets
 * the id maps and the status and sync fds. cgroup_fd: a cgroup v2
 * directory the box is born in (CLONE_INTO_CGROUP), or -1. Safe while
 * other threads run: the child allocates nothing. On failure nothing is
 * left running and *ret_step says where it failed (SBX_STEP_NONE: clone3
 * itself). */
int sbx_box_clone(const struct sbx_base *s, struct sbx_plan *plan, int cgroup_fd,
                  struct sbx_box *ret, int *ret_step);
/* (sbx_box_clone sets ret's pid, pidfd and status_fd only.) */

/* What to do about a box that failed at step with errno err: a sentence
 * starting with a space, or "" when there is nothing to add, in buf (n
 * bytes). For the user namespace it names the setting that refused it and
 * the exact fix (sbx_userns_cause). */
void sbx_failure_hint(int step, int err, char *buf, size_t n);

/* Why the kernel refused a user namespace (refused: clone or unshare said
 * err) or left one powerless (a later step got err), read from the
 * settings that do that (kernel.unprivileged_userns_clone,
 * user.max_user_namespaces, AppArmor's
 * kernel.apparmor_restrict_unprivileged_userns, a container), and the
 * exact fix: the one reading a failed box and kiln doctor share. */
struct sbx_userns_cause {
	char why[224];
	char fix[256];
};
void sbx_userns_cause(bool refused, int err, struct sbx_userns_cause *ret);

/* GO for box b: the program at code_path (under the new root, no
 * leading '/'), argv, po's environment, the rlimits rl, code as the
 * file's contents; with a workspace, hide_fd is the list of what to
 * hide there (hide.h; the caller's to close), else -1. */
int sbx_box_send_go(struct sbx_box *b, const struct sbx_plan_owned *po, const char *code_path,
                    char *const *argv, const struct sbx_rlimit *rl, size_t nrl, const char *code,
                    int hide_fd);

/* sbx_sealed_memfd of the code a box's program runs, handed over with GO
 * (run/run_start.c) or to a zygote (zygote.c). */
int sbx_code_memfd(const char *code, size_t len);
