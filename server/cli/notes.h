/* notes.h: the notifications that arrive while a terminal front end
 * waits for an answer, each shown its own way (term.h, display.h). */
#pragma once

#include <json-c/json.h>

/* A notification while waiting (data is the struct term): run/output is
 * written through, run/artifact and intent/attempt are summarised,
 * run/display is shown or saved, $/progress sets the status. A NULL
 * method is the client's tick while it waits (cli_client_call): the
 * status line's elapsed time moves on. */
void term_note(void *data, const char *method, json_object *params);
