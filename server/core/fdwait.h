/* fdwait.h: a blocking wait on one fd with a deadline, for the few
 * synchronous paths outside the event loop (the validator's CPython worker,
 * starting a worker's box). Deadlines are loop_now_ms() values. */
#pragma once

#include <stdint.h>

/* Wait until fd is ready for events (POLLIN, POLLOUT) or deadline_ms
 * passes. 0 when ready; -ETIMEDOUT; -EPIPE when the fd reports only a
 * hang-up or an error; -errno when poll fails. EINTR is retried. */
int fd_wait(int fd, short events, uint64_t deadline_ms);
