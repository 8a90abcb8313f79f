/* buf.h: a growable byte buffer with a hard cap (curl's dynbuf). Every
 * buffer that grows from outside input is one of these. */
#pragma once

#include <stddef.h>

struct buf {
	char *data; /* always NUL-terminated when non-NULL */
	size_t len;
	size_t cap;
	size_t max; /* appends beyond this fail with -ENOBUFS */
};

void buf_init(struct buf *b, size_t max);
void buf_release(struct buf *b);
/* Append n bytes. -ENOBUFS past the cap (nothing is appended), -ENOMEM. */
int buf_append(struct buf *b, const void *data, size_t n);
int buf_printf(struct buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Make room for n more bytes at data + len, for a caller that writes them
 * there itself (a read(2)); it then adds them to len and writes the NUL
 * after them. -ENOBUFS past the cap, -ENOMEM. */
int buf_reserve(struct buf *b, size_t n);
/* Drop the first n bytes. */
void buf_consume(struct buf *b, size_t n);
void buf_reset(struct buf *b);
/* Hand the bytes to the caller (free() them); the buffer becomes empty. */
char *buf_steal(struct buf *b, size_t *ret_len);
