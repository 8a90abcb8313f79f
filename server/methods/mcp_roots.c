/* mcp_roots.c: `kiln mcp`'s workspace, from the client's roots or the
 * working directory (see mcp_roots.h). */
#include "methods/mcp_roots.h"

#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/json.h"
#include "core/log.h"
#include "kiln.h"
#include "methods/workspace_edit.h"
#include "rpc/dispatch.h"
#include "sandbox/sandbox.h"

struct mcp_roots {
	struct kiln *k;
	bool offered; /* initialize's capabilities.roots */
	bool asked;   /* a roots/list was sent once */
	bool out;     /* one is unanswered (out_id) */
	bool again;   /* list_changed came meanwhile: ask once more */
	int64_t out_id;
	char *path;     /* what was last given to sandbox_set_workspace, or NULL */
	char note[600]; /* mcp_roots_note(), "" for none */
	struct mcp_roots_wait *waiting;
};

/* Make path the workspace (NULL: none), unless it already is. from says
 * where it came from, for the log and the note. */
static void set_path(struct mcp_roots *m, const char *path, const char *from)
{
	struct sandbox *s = m->k->sandbox;
	if (!s)
		return;
	if (path && m->path && strcmp(path, m->path) == 0 && sandbox_workspace(s))
		return;
	free(m->path);
	m->path = path ? strdup(path) : NULL;
	m->note[0] = '\0';
	char err[512];
	if (sandbox_set_workspace(s, path, err, sizeof(err)) < 0) {
		if (!sandbox_workspace_on(s))
			return;
		log_warn("mcp: no workspace: %s is %s, and %s", from, path, err);
		/* The client named a folder the agent works in: say in each run
		 * why the code does not see it. The working directory that
		 * cannot be shown is the usual case of a host started from / and
		 * is only logged. */
		if (strcmp(from, "the working directory") != 0)
			snprintf(m->note, sizeof(m->note), "%s", err);
		return;
	}
	if (path)
		log_info("mcp: workspace %s (%s)", sandbox_workspace(s), from);
}

static void use_cwd(struct mcp_roots *m)
{
	char cwd[PATH_MAX];
	if (!getcwd(cwd, sizeof(cwd))) {
		log_warn("mcp: no workspace: the working directory is unknown: %s",
		         strerror(errno));
		set_path(m, NULL, "the working directory");
		return;
	}
	set_path(m, cwd, "the working directory");
}

/* The first file:// root of a ListRootsResult, else the working
 * directory (an empty list, or roots that are not folders on this
 * machine). */
static void use_roots(struct mcp_roots *m, json_object *result)
{
	json_object *roots = json_get(result, "roots");
	size_t n = roots && json_object_is_type(roots, json_type_array)
	               ? json_object_array_length(roots)
	               : 0;
	for (size_t i = 0; i < n; i++) {
		const char *uri;
		char path[PATH_MAX];
		if (json_get_string(json_object_array_get_idx(roots, i), "uri", &uri) < 0 ||
		    file_uri_path(uri, path, sizeof(path)) < 0)
			continue;
		if (n > 1)
			log_info("mcp: the client lists %zu roots; runs see the first folder, %s",
			         n, path);
		set_path(m, path, "the client's root");
		return;
	}
	if (n)
		log_info("mcp: none of the client's %zu roots is a file:// folder; runs see the "
		         "working directory",
		         n);
	use_cwd(m);
}

static void wake(struct mcp_roots *m)
{
	/* Detached first: a ready callback may reply, free its call and
	 * never touch the list again. */
	struct mcp_roots_wait *w = m->waiting;
	m->waiting = NULL;
	while (w) {
		struct mcp_roots_wait *next = w->next;
		w->next = NULL;
		w->ready(w->data);
		w = next;
	}
}

static int send_ask(struct mcp_roots *m);

static void on_roots(void *data, json_object *result, json_object *error)
{
	struct mcp_roots *m = data;
	m->out = false;
	if (result && json_object_is_type(result, json_type_object)) {
		use_roots(m, result);
	} else {
		const char *why = "no result";
		if (error)
			json_get_string(error, "message", &why);
		log_warn("mcp: roots/list got no roots (%s); runs see the working directory", why);
		use_cwd(m);
	}
	if (m->again) {
		m->again = false;
		if (send_ask(m) == 0)
			return;
	}
	wake(m);
}

static int send_ask(struct mcp_roots *m)
{
	m->asked = true;
	int r = rpc_request(m->k->rpc, "roots/list", NULL, MCP_ROOTS_TIMEOUT_MS, on_roots, m,
	                    &m->out_id);
	if (r < 0) {
		log_warn("mcp: cannot ask the client for its roots: %s", strerror(-r));
		return r;
	}
	m->out = true;
	return 0;
}

struct mcp_roots *mcp_roots_new(struct kiln *k)
{
	struct mcp_roots *m = calloc(1, sizeof(*m));
	if (!m)
		return NULL;
	m->k = k;
	use_cwd(m);
	return m;
}

void mcp_roots_free(struct mcp_roots *m)
{
	if (!m)
		return;
	if (m->out && m->k->rpc)
		rpc_request_forget(m->k->rpc, m->out_id);
	free(m->path);
	free(m);
}

void mcp_roots_offered(struct mcp_roots *m, json_object *client_caps)
{
	json_object *roots = json_get(client_caps, "roots");
	m->offered = roots && json_object_is_type(roots, json_type_object);
}

void mcp_roots_ask(struct mcp_roots *m)
{
	if (!m->offered || !m->k->rpc)
		return;
	if (m->out) {
		m->again = true;
		return;
	}
	send_ask(m);
}

void mcp_roots_ask_once(struct mcp_roots *m)
{
	if (!m->asked)
		mcp_roots_ask(m);
}

bool mcp_roots_wait(struct mcp_roots *m, struct mcp_roots_wait *w, void (*ready)(void *data),
                    void *data)
{
	if (!m || !m->out)
		return false;
	*w = (struct mcp_roots_wait){.next = m->waiting, .ready = ready, .data = data};
	m->waiting = w;
	return true;
}

void mcp_roots_unwait(struct mcp_roots *m, struct mcp_roots_wait *w)
{
	if (!m)
		return;
	for (struct mcp_roots_wait **p = &m->waiting; *p; p = &(*p)->next)
		if (*p == w) {
			*p = w->next;
			w->next = NULL;
			return;
		}
}

const char *mcp_roots_note(const struct mcp_roots *m)
{
	return m && m->note[0] ? m->note : NULL;
}
