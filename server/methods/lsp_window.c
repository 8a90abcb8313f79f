/* lsp_window.c: what the plain-LSP surface's files (lsp_run.c,
 * lsp_intent.c) send to show things: window/logMessage lines,
 * window/showMessage, the output document opened with
 * window/showDocument, and CodeAction objects. Below both, calling
 * neither. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/buf.h"
#include "core/json.h"
#include "core/log.h"
#include "core/util.h"
#include "core/visible.h"
#include "kiln.h"
#include "methods/lsp.h"
#include "rpc/dispatch.h"

void lsp_log(struct kiln *k, int type, const char *text, size_t len)
{
	struct buf b;
	buf_init(&b, LSP_LINE_MAX * 4);
	vis_append(&b, text, len, VIS_TAB);
	json_object *p = json_object_new_object();
	json_object_object_add(p, "type", json_object_new_int(type));
	json_object_object_add(p, "message",
	                       json_object_new_string_len(b.data ? b.data : "", (int)b.len));
	rpc_notify(k->rpc, "window/logMessage", p);
	buf_release(&b);
}

void lsp_show(struct kiln *k, int type, const char *msg)
{
	json_object *p = json_object_new_object();
	json_object_object_add(p, "type", json_object_new_int(type));
	json_object_object_add(p, "message", json_object_new_string(msg));
	rpc_notify(k->rpc, "window/showMessage", p);
}

/* kiln's own folder for output documents: $XDG_RUNTIME_DIR/kiln, else
 * /tmp/kiln-UID, made 0700 and checked to be ours. Never the user's files. */
static void output_dir_path(char *buf, size_t size)
{
	const char *rt = getenv("XDG_RUNTIME_DIR");
	if (rt && rt[0] == '/')
		snprintf(buf, size, "%s/kiln", rt);
	else
		snprintf(buf, size, "/tmp/kiln-%u", (unsigned)getuid());
}

static int output_dir(char *buf, size_t size)
{
	output_dir_path(buf, size);
	if (mkdir(buf, 0700) < 0 && errno != EEXIST)
		return -errno;
	struct stat st;
	if (lstat(buf, &st) < 0)
		return -errno;
	if (!S_ISDIR(st.st_mode) || st.st_uid != getuid() || (st.st_mode & 077))
		return -EPERM;
	return 0;
}

/* The pid an output document's name ends with (NAME-PID.txt), or 0. */
static long document_pid(const char *name)
{
	size_t n = strlen(name);
	if (n < 6 || strcmp(name + n - 4, ".txt") != 0)
		return 0;
	const char *end = name + n - 4, *p = end;
	while (p > name && p[-1] >= '0' && p[-1] <= '9')
		p--;
	if (p == end || p == name || p[-1] != '-' || end - p > 9)
		return 0;
	return strtol(p, NULL, 10);
}

/* Remove the output documents of the servers whose pid is in none (this
 * one's, when mine), or, when !mine, of servers no longer running. Only
 * kiln's own folder, only names it writes; a missing folder is left
 * missing. */
static void documents_remove(bool mine)
{
	char dir[512];
	output_dir_path(dir, sizeof(dir));
	struct stat st;
	if (lstat(dir, &st) < 0 || !S_ISDIR(st.st_mode) || st.st_uid != getuid())
		return;
	_cleanup_close_ int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0)
		return;
	int rfd = dup(dfd);
	DIR *d = rfd >= 0 ? fdopendir(rfd) : NULL;
	if (!d) {
		if (rfd >= 0)
			close(rfd);
		return;
	}
	struct dirent *e;
	long me = (long)getpid();
	while ((e = readdir(d))) {
		long pid = document_pid(e->d_name);
		if (pid <= 0 ||
		    (mine ? pid != me : pid == me || kill((pid_t)pid, 0) == 0 || errno != ESRCH))
			continue;
		unlinkat(dfd, e->d_name, 0);
	}
	closedir(d);
}

void lsp_documents_sweep(void)
{
	documents_remove(false);
}

void lsp_documents_remove_own(void)
{
	documents_remove(true);
}

static void on_shown(void *data, json_object *result, json_object *error)
{
	(void)data;
	bool ok = false;
	if (error || json_get_bool(result, "success", &ok) < 0 || !ok)
		log_info("the client did not show the output document");
}

void lsp_show_document(struct kiln *k, const char *name, const char *summary, const char *text,
                       size_t len, bool cut)
{
	char dir[512], path[600];
	int r = output_dir(dir, sizeof(dir));
	if (r < 0) {
		log_warn("no folder for output documents: %s", strerror(-r));
		return;
	}
	snprintf(path, sizeof(path), "%s/%s-%d.txt", dir, name, (int)getpid());
	_cleanup_close_ int fd =
	    open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0) {
		log_warn("cannot write %s: %s", path, strerror(errno));
		return;
	}
	struct buf b;
	buf_init(&b, LSP_OUTPUT_MAX * 2 + 4096);
	buf_printf(&b, "%s\n\n", summary);
	vis_append(&b, text ? text : "", len, VIS_NEWLINE | VIS_TAB);
	if (cut)
		buf_printf(&b, "\n[kiln kept the first %u MiB of the output]\n",
		           LSP_OUTPUT_MAX >> 20);
	if (b.len && write(fd, b.data, b.len) != (ssize_t)b.len)
		log_warn("cannot write %s: %s", path, strerror(errno));
	buf_release(&b);
	json_object *p = json_object_new_object();
	char uri[700];
	snprintf(uri, sizeof(uri), "file://%s", path);
	json_object_object_add(p, "uri", json_object_new_string(uri));
	json_object_object_add(p, "takeFocus", json_object_new_boolean(true));
	rpc_request(k->rpc, "window/showDocument", p, 0, on_shown, NULL, NULL);
}

json_object *lsp_action(const char *title, const char *command, json_object *arg)
{
	json_object *cmd = json_object_new_object();
	json_object_object_add(cmd, "title", json_object_new_string(title));
	json_object_object_add(cmd, "command", json_object_new_string(command));
	json_object *args = json_object_new_array();
	json_object_array_add(args, arg);
	json_object_object_add(cmd, "arguments", args);
	json_object *a = json_object_new_object();
	json_object_object_add(a, "title", json_object_new_string(title));
	json_object_object_add(a, "command", cmd);
	return a;
}
