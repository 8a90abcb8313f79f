/* client.c: the terminal's JSON-RPC client of a kiln server child (see
 * client.h): spawning, framing through rpc/frame.c (the server's own push
 * framer) both ways, and waiting for one answer at a time. */
#include "cli/client.h"

#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/buf.h"
#include "core/json.h"
#include "methods/workspace_edit.h"
#include "core/util.h"
#include "rpc/frame.h"
#include "rpc/message.h"

#define CLIENT_MAX_MESSAGE (64u << 20)

volatile sig_atomic_t cli_client_interrupted;

struct cli_client {
	pid_t pid;
	int to, from;
	int64_t next_id;
	struct frame_reader fr;
	/* Messages framed from the last read and not yet taken, in arrival
	 * order: bounded by what one read returns, as the client reads only
	 * once they are all taken. */
	json_object *queue;
	size_t head; /* index of the next message to take */
	int err;     /* the stream from the server broke: -EPROTO, -ENOMEM */
};

static int write_all(int fd, const char *s, size_t n)
{
	while (n) {
		ssize_t w = write(fd, s, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -EPIPE;
		s += w;
		n -= (size_t)w;
	}
	return 0;
}

static int send_msg(struct cli_client *c, json_object *msg)
{
	const char *body = json_compact(msg);
	struct buf out;
	buf_init(&out, CLIENT_MAX_MESSAGE + 64);
	int r = frame_encode(&out, body, strlen(body));
	if (r == 0)
		r = write_all(c->to, out.data, out.len);
	buf_release(&out);
	return r;
}

static void on_body(void *data, char *body, size_t len)
{
	struct cli_client *c = data;
	json_object *obj = NULL;
	char why[160];
	if (c->err)
		return;
	if (rpc_parse(body, len, &obj, why, sizeof(why)) < 0 || !obj) {
		json_object_put(obj);
		c->err = -EPROTO;
		return;
	}
	if (json_object_array_add(c->queue, obj) < 0) {
		json_object_put(obj);
		c->err = -ENOMEM;
	}
}

static void on_frame_error(void *data, enum frame_error err, const char *detail)
{
	struct cli_client *c = data;
	(void)err;
	(void)detail;
	/* kiln's own server never frames badly: a stream that does is not
	 * one to keep talking to. */
	c->err = -EPROTO;
}

static const struct frame_callbacks frame_cb = {.message = on_body, .error = on_frame_error};

/* The next framed message (yours), 0 when more bytes are needed, or
 * c->err once the messages framed before the break are taken. */
static int take_msg(struct cli_client *c, json_object **ret)
{
	size_t n = json_object_array_length(c->queue);
	if (c->head < n) {
		*ret = json_object_get(json_object_array_get_idx(c->queue, c->head++));
		if (c->head == n) {
			json_object_array_del_idx(c->queue, 0, n);
			c->head = 0;
		}
		return 1;
	}
	return c->err;
}

static int read_more(struct cli_client *c, int timeout_ms)
{
	struct pollfd p = {.fd = c->from, .events = POLLIN};
	int r = poll(&p, 1, timeout_ms);
	if (r < 0)
		return errno == EINTR ? 0 : -errno;
	if (r == 0)
		return 0;
	char chunk[65536];
	ssize_t n = read(c->from, chunk, sizeof(chunk));
	if (n < 0)
		return errno == EINTR || errno == EAGAIN ? 0 : -errno;
	if (n == 0)
		return -EPIPE;
	return frame_reader_feed(&c->fr, chunk, (size_t)n, &frame_cb, c) < 0 ? -ENOMEM : 1;
}

int cli_client_call(struct cli_client *c, const char *method, json_object *params,
                    cli_client_note_fn fn, void *data, json_object **ret_result,
                    json_object **ret_error)
{
	int64_t id = ++c->next_id;
	_cleanup_json_ json_object *idj = json_object_new_int64(id);
	_cleanup_json_ json_object *req = rpc_request_new(idj, method, params);
	if (!req)
		return -ENOMEM;
	int r = send_msg(c, req);
	if (r < 0)
		return r;
	bool cancel_sent = false;
	for (;;) {
		if (cli_client_interrupted && !cancel_sent) {
			cli_client_interrupted = 0;
			cancel_sent = true;
			json_object *p = json_object_new_object();
			json_object_object_add(p, "id", json_object_new_int64(id));
			_cleanup_json_ json_object *n = rpc_notification_new("$/cancelRequest", p);
			send_msg(c, n);
		}
		json_object *msg = NULL;
		r = take_msg(c, &msg);
		if (r < 0)
			return r;
		if (r == 0) {
			r = read_more(c, 100);
			if (r < 0)
				return r;
			/* Nothing for 100 ms: the note function's tick. */
			if (r == 0 && fn)
				fn(data, NULL, NULL);
			continue;
		}
		_cleanup_json_ json_object *m = msg;
		const char *mname = NULL;
		json_get_string(m, "method", &mname);
		json_object *mid = json_get(m, "id");
		if (mname && mid) {
			/* The server asks something of its client: the
			 * terminal has nothing to offer but a null answer. */
			_cleanup_json_ json_object *resp = rpc_response_new(mid, NULL);
			send_msg(c, resp);
			continue;
		}
		if (mname) {
			if (fn)
				fn(data, mname, json_get(m, "params"));
			continue;
		}
		if (!mid || !rpc_id_equal(mid, idj))
			continue;
		json_object *err = json_get(m, "error");
		*ret_error = err ? json_object_get(err) : NULL;
		*ret_result = err ? NULL : json_object_get(json_get(m, "result"));
		return 0;
	}
}

int cli_client_start(const char *config_path, struct cli_client **ret, char *detail, size_t dsz)
{
	int in[2], out[2];
	if (pipe2(in, O_CLOEXEC) < 0)
		return -errno;
	if (pipe2(out, O_CLOEXEC) < 0) {
		close(in[0]), close(in[1]);
		return -errno;
	}
	pid_t pid = fork();
	if (pid < 0) {
		int e = errno;
		close(in[0]), close(in[1]), close(out[0]), close(out[1]);
		return -e;
	}
	if (pid == 0) {
		/* Its own process group: the terminal's Ctrl-C is the front
		 * end's to turn into a cancel, not a kill of the server. */
		setpgid(0, 0);
		dup2(in[0], 0);
		dup2(out[1], 1);
		const char *level = getenv("KILN_SHELL_LOG_LEVEL");
		if (config_path)
			execl("/proc/self/exe", "kiln", "--log-level", level ? level : "error",
			      "--config", config_path, (char *)NULL);
		else
			execl("/proc/self/exe", "kiln", "--log-level", level ? level : "error",
			      (char *)NULL);
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	struct cli_client *c = calloc(1, sizeof(*c));
	if (!c) {
		close(in[1]), close(out[0]);
		return -ENOMEM;
	}
	c->pid = pid;
	c->to = in[1];
	c->from = out[0];
	frame_reader_init(&c->fr, CLIENT_MAX_MESSAGE);
	c->queue = json_object_new_array();
	if (!c->queue) {
		/* The child sees its input end and exits. */
		close(c->to), close(c->from);
		while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
			;
		frame_reader_release(&c->fr);
		free(c);
		return -ENOMEM;
	}
	json_object *params = json_object_new_object();
	json_object *caps = json_object_new_object();
	json_object *general = json_object_new_object();
	json_object *encs = json_object_new_array();
	json_object_array_add(encs, json_object_new_string("utf-8"));
	json_object_object_add(general, "positionEncodings", encs);
	json_object_object_add(caps, "general", general);
	json_object_object_add(params, "capabilities", caps);
	json_object *info = json_object_new_object();
	json_object_object_add(info, "name", json_object_new_string("kiln shell"));
	json_object_object_add(params, "clientInfo", info);
	/* The terminal's workspace is the current directory, as a shell's. */
	char cwd[PATH_MAX];
	char *uri = getcwd(cwd, sizeof(cwd)) ? file_uri(cwd) : NULL;
	if (uri)
		json_object_object_add(params, "rootUri", json_object_new_string(uri));
	free(uri);
	json_object *res = NULL, *err = NULL;
	int r = cli_client_call(c, "initialize", params, NULL, NULL, &res, &err);
	if (r < 0 || err) {
		snprintf(detail, dsz, "the kiln server did not start%s%s", err ? ": " : "",
		         err ? json_compact(err) : "");
		json_object_put(res);
		json_object_put(err);
		cli_client_stop(c);
		return r < 0 ? r : -EIO;
	}
	json_object_put(res);
	_cleanup_json_ json_object *n =
	    rpc_notification_new("initialized", json_object_new_object());
	send_msg(c, n);
	*ret = c;
	return 0;
}

void cli_client_stop(struct cli_client *c)
{
	if (!c)
		return;
	json_object *res = NULL, *err = NULL;
	if (cli_client_call(c, "shutdown", NULL, NULL, NULL, &res, &err) == 0) {
		_cleanup_json_ json_object *n = rpc_notification_new("exit", NULL);
		send_msg(c, n);
	}
	json_object_put(res);
	json_object_put(err);
	close(c->to);
	close(c->from);
	int st;
	while (waitpid(c->pid, &st, 0) < 0 && errno == EINTR)
		;
	frame_reader_release(&c->fr);
	json_object_put(c->queue);
	free(c);
}
