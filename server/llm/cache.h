/* cache.h: the answer cache (llm.cache: true). A model's whole answer is
 * stored under $XDG_CACHE_HOME/kiln/llm/ (else ~/.cache/kiln/llm/), one
 * 0600 file per request named by the SHA-256 of the provider, URL, model,
 * temperature, token limit and the exact messages; the same request is
 * then answered from the file. Files hold the answer and its metadata,
 * never a key, a credential or the URL. Past llm.cacheMaxBytes the entries
 * used longest ago are removed first.
 *
 * Reads and writes run on one thread of the cache's own, in the order they
 * were asked for (a lookup after a store finds it), never on the event
 * loop; a lookup reports back on the loop's thread through an eventfd. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <json-c/json.h>

struct loop;
struct llm_config;
struct llm_cache_lookup;

/* What an entry holds. */
struct llm_cache_entry {
	char *answer;
	size_t len;
	char finish_reason[32];
	int64_t prompt_tokens, completion_tokens;
};

/* The cache directory into out: $XDG_CACHE_HOME/kiln/llm, else
 * $HOME/.cache/kiln/llm. -ENOENT when neither variable is set. */
int llm_cache_dir(char *out, size_t n);

/* The key of a request: 64 hex digits and a NUL into out[65]. */
void llm_cache_key(const struct llm_config *c, json_object *messages, char out[65]);

/* Look key up on the cache's thread. done runs once on the loop's thread, never
 * from inside this call: entry is the hit (borrowed for the call) or NULL
 * for a miss or an unreadable entry. Entries longer than max_bytes are
 * misses. -ENOMEM, or -errno when no thread can start. */
int llm_cache_lookup_start(struct loop *loop, const char *key, size_t max_bytes,
                           void (*done)(void *data, const struct llm_cache_entry *entry),
                           void *data, struct llm_cache_lookup **ret);
/* done is not called; the thread cleans up after itself. NULL: no-op. */
void llm_cache_lookup_cancel(struct llm_cache_lookup *l);

/* Store an answer under key on the cache's thread (write a temporary
 * file, rename it), then evict down to max_total bytes. Failures are logged
 * at debug level and otherwise ignored: a cache that cannot write just
 * misses next time. */
void llm_cache_store(const char *key, const struct llm_cache_entry *entry, uint64_t max_total);

/* Remove every entry (kiln cache clear): *ret_files and *ret_bytes say
 * how many went. 0, or -errno for the directory (0 when it does not
 * exist). */
int llm_cache_clear(const char *dir, size_t *ret_files, uint64_t *ret_bytes);
