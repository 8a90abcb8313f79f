/* client.h: a JSON-RPC client of kiln's own server, for the terminal front
 * ends (`kiln shell`, `kiln ask`). It starts the same binary as a child
 * speaking the protocol on pipes, exactly as an editor would, so what
 * works in the terminal works for editors. Blocking, single-threaded:
 * the terminal waits for one request at a time while notifications
 * stream through a callback. */
#pragma once

#include <json-c/json.h>
#include <signal.h>
#include <stdbool.h>

struct cli_client;

/* A notification from the server; params borrowed. */
/* A notification; or, with method NULL, a tick every 100 ms that the
 * server sends nothing (for a status line's elapsed time). */
typedef void (*cli_client_note_fn)(void *data, const char *method, json_object *params);

/* Start the server child and initialize it (UTF-8 positions); config_path
 * (NULL: the default file) is handed on as --config. The child
 * gets its own process group, so a Ctrl-C at the terminal reaches only
 * the front end, which turns it into $/cancelRequest. -errno with a
 * sentence in detail. */
int cli_client_start(const char *config_path, struct cli_client **ret, char *detail, size_t dsz);

/* Send a request (params stolen) and wait for its answer, passing
 * notifications to fn meanwhile. Exactly one of *ret_result (may be JSON
 * null, i.e. NULL) and *ret_error is set on return 0; both are yours.
 * When cli_client_interrupted becomes set while waiting, the request is
 * cancelled ($/cancelRequest) and the wait goes on for its -32800. -EPIPE
 * when the server went away. */
int cli_client_call(struct cli_client *c, const char *method, json_object *params,
                    cli_client_note_fn fn, void *data, json_object **ret_result,
                    json_object **ret_error);

/* shutdown, exit, wait for the child. NULL is a no-op. */
void cli_client_stop(struct cli_client *c);

/* Set from a SIGINT handler. */
extern volatile sig_atomic_t cli_client_interrupted;
