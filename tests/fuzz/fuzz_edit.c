/* fuzz_edit.c: libFuzzer target over intent_edit_build(), which turns a
 * client's document, range or position and a model's code into a
 * WorkspaceEdit and hunks. Input: one byte that picks the encoding and
 * whether a range, a position or nothing is given, four bytes of line and
 * character numbers, then the document's text, a NUL, and the code.
 *
 * Oracles beyond the sanitizers:
 * - a range whose end comes before its start is -EINVAL, nothing else is;
 * - the edits, applied in order from their positions in the encoding,
 *   turn the text into exactly the text the replacement or insertion
 *   means; they are sorted and do not overlap;
 * - every hunk is its edit plus the exact old text of its range;
 * - for valid UTF-8 text and code, the edit serialises to JSON that
 *   parses back as valid UTF-8. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/buf.h"
#include "core/json.h"
#include "core/log.h"
#include "core/position.h"
#include "intent/intent.h"
#include "rpc/message.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	log_set_level(LOG_ERROR);
	return 0;
}

static json_object *pos(uint32_t line, uint32_t ch)
{
	json_object *p = json_object_new_object();
	json_object_object_add(p, "line", json_object_new_int64(line));
	json_object_object_add(p, "character", json_object_new_int64(ch));
	return p;
}

static size_t offset_of(const char *text, size_t len, json_object *p, enum pos_encoding enc)
{
	int64_t line, ch;
	if (json_get_int64(p, "line", &line) < 0 || json_get_int64(p, "character", &ch) < 0 ||
	    line < 0 || ch < 0 || line > UINT32_MAX || ch > UINT32_MAX)
		abort();
	return pos_offset(text, len, (uint32_t)line, (uint32_t)ch, enc);
}

static const char *str(json_object *o, const char *key)
{
	const char *s;
	if (json_get_string(o, key, &s) < 0)
		abort();
	return s;
}

/* Apply the edits as a client would; check the hunks on the way. */
static void apply(const char *text, size_t len, json_object *edits, json_object *hunks,
                  enum pos_encoding enc, struct buf *out)
{
	size_t done = 0, n = json_object_array_length(edits);
	if (json_object_array_length(hunks) != n)
		abort();
	for (size_t i = 0; i < n; i++) {
		json_object *e = json_object_array_get_idx(edits, i);
		json_object *h = json_object_array_get_idx(hunks, i);
		size_t a = offset_of(text, len, json_get_path(e, "range.start"), enc);
		size_t b = offset_of(text, len, json_get_path(e, "range.end"), enc);
		if (a < done || b < a)
			abort();
		const char *nt = str(e, "newText"), *old = str(h, "oldText");
		if (strcmp(nt, str(h, "newText")) != 0 ||
		    strcmp(json_compact(json_get(e, "range")),
		           json_compact(json_get(h, "range"))) != 0)
			abort();
		if (strlen(old) != b - a || memcmp(old, text + a, b - a) != 0)
			abort();
		buf_append(out, text + done, a - done);
		buf_append(out, nt, strlen(nt));
		done = b;
	}
	buf_append(out, text + done, len - done);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const enum pos_encoding encs[] = {POS_UTF16, POS_UTF8, POS_UTF32};
	if (size < 5)
		return 0;
	enum pos_encoding enc = encs[data[0] % 3];
	int kind = (data[0] / 3) % 3; /* 0 range, 1 position, 2 none */
	uint32_t l0 = data[1] & 15, c0 = data[2], l1 = l0 + (data[3] & 7), c1 = data[4];
	if (data[1] & 0x80)
		l0 = l1 = UINT32_MAX; /* past the end */
	/* The text and the code as C strings, as the protocol gives them. */
	char *buf = malloc(size - 5 + 2);
	if (!buf)
		return 0;
	memcpy(buf, data + 5, size - 5);
	buf[size - 5] = '\0';
	buf[size - 4] = '\0';
	char *text = buf;
	size_t len = strlen(text);
	char *code = text + len + 1 <= buf + size - 5 ? text + len + 1 : buf + size - 4;
	size_t clen = strlen(code);

	struct intent_proposal p = {
	    .uri = (char *)"file:///f", .version = 1, .text = text, .code = code};
	size_t a = len, b = len;
	if (kind == 0) {
		json_object *r = json_object_new_object();
		json_object_object_add(r, "start", pos(l0, c0));
		json_object_object_add(r, "end", pos(l1, c1));
		p.range = r;
		a = pos_offset(text, len, l0, c0, enc);
		b = pos_offset(text, len, l1, c1, enc);
	} else if (kind == 1) {
		p.position = pos(l0, c0);
		a = b = pos_offset(text, len, l0, c0, enc);
	}
	int r = intent_edit_build(&p, enc);
	if (b < a) {
		if (r != -EINVAL)
			abort();
		goto out;
	}
	if (r != 0)
		abort();

	/* What the edit means. */
	struct buf want, got;
	buf_init(&want, 1u << 24);
	buf_init(&got, 1u << 24);
	buf_append(&want, text, a);
	if (a < b) {
		if (text[b - 1] != '\n' && clen && code[clen - 1] == '\n')
			clen--;
		buf_append(&want, code, clen);
	} else {
		if (a > 0 && text[a - 1] != '\n')
			buf_append(&want, "\n", 1);
		buf_append(&want, code, clen);
		if (a < len && text[a] != '\n' && (!clen || code[clen - 1] != '\n'))
			buf_append(&want, "\n", 1);
	}
	buf_append(&want, text + b, len - b);
	buf_append(&want, "", 0);
	json_object *tde = json_object_array_get_idx(json_get(p.edit, "documentChanges"), 0);
	apply(text, len, json_get(tde, "edits"), p.hunks, enc, &got);
	buf_append(&got, "", 0);
	if (got.len != want.len || memcmp(got.data, want.data, got.len) != 0)
		abort();
	buf_release(&want);
	buf_release(&got);

	if (utf8_valid(text, len) && utf8_valid(code, strlen(code))) {
		const char *s = json_compact(p.edit);
		json_object *back = NULL;
		char detail[200];
		if (!s || rpc_parse(s, strlen(s), &back, detail, sizeof(detail)) < 0)
			abort();
		json_object_put(back);
		s = json_compact(p.hunks);
		if (!s || rpc_parse(s, strlen(s), &back, detail, sizeof(detail)) < 0)
			abort();
		json_object_put(back);
	}
out:
	json_object_put(p.edit);
	json_object_put(p.hunks);
	json_object_put(p.range);
	json_object_put(p.position);
	free(buf);
	return 0;
}
