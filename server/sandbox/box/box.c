/* box.c: a built box (see box.h). The clone, the id maps, the plumbing,
 * the status messages and the end are the same for a run, a warm box and
 * a worker; what the box then runs, and how the server talks to it, is
 * theirs. */
#include "sandbox/box/box.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/mount.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/buf.h"
#include "core/log.h"
#include "core/util.h"
#include "sandbox/host/cgroup.h"
#include "sandbox/box/plan.h"
#include "sandbox/host/host.h"
#include "sandbox/host/base.h"
#include "sandbox/host/reap.h"
#include "sandbox/host/cgroup_ahead.h"

#ifndef CLONE_INTO_CGROUP
#define CLONE_INTO_CGROUP 0x200000000ULL
#endif

/* The size of a box's stdout pipe (sbx_box_size_stdout). */
#define BOX_PIPE_BYTES (256 * 1024)

/* A larger stdout pipe: 256 KiB, one notification's worth
 * (run_private.h's RUN_COALESCE_BYTES), so that the server takes what a
 * program wrote in one read or one relayed message and the program blocks
 * less often than with the default 64 KiB. Not 1 MiB: the pages of a pipe
 * that large fall out of cache between the program's write and the
 * server's and the client's reads, and every stage then spends more CPU
 * per byte (docs/performance.md, "Output at half of cat"). Best effort:
 * past the user's pipe budget the kernel refuses, and the default works
 * too. */
void sbx_box_size_stdout(int read_end)
{
	fcntl(read_end, F_SETPIPE_SZ, BOX_PIPE_BYTES);
}

struct clone_args_k {
	uint64_t flags, pidfd, child_tid, parent_tid, exit_signal, stack, stack_size, tls, set_tid,
	    set_tid_size, cgroup;
};

static int write_proc(pid_t pid, const char *file, const char *text)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, file);
	_cleanup_close_ int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ssize_t n = write(fd, text, strlen(text));
	if (n < 0)
		return -errno;
	return n == (ssize_t)strlen(text) ? 0 : -EIO;
}

/* The box's single uid and gid: the server's own, or nobody when the
 * server is root (the code is never root on the host). */
static int write_id_maps(const struct sbx_base *s, pid_t pid)
{
	uid_t out_uid = s->host->euid == 0 ? SBX_ROOT_MAPS_TO : s->host->euid;
	gid_t out_gid = s->host->euid == 0 ? SBX_ROOT_MAPS_TO : s->host->egid;
	char map[64];
	int r;
	/* Unprivileged writers must deny setgroups before writing gid_map.
	 * As root the child first drops its groups itself, then has no
	 * capability left to call setgroups again. */
	if (s->host->euid != 0 && (r = write_proc(pid, "setgroups", "deny")) < 0)
		return r;
	snprintf(map, sizeof(map), "%d %u 1\n", SBX_INNER_ID, (unsigned)out_uid);
	if ((r = write_proc(pid, "uid_map", map)) < 0)
		return r;
	snprintf(map, sizeof(map), "%d %u 1\n", SBX_INNER_ID, (unsigned)out_gid);
	return write_proc(pid, "gid_map", map);
}

/* As root the box runs as nobody, who owns nothing in the workspace: its
 * code could create and delete files there (the overlay's upper layer is
 * its own) but not change one (a copy-up needs write permission on the
 * host's file). So a root server shows the folder through an idmapped
 * mount (mount_setattr MOUNT_ATTR_IDMAP): files of the folder's owner
 * are nobody's in the box, read-only, and the box's code can change in
 * its layer what the owner could. Files of other owners keep their
 * owner (others' bits apply). The user namespace that carries the
 * mapping is made once per owner and kept; a file system that cannot
 * be idmapped leaves the box as before (said once in the log). The
 * bench's peer run goes without it (KILN_BENCH_NO_IDMAP, host.h). */
static pthread_mutex_t idmap_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
	int fd; /* the user namespace, or -1 */
	uid_t uid;
	gid_t gid;
	bool warned;
} idmap = {.fd = -1};

/* A user namespace whose only ids are uid and gid, seen outside as
 * SBX_ROOT_MAPS_TO: its fd, or -errno. */
static int idmap_userns(uid_t uid, gid_t gid)
{
	int pipefd[2];
	if (pipe2(pipefd, O_CLOEXEC) < 0)
		return -errno;
	int pidfd = -1, r = 0;
	struct clone_args_k ca = {.flags = CLONE_NEWUSER | CLONE_PIDFD,
	                          .pidfd = (uint64_t)(uintptr_t)&pidfd};
	long pid = syscall(SYS_clone3, &ca, sizeof(ca));
	if (pid == 0) {
		/* Only a namespace to hold: wait for the maps, then go. */
		char c;
		close(pipefd[1]);
		while (read(pipefd[0], &c, 1) < 0 && errno == EINTR)
			;
		_exit(0);
	}
	close(pipefd[0]);
	if (pid < 0) {
		close(pipefd[1]);
		return -errno;
	}
	char map[64], path[64];
	snprintf(map, sizeof(map), "%u %u 1\n", (unsigned)uid, (unsigned)SBX_ROOT_MAPS_TO);
	r = write_proc((pid_t)pid, "uid_map", map);
	snprintf(map, sizeof(map), "%u %u 1\n", (unsigned)gid, (unsigned)SBX_ROOT_MAPS_TO);
	if (r >= 0)
		r = write_proc((pid_t)pid, "gid_map", map);
	snprintf(path, sizeof(path), "/proc/%ld/ns/user", pid);
	int fd = r < 0 ? r : open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 && r >= 0)
		r = -errno;
	close(pipefd[1]);
	siginfo_t si;
	while (waitid((idtype_t)P_PIDFD, (id_t)pidfd, &si, WEXITED | __WALL) < 0 && errno == EINTR)
		;
	close(pidfd);
	return r < 0 ? r : fd;
}

/* The workspace host as a detached, read-only, idmapped mount, or -errno. */
static int ws_idmapped_mount(const char *host)
{
	struct stat st;
	if (stat(host, &st) < 0)
		return -errno;
	pthread_mutex_lock(&idmap_lock);
	if (idmap.fd >= 0 && (idmap.uid != st.st_uid || idmap.gid != st.st_gid)) {
		close(idmap.fd);
		idmap.fd = -1;
	}
	if (idmap.fd < 0) {
		int u = idmap_userns(st.st_uid, st.st_gid);
		if (u >= 0) {
			idmap.fd = u;
			idmap.uid = st.st_uid;
			idmap.gid = st.st_gid;
		}
	}
	int r = idmap.fd >= 0 ? 0 : -EPERM;
	int m = r < 0 ? -1
	              : (int)syscall(SYS_open_tree, AT_FDCWD, host,
	                             OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE);
	if (r >= 0 && m < 0)
		r = -errno;
	struct mount_attr a = {.attr_set = MOUNT_ATTR_IDMAP | MOUNT_ATTR_RDONLY |
	                                   MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV,
	                       .userns_fd = (uint64_t)idmap.fd};
	/* With the mounts inside the folder (if any): pid 1 refuses those,
	 * as the kernel refuses a copied namespace's (child_workspace.c). */
	if (r >= 0 &&
	    syscall(SYS_mount_setattr, m, "", AT_EMPTY_PATH | AT_RECURSIVE, &a, sizeof(a)) < 0)
		r = -errno;
	bool warn = r < 0 && !idmap.warned;
	if (warn)
		idmap.warned = true;
	pthread_mutex_unlock(&idmap_lock);
	if (r < 0) {
		if (m >= 0)
			close(m);
		if (warn)
			log_warn("sandbox: cannot show %s through an idmapped mount (%s): code in "
			         "the box "
			         "(nobody) can create and delete files there but not change one",
			         host, strerror(-r));
		return r;
	}
	return m;
}

int sbx_box_clone(const struct sbx_base *s, struct sbx_plan *plan, int cgroup_fd,
                  struct sbx_box *ret, int *ret_step)
{
	int status[2] = {-1, -1}, sync[2] = {-1, -1};
	int r = 0;
	*ret_step = SBX_STEP_NONE;
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, status) < 0 ||
	    pipe2(sync, O_CLOEXEC) < 0) {
		r = neg_errno();
		goto out;
	}
	/* See write_id_maps() for the choice of ids. */
	plan->self_map = s->host->euid != 0;
	snprintf(plan->uid_map, sizeof(plan->uid_map), "%d %u 1\n", SBX_INNER_ID,
	         (unsigned)s->host->euid);
	snprintf(plan->gid_map, sizeof(plan->gid_map), "%d %u 1\n", SBX_INNER_ID,
	         (unsigned)s->host->egid);
	plan->status_fd = status[1];
	plan->sync_fd = sync[0];
	plan->ws_idmapped = false;
	if (s->host->euid == 0 && plan->ws_host && !s->host->bench_no_idmap) {
		plan->ws_lower_fd = ws_idmapped_mount(plan->ws_host);
		plan->ws_idmapped = plan->ws_lower_fd >= 0;
	}
	int pidfd = -1;
	struct clone_args_k ca = {
	    .flags = CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC |
	             CLONE_NEWUTS | CLONE_NEWCGROUP | CLONE_PIDFD,
	    .pidfd = (uint64_t)(uintptr_t)&pidfd,
	    .exit_signal = SIGCHLD,
	};
	/* Born in its cgroup: no moment where the box runs outside it. */
	if (cgroup_fd >= 0) {
		ca.flags |= CLONE_INTO_CGROUP;
		ca.cgroup = (uint64_t)cgroup_fd;
	}
	long pid = syscall(SYS_clone3, &ca, sizeof(ca));
	if (pid == 0)
		sbx_child_main(plan); /* never returns */
	if (pid < 0) {
		r = neg_errno();
		goto out;
	}
	close(steal_fd(&status[1]));
	close(steal_fd(&sync[0]));
	if (!plan->self_map) {
		r = write_id_maps(s, (pid_t)pid);
		if (r >= 0 && write(sync[1], "x", 1) != 1)
			r = neg_errno();
		if (r < 0) {
			*ret_step = SBX_STEP_IDS;
			sbx_pidfd_kill(pidfd);
			goto out;
		}
	}
	ret->pid = (pid_t)pid;
	ret->pidfd = pidfd;
	ret->status_fd = steal_fd(&status[0]);
out:
	for (int i = 0; i < 2; i++) {
		if (status[i] >= 0)
			close(status[i]);
		if (sync[i] >= 0)
			close(sync[i]);
	}
	plan->status_fd = plan->sync_fd = -1;
	if (plan->ws_idmapped)
		close(plan->ws_lower_fd);
	plan->ws_idmapped = false;
	plan->ws_lower_fd = -1;
	return r;
}

void sbx_box_init(struct sbx_box *b)
{
	*b = (struct sbx_box){.pidfd = -1,
	                      .status_fd = -1,
	                      .fds = {-1, -1},
	                      .ctl_fd = -1,
	                      .work_fd = -1,
	                      .upper_fd = -1};
}

/* The program's plumbing: pipes for a run, a socket for a worker, both
 * for a session. Sets the plan's fds to the box's ends; ours go to b->fds
 * (and b->ctl_fd). */
static int plumb(struct sbx_plan *plan, enum sbx_box_io io, struct sbx_box *b, int theirs[3])
{
	if (io == SBX_BOX_SOCKET || io == SBX_BOX_ZYGOTE) {
		int sv[2];
		int type = io == SBX_BOX_ZYGOTE ? SOCK_SEQPACKET : SOCK_STREAM;
		theirs[2] = open("/dev/null", O_WRONLY | O_CLOEXEC);
		if (theirs[2] < 0 || socketpair(AF_UNIX, type | SOCK_CLOEXEC, 0, sv) < 0)
			return neg_errno();
		b->fds[0] = sv[0];
		theirs[0] = sv[1];
		plan->in_fd = plan->out_fd = sv[1];
		plan->err_fd = theirs[2];
		plan->report_exec = true;
		fcntl(b->fds[0], F_SETFL, O_NONBLOCK);
		return 0;
	}
	int out[2], err[2];
	if (pipe2(out, O_CLOEXEC) < 0)
		return neg_errno();
	if (pipe2(err, O_CLOEXEC) < 0) {
		int r = neg_errno();
		close(out[0]);
		close(out[1]);
		return r;
	}
	b->fds[0] = out[0];
	b->fds[1] = err[0];
	sbx_box_size_stdout(out[0]);
	theirs[0] = plan->out_fd = out[1];
	theirs[1] = plan->err_fd = err[1];
	fcntl(b->fds[0], F_SETFL, O_NONBLOCK);
	fcntl(b->fds[1], F_SETFL, O_NONBLOCK);
	if (io == SBX_BOX_SESSION) {
		int sv[2];
		if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
			return neg_errno();
		b->ctl_fd = sv[0];
		theirs[2] = plan->in_fd = sv[1];
		fcntl(b->ctl_fd, F_SETFL, O_NONBLOCK);
	}
	return 0;
}

int sbx_box_build(struct sbx_base *s, struct sbx_plan_owned *po, enum sbx_box_io io,
                  struct sbx_box *b, int *ret_step, char *err, size_t errsz)
{
	int theirs[3] = {-1, -1, -1};
	*ret_step = -1;
	int r = 0;
	if (!(b->layout = sbx_plan_layout(&po->plan))) {
		r = -ENOMEM;
		snprintf(err, errsz, "out of memory");
		goto out;
	}
	if (io != SBX_BOX_SOCKET && io != SBX_BOX_ZYGOTE && s->cgroups) {
		r = sbx_cgroup_take(s, &b->cg);
		if (r < 0)
			log_warn("sandbox: cannot make a cgroup for a box: %s", strerror(-r));
	}
	if ((r = plumb(&po->plan, io, b, theirs)) < 0) {
		snprintf(err, errsz, "cannot create the program's pipes: %s", strerror(-r));
		goto out;
	}
	r = sbx_box_clone(s, &po->plan, b->cg ? sbx_cgroup_fd(b->cg) : -1, b, ret_step);
	if (r < 0 && b->cg && *ret_step == SBX_STEP_NONE) {
		/* The cgroup would not take the box (delegation changed under
		 * us?): the rlimits still hold, so go on without it. */
		log_warn("sandbox: cannot start a box in its cgroup (%s); using rlimits only",
		         strerror(-r));
		sbx_cgroup_free_later(s, steal_pointer(&b->cg));
		r = sbx_box_clone(s, &po->plan, -1, b, ret_step);
	}
out:
	/* The child has its own copies of the plan and of these fds. */
	for (int i = 0; i < 3; i++)
		if (theirs[i] >= 0 && (i == 0 || theirs[i] != theirs[0]))
			close(theirs[i]);
	po->plan.in_fd = po->plan.out_fd = po->plan.err_fd = -1;
	if (r < 0)
		sbx_box_release(s, b);
	return r;
}

bool sbx_box_read_status(struct sbx_box *b)
{
	for (;;) {
		struct sbx_msg m;
		struct iovec iov = {.iov_base = &m, .iov_len = sizeof(m)};
		int passed;
		ssize_t n = sbx_status_recv(b->status_fd, &iov, 1, MSG_DONTWAIT, &passed);
		if (n < 0 && errno == EMSGSIZE)
			continue;
		if (n <= 0)
			return n == 0 || errno != EAGAIN;
		if (n != sizeof(m)) {
			if (passed >= 0)
				close(passed);
			continue;
		}
		if (m.type == SBX_MSG_READY && passed >= 0 && b->work_fd < 0) {
			b->work_fd = passed;
			passed = -1;
		} else if (m.type == SBX_MSG_UPPER && passed >= 0 && b->upper_fd < 0) {
			b->upper_fd = passed;
			passed = -1;
		} else if (m.type == SBX_MSG_FAIL && !b->failed) {
			b->failed = true;
			b->fail_step = m.step;
			b->fail_err = m.err;
		} else if (m.type == SBX_MSG_EXIT) {
			b->have_exit = true;
			b->exit_msg = m;
		}
		if (passed >= 0)
			close(passed);
	}
}

void sbx_box_release(struct sbx_base *s, struct sbx_box *b)
{
	if (b->pidfd >= 0 && !b->reaped) {
		if (b->cg)
			sbx_cgroup_kill(b->cg);
		sbx_pidfd_kill(steal_fd(&b->pidfd));
	}
	/* Every process of the box is gone (or was never started): the
	 * cgroup empties soon, and is removed off the loop. */
	if (b->cg)
		sbx_cgroup_free_later(s, steal_pointer(&b->cg));
	int *fds[] = {&b->pidfd, &b->status_fd, &b->fds[0], &b->fds[1], &b->ctl_fd};
	for (size_t i = 0; i < ARRAY_SIZE(fds); i++)
		if (*fds[i] >= 0)
			close(steal_fd(fds[i]));
	/* Closing the last fd of the workspace frees its tmpfs: off the
	 * loop, it may be large. */
	sbx_close_later(s, steal_fd(&b->work_fd));
	sbx_close_later(s, steal_fd(&b->upper_fd));
	free(b->layout);
	sbx_box_init(b);
}

void sbx_box_reap_later(struct sbx_base *s, struct sbx_box *b)
{
	if (b->pidfd >= 0 && !b->reaped)
		sbx_reap_later(s, steal_fd(&b->pidfd), steal_pointer(&b->cg));
	b->reaped = true;
}

static const char *fixed_hint(int step, int err)
{
	if (step == SBX_STEP_PROC && (err == EPERM || err == EACCES))
		return " The kernel refused a fresh /proc: this happens inside containers that "
		       "mask parts of /proc. Run kiln on the host or in a container started with "
		       "an unmasked /proc.";
	if (err == ENOSYS)
		return " This kernel is too old for kiln's sandbox (it needs Linux 5.12 or newer).";
	if (step == SBX_STEP_WORKSPACE && (err == EACCES || err == ENOENT))
		return " The sandbox's user cannot reach the workspace folder (when kiln runs as "
		       "root, the box runs as nobody): make the folder and its parents readable, "
		       "or set sandbox.workspace.mode to \"none\".";
	if (step == SBX_STEP_WORKSPACE && err == EINVAL)
		return " The kernel refused the workspace's overlay: a file system mounted inside "
		       "the workspace folder does this (the box cannot show a folder with a mount "
		       "inside it; `findmnt -R FOLDER` lists them), as does a kernel before 6.6. "
		       "Unmount it, open a folder without mounts, or set sandbox.workspace.mode to "
		       "\"none\".";
	if (step == SBX_STEP_WORKSPACE)
		return " This kernel cannot mount overlayfs in a user namespace with user xattrs "
		       "on tmpfs (Linux 6.6 and later can): set sandbox.workspace.mode to "
		       "\"none\" to run without the workspace.";
	if (step == SBX_STEP_HIDE && err == E2BIG)
		return " The workspace has more secrets to hide than kiln masks (2048), or a "
		       "file system mounted in it has more entries than pid 1 checks (100 000) "
		       "(docs/sandbox.md): hide their folder whole in sandbox.workspace.hide, open "
		       "a smaller folder, or set sandbox.workspace.mode to \"none\".";
	if (step == SBX_STEP_HIDE && (err == ENOENT || err == ELOOP || err == ENOTDIR))
		return " A hidden entry of the workspace moved or was replaced while the run "
		       "started, so kiln cannot say where it is now: run it again.";
	if (step == SBX_STEP_EXEC && err == ENOENT)
		return " The interpreter is missing inside the box.";
	return "";
}

static long sysctl_read(const char *path)
{
	FILE *f = fopen(path, "re");
	if (!f)
		return -1;
	long v = -1;
	if (fscanf(f, "%ld", &v) != 1)
		v = -1;
	fclose(f);
	return v;
}

void sbx_userns_cause(bool refused, int err, struct sbx_userns_cause *ret)
{
	bool container = access("/.dockerenv", F_OK) == 0 ||
	                 access("/run/.containerenv", F_OK) == 0 ||
	                 access("/run/systemd/container", F_OK) == 0;
	const char *why, *fix;
	if (refused && sysctl_read("/proc/sys/kernel/unprivileged_userns_clone") == 0) {
		why = "kernel.unprivileged_userns_clone is 0";
		fix = "sudo sysctl -w kernel.unprivileged_userns_clone=1 (and put it in "
		      "/etc/sysctl.d/ to keep it)";
	} else if (refused && sysctl_read("/proc/sys/user/max_user_namespaces") == 0) {
		why = "user.max_user_namespaces is 0";
		fix = "sudo sysctl -w user.max_user_namespaces=15000 (and put it in /etc/sysctl.d/ "
		      "to keep it)";
	} else if (!refused &&
	           sysctl_read("/proc/sys/kernel/apparmor_restrict_unprivileged_userns") == 1) {
		why = "kernel.apparmor_restrict_unprivileged_userns is 1";
		fix =
		    "sudo install -m 644 server/sandbox/apparmor/kiln /etc/apparmor.d/kiln && sudo "
		    "apparmor_parser -r /etc/apparmor.d/kiln (or sudo sysctl -w "
		    "kernel.apparmor_restrict_unprivileged_userns=0)";
	} else if (container || (refused && err == EPERM) || !refused) {
		why = container ? "inside a container, whose seccomp or AppArmor profile refuses it"
		                : "a seccomp or AppArmor profile around kiln refuses it";
		fix = "run kiln on the host, or start the container with --security-opt "
		      "seccomp=unconfined --security-opt apparmor=unconfined (Docker, Podman)";
	} else {
		why = "the kernel refused it";
		fix = "sysctl user.max_user_namespaces must be above 0; see docs/sandbox.md, "
		      "\"When the sandbox cannot be built\"";
	}
	snprintf(ret->why, sizeof(ret->why), "%s", why);
	snprintf(ret->fix, sizeof(ret->fix), "%s", fix);
}

void sbx_failure_hint(int step, int err, char *buf, size_t n)
{
	bool refused = step == SBX_STEP_NONE &&
	               (err == EPERM || err == EACCES || err == ENOSPC || err == EINVAL);
	bool powerless =
	    (step == SBX_STEP_IDS || step == SBX_STEP_PRIVATE || step == SBX_STEP_ROOT_TMPFS ||
	     step == SBX_STEP_BIND || step == SBX_STEP_SYNC) &&
	    (err == EPERM || err == EACCES);
	if (refused || powerless) {
		struct sbx_userns_cause c;
		sbx_userns_cause(refused, err, &c);
		snprintf(buf, n,
		         refused
		             ? " The kernel refused the box's user namespace: %s. To fix it: %s."
		             : " The kernel made the box's user namespace but gave it no "
		               "privilege: %s. To fix it: %s.",
		         c.why, c.fix);
		return;
	}
	snprintf(buf, n, "%s", fixed_hint(step, err));
}

/* GO itself: the header, the strings, and a memfd holding the code (and
 * the list of what to hide, hide_fd, unless it is -1). */
static int send_go_msg(int status_fd, struct sbx_go *go, const struct buf *strs, const char *code,
                       int hide_fd)
{
	size_t len = strlen(code);
	_cleanup_close_ int fd = sbx_code_memfd(code, len);
	if (fd < 0)
		return fd;
	go->code_len = len;
	go->hide = hide_fd >= 0;
	struct iovec iov[2] = {{.iov_base = go, .iov_len = sizeof(*go)},
	                       {.iov_base = strs->data, .iov_len = strs->len}};
	int fds[2] = {fd, hide_fd};
	ssize_t n = sbx_status_send_fds(status_fd, iov, 2, fds, hide_fd >= 0 ? 2 : 1, 0);
	return n == (ssize_t)(sizeof(*go) + strs->len) ? 0 : n < 0 ? neg_errno() : -EIO;
}

int sbx_box_send_go(struct sbx_box *b, const struct sbx_plan_owned *po, const char *code_path,
                    char *const *argv, const struct sbx_rlimit *rl, size_t nrl, const char *code,
                    int hide_fd)
{
	/* The program: the code's path, argv, the environment. */
	struct buf strs;
	buf_init(&strs, SBX_GO_STRINGS);
	struct sbx_go go = {0};
	if (nrl > SBX_MAX_RLIMITS)
		return -E2BIG;
	memcpy(go.rlimits, rl, nrl * sizeof(*rl));
	go.nrlimits = (uint32_t)nrl;
	int r = buf_append(&strs, code_path, strlen(code_path) + 1);
	for (; r >= 0 && argv[go.argc]; go.argc++)
		r = buf_append(&strs, argv[go.argc], strlen(argv[go.argc]) + 1);
	for (; r >= 0 && po->plan.envp[go.envc]; go.envc++)
		r = buf_append(&strs, po->plan.envp[go.envc], strlen(po->plan.envp[go.envc]) + 1);
	if (r < 0 || go.argc > SBX_GO_ARGS || go.envc > SBX_GO_ENV) {
		buf_release(&strs);
		return r < 0 ? r : -E2BIG;
	}
	go.strings_len = (uint32_t)strs.len;
	r = send_go_msg(b->status_fd, &go, &strs, code, hide_fd);
	buf_release(&strs);
	return r;
}

int sbx_code_memfd(const char *code, size_t len)
{
	return sbx_sealed_memfd("kiln-code", code, len);
}
