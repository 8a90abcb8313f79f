/* config.h: the config's "sandbox" section, checked and resolved once
 * (config.c). Above box/ (a section's env is checked by planning a box
 * with it), below every layer that reads the settings. */
#pragma once

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sandbox/host/limits.h"

/* The section, checked and resolved once (at
 * initialize, or when `kiln run` starts) so that a bad value is reported
 * against the config, naming the member, not against every request. */
struct sbx_config {
	/* An owned copy of the section: the plan reads "languages" and
	 * "env" from it, the limits "limits" and "maxLimits" (all checked
	 * here). */
	json_object *section;
	struct sbx_limits limits; /* the defaults a request lays its own over */
	bool warm_boxes;
	char *artifact_dir; /* where large artifacts are copied; NULL: nowhere */
	uint64_t artifact_inline_bytes, artifact_max_files, artifact_max_bytes;
	/* The copy directory's caps (artifact.h's prune): what the runs'
	 * copies in artifact_dir may hold on disk, and for how long; 0: no
	 * cap. Kept after each run that copied, and at start. */
	uint64_t artifact_dir_max_bytes, artifact_dir_max_age_ms;
	/* sandbox.workspace: whether a run sees the workspace (mode
	 * "overlay", the default, or "none") and which names are hidden
	 * from it (shell patterns matched against each entry's name at any
	 * depth: `*`, `?`, `[...]`). */
	bool workspace_on;
	char **hide; /* ws_nhide patterns, owned */
	size_t nhide;
	/* sandbox.workspace.maxEntries: past this many entries in the
	 * workspace, runs fail rather than show it unchecked (hide.h). */
	unsigned long hide_max_entries;
	uint64_t session_idle_ms; /* sandbox.sessionIdleMs; 0: never */
	/* sandbox.zygote: Python runs fork from a zygote (zygote.h), whose
	 * modules are sandbox.zygotePreload (read from section). */
	bool zygote;
	/* sandbox.maxConcurrentRuns: runs that hold a box at once; more
	 * wait in the queue (run.h). Default: twice the online cores, at
	 * least 2. */
	uint64_t max_concurrent_runs;
	/* sandbox.maxQueuedRuns: runs that may wait; one more is refused
	 * (-EAGAIN, with the reason). Default 64. */
	uint64_t max_queued_runs;
};

/* The default sandbox.workspace.hide. */
extern const char *const sbx_default_hide[];

/* The default of sandbox.workspace.maxEntries: past this many entries
 * (files, directories, links...) in the workspace, runs fail, saying
 * so, rather than show what was not checked. */
#define SBX_HIDE_DEFAULT_MAX_ENTRIES 4000000ul
/* What it may be set to: the picture holds every directory in memory. */
#define SBX_HIDE_MAX_MAX_ENTRIES 100000000ul

/* Whether sandbox.zygote is on when the config does not say. */
#define SBX_ZYGOTE_DEFAULT true

/* The most patterns sandbox.workspace.hide (and hideReplacingDefaults)
 * may hold each. */
#define SBX_MAX_HIDE 64

/* Check section (the config's "sandbox" object, borrowed, may be NULL)
 * and resolve it into ret. -EINVAL with a sentence in err that names the
 * member ("sandbox.limits.wallMs must be a positive integer"); -ENOMEM. */
int sbx_config_resolve(json_object *section, struct sbx_config *ret, char *err, size_t errsz);
void sbx_config_release(struct sbx_config *c);
