/* frame_lines.h: newline-delimited framing, as MCP's stdio transport
 * defines it: each message is one line of JSON, ended by "\n" (a "\r"
 * before it is dropped), with no raw newline inside. It knows lines, not
 * JSON: the same callbacks as the LSP framer (frame.h), so the peer above
 * it does not care which one it reads with. A line over the cap is skipped
 * as it streams past, never held, and reported once as FRAME_ERR_TOO_LARGE. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "core/buf.h"
#include "rpc/frame.h"

struct line_reader {
	struct buf line;
	size_t max_line;
	bool skipping; /* inside a line over the cap */
};

void line_reader_init(struct line_reader *lr, size_t max_line);
void line_reader_release(struct line_reader *lr);
/* -ENOMEM on allocation failure. Empty lines are ignored. */
int line_reader_feed(struct line_reader *lr, const char *data, size_t n,
                     const struct frame_callbacks *cb, void *cb_data);
/* The input ended: a last line without "\n" is still a message (a client
 * that writes one and closes is understood); none is reported truncated. */
void line_reader_eof(struct line_reader *lr, const struct frame_callbacks *cb, void *cb_data);

/* Append body and "\n" to out; -EINVAL if body holds a newline. */
int frame_encode_line(struct buf *out, const char *body, size_t len);
