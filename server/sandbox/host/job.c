/* job.c: work off the loop's thread (see job.h). One thread per job: the
 * jobs are few (one per run at its end, one per cgroup) and long next to
 * the cost of a thread, so a pool would buy nothing. */
#include "sandbox/host/job.h"

#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "core/log.h"
#include "core/loop.h"
#include "sandbox/host/base.h"

struct sbx_job {
	struct sbx_base *s;
	struct sbx_job *next;
	pthread_t thread;
	int efd; /* written by the thread when the work is over */
	atomic_bool cancel;
	bool cancelled; /* by the owner: done is not called */
	sbx_job_work_fn work;
	sbx_job_done_fn done;
	sbx_job_free_fn free_fn;
	void *data;
};

static void *job_main(void *arg)
{
	struct sbx_job *job = arg;
	job->work(job->data, &job->cancel);
	uint64_t one = 1;
	while (write(job->efd, &one, sizeof(one)) < 0 && errno == EINTR)
		;
	return NULL;
}

static void unlink_job(struct sbx_job *job)
{
	for (struct sbx_job **pp = &job->s->jobs; *pp; pp = &(*pp)->next)
		if (*pp == job) {
			*pp = job->next;
			return;
		}
}

/* The thread has ended (or is about to: it wrote its last byte): join it,
 * then hand the result over on the loop's thread. */
static void finish(struct sbx_job *job)
{
	struct sbx_base *s = job->s;
	pthread_join(job->thread, NULL);
	loop_unwatch(job->s->loop, job->efd);
	close(job->efd);
	unlink_job(job);
	if (!job->cancelled && job->done)
		job->done(job->data);
	if (job->free_fn)
		job->free_fn(job->data);
	free(job);
	/* The last job of a burst: each thread left a malloc arena behind
	 * (glibc makes one per thread under contention, up to 8 a core),
	 * holding what its copies and walks freed. With nothing running,
	 * give that back, so the server returns to its idle size (2.7 MiB
	 * more after 200 runs 20 at a time, without). */
	if (!s->jobs && !s->stopping && !(s->busy && s->busy(s->busy_data)))
		malloc_trim(0);
}

static void on_job_done(struct loop *loop, int fd, unsigned events, void *data)
{
	(void)loop;
	(void)events;
	uint64_t n;
	if (read(fd, &n, sizeof(n)) < 0 && errno == EAGAIN)
		return;
	finish(data);
}

int sbx_job_start(struct sbx_base *s, sbx_job_work_fn work, sbx_job_done_fn done,
                  sbx_job_free_fn free_fn, void *data, struct sbx_job **ret)
{
	struct sbx_job *job = calloc(1, sizeof(*job));
	if (!job)
		return -ENOMEM;
	*job = (struct sbx_job){
	    .s = s, .efd = -1, .work = work, .done = done, .free_fn = free_fn, .data = data};
	atomic_init(&job->cancel, false);
	int r = -ENOSYS;
	if (s->loop && (job->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) >= 0 &&
	    loop_watch(s->loop, job->efd, LOOP_READ, on_job_done, job) >= 0) {
		/* Every signal blocked in the thread: a process-directed
		 * signal must reach the loop's signalfd, not kill us here. */
		sigset_t all, old;
		sigfillset(&all);
		pthread_sigmask(SIG_SETMASK, &all, &old);
		r = -pthread_create(&job->thread, NULL, job_main, job);
		pthread_sigmask(SIG_SETMASK, &old, NULL);
		if (r < 0)
			loop_unwatch(s->loop, job->efd);
	}
	if (r < 0) {
		if (s->loop)
			log_warn("sandbox: cannot start a job thread (%s); working on the loop",
			         strerror(-r));
		if (job->efd >= 0)
			close(job->efd);
		atomic_bool never = false;
		/* Before done, which may free the owner of *ret. */
		if (ret)
			*ret = NULL;
		free(job);
		work(data, &never);
		if (done)
			done(data);
		if (free_fn)
			free_fn(data);
		return 0;
	}
	job->next = s->jobs;
	s->jobs = job;
	if (ret)
		*ret = job;
	return 0;
}

void sbx_job_cancel(struct sbx_job *job)
{
	if (!job)
		return;
	job->cancelled = true;
	atomic_store(&job->cancel, true);
}

void sbx_jobs_stop(struct sbx_base *s)
{
	for (struct sbx_job *j = s->jobs; j; j = j->next)
		sbx_job_cancel(j);
	/* The owner frees everything next (kiln run exits): trimming the
	 * heap first was 0.3-1 ms of a cold run's end. */
	s->stopping = true;
	while (s->jobs)
		finish(s->jobs);
	s->stopping = false;
}
