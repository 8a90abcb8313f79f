/* fdwait.c: a deadline-bounded poll on one fd (see fdwait.h). */
#include "core/fdwait.h"

#include <errno.h>
#include <poll.h>

#include "core/loop.h"
#include "core/util.h"

int fd_wait(int fd, short events, uint64_t deadline_ms)
{
	for (;;) {
		uint64_t now = loop_now_ms();
		if (now >= deadline_ms)
			return -ETIMEDOUT;
		uint64_t left = deadline_ms - now;
		struct pollfd p = {.fd = fd, .events = events};
		int n = poll(&p, 1, left > 3600000 ? 3600000 : (int)left);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return neg_errno();
		if (n == 0)
			continue; /* the deadline check above ends it */
		return (p.revents & events) ? 0 : -EPIPE;
	}
}
