/* ledger.c: recent runs' workspace changes, and applying them off the
 * loop (see ledger.h). A run's record is shared between the table and
 * the applies under way (a count of holders, on the loop's thread only):
 * a record dropped from the table lives until its last apply ends. */
#include "sandbox/workspace/ledger.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/util.h"
#include "sandbox/host/job.h"
#include "sandbox/state.h"
#include "sandbox/workspace/apply.h"

struct record {
	unsigned refs;
	char run_id[24];
	char *root;
	struct sbx_ws_change *items;
	bool *applied;  /* by an earlier apply (set on the loop) */
	bool *declined; /* by workspace/declineChanges: never applied since */
	size_t n;
	/* The session whose run it was ("" for a one-shot run), and its
	 * box's generation (a reset's box is another layer). */
	char session_id[24];
	unsigned gen;
	uint64_t text_bytes;
};

struct sbx_ws_ledger {
	struct record *recs[SBX_WS_LEDGER_RUNS]; /* oldest first */
	size_t n;
	uint64_t text_bytes;
};

static void record_unref(struct record *r)
{
	if (!r || --r->refs)
		return;
	for (size_t i = 0; i < r->n; i++) {
		free(r->items[i].path);
		free(r->items[i].text);
		free(r->items[i].stored);
	}
	free(r->items);
	free(r->applied);
	free(r->declined);
	free(r->root);
	free(r);
}

static char *dup_or_null(const char *s, bool *oom)
{
	char *d = s ? strdup(s) : NULL;
	if (s && !d)
		*oom = true;
	return d;
}

static struct record *record_new(const char *run_id, const char *root,
                                 const struct sbx_ws_changes *c, const char *session_id,
                                 unsigned gen)
{
	struct record *r = calloc(1, sizeof(*r));
	if (!r)
		return NULL;
	r->refs = 1;
	snprintf(r->run_id, sizeof(r->run_id), "%s", run_id);
	snprintf(r->session_id, sizeof(r->session_id), "%s", session_id ? session_id : "");
	r->gen = gen;
	r->items = calloc(c->n, sizeof(*r->items));
	r->applied = calloc(c->n, sizeof(*r->applied));
	r->declined = calloc(c->n, sizeof(*r->declined));
	bool oom = !r->items || !r->applied || !r->declined || !(r->root = strdup(root));
	for (size_t i = 0; !oom && i < c->n; i++) {
		const struct sbx_ws_change *from = &c->items[i];
		struct sbx_ws_change *to = &r->items[r->n++];
		*to = *from;
		to->path = dup_or_null(from->path, &oom);
		to->stored = dup_or_null(from->stored, &oom);
		to->text = NULL;
		if (from->text && (to->text = malloc(from->text_len + 1))) {
			memcpy(to->text, from->text, from->text_len + 1);
			r->text_bytes += from->text_len;
		} else if (from->text) {
			oom = true;
		}
	}
	if (oom) {
		record_unref(r);
		return NULL;
	}
	return r;
}

static void drop_oldest(struct sbx_ws_ledger *l)
{
	struct record *r = l->recs[0];
	l->text_bytes -= r->text_bytes;
	memmove(l->recs, l->recs + 1, (l->n - 1) * sizeof(*l->recs));
	l->n--;
	record_unref(r);
}

void sbx_ws_ledger_put(struct sandbox *s, const char *run_id, const char *root,
                       const struct sbx_ws_changes *c, const char *session_id, unsigned gen)
{
	if (!c || !c->n || !root)
		return;
	if (!s->ledger && !(s->ledger = calloc(1, sizeof(*s->ledger))))
		return;
	struct sbx_ws_ledger *l = s->ledger;
	struct record *r = record_new(run_id, root, c, session_id, gen);
	if (!r)
		return;
	while (l->n &&
	       (l->n == SBX_WS_LEDGER_RUNS || l->text_bytes + r->text_bytes > SBX_WS_LEDGER_TEXT))
		drop_oldest(l);
	l->recs[l->n++] = r;
	l->text_bytes += r->text_bytes;
}

void sbx_ws_ledger_free(struct sandbox *s)
{
	if (!s->ledger)
		return;
	while (s->ledger->n)
		drop_oldest(s->ledger);
	free(steal_pointer(&s->ledger));
}

/* --- applying ---------------------------------------------------------- */

struct apply_job {
	struct record *rec;
	size_t *idx; /* the changes to apply */
	size_t nidx;
	bool *ok; /* per idx: applied */
	struct sbx_ws_apply_result res;
	bool oom, told;
	sbx_ws_applied_fn done;
	void *data;
};

static void skip(struct apply_job *j, const char *path, const char *why)
{
	struct sbx_ws_skip *s = realloc(j->res.skipped, (j->res.nskipped + 1) * sizeof(*s));
	if (!s) {
		j->oom = true;
		return;
	}
	j->res.skipped = s;
	s[j->res.nskipped] = (struct sbx_ws_skip){strdup(path), strdup(why)};
	if (!s[j->res.nskipped].path || !s[j->res.nskipped].why) {
		free(s[j->res.nskipped].path);
		free(s[j->res.nskipped].why);
		j->oom = true;
		return;
	}
	j->res.nskipped++;
}

static void on_report(void *data, const char *path, const char *why)
{
	struct apply_job *j = data;
	if (why) {
		skip(j, path, why);
		return;
	}
	char **a = realloc(j->res.applied, (j->res.napplied + 1) * sizeof(*a));
	if (!a || !(a[j->res.napplied] = strdup(path))) {
		if (a)
			j->res.applied = a;
		j->oom = true;
		return;
	}
	j->res.applied = a;
	j->res.napplied++;
}

static void apply_work(void *data, const atomic_bool *cancel)
{
	struct apply_job *j = data;
	for (size_t i = 0; i < j->nidx; i++) {
		if (cancel && atomic_load(cancel))
			return;
		size_t before = j->res.napplied;
		int r =
		    sbx_ws_apply(j->rec->root, &j->rec->items[j->idx[i]], 1, NULL, on_report, j);
		if (r < 0)
			skip(j, j->rec->items[j->idx[i]].path, "the workspace cannot be opened");
		j->ok[i] = j->res.napplied > before;
	}
}

static void apply_done(void *data)
{
	struct apply_job *j = data;
	for (size_t i = 0; i < j->nidx; i++)
		if (j->ok[i])
			j->rec->applied[j->idx[i]] = true;
	j->told = true;
	j->done(j->data, &j->res);
}

static void apply_free(void *data)
{
	struct apply_job *j = data;
	if (!j->told && j->done)
		j->done(j->data, NULL); /* cancelled: the server is ending */
	for (size_t i = 0; i < j->res.napplied; i++)
		free(j->res.applied[i]);
	free(j->res.applied);
	for (size_t i = 0; i < j->res.nskipped; i++) {
		free(j->res.skipped[i].path);
		free(j->res.skipped[i].why);
	}
	free(j->res.skipped);
	free(j->idx);
	free(j->ok);
	record_unref(j->rec);
	free(j);
}

static struct record *find(struct sandbox *s, const char *run_id)
{
	for (size_t i = 0; s->ledger && i < s->ledger->n; i++)
		if (strcmp(s->ledger->recs[i]->run_id, run_id) == 0)
			return s->ledger->recs[i];
	return NULL;
}

int sbx_ws_apply_start(struct sandbox *s, const char *run_id, const char *const *paths,
                       sbx_ws_applied_fn done, void *data)
{
	struct record *rec = find(s, run_id);
	if (!rec)
		return -ENOENT;
	struct apply_job *j = calloc(1, sizeof(*j));
	if (!j)
		return -ENOMEM;
	j->rec = rec;
	rec->refs++;
	j->done = done;
	j->data = data;
	j->idx = calloc(rec->n ? rec->n : 1, sizeof(*j->idx));
	j->ok = calloc(rec->n ? rec->n : 1, sizeof(*j->ok));
	if (!j->idx || !j->ok) {
		j->done = NULL;
		apply_free(j);
		return -ENOMEM;
	}
	for (size_t i = 0; i < rec->n; i++) {
		if (!sbx_ws_listed(paths, rec->items[i].path))
			continue;
		if (rec->applied[i])
			skip(j, rec->items[i].path, "it was applied already");
		else if (rec->declined[i])
			skip(j, rec->items[i].path, "it was declined (workspace/declineChanges)");
		else
			j->idx[j->nidx++] = i;
	}
	/* A path asked for that this run did not change. */
	for (const char *const *p = paths; p && *p; p++) {
		bool found = false;
		for (size_t i = 0; i < rec->n && !found; i++)
			found = strcmp(rec->items[i].path, *p) == 0;
		if (!found)
			skip(j, *p, "not a change of this run");
	}
	int r =
	    j->oom ? -ENOMEM : sbx_job_start(&s->base, apply_work, apply_done, apply_free, j, NULL);
	if (r < 0) {
		j->done = NULL;
		apply_free(j);
	}
	return r;
}

/* --- declining ---------------------------------------------------------- */

/* Whether a run of rec's session box after rec changed path, and that
 * change was not declined: the session then shows that run's version. */
static const char *changed_later(const struct sbx_ws_ledger *l, size_t at, const char *path)
{
	const struct record *rec = l->recs[at];
	for (size_t k = at + 1; k < l->n; k++) {
		const struct record *o = l->recs[k];
		if (strcmp(o->session_id, rec->session_id) != 0 || o->gen != rec->gen)
			continue;
		for (size_t i = 0; i < o->n; i++)
			if (!o->declined[i] && strcmp(o->items[i].path, path) == 0)
				return o->run_id;
	}
	return NULL;
}

static int pick_add(struct sbx_ws_decline_list *dl, const char *path, enum sbx_ws_kind kind,
                    bool exact, const char *kept, const char *later)
{
	struct sbx_ws_decline_item *items = realloc(dl->items, (dl->n + 1) * sizeof(*items));
	if (!items)
		return -ENOMEM;
	dl->items = items;
	struct sbx_ws_decline_item *it = &items[dl->n];
	*it = (struct sbx_ws_decline_item){.kind = kind, .exact = exact, .kept = kept};
	if (later)
		snprintf(it->later, sizeof(it->later), "%s", later);
	if (!(it->path = strdup(path)))
		return -ENOMEM;
	dl->n++;
	return 0;
}

int sbx_ws_ledger_pick(struct sandbox *s, const char *run_id, const char *const *paths,
                       struct sbx_ws_decline_list *ret)
{
	struct sbx_ws_ledger *l = s->ledger;
	size_t at = 0;
	while (l && at < l->n && strcmp(l->recs[at]->run_id, run_id) != 0)
		at++;
	if (!l || at == l->n)
		return -ENOENT;
	const struct record *rec = l->recs[at];
	struct sbx_ws_decline_list dl = {.gen = rec->gen};
	snprintf(dl.run_id, sizeof(dl.run_id), "%s", rec->run_id);
	snprintf(dl.session_id, sizeof(dl.session_id), "%s", rec->session_id);
	int r = (dl.root = strdup(rec->root)) ? 0 : -ENOMEM;
	for (size_t i = 0; r >= 0 && i < rec->n; i++) {
		const struct sbx_ws_change *c = &rec->items[i];
		if (!sbx_ws_listed(paths, c->path))
			continue;
		const char *later = rec->session_id[0] ? changed_later(l, at, c->path) : NULL;
		const char *kept = rec->applied[i] ? "it was applied already: your folder holds it"
		                   : later         ? "a later run of the session changed it again"
		                   : !c->exact     ? "its name is not valid UTF-8"
		                                   : NULL;
		r = pick_add(&dl, c->path, c->kind, c->exact, kept, later);
	}
	for (const char *const *p = paths; r >= 0 && p && *p; p++) {
		bool found = false;
		for (size_t i = 0; i < rec->n && !found; i++)
			found = strcmp(rec->items[i].path, *p) == 0;
		if (!found)
			r = pick_add(&dl, *p, SBX_WS_CREATED, true, "not a change of this run",
			             NULL);
	}
	if (r < 0) {
		sbx_ws_decline_list_release(&dl);
		return r;
	}
	*ret = dl;
	return 0;
}

void sbx_ws_ledger_declined(struct sandbox *s, const char *run_id, const char *path)
{
	struct record *rec = find(s, run_id);
	for (size_t i = 0; rec && i < rec->n; i++)
		if (strcmp(rec->items[i].path, path) == 0)
			rec->declined[i] = true;
}

void sbx_ws_decline_list_release(struct sbx_ws_decline_list *dl)
{
	for (size_t i = 0; i < dl->n; i++)
		free(dl->items[i].path);
	free(dl->items);
	free(dl->root);
	*dl = (struct sbx_ws_decline_list){0};
}
