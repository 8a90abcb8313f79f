/* image.h: PNG images shown inline on terminals that draw them: kitty's
 * graphics protocol (kitty, Ghostty, Konsole) and iTerm2's inline images
 * (iTerm2, WezTerm). The terminal is told by its environment (TERM,
 * TERM_PROGRAM, LC_TERMINAL, KITTY_WINDOW_ID, KONSOLE_VERSION); KILN_IMAGES
 * = kitty, iterm2 or none overrides it. Never inside tmux or screen
 * (they would need a passthrough), never on a pipe or a "dumb" terminal.
 * The saved file and its path come first: the picture is a bonus. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

enum cli_image_proto { CLI_IMAGE_NONE, CLI_IMAGE_KITTY, CLI_IMAGE_ITERM2 };

/* The protocol the terminal on fd draws images with, or CLI_IMAGE_NONE. */
enum cli_image_proto cli_image_protocol(int fd);

/* Show a PNG, given as its base64 text (checked: only base64 characters,
 * at most 16 MiB of it), inline on out with proto, followed by a line
 * break; false when nothing was drawn. */
bool cli_image_show(FILE *out, enum cli_image_proto proto, const char *b64, size_t len);
