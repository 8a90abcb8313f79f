/* host.h: the sandbox's ground floor (host/), and its top file:
 * what is true of this host for every box (who the server is, the
 * Landlock ABI, the compiled seccomp filter), the sealed memfds the
 * server hands a box, and the end of a struct sbx_base (base.h), what
 * every box of one server stands on. Below it in host/: the base's job
 * threads (job.h), reaping (reap.h), cgroups (cgroup.h) and those made
 * ahead (cgroup_ahead.h), the filter (filter.h) and limits (limits.h).
 * host/ calls nothing of the sandbox above it; what it needs of its
 * owner comes as a callback (sbx_base.busy). */
#pragma once

#include <linux/filter.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct sbx_base;

/* What is true of this host and process for every box: built once per
 * process and shared by the server's sandbox, `kiln run`'s and every
 * worker (the validator's, on whatever thread). Never freed. */
struct sbx_host {
	struct sock_fprog filter; /* empty until sbx_host_filter_ready(); the build's */
	int landlock_abi;
	uid_t euid;
	gid_t egid;
	/* KILN_BENCH_NO_IDMAP=1 in the server's environment: a root server
	 * shows the workspace without its idmapped mount (box.c), so that
	 * `make bench` can time the same run without that step
	 * (tests/bench/workspace.sh). For the bench only: no setting. */
	bool bench_no_idmap;
};

/* The host facts (ids, Landlock ABI); thread-safe. */
const struct sbx_host *sbx_host_get(void);

/* Take the seccomp filter the build compiled (filter.h) if that has not
 * happened yet. Thread-safe. 0, or -EIO when there is none. */
int sbx_host_filter_ready(void);

/* The Landlock ABI this kernel offers (0: none). */
int sbx_landlock_abi(void);

/* The end of a base: every pid 1 still being reaped is killed and
 * waited for, every job's thread ends, the cgroups made ahead and the
 * root go. The base is zeroed but for host. */
void sbx_base_release(struct sbx_base *b);

/* A close-on-exec memfd named name holding data[0..len), sealed against
 * any change (write, grow, shrink, more seals): what the server hands a
 * box. The fd, or -errno. */
int sbx_sealed_memfd(const char *name, const char *data, size_t len);
