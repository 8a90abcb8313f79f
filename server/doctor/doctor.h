/* doctor.h: what kiln can promise on this machine for this user (`kiln
 * doctor`, the kiln/doctor method): one report of items (the kernel, user
 * namespaces, seccomp, Landlock, a box built, the workspace overlay,
 * cgroups, Python and its modules, Node, the model endpoint), each ok,
 * degraded or missing, with what was found and the exact fix. The host
 * probes block (a child that tries a user namespace, worker boxes that
 * run the interpreters), so they run on a sandbox job thread, never on
 * the loop; the endpoint is asked on the loop through llm/'s model list,
 * with a short timeout. The report is a struct; its JSON and its text
 * (report.c) are made at the edges that print or send it. */
#pragma once

#include <json-c/json.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>

#include "sandbox/host/limits.h"
#include "sandbox/box/pyenv.h"

struct sandbox;
struct http;
struct llm_config;
struct doctor_run;

enum doctor_status { DOCTOR_OK, DOCTOR_DEGRADED, DOCTOR_MISSING };

/* The items, in the order they are shown. doctor.c's table gives each
 * its id ("userns"), its name ("user namespaces") and whether kiln can
 * run no code at all without it. */
enum doctor_item_id {
	DOCTOR_KERNEL,
	DOCTOR_USERNS,
	DOCTOR_SECCOMP,
	DOCTOR_LANDLOCK,
	DOCTOR_BOX,
	DOCTOR_WORKSPACE,
	DOCTOR_CGROUP,
	DOCTOR_PYTHON,
	DOCTOR_MODULES,
	DOCTOR_NODE,
	DOCTOR_ENDPOINT,
	DOCTOR_N
};

struct doctor_item {
	enum doctor_status status;
	char
	    value[PATH_MAX + 64]; /* what was found: "6.18.0", "ABI 7", "/usr/bin/python3 3.11.2" */
	char detail[1024];        /* why it is degraded or missing (or ""), naming the cause */
	char fix[512];            /* the exact command or setting (or "") */
};

#define DOCTOR_MODULES_N 3 /* numpy, pandas, matplotlib */

/* Facts the items are made from, for machines (--json's "facts"). */
struct doctor_report {
	struct doctor_item items[DOCTOR_N];
	char kernel_release[65];
	bool userns;
	bool seccomp_filter;
	int landlock_abi;
	char workspace[PATH_MAX]; /* "" when none */
	bool overlay;             /* the overlay with a tmpfs upper layer mounts */
	int cgroup_version;       /* 2: unified, 1: v1 (perhaps with a cgroup2 beside it), 0 */
	bool cgroup_exact;        /* memory and pids limits go to a delegated cgroup v2 */
	char python[PATH_MAX], python_version[32];
	/* Where the Python runs use was found (pyenv.h's sources), and its
	 * environment's folder ("" for none). */
	char python_source[32], python_prefix[PATH_MAX];
	char module_version[DOCTOR_MODULES_N][32]; /* "" when it does not import */
	char node[PATH_MAX], node_version[32];
	char provider[32], url[512]; /* the URL without user:password@ */
	bool endpoint_answers;
};

/* The table: the item's stable id, its name for people. */
const char *doctor_item_id(enum doctor_item_id i);
const char *doctor_item_name(enum doctor_item_id i);
/* "numpy", "pandas", "matplotlib". */
const char *doctor_module_name(int i);
const char *doctor_status_name(enum doctor_status s);

/* 0 when every item is ok, 2 when kiln cannot run code at all (an
 * essential item is missing), else 1. */
int doctor_exit_code(const struct doctor_report *r);

/* What the host probes need, read on the loop's thread from the sandbox,
 * the language registry and the config before the job starts. */
struct doctor_input {
	char workspace[PATH_MAX];    /* "" when runs see none */
	bool workspace_on;           /* sandbox.workspace.mode is not "none" */
	char workspace_refused[512]; /* why the folder asked for is not the workspace, or "" */
	char python[PATH_MAX];       /* the registry's argv[0] for python, or "" */
	/* The project's own Python, when python is Debian's (py_rc 1), or
	 * why the one named or found cannot be used (py_rc < 0, py_err). */
	int py_rc;
	struct sbx_pyenv py;
	char py_err[1024];
	char node[PATH_MAX]; /* ... for javascript */
	unsigned cgroup_controllers;
	bool cgroup_root; /* the sandbox uses a cgroup v2 for its runs */
	char cgroup_why[PATH_MAX + 128];
	/* The limits a run gets (sandbox.limits), copied: the boxes' own, so
	 * that an import slower than the CPU limit shows here as in a run. */
	struct sbx_limits limits;
};

/* Every item but the endpoint, blocking: up to a few hundred ms (a child
 * process and three worker boxes). Never on the loop's thread. */
void doctor_probe_host(const struct doctor_input *in, struct doctor_report *r);

/* The whole report: the host probes on a job of the sandbox, the
 * endpoint on the loop (at most DOCTOR_ENDPOINT_MS). s must have a loop;
 * llm NULL: llm_error says why there is no endpoint; ws_refused (or
 * NULL): why sandbox_set_workspace refused the folder asked for. The
 * workspace is what runs will see (sandbox_workspace). done gets the
 * report (borrowed) on the loop, once, never from inside this call.
 * -ENOMEM. */
#define DOCTOR_ENDPOINT_MS 3000
typedef void (*doctor_done_fn)(void *data, const struct doctor_report *r);
int doctor_start(struct sandbox *s, struct http *h, const struct llm_config *llm,
                 const char *llm_error, const char *ws_refused, doctor_done_fn done, void *data,
                 struct doctor_run **ret);
/* done will not be called. */
void doctor_cancel(struct doctor_run *d);

/* The report for machines: {"exitCode", "items": [{id, name, status,
 * value, detail?, fix?}], "facts": {...}}. New, yours. */
json_object *doctor_report_json(const struct doctor_report *r);
/* For people: one aligned line an item, its fix below it, control
 * characters made visible; color: statuses in colour. */
void doctor_report_print(FILE *f, const struct doctor_report *r, bool color);
