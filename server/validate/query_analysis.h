/* query_analysis.h: tree-sitter's pattern analysis of the embedded rule
 * queries (rules/LANG.scm), computed at build time by
 * server/tools/query_analysis.c (see module.mk), so that a query made from
 * an embedded file skips the analysis, most of its compile (the runtime's
 * patch runtime-query-analysis-given.patch says what the bits are). A
 * query whose text is not the one analysed (a rules folder) is analysed
 * as before. */
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <tree_sitter/api.h>

struct val_query_analysis {
	const char *lang;     /* "python", "bash", ... */
	uint64_t source_hash; /* val_query_hash() of the analysed text */
	size_t source_len;
	const uint8_t *bits; /* one byte a step, as ts_query_step_analysis() gives */
	uint32_t nbits;
};

extern const struct val_query_analysis val_query_analyses[];
extern const unsigned val_query_analyses_count;

/* The patched runtime's two additions (runtime-query-analysis-given.patch):
 * a query's analysis, one byte a step (returns the step count; at most cap
 * written), and a query made with an analysis given instead of run. */
uint32_t ts_query_step_analysis(const TSQuery *self, uint8_t *out, uint32_t cap);
TSQuery *ts_query_new_analyzed(const TSLanguage *language, const char *source, uint32_t source_len,
                               const uint8_t *analysis, uint32_t analysis_len,
                               uint32_t *error_offset, TSQueryError *error_type);

/* The build's analysis of lang's embedded query when src (len bytes) is
 * its text, else NULL (rules.c). */
const struct val_query_analysis *val_query_analysis_of(const char *lang, const char *src,
                                                       size_t len);

/* FNV-1a, 64 bits, of the query's text: which text an analysis is of. */
static inline uint64_t val_query_hash(const char *s, size_t len)
{
	uint64_t h = 0xcbf29ce484222325ull;
	for (size_t i = 0; i < len; i++)
		h = (h ^ (unsigned char)s[i]) * 0x100000001b3ull;
	return h;
}
