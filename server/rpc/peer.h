/* peer.h: the client connection: reads framed messages from one fd, writes
 * framed messages to another, all through the event loop and never
 * blocking it. Parses bodies into JSON; knows nothing of methods.
 *
 * Backpressure: writes are queued when the client is not reading. Past a
 * high-water mark (8 MiB) the peer reports itself congested and stops
 * reading its input, so no new requests add replies; producers (run output,
 * model streams) check rpc_peer_congested() and wait for the drain callback
 * instead of queueing more. Below the low-water mark (1 MiB) input resumes.
 * Replies are queued, never dropped, up to a ceiling (64 MiB): past it the
 * connection is treated as broken.
 *
 * A send never calls back into its caller: a write error (or the ceiling)
 * marks the output broken and the closed callback runs from the next loop
 * iteration, once, whatever else also ended the connection. */
#pragma once

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>

struct loop;
struct rpc_peer;

struct rpc_peer_ops {
	/* A well-formed JSON body; msg is borrowed (NULL for a JSON null). */
	void (*message)(void *data, json_object *msg);
	/* Input that is not a message: code is the JSON-RPC error to answer
	 * with (id null), detail a sentence for the client and the log. */
	void (*bad_input)(void *data, int code, const char *detail);
	/* The input ended or failed, or the output side broke. Called once,
	 * from the loop, never from inside rpc_peer_send(). */
	void (*closed)(void *data);
};

typedef void (*rpc_tap_fn)(void *data, bool outgoing, const char *json, size_t len);

/* Takes no ownership of the fds; sets them non-blocking. NULL on OOM or
 * when the loop refuses the fds. */
struct rpc_peer *rpc_peer_new(struct loop *loop, int in_fd, int out_fd, size_t max_message,
                              const struct rpc_peer_ops *ops, void *data);
void rpc_peer_free(struct rpc_peer *peer);

/* Serialise and queue msg (borrowed). -EPIPE once the output is broken
 * (then the closed callback comes later, from the loop). */
int rpc_peer_send(struct rpc_peer *peer, json_object *msg);
/* The same in two steps, for a message written as text rather than built
 * as an object (rpc/message.h's rpc_write_*): rpc_peer_begin() returns the
 * peer's body buffer, emptied (NULL once the output is broken); write one
 * JSON value into it, then rpc_peer_send_body() frames and queues it as
 * rpc_peer_send() does. */
struct buf;
struct buf *rpc_peer_begin(struct rpc_peer *peer);
int rpc_peer_send_body(struct rpc_peer *peer);
bool rpc_peer_congested(const struct rpc_peer *peer);

/* Zero-copy sends. When the output is a pipe, a message's middle can be
 * moved into it from another pipe with splice(2), never entering the
 * server's memory: run output that needs no JSON escape, for one.
 * rpc_peer_splice_room() is how many bytes the client's pipe has room
 * for now; 0 when splicing cannot be used now: the output is not a pipe
 * or is broken, a tap watches (it wants the body), or something is
 * queued (messages go out whole and in order, so a splice never passes
 * the queue). */
size_t rpc_peer_splice_room(const struct rpc_peer *peer);
/* Whether splicing can be used at all now: the output is a pipe, not
 * broken, and no tap watches. (With something queued it has no room.) */
bool rpc_peer_can_splice(const struct rpc_peer *peer);
/* Call fn(data) once, from the loop, when the output can take more
 * (poll's POLLOUT: the client read some of its pipe) and nothing is
 * queued. -ENOMEM. A producer whose output would be spliced waits so,
 * instead of queueing copies while the client's pipe is full. */
int rpc_peer_on_room(struct rpc_peer *peer, void (*fn)(void *data), void *data);
/* Forget a room callback registered with this fn and data. */
void rpc_peer_cancel_room(struct rpc_peer *peer, void (*fn)(void *data), void *data);
/* Send one message whose body is head[0..hlen), then the next len bytes
 * of the pipe fd, then tail[0..tlen): the caller has already read those
 * bytes (with tee(2)) and knows they belong in the body as they are. What
 * the client's pipe cannot take is read from fd into the queue, so the
 * message always goes out whole. 0 when the len bytes have been taken
 * from fd (also when the output broke meanwhile: the closed callback
 * follows, as after rpc_peer_send); -EAGAIN (cannot now: see
 * rpc_peer_splice_room), -EPIPE (the output is broken) or -ENOMEM when
 * nothing was taken from fd. */
int rpc_peer_send_splice(struct rpc_peer *peer, const char *head, size_t hlen, int fd, size_t len,
                         const char *tail, size_t tlen);
/* Call fn(data) once, when the queue falls below the low-water mark (at
 * once, from the next loop iteration, when it already is). -ENOMEM. */
int rpc_peer_on_drain(struct rpc_peer *peer, void (*fn)(void *data), void *data);
/* Forget a drain callback registered with this fn and data. */
void rpc_peer_cancel_drain(struct rpc_peer *peer, void (*fn)(void *data), void *data);
/* Write out what is queued, waiting up to timeout_ms. 0 when all is out. */
int rpc_peer_flush(struct rpc_peer *peer, int timeout_ms);
/* Bytes queued and not yet written. */
size_t rpc_peer_queued(const struct rpc_peer *peer);
/* Stop reading input (after exit, or when stdin has been closed). */
void rpc_peer_stop_input(struct rpc_peer *peer);

/* Send the character U+0000 inside strings as U+FFFD (the escape
 * \u0000 as \ufffd), for clients whose JSON parser refuses \u0000:
 * Emacs 28's drops the whole message. Off by default. */
void rpc_peer_set_replace_nul(struct rpc_peer *peer, bool on);

/* Frame messages as newline-delimited JSON (MCP's stdio transport,
 * rpc/frame_lines.h) instead of LSP's Content-Length headers. Call it
 * before the loop runs. */
void rpc_peer_use_lines(struct rpc_peer *peer);

/* See every message body that passes, both ways (for --record). */
void rpc_peer_set_tap(struct rpc_peer *peer, rpc_tap_fn fn, void *data);
