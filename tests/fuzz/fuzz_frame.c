/* fuzz_frame.c: libFuzzer target over the protocol's input path: LSP
 * framing, JSON parsing and JSON-RPC validation, and dispatch through a
 * real peer and event loop on pipes, with the lifecycle methods of the
 * real server. Input: one byte that picks a read size, then the stream.
 *
 * Oracles beyond the sanitizers:
 * - framing does not depend on how the stream is cut into reads (every
 *   body and error is the same fed whole or in pieces);
 * - whatever came in, what goes out is a clean stream of framed JSON-RPC
 *   2.0 responses and notifications: the output is never corrupted. */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/buf.h"
#include "core/json.h"
#include "core/log.h"
#include "core/loop.h"
#include "kiln.h"
#include "methods/methods.h"
#include "rpc/dispatch.h"
#include "rpc/frame.h"
#include "rpc/message.h"
#include "rpc/peer.h"

/* Small, so the fuzzer reaches the size cap with small inputs. */
#define MAX_BODY 4096

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

/* --- 1. framing is independent of read sizes ---------------------------- */

/* The peer parses large bodies a read at a time: fed in pieces, the
 * stream must give the whole-text parse's answer, detail and value. */
static void same_as_stream(const char *body, size_t len, int r, json_object *obj,
                           const char *detail)
{
	struct json_stream *js = json_stream_new(INT32_MAX);
	if (!js)
		abort();
	for (size_t i = 0; i < len; i += 7)
		json_stream_feed(js, body + i, len - i < 7 ? len - i : 7);
	json_object *sobj = NULL;
	char sdetail[200];
	int sr = rpc_parse_stream(js, &sobj, sdetail, sizeof(sdetail));
	json_stream_free(js);
	if (sr != r || (r < 0 && strcmp(sdetail, detail) != 0))
		abort();
	if (r == 0 && strcmp(json_object_to_json_string_ext(obj, JSON_C_TO_STRING_PLAIN),
	                     json_object_to_json_string_ext(sobj, JSON_C_TO_STRING_PLAIN)) != 0)
		abort();
	json_object_put(sobj);
}

static void rec_message(void *data, char *body, size_t len)
{
	struct buf *b = data;
	buf_printf(b, "M%zu:", len);
	buf_append(b, body, len);
	/* Validation must not crash on any body. */
	json_object *obj = NULL;
	char detail[200];
	int r = rpc_parse(body, len, &obj, detail, sizeof(detail));
	same_as_stream(body, len, r, obj, detail);
	if (r == 0) {
		struct rpc_msg m;
		json_object *bad_id;
		if (json_object_is_type(obj, json_type_array)) {
			for (size_t i = 0; i < json_object_array_length(obj); i++)
				rpc_msg_parse(json_object_array_get_idx(obj, i), &m, &bad_id,
				              detail, sizeof(detail));
		} else {
			rpc_msg_parse(obj, &m, &bad_id, detail, sizeof(detail));
		}
		json_object_put(obj);
	}
}

static void rec_error(void *data, enum frame_error err, const char *detail)
{
	struct buf *b = data;
	if (!detail || !detail[0])
		abort();
	buf_printf(b, "E%d;", (int)err);
}

static const struct frame_callbacks rec_cbs = {.message = rec_message, .error = rec_error};

static void frame_events(const uint8_t *s, size_t n, size_t step, struct buf *out)
{
	struct frame_reader fr;
	frame_reader_init(&fr, MAX_BODY);
	for (size_t i = 0; i < n; i += step) {
		size_t k = n - i < step ? n - i : step;
		if (frame_reader_feed(&fr, (const char *)s + i, k, &rec_cbs, out) < 0)
			abort();
	}
	frame_reader_eof(&fr, &rec_cbs, out);
	if (!frame_reader_idle(&fr))
		abort();
	frame_reader_release(&fr);
}

static void check_framing(const uint8_t *s, size_t n, size_t step)
{
	struct buf whole, pieces;
	buf_init(&whole, SIZE_MAX / 2);
	buf_init(&pieces, SIZE_MAX / 2);
	frame_events(s, n, n ? n : 1, &whole);
	frame_events(s, n, step, &pieces);
	if (whole.len != pieces.len || (whole.len && memcmp(whole.data, pieces.data, whole.len))) {
		fprintf(stderr, "framing differs by read size %zu:\n whole:  %s\n pieces: %s\n",
		        step, whole.data ? whole.data : "", pieces.data ? pieces.data : "");
		abort();
	}
	buf_release(&whole);
	buf_release(&pieces);
}

/* --- 2. the whole input path through a real peer ----------------------- */

/* An async method, so that cancellation and pending calls are reached. */
static void later_cancel(void *data)
{
	(void)data;
}

static int method_later(struct rpc_call *call, json_object *params)
{
	(void)params;
	rpc_call_on_cancel(call, later_cancel, NULL);
	return 0;
}

static int method_echo(struct rpc_call *call, json_object *params)
{
	rpc_call_reply(call, json_copy(params));
	return 0;
}

/* The real lifecycle handlers; not the other families, which start
 * sandboxes and model requests. */
static const struct rpc_method table[] = {
    {"initialize", method_initialize, RPC_BEFORE_INIT},
    {"initialized", method_initialized, RPC_NOTIFICATION},
    {"shutdown", method_shutdown, 0},
    {"exit", method_exit, RPC_NOTIFICATION | RPC_BEFORE_INIT | RPC_AFTER_SHUTDOWN},
    {"echo", method_echo, 0},
    {"later", method_later, 0},
};

static void on_message(void *data, json_object *msg)
{
	struct kiln *k = data;
	rpc_dispatch_message(k->rpc, msg);
}

static void on_bad_input(void *data, int code, const char *detail)
{
	struct kiln *k = data;
	rpc_dispatch_bad_input(k->rpc, code, detail);
}

static void on_closed(void *data)
{
	struct kiln *k = data;
	kiln_stop(k, 0);
}

static const struct rpc_peer_ops ops = {on_message, on_bad_input, on_closed};

/* Every message kiln writes is a JSON-RPC 2.0 response or notification. */
static void check_out_message(json_object *m)
{
	if (!json_object_is_type(m, json_type_object))
		abort();
	const char *v = NULL;
	if (json_get_string(m, "jsonrpc", &v) < 0 || strcmp(v, "2.0") != 0)
		abort();
	json_object *id;
	bool has_id = json_object_object_get_ex(m, "id", &id);
	bool has_result = json_object_object_get_ex(m, "result", NULL);
	json_object *error = json_get(m, "error");
	bool has_method = json_get(m, "method") != NULL;
	if (has_method)
		return; /* a notification or request to the client */
	if (!has_id || has_result == (error != NULL))
		abort();
	if (error) {
		int64_t code;
		const char *msg;
		if (json_get_int64(error, "code", &code) < 0 ||
		    json_get_string(error, "message", &msg) < 0)
			abort();
	}
}

static void out_message(void *data, char *body, size_t len)
{
	(void)data;
	json_object *obj = NULL;
	char detail[200];
	if (rpc_parse(body, len, &obj, detail, sizeof(detail)) < 0 || !obj) {
		fprintf(stderr, "kiln wrote a body that is not JSON: %s\n", detail);
		abort();
	}
	if (json_object_is_type(obj, json_type_array)) {
		if (json_object_array_length(obj) == 0)
			abort(); /* an empty batch reply must not be sent */
		for (size_t i = 0; i < json_object_array_length(obj); i++)
			check_out_message(json_object_array_get_idx(obj, i));
	} else {
		check_out_message(obj);
	}
	json_object_put(obj);
}

static void out_error(void *data, enum frame_error err, const char *detail)
{
	(void)data;
	fprintf(stderr, "kiln wrote a bad frame (%d): %s\n", (int)err, detail);
	abort();
}

static const struct frame_callbacks out_cbs = {.message = out_message, .error = out_error};

static void run_server(const uint8_t *s, size_t n)
{
	int in[2], out[2];
	if (pipe2(in, O_CLOEXEC) < 0 || pipe2(out, O_CLOEXEC) < 0)
		abort();
	/* The whole input must fit in the pipe before the loop runs. */
	fcntl(in[1], F_SETPIPE_SZ, 1 << 20);
	fcntl(out[1], F_SETPIPE_SZ, 1 << 20);
	if (n && write(in[1], s, n) != (ssize_t)n)
		abort();
	close(in[1]);

	struct kiln k = {.encoding = POS_UTF16};
	k.opts.max_message = MAX_BODY;
	k.loop = loop_new();
	k.config = json_object_new_object();
	k.peer = rpc_peer_new(k.loop, in[0], out[1], MAX_BODY, &ops, &k);
	k.rpc = rpc_dispatch_new(k.loop, k.peer, table, sizeof(table) / sizeof(table[0]), &k);
	if (!k.loop || !k.peer || !k.rpc)
		abort();
	loop_run(k.loop);
	rpc_dispatch_cancel_all(k.rpc);
	rpc_peer_flush(k.peer, 1000);
	rpc_dispatch_free(k.rpc);
	rpc_peer_free(k.peer);
	json_object_put(k.init_options);
	json_object_put(k.config);
	loop_free(k.loop);
	close(in[0]);
	close(out[1]);

	struct frame_reader fr;
	frame_reader_init(&fr, SIZE_MAX / 2);
	char chunk[65536];
	ssize_t r;
	while ((r = read(out[0], chunk, sizeof(chunk))) > 0)
		if (frame_reader_feed(&fr, chunk, (size_t)r, &out_cbs, NULL) < 0)
			abort();
	if (!frame_reader_idle(&fr))
		abort(); /* a reply cut short */
	frame_reader_release(&fr);
	close(out[0]);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	/* Refusals are logged at warn; the fuzzer would print millions. */
	log_set_level(LOG_ERROR);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1 || size > (512u << 10))
		return 0;
	size_t step = (size_t)(data[0] % 32) + 1;
	check_framing(data + 1, size - 1, step);
	run_server(data + 1, size - 1);
	return 0;
}
