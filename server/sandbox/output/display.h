/* display.h: rich output (MIME bundles, Jupyter's display_data) that a
 * box's Python program hands kiln, checked before it goes further: a
 * session's over its channel (session.c), a one-shot run's as files the
 * runner (oneshot.py) left under /work/.kiln-display, read here once the
 * run has ended. Nothing the box writes is trusted: every bundle is
 * strict JSON of a known shape, within caps. */
#pragma once

#include <json-c/json.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A bundle kiln passes on: an object of at most 16 MIME types, with a
 * "text/plain" string, every value a string but the JSON types'. */
bool sbx_display_bundle_ok(json_object *data);

/* The displays a one-shot run left, in the order it made them. */
struct sbx_displays {
	json_object **data, **metadata; /* owned, n of each */
	size_t n;
	size_t dropped; /* past the byte budget, or not a bundle */
	uint64_t bytes; /* the files' sizes, taken from the budget */
};

/* The one-shot runner's display folder, under /work. */
#define SBX_DISPLAY_DIR ".kiln-display"
/* At most this many displays of a one-shot run are read. */
#define SBX_DISPLAYS_MAX 64

/* Read the displays under work_fd's SBX_DISPLAY_DIR ("0000.json", ...),
 * at most budget bytes in all (the run's output limit left). Safe on any
 * thread; cancel is checked between files. 0 (ret filled, maybe empty),
 * -ECANCELED or -ENOMEM. */
int sbx_displays_read(int work_fd, uint64_t budget, const atomic_bool *cancel,
                      struct sbx_displays *ret);
void sbx_displays_release(struct sbx_displays *d);
