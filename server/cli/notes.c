/* notes.c: which view each notification gets while the terminal waits
 * (notes.h): one table from method to handler. It sits above term.c and
 * display.c, which draw and never call back. */
#include "cli/notes.h"

#include <string.h>

#include "cli/display.h"
#include "cli/term.h"
#include "core/json.h"
#include "core/util.h"

static void progress(struct term *t, json_object *params)
{
	json_object *v = json_get(params, "value");
	const char *kind = "", *msg = NULL;
	json_get_string(v, "kind", &kind);
	if (strcmp(kind, "end") != 0 && json_get_string(v, "message", &msg) == 0)
		term_status(t, msg);
}

static const struct {
	const char *method;
	void (*show)(struct term *t, json_object *params);
} notes[] = {
    {"run/output", term_output},
    {"run/artifact", term_artifact},
    {"run/display", term_display},
    {"intent/attempt", term_attempt},
    {"$/progress", progress},
    {"intent/partial", term_partial},
    {"intent/explanation", term_explanation},
};

void term_note(void *data, const char *method, json_object *params)
{
	struct term *t = data;
	if (!method) {
		term_status_tick(t);
		return;
	}
	for (size_t i = 0; i < ARRAY_SIZE(notes); i++)
		if (strcmp(method, notes[i].method) == 0) {
			notes[i].show(t, params);
			return;
		}
}
