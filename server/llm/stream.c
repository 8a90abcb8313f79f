/* stream.c: a streamed body as lines for a provider's parser, and the
 * answer's text and stop reason as the parsers record them (see stream.h). */
#include "llm/stream.h"

#include <stdio.h>
#include <string.h>

int llm_stream_lines(const struct llm_ops *ops, struct llm_stream *s, struct buf *line)
{
	char *p = line->data;
	size_t left = line->len;
	char *nl;
	while (left && (nl = memchr(p, '\n', left))) {
		size_t n = (size_t)(nl - p);
		if (ops->stream_line(s, p, n) < 0)
			return -1;
		left -= n + 1;
		p = nl + 1;
	}
	buf_consume(line, line->len - left);
	return 0;
}

int llm_stream_end(const struct llm_ops *ops, struct llm_stream *s, struct buf *line)
{
	int r = 0;
	if (line->len)
		r = ops->stream_line(s, line->data, line->len);
	if (r == 0)
		r = ops->stream_line(s, "", 0);
	return r;
}

int llm_stream_append(struct llm_stream *s, const char *text)
{
	size_t n = strlen(text);
	if (!n)
		return 0;
	if (buf_append(&s->text, text, n) < 0) {
		s->err_kind = LLM_E_TOO_LARGE;
		return -1;
	}
	if (s->emit)
		s->emit(s->emit_data, text, n);
	return 0;
}

void llm_stream_stop_reason(struct llm_stream *s, const char *reason)
{
	if (strcmp(reason, "end_turn") == 0 || strcmp(reason, "stop_sequence") == 0)
		reason = "stop";
	else if (strcmp(reason, "max_tokens") == 0)
		reason = "length";
	snprintf(s->finish_reason, sizeof(s->finish_reason), "%s", reason);
}
