/* prompt.c: the words kiln says to the model. A system message fixes the
 * language and the answer's shape (one fenced block, so extraction is
 * reliable) and says what the validator will refuse, so the model does not
 * waste a turn on code that cannot run; the user's turn carries the intent
 * and just enough of the document to fit the code in. */
#include "llm/llm.h"

#include <string.h>

#include "core/buf.h"
#include "core/json.h"

/* Context beyond this many bytes each side of the cursor costs tokens and
 * rarely helps. */
#define CONTEXT_MAX 4096
#define PROMPT_MAX  (1u << 20)

static json_object *message(const char *role, const char *content)
{
	json_object *m = json_object_new_object();
	json_object_object_add(m, "role", json_object_new_string(role));
	json_object_object_add(m, "content", json_object_new_string(content ? content : ""));
	return m;
}

static void system_prompt(struct buf *b, const struct llm_prompt *p)
{
	const char *language = p->language, *profile = p->profile;
	buf_printf(b,
	           "You write %s code for kiln, which checks it and, once a person approves, "
	           "runs it in a sandbox.\n"
	           "Language: %s\n"
	           "Answer with exactly one fenced code block tagged %s holding a complete "
	           "program that runs as is, then at most two short sentences. No other code "
	           "blocks, no shell commands to install anything.\n",
	           language, language, language);
	if (p->workspace)
		buf_printf(b,
		           "The sandbox has no network and has time and memory limits. Its working "
		           "directory is the person's project folder %s: read its files by "
		           "relative path. What the program writes there is kept aside and shown "
		           "to the person as proposed changes; files it writes under /work/out "
		           "are shown as artifacts. Secrets (.env, .git, keys) cannot be read.\n",
		           p->workspace);
	else
		buf_printf(b, "The sandbox has no network, sees only its own working directory, "
		              "and has time and memory limits. Files it writes under out/ "
		              "(relative to its working directory) are shown to the person as "
		              "artifacts.\n");
	if (p->modules)
		buf_printf(b,
		           "Besides the standard library, the sandbox's Python has only these "
		           "notable modules: %s. Use nothing else.\n",
		           p->modules[0] ? p->modules : "none");
	buf_printf(b,
	           "Policy profile \"%s\": code that opens network connections, starts other "
	           "programs, reads or writes files outside the working directory, changes "
	           "permissions or loads native code is refused before it runs.\n",
	           profile ? profile : "standard");
}

/* The last max bytes of s, starting at a line boundary when one is near. */
static const char *tail(const char *s, size_t max)
{
	size_t n = strlen(s);
	if (n <= max)
		return s;
	const char *p = s + n - max;
	const char *nl = strchr(p, '\n');
	return nl ? nl + 1 : p;
}

json_object *llm_prompt_messages(const struct llm_prompt *p)
{
	json_object *msgs = json_object_new_array();
	struct buf b;
	buf_init(&b, PROMPT_MAX);
	system_prompt(&b, p);
	json_object_array_add(msgs, message("system", b.data));
	size_t n = p->history ? json_object_array_length(p->history) : 0;
	for (size_t i = 0; i < n; i++)
		json_object_array_add(msgs,
		                      json_object_get(json_object_array_get_idx(p->history, i)));

	buf_reset(&b);
	if (p->uri)
		buf_printf(&b, "File: %s\n", p->uri);
	size_t nf = p->workspace_files ? json_object_array_length(p->workspace_files) : 0;
	if (nf) {
		buf_printf(&b, "Workspace files:");
		for (size_t i = 0; i < nf && i < 200; i++)
			buf_printf(&b, "%s %s", i ? "," : "",
			           json_object_get_string(
			               json_object_array_get_idx(p->workspace_files, i)));
		buf_printf(&b, "\n");
	}
	if (p->workspace_listing && p->workspace_listing[0])
		buf_printf(
		    &b, "Files in the working directory (size; first line of small CSV/JSON):\n%s",
		    p->workspace_listing);
	if (p->selection && p->selection[0]) {
		buf_printf(&b, "Selected code, which your program replaces:\n```%s\n%.*s\n```\n",
		           p->language, CONTEXT_MAX * 4, p->selection);
	} else if ((p->before && p->before[0]) || (p->after && p->after[0])) {
		const char *before = p->before ? tail(p->before, CONTEXT_MAX) : "";
		buf_printf(&b,
		           "Code around the cursor; your program is inserted at <CURSOR>:\n```%s\n"
		           "%s<CURSOR>%.*s\n```\n",
		           p->language, before, CONTEXT_MAX, p->after ? p->after : "");
	}
	if (p->session_state)
		buf_printf(
		    &b,
		    "Your program runs in a live Python session, like a notebook cell: names "
		    "defined by earlier runs still exist (do not load again what is already "
		    "there), and the value of its last expression is displayed (a DataFrame "
		    "as a table, a matplotlib figure as an image). The session holds:\n%s",
		    p->session_state[0] ? p->session_state : "- (nothing yet)\n");
	buf_printf(&b, "Task: %s\n", p->intent);
	json_object_array_add(msgs, message("user", b.data));
	buf_release(&b);
	return msgs;
}

json_object *llm_prompt_repair(json_object *prior, const char *answer, const char *language,
                               const char *failure)
{
	json_object *msgs = json_object_new_array();
	size_t n = prior ? json_object_array_length(prior) : 0;
	for (size_t i = 0; i < n; i++)
		json_object_array_add(msgs, json_object_get(json_object_array_get_idx(prior, i)));
	json_object_array_add(msgs, message("assistant", answer));
	struct buf b;
	buf_init(&b, PROMPT_MAX);
	buf_printf(&b,
	           "Running that program failed:\n%s\nFix it. Answer with one fenced %s block "
	           "holding the whole corrected program.",
	           failure, language);
	json_object_array_add(msgs, message("user", b.data));
	buf_release(&b);
	return msgs;
}

json_object *llm_prompt_explain(const char *language, const char *code, const char *output)
{
	json_object *msgs = json_object_new_array();
	json_object_array_add(
	    msgs, message("system", "You explain what a program's run showed, in at most two "
	                            "plain sentences, without code."));
	struct buf b;
	buf_init(&b, PROMPT_MAX);
	buf_printf(&b, "Explain the result of this run.\n```%s\n%s```\nOutput:\n```\n%s\n```\n",
	           language, code, tail(output ? output : "", 4096));
	json_object_array_add(msgs, message("user", b.data));
	buf_release(&b);
	return msgs;
}
