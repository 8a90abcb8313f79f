/* loop.c: epoll + timerfd + signalfd behind loop.h. Timers are a sorted
 * list (kiln has a handful at a time); one timerfd is armed for the head. */
#include "core/loop.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "core/log.h"
#include "core/util.h"

struct watch {
	loop_io_fn fn;
	void *data;
	uint32_t gen; /* 0: free slot */
	unsigned events;
};

struct loop_timer {
	struct loop_timer *next;
	uint64_t deadline_ms;
	uint64_t seq; /* ties fire in start order */
	loop_timer_fn fn;
	void *data;
};

struct sig_watch {
	loop_signal_fn fn;
	void *data;
};

struct loop {
	int epfd;
	int timerfd;
	int sigfd;
	sigset_t sigmask;
	struct watch *watches; /* indexed by fd */
	size_t nwatches;
	uint32_t next_gen;
	struct loop_timer *timers;
	uint64_t timer_seq;
	struct sig_watch sigs[65];
	bool stopping;
	int exit_code;
};

/* epoll_event.data.u64 carries the fd and the watch's generation, so an
 * event that was already collected for a watch removed (and perhaps
 * re-added for a new fd with the same number) in this iteration is dropped. */
#define TAG(fd, gen) (((uint64_t)(gen) << 32) | (uint32_t)(fd))
#define TAG_FD(tag)  ((int)(uint32_t)(tag))
#define TAG_GEN(tag) ((uint32_t)((tag) >> 32))

enum { TAG_TIMER = 1, TAG_SIGNAL = 2 }; /* generations reserved below 16 */

uint64_t loop_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

struct loop *loop_new(void)
{
	struct loop *loop = calloc(1, sizeof(*loop));
	if (!loop)
		return NULL;
	loop->next_gen = 16;
	loop->epfd = epoll_create1(EPOLL_CLOEXEC);
	loop->timerfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	sigemptyset(&loop->sigmask);
	loop->sigfd = signalfd(-1, &loop->sigmask, SFD_NONBLOCK | SFD_CLOEXEC);
	if (loop->epfd < 0 || loop->timerfd < 0 || loop->sigfd < 0)
		goto fail;
	struct epoll_event ev = {.events = EPOLLIN};
	ev.data.u64 = TAG(loop->timerfd, TAG_TIMER);
	if (epoll_ctl(loop->epfd, EPOLL_CTL_ADD, loop->timerfd, &ev) < 0)
		goto fail;
	ev.data.u64 = TAG(loop->sigfd, TAG_SIGNAL);
	if (epoll_ctl(loop->epfd, EPOLL_CTL_ADD, loop->sigfd, &ev) < 0)
		goto fail;
	return loop;
fail:
	loop_free(loop);
	return NULL;
}

void loop_free(struct loop *loop)
{
	if (!loop)
		return;
	while (loop->timers) {
		struct loop_timer *t = loop->timers;
		loop->timers = t->next;
		free(t);
	}
	if (loop->epfd >= 0)
		close(loop->epfd);
	if (loop->timerfd >= 0)
		close(loop->timerfd);
	if (loop->sigfd >= 0)
		close(loop->sigfd);
	free(loop->watches);
	free(loop);
}

static uint32_t to_epoll(unsigned events)
{
	uint32_t e = 0;
	if (events & LOOP_READ)
		e |= EPOLLIN | EPOLLRDHUP;
	if (events & LOOP_WRITE)
		e |= EPOLLOUT;
	if (events & LOOP_EDGE)
		e |= EPOLLET;
	return e;
}

int loop_watch(struct loop *loop, int fd, unsigned events, loop_io_fn fn, void *data)
{
	if (fd < 0)
		return -EBADF;
	if ((size_t)fd >= loop->nwatches) {
		size_t n = loop->nwatches ? loop->nwatches : 64;
		while (n <= (size_t)fd)
			n *= 2;
		struct watch *w = realloc(loop->watches, n * sizeof(*w));
		if (!w)
			return -ENOMEM;
		memset(w + loop->nwatches, 0, (n - loop->nwatches) * sizeof(*w));
		loop->watches = w;
		loop->nwatches = n;
	}
	struct watch *w = &loop->watches[fd];
	if (w->gen)
		return -EEXIST;
	uint32_t gen = loop->next_gen++;
	if (loop->next_gen == 0)
		loop->next_gen = 16;
	struct epoll_event ev = {.events = to_epoll(events)};
	ev.data.u64 = TAG(fd, gen);
	if (epoll_ctl(loop->epfd, EPOLL_CTL_ADD, fd, &ev) < 0)
		return -errno;
	*w = (struct watch){.fn = fn, .data = data, .gen = gen, .events = events};
	return 0;
}

int loop_modify(struct loop *loop, int fd, unsigned events)
{
	if (fd < 0 || (size_t)fd >= loop->nwatches || !loop->watches[fd].gen)
		return -ENOENT;
	struct watch *w = &loop->watches[fd];
	if (w->events == events)
		return 0;
	struct epoll_event ev = {.events = to_epoll(events)};
	ev.data.u64 = TAG(fd, w->gen);
	if (epoll_ctl(loop->epfd, EPOLL_CTL_MOD, fd, &ev) < 0)
		return -errno;
	w->events = events;
	return 0;
}

void loop_unwatch(struct loop *loop, int fd)
{
	if (fd < 0 || (size_t)fd >= loop->nwatches || !loop->watches[fd].gen)
		return;
	epoll_ctl(loop->epfd, EPOLL_CTL_DEL, fd, NULL);
	memset(&loop->watches[fd], 0, sizeof(loop->watches[fd]));
}

static void arm_timerfd(struct loop *loop)
{
	struct itimerspec its = {0};
	if (loop->timers) {
		uint64_t d = loop->timers->deadline_ms;
		/* An all-zero it_value disarms; a deadline already past still
		 * needs to fire, so use the smallest non-zero time. */
		its.it_value.tv_sec = (time_t)(d / 1000);
		its.it_value.tv_nsec = (long)(d % 1000) * 1000000;
		if (its.it_value.tv_sec == 0 && its.it_value.tv_nsec == 0)
			its.it_value.tv_nsec = 1;
	}
	timerfd_settime(loop->timerfd, TFD_TIMER_ABSTIME, &its, NULL);
}

struct loop_timer *loop_timer_start(struct loop *loop, uint64_t ms, loop_timer_fn fn, void *data)
{
	struct loop_timer *t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	t->deadline_ms = loop_now_ms() + ms;
	t->seq = loop->timer_seq++;
	t->fn = fn;
	t->data = data;
	struct loop_timer **pp = &loop->timers;
	while (*pp && (*pp)->deadline_ms <= t->deadline_ms)
		pp = &(*pp)->next;
	t->next = *pp;
	*pp = t;
	if (loop->timers == t)
		arm_timerfd(loop);
	return t;
}

void loop_timer_stop(struct loop *loop, struct loop_timer *timer)
{
	if (!timer)
		return;
	for (struct loop_timer **pp = &loop->timers; *pp; pp = &(*pp)->next) {
		if (*pp == timer) {
			bool head = pp == &loop->timers;
			*pp = timer->next;
			free(timer);
			if (head)
				arm_timerfd(loop);
			return;
		}
	}
}

static void run_timers(struct loop *loop)
{
	uint64_t expirations;
	ssize_t r = read(loop->timerfd, &expirations, sizeof(expirations));
	(void)r;
	uint64_t now = loop_now_ms();
	/* Only timers due now; one started by a callback with 0 ms waits for
	 * the next iteration so fd events cannot starve. */
	uint64_t last_seq = loop->timer_seq;
	while (loop->timers && loop->timers->deadline_ms <= now && loop->timers->seq < last_seq &&
	       !loop->stopping) {
		struct loop_timer *t = loop->timers;
		loop->timers = t->next;
		loop_timer_fn fn = t->fn;
		void *data = t->data;
		free(t);
		fn(loop, data);
	}
	arm_timerfd(loop);
}

int loop_signal_watch(struct loop *loop, int signo, loop_signal_fn fn, void *data)
{
	if (signo <= 0 || signo >= (int)ARRAY_SIZE(loop->sigs))
		return -EINVAL;
	sigaddset(&loop->sigmask, signo);
	if (sigprocmask(SIG_BLOCK, &loop->sigmask, NULL) < 0)
		return -errno;
	if (signalfd(loop->sigfd, &loop->sigmask, SFD_NONBLOCK | SFD_CLOEXEC) < 0)
		return -errno;
	loop->sigs[signo] = (struct sig_watch){.fn = fn, .data = data};
	return 0;
}

static void run_signals(struct loop *loop)
{
	struct signalfd_siginfo si;
	while (read(loop->sigfd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
		int signo = (int)si.ssi_signo;
		if (signo > 0 && signo < (int)ARRAY_SIZE(loop->sigs) && loop->sigs[signo].fn)
			loop->sigs[signo].fn(loop, signo, loop->sigs[signo].data);
	}
}

void loop_stop(struct loop *loop, int code)
{
	loop->stopping = true;
	loop->exit_code = code;
}

bool loop_stopping(const struct loop *loop)
{
	return loop->stopping;
}

int loop_run(struct loop *loop)
{
	struct epoll_event events[64];
	while (!loop->stopping) {
		int n = epoll_wait(loop->epfd, events, (int)ARRAY_SIZE(events), -1);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		for (int i = 0; i < n && !loop->stopping; i++) {
			uint64_t tag = events[i].data.u64;
			int fd = TAG_FD(tag);
			uint32_t gen = TAG_GEN(tag);
			if (gen == TAG_TIMER && fd == loop->timerfd) {
				run_timers(loop);
				continue;
			}
			if (gen == TAG_SIGNAL && fd == loop->sigfd) {
				run_signals(loop);
				continue;
			}
			if ((size_t)fd >= loop->nwatches || loop->watches[fd].gen != gen)
				continue; /* unwatched earlier in this iteration */
			struct watch *w = &loop->watches[fd];
			uint32_t e = events[i].events;
			unsigned out = 0;
			if (e & (EPOLLIN | EPOLLRDHUP))
				out |= LOOP_READ;
			if (e & EPOLLOUT)
				out |= LOOP_WRITE;
			if (e & EPOLLHUP)
				out |= LOOP_HUP | (w->events & LOOP_READ);
			if (e & EPOLLERR)
				out |= LOOP_ERR;
			w->fn(loop, fd, out, w->data);
		}
	}
	return loop->exit_code;
}
