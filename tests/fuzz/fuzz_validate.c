/* fuzz_validate.c: libFuzzer target over the validator's entry point,
 * val_check(): random bytes as Python, bash and JavaScript under every
 * profile and position encoding. Input: one byte that picks language,
 * encoding and profile, then the code. CPython is off so each run is
 * in-process and deterministic (the worker's input is the same bytes).
 *
 * Oracles beyond the sanitizers:
 * - every diagnostic has a range inside the code, start before end, a
 *   severity from 1 to 4, a source and a message;
 * - the verdict agrees with the severities (deny iff an error; warn iff a
 *   warning and no error);
 * - the same input checked twice gives the same answer. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/json.h"
#include "core/log.h"
#include "validate/validate.h"

static struct validator *validator;

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	log_set_level(LOG_ERROR);
	json_object *config = json_tokener_parse("{\"python\": false}");
	if (val_new(config, &validator) < 0)
		abort();
	json_object_put(config);
	return 0;
}

/* Lines as LSP counts them: "\n", "\r\n" and a lone "\r" end one. */
static uint32_t count_lines(const char *s, size_t n)
{
	uint32_t lines = 1;
	for (size_t i = 0; i < n; i++)
		lines += s[i] == '\n' || (s[i] == '\r' && (i + 1 == n || s[i + 1] != '\n'));
	return lines;
}

static void check_diagnostics(json_object *diags, enum val_verdict verdict, uint32_t lines)
{
	bool error = false, warning = false;
	for (size_t i = 0; i < json_object_array_length(diags); i++) {
		json_object *d = json_object_array_get_idx(diags, i);
		int64_t sl, sc, el, ec, sev;
		const char *src, *msg;
		if (json_get_int64(json_get_path(d, "range.start"), "line", &sl) < 0 ||
		    json_get_int64(json_get_path(d, "range.start"), "character", &sc) < 0 ||
		    json_get_int64(json_get_path(d, "range.end"), "line", &el) < 0 ||
		    json_get_int64(json_get_path(d, "range.end"), "character", &ec) < 0 ||
		    json_get_int64(d, "severity", &sev) < 0 ||
		    json_get_string(d, "source", &src) < 0 ||
		    json_get_string(d, "message", &msg) < 0)
			abort();
		if (sl < 0 || sc < 0 || el >= lines || sl > el || (sl == el && sc > ec))
			abort();
		if (sev < 1 || sev > 4 || !msg[0])
			abort();
		error |= sev == 1;
		warning |= sev == 2;
	}
	enum val_verdict want = error ? VAL_DENY : warning ? VAL_WARN : VAL_ALLOW;
	if (verdict != want)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const langs[] = {"python", "bash", "javascript"};
	static const enum pos_encoding encs[] = {POS_UTF16, POS_UTF8, POS_UTF32};
	static const char *const profiles[] = {NULL, "strict", "relaxed", "off"};
	if (size < 1)
		return 0;
	const char *lang = langs[data[0] % 3];
	enum pos_encoding enc = encs[(data[0] / 3) % 3];
	const char *profile = profiles[(data[0] / 9) % 4];
	const char *code = (const char *)data + 1;
	size_t len = size - 1;

	json_object *d1 = NULL, *d2 = NULL;
	enum val_verdict v1, v2;
	char detail[256];
	if (val_check(validator, lang, code, len, profile, enc, &d1, &v1, detail, sizeof(detail)) <
	    0)
		abort();
	check_diagnostics(d1, v1, count_lines(code, len));
	if (val_check(validator, lang, code, len, profile, enc, &d2, &v2, detail, sizeof(detail)) <
	    0)
		abort();
	if (v1 != v2 || strcmp(json_compact(d1), json_compact(d2)) != 0)
		abort();
	json_object_put(d1);
	json_object_put(d2);
	return 0;
}
