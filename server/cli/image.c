/* image.c: PNG images inline on the terminal (image.h). */
#include "cli/image.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* kitty takes the data in chunks of at most 4096 bytes of base64. */
#define KITTY_CHUNK   4096
#define IMAGE_B64_MAX (16u << 20)

static bool env_is(const char *name, const char *value)
{
	const char *v = getenv(name);
	return v && strcmp(v, value) == 0;
}

static bool env_has(const char *name, const char *part)
{
	const char *v = getenv(name);
	return v && strstr(v, part);
}

enum cli_image_proto cli_image_protocol(int fd)
{
	const char *term = getenv("TERM");
	if (!isatty(fd) || !term || !term[0] || strcmp(term, "dumb") == 0)
		return CLI_IMAGE_NONE;
	const char *forced = getenv("KILN_IMAGES");
	if (forced && forced[0])
		return strcmp(forced, "kitty") == 0    ? CLI_IMAGE_KITTY
		       : strcmp(forced, "iterm2") == 0 ? CLI_IMAGE_ITERM2
		                                       : CLI_IMAGE_NONE;
	/* A multiplexer in between passes neither protocol on by itself. */
	if (getenv("TMUX") || strncmp(term, "screen", 6) == 0 || strncmp(term, "tmux", 4) == 0)
		return CLI_IMAGE_NONE;
	if (strstr(term, "kitty") || strstr(term, "ghostty") || getenv("KITTY_WINDOW_ID") ||
	    getenv("KONSOLE_VERSION"))
		return CLI_IMAGE_KITTY;
	if (env_is("TERM_PROGRAM", "iTerm.app") || env_is("LC_TERMINAL", "iTerm2") ||
	    env_is("TERM_PROGRAM", "WezTerm") || env_has("TERM", "wezterm"))
		return CLI_IMAGE_ITERM2;
	return CLI_IMAGE_NONE;
}

static bool b64_ok(const char *s, size_t len)
{
	if (!len || len > IMAGE_B64_MAX)
		return false;
	for (size_t i = 0; i < len; i++) {
		char ch = s[i];
		if (!((ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') ||
		      (ch >= '0' && ch <= '9') || ch == '+' || ch == '/' || ch == '='))
			return false;
	}
	return true;
}

/* The decoded size of base64 text (no whitespace). */
static size_t b64_size(const char *s, size_t len)
{
	size_t pad = 0;
	while (pad < 2 && len > pad && s[len - 1 - pad] == '=')
		pad++;
	return len / 4 * 3 + (len % 4 ? len % 4 - 1 : 0) - (len % 4 ? 0 : pad);
}

bool cli_image_show(FILE *out, enum cli_image_proto proto, const char *b64, size_t len)
{
	if (proto == CLI_IMAGE_NONE || !b64_ok(b64, len))
		return false;
	if (proto == CLI_IMAGE_KITTY) {
		/* f=100: PNG; a=T: transmit and show; q=2: no answer (it would
		 * arrive as typed input). */
		for (size_t off = 0; off < len; off += KITTY_CHUNK) {
			size_t n = len - off < KITTY_CHUNK ? len - off : KITTY_CHUNK;
			bool more = off + n < len;
			fprintf(out, "\033_G%sm=%d;", off == 0 ? "f=100,a=T,q=2," : "",
			        more ? 1 : 0);
			fwrite(b64 + off, 1, n, out);
			fputs("\033\\", out);
		}
	} else {
		fprintf(out, "\033]1337;File=inline=1;size=%zu;preserveAspectRatio=1:",
		        b64_size(b64, len));
		fwrite(b64, 1, len, out);
		fputc('\a', out);
	}
	fputc('\n', out);
	fflush(out);
	return true;
}
