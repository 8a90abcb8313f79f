/* save.c: saving a run's artifacts for the terminal (see save.h). */
#include "cli/save.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli/cache_dir.h"
#include "core/visible.h"
#include "methods/workspace_edit.h"

int cli_base64_decode(const char *text, unsigned char **ret, size_t *ret_len)
{
	size_t n = strlen(text);
	unsigned char *out = malloc(n / 4 * 3 + 3);
	if (!out)
		return -ENOMEM;
	uint32_t acc = 0;
	int bits = 0;
	size_t len = 0;
	for (size_t i = 0; i < n; i++) {
		char c = text[i];
		int v = c >= 'A' && c <= 'Z'   ? c - 'A'
		        : c >= 'a' && c <= 'z' ? c - 'a' + 26
		        : c >= '0' && c <= '9' ? c - '0' + 52
		        : c == '+'             ? 62
		        : c == '/'             ? 63
		                               : -1;
		if (c == '=')
			break;
		if (v < 0) {
			free(out);
			return -EINVAL;
		}
		acc = (acc << 6) | (uint32_t)v;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			out[len++] = (unsigned char)(acc >> bits);
		}
	}
	*ret = out;
	*ret_len = len;
	return 0;
}

/* The folder of this process's run run_id (cache_dir.h: the same one its
 * displays go to), its id made into plain characters. */
static int run_dir(const char *run_id, char *dir, size_t size)
{
	char id[32];
	snprintf(id, sizeof(id), "%s", run_id);
	for (char *p = id; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		      (*p >= '0' && *p <= '9')))
			*p = '_';
	return cli_run_folder(id, dir, size);
}

int cli_save_artifact(const char *run_id, const char *name, const void *data, size_t len,
                      char *ret_path, size_t size)
{
	char dir[PATH_MAX];
	int r = run_dir(run_id, dir, sizeof(dir));
	if (r < 0)
		return r;
	/* One plain name: "plots/a.png" becomes "plots_a.png"; no dot first,
	 * no control character. */
	char file[256];
	size_t n = 0;
	for (const char *p = name; *p && n < sizeof(file) - 1; p++) {
		unsigned char ch = (unsigned char)*p;
		file[n++] = ch == '/' || ch < 0x20 || ch == 0x7f ? '_' : (char)ch;
	}
	file[n] = '\0';
	if (!n || file[0] == '.')
		file[0] = '_';
	if (!n)
		file[n = 1] = '\0';
	if (snprintf(ret_path, size, "%s/%s", dir, file) >= (int)size)
		return -ENAMETOOLONG;
	int fd = open(ret_path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	const char *p = data;
	for (size_t off = 0; off < len;) {
		ssize_t w = write(fd, p + off, len - off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			r = w < 0 ? -errno : -EIO;
			close(fd);
			return r;
		}
		off += (size_t)w;
	}
	return close(fd) < 0 ? -errno : 0;
}

bool cli_links_ok(int fd)
{
	const char *term = getenv("TERM");
	return isatty(fd) && term && term[0] && strcmp(term, "dumb") != 0;
}

void cli_print_path(FILE *out, const char *path, bool link)
{
	char *uri = link ? file_uri(path) : NULL;
	if (uri) {
		char host[256] = "";
		gethostname(host, sizeof(host) - 1);
		/* file://HOST/path: a terminal opens it only on its own host. */
		fprintf(out, "\033]8;;file://%s%s\033\\", host, uri + 7);
	}
	vis_fputs(out, path, 0);
	if (uri)
		fputs("\033]8;;\033\\", out);
	free(uri);
}
