/* job.h: work that would hold up the event loop runs on a thread of its
 * own: copying a run's artifacts back (up to 256 MiB) and removing a
 * cgroup (which waits for it to empty). The thread touches only the job's
 * data, never the loop, a run or the protocol, and reports back through
 * an eventfd the loop watches; the rest happens on the loop's thread.
 * Boxes are still cloned only from the loop's thread, and a box's child
 * allocates nothing (child.h), so these threads cannot deadlock it. */
#pragma once

#include <stdatomic.h>

struct sbx_base;
struct sbx_job;

/* On the job's thread: do the work; stop early once *cancel is set. */
typedef void (*sbx_job_work_fn)(void *data, const atomic_bool *cancel);
/* On the loop's thread, after the work, unless the job was cancelled. */
typedef void (*sbx_job_done_fn)(void *data);
/* On the loop's thread (or in sbx_base_release), once the thread has ended,
 * cancelled or not: free data. May be NULL. */
typedef void (*sbx_job_free_fn)(void *data);

/* Start work on a thread of its own, with every signal blocked (the loop
 * takes them through its signalfd). Without a loop, or when no thread
 * can be started, the work runs here and now, then done and free_fn.
 * ret may be NULL. Returns 0, or -ENOMEM (nothing was called then). */
int sbx_job_start(struct sbx_base *b, sbx_job_work_fn work, sbx_job_done_fn done,
                  sbx_job_free_fn free_fn, void *data, struct sbx_job **ret);

/* Ask the job to stop, at once: done is never called, free_fn is when its
 * thread has ended (which the caller does not wait for). */
void sbx_job_cancel(struct sbx_job *job);

/* Cancel every job of b and wait for their threads (sbx_base_release). */
void sbx_jobs_stop(struct sbx_base *b);
