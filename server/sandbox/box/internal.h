/* box/internal.h: what the files of the child's side of clone() share:
 * child.c (pid 1, the checklist), child_mount.c (mount primitives),
 * child_workspace.c (the workspace's overlay and masks),
 * child_lockdown.c (capabilities, Landlock, the namespace limits) and
 * child_program.c (the program's process). Every function here runs
 * between clone() and execve(), under pid1.h's rules: system calls on
 * prepared buffers, no malloc, no stdio, no lock. Not for the rest of
 * the server: child.h and pid1.h are the API. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "sandbox/box/pid1.h"

/* Fds of pid 1 after it has tidied its table. */
enum {
	FD_STATUS = 3,
	FD_SYNC,
	FD_OUT,
	FD_ERR,
	FD_IN, /* only when the plan has an in_fd */
	FD_FIRST_FREE,
	/* Pid 1's own, at fixed numbers so their paths are constants. */
	FD_WS_LOWER = 40, /* the host workspace (O_PATH), until the overlay is made */
	FD_MASK = 41,     /* a read-only tmpfs holding the masks "d" and "f" */
	FD_MAXMNT = 42,   /* user.max_mnt_namespaces, until the masks are made */
};
#define WS_LOWER_PATH "/proc/self/fd/40"

/* What the program's process starts from. It shares pid 1's memory
 * until its execve (clone(CLONE_VM), as posix_spawn does: no copy of the
 * server's page tables to make, nor to tear down at the execve), but
 * never runs at the same time as pid 1 but for a system call's entry or
 * exit: pid 1 waits for it at each step (see child_start_program). So the two
 * share this struct, GO's buffers, and glibc's errno without a race.
 * With a run's box (await_go) it is prepared before READY and waits on
 * run_fd for the run, which pid 1 puts in rlimits, argv and envp before
 * waking it; otherwise (a worker's, a zygote's) they are the plan's. */
struct prog_args {
	const struct sbx_plan *p;
	int pfd;    /* the exec report pipe */
	int run_fd; /* the prepared process's end of the run socket, or -1 */
	const struct sbx_rlimit *rlimits;
	size_t nrlimits;
	char *const *argv;
	char *const *envp;
};

/* child_mount.c: the mount primitives. */

/* openat2() of path under rootfd, with no link followed, O_CLOEXEC. */
int child_open_beneath(int rootfd, const char *path, int flags);
/* Attach mount fd mfd on path under the new root. */
int child_attach(int rootfd, int mfd, const char *path);
/* A new filesystem instance (fsopen/fsmount): returns the mount fd. */
int child_new_fs(const char *type, const char *size, const char *inodes, const char *mode,
                 unsigned attrs);

/* child_workspace.c: the workspace's mounts and masks. */

/* A run's box: the masks at FD_MASK, attached at the new root's "proc"
 * before /proc's mount covers it (so that older kernels clone them). */
int child_make_masks(int rootfd);
/* A run's box: the overlay of the host folder at its own path, its
 * upper layer's fd in *ret_upperfd. */
int child_mount_workspace(int rootfd, const struct sbx_plan *p, int *ret_upperfd);
/* A zygote's box: the host folder read-only at SBX_ZYGOTE_WS_LOWER. */
int child_hold_workspace(int rootfd, const struct sbx_plan *p);
/* Mask every entry the server's list (listfd, hide.h) names. */
int child_hide_listed(const struct sbx_plan *p, int listfd);
/* Does name match one of the plan's hide patterns? */
bool child_hidden_name(const struct sbx_plan *p, const char *name);

/* child_watch.c: the live masks (names to hide made during the run). */

/* Fork the watcher, locked down as the calling program's process is so
 * far (after Landlock, before its capabilities are cleared), and keep
 * the socket to it. */
int child_start_watch(const struct sbx_plan *p);
/* Add the filter that asks the watcher before each open, rename and
 * link, and hand it the listener. After the deny filter. */
int child_watch_listen(void);

/* child_lockdown.c: what no process of the box gets back. */

/* Forbid new namespaces in the box (the mount namespaces' limit left
 * open at FD_MAXMNT when keep_mnt), and make its inotify quotas small. */
void child_forbid_namespaces(bool keep_mnt);
/* Close the mount namespaces' limit kept open by the above: 0 now. */
void child_forbid_mnt_namespaces(void);
/* Effective, permitted and inheritable capability sets: empty. */
int child_clear_caps(void);
/* Locked securebits, bounding and ambient sets emptied. */
int child_lock_caps(void);
/* The program's Landlock rules (abi 0: none), ws the workspace or NULL. */
int child_apply_landlock(int abi, const char *ws);

/* child_program.c: the program's process. */

/* Start program() on its own stack in pid 1's memory (see there). */
pid_t child_start_program(struct prog_args *a);
