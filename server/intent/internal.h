/* internal.h: the intent state's layout, shared by the files of
 * server/intent/ only. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "intent/intent.h"

struct intent_doc {
	char *uri;
	int64_t version;
	uint64_t life; /* which opening of uri this is (intent_doc_life) */
	bool closed;
};

struct intent_session {
	struct intent_session *next;
	char *id;
	json_object *history;
	uint64_t used_ms;
};

struct intent {
	struct kiln *k;
	struct http *http;
	struct intent_proposal *proposals;
	unsigned next_id;
	struct intent_doc *docs;
	size_t ndocs, docs_cap;
	uint64_t lives; /* the last life given a document */
	struct intent_session *sessions;
	int audit_fd;
	bool audit_failed;
	bool audit_disabled;
};

void intent_sessions_free(struct intent *in);
