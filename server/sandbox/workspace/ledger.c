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
	bool *applied; /* by an earlier apply (set on the loop) */
	size_t n;
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
                                 const struct sbx_ws_changes *c)
{
	struct record *r = calloc(1, sizeof(*r));
	if (!r)
		return NULL;
	r->refs = 1;
	snprintf(r->run_id, sizeof(r->run_id), "%s", run_id);
	r->items = calloc(c->n, sizeof(*r->items));
	r->applied = calloc(c->n, sizeof(*r->applied));
	bool oom = !r->items || !r->applied || !(r->root = strdup(root));
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
                       const struct sbx_ws_changes *c)
{
	if (!c || !c->n || !root)
		return;
	if (!s->ledger && !(s->ledger = calloc(1, sizeof(*s->ledger))))
		return;
	struct sbx_ws_ledger *l = s->ledger;
	struct record *r = record_new(run_id, root, c);
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
