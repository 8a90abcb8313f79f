/* json.h: the one place kiln states json-c's ownership rule, plus typed
 * getters for handler params.
 *
 * Rule: a json_object_new_* or tokener result is yours to json_object_put;
 * json_object_object_get_ex and json_object_array_get_idx results are
 * borrowed; json_object_object_add and json_object_array_add steal the value
 * you pass them. */
#pragma once

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

static inline void cleanup_jsonp(json_object **p)
{
	if (*p)
		json_object_put(*p);
}
/* _cleanup_json_ json_object *o = json_object_new_object(); */
#define _cleanup_json_ __attribute__((cleanup(cleanup_jsonp)))

/* Nesting deeper than this is refused as a parse error (json-c would
 * otherwise recurse on hostile input). */
#define JSON_MAX_DEPTH 128

/* Parse text[0..len) as exactly one RFC 8259 JSON value: json-c's strict
 * mode, valid UTF-8 only (no overlong forms, surrogates or code points past
 * U+10FFFF), no NaN, Infinity, "1." or raw control characters in strings,
 * nothing but whitespace after the value, at most JSON_MAX_DEPTH levels.
 * On success returns 0 and sets *ret_obj (yours to put; NULL for a JSON
 * null text). -EFBIG when len is over max_len (nothing is parsed), -EINVAL
 * when the text is not JSON, -ENOMEM; detail then holds a sentence ("the
 * JSON text ends early", "... at byte N"). The protocol, the config file,
 * transcripts and model responses all parse through here. */
int json_parse_strict(const char *text, size_t len, size_t max_len, json_object **ret_obj,
                      char *detail, size_t dsz);

/* The same parse fed in pieces as they arrive, so a large message costs
 * the loop a little per read instead of all at once at its end: feeding
 * any cut of a text and then finishing gives exactly json_parse_strict's
 * result and detail for the whole text (max_len counts all pieces).
 * finish may be called once; free the stream after it either way. */
struct json_stream;
/* NULL on OOM. */
struct json_stream *json_stream_new(size_t max_len);
void json_stream_feed(struct json_stream *js, const char *piece, size_t n);
int json_stream_finish(struct json_stream *js, json_object **ret_obj, char *detail, size_t dsz);
void json_stream_free(struct json_stream *js);
/* Make js as json_stream_new(max_len) made it, with the same max_len, for
 * the next text, keeping its json-c tokener (a tokener costs a few
 * kilobytes to allocate and clear: a stream per message was most of a
 * small message's parse). */
void json_stream_reset(struct json_stream *js);

/* Borrowed member of obj, or NULL (also when obj is not an object). */
json_object *json_get(json_object *obj, const char *key);

/* Typed getters. Each returns 0 and writes ret_* when the member exists with
 * that type, -ENOENT when it is absent (or JSON null), -EINVAL when it has
 * another type. Strings are borrowed from obj. */
int json_get_string(json_object *obj, const char *key, const char **ret_str);
int json_get_int64(json_object *obj, const char *key, int64_t *ret_val);
int json_get_bool(json_object *obj, const char *key, bool *ret_val);
int json_get_object(json_object *obj, const char *key, json_object **ret_obj);
int json_get_array(json_object *obj, const char *key, json_object **ret_arr);

/* Walk a dotted path ("capabilities.general.positionEncodings"). Borrowed. */
json_object *json_get_path(json_object *obj, const char *path);

/* Compact serialisation without escaping '/'. Borrowed from obj (valid
 * until obj changes or is freed). */
const char *json_compact(json_object *obj);

/* What valid UTF-8 text[0..len) costs inside a JSON string as
 * json_compact() writes it: escapes included ("\n" is 2 bytes, a control
 * character 6 as \u00XX), the quotes not. Of that text, the longest
 * prefix that ends on a character boundary and costs at most budget: its
 * length is returned and its cost written to *ret_cost. Run output is
 * counted against outputBytes this way, as the client receives it. */
size_t json_string_fit(const char *text, size_t len, uint64_t budget, uint64_t *ret_cost);

/* The length of the longest prefix of bytes[0..len) that a JSON string
 * holds byte for byte: whole, valid UTF-8 characters (an incomplete one
 * at the end is left out) that json_write_string does not escape (no
 * control character, '"' or '\\'). */
size_t json_string_verbatim(const char *bytes, size_t len);
/* Whether json_string_verbatim scans with AVX2 (64 bytes a step), chosen
 * once from the CPU; on=false makes it use the SSE2 scan (for tests),
 * on=true goes back to AVX2 where the CPU has it. Returns whether AVX2 is
 * used now. */
bool json_verbatim_avx2(bool on);

/* Append json_compact(obj)'s exact bytes to out, without json-c's own
 * buffer: strings are escaped 8 bytes at a time where nothing needs an
 * escape (run output is mostly such text). 0, or -ENOBUFS/-ENOMEM. */
struct buf;
int json_write(struct buf *out, json_object *obj);
/* The same bytes json_write() gives for a string of s[0..len) (escaped,
 * in quotes) and for an int64: for writing a message's fixed parts
 * without building objects for them (rpc/message.h's rpc_write_*). */
int json_write_string(struct buf *out, const char *s, size_t len);
int json_write_int64(struct buf *out, int64_t v);

/* Deep copy; NULL on OOM. A NULL input (JSON null) gives NULL. */
json_object *json_copy(json_object *obj);
