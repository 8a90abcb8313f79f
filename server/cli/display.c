/* display.c: run/display in the terminal (display.h). */
#include "cli/display.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cache_dir.h"
#include "cli/image.h"
#include "cli/save.h"
#include "cli/term.h"
#include "core/buf.h"
#include "core/json.h"
#include "core/visible.h"

static const struct {
	const char *mime, *ext;
	bool base64;
} kinds[] = {
    {"image/png", "png", true},          {"image/jpeg", "jpg", true},
    {"image/svg+xml", "svg", false},     {"text/html", "html", false},
    {"text/markdown", "md", false},      {"text/latex", "tex", false},
    {"application/json", "json", false},
};

static int b64_value(int ch)
{
	if (ch >= 'A' && ch <= 'Z')
		return ch - 'A';
	if (ch >= 'a' && ch <= 'z')
		return ch - 'a' + 26;
	if (ch >= '0' && ch <= '9')
		return ch - '0' + 52;
	if (ch == '+')
		return 62;
	if (ch == '/')
		return 63;
	return -1;
}

/* Decode base64 (whitespace and '=' ignored); -EINVAL on another byte. */
static int b64_decode(const char *s, struct buf *out)
{
	unsigned acc = 0;
	int bits = 0;
	for (; *s; s++) {
		if (*s == '=' || *s == '\n' || *s == '\r' || *s == ' ')
			continue;
		int v = b64_value((unsigned char)*s);
		if (v < 0)
			return -EINVAL;
		acc = (acc << 6) | (unsigned)v;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			char c = (char)((acc >> bits) & 0xff);
			if (buf_append(out, &c, 1) < 0)
				return -ENOBUFS;
		}
	}
	return 0;
}

static int write_file(const char *path, const char *data, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	for (size_t off = 0; off < len;) {
		ssize_t w = write(fd, data + off, len - off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			int r = w < 0 ? -errno : -EIO;
			close(fd);
			return r;
		}
		off += (size_t)w;
	}
	return close(fd) < 0 ? -errno : 0;
}

void term_display(struct term *t, json_object *params)
{
	static unsigned counter;
	const char *run_id = "run", *plain = "";
	json_get_string(params, "runId", &run_id);
	json_object *data = json_get(params, "data");
	json_get_string(data, "text/plain", &plain);
	term_status_clear(t);
	if (!t->at_bol)
		fputc('\n', t->ui), t->at_bol = true;
	bool rich = false;
	unsigned n = ++counter;
	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
		json_object *v = json_get(data, kinds[i].mime);
		if (!v)
			continue;
		char dir[4096], path[4200];
		int r = cli_run_folder(run_id, dir, sizeof(dir));
		struct buf b;
		buf_init(&b, 64u << 20);
		if (r >= 0) {
			const char *s =
			    json_object_is_type(v, json_type_string)
			        ? json_object_get_string(v)
			        : json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN);
			if (kinds[i].base64)
				r = b64_decode(s, &b);
			else
				r = buf_append(&b, s, strlen(s));
		}
		snprintf(path, sizeof(path), "%s/display-%u.%s", dir, n, kinds[i].ext);
		if (r >= 0)
			r = write_file(path, b.data ? b.data : "", b.len);
		buf_release(&b);
		if (r < 0) {
			term_info(t, "display %s not saved: %s", kinds[i].mime, strerror(-r));
		} else {
			/* The path as a link where the terminal takes OSC 8. */
			term_status_clear(t);
			fprintf(t->ui, "%sdisplay %s saved: ", term_dim(t), kinds[i].mime);
			cli_print_path(t->ui, path, cli_links_ok(fileno(t->ui)));
			fprintf(t->ui, "%s\n", term_reset(t));
			fflush(t->ui);
		}
		if (r >= 0 && strcmp(kinds[i].mime, "image/png") == 0 &&
		    json_object_is_type(v, json_type_string))
			cli_image_show(t->ui, cli_image_protocol(fileno(t->ui)),
			               json_object_get_string(v),
			               (size_t)json_object_get_string_len(v));
		rich = rich || kinds[i].base64;
	}
	/* An image's text/plain ("<Figure size 640x480 with 1 Axes>") says
	 * nothing the saved file does not; other text is the display, and
	 * goes where the program's output goes. */
	if (!rich && plain[0]) {
		fflush(t->ui);
		vis_fputs(stdout, plain, VIS_NEWLINE | VIS_TAB);
		fputc('\n', stdout);
		t->at_bol = true;
	}
	fflush(stdout);
}
