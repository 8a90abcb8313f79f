/* run_session.c: a session's run (session.c): a struct run without a
 * box of its own, whose output, displays and end come from the session,
 * and the session's workspace picture it hands back. */
#include "sandbox/run/run.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/loop.h"
#include "core/util.h"
#include "sandbox/run/run_private.h"
#include "sandbox/state.h"
#include "sandbox/workspace/wsdiff.h"
#include "sandbox/host/base.h"

/* --- a session's run (session.c) ------------------------------------------ */

struct run *run_session_new(struct sandbox *s, const struct run_owner_ops *ops, void *owner,
                            const struct run_sink *sink, void *sink_data,
                            const struct sbx_limits *lim, run_done_fn done, void *data)
{
	struct run *run = run_new(s);
	if (!run)
		return NULL;
	run->owner_ops = ops;
	run->owner = owner;
	run->in_session = true;
	run->sink = sink;
	run->sink_data = sink_data;
	run->done = done;
	run->done_data = data;
	run->limits = *lim;
	run->start_ms = loop_now_ms();
	snprintf(run->id, sizeof(run->id), "r%lu", ++s->next_id);
	snprintf(run->language, sizeof(run->language), "python");
	if (!(run->wall_timer = loop_timer_start(s->base.loop, lim->wall_ms, run_on_wall, run))) {
		run->owner = NULL;
		run_free(run);
		return NULL;
	}
	return run;
}

void run_session_output(struct run *run, int s, const char *buf, size_t n)
{
	if (n)
		run_on_bytes(run, s, buf, n);
}

bool run_session_display(struct run *run, json_object *data, json_object *metadata, size_t bytes)
{
	if (run->truncated)
		return false;
	if (bytes > run->limits.output_bytes - run->out_bytes) {
		/* A display is whole or not at all: the marker says why. */
		run->out_bytes = run->limits.output_bytes;
		run->truncated = true;
		char marker[160];
		int m = snprintf(marker, sizeof(marker),
		                 "\n[kiln: a display of %zu bytes did not fit in the run's output "
		                 "limit (%llu bytes); the run was interrupted]\n",
		                 bytes, (unsigned long long)run->limits.output_bytes);
		run_add_text(run, ERR, marker, (size_t)m, true, false);
		run_flush_output(run);
		run_end_box(run);
		return false;
	}
	run->out_bytes += bytes;
	/* Text before the display goes out before it. */
	run_flush_output(run);
	if (run->sink->display) {
		struct run_display d = {.run_id = run->id, .data = data, .metadata = metadata};
		run->sink->display(run->sink_data, run, &d);
	}
	return true;
}

void run_session_end(struct run *run, const struct run_session_end *e)
{
	for (int s = 0; s < 2; s++)
		run_add_text(run, s, "", 0, true, true);
	run_flush_output(run);
	struct run_outcome o = {.run_id = run->id,
	                        .timed_out = run->timed_out,
	                        .truncated = run->truncated,
	                        .warm = true,
	                        .limits = run->limits,
	                        .cpu_ms = e->cpu_ms,
	                        .max_rss_kb = e->max_rss_kb,
	                        .session_id = e->session_id,
	                        .session_ended = e->why != NULL,
	                        .session_why = e->why,
	                        .error_name = e->error_name,
	                        .error_value = e->error_value};
	switch (e->status) {
	case RUN_SESSION_OK:
	case RUN_SESSION_ERROR:
		o.exited = true;
		o.exit_code = e->status == RUN_SESSION_ERROR;
		break;
	case RUN_SESSION_INTERRUPTED:
		o.signal = SIGINT;
		break;
	case RUN_SESSION_CPU:
		o.signal = SIGXCPU;
		break;
	case RUN_SESSION_DIED:
		if (WIFEXITED(e->wstatus)) {
			o.exited = true;
			o.exit_code = WEXITSTATUS(e->wstatus);
		} else {
			o.signal = WIFSIGNALED(e->wstatus) ? WTERMSIG(e->wstatus) : SIGKILL;
		}
		break;
	}
	o.duration_ms = loop_now_ms() - run->start_ms;
	/* The strings are the caller's: copies live with the run. */
	snprintf(run->sess_id, sizeof(run->sess_id), "%s", e->session_id ? e->session_id : "");
	o.session_id = run->sess_id;
	if (e->why) {
		snprintf(run->sess_why, sizeof(run->sess_why), "%s", e->why);
		o.session_why = run->sess_why;
	}
	if (e->error_name) {
		snprintf(run->err_name, sizeof(run->err_name), "%s", e->error_name);
		snprintf(run->err_value, sizeof(run->err_value), "%s",
		         e->error_value ? e->error_value : "");
		o.error_name = run->err_name;
		o.error_value = run->err_value;
	}
	run->end_ms = loop_now_ms();
	run->outcome = o;
	/* What the run changed under /work/out and in the workspace, off
	 * the loop, then the end. */
	run->box.work_fd = e->work_fd;
	if (e->nchanged && (run->only = calloc(e->nchanged + 1, sizeof(char *))))
		for (size_t i = 0; i < e->nchanged; i++)
			if (!(run->only[i] = strdup(e->changed[i])))
				break;
	if (e->upper_fd >= 0) {
		run->box.upper_fd = e->upper_fd;
		run->snap = e->snap;
		run->snap_gen = e->snap_gen;
		run->snap_lent = true;
		if (!(run->workspace = strdup(e->ws_host))) {
			close(steal_fd(&run->box.upper_fd));
		}
	}
	if (((run->only && run->only[0] && run->box.work_fd >= 0) || run->box.upper_fd >= 0) &&
	    run_start_collecting(run) == 0)
		return;
	run_finish(run, NULL, NULL, NULL);
}
