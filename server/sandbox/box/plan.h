/* plan.h: turning a request (language, code, limits) and the config's
 * "sandbox" section into the struct sbx_plan the child walks: the
 * language's program (from the registry, core/lang.h), the environment
 * allowlist, the new root's layout. */
#pragma once

#include <json-c/json.h>
#include <stddef.h>

#include "sandbox/box/pid1.h"
#include "sandbox/box/pyenv.h"
#include "sandbox/host/limits.h"

struct sbx_host;

/* The workspace a run's box shows (runs only, not workers): the host
 * folder, at its own path over a private layer, and the names hidden in
 * it (sandbox.workspace.hide; the child checks them). */
struct sbx_plan_ws {
	const char *host;
	char **hide;
	size_t nhide;
};

/* A plan and the strings it points to. */
struct sbx_plan_owned {
	struct sbx_plan plan;
	const char *code_path; /* with plan.await_go: where GO's code goes */
	char *strs[96];
	size_t nstrs;
	char *argv[33];
	char *envp[65];
	/* python's plans: the interpreter it runs (has_py; py.project when
	 * the project's own environment, pyenv.h). */
	bool has_py;
	struct sbx_pyenv py;
};

/* The largest code a run may bring (bytes). */
#define SBX_CODE_MAX (1u << 20)

/* Build the plan. code NULL: the box waits for its program and code
 * (plan.await_go; po->code_path is where GO's code goes, see child.h) and
 * the root has room for SBX_CODE_MAX. python's plan runs the project's
 * own Python when pyenv.h finds one (in section's sandbox.python, the
 * server's environment, ws's folder). -EINVAL (bad request: unknown
 * language, bad env), -ENOENT (the interpreter is not installed) or
 * -EPERM (a project's Python kiln will not show, pyenv.h) with a
 * sentence in err; -ENOMEM. Fds in the plan are left at -1 for the
 * caller. ws: the workspace to show, or NULL. */
int sbx_plan_build(const struct sbx_host *host, const struct sbx_plan_ws *ws, json_object *section,
                   const char *language, const char *code, const struct sbx_limits *lim,
                   struct sbx_plan_owned **ret, char *err, size_t errsz);
/* The same box for a program given by argv instead of a language name
 * (a worker's, see worker.h): "{file}" in argv stands for /code/FILE,
 * which holds code. The config's languages and env do not apply. */
int sbx_plan_build_argv(const struct sbx_host *host, const char *const *argv, const char *file,
                        const char *code, const struct sbx_limits *lim, struct sbx_plan_owned **ret,
                        char *err, size_t errsz);
/* The plan of a box for language that waits for its program (GO), with
 * limits lim (their tmpfs size is the box's), once the seccomp filter is
 * compiled. -EINVAL/-ENOENT and the like with a sentence in err;
 * -ENOMEM. */
int sbx_plan_await(const struct sbx_host *host, const struct sbx_plan_ws *ws, json_object *section,
                   const char *language, const struct sbx_limits *lim, struct sbx_plan_owned **ret,
                   char *err, size_t errsz);
void sbx_plan_free(struct sbx_plan_owned *po);

/* A text that is the same for two plans exactly when they build the same
 * box, whatever program it will run (argv, environment and code come
 * with GO): its root, directories, links, binds and files. Malloc'd;
 * NULL on OOM. */
char *sbx_plan_layout(const struct sbx_plan *p);

/* fn(data, path) for each match of pattern (glob(3), sorted), until fn
 * returns < 0 (returned). The matches of a pattern whose wildcards are in
 * its last component are kept, and found again only when that
 * directory's mtime or ctime changed (an entry added, removed or renamed):
 * a plan's /etc/python3* read all of /etc each time. Thread-safe (fn runs
 * under a lock). -ENOMEM. */
int sbx_plan_glob_each(const char *pattern, int (*fn)(void *data, const char *path), void *data);

/* The rlimits lim asks for, into ret; returns how many. */
size_t sbx_plan_rlimits(const struct sbx_limits *lim, struct sbx_rlimit ret[SBX_MAX_RLIMITS]);
/* The same, and RLIMIT_AS (memoryBytes + SBX_AS_HEADROOM) when language
 * (a name of core/lang.h, or NULL) runs within one. */
size_t sbx_plan_rlimits_for(const struct sbx_limits *lim, const char *language,
                            struct sbx_rlimit ret[SBX_MAX_RLIMITS]);
#define SBX_AS_HEADROOM (512ull << 20)
