/* zygote.h: the Python zygote. A box (box.h, SBX_BOX_ZYGOTE) runs kiln's
 * zygote program (zygote.py, embedded in the binary), a Python that has
 * already imported what data code needs (sandbox.zygotePreload). A Python
 * run then does not build a box and start an interpreter: it takes the
 * *spare*, a box the zygote made for the next run before it came. The
 * zygote clones the spare's pid 1 into fresh namespaces inside its box;
 * it mounts its own /proc, /tmp and /work, and forks the program's
 * process, which drops every capability, sets no_new_privs, Landlock
 * and the full seccomp filter, and waits. The run sends that pid 1 its
 * code, rlimits and mode (and a session's channel): it writes the code to
 * /code, the program's process sets the rlimits and runs the code:
 * through kiln's one-shot runner (oneshot.py, as the normal path's argv
 * has it), as a script, or, for a session, the session driver with its
 * channel as stdin. The run's box is a struct sbx_box like any other: its
 * pid 1 (by pidfd), its status socket (READY, FAIL, EXIT as child.h has
 * them), its stdout and stderr pipes (and a session's channel); run.c and
 * session.c watch it as they watch a box they built. The next spare is
 * asked for when a run ends (as a warm box is built; after a session's
 * run, once no session's run has started for a while). With warm boxes off
 * (sandbox.warmBoxes), nothing is made ahead: no spare waits, and a run
 * asks for its box when it comes and waits for it (-EINPROGRESS). See
 * docs/sandbox.md, "The zygote", and docs/security.md.
 *
 * One zygote per configuration: its key is the run's box layout, the
 * program's argv and environment, the preload list and the interpreter
 * file's identity; a run whose key differs retires the zygote (its runs
 * still going finish) and takes the normal path, and a new zygote is
 * built after it. Runs take the normal path whenever the zygote is not
 * ready, is off (sandbox.zygote, on by default), or cannot do what the
 * run needs: languages other than Python, and with the workspace a
 * scratch size other than the configured one. The zygote is built once
 * the server is idle after the first Python run or session that could
 * have used it.
 *
 * The workspace: the zygote's box holds the host folder read-only (at
 * /kiln-ws) and its path as empty directories; the zygote never reads
 * it. A spare's pid 1 mounts the run's overlay at the folder's path
 * (lower: that folder, upper: a fresh tmpfs, sent as SBX_MSG_UPPER),
 * covers /kiln-ws, and its program applies Landlock with the
 * workspace's rule. A run with the workspace then sends the list of
 * what to hide (hide.h, asked for after the run was) with
 * sbx_zygote_send_hide: pid 1 masks it before the program may run, as
 * child.c does at GO. The folder is part of the key: another folder is
 * another zygote. */
#pragma once

#include <stdbool.h>

#include "sandbox/host/limits.h"
#include "sandbox/pools/zygote_wait.h"

struct sandbox;
struct sbx_box;
struct sbx_plan_owned;

/* The default sandbox.zygotePreload. */
extern const char *const sbx_zygote_default_preload[];

/* Give a run of language, whose box would be built from po (with layout
 * its sbx_plan_layout()), the zygote's spare box: on success b holds it
 * (pidfd, status socket, pipes; a cgroup with the run's limits when the
 * sandbox has them) and the program is already on its way, so the caller
 * watches b and sends no GO. -EAGAIN when the zygote or its spare is not
 * ready (being built, or asked for now with warm boxes on, or another run
 * waits for it),
 * -ENOTSUP when the run does not fit the zygote or it is off, other
 * -errno when the zygote failed this run (it is retired); b is then
 * untouched and the caller takes the normal path. Never waits on the
 * loop: when the spare was asked for and its pid 1 has not reported yet
 * (a run right after the last one, while the zygote clones it; with warm
 * boxes off, every run: its spare is asked for now),
 * -EINPROGRESS with *ret_wait set: the run is taken on, and fn(data, r)
 * says later, from the loop, when the spare's pidfd came (or that it did
 * not: the spare died, the zygote was retired, or ZYGOTE_ANSWER_MS
 * passed). b, po's plan and what the caller needs for the normal path
 * must outlive the wait; code, layout and lim are copied. */
int sbx_zygote_take(struct sandbox *s, const char *language, const struct sbx_plan_owned *po,
                    const char *layout, const struct sbx_limits *lim, const char *code,
                    struct sbx_box *b, sbx_zygote_wait_fn fn, void *data,
                    struct sbx_zygote_wait **ret_wait);

/* As sbx_zygote_take, for a session (session.h) whose box would be built
 * from po: the box's program, at path (in the box), is the session driver
 * (driver's text), with its channel (b->ctl_fd) as stdin, the session's
 * life limits but no RLIMIT_CPU (the driver sets each run's), as
 * session.c's own box has them. The same results. */
int sbx_zygote_take_session(struct sandbox *s, const struct sbx_plan_owned *po, const char *layout,
                            const struct sbx_limits *life, const char *path, const char *driver,
                            struct sbx_box *b, sbx_zygote_wait_fn fn, void *data,
                            struct sbx_zygote_wait **ret_wait);

/* For a box from sbx_zygote_take(_session) whose plan has the
 * workspace: the list of what to hide (hide.h; a sealed memfd, not
 * taken). Its pid 1 masks every entry, or fails the run at
 * SBX_STEP_HIDE, before the program runs; until this comes, it waits.
 * -errno when it cannot be sent (the caller fails the run). */
int sbx_zygote_send_hide(struct sbx_box *b, int hide_fd);

/* A run has ended: build the zygote a run asked for, 10 ms from now
 * unless another run starts (as a warm box is built), or ask the zygote
 * for the next run's spare (with warm boxes on). */
void sbx_zygote_idle(struct sandbox *s);

/* A session's run has ended: as sbx_zygote_idle, but the next spare is
 * asked for only once no run of a session has started for a while
 * (ZYGOTE_SESSION_QUIET_MS), or at once when a run or a session needs
 * it (which then waits for it, as with warm boxes off). A session does
 * not take the spare for its next cell, which often comes at once; the
 * zygote's clone of the spare (its pid 1's namespaces and mounts, the
 * program's process and lockdown: 10-20 ms of CPU) would share the CPUs
 * with that cell. */
void sbx_zygote_session_idle(struct sandbox *s);

/* A session's run starts: the spare owed (sbx_zygote_session_idle) is
 * not asked for while it runs; its end arms the wait again. */
void sbx_zygote_session_busy(struct sandbox *s);

/* Drop the zygote: its box is killed (sandbox_free). */
void sbx_zygote_free(struct sandbox *s);
