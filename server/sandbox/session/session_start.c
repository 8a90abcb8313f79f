/* session_start.c: a session's box and driver started (see session.h):
 * the box built, or forked from the Python zygote when it can be; when
 * the zygote's spare is on its way, the session opens without a box and
 * its start goes on from the loop once the spare comes or fails (a run's
 * frame waits meanwhile); with a workspace, the driver waits for the
 * list of what to hide. */
#include "sandbox/session/session_box.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/log.h"
#include "core/loop.h"
#include "core/util.h"
#include "sandbox/host/cgroup.h"
#include "sandbox/workspace/hide.h"
#include "sandbox/run/run_private.h"
#include "sandbox/state.h"
#include "sandbox/workspace/wsdiff.h"
#include "sandbox/pools/zygote.h"
#include "sandbox/host/base.h"

/* The driver's source, embedded at build time (session_embed.sh). */
extern const char sbx_session_driver[];

#define DRIVER_PATH "code/kiln_session.py"

/* GO for the session's box: the driver. */
static int send_driver_go(struct sbx_session *ss, const struct sbx_plan_owned *po,
                          const struct sbx_rlimit *rl, size_t nrl, int hide_fd)
{
	char driver_arg[] = "/" DRIVER_PATH;
	char *argv[] = {po->plan.argv[0], driver_arg, NULL};
	return sbx_box_send_go(&ss->box, po, DRIVER_PATH, argv, rl, nrl, sbx_session_driver,
	                       hide_fd);
}

int sess_read_list(int fd, char **ret, size_t *ret_len)
{
	struct stat st;
	if (fstat(fd, &st) < 0)
		return -errno;
	if (st.st_size < 0 || (uint64_t)st.st_size > SESSION_LIST_MAX)
		return -E2BIG;
	size_t len = (size_t)st.st_size;
	char *b = malloc(len + 1);
	if (!b)
		return -ENOMEM;
	size_t off = 0;
	while (off < len) {
		ssize_t n = pread(fd, b + off, len - off, (off_t)off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			free(b);
			return n < 0 ? -errno : -EIO;
		}
		off += (size_t)n;
	}
	b[len] = '\0';
	*ret = b;
	*ret_len = len;
	return 0;
}

static int cmp_records(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

int sess_index_list(const char *list, size_t len, const char ***ret, size_t *ret_n)
{
	size_t n = 0;
	for (size_t off = 0; off < len; off += strlen(list + off) + 1)
		n++;
	const char **idx = calloc(n ? n : 1, sizeof(*idx));
	if (!idx)
		return -ENOMEM;
	size_t i = 0;
	for (size_t off = 0; off < len; off += strlen(list + off) + 1)
		idx[i++] = list + off;
	qsort(idx, n, sizeof(*idx), cmp_records);
	*ret = idx;
	*ret_n = n;
	return 0;
}

/* The list of what to hide is ready: the driver starts (its records kept
 * for the runs' checks, session.c), or the session ends saying why. */
static void on_hide_list(void *data, int fd, const char *why)
{
	struct sbx_session *ss = data;
	ss->hide_req = NULL;
	struct sbx_plan_owned *po = steal_pointer(&ss->go_plan);
	free(steal_pointer(&ss->masked));
	free(steal_pointer(&ss->masked_idx));
	int r = fd < 0 ? fd : sess_read_list(fd, &ss->masked, &ss->masked_len);
	if (r >= 0)
		r = sess_index_list(ss->masked, ss->masked_len, &ss->masked_idx, &ss->masked_n);
	if (r >= 0)
		r = ss->zygote_box ? sbx_zygote_send_hide(&ss->box, fd)
		                   : send_driver_go(ss, po, ss->go_rl, ss->go_nrl, fd);
	sbx_plan_free(po);
	if (fd >= 0)
		close(fd);
	/* A run asked for before the list went is checked now. */
	if (r >= 0 && ss->check_frame && !ss->check_req)
		r = sess_check_start(ss);
	if (r < 0) {
		char msg[sizeof(ss->why)];
		snprintf(msg, sizeof(msg), "kiln could not start the session: %s",
		         fd < 0 ? why : strerror(-r));
		sess_end_session(ss, msg, 0, false);
	}
}

static void on_spare(void *data, int r);

/* The driver forked from the Python zygote (zygote.h), when it is on and
 * ready: its imports are the zygote's, its box is a fresh one like a
 * built session box (with the workspace, its pid 1 waits for the list of
 * what to hide, as a built box's does for GO). 0, -EINPROGRESS (the
 * spare is on its way: on_spare), or -errno (then the box is built as
 * below). */
static int from_zygote(struct sbx_session *ss, const struct sbx_plan_owned *po)
{
	char *layout = sbx_plan_layout(&po->plan);
	if (!layout)
		return -ENOMEM;
	int r = sbx_zygote_take_session(ss->sbx, po, layout, &ss->life, "/" DRIVER_PATH,
	                                sbx_session_driver, &ss->box, on_spare, ss, &ss->zwait);
	free(layout);
	return r;
}

/* Start the driver in the box, the zygote's (zygote true) or one built
 * now, and watch it. po is taken. */
static int start_driver(struct sbx_session *ss, struct sbx_plan_owned *po, bool zygote, char *err,
                        size_t errsz)
{
	struct sandbox *s = ss->sbx;
	int step = -1;
	int r =
	    zygote ? 0 : sbx_box_build(&s->base, po, SBX_BOX_SESSION, &ss->box, &step, err, errsz);
	if (r < 0) {
		if (step >= 0) {
			char hint[640];
			sbx_failure_hint(step, -r, hint, sizeof(hint));
			snprintf(err, errsz,
			         "kiln cannot open the session: the sandbox could not be built (%s "
			         "failed: %s).%s",
			         sbx_step_name(step), strerror(-r), hint);
		}
		sbx_plan_free(po);
		return r;
	}
	if (ss->box.cg && (r = sbx_cgroup_set_limits(ss->box.cg, ss->life.memory_bytes,
	                                             ss->life.processes, ss->life.cpu_cores)) < 0)
		log_warn("session %s: the cgroup took only some limits: %s", ss->id, strerror(-r));
	/* The session lives longer than one run's CPU time: each run's is
	 * the driver's to set (a soft RLIMIT_CPU), and the wall clock holds
	 * whatever the code does to it. */
	struct sbx_rlimit rl[SBX_MAX_RLIMITS];
	size_t nrl = sbx_plan_rlimits_for(&ss->life, "python", rl);
	for (size_t i = 0; i < nrl; i++)
		if (rl[i].resource == RLIMIT_CPU)
			rl[i].lim.rlim_cur = rl[i].lim.rlim_max = RLIM_INFINITY;
	ss->zygote_box = zygote;
	if (zygote && !po->plan.ws_host) {
		/* From the zygote, the driver is on its way already (and r may
		 * hold the cgroup's warning above). */
		r = 0;
		sbx_plan_free(po);
	} else if (po->plan.ws_host) {
		/* GO when the list is ready; the box builds meanwhile. */
		memcpy(ss->go_rl, rl, nrl * sizeof(*rl));
		ss->go_nrl = nrl;
		ss->go_plan = po;
		r = sbx_hide_request(s, on_hide_list, ss, &ss->hide_req);
	} else {
		r = send_driver_go(ss, po, rl, nrl, -1);
		sbx_plan_free(po);
	}
	if (r < 0) {
		snprintf(err, errsz, "kiln cannot open the session: cannot start its program (%s)",
		         strerror(-r));
		sbx_plan_free(steal_pointer(&ss->go_plan));
		sbx_box_release(&s->base, &ss->box);
		return r;
	}
	struct loop *loop = ss->loop;
	if (loop_watch(loop, ss->box.pidfd, LOOP_READ, sess_on_pid1, ss) < 0 ||
	    loop_watch(loop, ss->box.status_fd, LOOP_READ, sess_on_status, ss) < 0 ||
	    loop_watch(loop, ss->box.ctl_fd, LOOP_READ, sess_on_ctl, ss) < 0) {
		sess_drop_box(ss);
		return -ENOMEM;
	}
	ss->alive = true;
	ss->why[0] = '\0';
	/* A run's frame that waited for the box goes now (LOOP_WRITE). */
	sess_watch_io(ss);
	sess_arm_idle(ss);
	log_debug("session %s: pid %d%s", ss->id, (int)ss->box.pid,
	          zygote ? ", from the zygote" : "");
	return 0;
}

/* The zygote's spare the session waited for came (r >= 0: its box holds
 * it) or did not (its box is built now). If the driver cannot start,
 * the session ends with why, and a run under way is answered so. */
static void on_spare(void *data, int r)
{
	struct sbx_session *ss = data;
	ss->zwait = NULL;
	char err[sizeof(ss->why)];
	r = start_driver(ss, steal_pointer(&ss->zplan), r >= 0, err, sizeof(err));
	if (r >= 0)
		return;
	if (r == -ENOMEM)
		snprintf(err, sizeof(err), "kiln cannot open the session: out of memory");
	/* sess_drop_box (above) or not: it is over either way. */
	ss->alive = true;
	sess_end_session(ss, err, 0, false);
}

/* Build the box and start the driver; or, when the zygote's spare is on
 * its way, open the session without a box: it is alive, a run's frame
 * waits, and the start goes on from the loop (on_spare). */
int sess_start_box(struct sbx_session *ss, char *err, size_t errsz)
{
	struct sandbox *s = ss->sbx;
	struct sbx_plan_owned *po = NULL;
	struct sbx_plan_ws ws;
	int r = sbx_plan_await(s->base.host, sbx_plan_ws_of(s, &ws), s->config.section,
	                       ss->language, &ss->life, &po, err, errsz);
	if (r < 0)
		return r;
	/* A fresh box: a fresh, empty upper layer. */
	ss->gen++;
	sbx_ws_snap_free(steal_pointer(&ss->snap));
	ss->snap_lent = false;
	free(ss->ws_host);
	ss->ws_host = po->plan.ws_host ? strdup(po->plan.ws_host) : NULL;
	/* The folder, noted before the box opens it (as warm.c's). */
	struct stat st;
	if (ss->ws_host && stat(ss->ws_host, &st) < 0) {
		r = -errno;
		snprintf(err, errsz, "kiln cannot open the session: %s: %s", ss->ws_host,
		         strerror(-r));
		sbx_plan_free(po);
		return r;
	}
	ss->ws_dev = ss->ws_host ? st.st_dev : 0;
	ss->ws_ino = ss->ws_host ? st.st_ino : 0;
	r = from_zygote(ss, po);
	if (r != -EINPROGRESS)
		return start_driver(ss, po, r >= 0, err, errsz);
	ss->zplan = po;
	ss->alive = true;
	ss->why[0] = '\0';
	sess_arm_idle(ss);
	log_debug("session %s: waits for the zygote's box", ss->id);
	return 0;
}

/* The first record of list (len bytes) that the box does not mask, or
 * NULL: every name to hide now was hidden when the box was made. */
static const char *unmasked(const struct sbx_session *ss, const char *list, size_t len)
{
	for (size_t off = 0; off < len; off += strlen(list + off) + 1) {
		const char *rec = list + off;
		if (!bsearch(&rec, ss->masked_idx, ss->masked_n, sizeof(*ss->masked_idx),
		             cmp_records))
			return rec;
	}
	return NULL;
}

/* The list made for the held-back run: its frame goes to the driver, or,
 * if something to hide appeared since the box masked its list (the box
 * would show it: its masks are made once, before the driver starts),
 * the session ends before the code runs, saying so. */
static void on_run_list(void *data, int fd, const char *why)
{
	struct sbx_session *ss = data;
	ss->check_req = NULL;
	char msg[sizeof(ss->why)];
	char *list = NULL;
	size_t len = 0;
	int r = fd < 0 ? fd : sess_read_list(fd, &list, &len);
	if (fd >= 0)
		close(fd);
	const char *rec = r >= 0 ? unmasked(ss, list, len) : NULL;
	struct stat st;
	if (r >= 0 &&
	    (stat(ss->ws_host, &st) < 0 || st.st_dev != ss->ws_dev || st.st_ino != ss->ws_ino)) {
		/* The list is the new folder's; the box shows the old one. */
		snprintf(
		    msg, sizeof(msg),
		    "the workspace folder %s is not the one this session's box was made with "
		    "(moved away, or made anew at that path); the run did not start. Reset the "
		    "session (session/reset) for a box that shows the folder there now",
		    ss->ws_host);
	} else if (r < 0) {
		snprintf(msg, sizeof(msg),
		         "kiln could not check the workspace for names to hide before the run: %s",
		         fd < 0 ? why : strerror(-r));
	} else if (rec) {
		snprintf(
		    msg, sizeof(msg),
		    "%s (a name sandbox.workspace.hide lists) appeared in the workspace after "
		    "this session's box was made, which cannot hide it; the run did not start. "
		    "Reset the session (session/reset) for a box that hides it",
		    rec + 1);
	} else {
		json_object *frame = steal_pointer(&ss->check_frame);
		r = sess_queue_frame(ss, frame);
		json_object_put(frame);
		if (r >= 0) {
			free(list);
			sess_write_out(ss);
			return;
		}
		snprintf(msg, sizeof(msg), "session %s cannot take the run now: %s", ss->id,
		         strerror(-r));
	}
	free(list);
	sess_end_session(ss, msg, 0, false);
}

int sess_check_start(struct sbx_session *ss)
{
	return sbx_hide_request(ss->sbx, on_run_list, ss, &ss->check_req);
}
