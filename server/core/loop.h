/* loop.h: the one event loop. It owns epoll; everything else (the protocol
 * stream, sandbox pipes, libcurl sockets) plugs in through these few verbs:
 * watch an fd, start a timer, watch a signal, run, stop. Single-threaded:
 * every callback runs on the loop's thread, one at a time. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

struct loop;
struct loop_timer;

enum loop_events {
	LOOP_READ = 1 << 0,
	LOOP_WRITE = 1 << 1,
	/* Reported only: the peer hung up or the fd is in error. */
	LOOP_HUP = 1 << 2,
	LOOP_ERR = 1 << 3,
	/* With LOOP_READ: edge-triggered (EPOLLET). The callback is called
	 * when the fd's wait queue is woken (a pipe's writer that found it
	 * empty filled it, or ended a write, or closed), not again while
	 * data stays unread: it must take what is there, or know that a
	 * wake-up will come. */
	LOOP_EDGE = 1 << 4,
};

typedef void (*loop_io_fn)(struct loop *loop, int fd, unsigned events, void *data);
typedef void (*loop_timer_fn)(struct loop *loop, void *data);
typedef void (*loop_signal_fn)(struct loop *loop, int signo, void *data);

/* Returns NULL on OOM or when epoll/timerfd/signalfd cannot be created. */
struct loop *loop_new(void);
/* Frees the loop. Watches and timers still registered are dropped; their
 * fds are not closed (the loop never owns an fd it did not create). */
void loop_free(struct loop *loop);

/* Watch fd for events (a mask of LOOP_READ | LOOP_WRITE; 0 keeps it
 * registered but silent). One watch per fd; -EEXIST when already watched. */
int loop_watch(struct loop *loop, int fd, unsigned events, loop_io_fn fn, void *data);
/* Change the events of a watched fd. -ENOENT when not watched. */
int loop_modify(struct loop *loop, int fd, unsigned events);
/* Stop watching fd. Safe to call from any callback, for any fd, including
 * one whose event is pending in the current iteration: it will not fire. */
void loop_unwatch(struct loop *loop, int fd);

/* One-shot timer after ms milliseconds (0: on the next iteration, after the
 * fd events already pending). The handle is valid until the callback starts
 * or loop_timer_stop() is called; the loop frees it. NULL on OOM. */
struct loop_timer *loop_timer_start(struct loop *loop, uint64_t ms, loop_timer_fn fn, void *data);
/* Cancel a pending timer. NULL is a no-op. */
void loop_timer_stop(struct loop *loop, struct loop_timer *timer);

/* Deliver signo through the loop (signalfd) instead of asynchronously. The
 * signal is blocked for the thread; one handler per signal. */
int loop_signal_watch(struct loop *loop, int signo, loop_signal_fn fn, void *data);

/* Run until loop_stop(); returns the code given to it. -errno when epoll
 * itself fails. */
int loop_run(struct loop *loop);
/* Make loop_run() return code after the current callback. */
void loop_stop(struct loop *loop, int code);
bool loop_stopping(const struct loop *loop);

/* Milliseconds on CLOCK_MONOTONIC. */
uint64_t loop_now_ms(void);
