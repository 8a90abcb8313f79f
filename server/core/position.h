/* position.h: LSP positions. A column is counted in the code units of the
 * encoding negotiated at initialize: UTF-16 (the LSP default), UTF-8 bytes
 * or UTF-32 code points. Every range kiln sends goes through here. */
#pragma once

#include <stddef.h>
#include <stdint.h>

enum pos_encoding {
	POS_UTF16,
	POS_UTF8,
	POS_UTF32,
};

/* "utf-8", "utf-16", "utf-32" -> encoding; -EINVAL for anything else. */
int pos_encoding_parse(const char *name, enum pos_encoding *ret_enc);
const char *pos_encoding_name(enum pos_encoding enc);

/* Column of byte offset byte_col within one line (line points at the
 * line's first byte), in the encoding's units. Invalid UTF-8 counts one
 * unit per byte, as editors show replacement characters. */
uint32_t pos_column(const char *line, size_t byte_col, enum pos_encoding enc);

/* Byte offset in text of (line, character), both 0-based. A character past
 * the end of its line clamps to the line's end and a line past the end of
 * text to text's end, as LSP asks. Lines end at "\n", "\r\n" or a lone
 * "\r" (LSP 3.17), never inside "\r\n". */
size_t pos_offset(const char *text, size_t len, uint32_t line, uint32_t character,
                  enum pos_encoding enc);

/* Length of the line break at text[i] (2 for "\r\n", 1 for "\n" or a
 * lone "\r"), or 0 when none starts there. */
size_t pos_break_len(const char *text, size_t len, size_t i);

/* The byte offset at which each line of text starts (the first is 0), in a
 * new array (yours to free); line breaks as pos_offset() counts them.
 * -ENOMEM, or -EFBIG for text of 4 GiB or more. */
int pos_line_starts(const char *text, size_t len, uint32_t **ret_starts, size_t *ret_n);

/* The LSP position (line, character in enc's units) of byte offset off in
 * text, given its line starts from pos_line_starts(). An offset past the
 * end is the end; one inside "\r\n" is the line's end. */
void pos_at(const char *text, size_t len, const uint32_t *starts, size_t n, size_t off,
            enum pos_encoding enc, uint32_t *ret_line, uint32_t *ret_character);

/* Length of the UTF-8 sequence starting at s (1 for an invalid byte). */
size_t utf8_seq_len(const unsigned char *s, size_t avail);
/* Whether s[0..n) is valid UTF-8. */
int utf8_valid(const char *s, size_t n);
/* Length of the longest prefix of s[0..n) that does not end inside a
 * UTF-8 sequence which the next bytes could complete. */
size_t utf8_complete_prefix(const char *s, size_t n);
