/* sandbox.h: the sandbox subsystem's face, and its top (sandbox.c): start
 * and stop. sandbox_new puts together the layers below (docs/sandbox.md,
 * "Files"; each folder's README.md): the host's ground (host/), the
 * configuration (config.h), the workspace (workspace/), the pools of
 * boxes built ahead (pools/), runs (run/) and sessions (session/);
 * sandbox_free stops them from the top down. Runs themselves are in
 * run/run.h, sessions in session/session.h. The sandbox knows the event
 * loop and its own config section, nothing of the protocol: whoever
 * starts a run gives it a sink (run.h). */
#pragma once

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>

/* SBX_WORKSPACE, where the box shows the workspace, for the validator. */
#include "sandbox/box/child.h"
#include "sandbox/box/pyenv.h"
/* The job callbacks of sandbox_job_start. */
#include "sandbox/host/job.h"

struct loop;
struct sandbox;

/* Prepare the subsystem: who the server is, the Landlock ABI, the
 * configuration (section: the config's "sandbox" object, borrowed, may be
 * NULL), the cgroup root it names. loop may be NULL for a sandbox that
 * only starts workers (worker.h). -EINVAL with a sentence in err for a
 * section that is not valid; -errno with a sentence for a cgroup setting
 * that cannot be used. */
int sandbox_new(struct loop *loop, json_object *section, struct sandbox **ret_sandbox, char *err,
                size_t errsz);

/* Check section and make it the configuration of the runs that start from
 * now on (the cgroup setting is read at start only). s may be NULL: only
 * check. -EINVAL with a sentence naming the member; nothing changes then. */
int sandbox_configure(struct sandbox *s, json_object *section, char *err, size_t errsz);

/* Make path (a host folder) the workspace of the runs that start from
 * now on, or none with NULL. The folder is resolved (realpath) and must
 * be a directory the box can show at its own path: not /, not the home
 * folder itself, not under /usr, /etc, /proc, /dev, /sys or the box's
 * /code, and not /work or /tmp themselves (workspace/admit.h). -EINVAL
 * (or -errno) with a sentence in err; the workspace is then none. */
int sandbox_set_workspace(struct sandbox *s, const char *path, char *err, size_t errsz);

/* The host folder the runs see (sandbox_set_workspace), or NULL. */
const char *sandbox_workspace(const struct sandbox *s);
/* Whether runs are to see a workspace at all (sandbox.workspace.mode). */
bool sandbox_workspace_on(const struct sandbox *s);
/* The Python a python run would use now (box/pyenv.h): sbx_pyenv_find
 * with the config's sandbox section and the workspace runs see. */
int sandbox_python(const struct sandbox *s, struct sbx_pyenv *ret, char *err, size_t errsz);
/* The limits a run gets when its request names none (sandbox.limits). */
const struct sbx_limits *sandbox_limits(const struct sandbox *s);

/* The cgroup runs go under, as sandbox_new decided (the "cgroup"
 * setting): true when there is one, its SBX_CG_* controllers
 * (host/cgroup.h) in *ret_controllers, and in *ret_why the sentence that
 * says which directory, or why there is none (borrowed). */
bool sandbox_cgroup(const struct sandbox *s, unsigned *ret_controllers, const char **ret_why);

/* Blocking work (kiln doctor's probes) on a job thread of the sandbox
 * (host/job.h): done and free_fn on the loop; cancelled and waited for by
 * sandbox_free. */
int sandbox_job_start(struct sandbox *s, sbx_job_work_fn work, sbx_job_done_fn done,
                      sbx_job_free_fn free_fn, void *data, struct sbx_job **ret);

/* Kill every run still alive (their done callbacks are not called), wait
 * for every pid 1 to be gone and every job thread to end. */
void sandbox_free(struct sandbox *s);

/* sandbox_free for a caller about to exit whose runs are over (kiln run,
 * once its program's status is known: pid 1 reported it after every
 * other process of the box was reaped, so the box's writes are final).
 * What only waits for the kernel (each pid 1's own end, its namespaces'
 * teardown, the cgroups' removal) is handed to a reaper, a forked
 * process off the caller's session, terminal and stdio, which does it as
 * sandbox_free does and exits; the caller's other threads must have
 * ended. s is gone either way (the caller neither uses nor frees it
 * again). 1: handed over (the caller exits), 0: freed in place (nothing
 * was left to wait for, or no fork). */
int sandbox_free_apart(struct sandbox *s);
