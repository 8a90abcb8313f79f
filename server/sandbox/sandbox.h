/* sandbox.h: the sandbox subsystem (k->sandbox): what is prepared once
 * per server (the compiled seccomp filter, the kernel's Landlock ABI, who
 * the server runs as) and the list of runs alive, so that stopping the
 * server kills every box. Runs themselves are in run.h. */
#pragma once

#include <linux/filter.h>
#include <stdbool.h>
#include <sys/types.h>

struct kiln;
struct run;

/* Where the code's writable workspace is mounted inside the box; the
 * validator's file rules treat it as inside by default. */
#define SBX_WORKSPACE "/work"

struct sandbox {
	struct kiln *k;
	struct sock_fprog filter;
	int landlock_abi;
	uid_t euid;
	gid_t egid;
	struct run *runs; /* alive, newest first */
	unsigned long next_id;
};

/* Prepare the subsystem. Call before any thread starts (libseccomp and
 * the loop are all it needs). -errno with a log line on failure. */
int sandbox_new(struct kiln *k, struct sandbox **ret_sandbox);
/* Kill every run still alive (their done callbacks are not called). */
void sandbox_free(struct sandbox *s);
