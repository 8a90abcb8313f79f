/* text.h: turning a program's raw output bytes into text that is safe to
 * put in JSON: valid UTF-8 only (an invalid byte becomes U+FFFD), and a
 * sequence split across two reads is held back until it completes, so it
 * is never cut in two. Also the bounded tail kept of each stream. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "core/buf.h"

struct sbx_utf8 {
	unsigned char carry[4]; /* an incomplete sequence from the last read */
	size_t ncarry;
};

/* Append the valid text of carry + data[0..n) to out; keep an incomplete
 * trailing sequence in the decoder unless final. -ENOBUFS/-ENOMEM. */
int sbx_utf8_decode(struct sbx_utf8 *u, const char *data, size_t n, bool final, struct buf *out);

/* name made valid UTF-8 (each invalid byte becomes U+FFFD), malloc'd;
 * NULL on OOM. */
char *sbx_utf8_name(const char *name);

#define SBX_TAIL_MAX (16u * 1024)

/* The last <= SBX_TAIL_MAX bytes of a stream's text, cut on a character
 * boundary, NUL-terminated. Its buffer (2 * SBX_TAIL_MAX + 1 bytes) is
 * allocated at the first text: a run holds two, and most streams stay
 * empty (a zeroed 64 KiB in each run cost the warm /bin/true path 17
 * page faults, docs/performance.md). Zero-initialise; sbx_tail_free. */
struct sbx_tail {
	char *buf;
	size_t len;
};

/* Without memory for its buffer the tail stays as it was (it is a
 * report's excerpt: the output itself went out already). */
void sbx_tail_add(struct sbx_tail *t, const char *text, size_t n);
/* The tail as a C string (valid until the next add or the free). */
const char *sbx_tail_str(struct sbx_tail *t);
void sbx_tail_free(struct sbx_tail *t);
