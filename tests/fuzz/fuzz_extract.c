/* fuzz_extract.c: libFuzzer target over llm_extract_code(), which reads
 * whatever a model answered. Input: one byte that picks the language
 * asked for, then the answer.
 *
 * Oracles beyond the sanitizers:
 * - the result is the code, or -ENOENT (never another error here);
 * - the code is not blank and ends with exactly one newline it added or
 *   kept; a bare answer (no fences) never claims blocks or truncation;
 * - at most 64 blocks are taken;
 * - when the answer is valid UTF-8, so are the code, the tag and the
 *   prose (they go to the client as JSON strings);
 * - the same answer extracted twice gives the same result. */
#include <ctype.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "core/position.h"
#include "llm/llm.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	log_set_level(LOG_ERROR);
	return 0;
}

static bool str_eq(const char *a, const char *b)
{
	return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

static bool valid(const char *s)
{
	return !s || utf8_valid(s, strlen(s));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const langs[] = {"python", "bash", "javascript", NULL, "py", "text"};
	if (size < 1)
		return 0;
	const char *lang = langs[data[0] % 6];
	size_t len = size - 1;
	/* An exact copy: the extractor must read only len bytes. */
	char *answer = malloc(len ? len : 1);
	if (!answer)
		return 0;
	memcpy(answer, data + 1, len);

	struct llm_code c1 = {0}, c2 = {0};
	int r1 = llm_extract_code(answer, len, lang, &c1);
	int r2 = llm_extract_code(answer, len, lang, &c2);
	if (r1 != r2 || (r1 < 0 && r1 != -ENOENT))
		abort();
	/* A NUL in the answer cuts the strings short: skip their shape. */
	bool nul = memchr(answer, '\0', len) != NULL;
	if (r1 == 0) {
		size_t n = strlen(c1.code);
		if (!nul && (n == 0 || c1.code[n - 1] != '\n'))
			abort();
		bool blank = true;
		for (size_t i = 0; i < n; i++)
			blank &= isspace((unsigned char)c1.code[i]) != 0;
		if (blank && !nul)
			abort();
		if (c1.blocks > 64 || (c1.truncated && c1.blocks == 0))
			abort();
		if (c1.blocks == 0 && (c1.lang || c1.prose))
			abort();
		if (c1.prose && !c1.prose[0] && !nul)
			abort();
		if (utf8_valid(answer, len) &&
		    (!valid(c1.code) || !valid(c1.lang) || !valid(c1.prose)))
			abort();
		if (!str_eq(c1.code, c2.code) || !str_eq(c1.lang, c2.lang) ||
		    !str_eq(c1.prose, c2.prose) || c1.blocks != c2.blocks ||
		    c1.truncated != c2.truncated)
			abort();
		llm_code_release(&c1);
		llm_code_release(&c2);
	}
	free(answer);
	return 0;
}
