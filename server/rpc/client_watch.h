/* client_watch.h: notice when the client process is gone. An editor that
 * crashes or is killed may leave kiln's stdin open (a grandchild holds
 * it, or the pipe was shared); the LSP's processId (and the
 * --clientProcessId option vscode-languageclient passes) names the process
 * whose end should end kiln too.
 *
 * A pidfd on the loop tells at once; where pidfd_open() is not there
 * (kernels before 5.3, or a seccomp filter), kill(pid, 0) every half
 * second does, counting a zombie as gone. */
#pragma once

struct loop;
struct rpc_client_watch;

enum rpc_client_watch_flags {
	/* Use the periodic check even where a pidfd is available. */
	RPC_CLIENT_WATCH_POLL = 1 << 0,
};

/* Watch pid; gone(data) runs once, from the loop, when it has exited
 * (from the next iteration when it already has). *ret is yours to free.
 * -EINVAL for a pid <= 0, -ENOMEM. */
int rpc_client_watch_new(struct loop *loop, int pid, unsigned flags, void (*gone)(void *data),
                         void *data, struct rpc_client_watch **ret);
/* Stops watching; NULL is a no-op. Never calls gone. */
void rpc_client_watch_free(struct rpc_client_watch *w);
int rpc_client_watch_pid(const struct rpc_client_watch *w);
/* Whether the pidfd is used (else the periodic check). */
int rpc_client_watch_uses_pidfd(const struct rpc_client_watch *w);
