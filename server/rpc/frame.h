/* frame.h: the LSP base protocol's framing, bytes in and bodies out. It
 * knows headers and Content-Length, nothing of JSON or methods.
 *
 * The reader is a push parser: feed it whatever read(2) returned and it
 * calls back once per complete body or framing error. A body over the size
 * cap is skipped as it streams past, never held in memory. After a header
 * it cannot use (no or a bad Content-Length) it resynchronises on the next
 * "Content-Length:". */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "core/buf.h"

enum frame_error {
	FRAME_ERR_NO_LENGTH,  /* header block without Content-Length */
	FRAME_ERR_BAD_LENGTH, /* Content-Length not a decimal number */
	FRAME_ERR_BAD_HEADER, /* a line that is not "Name: value", or too long */
	FRAME_ERR_TOO_LARGE,  /* Content-Length over the cap; body skipped */
	FRAME_ERR_TRUNCATED,  /* input ended inside a header or body */
};

struct frame_callbacks {
	/* body is NUL-terminated and valid only during the call. */
	void (*message)(void *data, char *body, size_t len);
	/* detail is a human-readable sentence; valid only during the call. */
	void (*error)(void *data, enum frame_error err, const char *detail);
	/* Optional: each piece of a body as it arrives, before message() gets
	 * the whole of it; total is the body's Content-Length. Lets a reader
	 * work on a large body a read at a time instead of all at its end. */
	void (*body_part)(void *data, const char *part, size_t n, size_t total);
};

enum frame_state {
	FRAME_HEADER,
	FRAME_BODY,
	FRAME_SKIP,
	FRAME_RESYNC,
};

struct frame_reader {
	enum frame_state state;
	struct buf header;
	struct buf body;
	size_t want;  /* body bytes still expected (BODY) or to discard (SKIP) */
	size_t total; /* BODY: its Content-Length */
	size_t max_body;
	size_t resync_matched; /* RESYNC: bytes of the marker matched so far */
};

/* max_body: the largest Content-Length accepted. */
void frame_reader_init(struct frame_reader *fr, size_t max_body);
void frame_reader_release(struct frame_reader *fr);
/* Returns -ENOMEM on allocation failure (the stream is then unusable). */
int frame_reader_feed(struct frame_reader *fr, const char *data, size_t n,
                      const struct frame_callbacks *cb, void *cb_data);
/* The input ended: report a partial message, if any, as FRAME_ERR_TRUNCATED. */
void frame_reader_eof(struct frame_reader *fr, const struct frame_callbacks *cb, void *cb_data);
/* True while no partial header or body is buffered. */
bool frame_reader_idle(const struct frame_reader *fr);

/* Append "Content-Length: N\r\n\r\n" and the body to out. */
int frame_encode(struct buf *out, const char *body, size_t len);
/* Append only the header of a body of len bytes (the body follows by
 * other means: rpc_peer_send_splice). */
int frame_encode_header(struct buf *out, size_t len);
