/* sandbox.c: the sandbox subsystem's start and stop (see sandbox.h). */
#include "sandbox/sandbox.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "config.h"
#include "core/json.h"
#include "core/log.h"
#include "core/loop.h"
#include "kiln.h"
#include "sandbox/box.h"
#include "sandbox/cgroup.h"
#include "sandbox/child.h"
#include "sandbox/filter.h"
#include "sandbox/run.h"

int sandbox_new(struct kiln *k, struct sandbox **ret_sandbox)
{
	struct sandbox *s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->k = k;
	s->euid = geteuid();
	s->egid = getegid();
	s->landlock_abi = sbx_landlock_abi();
	int r;
	/* Runs get a cgroup v2 each when one is writable (sandbox.cgroup:
	 * "auto", "off" or a delegated directory); rlimits apply either way. */
	if (k && k->config) {
		const char *setting = "auto";
		json_get_string(config_section(k->config, "sandbox"), "cgroup", &setting);
		char why[PATH_MAX + 128] = "";
		r = sbx_cgroup_root_open(setting, &s->cgroups, why, sizeof(why));
		if (r < 0) {
			log_error("sandbox.cgroup: %s", why);
			free(s);
			return r;
		}
		log_debug("sandbox: %s", why);
	}
	*ret_sandbox = s;
	return 0;
}

int sandbox_filter_ready(struct sandbox *s)
{
	if (s->filter.filter)
		return 0;
	int r = sbx_filter_build(&s->filter);
	if (r < 0) {
		log_error("sandbox: cannot compile the seccomp filter: %s", strerror(-r));
		return r;
	}
	log_debug("sandbox: seccomp filter of %u instructions, Landlock ABI %d", s->filter.len,
	          s->landlock_abi);
	return 0;
}

struct sbx_dying {
	struct sandbox *s;
	struct sbx_dying *next;
	int pidfd;
	struct sbx_cgroup *cg;
};

static void forget(struct sbx_dying *d)
{
	for (struct sbx_dying **pp = &d->s->dying; *pp; pp = &(*pp)->next)
		if (*pp == d) {
			*pp = d->next;
			break;
		}
	free(d);
}

static void on_dead(struct loop *loop, int fd, unsigned events, void *data)
{
	(void)events;
	siginfo_t si = {0};
	int r = waitid((idtype_t)P_PIDFD, (id_t)fd, &si, WEXITED | WNOHANG);
	if ((r < 0 && errno != ECHILD) || (r == 0 && si.si_pid == 0))
		return;
	loop_unwatch(loop, fd);
	close(fd);
	struct sbx_dying *d = data;
	sbx_cgroup_free(d->cg);
	forget(d);
}

void sandbox_reap_later(struct sandbox *s, int pidfd, struct sbx_cgroup *cg)
{
	struct sbx_dying *d = calloc(1, sizeof(*d));
	if (!d || !s->k || loop_watch(s->k->loop, pidfd, LOOP_READ, on_dead, d) < 0) {
		/* No way to wait in the loop: wait here (it is exiting). */
		free(d);
		sbx_box_kill(pidfd);
		sbx_cgroup_free(cg);
		return;
	}
	*d = (struct sbx_dying){.s = s, .next = s->dying, .pidfd = pidfd, .cg = cg};
	s->dying = d;
}

void sandbox_free(struct sandbox *s)
{
	if (!s)
		return;
	if (s->warm_timer)
		loop_timer_stop(s->k->loop, s->warm_timer);
	while (s->runs)
		run_cancel(s->runs);
	while (s->dying) {
		struct sbx_dying *d = s->dying;
		loop_unwatch(s->k->loop, d->pidfd);
		sbx_box_kill(d->pidfd);
		sbx_cgroup_free(d->cg);
		forget(d);
	}
	sbx_cgroup_root_free(s->cgroups);
	sbx_filter_free(&s->filter);
	free(s);
}
