/* async.c: the validator's threads. A check of big code takes a second or
 * more (parse, CPython, the rules over 4 MiB); on the loop it would hold
 * up every other request, a cancel and a run's output. So methods queue
 * their checks here, in one of two lanes by the code's size: the quick
 * lane (up to VAL_LANE_QUICK_MAX: a document's diagnostics, a model's
 * proposal, a snippet over the inline size) and the big lane (above it).
 * Each lane is one thread, started on first use, with a validator of its
 * own (its own tree-sitter parser, rules and syntax worker: nothing
 * mutable is shared with the loop's thread or the other lane but the
 * queue below), runs its checks one at a time in the order queued and
 * posts each result back through an eventfd that the loop watches. Only
 * the loop's thread calls back. With one queue, a small check queued
 * behind a 4 MiB one waited seconds for it; now it waits at most for
 * other small ones, and its answer may overtake the big one's (each is
 * an answer to its own request). */
#include "validate/internal.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <unistd.h>

#include "core/log.h"
#include "core/loop.h"
#include "core/util.h"

/* What may wait in the queue: code is copied, so the queue is a buffer
 * fed from outside and has a cap (a client sending 4 MiB checks faster
 * than they run is told the validator is busy). */
#define QUEUE_MAX_JOBS  64
#define QUEUE_MAX_BYTES (64u << 20)
/* Both lanes run below the loop's priority (Linux nice is per thread),
 * and so do the syntax workers they start: on a busy machine the loop
 * answers small requests first. The quick lane is above the big one, so
 * that a small check does not wait for a core behind a big one either. */
static const int lane_nice[VAL_LANES] = {5, 10};

struct val_job {
	struct val_async *a;
	char *language, *profile;
	/* The code: a copy the job owns, or lent by the caller
	 * (val_check_async_lent) and given back by release(keep) when the
	 * job is freed, always on the loop's thread. */
	const char *code;
	void (*release)(void *keep);
	void *keep;
	size_t len;
	val_done_fn done;
	void *data;
	size_t cancel;  /* set by the loop's thread; read by the check */
	bool forgotten; /* cancelled: never call done; under a->mu */
	int r;
	struct val_report report;
	char detail[256];
	struct val_job *next;
};

struct val_async {
	struct loop *loop;
	json_object *config; /* borrowed from the owning validator */
	int nice;
	int efd;
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	/* Under mu: queued jobs, the one running, and finished ones for the
	 * loop to deliver. */
	struct val_job *queue, **queue_tail;
	struct val_job *running;
	struct val_job *finished, **finished_tail;
	size_t queued_jobs, queued_bytes;
	bool stop;
};

static void job_free(struct val_job *j)
{
	if (!j)
		return;
	val_report_release(&j->report);
	free(j->language);
	free(j->profile);
	if (j->release)
		j->release(j->keep);
	else
		free((char *)j->code);
	free(j);
}

static void *thread_main(void *arg)
{
	struct val_async *a = arg;
	struct validator *v = NULL;
	int vr = 0;
	/* Below the loop's priority, and so is the syntax worker this thread
	 * starts (lane_nice). */
	if (setpriority(PRIO_PROCESS, (id_t)gettid(), a->nice) < 0)
		log_debug("validator: cannot lower the thread's priority: %s", strerror(errno));
	pthread_mutex_lock(&a->mu);
	for (;;) {
		while (!a->queue && !a->stop)
			pthread_cond_wait(&a->cv, &a->mu);
		if (a->stop)
			break;
		struct val_job *j = a->queue;
		a->queue = j->next;
		if (!a->queue)
			a->queue_tail = &a->queue;
		a->queued_jobs--;
		a->queued_bytes -= j->len;
		j->next = NULL;
		a->running = j;
		pthread_mutex_unlock(&a->mu);

		if (__atomic_load_n(&j->cancel, __ATOMIC_RELAXED)) {
			j->r = -ECANCELED;
		} else {
			/* The thread's validator is built on its first check, here,
			 * so that neither start-up nor the loop waits for it. */
			if (!v && vr == 0 && (vr = val_new(a->config, &v)) < 0)
				log_error("validator: the validator's thread cannot build its "
				          "validator: %s",
				          strerror(-vr));
			if (v)
				j->r = val_check_report(v, j->language, j->code, j->len, j->profile,
				                        &j->cancel, &j->report, j->detail,
				                        sizeof(j->detail));
			else
				j->r = vr;
			if (j->r < 0 && !j->detail[0])
				snprintf(j->detail, sizeof(j->detail), "the check failed: %s",
				         strerror(-j->r));
		}

		pthread_mutex_lock(&a->mu);
		a->running = NULL;
		*a->finished_tail = j;
		a->finished_tail = &j->next;
		uint64_t one = 1;
		/* Cannot fail short of a counter at 2^64 - 1. */
		if (write(a->efd, &one, sizeof(one)) < 0)
			log_warn("validator: cannot post a result to the loop: %s",
			         strerror(errno));
	}
	pthread_mutex_unlock(&a->mu);
	val_free(v);
	return NULL;
}

/* Hand each finished job to its owner, on the loop's thread. */
static void deliver(struct val_async *a)
{
	pthread_mutex_lock(&a->mu);
	struct val_job *list = a->finished;
	a->finished = NULL;
	a->finished_tail = &a->finished;
	pthread_mutex_unlock(&a->mu);
	/* A done callback may cancel a later job of this list (on this same
	 * thread): each job's forgotten flag is read just before its turn. */
	while (list) {
		struct val_job *j = list;
		list = j->next;
		pthread_mutex_lock(&a->mu);
		bool call = !j->forgotten;
		pthread_mutex_unlock(&a->mu);
		if (call) {
			struct val_report rep = j->report;
			j->report = (struct val_report){0};
			j->done(j->data, j->r, j->r < 0 ? NULL : &rep, j->code, j->len, j->detail);
			if (j->r < 0)
				val_report_release(&rep);
		}
		job_free(j);
	}
}

static void on_result(struct loop *loop, int fd, unsigned events, void *data)
{
	(void)loop;
	(void)events;
	uint64_t n;
	if (read(fd, &n, sizeof(n)) < 0 && errno != EAGAIN)
		log_warn("validator: reading the result counter: %s", strerror(errno));
	deliver(data);
}

static int async_start(struct validator *v, struct loop *loop, int nice, struct val_async **ret)
{
	struct val_async *a = calloc(1, sizeof(*a));
	if (!a)
		return -ENOMEM;
	a->loop = loop;
	a->nice = nice;
	a->config = val_config(v);
	a->queue_tail = &a->queue;
	a->finished_tail = &a->finished;
	a->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (a->efd < 0) {
		int r = neg_errno();
		free(a);
		return r;
	}
	pthread_mutex_init(&a->mu, NULL);
	pthread_cond_init(&a->cv, NULL);
	int r = loop_watch(loop, a->efd, LOOP_READ, on_result, a);
	if (r < 0)
		goto fail;
	/* The thread starts with every signal blocked: signals are the
	 * loop's (signalfd), never handled on this thread. */
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	r = -pthread_create(&a->thread, NULL, thread_main, a);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (r < 0) {
		loop_unwatch(loop, a->efd);
		goto fail;
	}
	*ret = a;
	return 0;
fail:
	close(a->efd);
	pthread_cond_destroy(&a->cv);
	pthread_mutex_destroy(&a->mu);
	free(a);
	return r == -ENOMEM ? r : -EAGAIN;
}

static void async_free(struct val_async *a)
{
	if (!a)
		return;
	pthread_mutex_lock(&a->mu);
	a->stop = true;
	if (a->running)
		__atomic_store_n(&a->running->cancel, 1, __ATOMIC_RELAXED);
	pthread_cond_signal(&a->cv);
	pthread_mutex_unlock(&a->mu);
	/* A running check sees its cancel flag at its next step (between
	 * parse, syntax worker, text scan and rule matches). */
	pthread_join(a->thread, NULL);
	loop_unwatch(a->loop, a->efd);
	close(a->efd);
	/* Whatever did not run is answered -ECANCELED; finished results are
	 * delivered as they are. */
	for (struct val_job *j = a->queue; j; j = j->next) {
		j->r = -ECANCELED;
		snprintf(j->detail, sizeof(j->detail),
		         "the validator was rebuilt before the check ran");
	}
	*a->finished_tail = a->queue;
	a->finished_tail = a->queue ? a->queue_tail : a->finished_tail;
	a->queue = NULL;
	deliver(a);
	pthread_cond_destroy(&a->cv);
	pthread_mutex_destroy(&a->mu);
	free(a);
}

static char *dup_or_null(const char *s, bool *oom)
{
	char *d = s ? strdup(s) : NULL;
	if (s && !d)
		*oom = true;
	return d;
}

static int lane_start(struct validator *v, struct loop *loop, size_t lane)
{
	struct val_async_slot *slot = val_async_slot(v);
	if (slot->lane[lane])
		return 0;
	int r = async_start(v, loop, lane_nice[lane], &slot->lane[lane]);
	if (r < 0)
		return r;
	slot->free = async_free;
	return 0;
}

/* Queue a check; with release set, code is lent (not copied), and given
 * back only once the job is queued: on failure the caller keeps it. */
static int queue_check(struct validator *v, struct loop *loop, const char *language,
                       const char *code, size_t len, const char *profile,
                       void (*release)(void *keep), void *keep, val_done_fn done, void *data,
                       struct val_job **ret_job)
{
	struct val_async_slot *slot = val_async_slot(v);
	size_t lane = len > VAL_LANE_QUICK_MAX;
	int r = lane_start(v, loop, lane);
	if (r < 0)
		return r;
	struct val_async *a = slot->lane[lane];
	struct val_job *j = calloc(1, sizeof(*j));
	if (!j)
		return -ENOMEM;
	bool oom = false;
	*j = (struct val_job){.a = a, .len = len, .done = done, .data = data};
	j->language = dup_or_null(language, &oom);
	j->profile = dup_or_null(profile, &oom);
	if (!release) {
		char *copy = malloc(len + 1);
		if (copy) {
			memcpy(copy, code, len);
			copy[len] = '\0';
		}
		j->code = copy;
	}
	if (oom || (!release && !j->code)) {
		job_free(j);
		return -ENOMEM;
	}
	pthread_mutex_lock(&a->mu);
	if (a->queued_jobs >= QUEUE_MAX_JOBS || a->queued_bytes + len > QUEUE_MAX_BYTES) {
		pthread_mutex_unlock(&a->mu);
		job_free(j);
		return -EBUSY;
	}
	if (release) {
		j->code = code;
		j->release = release;
		j->keep = keep;
	}
	*a->queue_tail = j;
	a->queue_tail = &j->next;
	a->queued_jobs++;
	a->queued_bytes += len;
	pthread_cond_signal(&a->cv);
	pthread_mutex_unlock(&a->mu);
	*ret_job = j;
	return 0;
}

int val_check_async(struct validator *v, struct loop *loop, const char *language, const char *code,
                    size_t len, const char *profile, val_done_fn done, void *data,
                    struct val_job **ret_job)
{
	return queue_check(v, loop, language, code, len, profile, NULL, NULL, done, data, ret_job);
}

int val_check_async_lent(struct validator *v, struct loop *loop, const char *language,
                         const char *code, size_t len, const char *profile,
                         void (*release)(void *keep), void *keep, val_done_fn done, void *data,
                         struct val_job **ret_job)
{
	return queue_check(v, loop, language, code, len, profile, release, keep, done, data,
	                   ret_job);
}

void val_job_cancel(struct val_job *j)
{
	if (!j)
		return;
	struct val_async *a = j->a;
	pthread_mutex_lock(&a->mu);
	j->forgotten = true;
	__atomic_store_n(&j->cancel, 1, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&a->mu);
}
