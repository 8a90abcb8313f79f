/* cgroup_ahead.c: the next box's cgroup, made ahead off the event loop
 * by one thread of the base's own (see cgroup_ahead.h). */
#include "sandbox/host/cgroup_ahead.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "core/log.h"
#include "core/loop.h"
#include "core/util.h"
#include "sandbox/host/cgroup.h"
#include "sandbox/host/base.h"
#include "sandbox/host/reap.h"

/* The maker of the next box's cgroup (sbx_cgroup_take): one thread
 * for the server's life, started with its first box that has a cgroup.
 * Not a job: creating a thread waits, like a mkdir, on the kernel's
 * cgroup lock (a new thread joins its cgroup) while a move is in flight
 * (p90 of a take 0.25 ms, max 8-20 ms here under such moves, with a
 * thread per cgroup), where the loop's write to wake this one does not. */
struct cg_maker {
	struct sbx_base *s;
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t wake;
	/* Under lock: a cgroup is wanted (named name); the thread is to
	 * end; what it made (or the -errno it got), for the loop. */
	bool want, stop, have;
	char name[32];
	struct sbx_cgroup *made;
	int err;
	int efd; /* written once have is set; the loop watches it */
};

static void *cg_maker_main(void *arg)
{
	struct cg_maker *m = arg;
	/* Background work: woken by the loop, it must not take the loop's
	 * CPU from it (as SCHED_OTHER the wakee ran first: a take's p90 went
	 * from 60 to 250 us on a quiet machine). SCHED_BATCH never preempts
	 * on wakeup, yet keeps its fair share (at nice 19 instead, on a busy
	 * machine, 24 of 60 back-to-back takes found no cgroup ready). */
	struct sched_param sp = {.sched_priority = 0};
	pthread_setschedparam(pthread_self(), SCHED_BATCH, &sp);
	pthread_mutex_lock(&m->lock);
	for (;;) {
		while (!m->want && !m->stop)
			pthread_cond_wait(&m->wake, &m->lock);
		if (m->stop)
			break;
		m->want = false;
		char name[sizeof(m->name)];
		memcpy(name, m->name, sizeof(name));
		pthread_mutex_unlock(&m->lock);
		struct sbx_cgroup *cg = NULL;
		int r = sbx_cgroup_new(m->s->cgroups, name, &cg);
		pthread_mutex_lock(&m->lock);
		m->made = cg;
		m->err = r;
		m->have = true;
		uint64_t one = 1;
		while (write(m->efd, &one, sizeof(one)) < 0 && errno == EINTR)
			;
	}
	pthread_mutex_unlock(&m->lock);
	return NULL;
}

/* On the loop: the cgroup made ahead is there (or could not be made). */
static void on_cg_made(struct loop *loop, int fd, unsigned events, void *data)
{
	(void)loop;
	(void)events;
	struct sbx_base *s = data;
	struct cg_maker *m = s->cg_maker;
	uint64_t n;
	if (read(fd, &n, sizeof(n)) < 0 && errno == EAGAIN)
		return;
	pthread_mutex_lock(&m->lock);
	struct sbx_cgroup *cg = m->have ? steal_pointer(&m->made) : NULL;
	int err = m->err;
	bool have = m->have;
	m->have = false;
	pthread_mutex_unlock(&m->lock);
	if (!have)
		return;
	s->cg_making = false;
	if (err < 0)
		log_debug("sandbox: cannot make the next box's cgroup ahead: %s", strerror(-err));
	else if (!s->cg_ahead)
		s->cg_ahead = cg;
	else
		sbx_cgroup_free_later(s, cg);
}

static struct cg_maker *cg_maker_start(struct sbx_base *s)
{
	if (!s->loop)
		return NULL;
	struct cg_maker *m = calloc(1, sizeof(*m));
	if (!m)
		return NULL;
	m->s = s;
	pthread_mutex_init(&m->lock, NULL);
	pthread_cond_init(&m->wake, NULL);
	int r = -1;
	if ((m->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) >= 0 &&
	    loop_watch(s->loop, m->efd, LOOP_READ, on_cg_made, s) >= 0) {
		/* Every signal blocked in the thread, as a job's. */
		sigset_t all, old;
		sigfillset(&all);
		pthread_sigmask(SIG_SETMASK, &all, &old);
		r = -pthread_create(&m->thread, NULL, cg_maker_main, m);
		pthread_sigmask(SIG_SETMASK, &old, NULL);
		if (r < 0)
			loop_unwatch(s->loop, m->efd);
	}
	if (r < 0) {
		log_debug(
		    "sandbox: no thread to make cgroups ahead: each box's is made on the loop");
		if (m->efd >= 0)
			close(m->efd);
		pthread_cond_destroy(&m->wake);
		pthread_mutex_destroy(&m->lock);
		free(m);
		return NULL;
	}
	return m;
}

void sbx_cgroup_ahead_stop(struct sbx_base *s)
{
	sbx_cgroup_free(steal_pointer(&s->cg_ahead));
	struct cg_maker *m = steal_pointer(&s->cg_maker);
	if (!m)
		return;
	pthread_mutex_lock(&m->lock);
	m->stop = true;
	pthread_cond_signal(&m->wake);
	pthread_mutex_unlock(&m->lock);
	pthread_join(m->thread, NULL);
	loop_unwatch(s->loop, m->efd);
	close(m->efd);
	sbx_cgroup_free(m->made);
	pthread_cond_destroy(&m->wake);
	pthread_mutex_destroy(&m->lock);
	free(m);
}

static uint64_t now_us(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000u + (uint64_t)t.tv_nsec / 1000u;
}

int sbx_cgroup_take(struct sbx_base *s, struct sbx_cgroup **ret)
{
	/* The time the loop spent here, for tests/bench/cgroup_take.py. */
	bool timed = log_get_level() >= LOG_DEBUG;
	uint64_t t0 = timed ? now_us() : 0;
	int r = 0;
	bool ahead = s->cg_ahead != NULL;
	if (!(*ret = steal_pointer(&s->cg_ahead))) {
		char name[32];
		snprintf(name, sizeof(name), "b%lu", ++s->next_box);
		r = sbx_cgroup_new(s->cgroups, name, ret);
	}
	/* From the second box on: `kiln run` builds one and would only
	 * make a cgroup to remove it. */
	if (s->cg_taken && !s->cg_maker && !s->cg_maker_failed &&
	    !(s->cg_maker = cg_maker_start(s)))
		s->cg_maker_failed = true;
	s->cg_taken = true;
	struct cg_maker *m = s->cg_maker;
	if (m && !s->cg_making) {
		s->cg_making = true;
		pthread_mutex_lock(&m->lock);
		snprintf(m->name, sizeof(m->name), "b%lu", ++s->next_box);
		m->want = true;
		pthread_cond_signal(&m->wake);
		pthread_mutex_unlock(&m->lock);
	}
	if (timed)
		log_debug("sandbox: a box's cgroup, %s: %llu us on the loop",
		          ahead ? "made ahead" : "made now", (unsigned long long)(now_us() - t0));
	return r;
}
