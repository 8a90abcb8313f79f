/* run_sink.c: the notification sink and the JSON of a run's outcome (see
 * run_sink.h). */
#include "methods/run_sink.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "core/buf.h"
#include "core/json.h"
#include "methods/workspace_edit.h"
#include "kiln.h"
#include "rpc/dispatch.h"
#include "rpc/peer.h"
#include "sandbox/session/session.h"

const char *run_signal_name(int sig, char *buf, size_t size)
{
	const char *abbrev = sigabbrev_np(sig);
	snprintf(buf, size, "SIG%s", abbrev ? abbrev : "UNKNOWN");
	return buf;
}

static void on_drain(void *data)
{
	struct run_notify *n = data;
	struct run *run = n->run;
	n->run = NULL;
	n->room = false;
	if (run)
		run_resume_output(run);
}

/* One notification per chunk, in the order the sandbox read them; while
 * the client does not read its queue, the run pauses (the program then
 * blocks on its full pipe) until the queue drains. */
/* After a chunk went out: pause the run while the client's queue is over
 * its high-water mark. */
static enum run_flow output_flow(struct run_notify *n, struct run *run)
{
	struct kiln *k = n->k;
	if (!k->peer || !rpc_peer_congested(k->peer) || n->run)
		return RUN_CONTINUE;
	if (rpc_peer_on_drain(k->peer, on_drain, n) < 0)
		return RUN_CONTINUE;
	n->run = run;
	n->room = false;
	return RUN_PAUSE;
}

static enum run_flow notify_output(void *data, struct run *run, enum run_stream stream,
                                   const char *text, size_t len)
{
	struct run_notify *n = data;
	struct kiln *k = n->k;
	if (!k->rpc)
		return RUN_CONTINUE;
	json_object *p = json_object_new_object();
	json_object_object_add(p, "runId", json_object_new_string(run_id(run)));
	json_object_object_add(p, "stream", json_object_new_string(run_stream_name(stream)));
	json_object_object_add(p, "text", json_object_new_string_len(text, (int)len));
	rpc_notify(k->rpc, "run/output", p);
	return output_flow(n, run);
}

/* A client's pipe with less room than this takes text through the queue:
 * a message per few kilobytes would cost more than the copy it saves. */
#define RELAY_ROOM_MIN (64u * 1024)

/* The same notification, its text spliced from the box's pipe to the
 * client's (run.h's relay): params are written around it as json_write()
 * writes notify_output's object, {"runId":..,"stream":..,"text":"..."}. */
static size_t notify_relay(void *data, struct run *run, enum run_stream stream, const char *text,
                           size_t len, int fd, enum run_flow *ret_flow)
{
	struct run_notify *n = data;
	struct kiln *k = n->k;
	if (!k->rpc)
		return 0;
	size_t room;
	if (rpc_notify_splice_room(k->rpc, &room) < 0)
		return 0;
	if (room < len) {
		if (room < RELAY_ROOM_MIN)
			return 0;
		/* As much as fits, cut on a character boundary. */
		for (len = room; len > 0 && ((unsigned char)text[len] & 0xc0) == 0x80;)
			len--;
	}
	static const char a[] = "{\"runId\":", b[] = ",\"stream\":", c[] = ",\"text\":\"";
	struct buf h;
	buf_init(&h, 256);
	const char *id = run_id(run), *name = run_stream_name(stream);
	int r;
	if ((r = buf_append(&h, a, sizeof(a) - 1)) < 0 ||
	    (r = json_write_string(&h, id, strlen(id))) < 0 ||
	    (r = buf_append(&h, b, sizeof(b) - 1)) < 0 ||
	    (r = json_write_string(&h, name, strlen(name))) < 0 ||
	    (r = buf_append(&h, c, sizeof(c) - 1)) < 0 ||
	    (r = rpc_notify_splice(k->rpc, "run/output", h.data, h.len, fd, len, "\"}", 2)) < 0) {
		buf_release(&h);
		return 0;
	}
	buf_release(&h);
	*ret_flow = output_flow(n, run);
	return len;
}

/* How much notify_relay could take now. When the client's pipe is full
 * or something is queued, the run waits for the client to read (its
 * program then blocks on its own full pipe) rather than have its text
 * copied into the queue. Not when the pipe has a little room: it is
 * writable then, and a wait for it to be writable would end at once,
 * again and again; that chunk goes the usual way. */
static size_t notify_relay_room(void *data, struct run *run, enum run_flow *ret_flow)
{
	struct run_notify *n = data;
	struct kiln *k = n->k;
	size_t room;
	if (!k->rpc || !k->peer || n->run || rpc_notify_splice_room(k->rpc, &room) < 0)
		return 0;
	if (room >= RELAY_ROOM_MIN)
		return room;
	if (!rpc_peer_queued(k->peer) && rpc_peer_splice_room(k->peer) > 0)
		return 0;
	if (rpc_peer_on_room(k->peer, on_drain, n) < 0)
		return 0;
	n->run = run;
	n->room = true;
	*ret_flow = RUN_PAUSE;
	return 0;
}

json_object *run_artifact_json(const struct run_artifact *a)
{
	json_object *o = json_object_new_object();
	json_object_object_add(o, "runId", json_object_new_string(a->run_id));
	json_object_object_add(o, "name", json_object_new_string(a->name));
	json_object_object_add(o, "size", json_object_new_int64((int64_t)a->size));
	json_object_object_add(o, "mimeType", json_object_new_string(a->mime_type));
	if (a->base64) {
		json_object_object_add(o, "encoding", json_object_new_string("base64"));
		json_object_object_add(o, "data", json_object_new_string(a->base64));
	} else if (a->path) {
		json_object_object_add(o, "path", json_object_new_string(a->path));
	} else {
		json_object_object_add(o, "omitted",
		                       json_object_new_string(a->omitted ? a->omitted : "unknown"));
	}
	return o;
}

static void notify_artifact(void *data, struct run *run, const struct run_artifact *a)
{
	(void)run;
	struct run_notify *n = data;
	if (n->k->rpc)
		rpc_notify(n->k->rpc, "run/artifact", run_artifact_json(a));
}

json_object *run_display_json(const struct run_display *d)
{
	json_object *o = json_object_new_object();
	json_object_object_add(o, "runId", json_object_new_string(d->run_id));
	json_object_object_add(o, "data", json_object_get(d->data));
	json_object_object_add(o, "metadata", json_object_get(d->metadata));
	return o;
}

static void notify_display(void *data, struct run *run, const struct run_display *d)
{
	(void)run;
	struct run_notify *n = data;
	if (n->k->rpc)
		rpc_notify(n->k->rpc, "run/display", run_display_json(d));
}

/* run/status: a run that waits for a slot (sandbox.maxConcurrentRuns)
 * says so, and says when it starts. */
static void notify_status(void *data, struct run *run, const struct run_status *st)
{
	(void)run;
	struct run_notify *n = data;
	if (!n->k->rpc)
		return;
	json_object *p = json_object_new_object();
	json_object_object_add(p, "runId", json_object_new_string(st->run_id));
	json_object_object_add(
	    p, "state", json_object_new_string(st->state == RUN_QUEUED ? "queued" : "running"));
	if (st->state == RUN_QUEUED)
		json_object_object_add(p, "position", json_object_new_int64((int64_t)st->position));
	json_object_object_add(p, "running", json_object_new_int64((int64_t)st->running));
	json_object_object_add(p, "maxConcurrentRuns",
	                       json_object_new_int64((int64_t)st->max_running));
	rpc_notify(n->k->rpc, "run/status", p);
}

static const struct run_sink notify_sink = {.output = notify_output,
                                            .artifact = notify_artifact,
                                            .display = notify_display,
                                            .status = notify_status,
                                            .measure = json_string_fit,
                                            .plain = json_string_verbatim,
                                            .relay = notify_relay,
                                            .relay_room = notify_relay_room};

int run_notify_start(struct run_notify *n, struct kiln *k, const char *language, const char *code,
                     json_object *limits, run_done_fn done, void *data, struct run **ret_run)
{
	*n = (struct run_notify){.k = k};
	return run_start(k->sandbox, &notify_sink, n, language, code, limits, done, data, ret_run);
}

int run_notify_start_session(struct run_notify *n, struct kiln *k, struct sbx_session *ss,
                             const char *code, json_object *limits, run_done_fn done, void *data,
                             struct run **ret_run, char *err, size_t errsz)
{
	*n = (struct run_notify){.k = k};
	return sbx_session_run(ss, &notify_sink, n, code, limits, done, data, ret_run, err, errsz);
}

void run_notify_release(struct run_notify *n)
{
	if (n->run && n->k->peer) {
		if (n->room)
			rpc_peer_cancel_room(n->k->peer, on_drain, n);
		else
			rpc_peer_cancel_drain(n->k->peer, on_drain, n);
	}
	n->run = NULL;
	n->room = false;
}

/* What the box's cgroup saw, or null without one. */
static json_object *cgroup_json(const struct run_outcome *o)
{
	if (!o->have_cgroup)
		return NULL;
	const struct sbx_cgroup_stats *st = &o->cgroup;
	json_object *c = json_object_new_object();
	json_object_object_add(c, "cpuMs", json_object_new_int64((int64_t)(st->cpu_usec / 1000)));
	json_object_object_add(
	    c, "memoryPeakBytes",
	    st->memory_peak_bytes ? json_object_new_int64((int64_t)st->memory_peak_bytes) : NULL);
	json_object_object_add(c, "oomKills", json_object_new_int64((int64_t)st->oom_kills));
	json_object_object_add(c, "forksRefused",
	                       json_object_new_int64((int64_t)st->pids_max_hits));
	return c;
}

/* {"wallMs": {"value": N, "enforcedBy": "..."}, ...} */
static json_object *limits_json(const struct run_outcome *o)
{
	json_object *l = json_object_new_object();
	struct sbx_limit info;
	for (size_t i = 0; i < sbx_limit_info(&o->limits, o->enforced, i, &info); i++) {
		json_object *e = json_object_new_object();
		json_object_object_add(e, "value", json_object_new_int64((int64_t)info.value));
		json_object_object_add(e, "enforcedBy", json_object_new_string(info.enforced_by));
		json_object_object_add(l, info.name, e);
	}
	return l;
}

json_object *run_python_json(const struct sbx_pyenv *py)
{
	json_object *p = json_object_new_object();
	if (!p)
		return NULL;
	json_object_object_add(p, "path", json_object_new_string(py->python));
	json_object_object_add(p, "prefix",
	                       py->prefix[0] ? json_object_new_string(py->prefix) : NULL);
	json_object_object_add(p, "version",
	                       py->version[0] ? json_object_new_string(py->version) : NULL);
	json_object_object_add(p, "source", json_object_new_string(py->source));
	if (py->project && py->prefix[0])
		json_object_object_add(p, "systemSitePackages",
		                       json_object_new_boolean(py->system_site));
	return p;
}

json_object *run_outcome_json(const struct run_outcome *o)
{
	json_object *r = json_object_new_object();
	if (!r)
		return NULL;
	json_object_object_add(r, "runId", json_object_new_string(o->run_id));
	if (o->exited) {
		json_object_object_add(r, "exitCode", json_object_new_int(o->exit_code));
		json_object_object_add(r, "signal", NULL);
	} else {
		char sig[24];
		json_object_object_add(r, "exitCode", NULL);
		json_object_object_add(
		    r, "signal",
		    json_object_new_string(run_signal_name(o->signal, sig, sizeof(sig))));
	}
	json_object_object_add(r, "timedOut", json_object_new_boolean(o->timed_out));
	json_object_object_add(r, "truncated", json_object_new_boolean(o->truncated));
	json_object_object_add(r, "durationMs", json_object_new_int64((int64_t)o->duration_ms));
	json_object_object_add(r, "cpuMs", json_object_new_int64((int64_t)o->cpu_ms));
	json_object_object_add(r, "maxRssKb", json_object_new_int64(o->max_rss_kb));
	json_object_object_add(r, "limits", limits_json(o));
	json_object_object_add(r, "cgroup", cgroup_json(o));
	json_object_object_add(r, "warmBox", json_object_new_boolean(o->warm));
	if (!o->session_id)
		json_object_object_add(r, "zygote", json_object_new_boolean(o->zygote));
	run_workspace_json(r, o);
	if (o->python)
		json_object_object_add(r, "python", run_python_json(o->python));
	if (o->session_id) {
		json_object_object_add(r, "sessionId", json_object_new_string(o->session_id));
		json_object_object_add(r, "sessionEnded",
		                       json_object_new_boolean(o->session_ended));
		if (o->session_why)
			json_object_object_add(r, "sessionEndReason",
			                       json_object_new_string(o->session_why));
		if (o->error_name) {
			json_object *e = json_object_new_object();
			json_object_object_add(e, "name", json_object_new_string(o->error_name));
			json_object_object_add(
			    e, "value",
			    json_object_new_string(o->error_value ? o->error_value : ""));
			json_object_object_add(r, "error", e);
		}
	}
	return r;
}
