/* sandbox.c: the sandbox subsystem's start and stop (see sandbox.h). */
#include "sandbox/sandbox.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/log.h"
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
	int r = sbx_filter_build(&s->filter);
	if (r < 0) {
		log_error("sandbox: cannot compile the seccomp filter: %s", strerror(-r));
		free(s);
		return r;
	}
	log_debug("sandbox: seccomp filter of %u instructions, Landlock ABI %d", s->filter.len,
	          s->landlock_abi);
	*ret_sandbox = s;
	return 0;
}

void sandbox_free(struct sandbox *s)
{
	if (!s)
		return;
	while (s->runs)
		run_cancel(s->runs);
	sbx_filter_free(&s->filter);
	free(s);
}
