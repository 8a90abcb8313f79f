/* session.c: conversation history shared by the runs of one sessionId, so
 * that "now plot it by month" can refer to the previous step. Bounded two
 * ways: a token budget per session (oldest turns go first) and a number of
 * sessions (the least recently used goes first). */
#include "intent/intent.h"

#include <stdlib.h>
#include <string.h>

#include "core/json.h"
#include "core/loop.h"
#include "intent/internal.h"

#define MAX_SESSIONS 32

static struct intent_session *find(struct intent *in, const char *id)
{
	for (struct intent_session *s = in->sessions; s; s = s->next)
		if (strcmp(s->id, id) == 0)
			return s;
	return NULL;
}

static void session_free(struct intent_session *s)
{
	free(s->id);
	json_object_put(s->history);
	free(s);
}

void intent_sessions_free(struct intent *in)
{
	while (in->sessions) {
		struct intent_session *s = in->sessions;
		in->sessions = s->next;
		session_free(s);
	}
}

json_object *intent_session_history(struct intent *in, const char *id)
{
	struct intent_session *s = id ? find(in, id) : NULL;
	if (!s)
		return NULL;
	s->used_ms = loop_now_ms();
	return s->history;
}

static void evict_lru(struct intent *in)
{
	size_t n = 0;
	struct intent_session **oldest = NULL;
	for (struct intent_session **pp = &in->sessions; *pp; pp = &(*pp)->next) {
		n++;
		if (!oldest || (*pp)->used_ms < (*oldest)->used_ms)
			oldest = pp;
	}
	if (n >= MAX_SESSIONS && oldest) {
		struct intent_session *s = *oldest;
		*oldest = s->next;
		session_free(s);
	}
}

void intent_session_add(struct intent *in, const char *id, const char *role, const char *content,
                        int64_t budget_tokens)
{
	if (!id || !id[0])
		return;
	struct intent_session *s = find(in, id);
	if (!s) {
		evict_lru(in);
		s = calloc(1, sizeof(*s));
		if (!s)
			return;
		s->id = strdup(id);
		s->history = json_object_new_array();
		if (!s->id || !s->history) {
			session_free(s);
			return;
		}
		s->next = in->sessions;
		in->sessions = s;
	}
	s->used_ms = loop_now_ms();
	json_object *m = json_object_new_object();
	json_object_object_add(m, "role", json_object_new_string(role));
	json_object_object_add(m, "content", json_object_new_string(content));
	json_object_array_add(s->history, m);
	/* About four bytes a token: a budget, not a tokenizer. */
	size_t budget = budget_tokens > 0 ? (size_t)budget_tokens * 4 : 0;
	for (;;) {
		size_t total = 0, n = json_object_array_length(s->history);
		for (size_t i = 0; i < n; i++) {
			const char *c = NULL;
			json_get_string(json_object_array_get_idx(s->history, i), "content", &c);
			total += c ? strlen(c) : 0;
		}
		/* The newest turn always stays, whatever its size. */
		if (total <= budget || n <= 1)
			break;
		json_object_array_del_idx(s->history, 0, 1);
	}
}
