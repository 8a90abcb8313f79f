/* store.c: the intent state's lifetime, its proposals (a bounded list,
 * newest first) and the document versions seen. */
#include "intent/intent.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/json.h"
#include "core/loop.h"
#include "intent/internal.h"
#include "kiln.h"
#include "llm/http.h"

/* A client rarely looks back further than a few proposals; the bound keeps
 * a long session's memory flat. */
#define MAX_PROPOSALS 128
#define MAX_DOCS      256

struct intent *intent_new(struct kiln *k)
{
	struct intent *in = calloc(1, sizeof(*in));
	if (!in)
		return NULL;
	in->k = k;
	in->audit_fd = -1;
	return in;
}

static void proposal_free(struct intent_proposal *p)
{
	free(p->language);
	free(p->code);
	free(p->answer);
	free(p->explanation);
	free(p->uri);
	free(p->text);
	free(p->session_id);
	json_object_put(p->range);
	json_object_put(p->position);
	json_object_put(p->messages);
	json_object_put(p->edit);
	json_object_put(p->hunks);
	json_object_put(p->diagnostics);
	free(p);
}

void intent_free(struct intent *in)
{
	if (!in)
		return;
	http_free(in->http);
	while (in->proposals) {
		struct intent_proposal *p = in->proposals;
		in->proposals = p->next;
		proposal_free(p);
	}
	for (size_t i = 0; i < in->ndocs; i++)
		free(in->docs[i].uri);
	free(in->docs);
	intent_sessions_free(in);
	if (in->audit_fd >= 0)
		close(in->audit_fd);
	free(in);
}

struct http *intent_http(struct intent *in)
{
	if (!in->http)
		in->http = http_new(in->k->loop);
	return in->http;
}

struct intent_proposal *intent_proposal_new(struct intent *in)
{
	struct intent_proposal *p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	/* Ids count from p1 in each server, so that a session recorded with
	 * --record replays as it was (the audit log tells servers apart by
	 * pid and time). */
	snprintf(p->id, sizeof(p->id), "p%u", ++in->next_id);
	p->version = -1;
	p->next = in->proposals;
	in->proposals = p;
	/* Drop the oldest past the bound. */
	size_t n = 0;
	for (struct intent_proposal **pp = &in->proposals; *pp; pp = &(*pp)->next) {
		if (++n > MAX_PROPOSALS) {
			struct intent_proposal *old = *pp;
			*pp = NULL;
			while (old) {
				struct intent_proposal *next = old->next;
				proposal_free(old);
				old = next;
			}
			break;
		}
	}
	return p;
}

struct intent_proposal *intent_proposal_find(struct intent *in, const char *id)
{
	for (struct intent_proposal *p = in->proposals; p; p = p->next)
		if (strcmp(p->id, id) == 0)
			return p;
	return NULL;
}

json_object *intent_proposal_json(const struct intent_proposal *p)
{
	json_object *o = json_object_new_object();
	json_object_object_add(o, "proposalId", json_object_new_string(p->id));
	json_object_object_add(o, "language", json_object_new_string(p->language));
	json_object_object_add(o, "code", json_object_new_string(p->code));
	json_object_object_add(o, "edit", json_object_get(p->edit));
	json_object_object_add(o, "hunks", json_object_get(p->hunks));
	json_object_object_add(o, "diagnostics", json_object_get(p->diagnostics));
	json_object_object_add(o, "verdict", json_object_new_string(p->verdict_name));
	if (p->explanation)
		json_object_object_add(o, "explanation", json_object_new_string(p->explanation));
	return o;
}

static struct intent_doc *doc_find(struct intent *in, const char *uri)
{
	for (size_t i = 0; i < in->ndocs; i++)
		if (strcmp(in->docs[i].uri, uri) == 0)
			return &in->docs[i];
	return NULL;
}

/* The entry of uri, made (at version, in a new life) when there is none. */
static struct intent_doc *doc_get(struct intent *in, const char *uri, int64_t version)
{
	struct intent_doc *d = doc_find(in, uri);
	if (d)
		return d;
	if (in->ndocs == MAX_DOCS) {
		/* Forget the oldest: a document not seen for that long gets
		 * its version back with its next change. */
		free(in->docs[0].uri);
		memmove(in->docs, in->docs + 1, (in->ndocs - 1) * sizeof(*in->docs));
		in->ndocs--;
	}
	if (in->ndocs == in->docs_cap) {
		size_t cap = in->docs_cap ? in->docs_cap * 2 : 8;
		struct intent_doc *nd = realloc(in->docs, cap * sizeof(*nd));
		if (!nd)
			return NULL;
		in->docs = nd;
		in->docs_cap = cap;
	}
	char *u = strdup(uri);
	if (!u)
		return NULL;
	d = &in->docs[in->ndocs++];
	*d = (struct intent_doc){.uri = u, .version = version, .life = ++in->lives};
	return d;
}

void intent_doc_seen(struct intent *in, const char *uri, int64_t version)
{
	struct intent_doc *d = doc_get(in, uri, version);
	if (d && version > d->version)
		d->version = version;
}

void intent_doc_opened(struct intent *in, const char *uri, int64_t version)
{
	struct intent_doc *d = doc_get(in, uri, version);
	if (!d)
		return;
	if (d->closed) {
		d->version = version;
		d->life = ++in->lives;
		d->closed = false;
	} else if (version > d->version) {
		d->version = version;
	}
}

int64_t intent_doc_version(struct intent *in, const char *uri)
{
	struct intent_doc *d = doc_find(in, uri);
	return d ? d->version : -1;
}

uint64_t intent_doc_life(struct intent *in, const char *uri)
{
	struct intent_doc *d = doc_find(in, uri);
	return d ? d->life : 0;
}

void intent_doc_closed(struct intent *in, const char *uri)
{
	struct intent_doc *d = doc_find(in, uri);
	if (d)
		d->closed = true;
}
