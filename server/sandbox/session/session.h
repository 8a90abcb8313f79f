/* session.h: sessions that keep state between runs, as a notebook's
 * kernel does. A session is one box (as isolated as a run's, with a run's
 * limits for its whole life: memory, processes, files) running kiln's
 * session driver (session_driver.py, embedded in the binary), which keeps
 * one Python namespace alive. Each run in it is a struct run (run.h) with
 * the per-run limits (wall clock, CPU, output): the code's output comes
 * from the box's pipes, its rich output (MIME bundles) and its end over
 * the driver's channel, a socket with framed, capped messages (see
 * docs/sandbox.md, "Sessions"). A run that reaches a limit is interrupted
 * (SIGINT, as a notebook's interrupt); if the code does not stop within
 * a grace period, the session is ended. A session that ended stays known
 * by its id, with the reason, until it is reset or closed. The sandbox
 * lists every session: sandbox_free ends them all. */
#pragma once

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sandbox/run/run.h"

struct sandbox;
struct sbx_session;

/* How many sessions (open or ended) a server keeps. */
#define SBX_SESSIONS_MAX 16

/* Open a session of language ("python") with limits (the request's
 * limits object or NULL, borrowed, laid over the config's): its box is
 * built and its driver started; the first run waits for it. -EINVAL with
 * a sentence in err (unknown language, a language without sessions, bad
 * limits, too many sessions), other -errno with a sentence when the box
 * cannot be built. */
int sbx_session_open(struct sandbox *s, const char *language, json_object *limits,
                     struct sbx_session **ret, char *err, size_t errsz);

/* The session with id, or NULL. */
struct sbx_session *sbx_session_find(struct sandbox *s, const char *id);

/* "s1", "s2", ... */
const char *sbx_session_id(const struct sbx_session *ss);

/* NULL while the session is alive; why it ended otherwise. */
const char *sbx_session_ended(const struct sbx_session *ss);

/* Run code in the session, as run_start does for a fresh box: output,
 * displays and the end go to sink and done (which may start the next run
 * in this session, but not reset or close it). limits: the request's, of
 * which only wallMs, cpuMs and outputBytes may be given (the others are
 * the session's). A run asked for while the run before it, cancelled, is
 * being interrupted waits for that interrupt's end and then goes (one
 * at most: a notebook's queue of one). -EINVAL (bad limits, code too
 * large), -EBUSY (a run is under way, or one waits already) and -EPIPE
 * (the session has ended) with a sentence in err; -ENOMEM. done is never
 * called from here. */
int sbx_session_run(struct sbx_session *ss, const struct run_sink *sink, void *sink_data,
                    const char *code, json_object *limits, run_done_fn done, void *data,
                    struct run **ret_run, char *err, size_t errsz);

/* Forget everything: end the box (a run under way ends, its done called
 * with session_ended and the reason) and start a fresh one with the same
 * language and limits, also for a session that had ended. -errno with a
 * sentence. */
int sbx_session_reset(struct sbx_session *ss, char *err, size_t errsz);

/* End the session and forget it: every process of its box is dead on
 * return; a run under way ends, its done called (after the session is
 * gone) with session_ended and the reason. */
void sbx_session_close(struct sbx_session *ss);

/* What the session holds, as its driver last described it after a run:
 * an array of {name, type, shape?, dtype?, columns?, len?, value?}
 * (borrowed; NULL before the first run). */
json_object *sbx_session_vars(const struct sbx_session *ss);

/* What a decline did: the paths declined (the session no longer shows
 * them, the ledger forgets them) and those kept, each with why (a
 * sentence). Borrowed for the call. */
struct sbx_session_decline_path {
	const char *path, *why;
};
struct sbx_session_decline_result {
	const char **declined;
	size_t ndeclined;
	struct sbx_session_decline_path *kept;
	size_t nkept;
};
/* Called on the loop with what was done, or res NULL when the server is
 * ending first. */
typedef void (*sbx_session_declined_fn)(void *data, const struct sbx_session_decline_result *res);

/* Decline run_id's workspace changes (those whose path is in paths,
 * NULL-terminated; NULL: all; session_decline.c): none can be applied
 * afterwards. For a run of a live session, each is taken out of the
 * session's layer by its driver, so that the session shows the host
 * folder's file again (a file the host lacks is removed, the host's bytes
 * restored otherwise: at most 4 MiB in all, never a hidden name's), and
 * the layer is then compared with the host: a change still there is
 * kept, with why. A one-shot run's changes, or those of a session box
 * that is gone, are only forgotten. A change applied already, one a
 * later run of the session changed again, or a path that is no change of
 * the run is kept with why. Returns 0 (done is called, maybe before
 * this returns), -ENOENT when no changes of run_id are kept, -EBUSY with
 * a sentence in err when the session is busy, -ENOMEM. */
int sbx_session_decline(struct sandbox *s, const char *run_id, const char *const *paths,
                        sbx_session_declined_fn done, void *data, char *err, size_t errsz);

/* End every session (sandbox_free). */
void sbx_sessions_free(struct sandbox *s);

/* A session's runs reach it through the struct run_owner_ops it gives
 * them (run_private.h; session.c's run_ops), never by name. */
