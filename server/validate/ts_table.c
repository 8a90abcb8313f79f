/* ts_table.c: each grammar's parse table laid out whole for the parse. A
 * generated grammar keeps its first states' rows whole (large states) and
 * the others as lists of (value, symbols) groups (small states), which
 * the runtime's ts_language_lookup() searches one symbol at a time: for
 * the Python grammar about 2650 of 2809 states, and a search costs up to
 * a few hundred instructions, at every token's actions and every
 * reduction's next state (about 1.5M instructions of a 200-line check's
 * 9.6M parse). kiln gives the parser a copy of the grammar's TSLanguage
 * whose every state is large: the same rows, the small states' groups
 * written out into them, so every lookup is one read. Nothing else in the
 * language differs (the copy shares every other table), and the runtime
 * reads large_state_count and the two parse tables nowhere but in
 * ts_language_lookup() and the query's lookahead iterator, which only
 * ts_query_new() uses (queries are made with the grammar's own language),
 * so the parser takes the same actions and builds the same trees;
 * test_ts_table checks the runtime's lookup against both languages for
 * every state and symbol of every grammar.
 *
 * The copy is made at a language's first check and kept for the process
 * (read by every thread, never changed), within a cap: a grammar whose
 * whole table would take more than TABLE_MAX_BYTES (bash's, 4.3 MB) keeps
 * its own. */
#include "validate/internal.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <tree_sitter/parser.h>

/* Python's whole table is 1.5 MB, JavaScript's 0.9 MB. */
#define TABLE_MAX_BYTES (2u << 20)
#define MAX_LANGS       8

struct whole {
	TSLanguage lang;
	uint16_t *table;
};

static pthread_mutex_t made_mu = PTHREAD_MUTEX_INITIALIZER;
/* Per language (indexed like val_langs): the language the parser takes,
 * once worked out. */
static const TSLanguage *made[MAX_LANGS];

/* The grammar's table with every state's row whole, or NULL (too big, no
 * memory, or a small state it does not understand). */
static uint16_t *whole_table(const TSLanguage *l)
{
	uint32_t nsym = l->symbol_count, nstate = l->state_count, large = l->large_state_count;
	if (!nsym || large > nstate || (size_t)nstate * nsym * 2u > TABLE_MAX_BYTES)
		return NULL;
	uint16_t *t = calloc((size_t)nstate * nsym, sizeof(*t));
	uint8_t *seen = malloc(nsym);
	if (!t || !seen) {
		free(t);
		free(seen);
		return NULL;
	}
	if (large)
		memcpy(t, l->parse_table, (size_t)large * nsym * sizeof(*t));
	for (uint32_t s = large; s < nstate; s++) {
		/* The groups in the order ts_language_lookup() searches them:
		 * a symbol listed twice has its first group's value. */
		const uint16_t *d = &l->small_parse_table[l->small_parse_table_map[s - large]];
		uint16_t *row = t + (size_t)s * nsym;
		memset(seen, 0, nsym);
		uint16_t groups = *d++;
		for (uint16_t g = 0; g < groups; g++) {
			uint16_t value = *d++;
			uint16_t n = *d++;
			for (uint16_t i = 0; i < n; i++) {
				uint16_t sym = *d++;
				if (sym >= nsym) {
					free(t);
					free(seen);
					return NULL;
				}
				if (!seen[sym]) {
					seen[sym] = 1;
					row[sym] = value;
				}
			}
		}
	}
	free(seen);
	return t;
}

const TSLanguage *val_ts_whole(const TSLanguage *own)
{
	struct whole *w = malloc(sizeof(*w));
	uint16_t *t = w ? whole_table(own) : NULL;
	if (!t) {
		free(w);
		return NULL;
	}
	w->lang = *own;
	w->lang.parse_table = t;
	w->lang.large_state_count = own->state_count;
	w->table = t;
	return &w->lang;
}

void val_ts_whole_free(const TSLanguage *l)
{
	if (!l)
		return;
	/* l is the first member of its struct whole. */
	struct whole *w = (struct whole *)(uintptr_t)l;
	free(w->table);
	free(w);
}

static size_t lang_index(const struct val_lang *lang)
{
	size_t li = 0;
	while (li < val_langs_count && val_langs[li] != lang)
		li++;
	return li;
}

const TSLanguage *val_ts_made(const struct val_lang *lang)
{
	size_t li = lang_index(lang);
	return li < MAX_LANGS && li < val_langs_count ? __atomic_load_n(&made[li], __ATOMIC_ACQUIRE)
	                                              : NULL;
}

const TSLanguage *val_ts_language(const struct val_lang *lang)
{
	size_t li = lang_index(lang);
	const TSLanguage *own = lang->ts();
	if (li >= MAX_LANGS || li == val_langs_count)
		return own;
	const TSLanguage *l = __atomic_load_n(&made[li], __ATOMIC_ACQUIRE);
	if (l)
		return l;
	pthread_mutex_lock(&made_mu);
	l = made[li];
	if (!l) {
		l = val_ts_whole(own);
		if (!l)
			l = own;
		__atomic_store_n(&made[li], l, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&made_mu);
	return l;
}
