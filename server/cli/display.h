/* display.h: a run/display notification (a MIME bundle) in the terminal:
 * its text/plain shown (made visible), every other type saved to the
 * run's folder (cache_dir.h) with the path printed: a plot as a .png, a
 * DataFrame's table as a .html. */
#pragma once

#include <json-c/json.h>

struct term;

void term_display(struct term *t, json_object *params);
