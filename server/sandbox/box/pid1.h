/* pid1.h: what the server and a box's pid 1 share, the contract of
 * child.c (whose calls are in child.h): the plan it walks, the messages
 * on its status socket, the steps it reports, the lists it reads.
 *
 * What happens between clone() and execve(): the parent builds a
 * struct sbx_plan (every path, buffer, argv and filter prepared in
 * advance); the child only walks it with system calls. Nothing in the
 * child allocates, takes a lock or touches stdio, so cloning is safe even
 * when other threads (libcurl's resolver) exist in the server.
 *
 * Processes: the clone()d child becomes pid 1 of the new pid namespace
 * (the "reaper"): it finishes the namespaces, builds the new root, sends
 * the workspace fd to the parent, forks the program (pid 2) and then only
 * reaps, forwards the parent's signals and reports the exit status. Its
 * death takes every process of the box with it. */
#pragma once

#include <linux/filter.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/resource.h>
#include <sys/uio.h>
#include <sys/types.h>

/* The uid and gid the code runs as inside the box (mapped to the server's
 * uid, or to nobody when the server is root). */
#define SBX_INNER_ID 1000
/* Host uid/gid the box maps to when the server runs as root. */
#define SBX_ROOT_MAPS_TO 65534

/* Where the code's writable workspace is mounted inside the box; the
 * validator's file rules treat it as inside by default. */
#define SBX_WORKSPACE "/work"

enum sbx_bind_flags {
	SBX_BIND_FILE = 1 << 0,     /* the source is a file, not a directory */
	SBX_BIND_DEV = 1 << 1,      /* a device node: keep device access */
	SBX_BIND_OPTIONAL = 1 << 2, /* skip when the source does not exist */
};

struct sbx_bind {
	const char *src; /* absolute host path */
	const char *dst; /* path under the new root, no leading '/' */
	unsigned flags;
};

struct sbx_symlink {
	const char *target;
	const char *path; /* under the new root, no leading '/' */
};

struct sbx_file {
	const char *path; /* under the new root, no leading '/' */
	const char *data;
	size_t len;
	mode_t mode;
};

struct sbx_rlimit {
	int resource;
	struct rlimit lim;
};

#define SBX_MAX_BINDS   48
#define SBX_MAX_LINKS   24
#define SBX_MAX_DIRS    32
#define SBX_MAX_FILES   8
#define SBX_MAX_RLIMITS 16

/* The fixed quotas of every box (plan.c, child.c): signals queued at
 * once, locked memory, inotify instances and watches (the filter refuses
 * inotify; these hold if it did not). */
#define SBX_SIGPENDING        128
#define SBX_MEMLOCK_BYTES     (64 * 1024)
#define SBX_INOTIFY_INSTANCES "8\n"
#define SBX_INOTIFY_WATCHES   "1024\n"

/* Where a zygote's box holds the workspace folder (under the new root). */
#define SBX_ZYGOTE_WS_LOWER "kiln-ws"

/* The /proc files every box covers with /dev/null (child.c, and the
 * zygote's runs through zygote.c): the keys the box's uid may view on the
 * host, and the host kernel's boot arguments. Relative to the new root. */
#define SBX_PROC_HIDDEN                                                                            \
	{                                                                                          \
		"proc/cmdline", "proc/keys", "proc/key-users"                                      \
	}

/* Everything the child needs, prepared by the parent. Pointers point into
 * the parent's heap, which the child sees as its own copy after clone. */
struct sbx_plan {
	bool as_root; /* the server is root: drop supplementary groups */
	/* Unprivileged: the child writes its own id maps (one line mapping
	 * its own uid is all the kernel allows it, and all it needs), which
	 * saves a round trip to the parent. As root the parent writes them,
	 * to map to nobody, and releases the child through sync_fd. */
	bool self_map;
	char uid_map[32];
	char gid_map[32];
	int landlock_abi; /* 0: no Landlock */

	char root_opts[64];      /* tmpfs options of the (later read-only) root */
	char scratch_size[32];   /* tmpfs size of /work and of /tmp, bytes */
	char scratch_inodes[32]; /* their nr_inodes: one per page of the size */

	const char *dirs[SBX_MAX_DIRS]; /* created under the new root, in order */
	size_t ndirs;
	struct sbx_symlink links[SBX_MAX_LINKS];
	size_t nlinks;
	struct sbx_bind binds[SBX_MAX_BINDS];
	size_t nbinds;
	struct sbx_file files[SBX_MAX_FILES];
	size_t nfiles;
	struct sbx_rlimit rlimits[SBX_MAX_RLIMITS]; /* with await_go, GO's instead */
	size_t nrlimits;
	/* A run's box is built before its program is known: with await_go,
	 * pid 1 sends READY and then waits on the status socket for GO
	 * (struct sbx_go), which brings the program (code path, argv,
	 * environment), the code (a memfd, written read-only) and the
	 * rlimits. That is what lets the server build a box ahead of a run,
	 * and one box serve any language with the same layout (a warm box,
	 * see run.c). Otherwise the program is argv/envp and its code is in
	 * files (a worker's). */
	bool await_go;
	bool report_exec; /* send SBX_MSG_EXEC (a worker's owner waits for it) */
	/* A zygote's box (zygote.h): its program makes a box per run inside
	 * this one, so the namespace limits stay as they are, /proc is
	 * mounted writable (the children write their id maps there) and
	 * without the covers on its key files (the kernel mounts a new
	 * /proc in a nested namespace only where one is fully visible), and
	 * the program gets no Landlock (a Landlocked process may not
	 * mount). Its seccomp filter is the zygote's (filter.h). Each run's
	 * process applies all three itself before any user code. With the
	 * workspace, it gets no overlay: the folder read-only at
	 * SBX_ZYGOTE_WS_LOWER and its path as empty directories (each run's
	 * pid 1 mounts its own overlay there, zygote.py). */
	bool zygote;

	/* The workspace: the host folder ws_host, shown at the same path
	 * (ws_dst is it under the new root, no leading '/') as an overlay
	 * whose lower layer is the folder and whose upper layer, where every
	 * write lands, is a tmpfs of scratch_size that pid 1 hands the
	 * server (SBX_MSG_UPPER) for the diff at the end. After GO, pid 1
	 * masks each entry whose name matches one of hide (child.c). The
	 * program starts in it. NULL ws_host: no workspace (cwd /work). */
	const char *ws_host;
	const char *ws_dst;
	/* As root (the box runs as nobody), ws_lower_fd is a detached,
	 * read-only mount of ws_host made by the server, idmapped so that
	 * the folder owner's files are nobody's in the box (box.c,
	 * ws_idmapped_mount): pid 1 attaches it instead of opening
	 * ws_host. Set only for the clone; false: pid 1 opens ws_host. */
	bool ws_idmapped;
	int ws_lower_fd;
	char *const *hide;
	size_t nhide;

	char *const *argv; /* argv[0] is an absolute path inside the box */
	char *const *envp;
	const struct sock_fprog *seccomp;

	/* The parent's ends are closed in the child; these are the child's. */
	int status_fd; /* SOCK_SEQPACKET to the parent */
	int sync_fd;   /* read end: one byte once the id maps are written */
	int out_fd;    /* write end of the stdout pipe */
	int err_fd;    /* write end of the stderr pipe */
	int in_fd;     /* the program's stdin; -1 for /dev/null (a run) */
};

/* Messages on the status socket, child to parent. */
enum sbx_msg_type {
	SBX_MSG_READY = 1, /* the box is built; carries the /work fd */
	SBX_MSG_FAIL,      /* setup failed at step with errno err */
	SBX_MSG_EXIT,      /* the program ended: wait status and rusage */
	SBX_MSG_EXEC,      /* the program's execve succeeded (plan.report_exec) */
	SBX_MSG_UPPER,     /* before READY: the workspace's upper layer (a dir fd) */
};

/* At most this many entries of the workspace are masked (the server's
 * list, hide.h): past that, the run fails (closed) rather than show
 * what it could not hide. Directories deeper than SBX_HIDE_TREE_DEPTH
 * (the server's walk) are masked whole. What pid 1 walks itself (another
 * file system mounted in the workspace) is checked for at most
 * SBX_HIDE_WALK_MAX_ENTRIES entries, SBX_HIDE_DEPTH deep, and the run
 * fails past the first; deeper directories are masked whole. */
#define SBX_HIDE_MAX_MASKS        2048
#define SBX_HIDE_TREE_DEPTH       64
#define SBX_HIDE_WALK_MAX_ENTRIES 100000
#define SBX_HIDE_DEPTH            24

/* The records of a list, each "<kind><path>\0" with path relative to
 * the workspace (no leading '/'): */
#define SBX_HIDE_FILE 'F' /* mask a file */
#define SBX_HIDE_DIR  'D' /* mask a directory whole */
#define SBX_HIDE_WALK 'W' /* another filesystem mounted there: pid 1 walks it */

struct sbx_msg {
	int type;
	int step;
	int err;
	int wstatus;
	struct rusage ru;
};

/* The one message from the server to pid 1, when the plan has await_go:
 * start the program. The header is followed by strings_len bytes of
 * NUL-terminated strings: the code's path under the new root, argc
 * arguments (the first an absolute path inside the box), envc
 * environment entries. Carries a memfd with the code (SCM_RIGHTS). EOF
 * instead means the box is not needed: pid 1 exits. */
#define SBX_GO_ARGS    32
#define SBX_GO_ENV     64
#define SBX_GO_STRINGS (64 * 1024)
struct sbx_go {
	uint64_t code_len;
	/* 1: a second fd, after the code's, is the list of what to hide in
	 * the workspace (hide.h); a box with a workspace needs it. */
	uint32_t hide;
	uint32_t pad;
	struct sbx_rlimit rlimits[SBX_MAX_RLIMITS];
	uint32_t nrlimits;
	uint32_t argc;
	uint32_t envc;
	uint32_t strings_len;
};

/* Setup steps, so that a failure can say which one failed. */
enum sbx_step {
	SBX_STEP_NONE,
	SBX_STEP_SYNC,
	SBX_STEP_IDS,
	SBX_STEP_FDS,
	SBX_STEP_CMDLINE,
	SBX_STEP_PRIVATE,
	SBX_STEP_ROOT_TMPFS,
	SBX_STEP_MKDIR,
	SBX_STEP_SYMLINK,
	SBX_STEP_BIND,
	SBX_STEP_FILE,
	SBX_STEP_PROC,
	SBX_STEP_SCRATCH,
	SBX_STEP_WORKSPACE,
	SBX_STEP_HIDE,
	SBX_STEP_LOOPBACK,
	SBX_STEP_HOSTNAME,
	SBX_STEP_PIVOT,
	SBX_STEP_READONLY,
	SBX_STEP_REPORT,
	SBX_STEP_CODE,
	SBX_STEP_FORK,
	SBX_STEP_SESSION,
	SBX_STEP_STDIO,
	SBX_STEP_CHDIR,
	SBX_STEP_KEYRING,
	SBX_STEP_RLIMIT,
	SBX_STEP_CAPS,
	SBX_STEP_NO_NEW_PRIVS,
	SBX_STEP_LANDLOCK,
	SBX_STEP_SECCOMP,
	SBX_STEP_EXEC,
	SBX_STEP_CGROUP, /* a zygote's spare joining its cgroup (zygote.c) */
	SBX_STEP_CPUS,   /* a prepared process's CPU set, around its wait (child_program.c) */
	SBX_STEP_WATCH,  /* the live masks' watcher (child_watch.c) */
};
