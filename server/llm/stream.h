/* stream.h: splitting a streamed body into the lines a provider's parser
 * reads (struct llm_ops.stream_line), apart from the HTTP transfer so
 * that the unit tests and fuzzers drive the exact code chat.c runs. */
#pragma once

#include "core/buf.h"
#include "llm/llm.h"

/* Hand every complete line waiting in line (the bytes received so far,
 * appended by the caller) to ops->stream_line without its newline, and
 * keep the partial last line. 0, or < 0 when the parser failed (it set
 * s->err_kind). */
int llm_stream_lines(const struct llm_ops *ops, struct llm_stream *s, struct buf *line);

/* The body ended: a last line without its newline, then the blank line
 * that ends a last server-sent event. 0 or < 0 as above. */
int llm_stream_end(const struct llm_ops *ops, struct llm_stream *s, struct buf *line);

/* Add a piece of the answer: kept in s->text (capped: past the cap the
 * parser fails with LLM_E_TOO_LARGE) and handed to s->emit. 0 or -1. */
int llm_stream_append(struct llm_stream *s, const char *text);

/* Record a Claude-family stop reason (Anthropic's Messages API and
 * Bedrock's Converse) as kiln's, which are OpenAI's: "end_turn" and
 * "stop_sequence" are "stop", "max_tokens" is "length". */
void llm_stream_stop_reason(struct llm_stream *s, const char *reason);
