/* session_state.h: what a sandbox session holds, as text for the model's
 * prompt (intent/run with the sessionId of a session, docs/llm.md). */
#pragma once

#include <json-c/json.h>

/* One line per name of the driver's description (sbx_session_vars:
 * "df: DataFrame, shape [12, 3], columns month (object), total
 * (float64)"), at most 4 KiB; "" for none. Malloc'd; NULL on OOM. */
char *session_state_text(json_object *vars);
