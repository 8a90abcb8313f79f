/* zygote_spare.c: the zygote's spare, the next run's box, made ahead
 * (see zygote.h): asked for when the server is idle, its pid 1's pidfd
 * and READY heard on the loop, dropped with the zygote, and given to the
 * run that takes it, or handed over to the run that waits for it (with
 * a deadline, past which the zygote is retired: zyg_retire, here too,
 * since retiring it is mostly dropping its spare). */
#include "sandbox/pools/zyg_shared.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "core/json.h"
#include "core/log.h"
#include "core/loop.h"
#include "core/util.h"
#include "sandbox/host/cgroup.h"
#include "sandbox/box/child.h"
#include "sandbox/state.h"
#include "sandbox/host/base.h"
#include "sandbox/host/reap.h"
#include "sandbox/host/cgroup_ahead.h"

/* The message a run's pid 1 sends first: its own pidfd (zygote.py). */
#define ZYG_MSG_PIDFD 100

/* How long a run waits for the zygote's child to report; past it the run
 * takes the normal path and the zygote is retired. */
#define ZYGOTE_ANSWER_MS 2000

/* The fds of a request, and its JSON; sent without blocking. */
static int send_fds(int sock, json_object *req, const int *fds, size_t nfds)
{
	size_t len = 0;
	const char *text = json_object_to_json_string_length(req, JSON_C_TO_STRING_PLAIN, &len);
	if (!text)
		return -ENOMEM;
	struct iovec iov = {.iov_base = (void *)text, .iov_len = len};
	ssize_t n = sbx_status_send_fds(sock, &iov, 1, fds, nfds, MSG_DONTWAIT);
	return n == (ssize_t)len ? 0 : n < 0 ? neg_errno() : -EIO;
}

/* What a spare's box needs that no run changes: the scratch tmpfs at the
 * configured size (each run's size is set when it comes), the user
 * namespace's quotas and the covered /proc files, as child.c has them;
 * with the workspace, its path (the overlay's, whose upper layer is a
 * tmpfs of the configured size) and the hide patterns (for what pid 1
 * walks itself, as child_workspace.c's walk_and_mask). */
static json_object *spare_request(const struct sandbox *s, const struct sbx_zygote *z)
{
	json_object *req = json_object_new_object();
	json_object *quotas = json_object_new_object();
	json_object *hide = json_object_new_array();
	if (!req || !quotas || !hide) {
		json_object_put(req);
		json_object_put(quotas);
		json_object_put(hide);
		return NULL;
	}
	char inodes[32];
	snprintf(inodes, sizeof(inodes), "%llu",
	         (unsigned long long)(s->config.limits.tmpfs_bytes / 4096));
	json_object_object_add(req, "op", json_object_new_string("spare"));
	json_object_object_add(req, "tmpfs",
	                       json_object_new_int64((int64_t)s->config.limits.tmpfs_bytes));
	json_object_object_add(req, "inodes", json_object_new_string(inodes));
	json_object_object_add(quotas, "max_inotify_instances",
	                       json_object_new_string(SBX_INOTIFY_INSTANCES));
	json_object_object_add(quotas, "max_inotify_watches",
	                       json_object_new_string(SBX_INOTIFY_WATCHES));
	json_object_object_add(req, "userQuotas", quotas);
	static const char *const hidden[] = SBX_PROC_HIDDEN;
	for (size_t i = 0; i < ARRAY_SIZE(hidden); i++)
		json_object_array_add(hide, json_object_new_string(hidden[i]));
	json_object_object_add(req, "procHidden", hide);
	/* Whether the zygote clones the next spare's pid 1 ahead, once this
	 * one is on its way (sandbox.warmBoxes: off, nothing is made ahead). */
	json_object_object_add(req, "ahead", json_object_new_boolean(s->config.warm_boxes));
	if (z->ws) {
		json_object *pats = json_object_new_array();
		for (size_t i = 0; pats && i < s->config.nhide; i++)
			json_object_array_add(pats, json_object_new_string(s->config.hide[i]));
		json_object_object_add(req, "ws", json_object_new_string(z->ws));
		json_object_object_add(req, "wsLower",
		                       json_object_new_string("/" SBX_ZYGOTE_WS_LOWER));
		json_object_object_add(req, "hidePatterns", pats);
	}
	return req;
}

/* The host pid behind a pidfd (for the log and the cgroup), or 0. */
static pid_t pidfd_pid(int pidfd)
{
	char path[64], text[512];
	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", pidfd);
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n = fd < 0 ? -1 : read(fd, text, sizeof(text) - 1);
	if (n <= 0)
		return 0;
	text[n] = '\0';
	const char *p = strstr(text, "\nPid:");
	return p ? (pid_t)atoi(p + 5) : 0;
}

/* A cgroup of its own for the spare's pid 1, as a built box's; the
 * run's limits are set when it comes. The cgroup is taken here (made
 * ahead, off the loop: sbx_cgroup_take) and its cgroup.procs opened
 * for writing; pid 1 writes itself into it
 * before it forks the program's process. Moving a process takes the
 * kernel's cgroup_threadgroup_rwsem for writing (an RCU grace period,
 * milliseconds), so it is not done on the loop: since Linux 5.16 the
 * write is checked with the credentials and cgroup namespace of whoever
 * opened the file, the server. The fd, or -1 (a warning: the rlimits
 * hold). If pid 1 cannot join, it fails the spare (SBX_STEP_CGROUP): a
 * run never goes on outside the cgroup the server set its limits on. */
static int spare_cgroup(struct sandbox *s, struct sbx_box *b)
{
	int r = sbx_cgroup_take(&s->base, &b->cg);
	int fd = -1;
	if (r >= 0 && (fd = openat(sbx_cgroup_fd(b->cg), "cgroup.procs", O_WRONLY | O_CLOEXEC)) < 0)
		r = neg_errno();
	if (r < 0) {
		log_warn("sandbox: a run from the zygote has no cgroup (%s); using rlimits only",
		         strerror(-r));
		if (b->cg)
			sbx_cgroup_free_later(&s->base, steal_pointer(&b->cg));
	}
	return fd;
}

/* Drop the spare: its pid 1 is killed (and with it its box) and reaped
 * off the loop; without a pidfd yet, its status socket closes, and its
 * pid 1 ends when it finds that out. */
void zyg_drop_spare(struct sandbox *s, struct sbx_zygote *z)
{
	struct sbx_box *b = z->spare;
	/* No spare is owed any more either. */
	z->ask_later = false;
	loop_timer_stop(s->base.loop, steal_pointer(&z->ask_timer));
	/* A run waiting for it takes the normal path. */
	zyg_wait_fail(s, z, -ECANCELED);
	if (!b)
		return;
	z->spare = NULL;
	loop_unwatch(s->base.loop, b->status_fd);
	if (b->pidfd >= 0) {
		loop_unwatch(s->base.loop, b->pidfd);
		if (b->cg)
			sbx_cgroup_kill(b->cg);
		syscall(SYS_pidfd_send_signal, b->pidfd, SIGKILL, NULL, 0);
		sbx_box_reap_later(&s->base, b);
	}
	sbx_box_release(&s->base, b);
	free(b);
}

/* Its pid 1's first message: its pidfd. 1 when taken, 0 when not there
 * yet, -errno when the spare failed. */
static int spare_take_pidfd(struct sbx_box *b)
{
	struct sbx_msg m;
	struct iovec iov = {.iov_base = &m, .iov_len = sizeof(m)};
	int fd;
	ssize_t n = sbx_status_recv(b->status_fd, &iov, 1, MSG_DONTWAIT, &fd);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return 0;
	if (n <= 0)
		return n == 0 ? -EPIPE : neg_errno();
	if (n > 1 && n < (ssize_t)sizeof(m) && ((char *)&m)[0] == 'E') {
		/* A Python error of the zygote's child, as text. */
		log_warn("sandbox: the zygote's child failed: %.*s", (int)n - 1, (char *)&m + 1);
		return -EIO;
	}
	if (n != sizeof(m) || m.type != ZYG_MSG_PIDFD || fd < 0) {
		if (fd >= 0)
			close(fd);
		return n == sizeof(m) && m.type == SBX_MSG_FAIL && m.err ? -m.err : -EIO;
	}
	b->pidfd = fd;
	b->pid = pidfd_pid(fd);
	return 1;
}

static void on_spare_dead(struct loop *loop, int fd, unsigned events, void *data);

/* spare_take_pidfd, and the spare's pidfd watched: 1, 0 or -errno. */
int zyg_spare_pidfd(struct sandbox *s, struct sbx_box *b)
{
	int r = spare_take_pidfd(b);
	if (r > 0 && loop_watch(s->base.loop, b->pidfd, LOOP_READ, on_spare_dead, s) < 0)
		r = -ENOMEM;
	return r;
}

void zyg_hand_over(struct sandbox *s, struct sbx_zygote *z);

/* What the spare's pid 1 has said: its pidfd, then READY (with /work)
 * once the program's process is locked down and waits. Anything else
 * before its run is a failure of the zygote's. A run waiting for the
 * spare gets it with its pidfd (zyg_hand_over). */
static void on_spare_status(struct loop *loop, int fd, unsigned events, void *data)
{
	(void)loop;
	(void)fd;
	struct sandbox *s = data;
	struct sbx_zygote *z = s->zygote;
	struct sbx_box *b = z ? z->spare : NULL;
	if (!b)
		return;
	int r = 0;
	if (b->pidfd < 0) {
		r = zyg_spare_pidfd(s, b);
		if (r == 0 && !(events & (LOOP_HUP | LOOP_ERR)))
			return;
	}
	if (r >= 0 && !sbx_box_read_status(b) && !b->failed && !b->have_exit) {
		if (b->pidfd >= 0 && z->wait)
			zyg_hand_over(s, z);
		return;
	}
	log_warn("sandbox: the zygote could not make a box (%s)", r < 0 ? strerror(-r)
	                                                          : b->failed
	                                                              ? sbx_step_name(b->fail_step)
	                                                              : "it ended");
	zyg_retire(s, true);
}

static void on_spare_dead(struct loop *loop, int fd, unsigned events, void *data)
{
	(void)loop;
	(void)events;
	struct sandbox *s = data;
	if (!s->zygote || !s->zygote->spare || !sbx_pidfd_reap(fd))
		return;
	s->zygote->spare->reaped = true;
	log_warn("sandbox: a box made by the zygote ended before its run");
	zyg_retire(s, true);
}

/* Ask the zygote for the next run's box, unless it has one on the way:
 * the spare's pipes and status socket are made here; the zygote clones
 * its pid 1, which reports on the loop (on_spare_status). */
void zyg_ask_spare(struct sandbox *s)
{
	struct sbx_zygote *z = s->zygote;
	if (z) {
		/* Asked for now: a spare owed after a session's run is this one. */
		z->ask_later = false;
		loop_timer_stop(s->base.loop, steal_pointer(&z->ask_timer));
	}
	if (!z || !z->ready || z->spare)
		return;
	struct sbx_box *b = calloc(1, sizeof(*b));
	json_object *req = spare_request(s, z);
	int out[2] = {-1, -1}, err[2] = {-1, -1}, st[2] = {-1, -1}, procs = -1;
	int r = b && req ? 0 : -ENOMEM;
	if (r >= 0)
		sbx_box_init(b);
	if (r >= 0 && (pipe2(out, O_CLOEXEC) < 0 || pipe2(err, O_CLOEXEC) < 0 ||
	               socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, st) < 0))
		r = neg_errno();
	if (r >= 0) /* 256 KiB, as a built box's: the default 64 KiB cost 3-4x per byte */
		sbx_box_size_stdout(out[0]);
	if (r >= 0 && s->base.cgroups)
		procs = spare_cgroup(s, b);
	if (r >= 0) {
		int theirs[4] = {out[1], err[1], st[1], procs};
		r = send_fds(z->box.fds[0], req, theirs, procs >= 0 ? 4 : 3);
	}
	json_object_put(req);
	int *mine[] = {&out[1], &err[1], &st[1], &procs};
	for (size_t i = 0; i < ARRAY_SIZE(mine); i++)
		if (*mine[i] >= 0)
			close(steal_fd(mine[i]));
	if (r >= 0) {
		b->status_fd = steal_fd(&st[0]);
		b->fds[0] = steal_fd(&out[0]);
		b->fds[1] = steal_fd(&err[0]);
		fcntl(b->fds[0], F_SETFL, O_NONBLOCK);
		fcntl(b->fds[1], F_SETFL, O_NONBLOCK);
		z->spare = b;
		if (loop_watch(s->base.loop, b->status_fd, LOOP_READ, on_spare_status, s) < 0)
			r = -ENOMEM;
	}
	int *left[] = {&out[0], &err[0], &st[0]};
	for (size_t i = 0; i < ARRAY_SIZE(left); i++)
		if (*left[i] >= 0)
			close(*left[i]);
	if (r < 0) {
		if (!z->spare && b) {
			if (b->cg)
				sbx_cgroup_free_later(&s->base, steal_pointer(&b->cg));
			free(b);
		}
		log_warn("sandbox: cannot ask the Python zygote for a box: %s", strerror(-r));
		zyg_retire(s, true);
	}
}

/* Give the run the spare, whose pidfd came: its cgroup takes the run's
 * limits, then its pid 1 the run (the code as a memfd). The next spare
 * is asked for when this run is over (sbx_zygote_idle): made while it
 * runs, its fork and setup would take CPU from it. */
int zyg_give_spare(struct sandbox *s, struct sbx_zygote *z, struct zyg_req *q, struct sbx_box *b)
{
	struct sbx_box *sp = z->spare;
	int r = 0;
	int chan[2] = {-1, -1}; /* a session's channel (box.c's plumb()) */
	if (sp->cg && (r = sbx_cgroup_set_limits(sp->cg, q->lim.memory_bytes, q->lim.processes,
	                                         q->lim.cpu_cores)) < 0)
		goto out;
	if (q->session && socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, chan) < 0) {
		r = neg_errno();
		goto out;
	}
	int theirs[2] = {q->codefd, chan[1]};
	if ((r = send_fds(sp->status_fd, q->req, theirs, q->session ? 2 : 1)) < 0)
		goto out;
	if (chan[0] >= 0) {
		sp->ctl_fd = steal_fd(&chan[0]);
		fcntl(sp->ctl_fd, F_SETFL, O_NONBLOCK);
	}
	log_debug("sandbox: a run takes the zygote's box (pid %d, %s)", (int)sp->pid,
	          sp->work_fd >= 0 ? "ready" : "still being made");
	loop_unwatch(s->base.loop, sp->status_fd);
	loop_unwatch(s->base.loop, sp->pidfd);
	*b = *sp;
	b->layout = steal_pointer(&q->layout);
	free(sp);
	z->spare = NULL;
out:
	for (size_t i = 0; i < ARRAY_SIZE(chan); i++)
		if (chan[i] >= 0)
			close(chan[i]);
	return r;
}

void zyg_retire(struct sandbox *s, bool failed)
{
	struct sbx_zygote *z = s->zygote;
	if (!z)
		return;
	s->zygote = NULL;
	if (failed)
		s->zygote_failures++;
	log_debug("sandbox: retiring the zygote (pid %d)%s", (int)z->box.pid,
	          failed ? ", which failed" : "");
	zyg_drop_spare(s, z);
	loop_unwatch(s->base.loop, z->box.pidfd);
	loop_unwatch(s->base.loop, z->box.fds[0]);
	/* Its channel closes: the zygote waits for its runs, then ends,
	 * and its pid 1 with it; the sandbox reaps it then. */
	if (failed)
		sbx_box_release(&s->base, &z->box);
	sbx_box_reap_later(&s->base, &z->box);
	sbx_box_release(&s->base, &z->box);
	free(z->key);
	free(z->ws);
	free(z);
}

/* The spare's pidfd came: the run that waits takes it. */
void zyg_hand_over(struct sandbox *s, struct sbx_zygote *z)
{
	struct sbx_zygote_wait *w = steal_pointer(&z->wait);
	int r = zyg_give_spare(s, z, &w->q, w->b);
	if (r < 0) {
		log_warn(
		    "sandbox: the Python zygote could not start a run (%s); using a box of its "
		    "own",
		    strerror(-r));
		zyg_retire(s, true);
	}
	zyg_wait_done(w, r);
}

/* The spare's pidfd did not come in time: the zygote is retired, and the
 * run takes the normal path. */
static void on_wait_deadline(struct loop *loop, void *data)
{
	(void)loop;
	struct sbx_zygote_wait *w = data;
	struct sandbox *s = w->s;
	w->timer = NULL;
	if (s->zygote && s->zygote->wait == w)
		s->zygote->wait = NULL;
	log_warn("sandbox: the Python zygote's box did not report in %d ms; using a box of its own",
	         ZYGOTE_ANSWER_MS);
	zyg_retire(s, true);
	zyg_wait_done(w, -ETIMEDOUT);
}

/* The spare's pid 1 has not sent its pidfd yet: the zygote is cloning
 * it (a few milliseconds; a run came right after the last one). The run
 * waits for it off the loop's critical path: its pidfd comes to
 * on_spare_status, which hands the spare over; the rest (its setup,
 * READY) the run hears on the loop as from any box. */
int zyg_wait_spare(struct sandbox *s, struct sbx_zygote *z, struct zyg_req *q, struct sbx_box *b,
                   void (*fn)(void *data, int r), void *data, struct sbx_zygote_wait **ret_wait)
{
	struct sbx_zygote_wait *w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	*w = (struct sbx_zygote_wait){
	    .s = s, .b = b, .fn = fn, .data = data, .q = *q, .since_ms = loop_now_ms()};
	if (!(w->timer = loop_timer_start(s->base.loop, ZYGOTE_ANSWER_MS, on_wait_deadline, w))) {
		free(w);
		return -ENOMEM;
	}
	*q = (struct zyg_req){.codefd = -1};
	z->wait = w;
	*ret_wait = w;
	log_debug("sandbox: a run waits for the zygote's box");
	return -EINPROGRESS;
}
