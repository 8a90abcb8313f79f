/* warm.h: the warm-box cache (warm.c): one box built ahead of the next
 * run, waiting for GO like any other, taken by a run that fits. */
#pragma once

#include <stdbool.h>

#include "sandbox/host/limits.h"

struct sandbox;
struct sbx_box;
struct sbx_plan_owned;

/* Build a box for language ahead of its run (a warm box), from the loop,
 * if warm boxes are on (sandbox.warmBoxes) and none is waiting. The next
 * run of that language with the same tmpfs size and config takes it, and
 * run_start builds the next one. */
void run_warm(struct sandbox *s, const char *language);

/* If the cache holds a box of layout, built with the folder
 * now at ws_host (the plan's workspace, or NULL), move it into b (which
 * holds none) and return true; otherwise drop what the cache holds (it
 * would not fit the next run either) and return false. */
bool warm_take(struct sandbox *s, const char *layout, const char *ws_host, struct sbx_box *b);
/* The plan the warm box was built from, if the run (language, its
 * resolved limits) would get the same plan now: the same language and
 * limits, and /, /etc and the interpreter as they were when it was made
 * (their device, inode, mode, times). The caller owns it, and
 * *ret_layout, the box's layout (its sbx_plan_layout(), copied; NULL
 * when the copy failed). NULL: make a plan (sbx_plan_await), *ret_layout
 * untouched. The plan is given once. */
struct sbx_plan_owned *warm_plan_take(struct sandbox *s, const char *language,
                                      const struct sbx_limits *lim, char **ret_layout);
/* Forget the warm box's plan (the configuration or the workspace
 * changed: a plan made now would differ). */
void warm_plan_drop(struct sandbox *s);
/* No warm box is built now: a run is starting. */
void warm_hold(struct sandbox *s);
/* Drop the cache (sandbox_free). */
void warm_free(struct sandbox *s);
