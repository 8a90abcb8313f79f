/* visible.h: making text safe to show on a terminal. Two jobs, both for
 * the terminal front ends (docs/terminal.md):
 *
 * - vis_*(): text kiln shows as data (code, model prose, file and artifact
 *   names, messages) with every character a terminal would act on or hide
 *   made visible, so that what is shown is what is there: C0 controls and
 *   DEL in caret notation (ESC is "^[", CR "^M", DEL "^?"), C1 controls,
 *   bidirectional controls and invisible format characters as "<U+202E>",
 *   bytes that are not UTF-8 as "\xFF".
 * - vis_filter: program output, passed on as a terminal multiplexer would:
 *   colour (SGR, "ESC [ ... m") kept, every other escape sequence (OSC 52
 *   clipboard writes, titles, device queries, cursor movement, DCS, ...)
 *   and control character but line feed, tab, carriage return and
 *   backspace dropped, bytes that are not UTF-8 shown as U+FFFD. It keeps state across chunks, so a
 * sequence split between two reads is recognised, and caps how long a sequence may be. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "core/buf.h"

enum vis_flags {
	VIS_NEWLINE = 1 << 0, /* keep '\n' as a line break (else "^J") */
	VIS_TAB = 1 << 1,     /* keep '\t' (else "^I") */
	VIS_COLOR = 1 << 2,   /* show each made-visible character in reverse video */
};

/* Reverse video on and off around a made-visible character under
 * VIS_COLOR; "off" leaves the surrounding colour as it was. */
#define VIS_STYLE_ON  "\033[7m"
#define VIS_STYLE_OFF "\033[27m"

/* Whether a terminal would act on code point cp or show nothing for it:
 * C0 and C1 controls, DEL, bidirectional controls (U+061C, U+200E/F,
 * U+202A-E, U+2066-9), zero-width and other invisible format characters
 * (U+00AD, U+200B-D, U+2028/9, U+2060-4, U+FEFF, variation selectors,
 * tags, ...). '\n' and '\t' are included: the flags decide about them. */
bool vis_hidden(uint32_t cp);

/* Append s[0..len) to out, made visible as above. 0, or -ENOBUFS/-ENOMEM
 * from the buffer (out then holds a prefix). */
int vis_append(struct buf *out, const char *s, size_t len, unsigned flags);

/* Write s[0..len) to f, made visible. */
void vis_fwrite(FILE *f, const char *s, size_t len, unsigned flags);
/* The same for a NUL-terminated string; NULL writes nothing. */
void vis_fputs(FILE *f, const char *s, unsigned flags);

/* Write a JSON text (json-c's output) to f with every hidden character
 * inside its strings written as a \uXXXX escape, which is the same JSON
 * value, and bytes that are not UTF-8 as \ufffd: machine output that is
 * still safe on a terminal. */
void vis_json_fputs(FILE *f, const char *json);

/* A CSI sequence longer than this is not colour: it is dropped. */
#define VIS_CSI_MAX 256
/* Any sequence longer than this ends there: the filter goes back to text,
 * so an unterminated OSC or DCS cannot swallow the rest of the output. */
#define VIS_SEQ_MAX (64u << 10)

enum vis_filter_state {
	VIS_F_TEXT,
	VIS_F_UTF8,    /* inside a UTF-8 sequence, its first bytes in u8 */
	VIS_F_ESC,     /* ESC seen */
	VIS_F_ESC_INT, /* ESC and intermediate bytes: drop up to the final byte */
	VIS_F_CSI,     /* a control sequence, collected in seq */
	VIS_F_STR,     /* OSC, DCS, SOS, PM or APC: dropped up to its terminator */
	VIS_F_STR_ESC, /* ESC inside a string: "\\" ends it */
	VIS_F_STR_C2,  /* 0xC2 inside a string: 0x9C (ST) ends it */
};

struct vis_filter {
	enum vis_filter_state state;
	size_t seq_len; /* bytes of the current sequence so far */
	bool colored;   /* colour other than the default is in effect */
	unsigned char u8[4];
	uint8_t u8_len;
	char seq[VIS_CSI_MAX];
};

/* The most vis_filter_feed and vis_filter_end write for len bytes in: an
 * SGR held from earlier chunks, and three bytes (U+FFFD) per byte. */
#define VIS_FILTER_OUT_MAX(len) (3 * (size_t)(len) + VIS_CSI_MAX + 16)

void vis_filter_init(struct vis_filter *f);
/* Filter one chunk of program output into out. 0, or -ENOBUFS/-ENOMEM
 * from the buffer. */
int vis_filter_feed(struct vis_filter *f, const char *s, size_t len, struct buf *out);
/* The output ended: drop a partial sequence and, when the program left a
 * colour on, reset it ("ESC [ m") so it does not run into what follows.
 * The filter is then as new. */
int vis_filter_end(struct vis_filter *f, struct buf *out);
