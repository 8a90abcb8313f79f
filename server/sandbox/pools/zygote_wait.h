/* zygote_wait.h: a run that waits for the zygote's spare (zygote.h's
 * sbx_zygote_take's -EINPROGRESS), and its cancel (zygote_wait.c). */
#pragma once

struct sandbox;

/* A run that waits for the spare (sbx_zygote_take's -EINPROGRESS). */
struct sbx_zygote_wait;
/* The spare came (r >= 0: the caller's box now holds it, as from
 * sbx_zygote_take's 0) or did not (r < 0: b is untouched and the caller
 * takes the normal path). Called from the loop, never from within
 * sbx_zygote_take; the wait is gone once it is called. */
typedef void (*sbx_zygote_wait_fn)(void *data, int r);

/* The run that waits is cancelled (or its owner is freed): its callback
 * is not called, its box is untouched, and the spare stays the zygote's,
 * for the next run. NULL is ignored. */
void sbx_zygote_wait_cancel(struct sandbox *s, struct sbx_zygote_wait *w);
