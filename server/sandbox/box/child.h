/* child.h: pid 1 of a box (child.c): its body after clone(), the status
 * socket both ends use, and the names of its steps. The plan it walks
 * and the messages it sends are in pid1.h. */
#pragma once

#include <linux/filter.h>

#include <stddef.h>
#include <sys/types.h>
#include <sys/uio.h>

#include "sandbox/box/pid1.h"

/* One message on a status socket, with pass_fd attached (SCM_RIGHTS)
 * unless it is -1: sendmsg's result. Both ends use it (pid 1 for READY
 * and the rest, the server for GO); it allocates nothing. */
ssize_t sbx_status_send(int sock, struct iovec *iov, size_t iovcnt, int pass_fd);

/* The same with nfds (at most SBX_STATUS_MAX_FDS) fds attached and
 * sendmsg flags (MSG_DONTWAIT or 0; MSG_NOSIGNAL always): GO's code and,
 * with a workspace, the list of what to hide (hide.h); a zygote's
 * requests (zygote.c: a spare's pipes, status socket and cgroup.procs). */
#define SBX_STATUS_MAX_FDS 4
ssize_t sbx_status_send_fds(int sock, struct iovec *iov, size_t iovcnt, const int *fds, size_t nfds,
                            int flags);

/* Its counterpart: one message into iov (recvmsg flags: MSG_DONTWAIT or
 * 0), the fd it carried in *ret_fd (-1 without one; close-on-exec).
 * -1 with EMSGSIZE for a message that did not fit (its fd closed). */
ssize_t sbx_status_recv(int sock, struct iovec *iov, size_t iovcnt, int flags, int *ret_fd);
/* The same for up to nfds fds, in ret_fds[0..nfds) in the order sent
 * (-1 for those not sent). More fds than nfds: -1 with EMSGSIZE, every
 * fd closed. */
ssize_t sbx_status_recv_fds(int sock, struct iovec *iov, size_t iovcnt, int flags, int *ret_fds,
                            size_t nfds);

/* A sentence naming the step, for error messages. */
const char *sbx_step_name(int step);

/* The live masks' filter (child_watch.c): its instructions in *ret and
 * their count, for a zygote's runs, which apply it themselves. */
size_t sbx_watch_filter(const struct sock_filter **ret);

/* The child's body after clone(): never returns. */
__attribute__((noreturn)) void sbx_child_main(const struct sbx_plan *plan);
